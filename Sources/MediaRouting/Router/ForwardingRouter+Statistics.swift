import MediaEngine

extension ForwardingRouter {
    // MARK: Figures

    /// Media and RTCP that failed SRTP authentication, over all legs.
    public var authenticationFailures: Int {
        var total = 0
        transports.forEach { _, transport in
            for producer in transport.producers.compactMap({ producers[$0] }) {
                for layer in producer.layers { total += layer.receive.flatMap { transport.core.statistics(of: $0) }?.authenticationFailures ?? 0 }
            }
            total += transport.core.transportStatistics.rtcpAuthenticationFailures
        }
        return total
    }

    /// Replayed media and RTCP, over all legs.
    public var replays: Int {
        var total = 0
        transports.forEach { _, transport in
            for producer in transport.producers.compactMap({ producers[$0] }) {
                for layer in producer.layers { total += layer.receive.flatMap { transport.core.statistics(of: $0) }?.replays ?? 0 }
            }
            total += transport.core.transportStatistics.rtcpReplays
        }
        return total
    }

    /// One leg's figures, for monitoring (`/metrics`).
    public struct LegStatistics: Sendable, Hashable {
        public var id: UInt64
        public var meeting: UInt64
        public var account: String
        /// Uplink: media that came from the participant, and what was lost on the way.
        public var packetsReceived = 0
        public var packetsLost = 0
        /// Downlink: media sent to it, and what its reports say was lost (cumulative, and
        /// the worst stream's share in its latest report).
        public var packetsSent = 0
        public var packetsLostDownlink = 0
        public var fractionLostDownlink = 0.0
        /// Feedback from it as a subscriber (NACK and PLI/FIR packets), and sent to it as a
        /// publisher (NACKs for its uplink, keyframe requests).
        public var nacksReceived = 0
        public var keyframeRequestsReceived = 0
        public var nacksSent = 0
        public var keyframeRequestsSent = 0
        /// SRTP and SRTCP packets that failed authentication or were replays.
        public var authenticationFailures = 0
        /// The downlink's bandwidth estimate (b/s), and the transport-wide feedback packets
        /// from the leg that drive it (RTCP transport-cc, a browser's or our client's).
        public var estimatedBitrate = 0
        public var transportFeedbackReceived = 0
        /// Packets those feedback packets reported received: what the estimate was fed.
        public var feedbackPacketsReported = 0
        /// As a subscriber: what it gets of each publisher's video now.
        public var videos: [ForwardedVideo] = []

        public init(id: UInt64, meeting: UInt64, account: String) {
            self.id = id
            self.meeting = meeting
            self.account = account
        }
    }

    /// What a subscriber gets of one publisher's video.
    public struct ForwardedVideo: Sendable, Hashable {
        public var publisher: String
        public var publisherLeg: UInt64
        /// The simulcast layer (0 for a single stream) and the highest temporal layer; -1
        /// while paused, muted or before a keyframe.
        public var spatialLayer: Int
        public var temporalLayer: Int
        /// The layer's picture size as the publisher announced it or its keyframes said (0
        /// before either).
        public var width: Int
        public var height: Int
        /// Simulcast switches made for this subscriber.
        public var switches: Int
    }

    /// Every open leg's figures, by leg ID.
    public var legStatistics: [LegStatistics] {
        var open: [Transport] = []
        transports.forEach { _, transport in open.append(transport) }
        return open.sorted { $0.setup.id < $1.setup.id }.map { leg in
            var figures = LegStatistics(id: leg.setup.id, meeting: leg.setup.meeting, account: leg.setup.account)
            for layer in leg.producers.compactMap({ producers[$0] }).flatMap(\.layers) {
                guard let receive = layer.receive, let inbound = leg.core.statistics(of: receive) else { continue }
                figures.packetsReceived += inbound.packetsReceived
                figures.packetsLost += max(0, inbound.packetsLost)
                figures.nacksSent += inbound.nackSent
                figures.keyframeRequestsSent += inbound.pliSent + inbound.firSent
                figures.authenticationFailures += inbound.authenticationFailures + inbound.replays
            }
            for consumer in leg.consumers.compactMap({ consumers[$0] }) {
                if consumer.kind == .video, let producer = producers[consumer.producer], let source = publisher(consumer.publisher) {
                    let spatial = consumer.forwardedSpatial
                    let layer = spatial >= 0 ? producer.layers[spatial] : nil
                    figures.videos.append(ForwardedVideo(publisher: source.setup.account, publisherLeg: consumer.publisher, spatialLayer: spatial,
                                                         temporalLayer: consumer.forwardedLayer, width: layer?.width ?? 0,
                                                         height: layer?.height ?? 0, switches: consumer.spatialSwitches))
                }
                guard let outbound = leg.core.statistics(of: consumer.send) else { continue }
                figures.packetsSent += outbound.packetsSent
                figures.nacksReceived += outbound.nackCount
                figures.keyframeRequestsReceived += outbound.pliCount + outbound.firCount
                if let report = outbound.remoteReport {
                    figures.packetsLostDownlink += max(0, report.packetsLost)
                    figures.fractionLostDownlink = max(figures.fractionLostDownlink, report.fractionLost)
                }
            }
            let transport = leg.core.transportStatistics
            figures.authenticationFailures += transport.rtcpAuthenticationFailures + transport.rtcpReplays
            figures.estimatedBitrate = leg.core.bandwidthEstimator.targetBitrate
            figures.transportFeedbackReceived = transport.transportFeedbackReceived
            figures.feedbackPacketsReported = leg.core.bandwidthEstimator.statistics.packetsReceived
            return figures
        }
    }

