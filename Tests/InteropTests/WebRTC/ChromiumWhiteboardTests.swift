import Foundation
import Testing
import TestSupport

/// The web client's shared whiteboard in headless Chromium: three pages draw in one
/// real-time conference of a `mediaengine server` on 127.0.0.1, beside `mediaengine rts join`,
/// which prints what they draw as lines of JSON. No media flows, so no namespace lab: the
/// pages reach the server over loopback, each with its own DevTools port.
@Suite(.serialized) struct ChromiumWhiteboard {
    typealias Report = ChromiumWHEP.Report

    /// Colours as the canvas reads them back (`ink` gives "#rrggbb").
    static let red = "#dd0000", blue = "#0000dd", green = "#00aa00", yellow = "#ddaa00", white = "#ffffff"
    /// Where each colour's stroke crosses x = 250 (strokes run from x = 100 to 400).
    static let rows = [red: 100, blue: 300, green: 500, yellow: 600]

    /// The page's board once it joined (the page makes it as its script runs).
    static let board = "(new Promise((resolve) => { const poll = () => (window.mediaEngine && window.mediaEngine.board) ? "
        + "resolve(window.mediaEngine.board) : setTimeout(poll, 50); poll(); })).then((b) => b.ready.then(() => b))"

    /// An expression drawing a horizontal stroke of `colour` on its row.
    static func stroke(_ colour: String) -> String {
        let y = rows[colour]!
        return "b.draw([[100, \(y)], [175, \(y)], [250, \(y)], [325, \(y)], [400, \(y)]], '\(colour)')"
    }

    /// An expression that waits (up to `seconds`) until the pixel under each stroke is that
    /// stroke's colour, or white for `absent` colours; it gives JSON: whether it held, and
    /// the colour under each stroke.
    static func shows(_ present: [String], absent: [String], seconds: Int) -> String {
        let checks = present.map { "b.ink(250, \(rows[$0]!)) === '\($0)'" } + absent.map { "b.ink(250, \(rows[$0]!)) === '\(white)'" }
        let inks = rows.sorted { $0.value < $1.value }.map { "'\($0.value)': b.ink(250, \($0.value))" }.joined(separator: ", ")
        return "b.until(() => \(checks.joined(separator: " && ")), \(seconds * 1_000)).then((held) => JSON.stringify({ held, inks: { \(inks) }, stats: b.stats() }))"
    }

    static func page(_ url: String, seconds: Int, actions: [(Int, String)]) throws -> BackgroundProcess {
        let process = try BackgroundProcess(executable: Aiortc.python, arguments: [ChromiumWHEP.driver.path, "--seconds", "\(seconds)", "--port", "0"]
                                                + actions.flatMap { ["--action", "\($0.0):\(Self.board).then((b) => \($0.1))"] }, input: true)
        try process.write(url + "\n")
        return process
    }

    struct Check: Decodable {
        var held: Bool
        var inks: [String: String]
    }

