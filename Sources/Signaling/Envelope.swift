import Foundation

/// The frame around every signaling message (DESIGN.md section 6):
/// `{ "v": 1, "id": <request id or null>, "type": "...", "body": {...} }`.
///
/// Requests carry an `id` that their one response repeats; pushed events carry none.
public struct Envelope: Sendable, Hashable, Codable {
    /// The protocol version this code speaks.
    public static let version = 1
    /// The longest `type` accepted.
    public static let maximumTypeLength = 64

    /// Protocol version; always `Envelope.version` when sent by this code.
    public var v: Int
    /// Request id, echoed by the response; nil for events.
    public var id: UInt64?
    /// Message type, such as `start` or `hangup`.
    public var type: String
    /// Type-specific content; an empty object when there is none.
    public var body: JSONValue

    public init(id: UInt64?, type: String, body: JSONValue = .object([:])) {
        self.v = Envelope.version
        self.id = id
        self.type = type
        self.body = body
    }

    /// Parses and checks one message.
    /// - Parameters:
    ///   - data: the raw WebSocket text or binary payload.
    ///   - maximumSize: messages longer than this are refused before parsing.
    /// - Throws: `SignalingError` with code `messageTooLarge`, `malformedMessage` or
    ///   `unsupportedVersion`; the message says what was wrong without echoing content.
    public static func decode(_ data: Data, maximumSize: Int) throws(SignalingError) -> Envelope {
        guard data.count <= maximumSize else {
            throw SignalingError(.messageTooLarge, "message of \(data.count) bytes exceeds the limit of \(maximumSize)")
        }
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: data)
        } catch let error as DecodingError {
            throw SignalingError(.malformedMessage, "message is not a valid envelope: \(Self.explain(error))")
        } catch {
            throw SignalingError(.malformedMessage, "message is not valid JSON")
        }
        try check(envelope)
        return envelope
    }

    /// The checks every parsed envelope passes: its version, and a type of 1 to
    /// `maximumTypeLength` ASCII letters, digits, '.' or '_'.
    static func check(_ envelope: Envelope) throws(SignalingError) {
        guard envelope.v == version else {
            throw SignalingError(.unsupportedVersion, "protocol version \(envelope.v) is not supported (this side speaks \(version))")
        }
        guard !envelope.type.isEmpty, envelope.type.utf8.count <= maximumTypeLength,
              envelope.type.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") }) else {
            throw SignalingError(.malformedMessage,
                                 "message type must be 1 to \(maximumTypeLength) ASCII letters, digits, '.' or '_'")
        }
    }

    /// Serializes the envelope as compact JSON.
    public func encoded() -> Data {
        // Encoding JSONValue and plain fields cannot fail except for non-finite numbers,
        // which `JSONValue.number` callers must not produce.
        (try? JSONEncoder().encode(self)) ?? Data()
    }

    static func explain(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): "missing field '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            "field '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case .dataCorrupted(let context) where context.codingPath.isEmpty: "not valid JSON"
        case .dataCorrupted(let context):
            "field '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has an invalid value"
        @unknown default: "not a valid envelope"
        }
    }

    private enum CodingKeys: String, CodingKey { case v, id, type, body }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        v = try container.decode(Int.self, forKey: .v)
        // Foundation reports an out-of-range number as "not valid JSON"; name the field instead.
        do {
            id = try container.decodeIfPresent(UInt64.self, forKey: .id)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .id, in: container,
                                                   debugDescription: "id must be a non-negative integer")
        }
        type = try container.decode(String.self, forKey: .type)
        body = try container.decodeIfPresent(JSONValue.self, forKey: .body) ?? .object([:])
    }
}