    /// Bytes held for video retransmissions. A subscriber stream without RTX keeps its own
    /// history of the protected packets it sent; with RTX, one history per publisher video
    /// (on each worker with subscribers of it) serves them all, and each subscriber stream
    /// keeps only a map of what it was sent.
    public var retransmissionMemory: Int {
        var total = 0
        producers.forEach { _, producer in
            total += producer.layers.filter { $0.history != nil }.count * PublisherHistory.footprint
        }
        consumers.forEach { _, consumer in
            guard consumer.kind == .video else { return }
            total += consumer.subscriberCore.feedbackResponder(of: consumer.send)?.history.storageBytes ?? 0
            if consumer.retransmissions != nil { total += RetransmissionMap.footprint }
        }
        return total
    }

    /// A leg's transport counters (SRTP failures, foreign paths, feedback).
    public func transportStatistics(ofLeg id: UInt64) -> TransportStatistics? { transport(ofLeg: id)?.core.transportStatistics }

    /// A subscriber leg's bandwidth estimate (b/s).
    public func estimatedBitrate(ofLeg id: UInt64) -> Int? { transport(ofLeg: id)?.core.bandwidthEstimator.targetBitrate }

    /// What a subscriber leg's bandwidth estimator saw: the transport-wide feedback that
    /// drives it (packets reported received and lost, feedback packets).
    public func estimatorStatistics(ofLeg id: UInt64) -> SendSideBandwidthEstimator.Statistics? {
        transport(ofLeg: id)?.core.bandwidthEstimator.statistics
    }

    /// When a publisher leg's audio last carried voice activity (its RFC 6464 level).
    package func lastSpoke(leg id: UInt64) -> Duration? { transport(ofLeg: id)?.audio.flatMap { producers[$0]?.spokeAt } }

    /// What `subscriber` was sent of `publisher`'s streams: packets per kind.
    public func forwardedPackets(to subscriber: UInt64, from publisher: UInt64) -> (audio: Int, video: Int) {
        guard let subscriberID = transportByLeg[subscriber], let core = transports[subscriberID]?.core else { return (0, 0) }
        func sent(_ kind: MediaKind) -> Int {
            consumer(of: publisher, kind: kind, for: subscriberID).flatMap { consumers[$0] }
                .flatMap { core.statistics(of: $0.send)?.packetsSent } ?? 0
        }
        return (sent(.audio), sent(.video))
    }

    /// The highest temporal layer `subscriber` gets of `publisher`'s video now (-1: paused
    /// or none).
    public func forwardedLayer(to subscriber: UInt64, from publisher: UInt64) -> Int {
        guard let subscriberID = transportByLeg[subscriber], let id = consumer(of: publisher, kind: .video, for: subscriberID) else { return -1 }
        return consumers[id]?.forwardedLayer ?? -1
    }

    /// What `subscriber` gets of `publisher`'s video now: the simulcast layer (0 for a single
    /// stream) and the highest temporal layer, -1 and -1 while paused or none; and the
    /// simulcast switches made for it so far.
    public func forwardedVideo(to subscriber: UInt64, from publisher: UInt64) -> (spatial: Int, temporal: Int, switches: Int) {
        guard let subscriberID = transportByLeg[subscriber], let id = consumer(of: publisher, kind: .video, for: subscriberID),
              let consumer = consumers[id] else { return (-1, -1, 0) }
        return (consumer.forwardedSpatial, consumer.forwardedLayer, consumer.spatialSwitches)
    }

    /// The cumulative bitrates of a publisher's video layers, as last measured (b/s): of
    /// its simulcast layer `spatial` (0: the only one, or the lowest).
    public func layerRates(ofLeg id: UInt64, spatial: Int = 0) -> [Int] {
        guard let producer = transport(ofLeg: id)?.video.flatMap({ producers[$0] }), spatial < producer.layers.count else { return [] }
        return producer.layers[spatial].rates
    }

    /// The streams `leg` gets, as a subscriber (a stream per kind per publisher it opened).
    package func consumerCount(ofLeg id: UInt64) -> Int { transport(ofLeg: id)?.consumers.count ?? 0 }

    /// The addresses `leg`'s checks proved, oldest first (it keeps the last four).
    package func addresses(ofLeg id: UInt64) -> [SocketAddress] { transport(ofLeg: id)?.addresses ?? [] }

    /// Addresses that lead to a leg now, over all legs.
    package var routedAddressCount: Int { transportByAddress.count }

    /// Source IPs whose Binding rate is tracked now.
    package var bindingSourceCount: Int { bindings.trackedSources }

    /// Transports, producers and consumers held: what a router with no legs must be rid of.
    package var tableSizes: (transports: Int, producers: Int, consumers: Int) { (transports.count, producers.count, consumers.count) }

    private func transport(ofLeg id: UInt64) -> Transport? { transportByLeg[id].flatMap { transports[$0] } }
}
