extension MediaCore {
    /// Whether plain RTCP may be taken: only where some stream is plain RTP (an SDP session
    /// without keys). Where keys are in use, RTCP must authenticate.
    private var acceptsPlainRTCP: Bool {
        inbound.isEmpty || sendStreams.contains { $0.outboundKey == nil } || receiveStreams.contains { $0.inboundKey == nil }
    }

    /// Authenticates (SRTCP) and parses one RTCP compound packet, then acts on each part.
    func handleRTCP(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) {
        guard let length = unprotectRTCP(datagram) else { return }
        guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: datagram[0..<length])) else {
            counters.malformedRTCP += 1
            return
        }
        counters.rtcpReceived += 1
        lastAuthenticatedArrival = now
        for packet in packets { handle(packet, from: source, socket: socket, now: now) }
    }

    /// Checks and decrypts an SRTCP packet in place with the first inbound key that takes it
    /// (several keys only in SDP sessions whose sections differ); nil when none does and
    /// plain RTCP is not allowed.
    private func unprotectRTCP(_ datagram: UnsafeMutableRawBufferPointer) -> Int? {
        var failure: SRTPError?
        if inbound.count == 1 {
            do throws(SRTPError) {
                return try inbound[0].context.unprotectRTCP(datagram, length: datagram.count)
            } catch {
                failure = error
            }
        } else if !inbound.isEmpty, datagram.count <= rtcpScratch.count {
            // Each key is tried on a copy, so a failed attempt leaves the bytes intact.
            for entry in inbound {
                let attempt: Int? = rtcpScratch.withUnsafeMutableBytes { scratch in
                    UnsafeMutableRawBufferPointer(rebasing: scratch[0..<datagram.count]).copyMemory(from: UnsafeRawBufferPointer(datagram))
                    do throws(SRTPError) {
                        let length = try entry.context.unprotectRTCP(scratch, length: datagram.count)
                        datagram.copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[0..<length]))
                        return length
                    } catch {
                        if failure == nil || error.code != .authenticationFailed { failure = error }
                        return nil
                    }
                }
                if let attempt { return attempt }
            }
        }
        if acceptsPlainRTCP { return datagram.count }
        switch failure?.code {
        case .replayed?, .tooOld?: counters.rtcpReplays += 1
        default: counters.rtcpAuthenticationFailures += 1
        }
        return nil
    }

    private func handle(_ packet: RTCPPacket, from source: SocketAddress, socket: Int, now: Duration) {
        switch packet {
        case .senderReport(let report):
            for stream in receiveStreams where stream.ssrc == report.ssrc || stream.statistics.ssrc == report.ssrc {
                stream.statistics.rtcpReceived += 1
                stream.lastSenderReport = (NTPTime.compact(report.ntpTimestamp), now)
                stream.senderClock = (report.rtpTimestamp, now)
                let mapping = SenderClockMapping(ntp: report.ntpTimestamp, rtpTimestamp: report.rtpTimestamp,
                                                 clockRate: stream.configuration.clockRate)
                if isLipSyncAudio(stream) { lipSyncs[stream.configuration.participant, default: LipSync()].audioSenderReport(mapping) }
                if isLipSyncVideo(stream) { lipSyncs[stream.configuration.participant, default: LipSync()].videoSenderReport(mapping) }
            }
            record(report.reports, now: now)
        case .receiverReport(let report):
            record(report.reports, now: now)
        case .goodbye(let bye):
            for stream in receiveStreams where !stream.statistics.endedByGoodbye {
                guard let ssrc = stream.ssrc ?? stream.statistics.ssrc, bye.sources.contains(ssrc) else { continue }
                stream.statistics.endedByGoodbye = true
                counters.goodbyesReceived += 1
                emit(.goodbye(stream.id))
            }
        case .extendedReport(let report):
            answerReferenceTimes(report, now: now)
            measureRoundTrip(report, now: now)
        case .transportFeedback(let feedback):
            counters.transportFeedbackReceived += 1
            followsEstimate = true
            _ = estimator.handle(feedback, now: now)
            estimateUpdated = true
        case .receiverEstimatedMaxBitrate:
            _ = estimator.handle(packet, now: now)
            estimateUpdated = true
        case .genericNACK(let nack):
            guard let stream = sendStreams.first(where: { $0.configuration.ssrc == nack.mediaSSRC }) else {
                counters.feedbackForUnknownStreams += 1
                return
            }
            stream.statistics.nackCount += 1
            resend(packet, for: stream, now: now)
        case .pictureLossIndication(let pli):
            guard let stream = sendStreams.first(where: { $0.configuration.ssrc == pli.mediaSSRC }) else {
                counters.feedbackForUnknownStreams += 1
                return
            }
            stream.responder?.handle(packet, now: now, rtt: roundTripTime) { _ in }
        case .fullIntraRequest(let fir):
            guard let stream = sendStreams.first(where: { sender in fir.entries.contains { $0.ssrc == sender.configuration.ssrc } }) else {
                counters.feedbackForUnknownStreams += 1
                return
            }
            stream.responder?.handle(packet, now: now, rtt: roundTripTime) { _ in }
        default:
            break
        }
    }

    /// Answers a NACK from the stream's history: the stored packets go out again as they were.
    private func resend(_ nack: RTCPPacket, for stream: SendStreamState, now: Duration) {
        guard var responder = stream.responder,
              let destination = stream.configuration.destination ?? path else { return }
        responder.handle(nack, now: now, rtt: roundTripTime) { bytes in
            transmits.enqueue(copying: bytes, to: destination, socket: stream.configuration.socket, kind: .retransmission)
        }
        stream.responder = responder
    }

    /// Reception report blocks about this side's streams: loss, jitter and the round trip
    /// from LSR/DLSR (RFC 3550 6.4.1).
    private func record(_ blocks: [ReceptionReport], now: Duration) {
        let compactNow = NTPTime.compact(ntpTime(now))
        for block in blocks {
            guard let stream = sendStreams.first(where: { $0.configuration.ssrc == block.ssrc }) else { continue }
            var rtt: Duration?
            if block.lastSenderReport != 0 {
                rtt = Self.roundTrip(now: compactNow, sent: block.lastSenderReport, delay: block.delaySinceLastSenderReport)
                if let rtt { updateRoundTripTime(rtt) }
            }
            // Loss from reports only while no transport-wide feedback has come: that feedback
            // carries the same losses per packet, and the estimator takes one source.
            if counters.transportFeedbackReceived == 0 {
                _ = estimator.handleReceiverReport(fractionLost: block.fractionLost, now: now)
                followsEstimate = true
                estimateUpdated = true
            }
            stream.statistics.remoteReport = RemoteReport(
                packetsLost: Int(block.cumulativeLost), jitter: Double(block.jitter) / Double(stream.configuration.clockRate),
                roundTripTime: rtt.map { $0 / .seconds(1) }, fractionLost: Double(block.fractionLost) / 256)
        }
    }

    /// A round trip from compact NTP times: now - sent - delay (RFC 3550 6.4.1, RFC 3611
    /// 4.5), nil when the result is not plausible (negative or over 10 s).
    static func roundTrip(now: UInt32, sent: UInt32, delay: UInt32) -> Duration? {
        let units = now &- sent &- delay
        let seconds = Double(units) / 65_536
        guard seconds >= 0, seconds < 10 else { return nil }
        return .nanoseconds(Int64(seconds * 1e9))
    }

    func updateRoundTripTime(_ rtt: Duration) {
        roundTripTime = max(rtt, .milliseconds(1))
        counters.roundTripTime = roundTripTime / .seconds(1)
        estimator.setRoundTripTime(roundTripTime)
        for stream in receiveStreams { stream.video?.roundTripTime = roundTripTime }
    }

    /// Answers each RRTR block (RFC 3611 4.4) at once with a DLRR whose delay is zero, so
    /// a receiver that sends no media (and so gets no report blocks) learns its RTT. Sent
    /// alone (reduced-size RTCP, RFC 5506) to where this side's RTCP goes.
    private func answerReferenceTimes(_ report: ExtendedReport, now: Duration) {
        for case .receiverReferenceTime(let ntp) in report.blocks {
            guard let stream = sendStreams.first(where: { $0.configuration.kind == .video }) ?? sendStreams.first,
                  let destination = stream.configuration.rtcpDestination ?? stream.configuration.destination ?? path else { return }
            let answer = ExtendedReport(senderSSRC: stream.configuration.ssrc, blocks: [.dlrr([ExtendedReport.DLRRSubBlock(
                ssrc: report.senderSSRC, lastReceiverReport: NTPTime.compact(ntp), delaySinceLastReceiverReport: 0)])])
            if queueRTCP([.extendedReport(answer)], to: destination, socket: stream.configuration.socket, key: stream.outboundKey) {
                counters.referenceTimesAnswered += 1
            }
        }
    }

    /// RTT from a DLRR answering one of this side's RRTRs.
    private func measureRoundTrip(_ report: ExtendedReport, now: Duration) {
        let compactNow = NTPTime.compact(ntpTime(now))
        for case .dlrr(let entries) in report.blocks {
            for entry in entries where entry.ssrc == configuration.rtcpSSRC && entry.lastReceiverReport != 0 {
                if let rtt = Self.roundTrip(now: compactNow, sent: entry.lastReceiverReport, delay: entry.delaySinceLastReceiverReport) {
                    updateRoundTripTime(rtt)
                }
            }
        }
    }

    // MARK: Feedback and reports this side sends

    /// Queues feedback about a receive stream to its sender, protected with the stream's
    /// feedback key. Best effort: the stream asks again.
    @discardableResult
    func queueFeedback(_ packet: RTCPPacket, for stream: ReceiveStreamState) -> Bool {
        guard let destination = feedbackRoute(for: stream) else { return false }
        return queueRTCP([packet], to: destination.address, socket: destination.socket, key: stream.feedbackKey)
    }

    /// Where feedback about a stream goes: the pinned path, else where its RTP comes from
    /// (symmetric RTP).
    private func feedbackRoute(for stream: ReceiveStreamState) -> (address: SocketAddress, socket: Int)? {
        if isPathPinned, let path { return (path, stream.source?.socket ?? 0) }
        return stream.source ?? path.map { ($0, 0) }
    }

    /// Each receive stream's reception report, with an RRTR so this side learns its RTT.
    func queueReceiverReports(now: Duration) {
        let ntp = ntpTime(now)
        for stream in receiveStreams {
            guard let ssrc = stream.statistics.ssrc, let destination = feedbackRoute(for: stream) else { continue }
            var delay: UInt32 = 0
            if let last = stream.lastSenderReport {
                delay = UInt32(clamping: Int64((now - last.arrival) / .seconds(1) * 65_536))
            }
            let block = stream.reception.receptionReport(ssrc: ssrc, lastSenderReport: stream.lastSenderReport?.ntp ?? 0,
                                                         delaySinceLastSenderReport: delay)
            let reference = ExtendedReport(senderSSRC: configuration.rtcpSSRC, blocks: [.receiverReferenceTime(ntp: ntp)])
            let packets: [RTCPPacket] = [.receiverReport(ReceiverReport(ssrc: configuration.rtcpSSRC, reports: [block])),
                                         .extendedReport(reference)]
            if queueRTCP(packets, to: destination.address, socket: destination.socket, key: stream.feedbackKey) {
                receiverReports.reportSent(size: RTCPPacket.compoundSize(of: packets))
            }
        }
    }

    /// The transport-wide feedback that is due, to where the numbered packets come from.
    func queueTransportFeedback(now: Duration) {
        guard let destination = feedbackDestination else { return }
        let route = isPathPinned ? (path ?? destination.address) : destination.address
        let key = receiveStreams.first(where: { $0.source?.address == destination.address })?.feedbackKey
            ?? configuration.outboundKeying.flatMap { keying in outbound.firstIndex { $0.keying == keying } }
        for packet in feedback.feedback(now: now) {
            if queueRTCP([.transportFeedback(packet)], to: route, socket: destination.socket, key: key) {
                counters.transportFeedbackSent += 1
            }
        }
    }
}
