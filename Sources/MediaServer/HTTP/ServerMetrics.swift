import CoreMetrics
import MediaEngine
import MediaRouting
import Prometheus

/// The server's metrics in Prometheus' text format (`GET /metrics`): swift-metrics objects
/// on a registry of this server's own (so several servers can run in one process, as in
/// tests), brought up to date from the hub's and the forwarding thread's figures at each
/// scrape. Nothing here runs on the forwarding thread; it publishes its figures twice a
/// second, so a scrape is at most that old.
///
/// - Gauges: connections, calls, meetings, participants, legs; per leg (labels `meeting`,
///   `user`, `direction`): loss ratio and packets lost, the downlink estimate, the
///   transport-wide feedback packets that drive it and the packets they reported received.
/// - Counters: media packets received and forwarded, bytes forwarded, SRTP/SRTCP
///   authentication failures and replays, NACKs and keyframe requests (from subscribers,
///   and to publishers), datagrams from strangers, audience media dropped, muted and held
///   back packets, legs lost, echo probes answered, STUN Binding requests (for clients'
///   server-reflexive addresses) by result (answered, rate_limited, too_small), and
///   malformed STUN.
/// - Per forwarding worker (label `worker`): the legs it owns (gauge) and its CPU seconds
///   (counter); packets one worker could not hand another (its ring full) are counted.
///
/// The forwarding figures of a leg are cumulative while it is open; counters add each
/// leg's increase, so a leg that closes takes nothing back.
public final class ServerMetrics: Sendable {
    /// What the hub knows at scrape time.
    public struct Signaling: Sendable, Hashable {
        public var connections: Int
        public var calls: Int
        public var meetings: Int
        public var participants: Int

        /// This node's part in a cluster, when it is one.
        public var cluster: Cluster?

        public init(connections: Int, calls: Int, meetings: Int, participants: Int, cluster: Cluster? = nil) {
            self.connections = connections
            self.calls = calls
            self.meetings = meetings
            self.participants = participants
            self.cluster = cluster
        }
    }

    /// A node's figures in a cluster.
    public struct Cluster: Sendable, Hashable {
        public var node: NodeID
        /// Devices on other nodes taking part in calls this node owns.
        public var remoteDevices: Int
        /// Calls other nodes own that devices here take part in.
        public var remoteCalls: Int
        /// Participants connected to other nodes in meetings this node hosts.
        public var remoteParticipants: Int
        /// Participants connected here in meetings other nodes host.
        public var participantsHostedElsewhere: Int
        public var messagesSent: Int
        public var messagesReceived: Int
        /// Messages to other nodes the store refused after its retries.
        public var messagesLost: Int
        /// Every node as this one last saw it (itself included), and how many are live.
        public var nodes: [NodeInfo]
        public var liveNodes: Int
    }

    let registry = PrometheusCollectorRegistry()
    private let state: Locked<State>

    private struct LegGauges {
        var lossUplink: CoreMetrics.Gauge
        var lossDownlink: CoreMetrics.Gauge
        var lostUplink: CoreMetrics.Gauge
        var lostDownlink: CoreMetrics.Gauge
        var estimate: CoreMetrics.Gauge
        var transportFeedback: CoreMetrics.Gauge
        var feedbackReported: CoreMetrics.Gauge
        var last: ForwardingRouter.LegStatistics
        /// Per publisher leg whose video it gets: its layer, size and switches.
        var videos: [UInt64: VideoGauges] = [:]

        func destroy() {
            for gauge in [lossUplink, lossDownlink, lostUplink, lostDownlink, estimate, transportFeedback, feedbackReported] { gauge.destroy() }
            for video in videos.values { video.destroy() }
        }
    }

    /// What one subscriber gets of one publisher's video: `mediaengine_forwarded_video_*`
    /// {meeting, user, leg, publisher}.
    private struct VideoGauges {
        let spatial, temporal, width, height, switches: CoreMetrics.Gauge

