import Testing
@testable import MediaEngine

/// `color:RRGGBB[:WxH[@FPS]]`: a solid picture in BT.601 limited range, and typed errors
/// that name a bad spec.
@Suite struct ColorSources {
    /// The mean of each plane.
    static func means(_ frame: VideoFrame) -> (y: Double, u: Double, v: Double) {
        frame.withPlanes { y, u, v in
            func mean(_ plane: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) -> Double {
                var sum = 0
                for row in 0..<height { for column in 0..<width { sum += Int(plane[row * stride + column]) } }
                return Double(sum) / Double(width * height)
            }
            return (mean(y, width: frame.width, height: frame.height, stride: frame.strideY),
                    mean(u, width: frame.chromaWidth, height: frame.chromaHeight, stride: frame.strideUV),
                    mean(v, width: frame.chromaWidth, height: frame.chromaHeight, stride: frame.strideUV))
        }
    }

    @Test(arguments: [("FF0000", 82.0, 90.0, 240.0), ("0000FF", 41.0, 240.0, 110.0), ("FFFFFF", 235.0, 128.0, 128.0),
                      ("000000", 16.0, 128.0, 128.0)])
    func aColourIsItsBT601Value(hex: String, y: Double, u: Double, v: Double) throws {
        let source = try MediaSources.video("color:\(hex):64x48@15")
        #expect(source.width == 64 && source.height == 48 && source.frameRate == 15)
        var frame = VideoFrame(width: 2, height: 2)
        for index in 0..<3 {
            #expect(try source.read(into: &frame))
            #expect(frame.width == 64 && frame.height == 48)
            #expect(frame.timestamp == .nanoseconds(Int64(index) * 1_000_000_000 / 15))
        }
        let mean = Self.means(frame)
        #expect(abs(mean.y - y) <= 2 && abs(mean.u - u) <= 2 && abs(mean.v - v) <= 2, "\(hex): \(mean)")
    }

    @Test func theDefaultSizeIs640x480At30() throws {
        let source = try MediaSources.video("color:00FF00")
        #expect(source.width == 640 && source.height == 480 && source.frameRate == 30)
    }

    @Test(arguments: ["color", "color:", "color:red", "color:FF00", "color:GG0000", "color:FF0000:65x48", "color:FF0000:64x48@0"])
    func badSpecsAreNamed(spec: String) {
        #expect {
            _ = try MediaSources.video(spec)
        } throws: { error in
            "\(error)".contains("'\(spec)'")
        }
    }
}
