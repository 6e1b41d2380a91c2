import CSRTP

/// One direction of SRTP and SRTCP over libsrtp2: either protecting what this side sends
/// or unprotecting what it receives, for any SSRC, with one master key.
///
/// Works in place on the caller's buffer and allocates nothing per packet. Failed
/// unprotects are counted in `statistics` and thrown, so the caller drops the packet.
/// Not thread-safe: one owner at a time.
public final class SRTPContext {
    /// Which way packets go through this context.
    public enum Direction: Sendable, Hashable {
        /// Encrypt and tag outgoing packets.
        case outbound
        /// Check and decrypt incoming packets.
        case inbound
    }

    /// Counters of what unprotect refused.
    public struct Statistics: Sendable, Hashable {
        public var packetsProtected = 0
        public var packetsUnprotected = 0
        /// Tag mismatches: wrong key, or altered bytes.
        public var authenticationFailures = 0
        /// Indices seen before.
        public var replays = 0
        /// Indices behind the replay window.
        public var tooOld = 0
        /// Anything else libsrtp refused (too short, unknown SSRC state, ...).
        public var otherFailures = 0
    }

    /// Bytes a buffer must hold beyond the packet for `protect` (libsrtp may write a
    /// trailer of up to this size) and for `protectRTCP` (4 more for the SRTCP index).
    public static let trailerCapacity = 16 + 128 + 4

    public let profile: SRTPProfile
    public let direction: Direction
    public private(set) var statistics = Statistics()
    private let session: srtp_t

    /// The status of the process's one `srtp_init` call, made under a lock on first use.
    /// libsrtp accepts a single initialisation per process (a second call fails with
    /// bad_param), so a failure is remembered but does not stop session creation: another
    /// in-process user may have initialised the library already.
    private static let libraryStatus = Locked<srtp_err_status_t?>(nil)

    private static func initializeLibrary() -> srtp_err_status_t {
        libraryStatus.withLock { status in
            if status == nil { status = srtp_init() }
            return status!
        }
    }

    /// Creates a context.
    /// - Parameters:
    ///   - replayWindow: packets remembered for replay checks, 64...32768 (default 1024).
    /// - Throws: `SRTPError` when libsrtp refuses the key or cannot start.
    public init(keying: SRTPKeyingMaterial, direction: Direction, replayWindow: Int = 1_024) throws(SRTPError) {
        let initialization = SRTPContext.initializeLibrary()
        guard (64...32_768).contains(replayWindow) else {
            throw SRTPError(.badKey, "srtp: replay window \(replayWindow) is outside 64...32768")
        }
        profile = keying.profile
        self.direction = direction
        var policy = srtp_policy_t()
        keying.profile.apply(rtp: &policy.rtp, rtcp: &policy.rtcp)
        policy.ssrc.type = direction == .outbound ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = UInt(replayWindow)
        policy.allow_repeat_tx = 0
        var key = keying.bytes
        var created: srtp_t?
        let status = key.withUnsafeMutableBufferPointer { buffer in
            policy.key = buffer.baseAddress
            return srtp_create(&created, &policy)
        }
        // libsrtp has copied the key into its own session keys.
        key.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices { buffer[index] = 0 }
        }
        guard status == srtp_err_status_ok, let created else {
            throw SRTPError(.libraryFailure, "srtp: creating the \(keying.profile) session failed (status \(status.rawValue)"
                + (initialization == srtp_err_status_ok ? ")" : "; srtp_init returned \(initialization.rawValue))"))
        }
        session = created
    }

    deinit {
        srtp_dealloc(session)
    }

    /// Encrypts and tags the RTP packet in `buffer[0..<length]` in place.
    /// - Parameter buffer: must hold `length + SRTPContext.trailerCapacity` bytes.
    /// - Returns: the SRTP packet's length.
    public func protect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try run(buffer, length, rtcp: false, protect: true)
    }

    /// Checks and decrypts the SRTP packet in `buffer[0..<length]` in place.
    /// - Returns: the RTP packet's length.
    /// - Throws: `SRTPError` with `authenticationFailed`, `replayed`, `tooOld` or
    ///   `malformed`; each is counted.
    public func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try run(buffer, length, rtcp: false, protect: false)
    }

    /// Encrypts and tags the RTCP compound packet in `buffer[0..<length]` in place.
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try run(buffer, length, rtcp: true, protect: true)
    }

    /// Checks and decrypts the SRTCP packet in `buffer[0..<length]` in place.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try run(buffer, length, rtcp: true, protect: false)
    }

    private func run(_ buffer: UnsafeMutableRawBufferPointer, _ length: Int, rtcp: Bool, protect: Bool) throws(SRTPError) -> Int {
        guard let base = buffer.baseAddress else {
            throw SRTPError(.bufferTooSmall, "srtp: buffer is empty")
        }
        precondition(protect == (direction == .outbound), "srtp: this context only \(direction == .outbound ? "protects" : "unprotects")")
        guard length >= (rtcp ? 8 : 12), length <= buffer.count else {
            statistics.otherFailures += protect ? 0 : 1
            throw SRTPError(.malformed, "srtp: \(rtcp ? "RTCP" : "RTP") packet of \(length) bytes is too short")
        }
        if protect {
            guard buffer.count >= length + SRTPContext.trailerCapacity else {
                throw SRTPError(.bufferTooSmall,
                                "srtp: buffer of \(buffer.count) bytes cannot take a \(length)-byte packet plus its trailer")
            }
        }
        var size = Int32(length)
        let status: srtp_err_status_t = switch (rtcp, protect) {
        case (false, true): srtp_protect(session, base, &size)
        case (false, false): srtp_unprotect(session, base, &size)
        case (true, true): srtp_protect_rtcp(session, base, &size)
        case (true, false): srtp_unprotect_rtcp(session, base, &size)
        }
        if status == srtp_err_status_ok {
            if protect { statistics.packetsProtected += 1 } else { statistics.packetsUnprotected += 1 }
            return Int(size)
        }
        let kind = rtcp ? "SRTCP" : "SRTP"
        switch status {
        case srtp_err_status_auth_fail:
            statistics.authenticationFailures += 1
            throw SRTPError(.authenticationFailed, "srtp: \(kind) packet failed authentication")
        case srtp_err_status_replay_fail:
            statistics.replays += 1
            throw SRTPError(.replayed, "srtp: \(kind) packet is a replay")
        case srtp_err_status_replay_old:
            statistics.tooOld += 1
            throw SRTPError(.tooOld, "srtp: \(kind) packet is older than the replay window")
        default:
            if !protect { statistics.otherFailures += 1 }
            throw SRTPError(protect ? .libraryFailure : .malformed,
                            "srtp: \(protect ? "protecting" : "unprotecting") \(kind) failed (status \(status.rawValue))")
        }
    }
}
