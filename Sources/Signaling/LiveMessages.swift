import Foundation

/// The live-room ("bypass streaming") vocabulary (NIM's interactive live streaming): a
/// meeting whose host joins with a push URL; co-hosts join the same name with bypass
/// enabled; the server mixes, lays out, encodes and pushes the room. Requests and events
/// ride the call protocol's envelope like the meeting ones.

extension MessageType {
    // Requests (client -> server), the host's only.
    /// Moves the push to another URL without restarting the room.
    public static let switchBypassStreamingURL = "switchBypassStreamingUrl"
    /// Stops or resumes the push.
    public static let setBypassStreamingEnabled = "setBypassStreamingEnabled"
    /// Changes the video mix mode (or the custom layout) while live.
    public static let setBypassStreamingMixMode = "setBypassStreamingMixMode"
    // Events (server -> host).
    /// The push's status changed (NIM's live-stream statuses 500-508).
    public static let bypassStreamingStatus = "bypassStreamingStatus"
    /// The outcome of a `switchBypassStreamingUrl`.
    public static let bypassStreamingURLSwitched = "bypassStreamingUrlSwitched"
    /// The outcome of a `setBypassStreamingEnabled` (NIM's `onSetBypassStreamingEnabled`).
    public static let bypassStreamingEnabled = "bypassStreamingEnabled"

    /// The live-room request types, which the server routes to its meeting registry.
    public static let liveRequests: Set<String> = [switchBypassStreamingURL, setBypassStreamingEnabled, setBypassStreamingMixMode]
}

/// How a participant joins a live room (NIM's `bypassStreaming*` meeting options). The
/// participant that gives `url` is the host; co-hosts give none.
public struct BypassStreaming: Sendable, Hashable, Codable {
    /// Where the room is pushed: `rtmp://`, `rtmps://`, `icecast://`, `http://` (PUT) or a
    /// file path; the host's only. Holds the stream key: never print it.
    public var url: String?
    /// NIM's video mix mode, 0-4 (4: `customLayout`); nil: 0 (floating right vertical).
    public var mixMode: Int?
    /// The custom layout's JSON (mix mode 4): `{"areas": [{"account", "x", "y", "width",
    /// "height", "fill"}]}` with coordinates in 0...1 of the frame.
    public var customLayout: String?
    /// Also record the pushed stream into the server's recording directory.
    public var serverRecording: Bool

    public init(url: String? = nil, mixMode: Int? = nil, customLayout: String? = nil, serverRecording: Bool = false) {
        self.url = url
        self.mixMode = mixMode
        self.customLayout = customLayout
        self.serverRecording = serverRecording
    }
}

extension Request {
    public struct SwitchBypassStreamingURL: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var url: String

        public init(callID: UInt64, url: String) {
            self.callID = callID
            self.url = url
        }
    }

    public struct SetBypassStreamingEnabled: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var enabled: Bool

        public init(callID: UInt64, enabled: Bool) {
            self.callID = callID
            self.enabled = enabled
        }
    }

    public struct SetBypassStreamingMixMode: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var mixMode: Int
        /// The custom layout's JSON when `mixMode` is 4.
        public var customLayout: String?

        public init(callID: UInt64, mixMode: Int, customLayout: String? = nil) {
            self.callID = callID
            self.mixMode = mixMode
            self.customLayout = customLayout
        }
    }
}

extension Event {
    /// The push's status (NIM: initial 500, layout error 501, connecting 502, connected
    /// 503, connect failed 504, pushing 505, push failed 506, internal error 507, user
    /// count limit 508), with the failure when there is one.
    public struct BypassStreamingStatus: Sendable, Hashable, Codable {
        public var callID: UInt64
        /// Which output: "push" (the URL) or "recording" (the server recording).
        public var output: String
        public var status: Int
        public var code: Int?
        public var message: String?

        public init(callID: UInt64, output: String, status: Int, error: SignalingError? = nil) {
            self.callID = callID
            self.output = output
            self.status = status
            code = error?.code.rawValue
            message = error?.message
        }

        public var error: SignalingError? { code.map { SignalingError(SignalingError.Code(rawValue: $0), message ?? "") } }
    }

    /// The outcome of a URL switch or an enable/disable: nil error is success.
    public struct BypassStreamingResult: Sendable, Hashable, Codable {
        public var callID: UInt64
        /// For `bypassStreamingEnabled`: the state asked for.
        public var enabled: Bool?
        public var code: Int?
        public var message: String?

        public init(callID: UInt64, enabled: Bool? = nil, error: SignalingError? = nil) {
            self.callID = callID
            self.enabled = enabled
            code = error?.code.rawValue
            message = error?.message
        }

        public var error: SignalingError? { code.map { SignalingError(SignalingError.Code(rawValue: $0), message ?? "") } }
    }
}
