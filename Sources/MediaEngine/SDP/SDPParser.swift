/// Parses SDP text line by line into a `SessionDescription`, validating as it goes so
/// every error carries its line number. Linear in the input; bounded by
/// `SessionDescription.maximumSize` and `maximumLineCount`.
///
/// Errors never quote the input: a line may hold key material.
enum SDPParser {
    static func parse(_ text: String) throws(SDPError) -> SessionDescription {
        let bytes = Array(text.utf8)
        guard bytes.count <= SessionDescription.maximumSize else {
            throw SDPError(.tooLarge, "SDP is \(bytes.count) bytes; the limit is \(SessionDescription.maximumSize)")
        }
        var parser = DocumentParser()
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0  // a UTF-8 byte order mark
        var number = 0
        while start < bytes.count {
            number += 1
            guard number <= SessionDescription.maximumLineCount else {
                throw SDPError(.tooLarge, "more than \(SessionDescription.maximumLineCount) lines", line: number)
            }
            let newline = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            var end = newline
            if end > start, bytes[end - 1] == 0x0D { end -= 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            let line = bytes[start..<end]
            start = newline + 1
            if line.isEmpty { continue }
            if let control = line.first(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                throw SDPError(.malformedLine, "contains control character \(control)", line: number)
            }
            guard line.count >= 2, (0x61...0x7A).contains(line[line.startIndex]), line[line.startIndex + 1] == 0x3D else {
                throw SDPError(.malformedLine, "expected <letter>=<value>, a lowercase type letter and '='", line: number)
            }
            let type = Character(Unicode.Scalar(line[line.startIndex]))
            let value = String(decoding: line.dropFirst(2), as: UTF8.self)
            do {
                try parser.consume(type: type, value: value[...], line: number)
            } catch {
                throw error.at(line: number)
            }
        }
        return try parser.finish(lastLine: number)
    }
}

/// The state of one parse: the session under construction, the open media section, and
/// what each section has seen so far (to catch duplicates).
private struct DocumentParser {
    var session = SessionDescription(name: "", timings: [])
    var sawVersion = false
    var originLine: Int?
    var nameLine: Int?
    var sessionChecks = SectionChecks(isRTP: false)
    var media: MediaDescription?
    var mediaLine = 0
    var mediaChecks = SectionChecks(isRTP: false)

