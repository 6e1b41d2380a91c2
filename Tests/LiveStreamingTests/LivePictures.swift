@testable import LiveStreaming
@testable import MediaEngine

/// Solid pictures and region averages for checking composed canvases against BT.601 values.
enum LivePictures {
    /// BT.601 limited-range Y, U, V of pure colours (what libyuv's RAWToI420 gives).
    static let red = (y: 82.0, u: 90.0, v: 240.0)
    static let blue = (y: 41.0, u: 240.0, v: 110.0)
    static let green = (y: 145.0, u: 54.0, v: 34.0)
    static let white = (y: 235.0, u: 128.0, v: 128.0)
    static let magenta = (y: 106.0, u: 202.0, v: 222.0)
    /// The canvas' default background, RGB (24, 24, 24).
    static let background = (y: 37.0, u: 128.0, v: 128.0)

    /// A `width` x `height` picture of one colour, made by the `color:` video source.
    static func solid(_ red: UInt8, _ green: UInt8, _ blue: UInt8, width: Int = 640, height: Int = 360) -> VideoFrame {
        let source = ColorSource(red: red, green: green, blue: blue, width: width, height: height, frameRate: 30, name: "test")
        var frame = VideoFrame(width: 2, height: 2)
        _ = try? source.read(into: &frame)
        return frame
    }

    /// Paints `x..<x+width`, `y..<y+height` (even values) of `frame` with a colour's Y, U, V.
    static func paint(_ frame: inout VideoFrame, x: Int, y: Int, width: Int, height: Int,
                      _ color: (y: Double, u: Double, v: Double)) {
        let (strideY, strideUV) = (frame.strideY, frame.strideUV)
        frame.withMutablePlanes { planeY, planeU, planeV in
            for row in y..<(y + height) {
                for column in x..<(x + width) { planeY[row * strideY + column] = UInt8(color.y) }
            }
            for row in (y / 2)..<((y + height) / 2) {
                for column in (x / 2)..<((x + width) / 2) {
                    planeU[row * strideUV + column] = UInt8(color.u)
                    planeV[row * strideUV + column] = UInt8(color.v)
                }
            }
        }
    }

    /// Mean Y, U and V over a luma rectangle (even values; chroma over the matching half-size rectangle).
    static func average(_ frame: VideoFrame, x: Int, y: Int, width: Int, height: Int) -> (y: Double, u: Double, v: Double) {
        precondition(x + width <= frame.width && y + height <= frame.height, "region outside the frame")
        return frame.withPlanes { planeY, planeU, planeV in
            func mean(_ plane: UnsafeBufferPointer<UInt8>, _ stride: Int, _ x: Int, _ y: Int, _ width: Int, _ height: Int) -> Double {
                var sum = 0
                for row in y..<(y + height) { for column in x..<(x + width) { sum += Int(plane[row * stride + column]) } }
                return Double(sum) / Double(width * height)
            }
            return (mean(planeY, frame.strideY, x, y, width, height),
                    mean(planeU, frame.strideUV, x / 2, y / 2, width / 2, height / 2),
                    mean(planeV, frame.strideUV, x / 2, y / 2, width / 2, height / 2))
        }
    }

    /// Whether a region averages `color` within `tolerance` on every plane.
    static func matches(_ frame: VideoFrame, x: Int, y: Int, width: Int, height: Int,
                        _ color: (y: Double, u: Double, v: Double), tolerance: Double = 3) -> Bool {
        let mean = average(frame, x: x, y: y, width: width, height: height)
        return abs(mean.y - color.y) <= tolerance && abs(mean.u - color.u) <= tolerance && abs(mean.v - color.v) <= tolerance
    }

    /// Composes `pictures` (nil: no video) under `layout` on a `width` x `height` canvas.
    static func compose(_ layout: LiveLayout, _ pictures: [(String, VideoFrame?)], width: Int = 1280, height: Int = 720)
        throws -> (canvas: LiveCanvas, places: [LivePlace]) {
        let canvas = LiveCanvas(width: width, height: height)
        let places = try layout.places(for: pictures.map(\.0), width: width, height: height)
        canvas.clear()
        for place in places {
            let picture = pictures.first { $0.0 == place.account }?.1
            if let picture {
                picture.withPlanesView { canvas.draw($0, in: place) }
            } else {
                canvas.draw(nil, in: place)
            }
        }
        return (canvas, places)
    }
}
