#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport
@testable import MediaEngine
@testable import LiveStreaming

/// File outputs: what ffmpeg makes of them, and a disk that fills up under one.
struct LiveFileOutputTests {
    /// A streamer fed at real time with the red | blue canvas and 440 + 660 Hz.
    final class Rig: Sendable {
        let events = Recorded<LiveOutputEvent>()
        let streamer: LiveStreamer
        let feed: LiveFeed

        init() throws {
            let events = events
            let streamer = try LiveStreamer(format: LiveStreamFormat()) { events.append($0) }
            var canvas = VideoFrame(width: 1280, height: 720)
            let (strideY, strideUV) = (canvas.strideY, canvas.strideUV)
            canvas.withMutablePlanes { y, u, v in
                fillRedBlue(y: y, u: u, v: v, width: 1280, height: 720, strideY: strideY, strideUV: strideUV)
            }
            let frame = canvas
            self.streamer = streamer
            feed = LiveFeed(video: { streamer.submitVideo(frame, at: $0) }, audio: { streamer.submitAudio($0, at: $1) })
        }

        func statuses(_ id: String) -> [Int] { events.all.filter { $0.output == id }.map(\.status.rawValue) }
    }

    /// Files of each family, 3 s fed at real time: ffprobe finds the codecs, the canvas
    /// size and the pushed duration; ffmpeg decodes them without an error and hears both tones.
    @Test(arguments: [["flv", "mp4"], ["webm"]])
    func filesDecodeWithBothTones(_ extensions: [String]) async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-files")
            defer { try? FileManager.default.removeItem(at: directory) }
            let rig = try Rig()
            let codecs = ["flv": ("h264", "aac"), "mp4": ("h264", "aac"), "webm": ("vp8", "opus")]
            let kinds = extensions.map { ($0, codecs[$0]!.0, codecs[$0]!.1) }
            for (kind, _, _) in kinds {
                rig.streamer.addOutput(id: kind, target: try LiveTarget(directory.appendingPathComponent("room.\(kind)").path))
            }
            rig.feed.start()
            #expect(await eventually { rig.feed.audioChunks >= 300 }, "3 s fed")
            rig.feed.stop()
            let pushed = Double(rig.feed.audioChunks) / 100
            let statistics = kinds.map { rig.streamer.statistics(output: $0.0) }
            rig.streamer.stop()
            print("files: pushed \(pushed) s, feed late by at most \(rig.feed.maximumLateness), \(rig.feed.videoTicks) frames, calls \(rig.feed.callTimes)")
            for ((kind, videoCodec, audioCodec), statistics) in zip(kinds, statistics) {
                let path = directory.appendingPathComponent("room.\(kind)").path
                let probe = try Probe(path: path)
                let duration = try #require(probe.duration, "\(kind): no duration")
                print("\(kind): \(duration) s, \(probe.streams.map(\.codec)), \(String(describing: statistics))")
                #expect(probe.streams.map(\.codec).sorted() == [audioCodec, videoCodec].sorted(), "\(kind)")
                #expect(probe.streams.first { $0.kind == "video" }.map { ($0.width, $0.height) } ?? (0, 0) == (1280, 720), "\(kind)")
                #expect(abs(duration - pushed) < 0.4, "\(kind): \(duration) s in the file, \(pushed) s pushed")
                #expect(try Tool.decodeErrors(path) == "", "\(kind)")
                #expect(statistics?.droppedPackets == 0 && (statistics?.videoKeyframes ?? 0) >= 2, "\(kind)")
                #expect(rig.statuses(kind) == [502, 503, 505, 500], "\(kind): closed cleanly by stop()")

                let wav = directory.appendingPathComponent("\(kind).wav").path
                try Tool.decodeAudio(path, to: wav)
                let samples = try AudioFile.read(path: wav).samples
                let body = samples.dropFirst(4_800)
                let levels = [440.0, 660.0, 1_000.0].map { toneLevel(body, frequency: $0, sampleRate: 48_000) }
                print("\(kind): 440 Hz \(levels[0]), 660 Hz \(levels[1]), 1000 Hz \(levels[2])")
                #expect(levels[0] > 0.18 && levels[0] < 0.32 && levels[1] > 0.18 && levels[1] < 0.32 && levels[2] < 0.01, "\(kind): \(levels)")
            }
        }
    }

    /// A file on a 256 KiB tmpfs: the disk fills within a second at 2.5 Mbit/s. The output
    /// reports 506 with a disk-full error and does not retry; the process goes on; the file
    /// keeps what was written, and ffmpeg decodes that prefix without an error.
    @Test func fullDiskReportsPushFailedAndKeepsADecodablePrefix() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-full-disk")
            defer { try? FileManager.default.removeItem(at: directory) }
            let mounted = try Tool.run("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", directory.path])
            try #require(mounted.status == 0, "cannot mount a tmpfs (tests run as root): \(mounted.stderr)")
            defer { _ = try? Tool.run("umount", [directory.path]) }
            let path = directory.appendingPathComponent("room.flv").path
            let rig = try Rig()
            rig.streamer.addOutput(id: "recording", target: try LiveTarget(path))
            rig.feed.start()
            let failed = await eventually(timeout: .seconds(5)) { rig.events.all.contains { $0.status == .pushFailed } }
            // A retry would come after its delay: only a second's wait shows there is none.
            try await Task.sleep(for: .seconds(1))
            rig.feed.stop()
            rig.streamer.stop()
            #expect(failed, "\(rig.statuses("recording"))")
            let statuses = rig.statuses("recording")
            let error = rig.events.all.first { $0.status == .pushFailed }?.error
            let statistics = try #require(rig.streamer.statistics(output: "recording"))
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            print("full disk: \(statuses), \(String(describing: error)), \(statistics), file \(size) bytes")
            #expect(statuses == [502, 503, 505, 506], "no retry for a file")
            #expect(error?.code == 20204 && error?.message.contains("disk is full") == true)
            #expect(statistics.status == .pushFailed)
            #expect(size > 100_000 && size <= 256 * 1_024)
            #expect(try Tool.decodeErrors(path) == "")
            let frames = try Tool.run("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                  "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
            let decoded = Int(frames.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            print("full disk: \(decoded) video frames decode from the prefix")
            #expect(decoded >= 5)
        }
    }
}
