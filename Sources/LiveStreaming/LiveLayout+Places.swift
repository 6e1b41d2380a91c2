import MediaEngine

extension LiveLayout {
    /// The most participants the fixed modes (0 to 3) show: one host and three co-hosts.
    public static let maximumFixedParticipants = 4

    /// The places, in drawing order, for `participants` (host first, then co-hosts in join
    /// order) on a `width` x `height` canvas.
    ///
    /// All sizes below are in pixels, rounded down to even numbers; an odd canvas side
    /// leaves its last column or row to the background. Call this when the room or layout
    /// changes, not per frame (it returns a new array).
    ///
    /// - `.floatingRightVertical` / `.floatingLeftVertical`: the host fills the canvas
    ///   (cropped to fill). Each co-host is a window a quarter of the canvas width by a
    ///   quarter of its height (so with the canvas' aspect ratio), cropped to fill.
    ///   Windows stand `margin = min(width, height) / 36` from the right (mode 0) or left
    ///   (mode 1) edge and from the top, stacked downwards in join order with `margin`
    ///   between them. At 1280x720: windows 320x180 at x = 940 (mode 0) or 20 (mode 1),
    ///   y = 20, 220, 420.
    /// - `.latticeAspectFit` (whole pictures, bars around) / `.latticeAspectFill` (cropped):
    ///   one participant fills the canvas; two stand side by side, the host on the left,
    ///   split at the even column nearest the middle (rounding down), each the full height;
    ///   three or four fill a 2x2 grid row by row (host top-left, then top-right,
    ///   bottom-left, bottom-right), so with three the bottom-right cell stays background.
    /// - `.custom`: one place per area whose account is in the room, in area order; a
    ///   participant without an area is not shown. An area's edges are scaled to the canvas
    ///   and rounded to the nearest even pixel (so adjacent areas share an edge), then
    ///   widened to 2x2 if smaller.
    ///
    /// In the fixed modes, participants after the fourth are not placed (the room caps
    /// participants elsewhere). No participants give no places.
    /// - Returns: the places, each inside the canvas with even origin and size, at least 2x2.
    /// - Throws: `LiveLayoutError` when a canvas side is outside 16...16384, a participant
    ///   is listed twice, or (custom) the areas are invalid or one names an account that is
    ///   not in `participants`.
    public func places(for participants: [String], width: Int, height: Int) throws(LiveLayoutError) -> [LivePlace] {
        let sides = LiveLayoutError.minimumCanvasSide...LiveLayoutError.maximumCanvasSide
        guard sides.contains(width), sides.contains(height) else { throw .canvasSize(width: width, height: height) }
        for (index, account) in participants.enumerated() where participants[..<index].contains(account) {
            throw .duplicateParticipant(account)
        }
        let canvas = (width: Self.even(width), height: Self.even(height))
        let shown = participants.prefix(Self.maximumFixedParticipants)
        switch mode {
        case .floatingRightVertical, .floatingLeftVertical:
            return Self.floating(shown, canvas: canvas, onRight: mode == .floatingRightVertical)
        case .latticeAspectFit, .latticeAspectFill:
            return Self.lattice(shown, canvas: canvas, fill: mode == .latticeAspectFill)
        case .custom:
            try Self.validate(areas)
            var places: [LivePlace] = []
            for area in areas {
                guard participants.contains(area.account) else { throw .notInRoom(area.account) }
                places.append(Self.place(area, canvas: canvas))
            }
            return places
        }
    }

    private static func even(_ value: Int) -> Int { value & ~1 }

    private static func floating(_ participants: ArraySlice<String>, canvas: (width: Int, height: Int),
                                 onRight: Bool) -> [LivePlace] {
        guard let host = participants.first else { return [] }
        var places = [LivePlace(account: host, x: 0, y: 0, width: canvas.width, height: canvas.height, fill: true)]
        // With the 16-pixel minimum canvas, a quarter is at least 4 pixels; three windows and
        // four margins take at most 3/4 + 4/36 of the height, so the column always fits.
        let windowWidth = max(2, even(canvas.width / 4))
        let windowHeight = max(2, even(canvas.height / 4))
        let margin = even(min(canvas.width, canvas.height) / 36)
        let x = onRight ? canvas.width - margin - windowWidth : margin
        for (index, account) in participants.dropFirst().enumerated() {
            places.append(LivePlace(account: account, x: x, y: margin + index * (windowHeight + margin),
                                    width: windowWidth, height: windowHeight, fill: true))
        }
        return places
    }

    private static func lattice(_ participants: ArraySlice<String>, canvas: (width: Int, height: Int),
                                 fill: Bool) -> [LivePlace] {
        let splitX = even(canvas.width / 2)
        let splitY = even(canvas.height / 2)
        // (x, y, width, height) per participant for each count.
        let cells: [(Int, Int, Int, Int)]
        switch participants.count {
        case 0:
            return []
        case 1:
            cells = [(0, 0, canvas.width, canvas.height)]
        case 2:
            cells = [(0, 0, splitX, canvas.height), (splitX, 0, canvas.width - splitX, canvas.height)]
        default:
            let right = canvas.width - splitX
            let bottom = canvas.height - splitY
            cells = [(0, 0, splitX, splitY), (splitX, 0, right, splitY), (0, splitY, splitX, bottom), (splitX, splitY, right, bottom)]
        }
        return zip(participants, cells).map { account, cell in
            LivePlace(account: account, x: cell.0, y: cell.1, width: cell.2, height: cell.3, fill: fill)
        }
    }

    private static func place(_ area: LiveLayoutArea, canvas: (width: Int, height: Int)) -> LivePlace {
        func span(_ origin: Double, _ size: Double, _ side: Int) -> (start: Int, length: Int) {
            func evenPixel(_ fraction: Double) -> Int {
                min(side, max(0, Int((fraction * Double(side) / 2).rounded()) * 2))
            }
            var start = evenPixel(origin)
            var end = evenPixel(origin + size)
            if end - start < 2 {
                end = min(side, start + 2)
                start = end - 2
            }
            return (start, end - start)
        }
        let horizontal = span(area.x, area.width, canvas.width)
        let vertical = span(area.y, area.height, canvas.height)
        return LivePlace(account: area.account, x: horizontal.start, y: vertical.start,
                         width: horizontal.length, height: vertical.length, fill: area.fill)
    }
}
