import MediaEngine

/// What rides with a packet one forwarding worker hands another (a `HandoffRing` slot's header).
public struct WorkerHandoff: Sendable {
    public enum Kind: UInt8, Sendable {
        /// A datagram from a leg the receiving worker owns that reached another worker's
        /// port (sent to the wrong one): handle it as if read here.
        case datagram
        /// A publisher's media packet, decrypted on its leg's worker: forward it to this
        /// worker's subscribers of the leg.
        case audio
        case video
    }

    public var kind: Kind
    /// `datagram`: where it came from.
    public var source: SocketAddress
    /// `audio` and `video`: the publisher's leg.
    public var leg: UInt64
    /// `video`: its simulcast layer (0 unless simulcast).
    public var layer: UInt8
    /// When the datagram it came in arrived at the server (the kernel's stamp, on the
    /// workers' clock): the receiving worker times its forwarding latency from there,
    /// handoff included, and a handed datagram's feedback reports it.
    public var arrival: Duration

    public init(kind: Kind, source: SocketAddress, leg: UInt64, layer: UInt8 = 0, arrival: Duration = .zero) {
        self.kind = kind
        self.source = source
        self.leg = leg
        self.layer = layer
        self.arrival = arrival
    }
}

/// What forwarding workers tell each other about their legs, now and then (never per packet).
public enum WorkerMessage: Sendable, Hashable {
    /// A check proved `address` for a leg of `worker`: datagrams from it go there.
    case addressLearned(SocketAddress, worker: Int)
    /// `address` leads to no leg any more.
    case addressForgotten(SocketAddress)
    /// A subscriber on `worker` wants (or no longer wants) leg `leg`'s stream of `kind`.
    case subscribe(leg: UInt64, kind: MediaKind, worker: Int, Bool)
    /// Subscribers elsewhere want a keyframe of leg `leg`'s video (of its simulcast layer `layer`).
    case keyframe(leg: UInt64, layer: Int)
    /// The simulcast layers of leg `leg`'s video that subscribers on `worker` can use (a bit
    /// per layer, lowest first).
    case wantedLayers(leg: UInt64, layers: UInt8, worker: Int)
    /// Leg `leg`'s sender report stated the media clock of its stream of `kind` (of the
    /// video's simulcast layer `layer`, whose timestamps are `offset` ahead of layer 0's).
    case senderClock(leg: UInt64, kind: MediaKind, layer: Int, timestamp: UInt32, arrival: Duration, offset: UInt32?)
}

/// A leg another worker owns, as a publisher this router's subscribers may get: its
/// producers take the packets that worker hands over.
struct RemoteLeg {
    var setup: ForwardingRouter.LegSetup
    var worker: Int
    var publishing: Bool
    var audio: Producer.ID?
    var video: Producer.ID?
    var created: Duration
}

// Legs spread over several forwarding workers, each with a router: a leg's packets are
// decrypted on its owner's, which forwards them to its own subscribers and hands them,
// decrypted, to each other worker with subscribers of them, which forwards them to its
// own. The owner alone talks to the leg (keyframe requests, reports); the others tell it
// what their subscribers need (`WorkerMessage`).
extension ForwardingRouter {
    /// Makes a leg of `worker`'s known here: checks for its ufrag go there, and this
    /// router's subscribers can get what it publishes. Its keys stay with its owner.
    public func addRemoteLeg(_ setup: LegSetup, worker owner: Int, now: Duration) {
        guard remoteLegs[setup.id] == nil, transportByLeg[setup.id] == nil else { return }
        var leg = RemoteLeg(setup: setup, worker: owner, publishing: setup.publishing, created: now)
        leg.audio = producers.insert(Producer(kind: .audio, origin: .remote(worker: owner), leg: setup.id, receive: nil,
                                              audioLevelID: setup.media.extensions.id(for: RTPExtensionMap.audioLevelURI)))
        if setup.videoSSRC != nil {
            let layers = setup.videoLayers.isEmpty ? (0..<setup.videoStreamCount).map { _ in Producer.Layer(receive: nil) }
                : setup.videoLayers.map { Producer.Layer(receive: nil, width: $0.width, height: $0.height) }
            leg.video = producers.insert(Producer(kind: .video, origin: .remote(worker: owner), leg: setup.id, layers: layers))
        }
        remoteLegs[setup.id] = leg
        ufragWorker[setup.ice.ufrag] = owner
    }

    /// A leg of another worker closed: its streams end for this router's subscribers.
    public func removeRemoteLeg(_ id: UInt64, now: Duration) {
        guard let leg = remoteLegs.removeValue(forKey: id) else { return }
        if ufragWorker[leg.setup.ice.ufrag] == leg.worker { ufragWorker[leg.setup.ice.ufrag] = nil }
        for producerID in [leg.audio, leg.video].compactMap({ $0 }) {
            guard let producer = producers.remove(producerID) else { continue }
            for consumerID in producer.consumers {
                guard let consumer = consumers.remove(consumerID) else { continue }
                consumer.subscriberCore.removeSendStream(consumer.send, now: now)
                transports[consumer.subscriber]?.consumers.removeAll { $0 == consumerID }
            }
        }
        transports.forEach { _, transport in transport.wanted[id] = nil }
    }

