// Frame assembly, giving up and restarts for `VideoReceiveStream`.
extension VideoReceiveStream {
    private enum FrameEnd {
        /// Every packet from the start to the marker is held; the marker's sequence number.
        case complete(Int64)
        /// A packet is missing at this sequence number.
        case missing(Int64)
        /// The packets cannot form a frame (timestamp change or a new start before the marker).
        case broken
    }

    /// The unwrapped sequence number, or nil for a packet too far from the stream (which
    /// may restart the stream when enough of them arrive in sequence).
    mutating func unwrap(_ sequenceNumber: UInt16, now: Duration) -> Int64? {
        guard let highest else { return Int64(sequenceNumber) }
        let delta = sequenceDistance(from: highest, to: sequenceNumber)
        if abs(delta) <= Int64(configuration.maximumSequenceJump) { return highest + delta }
        if let run = resynchronization, (1...16).contains(sequenceNumber &- run.last) {
            resynchronization = (sequenceNumber, run.count + 1)
        } else {
            resynchronization = (sequenceNumber, 1)
        }
        guard let run = resynchronization, run.count >= configuration.resynchronizationPackets else { return nil }
        statistics.resynchronizations += 1
        restart(now: now, reason: .streamRestart)
        return Int64(sequenceNumber)
    }

    /// Forgets the stream's packets and state (not its counters or SSRC history): a new
    /// stream begins with the next packet and waits for a keyframe.
    mutating func restart(now: Duration, reason: KeyframeRequester.Reason) {
        statistics.packetsDiscarded += ring.count
        ring.removeAll()
        nack.reset()
        highest = nil
        floor = nil
        decodeFrom = nil
        floorIsFixed = false
        blockedSince = nil
        keyframeCandidates.removeAll(keepingCapacity: true)
        resynchronization = nil
        sourceCandidate = nil
        awaitingSince = now
        awaitingReason = reason
    }

    /// Moves the window so `sequence` fits, dropping what falls out of it.
    mutating func makeRoom(for sequence: Int64, now: Duration) {
        statistics.windowOverflows += 1
        let newFloor = sequence - Int64(ring.capacity) + 1
        if let decodeFrom, decodeFrom < newFloor { giveUp(now: now, reason: .bufferOverflow) }
        release(below: newFloor)
    }

    /// Hands out every frame that can be decoded now, in order.
    mutating func assembleFrames(now: Duration, into actions: inout [Action]) {
        while true {
            if let next = decodeFrom, let packet = ring[next] {
                if packet.isFiller {
                    ring.remove(next)
                    decodeFrom = next + 1
                    floor = next + 1
                    blockedSince = nil
                    continue
                }
                if packet.startsFrame, case .complete(let last) = frameEnd(from: next) {
                    emit(from: next, through: last, now: now, into: &actions)
                    continue
                }
            }
            guard let (start, last) = completeKeyframe() else { return }
            emit(from: start, through: last, now: now, into: &actions)
        }
    }

    /// The earliest held keyframe whose packets are all there, dropping stale candidates.
    private mutating func completeKeyframe() -> (Int64, Int64)? {
        let floor = self.floor ?? .min
        keyframeCandidates.removeAll { $0 < floor || !(ring[$0]?.startsKeyframe ?? false) }
        for start in keyframeCandidates {
            if case .complete(let last) = frameEnd(from: start) { return (start, last) }
        }
        return nil
    }

    private func frameEnd(from start: Int64) -> FrameEnd {
        guard let first = ring[start] else { return .missing(start) }
        var sequence = start
        while sequence - start < Int64(ring.capacity) {
            guard let packet = ring[sequence] else { return .missing(sequence) }
            if packet.timestamp != first.timestamp || packet.isFiller || (sequence > start && packet.startsFrame) {
                return .broken
            }
            if packet.marker { return .complete(sequence) }
            sequence += 1
        }
        return .broken
    }

