/// Why a TURN operation failed. Server refusals carry the STUN error code.
public struct TURNError: CodedError {
    /// What went wrong. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<TURNError>

    public let code: Code
    /// The server's STUN error code (300...699) when the server refused.
    public let stunErrorCode: Int?
    /// A sentence for logs; never holds credentials.
    public let message: String

    init(_ code: Code, _ message: String, stunErrorCode: Int? = nil) {
        self.code = code
        self.message = message
        self.stunErrorCode = stunErrorCode
    }

    /// The error for a STUN error response.
    static func server(_ stunErrorCode: Int, reason: String, request: String) -> TURNError {
        let code: Code = switch stunErrorCode {
        case 401: .unauthorized
        case 403: .forbidden
        case 437: .allocationMismatch
        case 486: .allocationQuotaReached
        case 508: .insufficientCapacity
        default: .serverError
        }
        return TURNError(code, "TURN \(request) refused: \(stunErrorCode) \(reason)", stunErrorCode: stunErrorCode)
    }
}

extension ErrorCode where Domain == TURNError {
    /// 401 to a request that carried credentials: wrong or expired (coturn's REST
    /// usernames expire).
    public static var unauthorized: Self { Self("unauthorized") }
    /// 403: the server refuses, for example a peer address it does not relay to.
    public static var forbidden: Self { Self("forbidden") }
    /// 437: the allocation does not exist (anymore) or another one holds the 5-tuple.
    public static var allocationMismatch: Self { Self("allocation mismatch") }
    /// 486: the user or the server has reached its allocation quota.
    public static var allocationQuotaReached: Self { Self("allocation quota reached") }
    /// 508: the server has no relay ports left.
    public static var insufficientCapacity: Self { Self("insufficient capacity") }
    /// Any other error response; `stunErrorCode` says which.
    public static var serverError: Self { Self("server error") }
    /// No response after every retransmission.
    public static var timeout: Self { Self("timeout") }
    /// A success response without what it must carry (XOR-RELAYED-ADDRESS).
    public static var badResponse: Self { Self("bad response") }
    /// The credentials cannot make a key (non-ASCII; SASLprep is not done).
    public static var invalidCredentials: Self { Self("invalid credentials") }
    /// No allocation: not started yet, failed, or closed.
    public static var notAllocated: Self { Self("not allocated") }
    /// Data for a peer without a permission or channel: call `createPermission` first.
    public static var noPermission: Self { Self("no permission") }
    /// The permission or channel table is full.
    public static var tooManyPeers: Self { Self("too many peers") }
    /// The output buffer cannot hold the message.
    public static var bufferTooSmall: Self { Self("buffer too small") }
}

/// What a `TURNClient` has done and seen.
public struct TURNStatistics: Sendable, Hashable {
    /// Requests sent, first transmissions only.
    public var requestsSent = 0
    /// Retransmissions of requests that got no answer in time.
    public var retransmissions = 0
    /// Error responses received, by STUN error code (401 challenges included).
    public var errorsByCode: [Int: Int] = [:]
    /// Datagrams from the server that were dropped: malformed, unmatched, a bad or missing
    /// MESSAGE-INTEGRITY, data from an unknown channel or a peer without permission.
    public var ignoredDatagrams = 0
    /// Payload bytes sent to peers through the relay.
    public var bytesSent = 0
    /// Payload bytes received from peers through the relay.
    public var bytesReceived = 0
    /// Payloads sent to peers.
    public var packetsSent = 0
    /// Payloads received from peers.
    public var packetsReceived = 0
}
