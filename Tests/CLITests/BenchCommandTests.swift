import Foundation
import MediaEngine
import MediaSimulation
import TestSupport
import Testing

@Suite struct BenchCommand {
    @Test func vp8CaseAsJSONMeasuresQualityAndBitrate() async throws {
        try await Heavy.run {
            let run = try CLI.run(["bench", "--codec", "vp8", "--resolutions", "320x240", "--vp8-bitrates", "300k",
                                   "--duration", "2", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.isEmpty, "no progress bar when stderr is not a terminal: \(run.stderr)")
            let report = try JSONDecoder().decode(BenchReport.self, from: Data(run.stdout.utf8))
            #expect(report.opus.isEmpty)
            let result = try #require(report.vp8.first)
            #expect(result.frames == 60)
            #expect(result.keyframes == 1)
            #expect(result.psnr > 35, "PSNR \(result.psnr)")
            #expect(result.ssim > 0.9 && result.ssim <= 1)
            #expect(abs(result.achievedBitrate - 300_000) / 300_000 < 0.25, "achieved \(result.achievedBitrate)")
            #expect(result.encodeSpeed > 30, "a 320x240 encoder slower than real time: \(result.encodeSpeed) fps")
        }
    }

    /// `bench live` runs the composer and ffmpeg on the same inputs; a short run checks the
    /// command and its report (the figures themselves are the benchmark's, not a test's).
    @Test func liveComposerBenchReportsBothSidesAndTheirRatios() async throws {
        try await Heavy.run {
            let run = try CLI.run(["bench", "live", "--participants", "2", "--input-size", "320x180", "--output-size", "640x360@15",
                                   "--bitrate", "600000", "--seconds", "2", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            let composer = try #require(report["composer"] as? [String: Any])
            let ffmpeg = try #require(report["ffmpeg"] as? [String: Any])
            for side in [composer, ffmpeg] {
                #expect((side["framesPerSecond"] as? Double ?? 0) > 0 && (side["cpuPerOutputSecond"] as? Double ?? 0) > 0)
                // Two seconds at 600 kb/s: about 150 KB of video, whichever side wrote it.
                #expect((side["bytes"] as? Int ?? 0) > 50_000, "\(side)")
            }
            #expect(report["droppedPackets"] as? Int == 0)
            #expect((report["speedRatio"] as? Double ?? 0) > 0 && (report["cpuRatio"] as? Double ?? 0) > 0)
        }
        let bad = try CLI.run(["bench", "live", "--participants", "5"])
        #expect(bad.status != 0 && bad.stderr.contains("--participants 5"), "\(bad.stderr)")
    }

    /// `bench rts` through a child server: relay and echo runs for each pair count, every
    /// message in order, latency and the server's CPU measured, and the ratios made. The
    /// figures themselves are the benchmark's, not a test's.
    @Test func rtsBenchRunsTheRelayAndTheEchoBaselineForEachPairCount() async throws {
        try await Heavy.run {
            let run = try CLI.run(["bench", "rts", "--pairs", "1,3", "--seconds", "1", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            struct Spread: Decodable { var count: Int; var p50: Double; var p99: Double }
            struct Run: Decodable {
                var kind: String; var pairs: Int; var messages: Int; var megabytesPerSecond: Double; var latency: Spread
                var serverCPUMillisecondsPerMegabyte: Double; var outOfOrder: Int
            }
            struct Comparison: Decodable { var pairs: Int; var throughput: Double; var cpuPerMegabyte: Double }
            struct Report: Decodable { var size: Int; var runs: [Run]; var comparisons: [Comparison] }
            let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
            #expect(report.size == 4_096)
            #expect(report.runs.map { "\($0.kind) \($0.pairs)" } == ["relay 1", "echo 1", "relay 3", "echo 3"])
            for run in report.runs {
                #expect(run.messages >= 100 && run.latency.count == run.messages && run.outOfOrder == 0, "\(run)")
                #expect(run.latency.p50 > 0 && run.latency.p99 >= run.latency.p50 && run.serverCPUMillisecondsPerMegabyte > 0, "\(run)")
            }
            #expect(report.comparisons.map(\.pairs) == [1, 3] && report.comparisons.allSatisfy { $0.throughput > 0 && $0.cpuPerMegabyte > 0 })
        }
        let bad = try CLI.run(["bench", "rts", "--pairs", "0"])
        #expect(bad.status != 0 && bad.stderr.contains("--pairs 0"), "\(bad.stderr)")
    }

    /// `bench relay` through a real coturn on loopback: both paths carry packets of both
    /// sizes, the relay's frames are ChannelData-sized, every round trip comes back, and
    /// coturn is gone afterwards. The figures themselves are the benchmark's, not a test's.
    @Test func relayBenchMeasuresDirectAndRelayedPathsThroughCoturn() async throws {
        try await Heavy.run {
            let run = try CLI.run(["bench", "relay", "--seconds", "1", "--packets", "200", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            struct Path: Decodable { var packets: Int; var packetsPerSecond: Double; var datagramBytes: Int }
            struct Size: Decodable { var rtpBytes: Int; var direct: Path; var relay: Path; var ratio: Double }
            struct Spread: Decodable { var count: Int; var p50: Double; var p99: Double }
            struct RoundTrips: Decodable { var direct: Spread; var relay: Spread; var directLost: Int; var relayLost: Int }
            struct Report: Decodable { var server: String; var channel: Int; var throughput: [Size]; var roundTrips: RoundTrips }
            let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
            #expect(report.throughput.map(\.rtpBytes) == [172, 1_200])
            for size in report.throughput {
                #expect(size.direct.packets > 0 && size.direct.packetsPerSecond > 0, "\(size)")
                #expect(size.relay.packets > 0 && size.relay.packetsPerSecond > 0, "\(size)")
                #expect(size.ratio > 0)
                // SRTP adds the 80-bit tag; the relay adds ChannelData's header and padding.
                #expect(size.direct.datagramBytes == size.rtpBytes + 10)
                #expect(size.relay.datagramBytes == TURNChannelData.size(payloadSize: size.direct.datagramBytes))
            }
            #expect(TURNChannelData.channelNumbers.contains(UInt16(report.channel)))
            let trips = report.roundTrips
            #expect(trips.direct.count == 200 && trips.relay.count == 200, "\(trips)")
            #expect(trips.directLost == 0 && trips.relayLost == 0, "\(trips)")
            #expect(trips.direct.p50 > 0 && trips.relay.p50 > 0 && trips.relay.p99 >= trips.relay.p50, "\(trips)")
            // coturn was stopped: its port is free again.
            let server = try SocketAddress(parsing: report.server)
            let socket = try UDPSocket(bindTo: server)
            socket.close()

            let text = try CLI.run(["bench", "relay", "--seconds", "0.1", "--packets", "10"])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.components(separatedBy: "(relay / direct)").count == 3, "\(text.stdout)")
            #expect(text.stdout.contains("added by the relay: p50 "), "\(text.stdout)")
        }
        let bad = try CLI.run(["bench", "relay", "--seconds", "0"])
        #expect(bad.status != 0 && bad.stderr.contains("--seconds 0.0 must be within 0.1...60"), "\(bad.stderr)")
    }

    @Test func opusCaseAsCSVHasOneRowPerCase() async throws {
        try await Heavy.run {
            let run = try CLI.run(["bench", "--codec", "opus", "--opus-bitrates", "32k,64000", "--complexities", "5",
                                   "--frame-sizes", "20", "--application", "audio", "--duration", "1", "--csv"])
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
            #expect(lines.count == 3)
            let header = lines[0].map(String.init)
            for row in lines.dropFirst() {
                let cell = { (name: String) in String(row[header.firstIndex(of: name)!]) }
                #expect(cell("codec") == "opus")
                #expect(cell("application") == "audio")
                #expect(Double(cell("correlation"))! > 0.9)
                let target = Double(cell("target_bps"))!
                #expect(abs(Double(cell("achieved_bps"))! - target) / target < 0.2)
                #expect(Double(cell("encode_speed"))! > 1, "Opus slower than real time")
            }
        }
    }

    @Test func tableAndPlotForBothCodecs() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let plot = directory.appendingPathComponent("quality.svg").path
            let run = try CLI.run(["bench", "--opus-bitrates", "16k,48k", "--complexities", "5", "--frame-sizes", "20",
                                   "--vp8-bitrates", "200k,400k", "--resolutions", "160x120", "--duration", "1",
                                   "--plot", plot])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("Opus (synthetic multi-tone)"))
            #expect(run.stdout.contains("VP8 (synthetic test pattern)"))
            #expect(run.stdout.contains("160x120"))
            let svg = try String(contentsOfFile: plot, encoding: .utf8)
            #expect(svg.hasPrefix("<svg"))
            #expect(svg.components(separatedBy: "<polyline").count == 3, "one line per codec setting")
            #expect(svg.contains("PSNR (dB)") && svg.contains("SNR (dB)"))
        }
    }

    @Test func userWAVAndY4MInputsAreMeasured() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let wav = directory.appendingPathComponent("voice.wav").path
            var tone = ToneGenerator(.sine(330), layout: .stereo)
            try AudioFile.writeWAV(tone.clip(seconds: 1), path: wav)
            let y4m = directory.appendingPathComponent("clip.y4m").path
            let writer = try Y4M.Writer(path: y4m, width: 192, height: 144, frameRate: 30)
            var pattern = TestPattern(width: 192, height: 144)
            for _ in 0..<20 { try writer.write(pattern.nextFrame()) }
            try writer.close()

            let run = try CLI.run(["bench", "--audio", wav, "--video", y4m, "--opus-bitrates", "64k", "--complexities", "9",
                                   "--frame-sizes", "20", "--vp8-bitrates", "500k", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try JSONDecoder().decode(BenchReport.self, from: Data(run.stdout.utf8))
            #expect(report.audioInput == wav && report.videoInput == y4m)
            #expect(report.opus.first?.channels == 2)
            #expect((report.opus.first?.correlation ?? 0) > 0.95, "stereo voip at 64 kb/s")
            // The file's own size is used when no --resolutions is given; it holds 20 frames.
            #expect(report.vp8.first?.setup.width == 192)
            #expect(report.vp8.first?.frames == 20)
        }
    }

    @Test(arguments: [
        (["--opus-bitrates", "0"], "--opus-bitrates: '0' is not a bitrate"),
        (["--opus-bitrates", "fast"], "'fast' is not a bitrate"),
        (["--frame-sizes", "30"], "--frame-sizes: '30' is not 2.5, 5, 10, 20, 40 or 60"),
        (["--resolutions", "640by480"], "'640by480' is not WxH"),
        (["--complexities", "", "--codec", "opus"], "--complexities: '' is not a whole number"),
        (["--duration", "0"], "--duration 0.0 must be more than 0"),
        (["--json", "--csv"], "--json and --csv cannot be combined"),
        (["--codec", "h264"], "h264"),
        (["--no-such-option"], "Unknown option '--no-such-option'"),
        (["soak", "--minutes", "0.1"], "--minutes 0.1 must be within 0.5...1440"),
        (["soak", "--minutes", "1", "--interval", "30"], "--interval 30.0 leaves fewer than 4 samples in 1.0 minutes"),
        (["soak", "--meeting", "1"], "--meeting 1 must be within 2...16 participants"),
        (["soak", "--size", "15x15"], "--size 15x15: use WIDTHxHEIGHT"),
        (["soak", "--max-rss-slope", "0"], "--max-rss-slope 0.0 must be more than 0"),
    ])
    func badOptionsExitNonZeroWithAMessageNamingThem(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(["bench"] + arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
    }

    @Test(arguments: [
        (["--codec", "vp8", "--resolutions", "641x480", "--duration", "1"], "vp8: width 641 is odd"),
        (["--codec", "opus", "--complexities", "11", "--duration", "1"], "opus: complexity 11 is outside 0...10"),
        (["--codec", "vp8", "--cpu-used=-17", "--resolutions", "64x48", "--duration", "1"], "cpu-used -17"),
    ])
    func settingsTheCodecRefusesAreTypedErrors(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(["bench"] + arguments)
            #expect(run.status == 1)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }

    @Test func badInputFilesAreNamedInTheError() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let garbage = directory.appendingPathComponent("garbage.wav").path
            try Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 7) }).write(to: URL(fileURLWithPath: garbage))
            let badY4M = directory.appendingPathComponent("bad.y4m").path
            try Data("YUV4MPEG2 W64 H48 C444\nFRAME\n".utf8).write(to: URL(fileURLWithPath: badY4M))
            for (arguments, message) in [
                (["--codec", "opus", "--audio", garbage], garbage),
                (["--codec", "opus", "--audio", "/nonexistent/a.wav"], "/nonexistent/a.wav"),
                (["--codec", "vp8", "--video", badY4M], "colourspace C444 is not supported"),
            ] {
                let run = try CLI.run(["bench", "--duration", "1"] + arguments)
                #expect(run.status == 1, "\(arguments)")
                #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)")
            }
        }
    }
}
