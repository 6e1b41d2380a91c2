extension MediaDescription {
    /// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<encoding parameters>]`
    /// (RFC 8866 6.6): what a dynamic payload type carries.
    public struct RTPMap: Hashable, Sendable {
        /// The payload type, 0...127.
        public var payloadType: UInt8
        /// The encoding, such as `opus` or `VP8`; compare case-insensitively.
        public var encodingName: String
        /// The RTP clock rate in Hz (48000 for Opus, 90000 for video).
        public var clockRate: UInt32
        /// The audio channel count when written; nil means one channel for audio and
        /// nothing for video.
        public var channels: Int?

        /// Creates an rtpmap.
        /// - Parameters:
        ///   - payloadType: 0...127.
        ///   - encodingName: `opus`, `VP8`, ...
        ///   - clockRate: The RTP clock in Hz.
        ///   - channels: The channel count; Opus is always written with 2 (RFC 7587).
        public init(payloadType: UInt8, encodingName: String, clockRate: UInt32, channels: Int? = nil) {
            self.payloadType = payloadType
            self.encodingName = encodingName
            self.clockRate = clockRate
            self.channels = channels
        }

        /// Parses the value after `a=rtpmap:`.
        /// - Throws: `SDPError` with code `badAttribute` naming the problem.
        public init(attributeValue value: String) throws(SDPError) {
            let fields = SDPScanning.fields(value[...])
            guard fields.count == 2 else {
                throw SDPError(.badAttribute, "rtpmap needs <payload type> <encoding>/<clock rate>")
            }
            guard let payloadType = SDPScanning.decimal(fields[0], as: UInt8.self), payloadType <= 127 else {
                throw SDPError(.badAttribute, "rtpmap payload type is not a number in 0...127")
            }
            let parts = SDPScanning.split(fields[1], at: "/", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3, !parts[0].isEmpty else {
                throw SDPError(.badAttribute, "rtpmap for payload type \(payloadType) needs <encoding>/<clock rate>[/<channels>]")
            }
            guard let clockRate = SDPScanning.decimal(parts[1], as: UInt32.self), clockRate > 0 else {
                throw SDPError(.badAttribute, "rtpmap for payload type \(payloadType) has a clock rate that is not a positive number")
            }
            var channels: Int?
            if parts.count == 3 {
                guard let count = SDPScanning.decimal(parts[2], as: UInt8.self), count > 0 else {
                    throw SDPError(.badAttribute, "rtpmap for payload type \(payloadType) has a channel count that is not a number in 1...255")
                }
                channels = Int(count)
            }
            self.init(payloadType: payloadType, encodingName: String(parts[0]), clockRate: clockRate, channels: channels)
        }

        /// The value after `a=rtpmap:`.
        public var attributeValue: String {
            var text = "\(payloadType) \(SDPScanning.token(encodingName))/\(clockRate)"
            if let channels { text += "/\(channels)" }
            return text
        }

        /// RFC 3551 table 4 and 5: payload types that need no rtpmap.
        static let staticPayloadTypes: [UInt8: RTPMap] = {
            let table: [(UInt8, String, UInt32, Int?)] = [
                (0, "PCMU", 8_000, nil), (3, "GSM", 8_000, nil), (4, "G723", 8_000, nil),
                (5, "DVI4", 8_000, nil), (6, "DVI4", 16_000, nil), (7, "LPC", 8_000, nil),
                (8, "PCMA", 8_000, nil), (9, "G722", 8_000, nil), (10, "L16", 44_100, 2),
                (11, "L16", 44_100, nil), (12, "QCELP", 8_000, nil), (13, "CN", 8_000, nil),
                (14, "MPA", 90_000, nil), (15, "G728", 8_000, nil), (16, "DVI4", 11_025, nil),
                (17, "DVI4", 22_050, nil), (18, "G729", 8_000, nil), (25, "CelB", 90_000, nil),
                (26, "JPEG", 90_000, nil), (28, "nv", 90_000, nil), (31, "H261", 90_000, nil),
                (32, "MPV", 90_000, nil), (33, "MP2T", 90_000, nil), (34, "H263", 90_000, nil),
            ]
            return Dictionary(uniqueKeysWithValues: table.map { ($0.0, RTPMap(payloadType: $0.0, encodingName: $0.1, clockRate: $0.2, channels: $0.3)) })
        }()
    }

    /// The `a=rtpmap` lines, in order.
    public var rtpMaps: [RTPMap] {
        attributes(named: "rtpmap").compactMap { $0.value.flatMap { try? RTPMap(attributeValue: $0) } }
    }

    /// The mapping for `payloadType`: its `a=rtpmap` line, or for an RTP section that
    /// lists a static payload type without one (ffmpeg writes `m=audio 5004 RTP/AVP 0`
    /// alone for PCMU), the RFC 3551 assignment.
    public func rtpMap(for payloadType: UInt8) -> RTPMap? {
        if let explicit = rtpMaps.first(where: { $0.payloadType == payloadType }) { return explicit }
        guard transportProtocol.isRTP, payloadTypes.contains(payloadType) else { return nil }
        return RTPMap.staticPayloadTypes[payloadType]
    }
}

extension SessionDescription.Attribute {
    /// `a=rtpmap:<value>`.
    public static func rtpMap(_ map: MediaDescription.RTPMap) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: "rtpmap", value: map.attributeValue)
    }
}
