import Foundation
import TestSupport
import Testing

@Suite struct NetsimCommand {
    @Test func gridIsDeterministicAndLossShows() async throws {
        try await Heavy.run {
            let arguments = ["netsim", "--loss", "0,10", "--jitter", "0", "--seconds", "4", "--json", "--seed", "3"]
            let first = try CLI.run(arguments)
            #expect(first.status == 0, "\(first.stderr)")
            let cells = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [[String: Any]])
            #expect(cells.count == 2)
            let clean = cells[0]
            let lossy = cells[1]
            #expect(clean["audioConcealmentPercent"] as? Double ?? 1 < 0.5)
            #expect(clean["videoFreezes"] as? Int == 0)
            #expect((lossy["audioConcealmentPercent"] as? Double ?? 0) > 1)
            #expect((lossy["videoRecoveredPercent"] as? Double ?? 0) > 80)
            #expect(try CLI.run(arguments).stdout == first.stdout, "same options and seed, same table")
        }
    }

    @Test(arguments: [(["--loss", "120"], "--loss '120'"), (["--jitter", "x"], "--jitter 'x'"),
                      (["--seconds", "0"], "--seconds 0.0")])
    func badGridsAreNamed(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(["netsim"] + arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }
}
