/// Small lexical helpers shared by the SDP line and attribute parsers.
enum SDPScanning {
    /// Splits on runs of spaces and tabs. RFC 8866 separates fields with one space; runs
    /// are accepted because hand-written files have them.
    static func fields(_ text: Substring) -> [Substring] {
        text.split(whereSeparator: { $0 == " " || $0 == "\t" })
    }

    /// Splits off the first field; `rest` keeps its inner spacing (it may be free text).
    static func firstField(_ text: Substring) -> (first: Substring, rest: Substring) {
        let start = text.drop(while: isBlank)
        guard let end = start.firstIndex(where: isBlank) else { return (start, start[start.endIndex...]) }
        return (start[..<end], start[end...].drop(while: isBlank))
    }

    static func isBlank(_ character: Character) -> Bool { character == " " || character == "\t" }

    /// `text` without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> Substring {
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) }) else {
            return text[text.endIndex...]
        }
        return text[first...last]
    }

    /// A decimal number made only of ASCII digits. Unlike `Int("+5")`, signs, spaces and
    /// empty strings are refused, and overflow gives nil.
    static func decimal<T: FixedWidthInteger & UnsignedInteger>(_ text: Substring, as _: T.Type = T.self) -> T? {
        guard !text.isEmpty, text.utf8.count <= 20 else { return nil }
        var value: T = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(T(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    static func decimal<T: FixedWidthInteger & UnsignedInteger>(_ text: String, as type: T.Type = T.self) -> T? {
        decimal(text[...], as: type)
    }

    /// A field value made safe to write on one line: a CR, LF or NUL inside a value built
    /// in code would otherwise start a new line and inject fields.
    static func singleLine(_ value: String) -> String {
        guard value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else { return value }
        return String(String.UnicodeScalarView(value.unicodeScalars.map { $0 == "\r" || $0 == "\n" || $0 == "\0" ? " " : $0 }))
    }

    /// A token safe to split on spaces later: blanks become `-` so the field count holds.
    static func token(_ value: String) -> String {
        let line = singleLine(value)
        guard !line.isEmpty else { return "-" }
        guard line.contains(where: isBlank) else { return line }
        return String(line.map { isBlank($0) ? "-" : $0 })
    }
}
