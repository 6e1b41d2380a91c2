#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address and UDP port. Value type; no allocation to copy or compare.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    enum Storage: Sendable {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }

    let storage: Storage

    init(_ storage: Storage) { self.storage = storage }

    /// Resolves `host` (a numeric address or a name) and `port`.
    /// - Throws: `TransportError.badAddress` naming the host when it does not resolve or
    ///   the port is outside 0...65535.
    public init(host: String, port: Int) throws(TransportError) {
        guard (0...65_535).contains(port) else {
            throw TransportError(.badAddress, "port \(port) is outside 0...65535")
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw TransportError(.badAddress, "cannot resolve '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        var found: Storage?
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry, found == nil {
            if let address = current.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET: found = .v4(UnsafeRawPointer(address).load(as: sockaddr_in.self))
                case AF_INET6: found = .v6(UnsafeRawPointer(address).load(as: sockaddr_in6.self))
                default: break
                }
            }
            entry = current.pointee.ai_next
        }
        guard let found else { throw TransportError(.badAddress, "'\(host)' has no IPv4 or IPv6 address") }
        storage = found
    }

    /// Parses `HOST:PORT`, `[IPv6]:PORT` or `IPv6-literal:PORT` (the last colon splits).
    public init(parsing text: String) throws(TransportError) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
            throw TransportError(.badAddress, "'\(text)' is not HOST:PORT")
        }
        try self.init(host: String(text[..<colon]), port: port)
    }

    /// An address from its raw bytes in network order, as address attributes carry them
    /// on the wire (STUN XOR-MAPPED-ADDRESS once un-XORed): 4 bytes for IPv4, 16 for IPv6.
    ///
    /// - Parameters:
    ///   - bytes: The IP address, most significant byte first.
    ///   - port: The UDP port.
    /// - Returns: `nil` when `bytes` is neither 4 nor 16 bytes long or `port` is outside
    ///   0...65535.
    public init?(addressBytes bytes: some Collection<UInt8>, port: Int) {
        guard (0...65_535).contains(port) else { return nil }
        switch bytes.count {
        case 4:
            var address = sockaddr_in()
            #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes) }
            self.init(.v4(address))
        case 16:
            var address = sockaddr_in6()
            #if canImport(Darwin)
            address.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
            #endif
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes) }
            self.init(.v6(address))
        default:
            return nil
        }
    }

    /// The IP address's raw bytes in network order: 4 for IPv4, 16 for IPv6.
    public var addressBytes: [UInt8] {
        switch storage {
        case .v4(let address): withUnsafeBytes(of: address.sin_addr) { Array($0) }
        case .v6(let address): withUnsafeBytes(of: address.sin6_addr) { Array($0) }
        }
    }

    /// The UDP port.
    public var port: Int {
        switch storage {
        case .v4(let address): Int(UInt16(bigEndian: address.sin_port))
        case .v6(let address): Int(UInt16(bigEndian: address.sin6_port))
        }
    }

    /// True for IPv6.
    public var isIPv6: Bool {
        if case .v6 = storage { return true }
        return false
    }

    /// The numeric host, without brackets.
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch storage {
        case .v4(var address): inet_ntop(AF_INET, &address.sin_addr, &buffer, socklen_t(buffer.count))
        case .v6(var address): inet_ntop(AF_INET6, &address.sin6_addr, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// 0.0.0.0:0, a placeholder for "no address".
    static let unspecified = SocketAddress(addressBytes: [0, 0, 0, 0], port: 0)!

    /// 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        let bytes = addressBytes
        return isIPv6 ? bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1 : bytes.first == 127
    }

    /// 0.0.0.0 or :: (however it was spelled), whatever the port.
    public var isUnspecified: Bool { addressBytes.allSatisfy { $0 == 0 } }

    /// The same host with another port.
    public func with(port: Int) -> SocketAddress {
        switch storage {
        case .v4(var address):
            address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
            return SocketAddress(.v4(address))
        case .v6(var address):
            address.sin6_port = UInt16(truncatingIfNeeded: port).bigEndian
            return SocketAddress(.v6(address))
        }
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        switch (a.storage, b.storage) {
        case (.v4(let x), .v4(let y)): x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr
        case (.v6(var x), .v6(var y)):
            x.sin6_port == y.sin6_port && memcmp(&x.sin6_addr, &y.sin6_addr, MemoryLayout<in6_addr>.size) == 0
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(port)
        switch storage {
        case .v4(let address): hasher.combine(address.sin_addr.s_addr)
        case .v6(var address): withUnsafeBytes(of: &address.sin6_addr) { hasher.combine(bytes: $0) }
        }
    }

    /// Calls `body` with the C sockaddr and its length.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch storage {
        case .v4(var address):
            withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
            } }
        case .v6(var address):
            withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            } }
        }
    }

    /// Reads an address filled in by the kernel.
    init?(_ storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET: self.init(.v4(withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }))
        case AF_INET6: self.init(.v6(withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }))
        default: return nil
        }
    }
}

/// A socket failure, with the system's words for it.
public struct TransportError: CodedError {
    public typealias Code = ErrorCode<TransportError>

    public let code: Code
    public let message: String
    /// The `errno` behind a failed socket call.
    public let systemError: Int32?

    public init(_ code: Code, _ message: String, systemError: Int32? = nil) {
        self.code = code
        self.message = message
        self.systemError = systemError
    }

    /// An error from the current `errno`.
    package static func system(_ action: String) -> TransportError {
        let number = errno
        return TransportError(.socketFailed, "\(action): \(String(cString: strerror(number)))", systemError: number)
    }
}

extension ErrorCode where Domain == TransportError {
    /// An address does not parse or resolve.
    public static var badAddress: Self { Self("bad address") }
    /// A socket call failed (bind, send, receive).
    public static var socketFailed: Self { Self("socket failed") }
    /// The socket was closed.
    public static var closed: Self { Self("closed") }
    /// The system refused what was asked of it (a real-time priority the process may not use).
    public static var notPermitted: Self { Self("not permitted") }
}
