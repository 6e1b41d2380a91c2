extension STUNMessage {
    /// A message type: a 12-bit method and a 2-bit class, interleaved in the 14 low bits.
    public struct MessageType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// What a message is in its transaction.
        public enum Class: UInt8, Sendable, Hashable {
            /// Asks for a response.
            case request = 0
            /// Expects no response (a keepalive, TURN's Send and Data).
            case indication = 1
            /// Answers a request that succeeded.
            case successResponse = 2
            /// Answers a request that failed; carries ERROR-CODE.
            case errorResponse = 3
        }

        /// The 16-bit type field, top two bits zero.
        public let rawValue: UInt16

        /// A type from the type field.
        ///
        /// - Returns: `nil` when either of the top two bits is set, which no STUN message has.
        public init?(rawValue: UInt16) {
            guard rawValue & STUNMessage.typeTopBitsMask == 0 else { return nil }
            self.rawValue = rawValue
        }

        /// A type from its method and class.
        ///
        /// - Precondition: `method` fits in 12 bits (0...0xFFF).
        public init(method: UInt16, messageClass: Class) {
            precondition(method <= Self.maximumMethod, "STUN method \(method) > \(Self.maximumMethod)")
            let classBits = UInt16(messageClass.rawValue)
            rawValue = (method & 0x000F) | (method & 0x0070) << 1 | (method & 0x0F80) << 2
                | (classBits & 0b01) << 4 | (classBits & 0b10) << 7
        }

        private static let maximumMethod: UInt16 = 0x0FFF

        /// Method numbers (RFC 8489 section 18.2, RFC 8656 section 17).
        public enum Method {
            /// Binding (RFC 8489): connectivity checks and server-reflexive addresses.
            public static let binding: UInt16 = 0x001
            /// Allocate (RFC 8656): asks a TURN server for a relayed address.
            public static let allocate: UInt16 = 0x003
            /// Refresh: extends or (with LIFETIME 0) deletes an allocation.
            public static let refresh: UInt16 = 0x004
            /// Send: an indication carrying data from client to peer.
            public static let send: UInt16 = 0x006
            /// Data: an indication carrying data from peer to client.
            public static let data: UInt16 = 0x007
            /// CreatePermission: lets a peer's IP address send through the relay.
            public static let createPermission: UInt16 = 0x008
            /// ChannelBind: binds a channel number to a peer's transport address.
            public static let channelBind: UInt16 = 0x009
        }

        /// Binding request, 0x0001: a connectivity check.
        public static let bindingRequest = MessageType(method: Method.binding, messageClass: .request)
        /// Binding indication, 0x0011: a keepalive that asks for no answer.
        public static let bindingIndication = MessageType(method: Method.binding, messageClass: .indication)
        /// Binding success response, 0x0101: carries XOR-MAPPED-ADDRESS.
        public static let bindingSuccess = MessageType(method: Method.binding, messageClass: .successResponse)
        /// Binding error response, 0x0111: carries ERROR-CODE.
        public static let bindingError = MessageType(method: Method.binding, messageClass: .errorResponse)

        /// Allocate request, 0x0003.
        public static let allocateRequest = MessageType(method: Method.allocate, messageClass: .request)
        /// Allocate success response, 0x0103: XOR-RELAYED-ADDRESS, LIFETIME, XOR-MAPPED-ADDRESS.
        public static let allocateSuccess = MessageType(method: Method.allocate, messageClass: .successResponse)
        /// Allocate error response, 0x0113.
        public static let allocateError = MessageType(method: Method.allocate, messageClass: .errorResponse)
        /// Refresh request, 0x0004.
        public static let refreshRequest = MessageType(method: Method.refresh, messageClass: .request)
        /// Refresh success response, 0x0104.
        public static let refreshSuccess = MessageType(method: Method.refresh, messageClass: .successResponse)
        /// Refresh error response, 0x0114.
        public static let refreshError = MessageType(method: Method.refresh, messageClass: .errorResponse)
        /// Send indication, 0x0016: XOR-PEER-ADDRESS and DATA, client to server.
        public static let sendIndication = MessageType(method: Method.send, messageClass: .indication)
        /// Data indication, 0x0017: XOR-PEER-ADDRESS and DATA, server to client.
        public static let dataIndication = MessageType(method: Method.data, messageClass: .indication)
        /// CreatePermission request, 0x0008.
        public static let createPermissionRequest = MessageType(method: Method.createPermission, messageClass: .request)
        /// CreatePermission success response, 0x0108.
        public static let createPermissionSuccess = MessageType(method: Method.createPermission, messageClass: .successResponse)
        /// CreatePermission error response, 0x0118.
        public static let createPermissionError = MessageType(method: Method.createPermission, messageClass: .errorResponse)
        /// ChannelBind request, 0x0009.
        public static let channelBindRequest = MessageType(method: Method.channelBind, messageClass: .request)
        /// ChannelBind success response, 0x0109.
        public static let channelBindSuccess = MessageType(method: Method.channelBind, messageClass: .successResponse)
        /// ChannelBind error response, 0x0119.
        public static let channelBindError = MessageType(method: Method.channelBind, messageClass: .errorResponse)

        /// The 12-bit method (1 for Binding, 3 for Allocate).
        public var method: UInt16 {
            (rawValue & 0x000F) | (rawValue & 0x00E0) >> 1 | (rawValue & 0x3E00) >> 2
        }

        /// The class: request, indication, success or error response.
        public var messageClass: Class {
            // Two bits give four cases, so the force unwrap cannot fail.
            Class(rawValue: UInt8(truncatingIfNeeded: (rawValue >> 4) & 0b01 | (rawValue >> 7) & 0b10))!
        }

        /// "Allocate error response"; "method 10 request" for a method this code does not name.
        public var description: String {
            let methodName: String? = switch method {
            case Method.binding: "Binding"
            case Method.allocate: "Allocate"
            case Method.refresh: "Refresh"
            case Method.send: "Send"
            case Method.data: "Data"
            case Method.createPermission: "CreatePermission"
            case Method.channelBind: "ChannelBind"
            default: nil
            }
            let className = switch messageClass {
            case .request: "request"
            case .indication: "indication"
            case .successResponse: "success response"
            case .errorResponse: "error response"
            }
            return methodName.map { "\($0) \(className)" } ?? "method \(method) \(messageClass)"
        }
    }
}
