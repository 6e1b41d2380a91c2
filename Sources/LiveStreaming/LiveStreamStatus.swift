import MediaEngine

/// The state of one live output, with NIM's stable numbers (500...508).
public enum LiveStreamStatus: Int, Sendable, Hashable, Codable {
    /// Not pushing: not yet started, or disabled.
    case initial = 500
    /// The room's layout is unusable (reported by the layout layer, not by the streamer).
    case layoutError = 501
    /// Opening the connection or file.
    case connecting = 502
    /// Open, header written; waiting for the first key frame.
    case connected = 503
    /// Opening failed; a URL is retried after a delay, a file is not.
    case connectFailed = 504
    /// Packets are flowing.
    case pushing = 505
    /// A write failed (peer gone, disk full); the output was closed. A URL reconnects.
    case pushFailed = 506
    /// An encoder or muxer could not be set up.
    case internalError = 507
    /// The service refused another publisher (reported by the room layer).
    case userCountLimit = 508
}

/// Why a live target or output failed. The message names the problem and the target,
/// with stream keys and passwords redacted.
public struct LiveStreamError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, with its stable number.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Int, Sendable, Hashable {
            case invalidTarget = 20202, connectFailed = 20203, pushFailed = 20204, internalError = 20205
        }

        private let base: Base

        /// A target that does not parse (unknown scheme, no host, bad port, no stream key,
        /// unsupported file extension): 20202.
        public static let invalidTarget = Kind(base: .invalidTarget)
        /// The connection (or file) could not be opened: 20203.
        public static let connectFailed = Kind(base: .connectFailed)
        /// Writing to an open output failed: 20204.
        public static let pushFailed = Kind(base: .pushFailed)
        /// An encoder or muxer could not be set up, or the streamer is stopped: 20205.
        public static let internalError = Kind(base: .internalError)

        /// The stable number (NIM-style).
        public var code: Int { base.rawValue }

        /// The kind's name.
        public var description: String {
            switch base {
            case .invalidTarget: "invalid target"
            case .connectFailed: "connect failed"
            case .pushFailed: "push failed"
            case .internalError: "internal error"
            }
        }
    }

    /// What failed.
    public let kind: Kind
    /// The problem and the target (redacted).
    public let message: String

    /// The stable number of `kind`: 20202 invalid target, 20203 connect failed, 20204 push
    /// failed, 20205 internal.
    public var code: Int { kind.code }

    /// `message` and `code`.
    public var description: String { "\(message) (\(kind), \(code))" }

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    static func invalidTarget(_ message: String) -> LiveStreamError { LiveStreamError(.invalidTarget, message) }
}

/// A change in an output's state, delivered on that output's writer thread.
public struct LiveOutputEvent: Sendable, Hashable {
    /// The output's id, as given to `addOutput`.
    public var output: String
    /// Its new state.
    public var status: LiveStreamStatus
    /// What went wrong, for `connectFailed`, `pushFailed` and `internalError`.
    public var error: LiveStreamError?

    /// Creates an event.
    public init(output: String, status: LiveStreamStatus, error: LiveStreamError? = nil) {
        self.output = output
        self.status = status
        self.error = error
    }
}