    @Test func pagesSeeEachOthersStrokesALateJoinerSeesThemAllUndoAndClearReachEveryoneAndTheCLIReadsJSON() async throws {
        try await Heavy.run {
            let setup = try ServerSetup(serverOptions: ["--host", "127.0.0.1"])
            defer { setup.finish() }
            func token(_ account: String) throws -> String {
                try String(contentsOfFile: try setup.tokenFile(account), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            // dan (the CLI) reserves the board and stays in it from the start.
            let reserve = try CLI.run(["rts", "reserve", "board", "--server", setup.url, "--token-file", try setup.tokenFile("dan")])
            #expect(reserve.status == 0, "\(reserve.stderr)")
            let dan = try CLI.start(["rts", "join", "board", "--stay", "--server", setup.url, "--token-file", try setup.tokenFile("dan")])
            #expect(dan.waitForOutput(containing: "rts: joined board", timeout: 20), "\(dan.stderr)")
            func url(_ account: String) throws -> String { "\(setup.httpURL)/#board=board&token=\(try token(account))" }

            // ann and ben draw at once; ben also draws green and takes it back. Each waits to see
            // the other's stroke; ann clears the board once cat (the late joiner) drew.
            // Each page stays until its last action is done (the actions wait for what they check),
            // so ann and ben are there to give cat the board when she joins.
            let ann = try Self.page(try url("ann"), seconds: 4, actions: [
                (1, Self.stroke(Self.red)),
                (2, Self.shows([Self.red, Self.blue], absent: [Self.green], seconds: 20)),
                (3, "b.until(() => b.ink(250, \(Self.rows[Self.yellow]!)) === '\(Self.yellow)', 25000).then(() => b.clear())"
                    + ".then(() => " + Self.shows([], absent: [Self.red, Self.blue, Self.green, Self.yellow], seconds: 10) + ")"),
            ])
            let ben = try Self.page(try url("ben"), seconds: 4, actions: [
                (1, "[\(Self.stroke(Self.blue)), \(Self.stroke(Self.green)), b.undo()]"),
                (2, Self.shows([Self.red, Self.blue], absent: [Self.green], seconds: 20)),
                (3, "b.until(() => b.stats().shown === 0 && b.stats().operations > 5, 25000).then(() => "
                    + Self.shows([], absent: [Self.red, Self.blue, Self.green, Self.yellow], seconds: 1) + ")"),
            ])
            // cat opens the page once both drew and ben took his green back (dan printed it all).
            for (what, text) in [("red", Self.red), ("blue", Self.blue), ("the undo", "\"t\":\"undo\"")] {
                #expect(dan.waitForOutput(containing: text, timeout: 30), "dan never read \(what): \(dan.stdout.prefix(2_000))")
            }
            let cat = try Self.page(try url("cat"), seconds: 3, actions: [
                (1, Self.shows([Self.red, Self.blue], absent: [Self.green], seconds: 20)
                    + ".then((seen) => { \(Self.stroke(Self.yellow)); return seen; })"),
                (2, "b.until(() => b.stats().shown === 0, 25000).then(() => "
                    + Self.shows([], absent: [Self.red, Self.blue, Self.green, Self.yellow], seconds: 1) + ")"),
            ])
            var reports: [String: Report] = [:]
            for (name, process) in [("ann", ann), ("ben", ben), ("cat", cat)] {
                reports[name] = try ChromiumMeeting.report(of: process, timeout: 90)
            }
            func checks(_ name: String) throws -> [Check] {
                try (reports[name]?.actions ?? []).compactMap(\.result).filter { $0.hasPrefix("{") }
                    .map { try JSONDecoder().decode(Check.self, from: Data($0.utf8)) }
            }
            for name in ["ann", "ben", "cat"] {
                let found = try checks(name)
                #expect(found.count == 2 && found.allSatisfy(\.held),
                        "\(name): \(reports[name]?.actions ?? []) \(reports[name]?.status ?? "") \(reports[name]?.console ?? [])")
                #expect(reports[name]?.console.isEmpty == true, "\(name): \(reports[name]?.console ?? [])")
            }
            // Each page's first check: the strokes of both (ann's red, ben's blue) and not ben's
            // green; cat saw them though she opened the page after they were drawn. The
            // second: a white board everywhere after ann's clear.
            for name in ["ann", "ben", "cat"] {
                let first = try checks(name).first?.inks ?? [:]
                #expect(first["100"] == Self.red && first["300"] == Self.blue && first["500"] == Self.white, "\(name): \(first)")
                let last = try checks(name).last?.inks ?? [:]
                #expect(Set(last.values) == [Self.white], "\(name) after the clear: \(last)")
            }

            // dan saw every operation as one line of JSON.
            dan.interrupt()
            let run = try dan.wait(timeout: 20)
            let operations = run.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(operations.count == run.stdout.split(separator: "\n").count, "every line is JSON: \(run.stdout.prefix(2_000))")
            func strokes(of author: String, _ colour: String) -> [[String: Any]] {
                operations.filter { $0["t"] as? String == "stroke" && $0["author"] as? String == author && $0["color"] as? String == colour }
            }
            #expect(!strokes(of: "ann", Self.red).isEmpty && !strokes(of: "ben", Self.blue).isEmpty && !strokes(of: "cat", Self.yellow).isEmpty)
            let green = strokes(of: "ben", Self.green).first?["id"] as? String
            #expect(green != nil && operations.contains { $0["t"] as? String == "undo" && $0["target"] as? String == green })
            #expect(operations.contains { $0["t"] as? String == "clear" && $0["author"] as? String == "ann" })
            print("whiteboard: dan read \(operations.count) operations; cat's first check \(try checks("cat").first?.inks ?? [:])")
        }
    }

    /// Two `mediaengine server` nodes sharing one PostgreSQL: ann's page is served by node 1,
    /// ben's by node 2. Whichever page reserves the board first places it on its node; the
    /// other page's join is refused as misdirected there, and it opens its data connection
    /// to the hosting node and joins. Each page shows the other's stroke.
    @Test func pagesServedByTwoClusterNodesDrawOnOneBoard() async throws {
        try await Heavy.run {
            let postgres = try PostgresTestServer()
            let directory = try temporaryDirectory("cluster-board")
            defer { try? FileManager.default.removeItem(at: directory) }
            let passwordFile = try ServerSetup.writeToken(postgres.password, to: directory.appendingPathComponent("pgpassword").path)
            let secret = directory.appendingPathComponent("secret").path
            let store = "postgres://\(postgres.user)@127.0.0.1:\(postgres.port)/postgres"
            func node(_ name: String) throws -> (BackgroundProcess, String) {
                try ServerSetup.startServer(["--host", "127.0.0.1", "--port", "0", "--secret-file", secret, "--store", store,
                                             "--store-password-file", passwordFile, "--node-id", name, "--no-live", "--duration", "120"])
            }
            let (one, oneURL) = try node("node-1")
            defer { one.interrupt(); _ = try? one.wait(timeout: 10) }
            let (two, twoURL) = try node("node-2")
            defer { two.interrupt(); _ = try? two.wait(timeout: 10) }
            func page(_ url: String, _ account: String) throws -> String {
                let token = try CLI.run(["token", "--account", account, "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                return "http" + url.dropFirst("ws".count).dropLast() + "/#board=board&token=\(token)"
            }
            let ann = try Self.page(try page(oneURL, "ann"), seconds: 3, actions: [
                (1, Self.stroke(Self.red)),
                (2, Self.shows([Self.red, Self.blue], absent: [], seconds: 20)),
            ])
            let ben = try Self.page(try page(twoURL, "ben"), seconds: 3, actions: [
                (1, Self.stroke(Self.blue)),
                (2, Self.shows([Self.red, Self.blue], absent: [], seconds: 20)),
            ])
            for (name, process) in [("ann", ann), ("ben", ben)] {
                let report = try ChromiumMeeting.report(of: process, timeout: 60)
                let checks = try (report.actions ?? []).compactMap(\.result).filter { $0.hasPrefix("{") }
                    .map { try JSONDecoder().decode(Check.self, from: Data($0.utf8)) }
                #expect(checks.count == 1 && checks.allSatisfy(\.held), "\(name): \(report.actions ?? []) \(report.status) \(report.console)")
                #expect(checks.first?.inks["100"] == Self.red && checks.first?.inks["300"] == Self.blue, "\(name): \(checks)")
                #expect(report.console.isEmpty, "\(name): \(report.console)")
            }
        }
    }
}
