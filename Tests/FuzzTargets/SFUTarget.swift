import MediaEngine
import MediaRouting

/// The SFU's per-packet path: `ForwardingRouter.handleDatagram` on a meeting of three legs
/// (two publishing audio and video, one audience), as the server's UDP port feeds it.
enum SFUTarget {
    static let target = FuzzTarget(
        name: "sfu",
        summary: "ForwardingRouter with 3 legs: a script of datagrams (raw, SRTP/SRTCP-protected with a leg's key, signed ICE checks) from legs and a stranger, time, and legs leaving, rejoining, muting; checks where and how much it sends"
    ) { bytes in
        _ = SFUTarget.cryptoKeeper
        var meeting = Meeting()
        meeting.run(FuzzInput(bytes))
        return meeting.router.counters.packetsForwarded + meeting.router.counters.bindingsAnswered > 0
    }

    /// Debian's libsrtp2 does its crypto through NSS, which it starts with each context and
    /// shuts down, unloading NSS's modules, when the last context goes: without a context
    /// that outlives the inputs, every input paid a dlopen and dlclose, half of its time.
    nonisolated(unsafe) static let cryptoKeeper = try! SRTPContext(
        keying: SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: [UInt8](repeating: 1, count: 28)), direction: .outbound)

    /// Where datagrams come from: the legs' clients and a stranger.
    static let sources = (1...4).map { SocketAddress(addressBytes: [198, 51, 100, UInt8($0)], port: 5_000)! }

    struct Leg {
        let setup: ForwardingRouter.LegSetup
        /// The client's uplink context, for datagrams the script protects.
        let uplink: SRTPContext
        let clientICE: ICECredentials
    }

    struct Meeting {
        let router: ForwardingRouter
        var legs: [Leg] = []
        /// Whether each leg is open in the router now.
        var open: [Bool] = []
        var now = Duration.zero
        /// Sources a signed check joined to a leg: the only destinations besides bindings.
        var joined: Set<SocketAddress> = []
        var checks: UInt64 = 0

        init() {
            var configuration = ForwardingRouter.Configuration()
            configuration.seed = 7
            configuration.ntpEpoch = NTPTime.from(seconds: 1_700_000_000, nanoseconds: 0)
            // Small queues and histories: each input builds a router of its own.
            configuration.transmitCapacity = 32
            configuration.retransmissionHistory = 16
            // Each leg's estimator otherwise zeroes an 8,192-packet history: with the
            // transmit queues that was most of an input's time (680 inputs/s).
            configuration.subscriberBandwidth.historySize = 64
            router = ForwardingRouter(configuration: configuration)
            for index in 0..<3 {
                let uplinkKey = try! SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: (0..<28).map { UInt8(index * 31 + $0) })
                let downlinkKey = try! SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: (0..<28).map { UInt8(200 - index * 17 + $0) })
                let id = UInt64(index + 1)
                let setup = ForwardingRouter.LegSetup(
                    id: id, meeting: 77, account: "user\(id)", publishing: index < 2, audioSSRC: UInt32(id) << 8 | 1,
                    videoSSRC: index < 2 ? UInt32(id) << 8 | 2 : nil, inboundKeying: uplinkKey, outboundKeying: downlinkKey,
                    ice: ICECredentials(ufrag: "leg\(id)", password: "leg-password-\(id)-0123456789ab"))
                legs.append(Leg(setup: setup, uplink: try! SRTPContext(keying: uplinkKey, direction: .outbound),
                                clientICE: ICECredentials(ufrag: "client\(id)", password: "client-password-\(id)-012345")))
                open.append(false)
                join(index)
            }
        }

        /// Opens `leg` (again) as the server does when a participant joins: forwarding both
        /// ways with every open leg, then the participant's check from its address.
        mutating func join(_ index: Int) {
            guard !open[index], (try? router.addLeg(legs[index].setup, now: now)) != nil else { return }
            open[index] = true
            let id = legs[index].setup.id
            for other in legs.indices where other != index && open[other] {
                router.setForwarding(subscriber: id, publisher: legs[other].setup.id, audio: true, video: true, now: now)
                router.setForwarding(subscriber: legs[other].setup.id, publisher: id, audio: true, video: true, now: now)
            }
            check(leg: index, from: SFUTarget.sources[index])
        }

        /// What the signaling side does to legs: leave, join, start or stop publishing,
        /// mute or unmute a publisher for a subscriber.
        mutating func control(_ operation: UInt8, leg index: Int) {
            let id = legs[index].setup.id
            let other = legs[(index + 1) % legs.count].setup.id
            switch operation % 4 {
            case 0:
                router.removeLeg(id, now: now)
                open[index] = false
            case 1: join(index)
            case 2: router.setPublishing(id, operation & 0x10 != 0, now: now)
            default: router.setForwarding(subscriber: id, publisher: other, audio: operation & 0x10 != 0, video: operation & 0x20 != 0, now: now)
            }
            drain(after: nil, from: SFUTarget.sources[3])
        }

        /// Opcode: bits 0-1 the source, bits 2-4 what to do, the rest the leg used.
        mutating func run(_ script: FuzzInput) {
            var input = script
            var steps = 0
            while !input.isAtEnd && steps < 512 {
                steps += 1
                let opcode = input.byte()
                let source = SFUTarget.sources[Int(opcode & 0x03)]
                let leg = Int(opcode >> 5) % legs.count
                switch (opcode >> 2) & 0x07 {
                case 0, 1: deliver(input.chunk(), from: source)
                case 2, 3: deliver(protect(input.chunk(), leg: leg, stamp: opcode & 0x04 != 0), from: source)
                case 4: deliver(protectRTCP(input.chunk(), leg: leg), from: source)
                case 5: check(leg: leg, from: source)
                case 6: control(input.byte(), leg: leg)
                default:
                    now += .milliseconds(Int(input.byte()) * 4)
                    router.handleTimeout(now: now)
                    drain(after: nil, from: source)
                }
            }
        }

        /// A connectivity check signed for `leg`'s credentials from `source`.
        mutating func check(leg index: Int, from source: SocketAddress) {
            let leg = legs[index]
            checks += 1
            let transactionID = STUNTransactionID((0..<12).map { UInt8(truncatingIfNeeded: checks &* 37 &+ UInt64($0)) })!
            let key = try! STUNIntegrityKey.shortTerm(password: leg.setup.ice.password)
            let request = STUNMessage(type: .bindingRequest, transactionID: transactionID, attributes: [
                .username("\(leg.setup.ice.ufrag):\(leg.clientICE.ufrag)"), .priority(0x6E00_01FF), .iceControlling(42), .useCandidate,
            ]).serialized(integrity: key, fingerprint: true)
            joined.insert(source)
            deliver(request, from: source)
        }

        /// `plain` as the client of `leg` would send it: SRTP with its uplink key; with
        /// `stamp`, the leg's SSRC written in first: video for payload type 96 (VP8), else audio.
        func protect(_ plain: [UInt8], leg index: Int, stamp: Bool) -> [UInt8] {
            guard plain.count >= 12 else { return plain }
            var packet = plain + [UInt8](repeating: 0, count: SRTPContext.trailerCapacity)
            if stamp {
                let ssrc = plain[1] & 0x7F == 96 ? legs[index].setup.videoSSRC ?? 0 : legs[index].setup.audioSSRC
                for byte in 0..<4 { packet[8 + byte] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * byte)) }
            }
            let context = legs[index].uplink
            let size = packet.withUnsafeMutableBytes { (try? context.protect($0, length: plain.count)) ?? -1 }
            return size < 0 ? plain : Array(packet[0..<size])
        }

        /// `plain` as SRTCP with `leg`'s uplink key.
        func protectRTCP(_ plain: [UInt8], leg index: Int) -> [UInt8] {
            guard plain.count >= 8 else { return plain }
            var packet = plain + [UInt8](repeating: 0, count: SRTPContext.trailerCapacity)
            let context = legs[index].uplink
            let size = packet.withUnsafeMutableBytes { (try? context.protectRTCP($0, length: plain.count)) ?? -1 }
            return size < 0 ? plain : Array(packet[0..<size])
        }

        mutating func deliver(_ datagram: [UInt8], from source: SocketAddress) {
            var copy = datagram
            copy.withUnsafeMutableBytes { router.handleDatagram($0, from: source, now: now) }
            drain(after: datagram, from: source)
        }

        /// Takes what the router sends and checks it: only to joined sources (and binding
        /// answers to the asker), never an answer larger than its request, never a
        /// forwarded packet larger than the one that came in, and at most one copy per
        /// other leg.
        mutating func drain(after datagram: [UInt8]?, from source: SocketAddress) {
            let inputKind = datagram.map { bytes in bytes.withUnsafeBytes { DatagramKind($0) } }
            var forwardedBytes = 0
            router.drainTransmits { transmit in
                let size = transmit.bytes.count
                FuzzCheck.require(joined.contains(transmit.destination) || transmit.destination == source,
                                  "the router sent \(size) bytes to \(transmit.destination), which never checked in")
                guard let datagram else { return }
                if !joined.contains(transmit.destination) {
                    FuzzCheck.require(transmit.kind == .stun && size <= datagram.count,
                                      "the router sent a stranger \(size) bytes (\(transmit.kind)) for \(datagram.count)")
                }
                if inputKind == .stun && transmit.kind == .stun {
                    FuzzCheck.require(size <= datagram.count, "a \(size)-byte STUN answer to \(datagram.count) bytes")
                }
                if inputKind == .rtp && transmit.kind == .rtp {
                    FuzzCheck.require(size <= datagram.count, "a \(datagram.count)-byte packet forwarded as \(size) bytes")
                    forwardedBytes += size
                }
            }
            if let datagram, inputKind == .rtp {
                FuzzCheck.require(forwardedBytes <= datagram.count * (legs.count - 1),
                                  "\(forwardedBytes) bytes forwarded for one \(datagram.count)-byte packet")
            }
            while router.pollReport() != nil {}
        }
    }
}
