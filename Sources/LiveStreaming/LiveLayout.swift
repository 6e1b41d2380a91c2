import Foundation
import MediaEngine

/// NIM's bypass-streaming video mix modes (the raw values are NIM's).
///
/// The geometry of each mode is described on `LiveLayout.places(for:width:height:)`.
public enum LiveMixMode: Int, Sendable, Hashable, Codable, CaseIterable {
    /// The host fills the frame; co-hosts are small windows in a column at the right edge.
    case floatingRightVertical = 0
    /// The host fills the frame; co-hosts are small windows in a column at the left edge.
    case floatingLeftVertical = 1
    /// A grid of whole pictures, letterboxed or pillarboxed into their cells.
    case latticeAspectFit = 2
    /// A grid of pictures cropped to fill their cells.
    case latticeAspectFill = 3
    /// A list of normalized areas, one per participant shown.
    case custom = 4
}

/// Where one participant goes in a custom layout, in fractions of the canvas.
public struct LiveLayoutArea: Sendable, Hashable, Codable {
    /// The participant's account.
    public var account: String
    /// Left edge, 0...1 of the canvas width.
    public var x: Double
    /// Top edge, 0...1 of the canvas height.
    public var y: Double
    /// Width, a fraction of the canvas width (x + width <= 1).
    public var width: Double
    /// Height, a fraction of the canvas height (y + height <= 1).
    public var height: Double
    /// Crop the picture to fill the area (true) or show it whole with bars (false).
    /// Optional in JSON; defaults to false.
    public var fill: Bool

    /// Creates an area; `LiveLayout.custom(_:)` checks the geometry.
    public init(account: String, x: Double, y: Double, width: Double, height: Double, fill: Bool = false) {
        self.account = account
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.fill = fill
    }

    private enum CodingKeys: String, CodingKey { case account, x, y, width, height, fill }

    /// Decodes an area; a missing `fill` means false.
    /// - Throws: `DecodingError` for missing or mistyped fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        account = try container.decode(String.self, forKey: .account)
        x = try container.decode(Double.self, forKey: .x)
        y = try container.decode(Double.self, forKey: .y)
        width = try container.decode(Double.self, forKey: .width)
        height = try container.decode(Double.self, forKey: .height)
        fill = try container.decodeIfPresent(Bool.self, forKey: .fill) ?? false
    }
}

/// One participant's rectangle on the canvas, in pixels.
///
/// `x`, `y`, `width` and `height` are even (I420 chroma is subsampled 2x2), the size is at
/// least 2x2, and the rectangle lies inside the canvas it was computed for.
public struct LivePlace: Sendable, Hashable {
    /// The participant's account.
    public var account: String
    /// Left edge in pixels.
    public var x: Int
    /// Top edge in pixels.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Crop the picture to fill the place (true) or show it whole with bars (false).
    public var fill: Bool

    /// Creates a place; `LiveCanvas.draw(_:in:)` requires the invariants above.
    public init(account: String, x: Int, y: Int, width: Int, height: Int, fill: Bool) {
        self.account = account
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.fill = fill
    }
}

/// How a live room's server arranges its participants' video on the pushed canvas.
public struct LiveLayout: Sendable, Hashable, Codable {
    /// The NIM mix mode.
    public var mode: LiveMixMode
    /// The areas of a `.custom` layout, drawn in array order (later on top); empty otherwise.
    public var areas: [LiveLayoutArea]

    /// A layout of one of the fixed modes. `.custom` gives a layout with no areas, which
    /// `places(for:width:height:)` rejects; build custom layouts with `custom(_:)`.
    public init(mode: LiveMixMode) {
        self.mode = mode
        areas = []
    }

    private init(customAreas: [LiveLayoutArea]) {
        mode = .custom
        areas = customAreas
    }

    private enum CodingKeys: String, CodingKey { case mode, areas }

