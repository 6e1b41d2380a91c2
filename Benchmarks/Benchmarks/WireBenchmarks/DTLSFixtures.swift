import Benchmark
import BenchmarkSupport
import DTLSBaseline
import MediaEngine

/// One DTLS-SRTP handshake per call through two `DTLSEndpoint`s (client and server, each
/// with its certificate made once), every datagram handed straight to the other end; the
/// server end's CPU time is summed for the report.
final class SwiftDTLSHandshake {
    let clientCertificate: DTLSCertificate
    let serverCertificate: DTLSCertificate
    /// CPU time the server end's calls took, over every handshake so far.
    private(set) var serverCPU = 0
    private(set) var handshakes = 0

    init() throws {
        clientCertificate = try DTLSCertificate()
        serverCertificate = try DTLSCertificate()
    }

    func handshake() throws -> DTLSSRTPKeys {
        var started = threadCPUNanoseconds()
        let server = try DTLSEndpoint(role: .server, certificate: serverCertificate, remoteFingerprints: [clientCertificate.fingerprint])
        serverCPU += threadCPUNanoseconds() - started
        let client = try DTLSEndpoint(role: .client, certificate: clientCertificate, remoteFingerprints: [serverCertificate.fingerprint])
        client.start(now: .zero)
        for _ in 0..<16 {
            var moved = false
            while let datagram = client.pollTransmit() {
                moved = true
                started = threadCPUNanoseconds()
                datagram.withUnsafeBytes { server.handle($0, now: .zero) }
                serverCPU += threadCPUNanoseconds() - started
            }
            started = threadCPUNanoseconds()
            var answers: [[UInt8]] = []
            while let datagram = server.pollTransmit() { answers.append(datagram) }
            serverCPU += threadCPUNanoseconds() - started
            for datagram in answers {
                moved = true
                datagram.withUnsafeBytes { client.handle($0, now: .zero) }
            }
            if !moved { break }
        }
        handshakes += 1
        guard case .connected(let local) = client.state, case .connected(let remote) = server.state else {
            throw BenchmarkFailure("DTLS: the handshake did not finish: client \(client.state), server \(server.state)")
        }
        guard local.local == remote.remote, local.remote == remote.local else {
            throw BenchmarkFailure("DTLS: the two ends exported different keys")
        }
        started = threadCPUNanoseconds()
        _ = consume server
        serverCPU += threadCPUNanoseconds() - started
        return local
    }
}

/// The same handshake through `DTLSBaseline`: OpenSSL called from C as DTLSEndpoint calls it.
final class BaselineDTLSHandshake {
    private let client: OpaquePointer
    private let server: OpaquePointer
    private(set) var serverCPU = 0
    private(set) var handshakes = 0

    init() throws {
        guard let client = baseline_dtls_identity_new() else { throw BenchmarkFailure("DTLS baseline: no client identity") }
        guard let server = baseline_dtls_identity_new() else {
            baseline_dtls_identity_free(client)
            throw BenchmarkFailure("DTLS baseline: no server identity")
        }
        self.client = client
        self.server = server
    }

    deinit {
        baseline_dtls_identity_free(client)
        baseline_dtls_identity_free(server)
    }

    func handshake() throws -> Int32 {
        var cpu: Int64 = 0
        let status = baseline_dtls_handshake(client, server, &cpu)
        guard status == 0 else { throw BenchmarkFailure("DTLS baseline: handshake failed (\(status))") }
        serverCPU += Int(cpu)
        handshakes += 1
        return status
    }
}

/// The metrics of the interleaved handshake benchmark, per handshake, in nanoseconds.
enum DTLSMetrics {
    static let swift = BenchmarkMetric.custom("handshake, Swift (ns)")
    static let c = BenchmarkMetric.custom("handshake, C (ns)")
    static let swiftServer = BenchmarkMetric.custom("server end, Swift (ns)")
    static let cServer = BenchmarkMetric.custom("server end, C (ns)")
    static let all = [swift, c, swiftServer, cServer]
}

/// One Swift and one C handshake per call, each timed and recorded.
final class DTLSHandshakePair {
    let swift: SwiftDTLSHandshake
    let c: BaselineDTLSHandshake

    init() throws {
        swift = try SwiftDTLSHandshake()
        c = try BaselineDTLSHandshake()
    }

    func next(_ benchmark: Benchmark) throws -> Int {
        var (server, started) = (swift.serverCPU, threadCPUNanoseconds())
        let keys = try swift.handshake()
        benchmark.measurement(DTLSMetrics.swift, threadCPUNanoseconds() - started)
        benchmark.measurement(DTLSMetrics.swiftServer, swift.serverCPU - server)
        (server, started) = (c.serverCPU, threadCPUNanoseconds())
        let status = try c.handshake()
        benchmark.measurement(DTLSMetrics.c, threadCPUNanoseconds() - started)
        benchmark.measurement(DTLSMetrics.cServer, c.serverCPU - server)
        return keys.local.bytes.count + Int(status)
    }
}
