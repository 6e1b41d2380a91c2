extension STUNMessage {
    /// One attribute. Those this code decodes have their own cases; the rest keep their
    /// type and value bytes (without padding).
    public enum Attribute: Sendable, Hashable {
        /// USERNAME (0x0006): for ICE, "remote-ufrag:local-ufrag". At most 763 UTF-8 bytes.
        case username(String)
        /// XOR-MAPPED-ADDRESS (0x0020): the request's source address, as the responder saw it.
        case xorMappedAddress(SocketAddress)
        /// ERROR-CODE (0x0009): `code` in 300...699 (class * 100 + number) and a reason
        /// phrase of at most 763 UTF-8 bytes.
        case errorCode(code: Int, reason: String)
        /// MESSAGE-INTEGRITY (0x0008): the 20-byte HMAC-SHA1 of the message before it.
        /// Written by `serialize(into:integrity:fingerprint:)`, checked by `verifyIntegrity`.
        case messageIntegrity([UInt8])
        /// MESSAGE-INTEGRITY-SHA256 (0x001C): HMAC-SHA256, 16 to 32 bytes in steps of 4.
        case messageIntegritySHA256([UInt8])
        /// FINGERPRINT (0x8028): CRC-32 of the message before it, XOR 0x5354554E.
        case fingerprint(UInt32)
        /// REALM (0x0014): the long-term credentials' realm, at most 763 UTF-8 bytes.
        case realm(String)
        /// NONCE (0x0015): the server's nonce for long-term credentials, at most 763 bytes.
        case nonce(String)
        /// SOFTWARE (0x8022): the agent's name and version, at most 763 UTF-8 bytes.
        case software(String)
        /// UNKNOWN-ATTRIBUTES (0x000A): in a 420 response, the types the server did not
        /// understand.
        case unknownAttributes([UInt16])
        /// LIFETIME (0x000D): a TURN allocation's lifetime in seconds.
        case lifetime(UInt32)
        /// XOR-PEER-ADDRESS (0x0012): a TURN peer's transport address.
        case xorPeerAddress(SocketAddress)
        /// XOR-RELAYED-ADDRESS (0x0016): the address a TURN server relays from.
        case xorRelayedAddress(SocketAddress)
        /// DATA (0x0013): the payload of a Send or Data indication.
        case data([UInt8])
        /// REQUESTED-TRANSPORT (0x0019): an IP protocol number, 17 for UDP.
        case requestedTransport(UInt8)
        /// CHANNEL-NUMBER (0x000C): a TURN channel, 0x4000...0x4FFF.
        case channelNumber(UInt16)
        /// PRIORITY (0x0024, RFC 8445): the priority a peer-reflexive candidate would get.
        case priority(UInt32)
        /// USE-CANDIDATE (0x0025, RFC 8445): the controlling agent nominates this pair. Empty.
        case useCandidate
        /// ICE-CONTROLLED (0x8029, RFC 8445): the sender's tie-breaker; it is controlled.
        case iceControlled(UInt64)
        /// ICE-CONTROLLING (0x802A, RFC 8445): the sender's tie-breaker; it is controlling.
        case iceControlling(UInt64)
        /// PADDING (0x0026, RFC 5780): filler bytes that make a response larger.
        case padding([UInt8])
        /// Any other attribute, kept raw: `type` and the value without its padding. Never
        /// one of the decoded types above.
        case unknown(type: UInt16, value: [UInt8])

        /// USERNAME's attribute type.
        public static let usernameType: UInt16 = 0x0006
        /// MESSAGE-INTEGRITY's attribute type.
        public static let messageIntegrityType: UInt16 = 0x0008
        /// ERROR-CODE's attribute type.
        public static let errorCodeType: UInt16 = 0x0009
        /// UNKNOWN-ATTRIBUTES's attribute type.
        public static let unknownAttributesType: UInt16 = 0x000A
        /// CHANNEL-NUMBER's attribute type.
        public static let channelNumberType: UInt16 = 0x000C
        /// LIFETIME's attribute type.
        public static let lifetimeType: UInt16 = 0x000D
        /// XOR-PEER-ADDRESS's attribute type.
        public static let xorPeerAddressType: UInt16 = 0x0012
        /// DATA's attribute type.
        public static let dataType: UInt16 = 0x0013
        /// REALM's attribute type.
        public static let realmType: UInt16 = 0x0014
        /// NONCE's attribute type.
        public static let nonceType: UInt16 = 0x0015
        /// XOR-RELAYED-ADDRESS's attribute type.
        public static let xorRelayedAddressType: UInt16 = 0x0016
        /// REQUESTED-TRANSPORT's attribute type.
        public static let requestedTransportType: UInt16 = 0x0019
        /// MESSAGE-INTEGRITY-SHA256's attribute type.
        public static let messageIntegritySHA256Type: UInt16 = 0x001C
        /// XOR-MAPPED-ADDRESS's attribute type.
        public static let xorMappedAddressType: UInt16 = 0x0020
        /// PRIORITY's attribute type.
        public static let priorityType: UInt16 = 0x0024
        /// USE-CANDIDATE's attribute type.
        public static let useCandidateType: UInt16 = 0x0025
        /// PADDING's attribute type.
        public static let paddingType: UInt16 = 0x0026
        /// SOFTWARE's attribute type.
        public static let softwareType: UInt16 = 0x8022
        /// FINGERPRINT's attribute type.
        public static let fingerprintType: UInt16 = 0x8028
        /// ICE-CONTROLLED's attribute type.
        public static let iceControlledType: UInt16 = 0x8029
        /// ICE-CONTROLLING's attribute type.
        public static let iceControllingType: UInt16 = 0x802A

        /// Every type that has its own case: these never appear as `.unknown`.
        public static let decodedTypes: Set<UInt16> = [
            usernameType, messageIntegrityType, errorCodeType, unknownAttributesType, channelNumberType,
            lifetimeType, xorPeerAddressType, dataType, realmType, nonceType, xorRelayedAddressType,
            requestedTransportType, messageIntegritySHA256Type, xorMappedAddressType, priorityType,
            useCandidateType, paddingType, softwareType, fingerprintType, iceControlledType, iceControllingType,
        ]

        /// The attribute type on the wire.
        public var type: UInt16 {
            switch self {
            case .username: Self.usernameType
            case .xorMappedAddress: Self.xorMappedAddressType
            case .errorCode: Self.errorCodeType
            case .messageIntegrity: Self.messageIntegrityType
            case .messageIntegritySHA256: Self.messageIntegritySHA256Type
            case .fingerprint: Self.fingerprintType
            case .realm: Self.realmType
            case .nonce: Self.nonceType
            case .software: Self.softwareType
            case .unknownAttributes: Self.unknownAttributesType
            case .lifetime: Self.lifetimeType
            case .xorPeerAddress: Self.xorPeerAddressType
            case .xorRelayedAddress: Self.xorRelayedAddressType
            case .data: Self.dataType
            case .requestedTransport: Self.requestedTransportType
            case .channelNumber: Self.channelNumberType
            case .priority: Self.priorityType
            case .useCandidate: Self.useCandidateType
            case .iceControlled: Self.iceControlledType
            case .iceControlling: Self.iceControllingType
            case .padding: Self.paddingType
            case .unknown(let type, _): type
            }
        }

        /// The value's size on the wire, before padding.
        var valueSize: Int {
            switch self {
            case .username(let text), .realm(let text), .nonce(let text), .software(let text): text.utf8.count
            case .xorMappedAddress(let address), .xorPeerAddress(let address), .xorRelayedAddress(let address):
                address.isIPv6 ? STUNMessage.xorAddressIPv6Size : STUNMessage.xorAddressIPv4Size
            case .errorCode(_, let reason): STUNMessage.errorCodeFixedSize + reason.utf8.count
            case .messageIntegrity(let bytes), .messageIntegritySHA256(let bytes), .data(let bytes), .padding(let bytes):
                bytes.count
            case .unknownAttributes(let types): 2 * types.count
            case .fingerprint, .lifetime, .requestedTransport, .channelNumber, .priority: 4
            case .useCandidate: 0
            case .iceControlled, .iceControlling: 8
            case .unknown(_, let value): value.count
            }
        }

        /// Whether a receiver that does not understand the type must reject the message
        /// (types below 0x8000, RFC 8489 section 15).
        public var isComprehensionRequired: Bool { type < 0x8000 }
    }

    /// The first USERNAME, if any.
    public var username: String? {
        for case .username(let name) in attributes { return name }
        return nil
    }

    /// The first XOR-MAPPED-ADDRESS, if any.
    public var xorMappedAddress: SocketAddress? {
        for case .xorMappedAddress(let address) in attributes { return address }
        return nil
    }

    /// The first ERROR-CODE, if any.
    public var errorCode: (code: Int, reason: String)? {
        for case .errorCode(let code, let reason) in attributes { return (code, reason) }
        return nil
    }

    /// The first REALM, if any.
    public var realm: String? {
        for case .realm(let realm) in attributes { return realm }
        return nil
    }

    /// The first NONCE, if any.
    public var nonce: String? {
        for case .nonce(let nonce) in attributes { return nonce }
        return nil
    }

    /// The first LIFETIME in seconds, if any.
    public var lifetime: UInt32? {
        for case .lifetime(let seconds) in attributes { return seconds }
        return nil
    }

    /// The first XOR-RELAYED-ADDRESS, if any.
    public var xorRelayedAddress: SocketAddress? {
        for case .xorRelayedAddress(let address) in attributes { return address }
        return nil
    }

    /// The first XOR-PEER-ADDRESS, if any.
    public var xorPeerAddress: SocketAddress? {
        for case .xorPeerAddress(let address) in attributes { return address }
        return nil
    }

    /// The first DATA, if any.
    public var data: [UInt8]? {
        for case .data(let bytes) in attributes { return bytes }
        return nil
    }

    /// The first UNKNOWN-ATTRIBUTES list, if any.
    public var unknownAttributes: [UInt16]? {
        for case .unknownAttributes(let types) in attributes { return types }
        return nil
    }

    /// Types of the comprehension-required attributes (below 0x8000) this code does not
    /// decode, in wire order without repeats: a responder answers a request that has any
    /// with 420 (Unknown Attribute) and lists them in UNKNOWN-ATTRIBUTES.
    public var comprehensionRequiredUnknownTypes: [UInt16] {
        var types: [UInt16] = []
        for case .unknown(let type, _) in attributes where type < 0x8000 && !types.contains(type) {
            types.append(type)
        }
        return types
    }
}
