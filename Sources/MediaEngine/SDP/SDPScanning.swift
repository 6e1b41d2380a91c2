/// Small lexical helpers shared by the SDP line and attribute parsers.
///
/// SDP's grammar (RFC 8866 section 9) is over octets, so every split here is at Unicode
/// scalars, never at Swift's `Character`s: a combining mark after a separator joins it in
/// one grapheme cluster (`" \u{0749}"` is one `Character`), and splitting at characters
/// would read a field written as `m=... \u{0749}` as part of the field before it.
enum SDPScanning {
    /// Splits on runs of spaces and tabs. RFC 8866 separates fields with one space; runs
    /// are accepted because hand-written files have them.
    static func fields(_ text: Substring) -> [Substring] {
        split(text, whereSeparator: isBlank)
    }

    /// Splits at every `separator` scalar.
    static func split(
        _ text: Substring, at separator: Unicode.Scalar, maxSplits: Int = .max, omittingEmptySubsequences: Bool = true
    ) -> [Substring] {
        split(text, maxSplits: maxSplits, omittingEmptySubsequences: omittingEmptySubsequences) { $0 == separator }
    }

    private static func split(
        _ text: Substring, maxSplits: Int = .max, omittingEmptySubsequences: Bool = true,
        whereSeparator isSeparator: (Unicode.Scalar) -> Bool
    ) -> [Substring] {
        text.unicodeScalars
            .split(maxSplits: maxSplits, omittingEmptySubsequences: omittingEmptySubsequences, whereSeparator: isSeparator)
            .map(Substring.init)
    }

    /// `text` before and after its first `separator` scalar, or nil when it has none.
    static func cut(_ text: Substring, at separator: Unicode.Scalar) -> (before: Substring, after: Substring)? {
        let scalars = text.unicodeScalars
        guard let index = scalars.firstIndex(of: separator) else { return nil }
        return (Substring(scalars[..<index]), Substring(scalars[scalars.index(after: index)...]))
    }

    /// Splits off the first field; `rest` keeps its inner spacing (it may be free text).
    static func firstField(_ text: Substring) -> (first: Substring, rest: Substring) {
        let scalars = text.unicodeScalars
        let start = scalars.firstIndex { !isBlank($0) } ?? scalars.endIndex
        let end = scalars[start...].firstIndex(where: isBlank) ?? scalars.endIndex
        let rest = scalars[end...].firstIndex { !isBlank($0) } ?? scalars.endIndex
        return (Substring(scalars[start..<end]), Substring(scalars[rest...]))
    }

    static func isBlank(_ scalar: Unicode.Scalar) -> Bool { scalar == " " || scalar == "\t" }

    /// Whether `text` has a space or a tab anywhere, combined with a mark or not.
    static func containsBlank(_ text: Substring) -> Bool { text.unicodeScalars.contains(where: isBlank) }

    /// `text` without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> Substring {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isBlank($0) }), let last = scalars.lastIndex(where: { !isBlank($0) }) else {
            return Substring(scalars[scalars.endIndex...])
        }
        return Substring(scalars[first...last])
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
        replacing(value, where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }, with: " ")
    }

    /// Whether `value` is an RFC 8866 token: one or more token-chars (0x21, 0x23-27,
    /// 0x2A-2B, 0x2D-2E, 0x30-39, 0x41-5A, 0x5E-7E).
    static func isToken(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.allSatisfy { byte in
            byte == 0x21 || (0x23...0x27).contains(byte) || (0x2A...0x2B).contains(byte) || (0x2D...0x2E).contains(byte)
                || (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x5E...0x7E).contains(byte)
        }
    }

    /// A token safe to split on spaces later: blanks become `-` so the field count holds.
    static func token(_ value: String) -> String {
        let line = singleLine(value)
        return line.isEmpty ? "-" : replacing(line, where: isBlank, with: "-")
    }

    /// `value` with every scalar `matches` accepts replaced by `replacement`; `value`
    /// itself when none does.
    private static func replacing(_ value: String, where matches: (Unicode.Scalar) -> Bool, with replacement: Unicode.Scalar) -> String {
        guard value.unicodeScalars.contains(where: matches) else { return value }
        return String(String.UnicodeScalarView(value.unicodeScalars.map { matches($0) ? replacement : $0 }))
    }
}
