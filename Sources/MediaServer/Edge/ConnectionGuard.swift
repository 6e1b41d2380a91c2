import MediaEngine
import Signaling

/// The limits one connection lives under, sans-I/O: message size, message rate, request
/// ids used once, a deadline to log in, and a budget of faults after which the
/// connection counts as abusive (closed with 1008, policy violation).
///
/// A fault (an oversize, malformed, rate-limited or duplicate message, a failed login)
/// gets an error reply and costs one unit of `faultBudget`; the budget refills at
/// `faultRefill` per second, so a client with an occasional bug stays connected while a
/// flood is cut off. Memory: the last `rememberedRequestIDs` ids.
public struct ConnectionGuard: Sendable {
    public struct Limits: Sendable, Hashable {
        /// Largest message accepted, bytes (larger ones get `messageTooLarge`).
        public var maximumMessageSize = 64 * 1_024
        /// Messages per second in steady state, and the burst allowed above it.
        public var messageRate = 50.0
        public var messageBurst = 100.0
        /// Faults tolerated at once, and how many are forgiven per second.
        public var faultBudget = 20.0
        public var faultRefill = 1.0
        /// Time from connecting to a successful login.
        public var loginTimeout: Duration = .seconds(10)
        /// Failed logins tolerated before the connection is closed.
        public var maximumFailedLogins = 3
        /// Request ids remembered for the duplicate check.
        public var rememberedRequestIDs = 1_024

        public init() {}
    }

    /// What to do with one incoming message.
    public enum Verdict: Sendable, Hashable {
        case accept
        /// Reply with this error (to the message's id when it has one); keep the connection.
        case reject(SignalingError)
        /// Close with 1008 and this reason.
        case close(String)
    }

    public let limits: Limits
    private var messages: TokenBucket
    private var faults: TokenBucket
    private let openedAt: Duration
    private var failedLogins = 0
    private var recentIDs: Set<UInt64> = []
    private var idRing: [UInt64] = []
    private var idNext = 0
    public private(set) var loggedIn = false

    public init(limits: Limits = Limits(), openedAt: Duration) {
        self.limits = limits
        self.openedAt = openedAt
        messages = TokenBucket(rate: limits.messageRate, burst: limits.messageBurst)
        faults = TokenBucket(rate: limits.faultRefill, burst: limits.faultBudget)
        idRing.reserveCapacity(limits.rememberedRequestIDs)
    }

    /// Checks size and rate before a message is parsed.
    public mutating func admit(size: Int, now: Duration) -> Verdict {
        if size > limits.maximumMessageSize {
            return fault(SignalingError(.messageTooLarge, "message of \(size) bytes exceeds the limit of \(limits.maximumMessageSize)"), now: now)
        }
        if !messages.admit(now: now) {
            return fault(SignalingError(.rateLimited, "more than \(Int(limits.messageRate)) messages a second"), now: now)
        }
        return .accept
    }

    /// Records a parsed request's id; a repeat is a fault.
    public mutating func checkRequestID(_ id: UInt64, now: Duration) -> Verdict {
        if recentIDs.contains(id) {
            return fault(SignalingError(.duplicateRequest, "request id \(id) was already used on this connection"), now: now)
        }
        if idRing.count < limits.rememberedRequestIDs {
            idRing.append(id)
        } else {
            recentIDs.remove(idRing[idNext])
            idRing[idNext] = id
            idNext = (idNext + 1) % limits.rememberedRequestIDs
        }
        recentIDs.insert(id)
        return .accept
    }

    /// A message that could not be parsed or was not a valid request.
    public mutating func malformed(_ error: SignalingError, now: Duration) -> Verdict { fault(error, now: now) }

    /// The outcome of a login attempt.
    public mutating func login(succeeded: Bool, error: SignalingError? = nil, now: Duration) -> Verdict {
        if succeeded {
            loggedIn = true
            return .accept
        }
        failedLogins += 1
        if failedLogins >= limits.maximumFailedLogins { return .close("\(failedLogins) failed logins") }
        return fault(error ?? SignalingError(.unauthorized, "login failed"), now: now)
    }

    /// Whether the login deadline passed without a login.
    public func loginOverdue(now: Duration) -> Bool { !loggedIn && now - openedAt >= limits.loginTimeout }

    private mutating func fault(_ error: SignalingError, now: Duration) -> Verdict {
        faults.admit(now: now) ? .reject(error) : .close("too many faulty messages (last: \(error.code))")
    }
}