        init(_ leg: ForwardingRouter.LegStatistics, _ video: ForwardingRouter.ForwardedVideo, factory: PrometheusMetricsFactory) {
            let dimensions = [("meeting", String(leg.meeting)), ("user", leg.account), ("leg", String(leg.id)), ("publisher", video.publisher)]
            func gauge(_ name: String) -> CoreMetrics.Gauge {
                CoreMetrics.Gauge(label: "mediaengine_forwarded_video_" + name, dimensions: dimensions, factory: factory)
            }
            spatial = gauge("spatial_layer")
            temporal = gauge("temporal_layer")
            width = gauge("width")
            height = gauge("height")
            switches = gauge("layer_switches")
        }

        func record(_ video: ForwardingRouter.ForwardedVideo) {
            spatial.record(video.spatialLayer)
            temporal.record(video.temporalLayer)
            width.record(video.width)
            height.record(video.height)
            switches.record(video.switches)
        }

        func destroy() {
            for gauge in [spatial, temporal, width, height, switches] { gauge.destroy() }
        }
    }

    private struct State {
        let factory: PrometheusMetricsFactory
        let connections, calls, meetings, participants, legs: CoreMetrics.Gauge
        let packetsReceived, packetsForwarded, bytesForwarded: CoreMetrics.Counter
        let authenticationFailures, nacksReceived, keyframeRequestsReceived, nacksSent, keyframeRequestsSent: CoreMetrics.Counter
        let strangers, audienceDropped, muted, heldBack, legsLost, echoAnswered, sendFailures: CoreMetrics.Counter
        let bindingsAnswered, bindingsRateLimited, bindingsTooSmall, stunMalformed: CoreMetrics.Counter
        let rtxSent, rtxPackets, retransmissionsOutOfHistory, retransmissionsSuppressed: CoreMetrics.Counter
        let probesStarted, probesSucceeded, probesFailed, paddingPackets, paddingBytes: CoreMetrics.Counter
        /// The router-wide counters as last added.
        var lastRouter = ForwardingRouter.Counters()
        var lastEcho = 0
        var lastSendFailures = 0
        var legGauges: [UInt64: LegGauges] = [:]
        /// Per forwarding worker: its legs, its CPU seconds, and the CPU time added last.
        var workers: [(legs: CoreMetrics.Gauge, cpu: CoreMetrics.FloatingPointCounter, last: Duration)] = []
        let handoffsDropped: CoreMetrics.Counter
        var lastHandoffsDropped = 0
        /// The cluster's gauges and counters, made at the first scrape that has them.
        var cluster: ClusterMetrics?

        init(factory: PrometheusMetricsFactory) {
            self.factory = factory
            func gauge(_ name: String) -> CoreMetrics.Gauge { CoreMetrics.Gauge(label: "mediaengine_" + name, factory: factory) }
            func counter(_ name: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
                CoreMetrics.Counter(label: "mediaengine_" + name, dimensions: dimensions, factory: factory)
            }
            connections = gauge("signaling_connections")
            calls = gauge("calls")
            meetings = gauge("meetings")
            participants = gauge("meeting_participants")
            legs = gauge("media_legs")
            packetsReceived = counter("media_packets_received_total")
            packetsForwarded = counter("media_packets_forwarded_total")
            bytesForwarded = counter("media_bytes_forwarded_total")
            authenticationFailures = counter("srtp_failures_total")
            nacksReceived = counter("nacks_total", [("direction", "from_subscribers")])
            nacksSent = counter("nacks_total", [("direction", "to_publishers")])
            keyframeRequestsReceived = counter("keyframe_requests_total", [("direction", "from_subscribers")])
            keyframeRequestsSent = counter("keyframe_requests_total", [("direction", "to_publishers")])
            strangers = counter("stranger_datagrams_total")
            audienceDropped = counter("audience_media_dropped_total")
            muted = counter("muted_packets_skipped_total")
            heldBack = counter("video_packets_held_back_total")
            legsLost = counter("legs_lost_total")
            echoAnswered = counter("echo_probes_answered_total")
            sendFailures = counter("send_failures_total")
            bindingsAnswered = counter("stun_bindings_total", [("result", "answered")])
            bindingsRateLimited = counter("stun_bindings_total", [("result", "rate_limited")])
            bindingsTooSmall = counter("stun_bindings_total", [("result", "too_small")])
            stunMalformed = counter("stun_malformed_total")
            rtxSent = counter("rtx_packets_sent_total")
            rtxPackets = counter("rtx_packets_retransmitted_total")
            retransmissionsOutOfHistory = counter("rtx_requests_total", [("result", "out_of_history")])
            retransmissionsSuppressed = counter("rtx_requests_total", [("result", "suppressed")])
            probesStarted = counter("bandwidth_probes_total", [("result", "started")])
            probesSucceeded = counter("bandwidth_probes_total", [("result", "succeeded")])
            probesFailed = counter("bandwidth_probes_total", [("result", "failed")])
            paddingPackets = counter("probe_padding_packets_sent_total")
            paddingBytes = counter("probe_padding_bytes_sent_total")
            handoffsDropped = counter("media_worker_handoffs_dropped_total")
        }
    }