    mutating func consume(type: Character, value: Substring, line: Int) throws(SDPError) {
        guard sawVersion else {
            guard type == "v" else { throw SDPError(.missingField, "SDP must start with v=0") }
            guard value == "0" else { throw SDPError(.unsupported, "only SDP version 0 is supported") }
            sawVersion = true
            return
        }
        if media != nil, "vosuepztr".contains(type) {
            throw SDPError(.malformedLine, "\(type)= is not allowed inside a media section (m= on line \(mediaLine))")
        }
        switch type {
        case "v":
            throw SDPError(.malformedLine, "second v= line")
        case "o":
            guard originLine == nil else { throw SDPError(.malformedLine, "second o= line") }
            session.origin = try SessionDescription.Origin(parsing: value)
            originLine = line
        case "s":
            guard nameLine == nil else { throw SDPError(.malformedLine, "second s= line") }
            session.name = String(value)
            nameLine = line
        case "i":
            if media != nil {
                guard media?.information == nil else { throw SDPError(.malformedLine, "second i= line in the media section") }
                media?.information = String(value)
            } else {
                guard session.information == nil else { throw SDPError(.malformedLine, "second i= line") }
                session.information = String(value)
            }
        case "u":
            guard session.uri == nil else { throw SDPError(.malformedLine, "second u= line") }
            session.uri = String(value)
        case "e":
            session.emailAddresses.append(String(value))
        case "p":
            session.phoneNumbers.append(String(value))
        case "c":
            let connection = try SessionDescription.Connection(parsing: value)
            if media != nil {
                guard media?.connection == nil else {
                    throw SDPError(.unsupported, "several c= lines in one media section (layered multicast) are not supported")
                }
                media?.connection = connection
            } else {
                guard session.connection == nil else { throw SDPError(.malformedLine, "second c= line in the session section") }
                session.connection = connection
            }
        case "b":
            let bandwidth = try SessionDescription.Bandwidth(parsing: value)
            if media != nil { media?.bandwidths.append(bandwidth) } else { session.bandwidths.append(bandwidth) }
        case "t":
            session.timings.append(try SessionDescription.Timing(parsing: value))
        case "r":
            guard !session.timings.isEmpty else { throw SDPError(.malformedLine, "r= line before any t= line") }
            session.timings[session.timings.count - 1].repeats.append(String(value))
        case "z":
            guard session.timeZoneAdjustments == nil else { throw SDPError(.malformedLine, "second z= line") }
            session.timeZoneAdjustments = String(value)
        case "a":
            let attribute = try Self.attribute(value)
            if media != nil {
                try mediaChecks.check(attribute, line: line)
                media?.attributes.append(attribute)
            } else {
                try sessionChecks.check(attribute, line: line)
                session.attributes.append(attribute)
            }
        case "m":
            if media == nil { try checkSessionSection(endingAt: line) }
            try closeMedia()
            media = try Self.mediaLine(value)
            mediaLine = line
            mediaChecks = SectionChecks(isRTP: media?.transportProtocol.isRTP ?? false)
        default:
            // k= and unknown letters: kept, see `SessionDescription.Line`.
            let other = SessionDescription.Line(type: type, value: String(value))
            if media != nil { media?.otherLines.append(other) } else { session.otherLines.append(other) }
        }
    }

    mutating func finish(lastLine: Int) throws(SDPError) -> SessionDescription {
        guard sawVersion else { throw SDPError(.missingField, "SDP is empty") }
        if media == nil { try checkSessionSection(endingAt: lastLine) }
        try closeMedia()
        return session
    }

    private func checkSessionSection(endingAt line: Int) throws(SDPError) {
        guard originLine != nil else { throw SDPError(.missingField, "no o= line in the session section", line: line) }
        guard nameLine != nil else { throw SDPError(.missingField, "no s= line in the session section", line: line) }
        guard !session.timings.isEmpty else { throw SDPError(.missingField, "no t= line in the session section", line: line) }
    }

    private mutating func closeMedia() throws(SDPError) {
        guard let finished = media else { return }
        guard finished.connection != nil || session.connection != nil else {
            throw SDPError(.missingField, "m= section has no c= line and the session has none", line: mediaLine)
        }
        session.media.append(finished)
        media = nil
    }

    /// `a=<name>[:<value>]`.
    private static func attribute(_ value: Substring) throws(SDPError) -> SessionDescription.Attribute {
        let parts = SDPScanning.cut(value, at: ":")
        let name = parts?.before ?? value
        guard !name.isEmpty, !SDPScanning.containsBlank(name) else {
            throw SDPError(.malformedLine, "a= line needs an attribute name without blanks before ':'")
        }
        return SessionDescription.Attribute(name: String(name), value: parts.map { String($0.after) })
    }

