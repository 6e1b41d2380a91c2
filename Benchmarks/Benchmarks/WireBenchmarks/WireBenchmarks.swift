// MediaEngine's wire layer: RTP parsing and serializing on its own (Swift only; the goal
// is no allocation per packet), SRTPContext against the same libsrtp2 calls made from C
// (the SRTPBaseline target), and the same SRTP round trips through a TURN client's
// ChannelData framing, in one run, on identical inputs prepared before measuring.
//
// One benchmark iteration is one packet: one parse + serialize, or one protect +
// unprotect pair. Each sample runs 1000 of them (scalingFactor .kilo); the table shows
// per-packet values, `--scale` per-sample values. See README.md.

import Benchmark
import BenchmarkSupport
import MediaEngine
import SRTPFixtures

let benchmarks: @Sendable () -> Void = {
    let metrics = standardMetrics

    // Iteration counts, not durations, bound every run, so that both sides of a pair
    // process exactly the same packets; maxDuration is only a safety net.
    let rtp = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 10,
                                      scalingFactor: .kilo, maxDuration: .seconds(30), maxIterations: 2_000)
    let srtp = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 2,
                                       scalingFactor: .kilo, maxDuration: .seconds(30), maxIterations: 200)

    // MARK: RTP: a 200-byte packet with audio level (ID 1) and transport-wide sequence (ID 3)

    Benchmark("RTP parse + serialize (Swift)", configuration: rtp) { (benchmark: Benchmark, fixture: RTPForwarding) throws in
        try measure(benchmark) { try fixture.forwardNext() }
    } setup: {
        let fixture = try RTPForwarding()
        try checkRTPForwarding()
        return fixture
    }

    // MARK: SRTP: protect + unprotect of one RTP packet, per profile and size

    for profile in WireSettings.srtpProfiles {
        for size in WireSettings.srtpPacketSizes {
            let name = "SRTP \(profile) \(size) B"
            Benchmark("\(name) (Swift)", configuration: srtp) { (benchmark: Benchmark, fixture: SwiftSRTPRoundTrip) throws in
                try measure(benchmark) { try fixture.roundTripNext() }
            } setup: {
                try SwiftSRTPRoundTrip(profile: profile, size: size)
            }

            Benchmark("\(name) (C)", configuration: srtp) { (benchmark: Benchmark, fixture: BaselineSRTPRoundTrip) throws in
                try measure(benchmark) { try fixture.roundTripNext() }
            } setup: {
                try checkSRTPAgreement(profile: profile, size: size)
                return try BaselineSRTPRoundTrip(profile: profile, size: size)
            }

            // The same packets through a TURN relay's client side (issue 16): against the
            // Swift pair above, what ChannelData framing and unwrapping add.
            Benchmark("Relay \(name) (Swift)", configuration: srtp) { (benchmark: Benchmark, fixture: RelayedSRTPRoundTrip) throws in
                try measure(benchmark) { try fixture.roundTripNext() }
            } setup: {
                try checkRelayedRoundTrip(profile: profile, size: size)
                return try RelayedSRTPRoundTrip(profile: profile, size: size)
            }
        }
    }

    // MARK: DTLS-SRTP: one whole handshake, both ends in this process (issue 33)

    // One iteration is one handshake through DTLSEndpoint and one through the same OpenSSL
    // calls from C, alternating, each timed on this thread's CPU clock: this VM's speed
    // changes by half from one second to the next (a handshake takes 1.9 or 2.9 ms, in
    // runs of hundreds), and only interleaving gives both sides the same mix. Handshakes
    // per second per core are 1 s / the handshake's time; the server end's calls alone are
    // the server metrics.
    let dtls = Benchmark.Configuration(metrics: [.mallocCountTotal] + DTLSMetrics.all, timeUnits: .microseconds,
                                       warmupIterations: 5, maxDuration: .seconds(60), maxIterations: 600)
    Benchmark("DTLS handshake (Swift, then C)", configuration: dtls) { (benchmark: Benchmark, fixture: DTLSHandshakePair) throws in
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try fixture.next(benchmark))
        }
        benchmark.stopMeasurement()
    } setup: {
        try DTLSHandshakePair()
    }

    // MARK: TURN ChannelData alone: frame + unwrap of an SRTP-sized payload (no allocation)

    for size in WireSettings.srtpPacketSizes {
        let payloadSize = size + SRTPProfile.aesCM128HMACSHA1_80.rtpOverhead
        Benchmark("TURN ChannelData \(payloadSize) B (Swift)", configuration: rtp) { (benchmark: Benchmark, fixture: ChannelDataRoundTrip) throws in
            try measure(benchmark) { try fixture.roundTripNext() }
        } setup: {
            try ChannelDataRoundTrip(size: payloadSize)
        }
    }
}


/// The settings the wire benchmarks use.
enum WireSettings {
    /// The extension IDs of RTPExtensionMap.standard.
    static let audioLevelID: UInt8 = 1
    static let transportSequenceID: UInt8 = 3

    /// RTP packets parsed in turn: one second of 20 ms packets.
    static let rtpPacketCount = 50
    /// Total size of each RTP packet: 24-byte header (12 fixed, 4 extension header,
    /// 8 extension data) and a 176-byte payload.
    static let rtpPacketSize = 200

    static let srtpProfiles: [SRTPProfile] = [.aesCM128HMACSHA1_80, .aeadAES128GCM]
    /// Whole RTP packets: a 12-byte header and the rest payload.
    static let srtpPacketSizes = [200, 1_200]

    static let ssrc: UInt32 = 0x1234_5678
}