    public init() {
        state = Locked(State(factory: PrometheusMetricsFactory(registry: registry)))
    }

    /// Brings every metric up to date.
    public func update(signaling: Signaling, forwarding: ForwardingServer.Statistics?) {
        state.withLock { state in
            state.connections.record(signaling.connections)
            state.calls.record(signaling.calls)
            state.meetings.record(signaling.meetings)
            state.participants.record(signaling.participants)
            if let cluster = signaling.cluster {
                if state.cluster == nil { state.cluster = ClusterMetrics(node: cluster.node, factory: state.factory) }
                state.cluster?.update(cluster, factory: state.factory)
            }
            guard let forwarding else { return }
            state.legs.record(forwarding.legs)
            let router = forwarding.router
            func add(_ counter: CoreMetrics.Counter, _ now: Int, _ before: Int) {
                if now > before { counter.increment(by: now - before) }
            }
            let routerCounters: [(CoreMetrics.Counter, KeyPath<ForwardingRouter.Counters, Int>)] = [
                (state.packetsReceived, \.packetsReceived), (state.packetsForwarded, \.packetsForwarded),
                (state.bytesForwarded, \.bytesForwarded), (state.strangers, \.strangerDatagrams),
                (state.audienceDropped, \.audienceMediaDropped), (state.muted, \.mutedPacketsSkipped),
                (state.heldBack, \.videoPacketsHeldBack), (state.legsLost, \.legsLost),
                (state.bindingsAnswered, \.bindingsAnswered), (state.bindingsRateLimited, \.bindingsRateLimited),
                (state.bindingsTooSmall, \.bindingsTooSmall), (state.stunMalformed, \.stunMalformed),
                (state.rtxSent, \.rtxPacketsSent), (state.rtxPackets, \.packetsRetransmittedOnRTX),
                (state.retransmissionsOutOfHistory, \.retransmissionsOutOfHistory),
                (state.retransmissionsSuppressed, \.retransmissionsSuppressed),
                (state.probesStarted, \.probesStarted), (state.probesSucceeded, \.probesSucceeded),
                (state.probesFailed, \.probesFailed), (state.paddingPackets, \.paddingPacketsSent),
                (state.paddingBytes, \.paddingBytesSent),
            ]
            for (counter, field) in routerCounters { add(counter, router[keyPath: field], state.lastRouter[keyPath: field]) }
            add(state.echoAnswered, forwarding.echo.answered, state.lastEcho)
            add(state.sendFailures, forwarding.sendFailures, state.lastSendFailures)
            state.lastRouter = router
            state.lastEcho = forwarding.echo.answered
            state.lastSendFailures = forwarding.sendFailures
            add(state.handoffsDropped, forwarding.handoffsDropped, state.lastHandoffsDropped)
            state.lastHandoffsDropped = forwarding.handoffsDropped
            while state.workers.count < forwarding.workerLegs.count {
                let label = [("worker", String(state.workers.count))]
                state.workers.append((CoreMetrics.Gauge(label: "mediaengine_media_worker_legs", dimensions: label, factory: state.factory),
                                      CoreMetrics.FloatingPointCounter(label: "mediaengine_media_worker_cpu_seconds_total", dimensions: label,
                                                                       factory: state.factory), .zero))
            }
            for (index, legs) in forwarding.workerLegs.enumerated() { state.workers[index].legs.record(legs) }
            for (index, time) in forwarding.workerCPUTimes.enumerated() where time > state.workers[index].last {
                state.workers[index].cpu.increment(by: (time - state.workers[index].last) / .seconds(1))
                state.workers[index].last = time
            }

            var open = Set<UInt64>()
            for leg in forwarding.legStatistics {
                open.insert(leg.id)
                let before = state.legGauges[leg.id]?.last ?? ForwardingRouter.LegStatistics(id: leg.id, meeting: leg.meeting, account: leg.account)
                let legCounters: [(CoreMetrics.Counter, KeyPath<ForwardingRouter.LegStatistics, Int>)] = [
                    (state.authenticationFailures, \.authenticationFailures), (state.nacksReceived, \.nacksReceived),
                    (state.keyframeRequestsReceived, \.keyframeRequestsReceived), (state.nacksSent, \.nacksSent),
                    (state.keyframeRequestsSent, \.keyframeRequestsSent),
                ]
                for (counter, field) in legCounters { add(counter, leg[keyPath: field], before[keyPath: field]) }
                var gauges = state.legGauges[leg.id] ?? Self.makeLegGauges(leg, factory: state.factory)
                gauges.last = leg
                let expected = leg.packetsReceived + leg.packetsLost
                gauges.lossUplink.record(expected > 0 ? Double(leg.packetsLost) / Double(expected) : 0)
                gauges.lossDownlink.record(leg.fractionLostDownlink)
                gauges.lostUplink.record(leg.packetsLost)
                gauges.lostDownlink.record(leg.packetsLostDownlink)
                gauges.estimate.record(leg.estimatedBitrate)
                gauges.transportFeedback.record(leg.transportFeedbackReceived)
                gauges.feedbackReported.record(leg.feedbackPacketsReported)
                for video in leg.videos {
                    let videoGauges = gauges.videos[video.publisherLeg] ?? VideoGauges(leg, video, factory: state.factory)
                    videoGauges.record(video)
                    gauges.videos[video.publisherLeg] = videoGauges
                }
                for (publisher, videoGauges) in gauges.videos where !leg.videos.contains(where: { $0.publisherLeg == publisher }) {
                    videoGauges.destroy()
                    gauges.videos[publisher] = nil
                }
                state.legGauges[leg.id] = gauges
            }
            for (id, gauges) in state.legGauges where !open.contains(id) {
                gauges.destroy()
                state.legGauges[id] = nil
            }
        }
    }

