import MediaEngine

/// The P2P call vocabulary shared by client and server, with NIM's numbering
/// (`NIMNetCallMediaType`, `NIMNetCallControlType`, video quality presets).

/// Audio-only or audio and video (NIM: audio = 1, video = 2).
public enum CallType: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case audio = 1
    case video = 2

    public var description: String { self == .audio ? "audio" : "video" }
}

/// Preferred video quality of a call (NIM's presets).
public enum CallVideoQuality: String, Sendable, Hashable, Codable, CaseIterable {
    case `default`
    case low
    case medium
    case high
    case p480 = "480p"
    case p540 = "540p"
    case p720 = "720p"

    /// Capture size, frame rate and VP8 bitrate of the preset.
    public var encoding: (width: Int, height: Int, frameRate: Int, bitrate: Int) {
        switch self {
        case .low: (176, 144, 15, 150_000)
        case .medium: (352, 288, 15, 400_000)
        case .default, .p480: (640, 480, 30, 800_000)
        case .high: (640, 480, 30, 1_200_000)
        case .p540: (960, 540, 30, 1_500_000)
        case .p720: (1_280, 720, 30, 2_000_000)
        }
    }
}

/// In-call control notifications relayed to the peer, numbered as NIM numbers them.
public enum CallControl: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case openAudio = 1
    case closeAudio = 2
    case openVideo = 3
    case closeVideo = 4
    /// Ask the peer to switch the call from audio to video.
    case toVideo = 5
    case agreeToVideo = 6
    case rejectToVideo = 7
    /// The call switches from video to audio.
    case toAudio = 8
    case busyLine = 9
    case noCamera = 10
    /// The app went to the background.
    case background = 11
    /// Feedback: the callee's device is ringing.
    case feedback = 12

    public var description: String {
        switch self {
        case .openAudio: "openAudio"
        case .closeAudio: "closeAudio"
        case .openVideo: "openVideo"
        case .closeVideo: "closeVideo"
        case .toVideo: "toVideo"
        case .agreeToVideo: "agreeToVideo"
        case .rejectToVideo: "rejectToVideo"
        case .toAudio: "toAudio"
        case .busyLine: "busyLine"
        case .noCamera: "noCamera"
        case .background: "background"
        case .feedback: "feedback"
        }
    }
}

/// Why a call ended, as stored in its record.
public enum CallEndReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// Answered, then hung up by either side.
    case completed
    /// The callee declined.
    case rejected
    /// Nobody answered in time.
    case missed
    /// The callee was in another call.
    case busy
    /// The caller hung up before an answer.
    case cancelled
    /// Media never connected, a party vanished, or the server shut down.
    case failed
}

/// Options of `start` (NIM's `NIMNetCallOption`, the parts that mean something here).
public struct CallOption: Sendable, Hashable, Codable {
    public var videoQuality: CallVideoQuality
    /// Send the camera picture uncropped.
    public var disableCropping: Bool
    /// Free text delivered to the callee with the invitation.
    public var extendMessage: String?

    public init(videoQuality: CallVideoQuality = .default, disableCropping: Bool = false, extendMessage: String? = nil) {
        self.videoQuality = videoQuality
        self.disableCropping = disableCropping
        self.extendMessage = extendMessage
    }
}

/// One ICE candidate of a side: an address it may receive media on, its kind and its
/// priority (RFC 8445 §5.1.2). `type` and `priority` may be left out: a host candidate of
/// host priority.
public struct MediaCandidate: Sendable, Hashable, Codable {
    public var host: String
    public var port: Int
    /// "host", "srflx", "prflx" or "relay".
    public var type: String?
    public var priority: UInt32?
    public var foundation: String?

    public init(host: String, port: Int, type: String? = nil, priority: UInt32? = nil, foundation: String? = nil) {
        self.host = host
        self.port = port
        self.type = type
        self.priority = priority
        self.foundation = foundation
    }
}

/// What one side tells the other to send it media: its ICE candidates (more may follow as
/// `candidates` messages), its SRTP key, which SSRCs it sends from, and its ICE
/// credentials (the connectivity checks to it are signed with them).
///
/// Holds a key and a password: never log or print it (its `description` redacts both).
public struct MediaEndpoint: Sendable, Hashable, Codable, CustomStringConvertible {
    public var candidates: [MediaCandidate]
    /// SRTP profile name, e.g. `AES_CM_128_HMAC_SHA1_80`.
    public var srtpProfile: String
    /// The sender's master key and salt, base64 (the `inline:` value of `a=crypto`).
    public var srtpKey: String
    public var audioSSRC: UInt32
    public var videoSSRC: UInt32?
    /// ICE username fragment and password (RFC 8445 §5.3; ice-chars, 4-256 and 22-256).
    public var iceUfrag: String
    public var icePassword: String
    /// A meeting participant's: the RTX payload type (RFC 4588) it takes the forwarding
    /// server's video retransmissions on, each video's on `RTXStream.ssrc(forVideo:)`;
    /// absent: plain retransmissions (the identical packets again).
    public var rtxPayloadType: UInt8?
    /// A meeting participant's simulcast video: its layers, lowest first (two or three),
    /// the first under `videoSSRC`. The server sends each subscriber one of them, as
    /// `videoSSRC`. Absent: one video stream.
    public var videoLayers: [VideoLayer]?

    /// One layer of a simulcast video: its SSRC and picture size.
    public typealias VideoLayer = SimulcastStream

    public init(candidates: [MediaCandidate], srtpProfile: String, srtpKey: String, audioSSRC: UInt32, videoSSRC: UInt32?,
                iceUfrag: String, icePassword: String) {
        self.candidates = candidates
        self.srtpProfile = srtpProfile
        self.srtpKey = srtpKey
        self.audioSSRC = audioSSRC
        self.videoSSRC = videoSSRC
        self.iceUfrag = iceUfrag
        self.icePassword = icePassword
    }

    public var description: String {
        "MediaEndpoint(candidates: \(candidates.map { "\($0.type ?? "host") \($0.host):\($0.port)" }), \(srtpProfile), key and password redacted)"
    }
}

/// The server's record of one call (NIM's call record, 话单).
public struct CallRecord: Sendable, Hashable, Codable {
    public var callID: UInt64
    public var caller: String
    public var callee: String
    public var type: CallType
    /// When `start` arrived, milliseconds since 1970.
    public var startedAt: Int64
    /// Milliseconds from media connected to the end; 0 when it never connected.
    public var connectedDuration: Int64
    public var endReason: CallEndReason
    /// Who ended it (an account), when a party did.
    public var endedBy: String?

    public init(callID: UInt64, caller: String, callee: String, type: CallType, startedAt: Int64, connectedDuration: Int64,
                endReason: CallEndReason, endedBy: String?) {
        self.callID = callID
        self.caller = caller
        self.callee = callee
        self.type = type
        self.startedAt = startedAt
        self.connectedDuration = connectedDuration
        self.endReason = endReason
        self.endedBy = endedBy
    }
}
