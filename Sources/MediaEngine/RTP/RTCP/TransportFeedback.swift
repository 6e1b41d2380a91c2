/// An RTCP transport-wide congestion control feedback message
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 section 3.1, RTPFB FMT 15): for a
/// run of transport-wide sequence numbers, which packets arrived and when.
///
/// The fields are the wire fields, kept as sent (including symbols of a last chunk past
/// the status count and run lengths that overshoot it), so a parsed packet serializes
/// back to its bytes. `packets` gives the convenient view: one `PacketResult` per
/// sequence number, received or not, with the arrival time relative to the reference time.
///
/// Alignment comes in two styles that both occur in the wild: zero bytes inside the
/// packet after the last delta (the draft's figure), or RTCP padding with the P bit
/// whose count may be 1 to 3 (libwebrtc, Pion). Both parse; `paddingSize` tells which.
public struct TransportFeedback: Sendable, Hashable {
    /// The packet type of every transport-wide feedback (RTPFB).
    public static let packetType = RTCPHeader.PacketType.transportLayerFeedback
    /// The feedback message type of transport-wide congestion control feedback.
    public static let format: UInt8 = 15
    /// The unit of a receive delta: 250 µs.
    public static let deltaTick = Duration.microseconds(250)
    /// The unit of the reference time: 64 ms.
    public static let referenceTimeTick = Duration.milliseconds(64)
    /// The smallest reference time the signed 24-bit field holds.
    public static let minimumReferenceTime: Int32 = -(1 << 23)
    /// The largest reference time the signed 24-bit field holds.
    public static let maximumReferenceTime: Int32 = (1 << 23) - 1
    /// The longest run a run-length chunk holds (13 bits).
    public static let maximumRunLength = 0x1FFF

    private static let fixedSize = 16
    private static let chunkSize = 2
    private static let vectorFlag: UInt16 = 0x8000
    private static let twoBitFlag: UInt16 = 0x4000
    private static let runSymbolShift: UInt16 = 13
    private static let runLengthMask: UInt16 = 0x1FFF
    static let oneBitCapacity = 14
    static let twoBitCapacity = 7

    /// A packet status symbol: whether the packet arrived and how its delta is coded.
    public enum StatusSymbol: UInt8, Sendable, Hashable {
        /// Not received (or not yet); no receive delta.
        case notReceived = 0
        /// Received; a 1-byte unsigned delta (0 to 63.75 ms) follows.
        case receivedSmallDelta = 1
        /// Received; a 2-byte signed delta (-8192 to 8191.75 ms) follows.
        case receivedLargeDelta = 2

        /// The number of delta bytes this symbol announces.
        public var deltaSize: Int { Int(rawValue) }
    }

    /// One 16-bit packet chunk.
    public enum PacketChunk: Sendable, Hashable {
        /// T=0: `count` consecutive packets with the same symbol, `count` up to 8191.
        case runLength(StatusSymbol, count: Int)
        /// T=1, S=0: exactly 14 symbols, each `notReceived` or `receivedSmallDelta`.
        case oneBitVector([StatusSymbol])
        /// T=1, S=1: exactly 7 symbols.
        case twoBitVector([StatusSymbol])

        /// How many statuses the chunk holds (a last chunk may hold more than are counted).
        public var capacity: Int {
            switch self {
            case .runLength(_, let count): count
            case .oneBitVector: TransportFeedback.oneBitCapacity
            case .twoBitVector: TransportFeedback.twoBitCapacity
            }
        }
    }

    /// One sequence number's outcome.
    public struct PacketResult: Sendable, Hashable {
        /// The transport-wide sequence number.
        public var sequenceNumber: UInt16
        /// Arrival time relative to the reference time (the sum of the deltas so far);
        /// nil when the packet was not received.
        public var receiveOffset: Duration?

        /// Creates a result.
        ///
        /// - Parameters:
        ///   - sequenceNumber: The transport-wide sequence number.
        ///   - receiveOffset: Arrival relative to the reference time, or nil if lost.
        public init(sequenceNumber: UInt16, receiveOffset: Duration?) {
            self.sequenceNumber = sequenceNumber
            self.receiveOffset = receiveOffset
        }
    }

