import Foundation
import MediaEngine

/// Draws quality against bitrate as an SVG: Opus SNR on the left, VP8 PSNR on the
/// right, one line per setting other than bitrate.
extension BenchReport {
    public func svgPlot() -> String {
        var panels: [Panel] = []
        if !opus.isEmpty {
            let groups = Dictionary(grouping: opus) {
                "c\($0.setup.complexity) \(fixed($0.setup.frameMilliseconds, $0.setup.frameMilliseconds == $0.setup.frameMilliseconds.rounded() ? 0 : 1)) ms \($0.setup.application)"
            }
            panels.append(Panel(title: "Opus: SNR vs bitrate", yLabel: "SNR (dB)",
                                series: groups.keys.sorted().map { key in
                                    Series(name: key, points: groups[key]!.map {
                                        (Double($0.setup.bitrate) / 1000, $0.snr.isFinite ? $0.snr : 99)
                                    }.sorted { $0.0 < $1.0 })
                                }))
        }
        if !vp8.isEmpty {
            let groups = Dictionary(grouping: vp8) { "\($0.setup.width)x\($0.setup.height) cpu \($0.setup.cpuUsed)" }
            panels.append(Panel(title: "VP8: PSNR vs bitrate", yLabel: "PSNR (dB)",
                                series: groups.keys.sorted().map { key in
                                    Series(name: key, points: groups[key]!.map {
                                        (Double($0.setup.bitrate) / 1000, $0.psnr)
                                    }.sorted { $0.0 < $1.0 })
                                }))
        }
        let panelWidth = 520.0, height = 400.0
        let width = max(1, Double(panels.count)) * panelWidth
        var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
        viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>

        """
        for (index, panel) in panels.enumerated() {
            svg += panel.render(x: Double(index) * panelWidth, width: panelWidth, height: height)
        }
        if panels.isEmpty {
            svg += "<text x=\"20\" y=\"40\">no results</text>\n"
        }
        return svg + "</svg>\n"
    }
}

private struct Series {
    var name: String
    var points: [(Double, Double)]
}

private struct Panel {
    var title: String
    var yLabel: String
    var series: [Series]

    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

    func render(x originX: Double, width: Double, height: Double) -> String {
        let (left, right, top, bottom) = (originX + 60, originX + width - 20, 40.0, height - 110)
        let all = series.flatMap(\.points)
        let (xMin, xMax) = Self.range(all.map(\.0))
        let (yMin, yMax) = Self.range(all.map(\.1))
        func px(_ v: Double) -> Double { left + (v - xMin) / (xMax - xMin) * (right - left) }
        func py(_ v: Double) -> Double { bottom - (v - yMin) / (yMax - yMin) * (bottom - top) }
        var svg = "<text x=\"\(fixed(originX + width / 2, 1))\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">\(escape(title))</text>\n"
        svg += "<line x1=\"\(fixed(left, 1))\" y1=\"\(fixed(bottom, 1))\" x2=\"\(fixed(right, 1))\" y2=\"\(fixed(bottom, 1))\" stroke=\"black\"/>\n"
        svg += "<line x1=\"\(fixed(left, 1))\" y1=\"\(fixed(top, 1))\" x2=\"\(fixed(left, 1))\" y2=\"\(fixed(bottom, 1))\" stroke=\"black\"/>\n"
        for step in 0...4 {
            let xv = xMin + (xMax - xMin) * Double(step) / 4
            let yv = yMin + (yMax - yMin) * Double(step) / 4
            svg += "<text x=\"\(fixed(px(xv), 1))\" y=\"\(fixed(bottom + 16, 1))\" text-anchor=\"middle\">\(fixed(xv, 0))</text>\n"
            svg += "<text x=\"\(fixed(left - 6, 1))\" y=\"\(fixed(py(yv) + 4, 1))\" text-anchor=\"end\">\(fixed(yv, 1))</text>\n"
            svg += "<line x1=\"\(fixed(left, 1))\" y1=\"\(fixed(py(yv), 1))\" x2=\"\(fixed(right, 1))\" y2=\"\(fixed(py(yv), 1))\" stroke=\"#ddd\"/>\n"
        }
        svg += "<text x=\"\(fixed((left + right) / 2, 1))\" y=\"\(fixed(bottom + 34, 1))\" text-anchor=\"middle\">bitrate (kb/s)</text>\n"
        svg += "<text transform=\"translate(\(fixed(originX + 16, 1)) \(fixed((top + bottom) / 2, 1))) rotate(-90)\" text-anchor=\"middle\">\(escape(yLabel))</text>\n"
        for (index, line) in series.enumerated() {
            let color = Self.colors[index % Self.colors.count]
            let path = line.points.map { "\(fixed(px($0.0), 1)),\(fixed(py($0.1), 1))" }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(path)\"/>\n"
            for point in line.points {
                svg += "<circle cx=\"\(fixed(px(point.0), 1))\" cy=\"\(fixed(py(point.1), 1))\" r=\"3\" fill=\"\(color)\"/>\n"
            }
            let legendY = bottom + 52 + Double(index / 2) * 16
            let legendX = left + Double(index % 2) * (right - left) / 2
            svg += "<rect x=\"\(fixed(legendX, 1))\" y=\"\(fixed(legendY - 9, 1))\" width=\"12\" height=\"10\" fill=\"\(color)\"/>\n"
            svg += "<text x=\"\(fixed(legendX + 16, 1))\" y=\"\(fixed(legendY, 1))\">\(escape(line.name))</text>\n"
        }
        return svg
    }

    /// A padded range that is never empty.
    static func range(_ values: [Double]) -> (Double, Double) {
        guard let low = values.min(), let high = values.max() else { return (0, 1) }
        if high - low < 1e-9 { return (low - 1, high + 1) }
        let pad = (high - low) * 0.05
        return (low - pad, high + pad)
    }

    func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
