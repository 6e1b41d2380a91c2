extension NetDetectResult {
    /// RTT per probe as an SVG line chart; lost probes are red marks on the axis. The
    /// title gives loss, RTT figures and the quality class.
    public func svgPlot(width: Double = 800, height: Double = 360) -> String {
        let left = 80.0, right = 20.0, top = 56.0, bottom = 40.0
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let values = rtts.compactMap { $0 }
        let ceiling = max(1, (values.max() ?? 1) * 1.1)
        let count = max(1, rtts.count - 1)
        func x(_ index: Int) -> Double { left + Double(index) / Double(count) * plotWidth }
        func y(_ rtt: Double) -> Double { top + plotHeight - rtt / ceiling * plotHeight }
        func f(_ value: Double) -> String { String(Int((value * 10).rounded())) .withDecimal }
        var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(Int(left))" y="20" font-size="14">net-detect \(expandInfo.target) (\(expandInfo.kind.rawValue)): \(quality.rawValue)</text>
        <text x="\(Int(left))" y="38">loss \(f(lossRate)) % (red marks), rtt avg \(f(rttAverage)) ms, min \(f(rttMinimal)), max \(f(rttMaximal)), mdev \(f(rttMeanDeviation)) ms</text>
        <line x1="\(Int(left))" y1="\(Int(top + plotHeight))" x2="\(Int(left + plotWidth))" y2="\(Int(top + plotHeight))" stroke="black"/>
        <line x1="\(Int(left))" y1="\(Int(top))" x2="\(Int(left))" y2="\(Int(top + plotHeight))" stroke="black"/>
        <text x="\(Int(left - 8))" y="\(Int(top + 4))" text-anchor="end">\(f(ceiling)) ms</text>
        <text x="\(Int(left - 8))" y="\(Int(top + plotHeight + 4))" text-anchor="end">0</text>
        <text x="\(Int(left + plotWidth))" y="\(Int(height - 10))" text-anchor="end">probe \(rtts.count)</text>

        """
        var points: [String] = []
        for (index, rtt) in rtts.enumerated() {
            if let rtt {
                points.append("\(f(x(index))),\(f(y(rtt)))")
            } else {
                svg += "<line class=\"lost\" x1=\"\(f(x(index)))\" y1=\"\(f(top + plotHeight - 6))\" x2=\"\(f(x(index)))\" y2=\"\(f(top + plotHeight + 6))\" stroke=\"red\"/>\n"
            }
        }
        svg += "<polyline fill=\"none\" stroke=\"steelblue\" stroke-width=\"1\" points=\"\(points.joined(separator: " "))\"/>\n</svg>\n"
        return svg
    }
}

private extension String {
    /// "1234" (tenths) as "123.4".
    var withDecimal: String {
        let negative = hasPrefix("-")
        var digits = negative ? String(dropFirst()) : self
        while digits.count < 2 { digits = "0" + digits }
        return (negative ? "-" : "") + digits.dropLast() + "." + digits.suffix(1)
    }
}