    /// Takes a packet another worker handed over. A datagram is handled as if read here;
    /// media (decrypted) goes to this router's subscribers of its leg. Decrypts in place.
    public func handleHandoff(_ header: WorkerHandoff, _ bytes: UnsafeMutableRawBufferPointer, now: Duration) {
        switch header.kind {
        case .datagram:
            // Only legs of this router's: a datagram handed on again would go round.
            let kind = DatagramKind(UnsafeRawBufferPointer(bytes))
            if kind == .stun || transportByAddress[header.source] != nil {
                let saved = addressWorker.removeValue(forKey: header.source)
                handleDatagram(bytes, from: header.source, now: now, arrival: header.arrival)
                if let saved, transportByAddress[header.source] == nil { addressWorker[header.source] = saved }
            } else {
                counters.strangerDatagrams += 1
            }
        case .audio, .video:
            guard let leg = remoteLegs[header.leg], leg.publishing,
                  let producerID = header.kind == .audio ? leg.audio : leg.video, let producer = producers[producerID],
                  let packet = try? RTPPacketView(UnsafeRawBufferPointer(bytes)) else { return }
            if header.kind == .audio {
                routeAudio(packet, of: producer, now: now)
            } else {
                guard Int(header.layer) < producer.layers.count else { return }
                routeVideo(packet, of: producer, id: producerID, spatial: Int(header.layer), now: now)
            }
        }
    }

    /// Takes a message of another worker's.
    public func handleWorkerMessage(_ message: WorkerMessage, now: Duration) {
        switch message {
        case .addressLearned(let address, let owner):
            // This router's own proof of an address stands over another's claim.
            if transportByAddress[address] == nil { addressWorker[address] = owner }
        case .addressForgotten(let address):
            addressWorker[address] = nil
        case .subscribe(let leg, let kind, let subscriberWorker, let wanted):
            guard let transport = transportByLeg[leg].flatMap({ transports[$0] }),
                  let producerID = kind == .audio ? transport.audio : transport.video, let producer = producers[producerID] else { return }
            producer.remoteWorkers.removeAll { $0 == subscriberWorker }
            if wanted {
                producer.remoteWorkers.append(subscriberWorker)
                if kind == .video {
                    for spatial in producer.layers.indices { requestKeyframe(producerID, spatial: spatial, now: now) }
                }
            }
        case .keyframe(let leg, let layer):
            if let video = transportByLeg[leg].flatMap({ transports[$0] })?.video { requestKeyframe(video, spatial: layer, now: now) }
        case .wantedLayers(let leg, let layers, let from):
            guard let video = transportByLeg[leg].flatMap({ transports[$0] })?.video, let producer = producers[video] else { return }
            producer.remoteWantedLayers[from] = layers
        case .senderClock(let leg, let kind, let layer, let timestamp, let arrival, let offset):
            guard let remote = remoteLegs[leg], let producerID = kind == .audio ? remote.audio : remote.video,
                  let producer = producers[producerID], layer < producer.layers.count else { return }
            producer.layers[layer].timestampOffset = offset
            passSenderClock(of: producer, layer: layer, timestamp: timestamp, arrival: arrival)
        }
    }

    /// The next message for another worker, with its number, or nil.
    public func pollWorkerMessage() -> (worker: Int, message: WorkerMessage)? { workerMessages.next() }

    // MARK: Internals

    func handOffDatagram(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, to other: Int, arrival: Duration) {
        guard let handOff, other != worker else {
            counters.strangerDatagrams += 1
            return
        }
        handOff(other, WorkerHandoff(kind: .datagram, source: source, leg: 0, arrival: arrival), UnsafeRawBufferPointer(datagram))
        counters.datagramsHandedOff += 1
    }

    func handOffMedia(_ packet: RTPPacketView, of producer: Producer, spatial: Int = 0, arrival: Duration) {
        guard !producer.remoteWorkers.isEmpty, let handOff else { return }
        let header = WorkerHandoff(kind: producer.kind == .audio ? .audio : .video, source: Self.nowhere, leg: producer.leg,
                                   layer: UInt8(spatial), arrival: arrival)
        for other in producer.remoteWorkers { handOff(other, header, packet.bytes) }
        counters.packetsHandedOff += producer.remoteWorkers.count
    }

    /// A remote producer nobody here consumes any more: its owner stops handing it over.
    func unsubscribeIfIdle(_ producerID: Producer.ID) {
        guard let producer = producers[producerID], case .remote(let owner) = producer.origin, producer.consumers.isEmpty else { return }
        workerMessages.append((owner, .subscribe(leg: producer.leg, kind: producer.kind, worker: worker, false)))
    }

    func tellWorkers(_ message: WorkerMessage) {
        guard workerCount > 1 else { return }
        for other in 0..<workerCount where other != worker { workerMessages.append((other, message)) }
    }

    static let nowhere = try! SocketAddress(host: "0.0.0.0", port: 0)
}
