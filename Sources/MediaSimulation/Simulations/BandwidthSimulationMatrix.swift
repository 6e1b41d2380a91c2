import MediaEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A grid of simulations and a plain-text table of their figures, for a CLI to print.
extension BandwidthSimulation {
    /// Runs one simulation per (rate cap, random loss) pair on top of `base`, in order:
    /// caps outer, losses inner.
    ///
    /// - Parameters:
    ///   - rateCaps: Link rates in kb/s; nil for no cap.
    ///   - lossPercents: Random loss shares, 0...100.
    ///   - base: Everything else about the link (delay, jitter, queue limit, seed).
    ///   - seconds: Virtual seconds per run.
    ///   - startBitrate: The estimator's first target, bits per second.
    ///   - maxBitrate: The estimator's maximum, bits per second.
    ///   - options: Sender and receiver behaviour.
    /// - Returns: One report per pair.
    /// - Throws: `ImpairmentError` for a setting out of range.
    public static func matrix(
        rateCaps: [Int?], lossPercents: [Double], base: ImpairmentSettings = ImpairmentSettings(), seconds: Double = 30,
        startBitrate: Int, maxBitrate: Int, options: Options = Options()
    ) throws(ImpairmentError) -> [Report] {
        var reports: [Report] = []
        for cap in rateCaps {
            for loss in lossPercents {
                var settings = base
                settings.rateKbps = cap
                settings.lossPercent = loss
                reports.append(try run(
                    settings: settings, seconds: seconds, startBitrate: startBitrate, maxBitrate: maxBitrate, options: options
                ))
            }
        }
        return reports
    }

    /// A fixed-width table of `reports`: link, settle time (10 % tolerance), loss after
    /// settling, mean / lowest / peak target after settling (after 5 s without a cap),
    /// time to reach 95 % of `maxBitrate`, and the final target.
    ///
    /// - Parameters:
    ///   - reports: Runs to list, one row each.
    ///   - maxBitrate: The maximum the runs used, for the ramp column.
    /// - Returns: The table, one line per row after a header line.
    public static func table(_ reports: [Report], maxBitrate: Int) -> String {
        let columns = ["cap kb/s", "loss %", "delay ms", "settle s", "loss after %", "mean kb/s", "low kb/s", "peak kb/s",
                       "ramp s", "final kb/s"]
        var lines = [columns.map { pad($0) }.joined(separator: " ")]
        for report in reports {
            let settle = report.settleTime()
            let from = settle ?? (report.settings.rateKbps == nil ? .seconds(5) : .zero)
            let cells = [
                report.settings.rateKbps.map(String.init) ?? "-",
                format(report.settings.lossPercent, decimals: 1),
                String(Int((report.settings.delay / .milliseconds(1)).rounded())),
                settle.map { format($0 / .seconds(1), decimals: 1) } ?? "-",
                format(report.lossFraction(after: from) * 100, decimals: 2),
                String(report.meanTarget(after: from) / 1_000),
                String(report.lowestTarget(after: from) / 1_000),
                String(report.peakTarget(after: from) / 1_000),
                report.rampTime(to: maxBitrate).map { format($0 / .seconds(1), decimals: 1) } ?? "-",
                String(report.finalTargetBitrate / 1_000),
            ]
            lines.append(cells.map { pad($0) }.joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    private static func pad(_ text: String) -> String {
        String(repeating: " ", count: max(0, 12 - text.count)) + text
    }

    private static func format(_ value: Double, decimals: Int) -> String {
        let scale = pow(10, Double(decimals))
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale)
        let fraction = abs(scaled % Int(scale))
        guard decimals > 0 else { return String(whole) }
        let digits = String(fraction)
        let sign = scaled < 0 && whole == 0 ? "-" : ""
        return sign + String(whole) + "." + String(repeating: "0", count: decimals - digits.count) + digits
    }
}
