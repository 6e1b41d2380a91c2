/// A plain STUN Binding (RFC 8489 section 3): a client asks a server what address its
/// datagrams come from, its server-reflexive address, and learns it from the answer's
/// XOR-MAPPED-ADDRESS. No credentials: ICE's srflx candidates come from it.
///
/// Servers of this project never answer with more bytes than they were sent (so they can
/// not amplify a spoofed flood), so a request carries a PADDING attribute (RFC 5780
/// section 7.6) that makes it at least as large as any answer: `request(padding:)` does.
public enum STUNBinding {
    /// PADDING (RFC 5780 section 7.6): bytes a server ignores.
    public static let paddingType = STUNMessage.Attribute.paddingType

    /// The size of a Binding success carrying only an XOR-MAPPED-ADDRESS: a 20-byte
    /// header, a 4-byte attribute header and 8 (IPv4) or 20 (IPv6) bytes of address.
    public static func answerSize(ipv6: Bool) -> Int { 20 + 4 + (ipv6 ? 20 : 8) }

    /// Padding bytes that make a request (20 + 4 + padding) as large as the largest answer.
    public static let defaultPadding = answerSize(ipv6: true) - 24

    /// A Binding request with `padding` zero bytes of PADDING (none when 0).
    /// - Parameters:
    ///   - transactionID: fresh for each request; keep it to match the answer.
    ///   - padding: the PADDING value's size; the default answers for IPv4 and IPv6.
    public static func request(transactionID: STUNTransactionID = .random(), padding: Int = defaultPadding) -> STUNMessage {
        let attributes: [STUNMessage.Attribute] = padding > 0 ? [.padding([UInt8](repeating: 0, count: padding))] : []
        return STUNMessage(type: .bindingRequest, transactionID: transactionID, attributes: attributes)
    }

    /// The answer a server sends to `request` that came from `source`.
    public static func answer(to request: STUNMessage, from source: SocketAddress) -> STUNMessage {
        STUNMessage(type: .bindingSuccess, transactionID: request.transactionID, attributes: [.xorMappedAddress(source)])
    }

    /// The server-reflexive address in `datagram` when it is the Binding success for
    /// `transactionID`; nil for anything else (another message, a mismatched transaction,
    /// an error response, a malformed datagram).
    public static func mappedAddress(from datagram: UnsafeRawBufferPointer, transactionID: STUNTransactionID) -> SocketAddress? {
        guard let message = try? STUNMessage(parsing: datagram), message.type == .bindingSuccess,
              message.transactionID == transactionID
        else { return nil }
        return message.xorMappedAddress
    }

    /// The server-reflexive address in `datagram`, as `mappedAddress(from:transactionID:)`
    /// on a raw buffer.
    public static func mappedAddress(from datagram: [UInt8], transactionID: STUNTransactionID) -> SocketAddress? {
        datagram.withUnsafeBytes { mappedAddress(from: $0, transactionID: transactionID) }
    }
}