    private static func makeLegGauges(_ leg: ForwardingRouter.LegStatistics, factory: PrometheusMetricsFactory) -> LegGauges {
        func gauge(_ name: String, _ direction: String?) -> CoreMetrics.Gauge {
            var dimensions = [("meeting", String(leg.meeting)), ("user", leg.account), ("leg", String(leg.id))]
            if let direction { dimensions.append(("direction", direction)) }
            return CoreMetrics.Gauge(label: "mediaengine_leg_" + name, dimensions: dimensions, factory: factory)
        }
        return LegGauges(lossUplink: gauge("loss_ratio", "uplink"), lossDownlink: gauge("loss_ratio", "downlink"),
                         lostUplink: gauge("packets_lost", "uplink"), lostDownlink: gauge("packets_lost", "downlink"),
                         estimate: gauge("estimated_bitrate_bps", nil), transportFeedback: gauge("transport_feedback_received", nil),
                         feedbackReported: gauge("feedback_packets_reported", nil),
                         last: ForwardingRouter.LegStatistics(id: leg.id, meeting: leg.meeting, account: leg.account))
    }

    /// A cluster node's metrics, labelled with its ID (`node`): remote devices and calls,
    /// meeting participants across nodes (both ways), messages sent, received and lost, live nodes; and per node it sees (`peer`), its
    /// load and how long ago it heartbeated.
    struct ClusterMetrics {
        let remoteDevices, remoteCalls, remoteParticipants, participantsHostedElsewhere, liveNodes: CoreMetrics.Gauge
        let sent, received, lost: CoreMetrics.Counter
        var last = (sent: 0, received: 0, lost: 0)
        var peers: [NodeID: (load: CoreMetrics.Gauge, silence: CoreMetrics.Gauge)] = [:]
        let node: NodeID

