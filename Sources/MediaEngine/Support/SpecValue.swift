/// How users write values in source specs and options (`32k`, `1.5M`, `640x480`, lists):
/// the parsers return nil for text that is not one, and callers name the bad value.
public enum SpecValue {
    /// `32000`, `32k`, `1.5M` (bits per second).
    public static func bitrate(_ text: String) -> Int? {
        let trimmed = text.trimmingWhitespace()
        let (digits, scale): (Substring, Double) = switch trimmed.last {
        case "k", "K": (trimmed.dropLast(), 1_000)
        case "m", "M": (trimmed.dropLast(), 1_000_000)
        default: (Substring(trimmed), 1)
        }
        guard let value = Double(digits), value.isFinite, value > 0 else { return nil }
        let bits = (value * scale).rounded()
        guard bits >= 1, bits <= 1e9 else { return nil }
        return Int(bits)
    }

    /// `640x480`.
    public static func resolution(_ text: String) -> (width: Int, height: Int)? {
        let parts = text.trimmingWhitespace().lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        return (width, height)
    }

    /// A comma-separated list parsed by `parse`; nil if any element fails.
    public static func list<T>(_ text: String, _ parse: (String) -> T?) -> [T]? {
        let items = text.split(separator: ",").map { String($0) }
        guard !items.isEmpty else { return nil }
        var values: [T] = []
        for item in items {
            guard let value = parse(item) else { return nil }
            values.append(value)
        }
        return values
    }
}

extension String {
    func trimmingWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
