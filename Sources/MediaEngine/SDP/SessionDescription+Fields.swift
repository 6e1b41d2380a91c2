extension SessionDescription {
    /// The address family of a `c=` or `o=` address (`IP4`, `IP6`, or another token).
    public struct AddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The token as written in SDP.
        public var rawValue: String
        /// Creates an address type from its SDP token.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// IPv4.
        public static let ip4 = AddressType(rawValue: "IP4")
        /// IPv6.
        public static let ip6 = AddressType(rawValue: "IP6")
        /// The token as written in SDP.
        public var description: String { rawValue }
    }

    /// `o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>`
    /// (RFC 8866 5.2): who created the session and which revision this is.
    public struct Origin: Hashable, Sendable {
        /// The creator's login, or `-`.
        public var username: String
        /// A number unique to this session for the creator.
        public var sessionID: UInt64
        /// Increases each time the description changes.
        public var sessionVersion: UInt64
        /// `IN` for the Internet.
        public var networkType: String
        /// The family of `address`.
        public var addressType: AddressType
        /// The creator's address (or host name).
        public var address: String

        /// Creates an origin. The defaults match what ffmpeg writes for a local sender.
        /// - Parameters:
        ///   - username: The creator's login; `-` when there is none.
        ///   - sessionID: A number unique to the session; ffmpeg writes 0.
        ///   - sessionVersion: The description's revision.
        ///   - networkType: `IN`.
        ///   - addressType: The family of `address`.
        ///   - address: The creator's address.
        public init(
            username: String = "-", sessionID: UInt64 = 0, sessionVersion: UInt64 = 0,
            networkType: String = "IN", addressType: AddressType = .ip4, address: String = "127.0.0.1"
        ) {
            self.username = username
            self.sessionID = sessionID
            self.sessionVersion = sessionVersion
            self.networkType = networkType
            self.addressType = addressType
            self.address = address
        }

        init(parsing value: Substring) throws(SDPError) {
            let fields = SDPScanning.fields(value)
            guard fields.count == 6 else {
                throw SDPError(.malformedLine, "o= line needs 6 fields, found \(fields.count)")
            }
            guard let id = SDPScanning.decimal(fields[1], as: UInt64.self) else {
                throw SDPError(.malformedLine, "o= session id is not a decimal number")
            }
            guard let version = SDPScanning.decimal(fields[2], as: UInt64.self) else {
                throw SDPError(.malformedLine, "o= session version is not a decimal number")
            }
            self.init(
                username: String(fields[0]), sessionID: id, sessionVersion: version,
                networkType: String(fields[3]), addressType: AddressType(rawValue: String(fields[4])), address: String(fields[5]))
        }

        var value: String {
            [username, String(sessionID), String(sessionVersion), networkType, addressType.rawValue, address]
                .map(SDPScanning.token).joined(separator: " ")
        }
    }

    /// `c=<nettype> <addrtype> <connection-address>` (RFC 8866 5.7): where media goes.
    ///
    /// Multicast IPv4 addresses carry a TTL and optionally a count (`239.1.2.3/5/2`);
    /// IPv6 multicast carries only a count (`ff15::101/3`).
    public struct Connection: Hashable, Sendable, CustomStringConvertible {
        /// `IN` for the Internet.
        public var networkType: String
        /// The family of `address`.
        public var addressType: AddressType
        /// The address or host name, without `/ttl` or `/count`.
        public var address: String
        /// The multicast TTL (IPv4 only).
        public var ttl: UInt8?
        /// The number of consecutive multicast addresses, when more than the one given.
        /// SDP puts an IPv4 count after the TTL, so a count without a TTL is written with
        /// TTL 255.
        public var addressCount: Int?

        /// Creates a connection line.
        /// - Parameters:
        ///   - networkType: `IN`.
        ///   - addressType: The family of `address`.
        ///   - address: The address, without `/ttl` or `/count`.
        ///   - ttl: The multicast TTL, IPv4 only.
        ///   - addressCount: The number of consecutive multicast addresses.
        public init(networkType: String = "IN", addressType: AddressType, address: String, ttl: UInt8? = nil, addressCount: Int? = nil) {
            self.networkType = networkType
            self.addressType = addressType
            self.address = address
            self.ttl = ttl
            self.addressCount = addressCount
        }

        /// An `IN IP4` connection to `address`.
        public static func ip4(_ address: String, ttl: UInt8? = nil) -> Connection {
            Connection(addressType: .ip4, address: address, ttl: ttl)
        }

        /// An `IN IP6` connection to `address`.
        public static func ip6(_ address: String) -> Connection {
            Connection(addressType: .ip6, address: address)
        }

        init(parsing value: Substring, what: String = "c=") throws(SDPError) {
            let fields = SDPScanning.fields(value)
            guard fields.count == 3 else {
                throw SDPError(.malformedLine, "\(what) needs 3 fields (nettype addrtype address), found \(fields.count)")
            }
            let type = AddressType(rawValue: String(fields[1]))
            var address = fields[2]
            var ttl: UInt8?
            var count: Int?
            if type == .ip4 || type == .ip6 {
                let parts = SDPScanning.split(address, at: "/", omittingEmptySubsequences: false)
                let maximum = type == .ip4 ? 3 : 2
                guard parts.count <= maximum, !parts[0].isEmpty else {
                    throw SDPError(.malformedLine, "\(what) \(type) address has the wrong form (address[/ttl][/count])")
                }
                address = parts[0]
                var rest = parts.dropFirst()
                if type == .ip4, let ttlText = rest.popFirst() {
                    guard let value = SDPScanning.decimal(ttlText, as: UInt8.self) else {
                        throw SDPError(.malformedLine, "\(what) TTL is not a number in 0...255")
                    }
                    ttl = value
                }
                if let countText = rest.popFirst() {
                    guard let value = SDPScanning.decimal(countText, as: UInt16.self), value >= 1 else {
                        throw SDPError(.malformedLine, "\(what) address count is not a number in 1...65535")
                    }
                    count = Int(value)
                }
            }
            self.init(networkType: String(fields[0]), addressType: type, address: String(address), ttl: ttl, addressCount: count)
        }

        var value: String {
            var text = SDPScanning.token(address)
            if addressType != .ip6, let ttl { text += "/\(ttl)" }
            if let addressCount {
                // An IPv4 count is only reachable after a TTL; 255 is the conventional maximum.
                if addressType == .ip4, ttl == nil { text += "/255" }
                text += "/\(addressCount)"
            }
            return "\(SDPScanning.token(networkType)) \(SDPScanning.token(addressType.rawValue)) \(text)"
        }

        /// The field as written after `c=`, for logs.
        public var description: String { value }
    }

    /// `t=<start-time> <stop-time>` with its `r=` repeat lines (RFC 8866 5.9, 5.10).
    /// Times are NTP seconds; `0 0` means a permanent session, the usual value.
    public struct Timing: Hashable, Sendable {
        /// NTP start time in seconds, or 0.
        public var start: UInt64
        /// NTP stop time in seconds, or 0 for unbounded.
        public var stop: UInt64
        /// The `r=` lines that follow, as written.
        public var repeats: [String]

        /// Creates a timing; the default is the unbounded `t=0 0`.
        public init(start: UInt64 = 0, stop: UInt64 = 0, repeats: [String] = []) {
            self.start = start
            self.stop = stop
            self.repeats = repeats
        }

        init(parsing value: Substring) throws(SDPError) {
            let fields = SDPScanning.fields(value)
            guard fields.count == 2,
                let start = SDPScanning.decimal(fields[0], as: UInt64.self),
                let stop = SDPScanning.decimal(fields[1], as: UInt64.self)
            else { throw SDPError(.malformedLine, "t= line needs two decimal times") }
            self.init(start: start, stop: stop)
        }
    }

    /// `b=<bwtype>:<bandwidth>` (RFC 8866 5.8): `AS` in kb/s, `TIAS` in b/s (RFC 3890),
    /// `CT`, `RR`, `RS`.
    public struct Bandwidth: Hashable, Sendable {
        /// The modifier, such as `AS`.
        public var type: String
        /// The number, in the modifier's unit.
        public var value: UInt64

        /// Creates a bandwidth line.
        public init(type: String, value: UInt64) {
            self.type = type
            self.value = value
        }

        /// `b=AS:<kilobits per second>`, application-specific maximum; ffmpeg writes it.
        public static func applicationSpecific(kilobitsPerSecond: UInt64) -> Bandwidth {
            Bandwidth(type: "AS", value: kilobitsPerSecond)
        }

        /// `b=TIAS:<bits per second>`, transport-independent maximum (RFC 3890).
        public static func transportIndependent(bitsPerSecond: UInt64) -> Bandwidth {
            Bandwidth(type: "TIAS", value: bitsPerSecond)
        }

        init(parsing value: Substring) throws(SDPError) {
            guard let parts = SDPScanning.cut(value, at: ":"), !parts.before.isEmpty, !SDPScanning.containsBlank(parts.before) else {
                throw SDPError(.malformedLine, "b= line needs <type>:<number>")
            }
            guard let number = SDPScanning.decimal(parts.after, as: UInt64.self) else {
                throw SDPError(.malformedLine, "b= bandwidth is not a decimal number")
            }
            self.init(type: String(parts.before), value: number)
        }

        var text: String { "\(SDPScanning.token(type)):\(value)" }
    }
}
