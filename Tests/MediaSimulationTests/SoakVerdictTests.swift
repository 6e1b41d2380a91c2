@testable import MediaEngine
@testable import MediaSimulation
import Testing

/// How `bench soak` judges a run: the slope of resident memory after the warm-up, growth
/// of descriptors and threads, and audio loss, each against its limit.
@Suite struct SoakVerdictTests {
    /// A sample a minute for `minutes`, memory rising `megabytesPerMinute` after a jump
    /// at the start (the warm-up).
    static func run(minutes: Int, megabytesPerMinute: Double, descriptors: (Int) -> Int = { _ in 20 }, threads: (Int) -> Int = { _ in 11 },
                    lost: Int = 0) -> [SoakSample] {
        (0...minutes).map { minute in
            let resident = 100e6 + (minute == 0 ? -30e6 : 0) + Double(minute) * megabytesPerMinute * 1e6
            return SoakSample(elapsedSeconds: Double(minute) * 60, residentBytes: Int(resident), openFileDescriptors: descriptors(minute),
                              threads: threads(minute), audioPacketsReceived: minute * 3_000, audioPacketsLost: minute == minutes ? lost : 0)
        }
    }

    @Test func aFlatRunPassesAndItsWarmUpIsLeftOut() {
        let verdict = SoakVerdict.judge(Self.run(minutes: 60, megabytesPerMinute: 0), warmUpSeconds: 120)
        #expect(verdict.passed, "\(verdict.failures)")
        #expect(verdict.samplesJudged == 59)
        #expect(abs(verdict.residentSlopeMBPerHour) < 1e-9, "the 30 MB jump at the start is warm-up")
        #expect(verdict.descriptorGrowth == 0 && verdict.threadGrowth == 0 && verdict.audioLossPercent == 0)
    }

    @Test func memoryThatGrowsFailsWithItsSlope() {
        let verdict = SoakVerdict.judge(Self.run(minutes: 30, megabytesPerMinute: 0.5), warmUpSeconds: 60)
        #expect(abs(verdict.residentSlopeMBPerHour - 30) < 1e-6)
        #expect(verdict.failures == ["resident memory grows 30.0 MB/h (limit 20.0)"])
        var limits = SoakVerdict.Limits()
        limits.residentSlopeMBPerHour = 40
        #expect(SoakVerdict.judge(Self.run(minutes: 30, megabytesPerMinute: 0.5), warmUpSeconds: 60, limits: limits).passed)
    }

    @Test func descriptorsThreadsAndLossAreJudgedFromTheFirstSampleAfterTheWarmUp() {
        let samples = Self.run(minutes: 10, megabytesPerMinute: 0, descriptors: { 20 + $0 }, threads: { $0 == 0 ? 40 : 11 + $0 / 5 },
                               lost: 1_000)
        let verdict = SoakVerdict.judge(samples, warmUpSeconds: 60)
        #expect(verdict.descriptorGrowth == 9)
        #expect(verdict.threadGrowth == 2, "40 threads during the warm-up do not count")
        #expect(abs(verdict.audioLossPercent - 100.0 * 1_000 / 31_000) < 1e-9)
        #expect(verdict.failures.count == 2, "\(verdict.failures)")
        #expect(verdict.failures.contains("open descriptors grew by 9 (limit 2)"))
        #expect(verdict.failures.contains { $0.hasPrefix("audio loss 3.23 %") })
    }

    @Test func tooFewSamplesFail() {
        let verdict = SoakVerdict.judge(Self.run(minutes: 3, megabytesPerMinute: 0), warmUpSeconds: 120)
        #expect(verdict.samplesJudged == 2)
        #expect(verdict.failures == ["2 samples after the 120 s warm-up: at least 3 are needed"])
    }

    @Test func thisProcessIsMeasuredFromProc() throws {
        let usage = try ProcessResources.current()
        #expect(usage.residentBytes > 1_000_000)
        #expect(usage.threads >= 1)
        #expect(usage.openFileDescriptors >= 3, "standard input, output and error at least")
        let socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        let more = try ProcessResources.current()
        socket.close()
        #expect(more.openFileDescriptors >= usage.openFileDescriptors, "a socket is a descriptor more (others may open and close meanwhile)")
    }
}
