/// Rebuilds VP8 frames from RTP packets (RFC 7741): collects the packets of one RTP
/// timestamp, checks that every sequence number from the frame's first packet (S = 1,
/// PID = 0) to its marker packet arrived, and hands the frame out in order.
///
/// Frames with a missing fragment are dropped and counted; after a drop, delta frames
/// are held back until a keyframe arrives, so the decoder never sees a frame whose
/// references are missing. Reordering within a frame is handled; a packet of a frame
/// older than the one being assembled is late and dropped. Buffers are reused, so steady
/// state allocates nothing. Not thread-safe.
public struct VP8FrameAssembler: Sendable {
    /// Counters, named after W3C webrtc-stats where one exists.
    public struct Statistics: Sendable, Hashable {
        /// Complete frames handed out.
        public var framesAssembled = 0
        /// Keyframes among them.
        public var keyFramesAssembled = 0
        /// Frames dropped because a fragment was missing.
        public var framesDropped = 0
        /// Complete delta frames withheld while waiting for a keyframe.
        public var framesSkippedAwaitingKeyframe = 0
        /// Packets of a frame older than the current one.
        public var latePackets = 0
        /// Packets with the same sequence number as one already held.
        public var duplicatePackets = 0
        /// Payloads whose VP8 descriptor could not be parsed.
        public var malformedPackets = 0
    }

    /// A frame handed to the caller.
    public struct Frame {
        /// The encoded frame; valid only during the callback.
        public let data: UnsafeRawBufferPointer
        public let timestamp: UInt32
        public let isKeyframe: Bool
        public let pictureID: UInt16?
    }

    public private(set) var statistics = Statistics()
    /// True until the first keyframe, and again after a dropped frame. A receiver should
    /// ask the sender for a keyframe (PLI) while this holds.
    public private(set) var isAwaitingKeyframe = true

    private struct Piece: Sendable {
        var sequence: Int64
        var start: Int
        var length: Int
        var startsFrame: Bool
        var marker: Bool
        var pictureID: UInt16?
    }

    private var unwrapper = SequenceNumberUnwrapper()
    private var timestamp: UInt32?
    private var pieces: [Piece] = []
    private var storage: [UInt8] = []
    private var frame: [UInt8] = []
    private var finishedTimestamp: UInt32?

    public init() {
        pieces.reserveCapacity(128)
        storage.reserveCapacity(256 * 1024)
        frame.reserveCapacity(256 * 1024)
    }

    /// Adds one packet; calls `onFrame` when it completes a frame.
    public mutating func insert(_ packet: RTPPacketView, onFrame: (Frame) -> Void) {
        let payload = packet.payload
        let descriptor: VP8PayloadDescriptor
        let descriptorSize: Int
        do {
            (descriptor, descriptorSize) = try VP8PayloadDescriptor.parse(payload)
        } catch {
            statistics.malformedPackets += 1
            return
        }
        let sequence = unwrapper.unwrap(packet.sequenceNumber)
        if let finishedTimestamp, packet.timestamp == finishedTimestamp {
            statistics.latePackets += 1
            return
        }
        if let current = timestamp, packet.timestamp != current {
            if Int32(bitPattern: packet.timestamp &- current) < 0 {
                statistics.latePackets += 1
                return
            }
            dropCurrentFrame()
        }
        if timestamp == nil { timestamp = packet.timestamp }
        if pieces.contains(where: { $0.sequence == sequence }) {
            statistics.duplicatePackets += 1
            return
        }
        let data = UnsafeRawBufferPointer(rebasing: payload[descriptorSize...])
        pieces.append(Piece(sequence: sequence, start: storage.count, length: data.count,
                            startsFrame: descriptor.startsFrame, marker: packet.marker,
                            pictureID: descriptor.pictureID?.value))
        storage.append(contentsOf: data)
        completeIfPossible(onFrame)
    }

    private mutating func completeIfPossible(_ onFrame: (Frame) -> Void) {
        guard let first = pieces.first(where: \.startsFrame), let last = pieces.first(where: \.marker),
              last.sequence >= first.sequence,
              Int(last.sequence - first.sequence) + 1 == pieces.count(where: { $0.sequence >= first.sequence && $0.sequence <= last.sequence })
        else { return }
        pieces.sort { $0.sequence < $1.sequence }
        frame.removeAll(keepingCapacity: true)
        for piece in pieces where piece.sequence >= first.sequence && piece.sequence <= last.sequence {
            frame.append(contentsOf: storage[piece.start..<(piece.start + piece.length)])
        }
        let timestamp = self.timestamp!
        resetFrame()
        finishedTimestamp = timestamp
        // VP8 frame tag (RFC 6386 9.1): bit 0 of the first byte is 0 for keyframes.
        let isKeyframe = !frame.isEmpty && frame[0] & 0x01 == 0
        if isAwaitingKeyframe && !isKeyframe {
            statistics.framesSkippedAwaitingKeyframe += 1
            return
        }
        isAwaitingKeyframe = false
        statistics.framesAssembled += 1
        if isKeyframe { statistics.keyFramesAssembled += 1 }
        frame.withUnsafeBytes { bytes in
            onFrame(Frame(data: bytes, timestamp: timestamp, isKeyframe: isKeyframe, pictureID: first.pictureID))
        }
    }

    private mutating func dropCurrentFrame() {
        if !pieces.isEmpty {
            statistics.framesDropped += 1
            isAwaitingKeyframe = true
        }
        resetFrame()
    }

    private mutating func resetFrame() {
        timestamp = nil
        pieces.removeAll(keepingCapacity: true)
        storage.removeAll(keepingCapacity: true)
    }
}