    /// Decodes a layout; `areas` may be absent. Geometry is checked when places are computed.
    /// - Throws: `DecodingError` for missing or mistyped fields or an unknown mode.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        mode = try container.decode(LiveMixMode.self, forKey: .mode)
        areas = try container.decodeIfPresent([LiveLayoutArea].self, forKey: .areas) ?? []
    }

    /// A custom layout of `areas`, drawn in array order (later on top).
    /// - Throws: `LiveLayoutError` when there are no areas or more than 16, an account is
    ///   empty or repeated, a value is not finite, a size is not positive, or an area leaves
    ///   the frame.
    public static func custom(_ areas: [LiveLayoutArea]) throws(LiveLayoutError) -> LiveLayout {
        try validate(areas)
        return LiveLayout(customAreas: areas)
    }

    /// A custom layout from JSON: `{"areas":[{"account":"a","x":0,"y":0,"width":0.5,"height":1,"fill":true}, ...]}`
    /// or the bare array. `fill` is optional (false).
    /// - Throws: `LiveLayoutError` for malformed JSON (with the decoder's reason) and every
    ///   problem `custom(_:)` reports.
    public static func custom(json: Data) throws(LiveLayoutError) -> LiveLayout {
        struct Wrapper: Decodable { var areas: [LiveLayoutArea] }
        let decoder = JSONDecoder()
        let areas: [LiveLayoutArea]
        do {
            if json.first(where: { !Self.isJSONWhitespace($0) }) == UInt8(ascii: "[") {
                areas = try decoder.decode([LiveLayoutArea].self, from: json)
            } else {
                areas = try decoder.decode(Wrapper.self, from: json).areas
            }
        } catch let error as DecodingError {
            throw .malformedJSON(explain(error))
        } catch {
            throw .malformedJSON("\(error)")
        }
        return try custom(areas)
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func explain(_ error: DecodingError) -> String {
        func located(_ context: DecodingError.Context, _ text: String) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            let trimmed = path.hasPrefix(".") ? String(path.dropFirst()) : path
            return trimmed.isEmpty ? text : "\(trimmed): \(text)"
        }
        switch error {
        case .keyNotFound(let key, let context):
            return located(context, "missing \"\(key.stringValue)\"")
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let underlying = context.underlyingError.map { " (\($0.localizedDescription))" } ?? ""
            return located(context, context.debugDescription + underlying)
        @unknown default:
            return "\(error)"
        }
    }

    /// Checks a custom layout's areas; see `custom(_:)`.
    static func validate(_ areas: [LiveLayoutArea]) throws(LiveLayoutError) {
        guard !areas.isEmpty else { throw .noAreas }
        guard areas.count <= LiveLayoutError.maximumAreas else { throw .tooManyAreas(areas.count) }
        // Sums like 0.7 + 0.3 may land a rounding error above 1.
        let slack = 1e-9
        for (index, area) in areas.enumerated() {
            let name = area.account
            guard !name.isEmpty else { throw .emptyAccount(index: index) }
            for (field, value) in [("x", area.x), ("y", area.y), ("width", area.width), ("height", area.height)] {
                guard value.isFinite else { throw .notFinite(name, field, value) }
            }
            guard area.width > 0 else { throw .notPositive(name, "width", area.width) }
            guard area.height > 0 else { throw .notPositive(name, "height", area.height) }
            guard area.x >= 0 else { throw .negativeOrigin(name, "x", area.x) }
            guard area.y >= 0 else { throw .negativeOrigin(name, "y", area.y) }
            guard area.x + area.width <= 1 + slack else {
                throw .leavesFrame(name, origin: "x", size: "width", end: area.x + area.width)
            }
            guard area.y + area.height <= 1 + slack else {
                throw .leavesFrame(name, origin: "y", size: "height", end: area.y + area.height)
            }
            if areas[..<index].contains(where: { $0.account == name }) { throw .duplicateArea(name) }
        }
    }
}
