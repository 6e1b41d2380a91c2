@testable import MediaEngine
@testable import MediaRouting
@testable import MediaSimulation
import Testing
import TestSupport

/// Simulcast through the router, in virtual time: a publisher sends three sizes (each with
/// three temporal layers), and each subscriber gets the one its bandwidth and its shown size
/// allow, switched at keyframes into one continuous stream.
@Suite struct ForwardingRouterSimulcast {
    static let layers = [
        MeetingCoreHarness.SimulcastLayer(width: 160, height: 90, bitrate: 50_000),
        MeetingCoreHarness.SimulcastLayer(width: 320, height: 180, bitrate: 250_000),
        MeetingCoreHarness.SimulcastLayer(width: 640, height: 360, bitrate: 1_000_000),
    ]

    static func capped(_ kbps: Int?) -> ImpairmentSettings {
        var settings = ImpairmentSettings()
        settings.rateKbps = kbps
        return settings
    }

    /// The longest time between two frames of `publisher` decoded by `viewer` from `start`
    /// to `end` (counting the edges).
    static func longestFreeze(_ viewer: MeetingCoreHarness.Participant, of publisher: String, from start: Duration, to end: Duration) -> Duration {
        let times = [start] + (viewer.decodedAt[publisher] ?? []).filter { $0 > start && $0 <= end } + [end]
        return zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? end - start
    }

    /// The figure: subscribers behind 150 kb/s, 500 kb/s and an uncapped link each
    /// settle on the layer that fits (the estimate, less the audio's allowance, against
    /// each layer's measured rate), decode pictures of its size, and none freezes for more
    /// than a second after its last switch.
    @Test func eachSubscriberSettlesOnTheLayerItsLinkCarries() async throws {
        try await Heavy.runAlone { try settles() }
    }

    func settles() throws {
        let meeting = MeetingCoreHarness()
        let alice = try meeting.join("alice", frequency: 440, video: true, temporalLayers: 3, simulcast: Self.layers)
        let viewers = try [("bob", 150), ("carol", 500), ("dave", nil)].map { name, kbps in
            try meeting.join(name, frequency: 0, publishing: false, downlink: Self.capped(kbps))
        }
        try meeting.run(until: .seconds(10))
        let rates = (0..<3).map { meeting.router.layerRates(ofLeg: alice.leg, spatial: $0) }
        var samples: [[Int]] = []
        var estimates: [[Int]] = []
        for step in 1...40 {
            try meeting.run(until: .seconds(10) + .milliseconds(250) * step)
            samples.append(viewers.map { meeting.router.forwardedVideo(to: $0.leg, from: alice.leg).spatial })
            estimates.append(viewers.map { meeting.router.estimatedBitrate(ofLeg: $0.leg) ?? 0 })
        }
        let report = "layer rates \(rates); estimates \(estimates.last ?? [])"
        for (index, viewer) in viewers.enumerated() {
            let on = samples.filter { $0[index] == index }.count
            #expect(on * 5 >= samples.count * 4, "\(viewer.name) on layer \(index) in \(on) of \(samples.count) samples: \(samples.map { $0[index] }); \(report)")
            let picture = try #require(viewer.lastPicture["alice"])
            #expect(picture.width == Self.layers[index].width && picture.height == Self.layers[index].height,
                    "\(viewer.name) decodes \(picture.width)x\(picture.height)")
            let video = meeting.router.forwardedVideo(to: viewer.leg, from: alice.leg)
            print("simulcast: \(viewer.name) gets layer \(video.spatial) (temporal \(video.temporal)) after \(video.switches) switches, \(picture.width)x\(picture.height); \(report)")
        }
        // Freezes: from 4 s on (every subscriber has moved to its layer by then), the longest
        // time without a decoded picture.
        for viewer in viewers {
            let freeze = Self.longestFreeze(viewer, of: "alice", from: .seconds(4), to: meeting.now)
            print("simulcast: \(viewer.name)'s longest freeze from 4 s: \(freeze)")
            #expect(freeze <= .seconds(1), "\(viewer.name) froze for \(freeze)")
        }
    }
}
