@testable import LiveStreaming
@testable import MediaEngine
import Testing

/// Composed canvases checked by region averages against BT.601 colour values (±3).
@Suite struct LiveCanvasComposition {
    typealias Color = (y: Double, u: Double, v: Double)
    let red = LivePictures.solid(255, 0, 0)
    let blue = LivePictures.solid(0, 0, 255)
    let green = LivePictures.solid(0, 255, 0)
    let white = LivePictures.solid(255, 255, 255)

    /// Expects the region (x, y, width, height) of `frame` to average `color`.
    func expectRegion(_ frame: VideoFrame, _ rect: (Int, Int, Int, Int), _ color: Color, _ label: String,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        let mean = LivePictures.average(frame, x: rect.0, y: rect.1, width: rect.2, height: rect.3)
        let close = abs(mean.y - color.y) <= 3 && abs(mean.u - color.u) <= 3 && abs(mean.v - color.v) <= 3
        #expect(close, "\(label) at \(rect): mean \(mean), expected \(color)", sourceLocation: sourceLocation)
    }

    @Test func aspectFitTwoShowsTheHostLeftAndTheCoHostRight() throws {
        let (canvas, places) = try LivePictures.compose(LiveLayout(mode: .latticeAspectFit), [("host", red), ("guest", blue)])
        #expect(places.map(\.x) == [0, 640] && places.allSatisfy { $0.width == 640 && $0.height == 720 })
        let frame = canvas.frame
        // Each 16:9 picture is letterboxed into its 640x720 half: 640x360 at y = 180.
        expectRegion(frame, (4, 184, 632, 352), LivePictures.red, "left half")
        expectRegion(frame, (644, 184, 632, 352), LivePictures.blue, "right half")
        expectRegion(frame, (0, 0, 1280, 176), LivePictures.background, "bar above")
        expectRegion(frame, (0, 544, 1280, 176), LivePictures.background, "bar below")
    }

    @Test func aspectFillTwoFillsBothHalvesEdgeToEdge() throws {
        let (canvas, _) = try LivePictures.compose(LiveLayout(mode: .latticeAspectFill), [("host", red), ("guest", blue)])
        expectRegion(canvas.frame, (4, 4, 632, 712), LivePictures.red, "left half")
        expectRegion(canvas.frame, (644, 4, 632, 712), LivePictures.blue, "right half")
    }

    @Test func floatingRightPutsCoHostsInAColumnOnTheRight() throws {
        let (canvas, places) = try LivePictures.compose(LiveLayout(mode: .floatingRightVertical),
                                                        [("host", red), ("blue", blue), ("green", green)])
        let frame = canvas.frame
        #expect(places[1] == LivePlace(account: "blue", x: 940, y: 20, width: 320, height: 180, fill: true))
        #expect(places[2] == LivePlace(account: "green", x: 940, y: 220, width: 320, height: 180, fill: true))
        expectRegion(frame, (0, 0, 936, 720), LivePictures.red, "host left of the column")
        expectRegion(frame, (944, 24, 312, 172), LivePictures.blue, "first window")
        expectRegion(frame, (944, 224, 312, 172), LivePictures.green, "second window")
        expectRegion(frame, (940, 202, 320, 16), LivePictures.red, "margin between the windows")
        expectRegion(frame, (940, 404, 320, 316), LivePictures.red, "below the windows")
        expectRegion(frame, (1262, 0, 18, 720), LivePictures.red, "right margin")
    }

    @Test func floatingLeftMirrorsTheColumn() throws {
        let (canvas, places) = try LivePictures.compose(LiveLayout(mode: .floatingLeftVertical), [("host", red), ("blue", blue)])
        let frame = canvas.frame
        #expect(places[1] == LivePlace(account: "blue", x: 20, y: 20, width: 320, height: 180, fill: true))
        expectRegion(frame, (24, 24, 312, 172), LivePictures.blue, "window")
        expectRegion(frame, (344, 0, 936, 720), LivePictures.red, "host right of the column")
        expectRegion(frame, (0, 0, 18, 720), LivePictures.red, "left margin")
        expectRegion(frame, (20, 204, 320, 516), LivePictures.red, "below the window")
    }

    /// A 4:3 picture whose centre 8:9 (columns 80..<400) is green and whose sides are magenta.
    static func framedPicture() -> VideoFrame {
        var picture = LivePictures.solid(255, 0, 255, width: 480, height: 360)
        LivePictures.paint(&picture, x: 80, y: 0, width: 320, height: 360, LivePictures.green)
        return picture
    }

    @Test func fillCropsToTheCentreWhereFitShowsItAllWithBars() throws {
        let participants = [("host", Self.framedPicture()), ("guest", blue)]
        // Fill: the 640x720 (8:9) half crops the 4:3 source to exactly its green centre.
        let fill = try LivePictures.compose(LiveLayout(mode: .latticeAspectFill), participants).canvas.frame
        expectRegion(fill, (4, 4, 16, 712), LivePictures.green, "fill: left edge of the cell")
        expectRegion(fill, (616, 4, 16, 712), LivePictures.green, "fill: right edge of the cell")
        expectRegion(fill, (4, 4, 632, 16), LivePictures.green, "fill: top edge of the cell")
        // Fit: the whole source, 640x480 at y = 120, magenta sides visible, bars above and below.
        let fit = try LivePictures.compose(LiveLayout(mode: .latticeAspectFit), participants).canvas.frame
        expectRegion(fit, (0, 0, 640, 116), LivePictures.background, "fit: bar above")
        expectRegion(fit, (0, 604, 640, 116), LivePictures.background, "fit: bar below")
        expectRegion(fit, (4, 124, 96, 472), LivePictures.magenta, "fit: left side of the source")
        expectRegion(fit, (540, 124, 96, 472), LivePictures.magenta, "fit: right side of the source")
        expectRegion(fit, (116, 124, 408, 472), LivePictures.green, "fit: centre of the source")
    }

