import Foundation
import MediaEngine
import Testing
import TestSupport

/// A headless Chromium page publishes simulcast through the web client (two encodings with
/// RIDs, its SSRCs announced nowhere), and another page watches it: the server binds the
/// layers by MID and RID and forwards them; the viewer's page tells the server its tile's
/// size (a ResizeObserver), and the layer no tile needs is paused at the publisher (its page
/// sets that encoding inactive) and resumed when the tile grows again.
///
/// Chrome's upstream estimate falls to its floor (82 kb/s) here, so it never sends its
/// 640x360 layer: the server's RTCP reaches the page (its transport counts it) but Chrome
/// counts no receiver report from it, and its estimate decays 0.8x a second as without
/// feedback. Open (see the issue 36 note); the test prints those figures.
@Suite(.serialized) struct ChromiumSimulcast {
    typealias Report = ChromiumWHEP.Report

    @Test func aPagesSimulcastLayersAreChosenByTheViewersTileAndTheUnwatchedOneIsPaused() async throws {
        try await Heavy.run {
            let room = try ChromiumMeeting.Room("chromium-simulcast")
            defer { room.close() }
            let (lab, server, token) = (room.lab, room.server, room.token)
            // 640x360: Chrome sends two layers (320x180 and 640x360) from this size.
            let media = try ChromiumMeeting.fakeMedia(in: room.directory, tone: 440, size: "640x360")
            let bob = try ChromiumMeeting.page(lab, on: room.bobHost, url: "\(server.http)/#meeting=room&processing=0&token=\(try token("bob"))",
                                               audio: media.audio, video: media.video, seconds: 26)
            try await Task.sleep(for: .seconds(3))
            // carol watches. At 8 s her tile of bob shrinks to 150 px (the 320x180 layer
            // fills it); at 16 s it grows back.
            let tileOfBob = "document.querySelector('.tile[data-name=\"bob\"] video')"
            let carol = try ChromiumMeeting.page(lab, on: room.carolHost,
                                                 url: "\(server.http)/#meeting=room&role=audience&token=\(try token("carol"))",
                                                 audio: media.audio, video: media.video, seconds: 22,
                                                 actions: ["8:\(tileOfBob).style.width = '150px'", "16:\(tileOfBob).style.width = ''"])
            let carolReport = try ChromiumMeeting.report(of: carol, timeout: 60)
            let bobReport = try ChromiumMeeting.report(of: bob, timeout: 60)
            for (name, report) in [("bob", bobReport), ("carol", carolReport)] {
                #expect(report.error == nil && report.console.isEmpty, "\(name): \(report.error ?? "") \(report.console)")
            }
            func carolSees(at time: Double) -> Report.Stats.Participant? {
                carolReport.samples.first { $0.at >= time }?.stats?.participants["bob"]
            }
            let widths = carolReport.samples.map { "\($0.at): \($0.stats?.participants["bob"]?.frameWidth ?? -1)" }
            let layers = bobReport.samples.map { sample in
                "\(sample.at): " + (sample.stats?.sent?.layers ?? [:]).sorted { $0.key < $1.key }
                    .map { "\($0.key) \($0.value.frameWidth) \($0.value.framesSent)\($0.value.active ? "" : " off") \(Int($0.value.targetBitrate ?? 0) / 1000) kb/s \($0.value.qualityLimitationReason ?? "")" }
                    .joined(separator: ", ") + "; estimate \(Int(sample.stats?.availableOutgoingBitrate ?? 0) / 1000) kb/s"
            }
            print("Chromium simulcast: carol's width of bob \(widths)")
            print("Chromium simulcast: bob's layers \(layers)")
            print("Chromium simulcast: bob's estimate \(bobReport.samples.map { Int($0.stats?.availableOutgoingBitrate ?? 0) / 1000 }), reports \(bobReport.samples.map { $0.stats?.sent?.reportsReceived ?? -1 }), transport packets \(bobReport.samples.map { $0.stats?.packetsReceived ?? -1 })")

            // bob's page offers two layers by RID (no SSRC announced) and the server takes
            // them: it binds the 320x180 layer by MID and RID and forwards it to carol.
            let sent = try #require(bobReport.samples.last { $0.stats?.sent?.layers != nil }?.stats?.sent?.layers)
            #expect(Set(sent.keys) == ["h", "f"] && sent["h"]?.frameWidth == 320, "\(sent)")
            let seen = try #require(carolSees(at: 12))
            let before = carolSees(at: 9)?.framesDecoded ?? 0
            // Still moving: at the estimate's floor (below) bob's page itself sends as few as
            // 7 frames a second under load, so this asks for 10 in 3 s, not a frame rate.
            #expect(seen.frameWidth == 320 && seen.frameHeight == 180 && (seen.framesDecoded ?? 0) - before >= 10,
                    "\(widths) decoded \(before) -> \(seen.framesDecoded ?? 0)")

            // The top layer: wanted while carol's tile is large, paused at bob's page (its
            // encoding set inactive) 5 s after the tile shrank, resumed when it grew back.
            let full = bobReport.samples.compactMap { sample in sample.stats?.sent?.layers?["f"].map { (sample.at, $0.active) } }
            let pausedAt = full.first { !$0.1 }?.0
            let resumedAt = pausedAt.flatMap { paused in full.first { $0.0 > paused && $0.1 }?.0 }
            print("Chromium simulcast: bob's top layer paused at \(pausedAt.map { "\($0)" } ?? "never") s, resumed at \(resumedAt.map { "\($0)" } ?? "never") s (his page's time)")
            #expect(full.first?.1 == true, "the top layer starts active: \(layers)")
            // carol's page opened about 3 s after bob's: the shrink at her 8 s is bob's 11 s,
            // the pause due 5.5 s later; the growth at her 16 s is bob's 19 s (page start-up
            // moves both by up to a second or two).
            #expect(pausedAt.map { $0 >= 13 && $0 <= 21 } == true, "\(layers)")
            #expect(zip(pausedAt.map { [$0] } ?? [], resumedAt.map { [$0] } ?? []).contains { $1 - $0 >= 1.5 && $1 <= 24 }, "\(layers)")
        }
    }
}
