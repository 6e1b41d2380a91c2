import Foundation
@testable import LiveStreaming
@testable import MediaEngine
import Testing

@Suite struct LiveLayoutGeometry {
    static let sizes = [(1280, 720), (640, 360), (854, 480)]
    static let fixedModes: [LiveMixMode] = [.floatingRightVertical, .floatingLeftVertical, .latticeAspectFit, .latticeAspectFill]

    static func overlap(_ a: LivePlace, _ b: LivePlace) -> Bool {
        a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
    }

    @Test(arguments: fixedModes, 1...5)
    func everyPlaceIsEvenNonEmptyAndInsideTheCanvas(mode: LiveMixMode, count: Int) throws {
        let participants = (0..<count).map { "p\($0)" }
        for (width, height) in Self.sizes {
            let places = try LiveLayout(mode: mode).places(for: participants, width: width, height: height)
            #expect(places.map(\.account) == Array(participants.prefix(4)), "\(mode) \(width)x\(height)")
            for place in places {
                #expect(place.x >= 0 && place.y >= 0 && place.x + place.width <= width && place.y + place.height <= height,
                        "\(mode) \(width)x\(height): \(place) leaves the canvas")
                #expect(place.width >= 2 && place.height >= 2, "\(mode) \(width)x\(height): \(place) is empty")
                #expect([place.x, place.y, place.width, place.height].allSatisfy { $0 % 2 == 0 },
                        "\(mode) \(width)x\(height): \(place) is not even")
            }
            let host = places[0]
            switch mode {
            case .floatingRightVertical, .floatingLeftVertical:
                #expect(host == LivePlace(account: "p0", x: 0, y: 0, width: width, height: height, fill: true))
                let windows = places.dropFirst()
                #expect(windows.allSatisfy { $0.fill && $0.width == width / 4 & ~1 && $0.height == height / 4 & ~1 })
                #expect(zip(windows, windows.dropFirst()).allSatisfy { $0.y + $0.height < $1.y && $0.x == $1.x },
                        "windows stack downwards in one column")
                let onRight = mode == .floatingRightVertical
                #expect(windows.allSatisfy { onRight ? $0.x > width / 2 : $0.x + $0.width < width / 2 })
            default:
                #expect(places.allSatisfy { $0.fill == (mode == .latticeAspectFill) })
                for (index, place) in places.enumerated() {
                    for other in places[(index + 1)...] { #expect(!Self.overlap(place, other), "\(place) overlaps \(other)") }
                }
                // The cells tile the canvas; with three, the bottom-right cell stays empty.
                let covered = places.map { $0.width * $0.height }.reduce(0, +)
                let emptyCell = places.count == 3 ? (width - width / 2 & ~1) * (height - height / 2 & ~1) : 0
                #expect(covered + emptyCell == width * height, "\(mode) \(width)x\(height) with \(count): covered \(covered)")
            }
        }
    }

    @Test func latticeCellsAtExactSizes() throws {
        let two = try LiveLayout(mode: .latticeAspectFit).places(for: ["h", "g"], width: 854, height: 480)
        #expect(two.map { [$0.x, $0.y, $0.width, $0.height] } == [[0, 0, 426, 480], [426, 0, 428, 480]])
        let four = try LiveLayout(mode: .latticeAspectFill).places(for: ["a", "b", "c", "d"], width: 640, height: 360)
        #expect(four.map { [$0.x, $0.y, $0.width, $0.height] }
                == [[0, 0, 320, 180], [320, 0, 320, 180], [0, 180, 320, 180], [320, 180, 320, 180]])
        let one = try LiveLayout(mode: .latticeAspectFit).places(for: ["a"], width: 1280, height: 720)
        #expect(one == [LivePlace(account: "a", x: 0, y: 0, width: 1280, height: 720, fill: false)])
    }

    @Test func floatingWindowsAt854x480() throws {
        let places = try LiveLayout(mode: .floatingRightVertical).places(for: ["h", "a", "b", "c"], width: 854, height: 480)
        // Window 212x120 (quarters rounded down to even), margin 12 (480 / 36 rounded down to even).
        #expect(places.dropFirst().map { [$0.x, $0.y, $0.width, $0.height] }
                == [[630, 12, 212, 120], [630, 144, 212, 120], [630, 276, 212, 120]])
    }

    @Test func customAreasBecomeEvenPixelRectangles() throws {
        let layout = try LiveLayout.custom([
            LiveLayoutArea(account: "a", x: 0, y: 0, width: 1.0 / 3, height: 1, fill: true),
            LiveLayoutArea(account: "b", x: 1.0 / 3, y: 0, width: 2.0 / 3, height: 0.5),
            LiveLayoutArea(account: "c", x: 0.999, y: 0.999, width: 0.001, height: 0.001),
        ])
        let places = try layout.places(for: ["a", "b", "c"], width: 854, height: 480)
        // 854 / 3 = 284.67 -> 284: a and b share that edge.
        #expect(places == [
            LivePlace(account: "a", x: 0, y: 0, width: 284, height: 480, fill: true),
            LivePlace(account: "b", x: 284, y: 0, width: 570, height: 240, fill: false),
            LivePlace(account: "c", x: 852, y: 478, width: 2, height: 2, fill: false),
        ])
    }

    @Test func noParticipantsGiveNoPlaces() throws {
        for mode in Self.fixedModes { #expect(try LiveLayout(mode: mode).places(for: [], width: 640, height: 360).isEmpty) }
    }

    @Test func aCanvasTooSmallOrTooLargeIsRefused() {
        #expect(throws: LiveLayoutError.self) { try LiveLayout(mode: .latticeAspectFit).places(for: ["a"], width: 8, height: 720) }
        do {
            _ = try LiveLayout(mode: .floatingRightVertical).places(for: ["a"], width: 1280, height: 20_000)
            Issue.record("a 1280x20000 canvas was accepted")
        } catch {
            #expect(error.code == 501 && "\(error)".contains("1280x20000"), "\(error)")
        }
    }

    @Test func aParticipantListedTwiceIsNamed() {
        #expect(throws: LiveLayoutError.self) {
            try LiveLayout(mode: .latticeAspectFit).places(for: ["a", "b", "a"], width: 640, height: 360)
        }
    }

    @Test func theLayoutRoundTripsThroughCodable() throws {
        let layout = try LiveLayout.custom([LiveLayoutArea(account: "a", x: 0.25, y: 0, width: 0.5, height: 1, fill: true)])
        let decoded = try JSONDecoder().decode(LiveLayout.self, from: JSONEncoder().encode(layout))
        #expect(decoded == layout)
        let fixed = try JSONDecoder().decode(LiveLayout.self, from: Data(#"{"mode":3}"#.utf8))
        #expect(fixed == LiveLayout(mode: .latticeAspectFill))
        #expect(LiveMixMode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
    }
}

/// Each bad custom layout gets a typed error, NIM's code 501, and a message naming the problem.
@Suite struct LiveLayoutErrors {
    func expectError(_ expected: [String], sourceLocation: SourceLocation = #_sourceLocation,
                     _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("no error; expected one naming \(expected)", sourceLocation: sourceLocation)
        } catch let error as LiveLayoutError {
            #expect(error.code == 501, sourceLocation: sourceLocation)
            let message = error.description
            for part in expected { #expect(message.contains(part), "'\(message)' should name \(part)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("\(type(of: error)) \(error); expected a LiveLayoutError", sourceLocation: sourceLocation)
        }
    }

    @Test func parsesTheWrappedAndTheBareJSONArray() throws {
        let wrapped = Data(#"{"areas":[{"account":"a","x":0,"y":0,"width":0.5,"height":1,"fill":true},"#.utf8)
            + Data(#"{"account":"b","x":0.5,"y":0,"width":0.5,"height":1}]}"#.utf8)
        let layout = try LiveLayout.custom(json: wrapped)
        #expect(layout.mode == .custom)
        #expect(layout.areas == [LiveLayoutArea(account: "a", x: 0, y: 0, width: 0.5, height: 1, fill: true),
                                 LiveLayoutArea(account: "b", x: 0.5, y: 0, width: 0.5, height: 1, fill: false)])
        let bare = try LiveLayout.custom(json: Data(#" [{"account":"a","x":0,"y":0,"width":0.5,"height":1,"fill":true}, {"account":"b","x":0.5,"y":0,"width":0.5,"height":1}]"#.utf8))
        #expect(bare == layout)
        let places = try layout.places(for: ["a", "b"], width: 1280, height: 720)
        #expect(places == [LivePlace(account: "a", x: 0, y: 0, width: 640, height: 720, fill: true),
                           LivePlace(account: "b", x: 640, y: 0, width: 640, height: 720, fill: false)])
    }

    @Test func anAreaLeavingTheFrameIsNamed() {
        expectError(["\"bob\"", "leaves the frame", "x + width = 1.2 > 1"]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "bob", x: 0.7, y: 0, width: 0.5, height: 0.5)])
        }
        expectError(["\"eve\"", "leaves the frame", "y = -0.25 < 0"]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "eve", x: 0, y: -0.25, width: 0.5, height: 0.5)])
        }
    }

    @Test func anAccountNotInTheRoomIsNamedByPlaces() throws {
        let layout = try LiveLayout.custom([LiveLayoutArea(account: "a", x: 0, y: 0, width: 0.5, height: 1),
                                            LiveLayoutArea(account: "carol", x: 0.5, y: 0, width: 0.5, height: 1)])
        expectError(["\"carol\"", "not in the room"]) { _ = try layout.places(for: ["a", "b"], width: 1280, height: 720) }
    }

    @Test func aDuplicateAccountIsNamed() {
        expectError(["two areas", "\"a\""]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "a", x: 0, y: 0, width: 0.5, height: 1),
                                       LiveLayoutArea(account: "a", x: 0.5, y: 0, width: 0.5, height: 1)])
        }
    }

    @Test func malformedJSONCarriesTheDecodersReason() {
        expectError(["malformed", "[0]", "missing \"height\""]) {
            _ = try LiveLayout.custom(json: Data(#"{"areas":[{"account":"a","x":0,"y":0,"width":1}]}"#.utf8))
        }
        expectError(["malformed", "x"]) {
            _ = try LiveLayout.custom(json: Data(#"[{"account":"a","x":"left","y":0,"width":1,"height":1}]"#.utf8))
        }
        expectError(["malformed"]) { _ = try LiveLayout.custom(json: Data("{\"areas\": [".utf8)) }
    }

    @Test func noAreasAreRefused() {
        expectError(["no areas"]) { _ = try LiveLayout.custom([]) }
        expectError(["no areas"]) { _ = try LiveLayout.custom(json: Data(#"{"areas":[]}"#.utf8)) }
        expectError(["no areas"]) { _ = try LiveLayout(mode: .custom).places(for: ["a"], width: 640, height: 360) }
    }

    @Test func tooManyAreasAreRefused() {
        let areas = (0..<17).map { LiveLayoutArea(account: "p\($0)", x: 0, y: 0, width: 0.1, height: 0.1) }
        expectError(["17 areas", "more than 16"]) { _ = try LiveLayout.custom(areas) }
        #expect(throws: Never.self) { _ = try LiveLayout.custom(Array(areas.prefix(16))) }
    }

    @Test func notANumberIsRefused() {
        expectError(["\"a\"", "non-finite width", "nan"]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "a", x: 0, y: 0, width: .nan, height: 1)])
        }
        expectError(["\"a\"", "non-finite x", "inf"]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "a", x: .infinity, y: 0, width: 0.5, height: 1)])
        }
    }

    @Test func aSizeThatIsNotPositiveIsRefused() {
        expectError(["\"a\"", "height", "not positive", "height = 0.0"]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "a", x: 0, y: 0, width: 0.5, height: 0)])
        }
        expectError(["\"a\"", "width = -0.5"]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "a", x: 0.5, y: 0, width: -0.5, height: 1)])
        }
    }

    @Test func anEmptyAccountIsRefused() {
        expectError(["area 1", "empty account"]) {
            _ = try LiveLayout.custom([LiveLayoutArea(account: "a", x: 0, y: 0, width: 0.5, height: 1),
                                       LiveLayoutArea(account: "", x: 0.5, y: 0, width: 0.5, height: 1)])
        }
    }
}
