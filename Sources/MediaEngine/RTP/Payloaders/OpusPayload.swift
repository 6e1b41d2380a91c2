import COpus

/// RTP payload format for Opus (RFC 7587): one Opus packet per RTP packet, a 48 kHz RTP
/// clock whatever the coded bandwidth, and the marker bit on the first packet of a
/// talkspurt (after DTX silence).
public struct OpusPayloader: Sendable, Hashable {
    /// The RTP clock rate RFC 7587 fixes for Opus.
    public static let clockRate = 48_000

    /// RTP timestamp of the next packet, relative to the stream's start.
    public private(set) var nextTimestamp: UInt32 = 0
    private var inSilence = true

    public init() {}

    /// The timestamp and marker bit for the next packet, which holds `samples` samples per
    /// channel at 48 kHz; a DTX packet (1 or 2 bytes) starts a silence, and the next
    /// normal packet after it is marked.
    public mutating func next(samples: Int, payloadSize: Int) -> (timestamp: UInt32, marker: Bool) {
        let timestamp = nextTimestamp
        nextTimestamp &+= UInt32(truncatingIfNeeded: samples)
        let isDTX = payloadSize <= 2
        let marker = inSilence && !isDTX
        inSilence = isDTX
        return (timestamp, marker)
    }
}

/// Checks received Opus payloads before they reach the decoder (RFC 7587 section 4.2).
public enum OpusDepayloader {
    /// Samples per channel at 48 kHz the payload holds.
    /// - Throws: `PacketError` for an empty payload or one whose TOC and frame count do not
    ///   form a valid Opus packet (RFC 6716 section 3, which also caps a packet at 120 ms).
    public static func samples(in payload: UnsafeRawBufferPointer) throws(PacketError) -> Int {
        guard let base = payload.baseAddress, !payload.isEmpty else {
            throw PacketError(.tooShort, "Opus payload is empty")
        }
        let samples = opus_packet_get_nb_samples(base.assumingMemoryBound(to: UInt8.self), Int32(payload.count), 48_000)
        guard samples > 0 else {
            throw PacketError(.badField, "Opus payload of \(payload.count) bytes is not a valid Opus packet (status \(samples))")
        }
        return Int(samples)
    }
}
