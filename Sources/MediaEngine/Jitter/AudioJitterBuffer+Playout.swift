extension AudioJitterBuffer {
    /// Produces exactly one frame of audio for the playout clock.
    ///
    /// Call once per `configuration.frameDuration` of the playout clock. Before the first
    /// packet has waited the target delay the frame is digital silence; afterwards it is
    /// decoded audio, FEC recovery, concealment or DTX comfort noise, with quiet chunks
    /// dropped or inserted to steer the delay towards the target. Allocates nothing.
    /// - Parameters:
    ///   - now: the playout time of the frame's first sample, on the caller's clock.
    ///   - output: receives `configuration.samplesPerFrame` samples per channel, interleaved.
    /// - Precondition: `output` holds at least one frame.
    @discardableResult
    public func pull(now: Duration, into output: UnsafeMutableBufferPointer<Int16>) -> PullResult {
        let frame = configuration.samplesPerFrame
        precondition(output.count >= frame * configuration.layout.count,
                     "jitter buffer: output holds \(output.count) samples, a frame needs \(frame * configuration.layout.count)")
        var sources: PullResult.Sources = []
        if phase == .buffering, let first = ring.lowest(from: windowStart), let entry = ring.entry(first),
           playoutDelay(now: now, emitTimestamp: entry.timestamp) >= targetSeconds - halfFrame {
            phase = .playing
            nextSequence = first
            windowStart = first
            decodeTimestamp = entry.timestamp
            if jumpBoundary.map({ first >= $0.sequence }) == true { jumpBoundary = nil }
        }
        if phase == .playing {
            delaySeconds = playoutDelay(now: now, emitTimestamp: decodeTimestamp - Int64(queue.count))
            while queue.count < frame { produce(now: now, sources: &sources) }
            counters.totalSamplesReceived += frame
        } else {
            while queue.count < frame { produceWhileWaiting(sources: &sources) }
        }
        queue.pop(frame, into: output)
        return PullResult(samplesPerChannel: frame, sources: sources, packetsHeld: ring.count)
    }

    private var halfFrame: Double { Double(configuration.samplesPerFrame) / Double(2 * Self.sampleRate) }

    /// How far the delay may stray from the target before playout stretches: three
    /// quarters of a frame, so that one dropped or inserted frame lands inside the band
    /// again instead of overshooting into the opposite correction.
    private var deadBand: Double { Double(3 * configuration.samplesPerFrame) / Double(4 * Self.sampleRate) }

    /// Whether dropping `seconds` of audio leaves the delay within the dead band.
    private func shouldSpeedUp(excess: Double, dropping seconds: Double) -> Bool {
        excess > max(deadBand, seconds - deadBand)
    }

    /// How long after its expected arrival the sample with `emitTimestamp` plays at `now`.
    private func playoutDelay(now: Duration, emitTimestamp: Int64) -> Double {
        guard let mean = estimator.transitMean else { return targetSeconds }
        return now / .seconds(1) - mean - Double(emitTimestamp) / Double(Self.sampleRate)
    }

    /// Before playout starts: the old stream's fade after a restart, then silence.
    private func produceWhileWaiting(sources: inout PullResult.Sources) {
        let length = configuration.samplesPerFrame
        if fadeOutRemaining > 0 {
            fadeOutRemaining -= length
            counters.totalSamplesReceived += length
            conceal(length, sources: &sources)
        } else {
            queue.appendSilence(length)
            sources.insert(.silence)
        }
    }

    /// Appends one chunk of audio to the playout queue, choosing how from what is held and
    /// how far the delay is from the target.
    private func produce(now: Duration, sources: inout PullResult.Sources) {
        let frame = configuration.samplesPerFrame
        let excess = playoutDelay(now: now, emitTimestamp: decodeTimestamp - Int64(queue.count)) - targetSeconds
        let forced = max(2 * Double(frame) / Double(Self.sampleRate), targetSeconds / 2)
        let slowDown = excess < -deadBand

        if let entry = ring.entry(nextSequence) {
            let gap = entry.timestamp - decodeTimestamp
            if gap >= Int64(Self.quantum), gap <= Self.maximumGap {
                // The sender skipped packets during a DTX silence: comfort noise up to this one.
                comfortNoise(upTo: Int(gap), excess: excess, sources: &sources)
                return
            }
            if slowDown, lastChunkQuiet || excess < -deadBand - forced {
                insertForDeceleration(frame, sources: &sources)
                return
            }
            // A late packet after concealment, or a small overlap: its own timestamp rules.
            decodeTimestamp = entry.timestamp
            decode(entry, now: now, excess: excess, forced: forced, sources: &sources)
            return
        }
        if ring.count > 0, let later = ring.lowest(from: nextSequence + 1), let next = ring.entry(later) {
            recoverLost(before: next, now: now, sources: &sources)
            return
        }
        // Nothing held: the buffer ran dry, or a DTX sender is silent.
        if inDTX {
            comfortNoise(upTo: frame, excess: excess, sources: &sources)
        } else {
            conceal(frame, sources: &sources)
            decodeTimestamp += Int64(frame)
        }
    }

    private func decode(_ entry: PacketRing.Entry, now: Duration, excess: Double, forced: Double,
                        sources: inout PullResult.Sources) {
        let payload = ring.payload(entry.sequence)
        let isDTX = Opus.PacketInspection.isDTX(payload)
        let written: Int
        do {
            written = try decoder.decode(payload, into: queue.freeSpace)
        } catch {
            // Passed the header check but not the decoder: conceal its length.
            counters.packetsMalformed += 1
            finish(entry)
            conceal(entry.samplesPerChannel, sources: &sources)
            decodeTimestamp += Int64(entry.samplesPerChannel)
            return
        }
        finish(entry)
        decodeTimestamp += Int64(written)
        let level = queue.meanSquareOfWritten(written)
        let quiet = isDTX || isQuiet(level)
        let length = Double(written) / Double(Self.sampleRate)
        if excess > deadBand {
            if excessSince == nil { excessSince = now }
        } else {
            excessSince = nil
        }
        let sustained = excessSince.map { now - $0 >= Self.sustainedExcess } ?? false
        // Drop only with the following audio at hand, so the cut cannot cause an underrun.
        if shouldSpeedUp(excess: excess, dropping: length),
           quiet || sustained || shouldSpeedUp(excess: excess - forced, dropping: length),
           ring.contains(nextSequence) {
            if sustained && !quiet { excessSince = now - Self.sustainedExcess + Self.sustainedInterval }
            queue.discardWritten(written)
            counters.removedSamplesForAcceleration += written
            sources.insert(.accelerated)
            return
        }
        recordEmitted(written, arrival: entry.arrival, now: now)
        queue.commit(written)
        if isDTX {
            counters.comfortNoiseSamples += written
            sources.insert(.comfortNoise)
        } else {
            sources.insert(.decoded)
            updateActiveLevel(level)
        }
        inDTX = isDTX
        concealing = false
        lastChunkQuiet = quiet
    }

    /// Removes a packet that is being played and moves the playout point past it.
    private func finish(_ entry: PacketRing.Entry) {
        if entry.hasLBRR, fecUsedSequence != entry.sequence { counters.fecPacketsDiscarded += 1 }
        ring.remove(entry.sequence)
        nextSequence = entry.sequence + 1
        windowStart = nextSequence
        if let jumpBoundary, nextSequence >= jumpBoundary.sequence { self.jumpBoundary = nil }
    }

    /// `nextSequence` is missing while a later packet is held: it is lost (or too late).
    private func recoverLost(before next: PacketRing.Entry, now: Duration, sources: inout PullResult.Sources) {
        let missing = next.sequence - nextSequence
        let hole = next.timestamp - decodeTimestamp
        guard hole >= Int64(Self.quantum) else {
            // Concealment while the buffer was dry already covered the missing packets.
            nextSequence = next.sequence
            windowStart = nextSequence
            return
        }
        if missing == 1, next.hasLBRR, hole <= Int64(Opus.maxSamplesPerPacket), hole % Int64(Self.quantum) == 0,
           let written = try? decoder.decodeFEC(from: ring.payload(next.sequence), samplesPerChannel: Int(hole),
                                                into: queue.freeSpace) {
            // libopus conceals whatever of the hole the LBRR copy does not cover.
            let recovered = min(written, next.samplesPerChannel)
            counters.fecRecoveredFrames += 1
            counters.fecRecoveredSamples += recovered
            fecUsedSequence = next.sequence
            let level = queue.meanSquareOfWritten(written)
            if written > recovered {
                countConcealed(written - recovered, level: level)
            } else {
                concealing = false
            }
            recordEmitted(written, arrival: next.arrival, now: now)
            queue.commit(written)
            sources.insert(.recoveredByFEC)
            lastChunkQuiet = isQuiet(level)
            nextSequence = next.sequence
            windowStart = nextSequence
            decodeTimestamp += Int64(written)
            return
        }
        // Conceal one lost packet, splitting the hole evenly among the missing ones.
        let share = Int(hole / missing) / Self.quantum * Self.quantum
        let length = min(Opus.maxSamplesPerPacket, max(Self.quantum, share))
        conceal(length, sources: &sources)
        decodeTimestamp += Int64(length)
        nextSequence += 1
        windowStart = nextSequence
    }

    /// Comfort noise during a DTX silence, `limit` samples at most; the silence is where
    /// the delay moves most freely.
    private func comfortNoise(upTo limit: Int, excess: Double, sources: inout PullResult.Sources) {
        let frame = configuration.samplesPerFrame
        let length = min(limit, frame) / Self.quantum * Self.quantum
        let seconds = Double(length) / Double(Self.sampleRate)
        if shouldSpeedUp(excess: excess, dropping: seconds), limit > length {
            // Skip part of the silence instead of playing it.
            decodeTimestamp += Int64(length)
            counters.removedSamplesForAcceleration += length
            sources.insert(.accelerated)
            return
        }
        let written = concealmentAudio(length)
        queue.commit(written)
        if excess < -deadBand {
            counters.insertedSamplesForDeceleration += written
            sources.insert(.decelerated)
        } else {
            counters.comfortNoiseSamples += written
            decodeTimestamp += Int64(written)
        }
        sources.insert(.comfortNoise)
        concealing = false
        lastChunkQuiet = true
    }

    private func insertForDeceleration(_ length: Int, sources: inout PullResult.Sources) {
        let written = concealmentAudio(length)
        lastChunkQuiet = isQuiet(queue.meanSquareOfWritten(written))
        queue.commit(written)
        counters.insertedSamplesForDeceleration += written
        sources.insert(.decelerated)
    }

    /// Conceals `length` samples per channel for lost or late packets, counted as W3C counts them.
    private func conceal(_ length: Int, sources: inout PullResult.Sources) {
        let written = concealmentAudio(length)
        let level = queue.meanSquareOfWritten(written)
        countConcealed(written, level: level)
        queue.commit(written)
        lastChunkQuiet = isQuiet(level)
        sources.insert(.concealed)
    }

    private func countConcealed(_ length: Int, level: Double) {
        counters.concealedSamples += length
        if level <= Self.silentLevel { counters.silentConcealedSamples += length }
        if !concealing { counters.concealmentEvents += 1 }
        concealing = true
    }

    /// Writes `length` samples of libopus concealment (which fades towards comfort noise
    /// as it goes on) into the queue's free space without committing them.
    private func concealmentAudio(_ length: Int) -> Int {
        if let written = try? decoder.decodeLost(samplesPerChannel: length, into: queue.freeSpace) { return written }
        let space = queue.freeSpace
        for index in 0..<(length * configuration.layout.count) { space[index] = 0 }
        return length
    }

    /// Adds the W3C delay of `length` samples per channel about to be committed: each
    /// waits from its packet's arrival to the pull that plays it.
    private func recordEmitted(_ length: Int, arrival: Duration, now: Duration) {
        let frame = configuration.samplesPerFrame
        let frameSeconds = Double(frame) / Double(Self.sampleRate)
        // Sum of floor(position / frame) over the queue positions the samples take.
        func pullsBefore(_ position: Int) -> Int {
            let (whole, rest) = position.quotientAndRemainder(dividingBy: frame)
            return frame * whole * (whole - 1) / 2 + whole * rest
        }
        let start = queue.count
        let waits = Double(pullsBefore(start + length) - pullsBefore(start)) * frameSeconds
        counters.jitterBufferDelay += Double(length) * ((now - arrival) / .seconds(1)) + waits
        counters.jitterBufferEmittedCount += length
        counters.jitterBufferTargetDelay += Double(length) * targetSeconds
    }

    private func isQuiet(_ meanSquare: Double) -> Bool {
        meanSquare <= max(Self.quietLevel, activeLevel * 0.01)
    }

    private func updateActiveLevel(_ meanSquare: Double) {
        guard meanSquare > Self.quietLevel else { return }
        activeLevel = activeLevel == 0 ? meanSquare : activeLevel * 0.99 + meanSquare * 0.01
    }
}
