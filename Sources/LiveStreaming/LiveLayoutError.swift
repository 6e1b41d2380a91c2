import MediaEngine

/// A live-room layout that cannot be used: malformed JSON, bad geometry, or an area for
/// someone who is not in the room. `description` names the problem.
public struct LiveLayoutError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Reason: Hashable, Sendable {
        case malformedJSON(String)
        case noAreas
        case tooManyAreas(Int)
        case emptyAccount(index: Int)
        case notFinite(account: String, field: String, value: Double)
        case notPositive(account: String, field: String, value: Double)
        case negativeOrigin(account: String, field: String, value: Double)
        case leavesFrame(account: String, origin: String, size: String, end: Double)
        case duplicateArea(String)
        case duplicateParticipant(String)
        case notInRoom(String)
        case canvasSize(width: Int, height: Int)
    }

    private let reason: Reason
    private init(_ reason: Reason) { self.reason = reason }

    /// NIM's live-streaming status for a bad layout ("layout error"), the same for every problem.
    public static let layoutErrorCode = 501
    /// NIM's live-streaming status code: always `layoutErrorCode` (501).
    public var code: Int { Self.layoutErrorCode }

    /// The largest number of areas a custom layout may have.
    public static let maximumAreas = 16
    /// The smallest canvas side, in pixels, that every mode can lay out.
    public static let minimumCanvasSide = 16
    /// The largest canvas side, in pixels.
    public static let maximumCanvasSide = 16_384

    static func malformedJSON(_ reason: String) -> Self { Self(.malformedJSON(reason)) }
    static let noAreas = Self(.noAreas)
    static func tooManyAreas(_ count: Int) -> Self { Self(.tooManyAreas(count)) }
    static func emptyAccount(index: Int) -> Self { Self(.emptyAccount(index: index)) }
    static func notFinite(_ account: String, _ field: String, _ value: Double) -> Self {
        Self(.notFinite(account: account, field: field, value: value))
    }
    static func notPositive(_ account: String, _ field: String, _ value: Double) -> Self {
        Self(.notPositive(account: account, field: field, value: value))
    }
    static func negativeOrigin(_ account: String, _ field: String, _ value: Double) -> Self {
        Self(.negativeOrigin(account: account, field: field, value: value))
    }
    static func leavesFrame(_ account: String, origin: String, size: String, end: Double) -> Self {
        Self(.leavesFrame(account: account, origin: origin, size: size, end: end))
    }
    static func duplicateArea(_ account: String) -> Self { Self(.duplicateArea(account)) }
    static func duplicateParticipant(_ account: String) -> Self { Self(.duplicateParticipant(account)) }
    static func notInRoom(_ account: String) -> Self { Self(.notInRoom(account)) }
    static func canvasSize(width: Int, height: Int) -> Self { Self(.canvasSize(width: width, height: height)) }

    /// A sentence naming the problem, e.g. `area for "bob" leaves the frame: x + width = 1.2 > 1`.
    public var description: String {
        switch reason {
        case .malformedJSON(let why):
            "layout JSON is malformed: \(why)"
        case .noAreas:
            "a custom layout has no areas"
        case .tooManyAreas(let count):
            "a custom layout has \(count) areas, more than \(Self.maximumAreas)"
        case .emptyAccount(let index):
            "area \(index) has an empty account"
        case .notFinite(let account, let field, let value):
            "area for \"\(account)\" has a non-finite \(field): \(value)"
        case .notPositive(let account, let field, let value):
            "area for \"\(account)\" has a \(field) that is not positive: \(field) = \(value)"
        case .negativeOrigin(let account, let field, let value):
            "area for \"\(account)\" leaves the frame: \(field) = \(value) < 0"
        case .leavesFrame(let account, let origin, let size, let end):
            "area for \"\(account)\" leaves the frame: \(origin) + \(size) = \(end) > 1"
        case .duplicateArea(let account):
            "a custom layout has two areas for \"\(account)\""
        case .duplicateParticipant(let account):
            "participant \"\(account)\" is listed twice"
        case .notInRoom(let account):
            "area for \"\(account)\" names an account that is not in the room"
        case .canvasSize(let width, let height):
            "canvas \(width)x\(height) is outside \(Self.minimumCanvasSide)...\(Self.maximumCanvasSide) pixels a side"
        }
    }
}
