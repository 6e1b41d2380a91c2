import Foundation
import MediaEngine
import Testing
import TestSupport

/// Headless Chromium watches a meeting participant over WHEP while the kernel of the
/// browser's host drops 5 % of the video coming to it (nftables on the input chain, matching
/// the RTP payload types of VP8 and of its RTX stream in the clear header). Chrome NACKs what
/// it misses, and the server answers each NACK on the RTX stream it negotiated, from its one
/// history of the publisher's packets.
@Suite(.serialized) struct ChromiumRTX {
    static let driver = Aiortc.script("../chromium/page.py")

    typealias Report = ChromiumWHEP.Report

    /// Drops 5 % of the RTP datagrams of payload type 96 (VP8 in Chrome's offer), and counts
    /// those of 97 (its RTX), which all pass. (Dropped at 5 % too, Chrome asked again for most
    /// lost RTX packets, and they came; but it never asks again for a packet whose frame it
    /// no longer needs, an upper temporal layer's once a later frame decoded, so that share
    /// depends on Chrome, not on the server: 74 of 79 came back in one run, 0 PLIs. The
    /// virtual-time test `ForwardingRouterRTX` drops RTX packets too, and recovers all.)
    static let lossRules = """
        table ip loss {
            chain input {
                type filter hook input priority filter; policy accept;
                meta l4proto udp @th,64,2 == 2 @th,72,8 & 0x7f == 96 numgen random mod 100 < 5 counter drop
                meta l4proto udp @th,64,2 == 2 @th,72,8 & 0x7f == 97 counter
            }
        }

        """

    @Test func aChromiumSubscriberAtFivePercentLossRecoversLostVideoThroughRTX() async throws {
        try await Heavy.run {
            let lab = try NetworkLab()
            defer { lab.close() }
            let serverHost = try lab.addPublicHost()
            let browserHost = try lab.addPublicHost()
            let server = try LabServer(lab: lab, host: serverHost, options: [])
            defer { server.stop() }
            let url = server.url, http = server.http
            func token(_ account: String) throws -> String { try server.tokenFile(account) }
            let reserve = try lab.run(in: serverHost, CLI.executable.path, ["meeting", "reserve", "rtx", "--server", url, "--token-file", try token("alice")])
            #expect(try reserve.wait(timeout: 20).status == 0)
            let alice = try lab.run(in: serverHost, CLI.executable.path,
                                    ["meeting", "join", "rtx", "--server", url, "--token-file", try token("alice"), "--audio", "sine:550", "--video",
                                     "--video-source", "testsrc:640x480@30", "--quality", "480p", "--duration", "40"])
            #expect(alice.waitForOutput(containing: "joined rtx", timeout: 20), "\(alice.stdout)\(alice.stderr)")

            let rules = try temporaryDirectory("rtx-loss").appendingPathComponent("loss.nft")
            try Self.lossRules.write(to: rules, atomically: true, encoding: .utf8)
            let install = try lab.run(in: browserHost, "nft", ["-f", rules.path])
            #expect(try install.wait(timeout: 10).status == 0, "\(install.stderr)")

            let bobToken = try String(contentsOfFile: try token("bob"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let page = try lab.run(in: browserHost, Aiortc.python.path, [Self.driver.path, "--seconds", "20"], input: true)
            try page.write("\(http)/#watch=rtx/alice&token=\(bobToken)\n")
            let run = try page.wait(timeout: 90)
            guard let line = run.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
                throw ToolFailure("page.py printed no report: \(run.stdout) \(run.stderr)")
            }
            let report = try JSONDecoder().decode(Report.self, from: Data(line.utf8))
            #expect(report.error == nil && report.console.isEmpty, "\(report.error ?? "") \(report.console)")

            // What the kernel dropped of VP8, and let in of RTX.
            let listing = try lab.run(in: browserHost, "nft", ["list", "table", "ip", "loss"])
            let ruleset = try listing.wait(timeout: 10).stdout
            let dropped = ruleset.split(separator: "\n").filter { $0.contains("counter packets") }.compactMap { rule -> Int? in
                guard let range = rule.range(of: "counter packets ") else { return nil }
                return Int(rule[range.upperBound...].prefix { $0.isNumber })
            }
            try #require(dropped.count == 2, "\(ruleset)")
            let (mediaDropped, rtxArrived) = (dropped[0], dropped[1])

            // What the server sent on RTX (scraped after the page closed: the leg's counters stay).
            let scrape = try lab.run(in: browserHost, "/usr/bin/python3",
                                     ["-c", "import urllib.request; print(urllib.request.urlopen('\(http)/metrics').read().decode())"])
            let metrics = try scrape.wait(timeout: 20).stdout
            func value(_ name: String) -> Int {
                metrics.split(separator: "\n").first { $0.hasPrefix("mediaengine_\(name) ") || $0.hasPrefix("mediaengine_\(name){") }
                    .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0) } ?? 0
            }
            let rtxSent = value("rtx_packets_sent_total")
            let answered = value("rtx_packets_retransmitted_total")

            let last = try #require(report.samples.last?.stats?.participants["alice"], "\(report.samples.last.debugDescription)")
            let earlier = report.samples.dropLast(3).last?.stats?.participants["alice"]?.framesDecoded ?? 0
            // Chrome's own figures, from one sample: with RTX, packetsLost counts every VP8
            // packet that did not come on the media SSRC, repaired or not, and
            // retransmittedPacketsReceived every packet that came on RTX. A packet whose first
            // RTX copy was late could be answered twice (the server's sends beyond the distinct
            // packets it answered), so at most that many copies are duplicates.
            let lost = last.videoPacketsLost ?? 0
            let received = last.retransmittedPacketsReceived ?? 0
            let resends = rtxSent - answered
            let recovered = Double(min(lost, received - resends)) / Double(max(1, lost))
            print("Chromium RTX: the kernel dropped \(mediaDropped) VP8 packets and let \(rtxArrived) RTX packets in (counted until the scrape); "
                + "Chrome lost \(lost) VP8 packets and received \(received) on RTX (rtxSsrc \(last.rtxSsrc.map(String.init) ?? "none")), "
                + "sent \(last.nackCount ?? 0) NACKs, \(last.pliCount ?? 0) PLIs, \(last.freezeCount ?? 0) freezes (\(last.totalFreezesDuration ?? 0) s), "
                + "decoded \(last.framesDecoded ?? 0) frames of \(last.frameWidth ?? 0) px; the server answered \(answered) packets with \(rtxSent) "
                + "RTX packets: \(Int(recovered * 1000) / 10) % of lost VP8 packets recovered through RTX")
            #expect(lost >= 40 && mediaDropped >= lost, "5 % of 20 s of 480p video: Chrome lost \(lost), the kernel dropped \(mediaDropped)")
            #expect(last.rtxSsrc != nil, "Chrome took the RTX stream the answer announced")
            #expect(recovered >= 0.95, "recovered \(received) - \(resends) of \(lost)")
            #expect((last.framesDecoded ?? 0) - earlier >= 30, "still decoding at the end: \(earlier) -> \(last.framesDecoded ?? 0) over 3 s")
            #expect(last.frameWidth == 640)
            alice.interrupt()
            _ = try? alice.wait(timeout: 20)
        }
    }
}
