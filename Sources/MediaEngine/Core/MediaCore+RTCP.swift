// RTCP as the core sees it: one compound packet is authenticated once, then each part goes
// to the pipeline it is about (reports from senders to the receive side, everything about
// this side's streams to the send side); the round trip both use is kept here.
extension MediaCore {
    /// Authenticates (SRTCP) and parses one RTCP compound packet, then acts on each part.
    func handleRTCP(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) {
        // Plain RTCP only where some stream is plain RTP (an SDP session without keys);
        // where keys are in use, RTCP must authenticate.
        let plainAllowed = receive.hasNoKeys || send.hasPlainStream || receive.hasPlainStream
        guard let length = receive.unprotectRTCP(datagram, plainAllowed: plainAllowed) else { return }
        guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: datagram[0..<length])) else {
            counters.malformedRTCP += 1
            return
        }
        counters.rtcpReceived += 1
        lastAuthenticatedControl = now
        for packet in packets {
            switch packet {
            case .senderReport(let report):
                receive.handle(report, now: now)
            case .goodbye(let bye):
                receive.handle(bye)
            case .extendedReport(let report):
                measureRoundTrip(report, now: now)
            default:
                break
            }
            if let rtt = send.handle(packet, now: now, path: mediaPath) { updateRoundTripTime(rtt) }
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
        send.setRoundTripTime(roundTripTime)
        receive.setRoundTripTime(roundTripTime)
    }

    /// RTT from a DLRR answering one of this side's RRTRs.
    private func measureRoundTrip(_ report: ExtendedReport, now: Duration) {
        let compactNow = NTPTime.compact(NTPTime.at(now, epoch: configuration.ntpEpoch))
        for case .dlrr(let entries) in report.blocks {
            for entry in entries where entry.ssrc == configuration.rtcpSSRC && entry.lastReceiverReport != 0 {
                if let rtt = Self.roundTrip(now: compactNow, sent: entry.lastReceiverReport, delay: entry.delaySinceLastReceiverReport) {
                    updateRoundTripTime(rtt)
                }
            }
        }
    }
}