    private mutating func emit(from start: Int64, through last: Int64, now: Duration, into actions: inout [Action]) {
        release(below: start)
        guard let first = ring[start] else { return }
        var size = 0
        var firstArrival = first.arrival
        for sequence in start...last {
            let packet = ring[sequence]
            size += packet?.length ?? 0
            firstArrival = min(firstArrival, packet?.arrival ?? firstArrival)
        }
        // The previous frame's buffer, reused when nobody holds that frame any more.
        var data = frameBuffer
        frameBuffer = []
        data.removeAll(keepingCapacity: true)
        data.reserveCapacity(size)
        for sequence in start...last {
            ring.appendPayload(of: sequence, to: &data)
            ring.remove(sequence)
        }
        decodeFrom = last + 1
        floor = last + 1
        blockedSince = nil
        floorIsFixed = true
        awaitingSince = nil
        statistics.framesAssembled += 1
        if first.startsKeyframe {
            statistics.keyframesAssembled += 1
            keyframes.keyframeReceived(now: now)
        }
        nack.clear(before: last + 1)
        frameBuffer = data
        actions.append(.decode(Frame(data: data, timestamp: first.timestamp, isKeyframe: first.startsKeyframe,
                                     pictureID: first.pictureID, firstSequenceNumber: UInt16(truncatingIfNeeded: start),
                                     lastSequenceNumber: UInt16(truncatingIfNeeded: last), firstArrival: firstArrival)))
    }

    /// Gives up the frame the stream is blocked on when its deadline passed or its missing
    /// packet was abandoned by the NACK generator.
    /// - Returns: whether it gave up.
    mutating func giveUpIfBlocked(now: Duration) -> Bool {
        guard let next = decodeFrom, let highest, ring.count > 0 else {
            blockedSince = nil
            return false
        }
        var missing = next
        while missing <= highest, ring.contains(missing) { missing += 1 }
        if blockedSince == nil {
            var earliest: Duration?
            var sequence = next
            while sequence <= highest {
                if let packet = ring[sequence] { earliest = min(earliest ?? packet.arrival, packet.arrival) }
                sequence += 1
            }
            blockedSince = earliest ?? now
        }
        if let blockedSince, now - blockedSince >= frameDelay(rtt: roundTripTime) {
            giveUp(now: now, reason: .frameDeadlineMissed)
            return true
        }
        if let abandoned = nack.highestAbandoned, missing <= abandoned {
            giveUp(now: now, reason: .packetsGivenUp)
            return true
        }
        return false
    }

    /// Stops waiting for the blocked frame: drops everything before the earliest keyframe
    /// start held (or everything held), stops asking for those packets, asks for a keyframe.
    mutating func giveUp(now: Duration, reason: KeyframeRequester.Reason) {
        statistics.framesGivenUp += 1
        floorIsFixed = true
        decodeFrom = nil
        blockedSince = nil
        keyframes.request(reason, now: now)
        let floor = self.floor ?? .min
        var keep = (highest ?? floor) + 1
        for candidate in keyframeCandidates where candidate >= floor && ring.contains(candidate) {
            keep = min(keep, candidate)
        }
        release(below: keep)
    }

    /// While waiting for a keyframe, drops held packets older than the frame deadline, up
    /// to the last such packet, so gaps just before younger packets stay open for NACK.
    mutating func discardStalePackets(now: Duration) {
        guard var sequence = floor, let highest, ring.count > 0 else { return }
        let limit = now - frameDelay(rtt: roundTripTime)
        var newFloor: Int64?
        while sequence <= highest {
            if let packet = ring[sequence] {
                guard packet.arrival < limit else { break }
                newFloor = sequence + 1
            }
            sequence += 1
        }
        if let newFloor { release(below: newFloor) }
    }

    /// Drops held packets before `sequence` and raises the window's floor to it.
    mutating func release(below sequence: Int64) {
        guard let floor, sequence > floor else { return }
        if ring.count > 0 {
            var current = floor
            // Walk at most one window: older slots cannot hold packets of this window.
            let end = min(sequence, floor + Int64(ring.capacity))
            while current < end {
                if ring.remove(current) { statistics.packetsDiscarded += 1 }
                current += 1
            }
        }
        self.floor = sequence
        if let decodeFrom, decodeFrom < sequence { self.decodeFrom = nil }
        nack.clear(before: sequence)
    }
}
