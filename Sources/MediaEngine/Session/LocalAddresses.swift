#if canImport(Glibc)
import Glibc
#endif

/// The host's own addresses, for candidates.
public enum LocalAddresses {
    /// IPv4 addresses of interfaces that are up, loopback last; `127.0.0.1` when there are none.
    public static func ipv4() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return ["127.0.0.1"] }
        defer { freeifaddrs(list) }
        var addresses: [String] = []
        var loopback: [String] = []
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                  current.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &ipv4, &text, socklen_t(text.count)) != nil else { continue }
            let string = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if current.pointee.ifa_flags & UInt32(IFF_LOOPBACK) != 0 { loopback.append(string) } else { addresses.append(string) }
        }
        let all = addresses + loopback
        return all.isEmpty ? ["127.0.0.1"] : all
    }
}
