// SRTP round trips, SRTPContext and the same libsrtp2 calls from C, on identical packets:
// the wire benchmarks' pairs and the session benchmarks' C baseline.

import BenchmarkSupport
import MediaEngine
import SRTPBaseline

/// The fixed master key and salt both sides use.
public func srtpKey(_ profile: SRTPProfile) -> [UInt8] {
    pseudoRandomBytes(count: profile.keyLength, seed: 0x5EC2_E7)
}

/// Makes libsrtp's one srtp_init of this process the way the engine makes it: through
/// SRTPContext, which calls it (under a lock) for its first context. The C baseline does
/// not call srtp_init itself, because a second call fails (SRTPBaseline.h).
public func initialiseLibSRTP() throws {
    _ = try SRTPContext(keying: try SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: srtpKey(.aesCM128HMACSHA1_80)),
                        direction: .outbound)
}

/// One plain RTP packet and the work buffer it is protected and unprotected in; the same
/// code prepares each iteration's input for both sides.
public final class SRTPWorkload {
    static let firstSequenceNumber: UInt16 = 0xFF00  // wraps (and bumps the ROC) early in the run

    /// The RTP packet: a 12-byte header (PT 96, the SSRC of WireSettings), the rest
    /// payload. Its sequence number is rewritten before every copy.
    public let prepared: UnsafeMutableRawBufferPointer
    /// `length + SRTPContext.trailerCapacity` bytes.
    public let work: UnsafeMutableRawBufferPointer
    public let length: Int
    private var sequenceNumber = SRTPWorkload.firstSequenceNumber

    public init(size: Int, ssrc: UInt32 = 0x1234_5678) throws {
        guard size > 12, SRTPContext.trailerCapacity == Int(BaselineSRTPTrailerCapacity) else {
            throw BenchmarkFailure("SRTP: bad packet size, or the baseline's trailer capacity drifted")
        }
        let packet = RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: 0, timestamp: 90_000,
                                                 ssrc: ssrc),
                               payload: pseudoRandomBytes(count: size - 12, seed: UInt32(size)))
        let bytes = try packet.serialized()
        length = bytes.count
        prepared = .allocate(byteCount: length, alignment: 16)
        prepared.copyBytes(from: bytes)
        work = .allocate(byteCount: length + SRTPContext.trailerCapacity, alignment: 16)
        work.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit {
        prepared.deallocate()
        work.deallocate()
    }

    /// Advances the sequence number in the prepared packet and copies it into `work`.
    @inline(__always)
    public func loadNext() {
        sequenceNumber &+= 1
        prepared[2] = UInt8(truncatingIfNeeded: sequenceNumber >> 8)
        prepared[3] = UInt8(truncatingIfNeeded: sequenceNumber)
        work.baseAddress!.copyMemory(from: prepared.baseAddress!, byteCount: length)
    }
}

/// SRTPContext, one outbound and one inbound, with the same key.
public final class SwiftSRTPRoundTrip {
    public let workload: SRTPWorkload
    private let outbound: SRTPContext
    private let inbound: SRTPContext

    public init(profile: SRTPProfile, size: Int) throws {
        workload = try SRTPWorkload(size: size)
        let keying = try SRTPKeyingMaterial(profile: profile, bytes: srtpKey(profile))
        outbound = try SRTPContext(keying: keying, direction: .outbound, replayWindow: 1_024)
        inbound = try SRTPContext(keying: keying, direction: .inbound, replayWindow: 1_024)
    }

    /// Loads the next packet into the work buffer and protects it; returns the SRTP length.
    @inline(__always)
    public func protectNext() throws(SRTPError) -> Int {
        workload.loadNext()
        return try outbound.protect(workload.work, length: workload.length)
    }

    @inline(__always)
    public func unprotect(length: Int) throws(SRTPError) -> Int {
        try inbound.unprotect(workload.work, length: length)
    }