        init(node: NodeID, factory: PrometheusMetricsFactory) {
            self.node = node
            let label = [("node", node.rawValue)]
            remoteDevices = CoreMetrics.Gauge(label: "mediaengine_cluster_remote_devices", dimensions: label, factory: factory)
            remoteCalls = CoreMetrics.Gauge(label: "mediaengine_cluster_remote_calls", dimensions: label, factory: factory)
            remoteParticipants = CoreMetrics.Gauge(label: "mediaengine_cluster_remote_participants", dimensions: label, factory: factory)
            participantsHostedElsewhere = CoreMetrics.Gauge(label: "mediaengine_cluster_participants_hosted_elsewhere", dimensions: label,
                                                            factory: factory)
            liveNodes = CoreMetrics.Gauge(label: "mediaengine_cluster_live_nodes", dimensions: label, factory: factory)
            sent = CoreMetrics.Counter(label: "mediaengine_cluster_messages_total", dimensions: label + [("direction", "sent")], factory: factory)
            received = CoreMetrics.Counter(label: "mediaengine_cluster_messages_total", dimensions: label + [("direction", "received")],
                                           factory: factory)
            lost = CoreMetrics.Counter(label: "mediaengine_cluster_messages_lost_total", dimensions: label, factory: factory)
        }

        mutating func update(_ figures: Cluster, factory: PrometheusMetricsFactory) {
            remoteDevices.record(figures.remoteDevices)
            remoteCalls.record(figures.remoteCalls)
            remoteParticipants.record(figures.remoteParticipants)
            participantsHostedElsewhere.record(figures.participantsHostedElsewhere)
            if figures.messagesSent > last.sent { sent.increment(by: figures.messagesSent - last.sent) }
            if figures.messagesReceived > last.received { received.increment(by: figures.messagesReceived - last.received) }
            if figures.messagesLost > last.lost { lost.increment(by: figures.messagesLost - last.lost) }
            last = (figures.messagesSent, figures.messagesReceived, figures.messagesLost)
            var seen = Set<NodeID>()
            for peer in figures.nodes {
                seen.insert(peer.id)
                let gauges = peers[peer.id] ?? {
                    let label = [("node", node.rawValue), ("peer", peer.id.rawValue)]
                    return (CoreMetrics.Gauge(label: "mediaengine_cluster_node_load", dimensions: label, factory: factory),
                            CoreMetrics.Gauge(label: "mediaengine_cluster_node_silence_seconds", dimensions: label, factory: factory))
                }()
                gauges.load.record(peer.load)
                gauges.silence.record(Double(peer.silence / .milliseconds(1)) / 1_000)
                peers[peer.id] = gauges
            }
            for (id, gauges) in peers where !seen.contains(id) {
                gauges.load.destroy()
                gauges.silence.destroy()
                peers[id] = nil
            }
            liveNodes.record(figures.liveNodes)
        }
    }

    /// The exposition text (`text/plain; version=0.0.4`).
    public func render() -> String { registry.emitToString() }
}

/// Compares two byte strings in time that depends on their lengths only, not on where
/// they differ (for secrets such as the metrics token).
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
}
