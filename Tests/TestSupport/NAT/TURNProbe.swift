import Foundation
import MediaEngine

/// A TURN allocation over UDP from the calling thread, to see whether a server takes
/// credentials: `TURNClient` through a real socket on a real clock.
public enum TURNProbe {
    /// Allocates a relay on `server` with `credentials`, then releases it.
    /// - Returns: The relayed address, or the client's typed error (401 for wrong or
    ///   expired credentials, 486 at the quota, a timeout when nothing answers).
    /// - Throws: `TransportError` when the socket fails; `ToolFailure` when neither came
    ///   within `timeout`.
    public static func allocate(on server: SocketAddress, credentials: TURNCredentials,
                                timeout: Duration = .seconds(10)) throws -> Result<SocketAddress, TURNError> {
        let socket = try UDPSocket(bindTo: SocketAddress(host: server.isIPv6 ? "::" : "0.0.0.0", port: 0))
        defer { socket.close() }
        var client = TURNClient(configuration: .init(server: server, credentials: credentials))
        let start = ContinuousClock.now
        var now: Duration { ContinuousClock.now - start }
        func flush() throws {
            while let action = client.nextAction() {
                if case .transmit(let bytes) = action { try bytes.withUnsafeBytes { try socket.send($0, to: server) } }
            }
        }
        var buffer = [UInt8](repeating: 0, count: 2_048)
        client.start(now: now)
        while now < timeout {
            try flush()
            switch client.state {
            case .allocated:
                let relayed = client.relayedAddress
                client.close(now: now)
                try flush()
                guard let relayed else { throw ToolFailure("TURN allocation without a relayed address") }
                return .success(relayed)
            case .failed(let error):
                return .failure(error)
            default:
                break
            }
            let wait = min(client.nextDeadline.map { max($0 - now, .zero) } ?? .milliseconds(20), .milliseconds(20))
            if let (count, source) = try buffer.withUnsafeMutableBytes({ try socket.receive(into: $0, timeout: wait) }) {
                _ = buffer.withUnsafeBytes { client.receive(UnsafeRawBufferPointer(rebasing: $0[0..<count]), from: source, now: now) }
            }
            client.update(now: now)
        }
        throw ToolFailure("TURN allocation on \(server): no outcome within \(timeout), state \(client.state)")
    }
}
