/// Serializes descriptions in RFC 8866 order:
///
/// ```
/// session: v o s i u e* p* c b* (t r*)+ z a*   media: m i c b* a*
/// ```
///
/// ffmpeg's reader assigns `c=`, `b=` and `a=` to the latest `m=`, so order is what
/// keeps session-level lines at the session level. `k=` and unknown lines, which have no
/// defined place, follow the section's `a=` lines.
enum SDPWriter {
    static func lines(of session: SessionDescription, redacting: Bool) -> [String] {
        var lines = [
            "v=\(session.version)",
            "o=\(session.origin.value)",
            // RFC 8866 5.3: a session without a name is written with one space.
            "s=\(session.name.isEmpty ? " " : SDPScanning.singleLine(session.name))",
        ]
        if let information = session.information { lines.append("i=\(SDPScanning.singleLine(information))") }
        if let uri = session.uri { lines.append("u=\(SDPScanning.singleLine(uri))") }
        lines += session.emailAddresses.map { "e=\(SDPScanning.singleLine($0))" }
        lines += session.phoneNumbers.map { "p=\(SDPScanning.singleLine($0))" }
        if let connection = session.connection { lines.append("c=\(connection.value)") }
        lines += session.bandwidths.map { "b=\($0.text)" }
        for timing in session.timings {
            lines.append("t=\(timing.start) \(timing.stop)")
            lines += timing.repeats.map { "r=\(SDPScanning.singleLine($0))" }
        }
        if let zone = session.timeZoneAdjustments { lines.append("z=\(SDPScanning.singleLine(zone))") }
        lines += attributeLines(session.attributes, redacting: redacting)
        lines += otherLines(session.otherLines, redacting: redacting)
        for media in session.media {
            lines += self.lines(of: media, redacting: redacting)
        }
        return lines
    }

    static func lines(of media: MediaDescription, redacting: Bool) -> [String] {
        var port = String(media.port)
        if let count = media.portCount { port += "/\(count)" }
        let fields = [SDPScanning.token(media.kind.rawValue), port, SDPScanning.token(media.transportProtocol.rawValue)]
            + media.formats.map(SDPScanning.token)
        var lines = ["m=" + fields.joined(separator: " ")]
        if let information = media.information { lines.append("i=\(SDPScanning.singleLine(information))") }
        if let connection = media.connection { lines.append("c=\(connection.value)") }
        lines += media.bandwidths.map { "b=\($0.text)" }
        lines += attributeLines(media.attributes, redacting: redacting)
        lines += otherLines(media.otherLines, redacting: redacting)
        return lines
    }

    private static func attributeLines(_ attributes: [SessionDescription.Attribute], redacting: Bool) -> [String] {
        attributes.map { redacting ? $0.description : "a=\($0.text)" }
    }

    private static func otherLines(_ lines: [SessionDescription.Line], redacting: Bool) -> [String] {
        lines.map { redacting ? $0.description : $0.text }
    }
}
