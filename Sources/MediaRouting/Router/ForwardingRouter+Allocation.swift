import MediaEngine

// Once a second per subscriber: its bandwidth estimate shared out among its videos; every
// speaking interval: who speaks in each meeting.
extension ForwardingRouter {
    /// Shares a subscriber's estimate out among its videos, most recent speakers first.
    func allocate(_ subscriber: Transport.ID, now: Duration) {
        guard let transport = transports[subscriber] else { return }
        let mine = transport.consumers.compactMap { id in consumers[id].map { (id: id, consumer: $0) } }
        let videos = mine.filter { $0.consumer.kind == .video && $0.consumer.enabled }
        guard !videos.isEmpty else { return }
        let audios = mine.filter { $0.consumer.kind == .audio && $0.consumer.enabled && publisher($0.consumer.publisher)?.publishing == true }
        let budget = transport.core.bandwidthEstimator.targetBitrate - audios.count * configuration.audioAllowance
        // A video whose rates are not measured yet keeps what it has.
        let ordered = videos.filter { entry in
            publisher(entry.consumer.publisher)?.publishing == true && producers[entry.consumer.producer]?.layerRates.isEmpty == false
        }.sorted { first, second in
            let a = lastSpoke(first.consumer.publisher), b = lastSpoke(second.consumer.publisher)
            return a.time != b.time ? a.time > b.time : a.leg < b.leg
        }
        let layers = LayerAllocator.allocate(budget: budget, videos: ordered.map { entry in
            let consumer = entry.consumer
            // A video within its pause hold cannot fit (and so holds the others at their base).
            let held = consumer.allowedLayer < 0 && consumer.pausedAt.map { now - $0 < configuration.pauseHold } == true
            return LayerAllocator.Video(layerRates: held ? [Int.max / 4] : producers[consumer.producer]?.layerRates ?? [],
                                        current: consumer.allowedLayer < 0 ? -1 : consumer.currentLayer)
        })
        for (entry, layer) in zip(ordered, layers) where consumers[entry.id]?.allow(layer: layer, now: now) == true {
            requestKeyframe(entry.consumer.producer, now: now)
        }
    }

    /// When a publisher last spoke (a day before it joined if never), and its leg ID to
    /// break ties.
    private func lastSpoke(_ leg: UInt64) -> (time: Duration, leg: UInt64) {
        guard let publisher = publisher(leg) else { return (.zero, 0) }
        let spoke = publisher.audio.flatMap { producers[$0]?.spokeAt }
        return (spoke ?? publisher.created - .seconds(86_400), leg)
    }

    func reportSpeaking(now: Duration) {
        var meetings: [UInt64: [String: Double]] = [:]
        transports.forEach { _, transport in
            guard transport.publishing else { return }
            guard let audio = transport.audio, let producer = producers[audio], let spoke = producer.spokeAt,
                  now - spoke <= configuration.speakingInterval,
                  let receive = producer.receive, let level = transport.core.recentAudioLevel(receive, now: now, window: configuration.speakingInterval) else {
                if meetings[transport.setup.meeting] == nil { meetings[transport.setup.meeting] = [:] }
                return
            }
            meetings[transport.setup.meeting, default: [:]][transport.setup.account] = level.amplitude
        }
        for meeting in meetings.keys.sorted() {
            let levels = meetings[meeting] ?? [:]
            let before = lastSpeaking[meeting] ?? [:]
            guard !levels.isEmpty || !before.isEmpty else { continue }
            lastSpeaking[meeting] = levels
            reports.append(.speaking(meeting: meeting, levels: levels))
        }
        for meeting in lastSpeaking.keys where meetings[meeting] == nil { lastSpeaking[meeting] = nil }
    }
}
