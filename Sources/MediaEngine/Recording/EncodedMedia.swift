/// One encoded frame as it passes a tap on its way out (after the encoder) or in (after
/// SRTP, before decoding): an Opus packet or a whole VP8 frame. The bytes are borrowed for
/// the duration of the call; keep a copy to use them later.
public struct EncodedMedia {
    public enum Kind: Sendable, Hashable { case audio, video }

    public var kind: Kind
    public var data: UnsafeRawBufferPointer
    /// The RTP timestamp (48 kHz audio, 90 kHz video).
    public var rtpTimestamp: UInt32
    public var isKeyframe: Bool
    /// The picture size (video; for a received frame, as the decoder found it).
    public var width: Int
    public var height: Int
    /// When it was sent or received.
    public var time: ContinuousClock.Instant

    public init(kind: Kind, data: UnsafeRawBufferPointer, rtpTimestamp: UInt32, isKeyframe: Bool = false,
                width: Int = 0, height: Int = 0, time: ContinuousClock.Instant) {
        self.kind = kind
        self.data = data
        self.rtpTimestamp = rtpTimestamp
        self.isKeyframe = isKeyframe
        self.width = width
        self.height = height
        self.time = time
    }
}