    /// `m=<media> <port>[/<number of ports>] <proto> <fmt> ...`.
    private static func mediaLine(_ value: Substring) throws(SDPError) -> MediaDescription {
        let fields = SDPScanning.fields(value)
        guard fields.count >= 4 else { throw SDPError(.malformedLine, "m= line needs at least 4 fields (media port proto format), found \(fields.count)") }
        let portParts = SDPScanning.split(fields[1], at: "/", omittingEmptySubsequences: false)
        guard portParts.count <= 2, let port = SDPScanning.decimal(portParts[0], as: UInt16.self) else {
            throw SDPError(.malformedLine, "m= port is not a number in 0...65535")
        }
        var portCount: Int?
        if portParts.count == 2 {
            guard let count = SDPScanning.decimal(portParts[1], as: UInt16.self), count >= 1 else {
                throw SDPError(.malformedLine, "m= port count is not a number in 1...65535")
            }
            portCount = Int(count)
        }
        let transport = MediaDescription.TransportProtocol(rawValue: String(fields[2]))
        let formats = fields.dropFirst(3)
        if transport.isRTP {
            for (index, format) in formats.enumerated() {
                guard let payloadType = SDPScanning.decimal(format, as: UInt8.self), payloadType <= 127 else {
                    throw SDPError(.malformedLine, "m= format \(index + 1) is not an RTP payload type (0...127)")
                }
            }
        }
        return MediaDescription(
            kind: MediaDescription.Kind(rawValue: String(fields[0])), port: port, portCount: portCount,
            transportProtocol: transport, formats: formats.map(String.init))
    }
}

/// Validation of the known attributes of one section, and the duplicates that would make
/// an accessor's answer ambiguous.
private struct SectionChecks {
    let isRTP: Bool
    var rtpMapPayloadTypes: Set<UInt8> = []
    var fmtpFormats: Set<String> = []
    var extensionIDs: Set<UInt8> = []
    var cryptoTags: Set<UInt32> = []
    var directionLine: (direction: MediaDescription.Direction, line: Int)?
    var sawMid = false
    var sawRTCP = false

    init(isRTP: Bool) { self.isRTP = isRTP }

    mutating func check(_ attribute: SessionDescription.Attribute, line: Int) throws(SDPError) {
        if let direction = MediaDescription.Direction(rawValue: attribute.name) {
            guard attribute.value == nil else { throw SDPError(.badAttribute, "a=\(direction) takes no value") }
            if let previous = directionLine {
                throw SDPError(.badAttribute, "a=\(direction) after a=\(previous.direction) on line \(previous.line); a section has one direction")
            }
            directionLine = (direction, line)
            return
        }
        let name = attribute.name
        guard ["rtpmap", "fmtp", "crypto", "extmap", "ssrc", "rtcp", "mid"].contains(name) else { return }
        guard let value = attribute.value else {
            throw SDPError(name == "crypto" ? .badCrypto : .badAttribute, "a=\(name) needs a value")
        }
        switch name {
        case "rtpmap":
            let map = try MediaDescription.RTPMap(attributeValue: value)
            guard rtpMapPayloadTypes.insert(map.payloadType).inserted else {
                throw SDPError(.badAttribute, "second rtpmap for payload type \(map.payloadType)")
            }
        case "fmtp":
            let parameters = try MediaDescription.FormatParameters(attributeValue: value, payloadTypes: isRTP)
            guard fmtpFormats.insert(parameters.format).inserted else {
                throw SDPError(.badAttribute, "second fmtp for the same format")
            }
        case "crypto":
            let crypto = try MediaDescription.Crypto(attributeValue: value)
            guard cryptoTags.insert(crypto.tag).inserted else {
                throw SDPError(.badCrypto, "crypto tag \(crypto.tag) is used twice")
            }
        case "extmap":
            let map = try MediaDescription.ExtensionMap(attributeValue: value)
            guard extensionIDs.insert(map.id).inserted else {
                throw SDPError(.badAttribute, "extmap id \(map.id) is used twice")
            }
        case "ssrc":
            _ = try MediaDescription.SSRCAttribute(attributeValue: value)
        case "rtcp":
            guard !sawRTCP else { throw SDPError(.badAttribute, "second a=rtcp line") }
            _ = try MediaDescription.RTCPEndpoint(attributeValue: value)
            sawRTCP = true
        default:  // mid
            guard !value.isEmpty else { throw SDPError(.badAttribute, "a=mid needs a value") }
            guard !sawMid else { throw SDPError(.badAttribute, "second a=mid line") }
            sawMid = true
        }
    }
}
