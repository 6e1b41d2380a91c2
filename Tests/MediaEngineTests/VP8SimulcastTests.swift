import Testing
@testable import MediaEngine

@Suite struct VP8KeyframeSize {
    /// A keyframe's first 10 bytes (RFC 6386 section 9.1).
    static let header: [UInt8] = [
        0x50, 0x2A, 0x00, // frame tag: bit 0 = 0 keyframe, version 0, show_frame 1, first partition size
        0x9D, 0x01, 0x2A, // start code
        0x80, 0x02,       // width 640 (0x0280), horizontal scale 0
        0x68, 0x01,       // height 360 (0x0168), vertical scale 0
    ]

    static func size(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        bytes.withUnsafeBytes { VP8.keyframeSize($0) }
    }

    static func replacing(_ index: Int, with value: UInt8) -> [UInt8] {
        var bytes = header
        bytes[index] = value
        return bytes
    }

    @Test func readsTheSizeOfAKeyframeHeader() throws {
        let size = try #require(Self.size(Self.header))
        #expect(size.width == 640 && size.height == 360)
        // The scale bits (the top two of each field) are not part of the size.
        let scaled = try #require(Self.size(Self.replacing(7, with: 0x42)))
        #expect(scaled.width == 640)
        // Bytes after the header (the rest of the frame) change nothing.
        #expect(Self.size(Self.header + [1, 2, 3])?.height == 360)
    }

    @Test(arguments: [
        ([], "empty"),
        ([0x50], "one byte"),
        (Array(VP8KeyframeSize.header.prefix(9)), "header cut before the last byte"),
        (VP8KeyframeSize.replacing(0, with: 0x51), "interframe: frame tag bit 0 set"),
        (VP8KeyframeSize.replacing(4, with: 0x02), "wrong start code"),
        (VP8KeyframeSize.replacing(6, with: 0x00).enumerated().map { $0.offset == 7 ? 0xC0 : $0.element }, "width 0, scale bits only"),
        (VP8KeyframeSize.replacing(8, with: 0x00).enumerated().map { $0.offset == 9 ? 0x00 : $0.element }, "height 0"),
        ([UInt8](repeating: 0xFF, count: 40), "garbage"),
    ])
    func isNilForWhatIsNoKeyframeHeader(bytes: [UInt8], what: String) {
        #expect(Self.size(bytes) == nil, "\(what)")
    }

    @Test func randomBytesNeverCrashIt() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0..<16, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if let size = Self.size(bytes) {
                #expect(bytes[0] & 1 == 0 && bytes[3...5] == [0x9D, 0x01, 0x2A] && size.width > 0 && size.height > 0)
            }
        }
    }

    @Test func anInterframeFromTheEncoderIsNil() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 300_000))
        var pattern = TestPattern(width: 320, height: 240)
        let key = try #require(try encoder.encode(pattern.nextFrame()))
        let inter = try #require(try encoder.encode(pattern.nextFrame()))
        #expect(Self.size(key.data).map { [$0.width, $0.height] } == [320, 240])
        #expect(!inter.isKeyframe && Self.size(inter.data) == nil)
    }
}
