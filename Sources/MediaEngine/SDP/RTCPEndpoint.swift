extension MediaDescription {
    /// `a=rtcp:<port> [<nettype> <addrtype> <connection-address>]` (RFC 3605): where RTCP
    /// goes when it is not on RTP port + 1.
    public struct RTCPEndpoint: Hashable, Sendable {
        /// The RTCP port.
        public var port: UInt16
        /// The RTCP address, when it differs from the media's.
        public var connection: SessionDescription.Connection?

        /// Creates an RTCP endpoint.
        public init(port: UInt16, connection: SessionDescription.Connection? = nil) {
            self.port = port
            self.connection = connection
        }

        /// Parses the value after `a=rtcp:`.
        /// - Throws: `SDPError` with code `badAttribute`.
        public init(attributeValue value: String) throws(SDPError) {
            let (portText, rest) = SDPScanning.firstField(value[...])
            guard let port = SDPScanning.decimal(portText, as: UInt16.self) else {
                throw SDPError(.badAttribute, "rtcp port is not a number in 0...65535")
            }
            var connection: SessionDescription.Connection?
            if !rest.isEmpty {
                do {
                    connection = try SessionDescription.Connection(parsing: rest, what: "rtcp address")
                } catch {
                    throw SDPError(.badAttribute, error.message)
                }
            }
            self.init(port: port, connection: connection)
        }

        /// The value after `a=rtcp:`.
        public var attributeValue: String {
            connection.map { "\(port) \($0.value)" } ?? String(port)
        }
    }

    /// The `a=rtcp` port and address, or nil when RTCP uses the RTP port + 1 (or the RTP
    /// port itself with `rtcpMux`).
    public var rtcp: RTCPEndpoint? {
        attributes(named: "rtcp").lazy.compactMap { $0.value.flatMap { try? RTCPEndpoint(attributeValue: $0) } }.first
    }
}

extension SessionDescription.Attribute {
    /// `a=rtcp:<value>`.
    public static func rtcp(_ endpoint: MediaDescription.RTCPEndpoint) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: "rtcp", value: endpoint.attributeValue)
    }
}
