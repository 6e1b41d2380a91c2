extension MediaSender {
    /// The SDP a receiver (ffmpeg, GStreamer, `mediaengine receive`) needs for what this
    /// sender sends: Opus and VP8 sections at the destination ports, `a=crypto` with the
    /// key when protected, the header extensions in use, and `a=rtcp-mux` when bundled.
    ///
    /// SSRCs are listed (`a=ssrc ... cname:`) only when the configuration fixes them, so the
    /// text depends only on the configuration and the key.
    /// The text holds the key: treat the file as a secret.
    public func sessionDescription() throws(SDPError) -> SessionDescription {
        let configuration = self.configuration
        let protocolName: MediaDescription.TransportProtocol = configuration.keying == nil ? .rtpAVP : .rtpSAVP
        var crypto: [SessionDescription.Attribute] = []
        if let keying = configuration.keying {
            let suite = MediaDescription.Crypto.Suite(rawValue: keying.profile.rawValue)
            crypto = [.crypto(try MediaDescription.Crypto(suite: suite, keyAndSalt: keying.bytes))]
        }
        let mux: [SessionDescription.Attribute] = configuration.rtcpMux ? [.rtcpMux] : []
        func extensionMap(_ uri: String) -> [SessionDescription.Attribute] {
            configuration.extensions.id(for: uri).map { [.extensionMap(MediaDescription.ExtensionMap(id: $0, uri: uri))] } ?? []
        }
        func ssrc(_ value: UInt32?) -> [SessionDescription.Attribute] {
            value.map { [.ssrc(MediaDescription.SSRCAttribute.cname(configuration.cname, ssrc: $0))] } ?? []
        }
        var media: [MediaDescription] = []
        if configuration.audio != nil {
            media.append(MediaDescription(
                kind: .audio, port: UInt16(configuration.audioDestination.port), transportProtocol: protocolName,
                payloadTypes: [configuration.audioPayloadType],
                bandwidths: [.applicationSpecific(kilobitsPerSecond: UInt64(configuration.audioBitrate / 1000))],
                attributes: [
                    .rtpMap(MediaDescription.RTPMap(payloadType: configuration.audioPayloadType, encodingName: "opus",
                                                    clockRate: 48_000, channels: 2)),
                    .formatParameters(MediaDescription.FormatParameters(
                        payloadType: configuration.audioPayloadType,
                        parameters: ["minptime": "10", "useinbandfec": "1",
                                     "sprop-stereo": configuration.audio?.layout == .stereo ? "1" : "0"])),
                ] + crypto + extensionMap(RTPExtensionMap.audioLevelURI)
                    + extensionMap(RTPExtensionMap.transportSequenceNumberURI) + mux
                    + ssrc(configuration.audioSSRC)))
        }
        if configuration.video != nil {
            media.append(MediaDescription(
                kind: .video, port: UInt16(configuration.videoDestination.port), transportProtocol: protocolName,
                payloadTypes: [configuration.videoPayloadType],
                bandwidths: [.applicationSpecific(kilobitsPerSecond: UInt64(configuration.videoBitrate / 1000))],
                attributes: [
                    .rtpMap(MediaDescription.RTPMap(payloadType: configuration.videoPayloadType, encodingName: "VP8",
                                                    clockRate: UInt32(VP8.clockRate))),
                ] + crypto + extensionMap(RTPExtensionMap.transportSequenceNumberURI) + mux
                    + ssrc(configuration.videoSSRC)))
        }
        let destination = configuration.audio != nil ? configuration.audioDestination : configuration.videoDestination
        let connection: SessionDescription.Connection = destination.isIPv6 ? .ip6(destination.host) : .ip4(destination.host)
        return SessionDescription(
            origin: SessionDescription.Origin(sessionID: 0, sessionVersion: 0,
                                              addressType: destination.isIPv6 ? .ip6 : .ip4, address: destination.host),
            name: "mediaengine send", connection: connection, media: media)
    }
}

extension MediaReceiver {
    /// What an SDP file asks a receiver to do: the address to listen on and the streams.
    public struct Plan: Sendable {
        /// The connection address of the first usable section.
        public var host: String
        public var streams: [StreamDescription]
    }

    /// Reads the audio (Opus) and video (VP8) sections of `description`, as ffmpeg,
    /// GStreamer and `mediaengine send` write them.
    /// - Throws: `SDPError` naming the section when it has no connection address, no
    ///   Opus or VP8 payload type, or a crypto suite the engine does not speak; also when
    ///   nothing usable is left.
    public static func plan(for description: SessionDescription) throws(SDPError) -> Plan {
        var host: String?
        var streams: [StreamDescription] = []
        for (index, media) in description.media.enumerated() where media.port != 0 {
            let section = "media section \(index + 1) (m=\(media.kind))"
            let kind: StreamDescription.Kind
            let codec: String
            switch media.kind {
            case .audio: (kind, codec) = (.audio, "opus")
            case .video: (kind, codec) = (.video, "VP8")
            default: continue
            }
            guard let map = media.rtpMaps.first(where: { $0.encodingName.caseInsensitiveCompare(codec) == .orderedSame }) else {
                throw SDPError(.unsupported, "\(section) offers no \(codec) payload type; the engine decodes Opus and VP8")
            }
            guard let connection = description.effectiveConnection(for: media) else {
                throw SDPError(.missingField, "\(section) has no connection (c=) address")
            }
            var keying: SRTPKeyingMaterial?
            if let crypto = media.crypto.first {
                guard let profile = SRTPProfile(rawValue: crypto.suite.rawValue) else {
                    throw SDPError(.unsupported, "\(section): crypto suite \(crypto.suite) is not supported (use \(SRTPProfile.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                do {
                    keying = try SRTPKeyingMaterial(profile: profile, bytes: crypto.keyAndSalt)
                } catch {
                    throw SDPError(.badCrypto, "\(section): \(error.message)")
                }
            } else if media.transportProtocol.isSecure {
                throw SDPError(.badCrypto, "\(section) is \(media.transportProtocol) but has no a=crypto key (DTLS-SRTP is not supported)")
            }
            var layout = ChannelLayout.mono
            if kind == .audio, let parameters = media.formatParameters(for: map.payloadType)?.parameters,
               parameters["stereo"] == "1" || parameters["sprop-stereo"] == "1" {
                layout = .stereo
            }
            let port = Int(media.port)
            let rtcpPort = media.rtcpMux ? port : Int(media.rtcp?.port ?? UInt16(truncatingIfNeeded: port + 1))
            host = host ?? connection.address
            streams.append(StreamDescription(kind: kind, payloadType: map.payloadType, clockRate: Int(map.clockRate), layout: layout,
                                             port: port, rtcpPort: rtcpPort, keying: keying, ssrc: media.ssrcs.first,
                                             transportSequenceExtensionID: media.extensionID(for: RTPExtensionMap.transportSequenceNumberURI)))
        }
        guard let host, !streams.isEmpty else {
            throw SDPError(.unsupported, "the SDP describes no audio or video section the engine can receive")
        }
        return Plan(host: host, streams: streams)
    }
}
