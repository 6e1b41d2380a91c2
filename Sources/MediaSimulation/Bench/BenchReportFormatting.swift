import Foundation
import MediaEngine

extension BenchReport {
    /// Human-readable tables, one per codec, with aligned columns.
    public func table() -> String {
        var text = ""
        if !opus.isEmpty {
            text += "Opus (\(audioInput))\n"
            let rows = opus.map { r in
                [
                    kbps(r.setup.bitrate), "\(r.setup.complexity)", Self.milliseconds(r.setup.frameMilliseconds),
                    r.setup.application, kbps(r.achievedBitrate), fixed(r.encodeSpeed, 0) + "x",
                    fixed(r.decodeSpeed, 0) + "x", fixed(r.snr, 1), fixed(r.correlation, 4),
                ]
            }
            text += Self.align(["target kb/s", "complexity", "frame", "application", "achieved kb/s",
                                "encode", "decode", "SNR dB", "correlation"], rows)
        }
        if !vp8.isEmpty {
            if !text.isEmpty { text += "\n" }
            text += "VP8 (\(videoInput))\n"
            let rows = vp8.map { r in
                [
                    "\(r.setup.width)x\(r.setup.height)", kbps(r.setup.bitrate), "\(r.setup.cpuUsed)",
                    "\(r.setup.threads)", kbps(r.achievedBitrate), fixed(r.encodeSpeed, 0), fixed(r.decodeSpeed, 0),
                    fixed(r.psnr, 2), fixed(r.ssim, 4), "\(r.frames)", "\(r.keyframes)", "\(r.droppedFrames)",
                ]
            }
            text += Self.align(["size", "target kb/s", "cpu-used", "threads", "achieved kb/s", "encode fps",
                                "decode fps", "PSNR dB", "SSIM", "frames", "keyframes", "dropped"], rows)
        }
        return text
    }

    /// One CSV table for both codecs; columns that do not apply to a codec are empty.
    public func csv() -> String {
        var lines = ["codec,width,height,channels,frame_ms,application,complexity,cpu_used,threads,target_bps,achieved_bps,"
            + "encode_speed,decode_speed,speed_unit,snr_db,correlation,psnr_db,ssim,frames,keyframes,dropped"]
        for r in opus {
            lines.append([
                "opus", "", "", "\(r.channels)", "\(r.setup.frameMilliseconds)", r.setup.application,
                "\(r.setup.complexity)", "", "", "\(r.setup.bitrate)", fixed(r.achievedBitrate, 0),
                fixed(r.encodeSpeed, 2), fixed(r.decodeSpeed, 2), "x_realtime", fixed(r.snr, 3), fixed(r.correlation, 5),
                "", "", "", "", "",
            ].joined(separator: ","))
        }
        for r in vp8 {
            lines.append([
                "vp8", "\(r.setup.width)", "\(r.setup.height)", "", "", "", "", "\(r.setup.cpuUsed)", "\(r.setup.threads)",
                "\(r.setup.bitrate)", fixed(r.achievedBitrate, 0), fixed(r.encodeSpeed, 2), fixed(r.decodeSpeed, 2),
                "frames_per_second", "", "", fixed(r.psnr, 3), fixed(r.ssim, 5), "\(r.frames)", "\(r.keyframes)",
                "\(r.droppedFrames)",
            ].joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Pretty-printed JSON with sorted keys. Infinite SNR (bit-exact output) is written
    /// as the largest finite Double, since JSON has no infinity.
    public func json() throws -> String {
        var copy = self
        for index in copy.opus.indices where !copy.opus[index].snr.isFinite {
            copy.opus[index].snr = copy.opus[index].snr > 0 ? .greatestFiniteMagnitude : -.greatestFiniteMagnitude
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(copy), as: UTF8.self) + "\n"
    }

    private static func milliseconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) ms" : "\(value) ms"
    }

    private static func align(_ header: [String], _ rows: [[String]]) -> String {
        let widths = header.indices.map { column in
            ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n") + "\n"
    }
}

func kbps(_ bitsPerSecond: some BinaryInteger) -> String { kbps(Double(bitsPerSecond)) }
func kbps(_ bitsPerSecond: Double) -> String { fixed(bitsPerSecond / 1000, 1) }

/// `value` with `digits` decimals, without locale grouping.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return value > 0 ? "inf" : (value < 0 ? "-inf" : "nan") }
    return String(format: "%.\(digits)f", value)
}