    @Test func fourFillTheGridRowByRow() throws {
        let (canvas, places) = try LivePictures.compose(LiveLayout(mode: .latticeAspectFill),
                                                        [("a", red), ("b", blue), ("c", green), ("d", white)])
        #expect(places.map { [$0.x, $0.y, $0.width, $0.height] }
                == [[0, 0, 640, 360], [640, 0, 640, 360], [0, 360, 640, 360], [640, 360, 640, 360]])
        let frame = canvas.frame
        expectRegion(frame, (4, 4, 632, 352), LivePictures.red, "top left")
        expectRegion(frame, (644, 4, 632, 352), LivePictures.blue, "top right")
        expectRegion(frame, (4, 364, 632, 352), LivePictures.green, "bottom left")
        expectRegion(frame, (644, 364, 632, 352), LivePictures.white, "bottom right")
    }

    @Test func threeLeaveTheBottomRightCellToTheBackground() throws {
        let (canvas, places) = try LivePictures.compose(LiveLayout(mode: .latticeAspectFit), [("a", red), ("b", blue), ("c", green)])
        #expect(places.count == 3)
        let frame = canvas.frame
        expectRegion(frame, (4, 4, 632, 352), LivePictures.red, "top left")
        expectRegion(frame, (644, 4, 632, 352), LivePictures.blue, "top right")
        expectRegion(frame, (4, 364, 632, 352), LivePictures.green, "bottom left")
        expectRegion(frame, (640, 360, 640, 360), LivePictures.background, "empty bottom right")
    }

    @Test func aMissingPictureShowsTheBackgroundNotAnOldFrame() throws {
        let layout = LiveLayout(mode: .latticeAspectFill)
        let canvas = LiveCanvas(width: 1280, height: 720)
        let places = try layout.places(for: ["a", "b", "c", "d"], width: 1280, height: 720)
        let pictures = [red, blue, green, white]
        for (place, picture) in zip(places, pictures) { picture.withPlanesView { canvas.draw($0, in: place) } }
        // Next frame: b's video stalls; no clear(), so only draw(nil) can remove the old blue.
        for (index, (place, picture)) in zip(places, pictures).enumerated() {
            if index == 1 { canvas.draw(nil, in: place) } else { picture.withPlanesView { canvas.draw($0, in: place) } }
        }
        let frame = canvas.frame
        expectRegion(frame, (640, 0, 640, 360), LivePictures.background, "stalled participant")
        expectRegion(frame, (4, 4, 632, 352), LivePictures.red, "top left")
        expectRegion(frame, (644, 364, 632, 352), LivePictures.white, "bottom right")
    }

    @Test func customAreasAreDrawnInOrderLaterOnTop() throws {
        let layout = try LiveLayout.custom([
            LiveLayoutArea(account: "a", x: 0, y: 0, width: 1, height: 1, fill: true),
            LiveLayoutArea(account: "b", x: 0.5, y: 0.5, width: 0.25, height: 0.25, fill: true),
        ])
        let (canvas, places) = try LivePictures.compose(layout, [("a", red), ("b", blue), ("c", green)])
        #expect(places.map(\.account) == ["a", "b"], "c has no area, so it is not shown")
        expectRegion(canvas.frame, (644, 364, 312, 172), LivePictures.blue, "b on top of a")
        expectRegion(canvas.frame, (0, 0, 636, 720), LivePictures.red, "a around b")
    }

    @Test func clearPaintsTheBackgroundColourAndDrawingKeepsTheBuffer() throws {
        let canvas = LiveCanvas(width: 64, height: 32, background: (0, 255, 0))
        expectRegion(canvas.frame, (0, 0, 64, 32), LivePictures.green, "cleared canvas")
        let place = LivePlace(account: "a", x: 0, y: 0, width: 32, height: 32, fill: true)
        func bufferAddress() -> UnsafeRawPointer? { canvas.frame.data.withUnsafeBytes { $0.baseAddress } }
        let before = bufferAddress()
        for _ in 0..<3 {
            canvas.clear()
            red.withPlanesView { canvas.draw($0, in: place) }
        }
        #expect(bufferAddress() == before, "composing reuses the canvas buffer")
        expectRegion(canvas.frame, (2, 2, 28, 28), LivePictures.red, "drawn half")
        expectRegion(canvas.frame, (32, 0, 32, 32), LivePictures.green, "background half")
    }

    @Test func oddSizedAndTinyPicturesStayInsideTheirPlace() throws {
        let canvas = LiveCanvas(width: 64, height: 64)
        let odd = LivePictures.solid(255, 0, 0, width: 33, height: 17)
        let tiny = LivePictures.solid(0, 0, 255, width: 1, height: 1)
        let left = LivePlace(account: "a", x: 0, y: 0, width: 32, height: 64, fill: false)
        let right = LivePlace(account: "b", x: 32, y: 0, width: 32, height: 64, fill: true)
        odd.withPlanesView { canvas.draw($0, in: left) }
        tiny.withPlanesView { canvas.draw($0, in: right) }
        // 33x17 fitted into 32x64: 32x16 at y = 24.
        expectRegion(canvas.frame, (2, 26, 28, 12), LivePictures.red, "fitted odd picture")
        expectRegion(canvas.frame, (0, 0, 32, 22), LivePictures.background, "bar above it")
        expectRegion(canvas.frame, (32, 0, 32, 64), LivePictures.blue, "a 1x1 picture filling its place")
    }
}
