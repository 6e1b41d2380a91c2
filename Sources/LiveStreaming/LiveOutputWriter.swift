import MediaEngine

/// The writer thread of a `LiveOutput`: connect, write, and on failure close, report and
/// (for URLs) try again after the retry policy's delay.
extension LiveOutput {
    /// What the writer does next.
    private enum Step {
        case write(LivePacket, base: Int64)
        /// Disabled, removed or stopping, with nothing left to write: close cleanly.
        case close
        case idle
    }

    /// The thread's body; returns when the output is removed or the streamer stops.
    func run() {
        var retries = 0
        var attempts = 0
        var pendingTrial = self.trial
        while true {
            // Wait until enabled (and not parked after a file failure), or the end.
            var ready = false
            while !ready {
                let ending = state.withLock(waitingUpTo: .seconds(1), until: { $0.ending || ($0.enabled && !$0.parked) }) { state in
                    ready = state.ending || (state.enabled && !state.parked)
                    return state.ending
                }
                if ending { return }
            }
            interrupt.reset()
            if attempts > 0 { state.withLock { $0.statistics.reconnects += 1 } }
            attempts += 1
            report(.connecting)
            let muxer: LiveMuxer
            do {
                muxer = try LiveMuxer(target: target, parameters: encoders.parameters, interrupt: interrupt)
            } catch {
                // Called off by disable, removal or stop: not a failure to report.
                let calledOff = state.withLock { $0.ending || !$0.enabled }
                if !calledOff { report(.connectFailed, error) }
                if let trial = pendingTrial {
                    trial.finished(self, .failure(error))
                    return
                }
                if target.isFile {
                    state.withLock { $0.parked = true }
                } else {
                    backOff(retries)
                    retries += 1
                }
                continue
            }
            retries = 0
            if let trial = pendingTrial {
                guard trial.promote(self) else {
                    try? muxer.finish()
                    trial.finished(self, .failure(LiveStreamError(.internalError, "\(target): the switch was called off")))
                    return
                }
                state.withLock { $0.reporting = true }
                trial.finished(self, .success(()))
                pendingTrial = nil
            }
            state.withLock { state in
                state.accepting = true
                state.awaitingKeyframe = true
                state.droppingUntilKeyframe = false
                state.connectedSince = MonotonicClock.now()
            }
            report(.connected)
            encoders.requestKeyframe()
            let failure = pump(muxer)
            state.withLock { state in
                state.accepting = false
                state.queue.removeAll()
                if let since = state.connectedSince { state.statistics.connectedDuration += MonotonicClock.now() - since }
                state.connectedSince = nil
            }
            if let failure {
                muxer.abandon()
                report(.pushFailed, failure)
                if target.isFile {
                    state.withLock { $0.parked = true }
                } else {
                    backOff(retries)
                    retries += 1
                }
                continue
            }
            do {
                try muxer.finish()
            } catch {
                report(.pushFailed, error)
                continue
            }
            report(.initial)
        }
    }

    /// Writes queued packets until the output is turned off or a write fails.
    /// - Returns: the failure, or nil when it ended cleanly (the trailer is still to write).
    private func pump(_ muxer: LiveMuxer) -> LiveStreamError? {
        var pushing = false
        while true {
            let step = state.withLock(waitingUpTo: .milliseconds(500), until: { !$0.queue.isEmpty || $0.ending || !$0.enabled }) { state -> Step in
                if let packet = state.queue.popFirst() { return .write(packet, base: state.base) }
                return state.ending || !state.enabled ? .close : .idle
            }
            switch step {
            case .idle:
                continue
            case .close:
                return nil
            case .write(let packet, let base):
                do {
                    try muxer.write(packet, base: base)
                } catch {
                    return error
                }
                state.withLock { state in
                    state.statistics.packetsWritten += 1
                    state.statistics.bytesWritten += packet.size
                    if packet.isVideo && packet.isKeyframe { state.statistics.videoKeyframes += 1 }
                }
                if !pushing {
                    pushing = true
                    report(.pushing)
                }
            }
        }
    }

    /// Waits before retry number `retry`, or less when the output is turned off or ends.
    private func backOff(_ retry: Int) {
        state.withLock(waitingUpTo: self.retry.delay(retry: retry), until: { $0.ending || !$0.enabled }) { _ in }
    }
}