    /// Unprotects a packet in another buffer (a relayed copy, inside a TURN frame).
    @inline(__always)
    public func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try inbound.unprotect(buffer, length: length)
    }

    /// One iteration: protect the next packet, then unprotect it; returns the RTP length.
    @inline(__always)
    public func roundTripNext() throws(SRTPError) -> Int {
        try unprotect(length: try protectNext())
    }
}

/// The C baseline: the same sessions, the same workload code.
public final class BaselineSRTPRoundTrip {
    public let workload: SRTPWorkload
    private let outbound: OpaquePointer
    private let inbound: OpaquePointer

    public init(profile: SRTPProfile, size: Int) throws {
        workload = try SRTPWorkload(size: size)
        let baselineProfile: BaselineSRTPProfile = switch profile {
        case .aesCM128HMACSHA1_80: BaselineSRTPProfileAESCM128HMACSHA1_80
        case .aeadAES128GCM: BaselineSRTPProfileAEADAES128GCM
        case .aesCM128HMACSHA1_32: throw BenchmarkFailure("SRTP baseline: \(profile) is not mirrored")
        }
        try initialiseLibSRTP()
        let key = srtpKey(profile)
        guard let outbound = baseline_srtp_create(baselineProfile, key, key.count, 1, 1_024) else {
            throw BenchmarkFailure("SRTP baseline: libsrtp refused the outbound \(profile) session")
        }
        guard let inbound = baseline_srtp_create(baselineProfile, key, key.count, 0, 1_024) else {
            baseline_srtp_destroy(outbound)
            throw BenchmarkFailure("SRTP baseline: libsrtp refused the inbound \(profile) session")
        }
        self.outbound = outbound
        self.inbound = inbound
    }

    deinit {
        baseline_srtp_destroy(outbound)
        baseline_srtp_destroy(inbound)
    }

    @inline(__always)
    public func protectNext() throws -> Int {
        workload.loadNext()
        let work = workload.work
        let length = baseline_srtp_protect(outbound, work.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                           work.count, workload.length)
        if length < 0 { throw BenchmarkFailure("SRTP baseline: protect failed (\(length))") }
        return Int(length)
    }

    @inline(__always)
    public func unprotect(length: Int) throws -> Int {
        let work = workload.work
        let plainLength = baseline_srtp_unprotect(inbound, work.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                  work.count, length)
        if plainLength < 0 { throw BenchmarkFailure("SRTP baseline: unprotect failed (\(plainLength))") }
        return Int(plainLength)
    }

    @inline(__always)
    public func roundTripNext() throws -> Int {
        try unprotect(length: try protectNext())
    }
}

/// Throws unless SRTPContext and the baseline turn the same key and packets (same SSRC,
/// same sequence numbers, across the 16-bit wrap) into byte-identical SRTP packets, and
/// both unprotect them back to the plain packet. This shows the baseline is configured
/// as SRTPContext is.
public func checkSRTPAgreement(profile: SRTPProfile, size: Int) throws {
    let swift = try SwiftSRTPRoundTrip(profile: profile, size: size)
    let baseline = try BaselineSRTPRoundTrip(profile: profile, size: size)
    for packet in 0..<512 {
        let swiftLength = try swift.protectNext()
        let baselineLength = try baseline.protectNext()
        guard swiftLength == size + profile.rtpOverhead, swiftLength == baselineLength,
              swift.workload.work[..<swiftLength].elementsEqual(baseline.workload.work[..<baselineLength])
        else {
            throw BenchmarkFailure("SRTP \(profile) \(size) B: SRTPContext and the baseline protect packet \(packet) "
                                   + "differently (\(swiftLength) vs \(baselineLength) bytes); the baseline's settings drifted")
        }
        let swiftPlain = try swift.unprotect(length: swiftLength)
        let baselinePlain = try baseline.unprotect(length: baselineLength)
        guard swiftPlain == size, baselinePlain == size,
              swift.workload.work[..<size].elementsEqual(swift.workload.prepared),
              baseline.workload.work[..<size].elementsEqual(baseline.workload.prepared)
        else {
            throw BenchmarkFailure("SRTP \(profile) \(size) B: unprotect did not give back plain packet \(packet)")
        }
    }
}