    /// SSRC of the packet's sender (the receiver of the media).
    public var senderSSRC: UInt32
    /// SSRC of the media source; transport-wide feedback covers all streams, so senders
    /// often put the first media SSRC or 0 here.
    public var mediaSSRC: UInt32
    /// The transport-wide sequence number of the first status.
    public var baseSequenceNumber: UInt16
    /// How many consecutive sequence numbers from the base the packet reports, at least 1.
    public var packetStatusCount: UInt16
    /// Signed 24-bit time in 64 ms units on the feedback sender's clock; the first
    /// receive delta is relative to it.
    public var referenceTime: Int32
    /// Counts feedback packets sent, wrapping at 256, so losses of feedback can be seen.
    public var feedbackPacketCount: UInt8
    /// The packet chunks, in order, covering exactly `packetStatusCount` statuses (the
    /// last one may reach past it).
    public var chunks: [PacketChunk]
    /// One delta per received status, in 250 µs ticks, each relative to the previous
    /// received packet (the first to the reference time).
    public var receiveDeltas: [Int16]
    /// RTCP padding octets after the packet (P bit set), 0 for none; any count from 1 up.
    public var paddingSize: UInt8

    /// Creates a feedback message from its wire fields.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - mediaSSRC: The media source.
    ///   - baseSequenceNumber: The first reported sequence number.
    ///   - packetStatusCount: Statuses reported, at least 1.
    ///   - referenceTime: 64 ms units, signed 24 bits.
    ///   - feedbackPacketCount: The feedback sequence counter.
    ///   - chunks: Chunks covering `packetStatusCount` statuses.
    ///   - receiveDeltas: One delta in 250 µs ticks per received status.
    ///   - paddingSize: RTCP padding octets, 0 for none.
    public init(
        senderSSRC: UInt32, mediaSSRC: UInt32, baseSequenceNumber: UInt16, packetStatusCount: UInt16,
        referenceTime: Int32, feedbackPacketCount: UInt8, chunks: [PacketChunk], receiveDeltas: [Int16],
        paddingSize: UInt8 = 0
    ) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.baseSequenceNumber = baseSequenceNumber
        self.packetStatusCount = packetStatusCount
        self.referenceTime = referenceTime
        self.feedbackPacketCount = feedbackPacketCount
        self.chunks = chunks
        self.receiveDeltas = receiveDeltas
        self.paddingSize = paddingSize
    }

    /// Creates a feedback message for consecutive sequence numbers from `baseSequenceNumber`,
    /// choosing symbols and chunks: a delta of 0...255 ticks gets the 1-byte symbol,
    /// anything else the 2-byte one; chunks are packed greedily (runs, else 14 one-bit
    /// symbols, else 7 two-bit symbols).
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - mediaSSRC: The media source.
    ///   - baseSequenceNumber: The first reported sequence number.
    ///   - referenceTime: 64 ms units, signed 24 bits.
    ///   - feedbackPacketCount: The feedback sequence counter.
    ///   - packetDeltas: One entry per sequence number: the delta in 250 µs ticks from
    ///     the previous received packet (the first from the reference time), or nil when
    ///     not received. At most 65535 entries.
    public init(
        senderSSRC: UInt32, mediaSSRC: UInt32, baseSequenceNumber: UInt16, referenceTime: Int32,
        feedbackPacketCount: UInt8, packetDeltas: [Int16?]
    ) {
        var encoder = ChunkEncoder()
        var deltas: [Int16] = []
        for delta in packetDeltas {
            encoder.add(Self.symbol(for: delta))
            if let delta { deltas.append(delta) }
        }
        self.init(
            senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, baseSequenceNumber: baseSequenceNumber,
            packetStatusCount: UInt16(clamping: packetDeltas.count), referenceTime: referenceTime,
            feedbackPacketCount: feedbackPacketCount, chunks: encoder.finished(), receiveDeltas: deltas
        )
    }

    /// The symbol a delta needs: nil is not received, 0...255 ticks fit one byte.
    static func symbol(for delta: Int16?) -> StatusSymbol {
        guard let delta else { return .notReceived }
        return (0...255).contains(delta) ? .receivedSmallDelta : .receivedLargeDelta
    }

    /// The reference time as a duration (`referenceTime` × 64 ms).
    public var referenceTimestamp: Duration { Self.referenceTimeTick * Int(referenceTime) }

    /// The status symbols of the counted packets, in sequence order (at most
    /// `packetStatusCount`, fewer only if the chunks fall short).
    public var statusSymbols: [StatusSymbol] {
        let count = Int(packetStatusCount)
        var symbols: [StatusSymbol] = []
        symbols.reserveCapacity(count)
        for chunk in chunks where symbols.count < count {
            switch chunk {
            case .runLength(let symbol, let length):
                symbols.append(contentsOf: repeatElement(symbol, count: min(length, count - symbols.count)))
            case .oneBitVector(let vector), .twoBitVector(let vector):
                symbols.append(contentsOf: vector.prefix(count - symbols.count))
            }
        }
        return symbols
    }

    /// Every reported sequence number with its arrival time relative to the reference
    /// time, or nil when it was not received.
    public var packets: [PacketResult] {
        var results: [PacketResult] = []
        results.reserveCapacity(Int(packetStatusCount))
        var offset = Duration.zero
        var deltaIndex = 0
        for (index, symbol) in statusSymbols.enumerated() {
            let sequenceNumber = baseSequenceNumber &+ UInt16(truncatingIfNeeded: index)
            guard symbol != .notReceived, deltaIndex < receiveDeltas.count else {
                results.append(PacketResult(sequenceNumber: sequenceNumber, receiveOffset: nil))
                continue
            }
            offset += Self.deltaTick * Int(receiveDeltas[deltaIndex])
            deltaIndex += 1
            results.append(PacketResult(sequenceNumber: sequenceNumber, receiveOffset: offset))
        }
        return results
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |V=2|P|  FMT=15 |    PT=205     |           length              |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                     SSRC of packet sender                     |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                      SSRC of media source                     |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |      base sequence number     |      packet status count      |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                 reference time                | fb pkt. count |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |          packet chunk         |         packet chunk          |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     .                                                               .
     |         packet chunk          |  recv delta   |  recv delta   |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     .                                                               .
     |           recv delta          |  recv delta   | zero padding  |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     Run length chunk:    |0| S |      run length (13 bits)        |
     Status vector chunk: |1|0| 14 one-bit symbols                  |
                          |1|1| 7 two-bit symbols                   |
     Symbols: 00 not received, 01 small delta (1 byte, unsigned), 10 large or negative
     delta (2 bytes, signed), 11 reserved. Deltas are in 250 µs ticks.
    */

    /// Parses one transport-wide feedback message.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 205, FMT 15.
    /// - Throws: `PacketError` if the header is malformed or another type/FMT, the length
    ///   disagrees with `bytes`, the padding is invalid, the status count is 0, a symbol
    ///   is the reserved 11, the chunks or deltas run past the end, or 4 or more (or
    ///   non-zero) bytes follow the last delta.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let header = try RTCPHeader(parsing: bytes)
        guard header.packetType == Self.packetType, header.count == Self.format else {
            throw PacketError(
                .badField, "TWCC: packet type \(header.packetType) FMT/count \(header.count), expected \(Self.packetType) FMT \(Self.format)"
            )
        }
        guard header.packetSize == bytes.count else {
            throw PacketError(.badLength, "TWCC: RTCP length \(header.length) is \(header.packetSize) bytes, packet is \(bytes.count)")
        }
        // Not RTCPHeader.paddingSize: alignment padding of 1 to 3 octets is common here.
        var paddingSize: UInt8 = 0
        if header.padding {
            paddingSize = bytes[bytes.count - 1]
            guard paddingSize != 0, Int(paddingSize) <= bytes.count - RTCPHeader.size else {
                throw PacketError(.badPadding, "TWCC padding count \(paddingSize) is 0 or > \(bytes.count - RTCPHeader.size) bytes after the header")
            }
        }
        let body = UnsafeRawBufferPointer(rebasing: bytes[RTCPHeader.size..<(bytes.count - Int(paddingSize))])
        guard body.count >= Self.fixedSize else {
            throw PacketError(.tooShort, "TWCC too short: \(body.count) < \(Self.fixedSize) bytes after the header")
        }
        senderSSRC = body.uint32(at: 0)
        mediaSSRC = body.uint32(at: 4)
        baseSequenceNumber = body.uint16(at: 8)
        packetStatusCount = body.uint16(at: 10)
        referenceTime = Int32(bitPattern: body.uint24(at: 12) << 8) >> 8
        feedbackPacketCount = body[15]
        self.paddingSize = paddingSize
        guard packetStatusCount > 0 else {
            throw PacketError(.badField, "TWCC packet status count is 0")
        }

        let count = Int(packetStatusCount)
        var offset = Self.fixedSize
        var chunks: [PacketChunk] = []
        var counted: [StatusSymbol] = []
        counted.reserveCapacity(count)
        while counted.count < count {
            guard offset + Self.chunkSize <= body.count else {
                throw PacketError(.badLength, "TWCC chunks end after \(counted.count) of \(count) statuses at byte \(body.count)")
            }
            let chunk = try Self.decodeChunk(body.uint16(at: offset), index: chunks.count)
            offset += Self.chunkSize
            chunks.append(chunk)
            switch chunk {
            case .runLength(let symbol, let length):
                counted.append(contentsOf: repeatElement(symbol, count: min(length, count - counted.count)))
            case .oneBitVector(let symbols), .twoBitVector(let symbols):
                counted.append(contentsOf: symbols.prefix(count - counted.count))
            }
        }
        self.chunks = chunks
        let deltaBytes = counted.reduce(0) { $0 + $1.deltaSize }
        guard offset + deltaBytes <= body.count else {
            throw PacketError(
                .badLength, "TWCC receive deltas need \(deltaBytes) bytes after the chunks, \(body.count - offset) remain"
            )
        }
        var deltas: [Int16] = []
        deltas.reserveCapacity(counted.count { $0 != .notReceived })
        for symbol in counted {
            switch symbol {
            case .notReceived: continue
            case .receivedSmallDelta:
                deltas.append(Int16(body[offset]))
                offset += 1
            case .receivedLargeDelta:
                deltas.append(Int16(bitPattern: body.uint16(at: offset)))
                offset += 2
            }
        }
        receiveDeltas = deltas
        let trailing = body.count - offset
        guard trailing < 4 else {
            throw PacketError(.badLength, "TWCC has \(trailing) bytes after the receive deltas, at most 3 may align it")
        }
        for index in offset..<body.count where body[index] != 0 {
            throw PacketError(.badPadding, "TWCC alignment byte \(index - offset) is \(body[index]), must be 0")
        }
    }

    /// Parses one transport-wide feedback message.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 205, FMT 15.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try TransportFeedback(parsing: buffer) }
    }

    private static func decodeChunk(_ word: UInt16, index: Int) throws(PacketError) -> PacketChunk {
        if word & vectorFlag == 0 {
            let raw = UInt8(truncatingIfNeeded: word >> runSymbolShift) & 0x03
            guard let symbol = StatusSymbol(rawValue: raw) else {
                throw PacketError(.badField, "TWCC chunk \(index): run of reserved symbol \(raw)")
            }
            return .runLength(symbol, count: Int(word & runLengthMask))
        }
        if word & twoBitFlag == 0 {
            return .oneBitVector((0..<oneBitCapacity).map { slot in
                word & (1 << (oneBitCapacity - 1 - slot)) != 0 ? .receivedSmallDelta : .notReceived
            })
        }
        var symbols: [StatusSymbol] = []
        for slot in 0..<twoBitCapacity {
            let raw = UInt8(truncatingIfNeeded: word >> (2 * (twoBitCapacity - 1 - slot))) & 0x03
            guard let symbol = StatusSymbol(rawValue: raw) else {
                throw PacketError(.badField, "TWCC chunk \(index): reserved symbol \(raw) in slot \(slot)")
            }
            symbols.append(symbol)
        }
        return .twoBitVector(symbols)
    }

    /// Bytes of everything after the RTCP header up to the alignment and padding.
    private var contentSize: Int {
        let deltaBytes = statusSymbols.reduce(0) { $0 + $1.deltaSize }
        return RTCPHeader.size + Self.fixedSize + chunks.count * Self.chunkSize + deltaBytes
    }

    /// Zero bytes after the last delta that, with `paddingSize`, align the packet to 32 bits.
    private func alignmentSize(content: Int) -> Int { (4 - (content + Int(paddingSize)) % 4) % 4 }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        let content = contentSize
        return content + alignmentSize(content: content) + Int(paddingSize)
    }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` for a status count of 0,
    ///   chunks that do not cover exactly the count, a malformed chunk (run over 8191, a
    ///   vector of the wrong length, a large symbol in a one-bit vector), a delta count
    ///   that disagrees with the received symbols, a small delta outside 0...255, or a
    ///   reference time outside 24 signed bits; `.badLength` past the RTCP length limit.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        try validate()
        let content = contentSize
        let size = content + alignmentSize(content: content) + Int(paddingSize)
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "TWCC buffer too small: \(buffer.count) < \(size)")
        }
        guard size <= RTCPHeader.maximumPacketSize else {
            throw PacketError(.badLength, "TWCC of \(size) bytes exceeds \(RTCPHeader.maximumPacketSize)")
        }
        let header = RTCPHeader(
            padding: paddingSize != 0, count: Self.format, packetType: Self.packetType, length: UInt16(size / 4 - 1)
        )
        _ = try header.serialize(into: buffer)
        buffer.store(senderSSRC, at: 4)
        buffer.store(mediaSSRC, at: 8)
        buffer.store(baseSequenceNumber, at: 12)
        buffer.store(packetStatusCount, at: 14)
        buffer.store24(UInt32(bitPattern: referenceTime) & 0xFF_FFFF, at: 16)
        buffer[19] = feedbackPacketCount
        var offset = RTCPHeader.size + Self.fixedSize
        for chunk in chunks {
            buffer.store(Self.encode(chunk), at: offset)
            offset += Self.chunkSize
        }
        var deltaIndex = 0
        for symbol in statusSymbols where symbol != .notReceived {
            let delta = receiveDeltas[deltaIndex]
            deltaIndex += 1
            if symbol == .receivedSmallDelta {
                buffer[offset] = UInt8(truncatingIfNeeded: delta)
                offset += 1
            } else {
                buffer.store(UInt16(bitPattern: delta), at: offset)
                offset += 2
            }
        }
        for index in offset..<size { buffer[index] = 0 }
        if paddingSize != 0 { buffer[size - 1] = paddingSize }
        return size
    }

    private func validate() throws(PacketError) {
        guard packetStatusCount > 0 else {
            throw PacketError(.badField, "TWCC packet status count is 0")
        }
        guard (Self.minimumReferenceTime...Self.maximumReferenceTime).contains(referenceTime) else {
            throw PacketError(.badField, "TWCC reference time \(referenceTime) exceeds 24 signed bits")
        }
        var covered = 0
        for (index, chunk) in chunks.enumerated() {
            guard covered < Int(packetStatusCount) else {
                throw PacketError(.badField, "TWCC chunk \(index) of \(chunks.count) follows a full count of \(packetStatusCount)")
            }
            switch chunk {
            case .runLength(_, let count):
                guard (0...Self.maximumRunLength).contains(count) else {
                    throw PacketError(.badField, "TWCC chunk \(index): run length \(count) outside 0...\(Self.maximumRunLength)")
                }
            case .oneBitVector(let symbols):
                guard symbols.count == Self.oneBitCapacity, !symbols.contains(.receivedLargeDelta) else {
                    throw PacketError(.badField, "TWCC chunk \(index): one-bit vector needs 14 small-or-lost symbols, has \(symbols.count)")
                }
            case .twoBitVector(let symbols):
                guard symbols.count == Self.twoBitCapacity else {
                    throw PacketError(.badField, "TWCC chunk \(index): two-bit vector needs 7 symbols, has \(symbols.count)")
                }
            }
            covered += chunk.capacity
        }
        guard covered >= Int(packetStatusCount) else {
            throw PacketError(.badField, "TWCC chunks cover \(covered) of \(packetStatusCount) statuses")
        }
        let symbols = statusSymbols
        let received = symbols.count { $0 != .notReceived }
        guard received == receiveDeltas.count else {
            throw PacketError(.badField, "TWCC has \(receiveDeltas.count) receive deltas for \(received) received packets")
        }
        var deltaIndex = 0
        for symbol in symbols where symbol != .notReceived {
            let delta = receiveDeltas[deltaIndex]
            guard symbol == .receivedLargeDelta || (0...255).contains(delta) else {
                throw PacketError(.badField, "TWCC receive delta \(deltaIndex) is \(delta) ticks, a small delta holds 0...255")
            }
            deltaIndex += 1
        }
    }

    private static func encode(_ chunk: PacketChunk) -> UInt16 {
        switch chunk {
        case .runLength(let symbol, let count):
            return UInt16(symbol.rawValue) << runSymbolShift | UInt16(count)
        case .oneBitVector(let symbols):
            var word = vectorFlag
            for (slot, symbol) in symbols.enumerated() where symbol != .notReceived {
                word |= 1 << (oneBitCapacity - 1 - slot)
            }
            return word
        case .twoBitVector(let symbols):
            var word = vectorFlag | twoBitFlag
            for (slot, symbol) in symbols.enumerated() {
                word |= UInt16(symbol.rawValue) << (2 * (twoBitCapacity - 1 - slot))
            }
            return word
        }
    }

    /// The packet's bytes.
    ///
    /// - Precondition: The fields are within the limits `serialize(into:)` lists; a
    ///   parsed packet always is.
    public func serialized() -> [UInt8] {
        rtcpSerialized(size: serializedSize) { (buffer) throws(PacketError) in try serialize(into: buffer) }
    }
}

extension TransportFeedback {
    /// Packs status symbols into chunks one at a time, as libwebrtc does: symbols gather
    /// until the next one fits no chunk kind, then the longest chunk is emitted (a run if
    /// all are equal, 14 one-bit symbols, or 7 two-bit symbols with the rest kept). It
    /// knows the chunk count after each symbol, so a caller can stop at a size limit.
    struct ChunkEncoder: Sendable {
        private(set) var chunks: [PacketChunk] = []
        private var pending: [StatusSymbol] = []
        private var pendingCount = 0
        private var allSame = true
        private var hasLarge = false
        /// Statuses added so far.
        private(set) var statusCount = 0

        init() { pending.reserveCapacity(TransportFeedback.oneBitCapacity) }

        /// Chunks the statuses added so far take on the wire.
        var chunkCount: Int { chunks.count + (pendingCount > 0 ? 1 : 0) }

        /// Chunks the statuses would take with `symbol` added.
        func chunkCount(adding symbol: StatusSymbol) -> Int {
            pendingCount == 0 ? chunks.count + 1 : chunkCount + (canAdd(symbol) ? 0 : 1)
        }

        private func canAdd(_ symbol: StatusSymbol) -> Bool {
            if pendingCount < TransportFeedback.twoBitCapacity { return true }
            if pendingCount < TransportFeedback.oneBitCapacity, !hasLarge, symbol != .receivedLargeDelta { return true }
            return allSame && pending[0] == symbol && pendingCount < TransportFeedback.maximumRunLength
        }

        mutating func add(_ symbol: StatusSymbol) {
            if pendingCount > 0, !canAdd(symbol) { emit() }
            if pendingCount < TransportFeedback.oneBitCapacity { pending.append(symbol) }
            allSame = allSame && (pendingCount == 0 || pending[0] == symbol)
            hasLarge = hasLarge || symbol == .receivedLargeDelta
            pendingCount += 1
            statusCount += 1
        }

        private mutating func emit() {
            if allSame {
                chunks.append(.runLength(pending[0], count: pendingCount))
                clearPending()
            } else if pendingCount == TransportFeedback.oneBitCapacity {
                chunks.append(.oneBitVector(pending))
                clearPending()
            } else {
                // 7 to 13 mixed symbols with a large one: 7 go out, the rest start over.
                chunks.append(.twoBitVector(Array(pending[..<TransportFeedback.twoBitCapacity])))
                let rest = pending[TransportFeedback.twoBitCapacity...]
                clearPending()
                statusCount -= rest.count
                for symbol in rest { add(symbol) }
            }
        }

        private mutating func clearPending() {
            pending.removeAll(keepingCapacity: true)
            pendingCount = 0
            allSame = true
            hasLarge = false
        }

        /// The chunks for everything added; a last vector is filled up with `notReceived`.
        func finished() -> [PacketChunk] {
            guard pendingCount > 0 else { return chunks }
            var all = chunks
            if allSame {
                all.append(.runLength(pending[0], count: pendingCount))
            } else if pendingCount <= TransportFeedback.twoBitCapacity {
                let fill = TransportFeedback.twoBitCapacity - pendingCount
                all.append(.twoBitVector(pending + repeatElement(.notReceived, count: fill)))
            } else {
                let fill = TransportFeedback.oneBitCapacity - pendingCount
                all.append(.oneBitVector(pending + repeatElement(.notReceived, count: fill)))
            }
            return all
        }
    }
}
