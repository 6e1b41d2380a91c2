import Foundation
import MediaEngine

/// A STUN Binding request over UDP from the calling thread's network namespace (run it in
/// `NetworkLab.withNamespace` to send from a lab host): what address the server saw.
public enum STUNProbe {
    /// Sends Binding requests to `server` (one every `interval`) from a fresh socket on
    /// `localPort` (0: any) until one is answered with the same transaction ID.
    /// - Parameter attributes: added to the request (padding for servers that answer only
    ///   requests at least as large as their answer).
    /// - Returns: the answer's XOR-MAPPED-ADDRESS, and the local address the socket had;
    ///   nil when nothing answered within `timeout` seconds.
    /// - Throws: `TransportError` when the socket cannot be bound or the send fails.
    public static func mappedAddress(of server: SocketAddress, localPort: Int = 0,
                                     attributes: [STUNMessage.Attribute] = [], timeout: Double = 2,
                                     interval: Duration = .milliseconds(100)) throws -> (mapped: SocketAddress, local: SocketAddress)? {
        let any = try SocketAddress(host: server.isIPv6 ? "::" : "0.0.0.0", port: localPort)
        let socket = try UDPSocket(bindTo: any)
        defer { socket.close() }
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(), attributes: attributes)
        let bytes = request.serialized()
        var buffer = [UInt8](repeating: 0, count: 1_500)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            try bytes.withUnsafeBytes { (raw) in try socket.send(raw, to: server) }
            let attemptEnd = ContinuousClock.now + interval
            while ContinuousClock.now < attemptEnd {
                let received = try buffer.withUnsafeMutableBytes { (raw) in
                    try socket.receive(into: raw, timeout: max(.zero, attemptEnd - ContinuousClock.now))
                }
                guard let (count, source) = received, source == server else { continue }
                guard let answer = try? STUNMessage(parsing: Array(buffer[0..<count])),
                      answer.transactionID == request.transactionID, answer.type == .bindingSuccess,
                      let mapped = answer.xorMappedAddress
                else { continue }
                return (mapped, socket.localAddress)
            }
        }
        return nil
    }
}
