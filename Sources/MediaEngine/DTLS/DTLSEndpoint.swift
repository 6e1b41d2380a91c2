import CSSL
#if canImport(Glibc)
import Glibc
#endif

/// Which end of the handshake this side is: SDP's `a=setup` (RFC 5763) decides.
public enum DTLSRole: String, Sendable, Hashable {
    /// `a=setup:active`: sends the ClientHello.
    case client
    /// `a=setup:passive`: answers it.
    case server
}

/// The SRTP keys a DTLS-SRTP handshake agreed (RFC 5764 4.2): this side protects with
/// `local`, the peer with `remote`.
public struct DTLSSRTPKeys: Sendable, Hashable {
    public var profile: SRTPProfile
    public var local: SRTPKeyingMaterial
    public var remote: SRTPKeyingMaterial
}

/// One DTLS-SRTP association, sans-I/O (RFC 5763/5764) through OpenSSL's libssl over
/// memory BIOs: the caller hands it the DTLS datagrams that arrive (`handle`; RFC 7983
/// tells them by first byte, 20...63) and the time, and sends what `pollTransmit` gives.
/// Records are at most 1,200 bytes (memory BIOs cannot answer OpenSSL's MTU queries), a
/// flight is cut into datagrams at record boundaries, and OpenSSL retransmits on its timer
/// (`nextTimeout`, `handleTimeout`). Once connected, the peer's certificate has been checked
/// against the fingerprints its signaling sent, and `keys` holds the SRTP keys. A
/// handshake that does not finish within `handshakeTimeout` fails with `.timeout`.
/// Not thread-safe: one owner at a time.
public final class DTLSEndpoint {
    public enum State: Sendable {
        case new
        case connecting
        case connected(DTLSSRTPKeys)
        /// The peer ended the association (close_notify).
        case closed
        case failed(DTLSError)
    }

    /// Counters of what came in.
    public struct Statistics: Sendable, Hashable {
        /// Datagrams handed in.
        public var datagramsReceived = 0
        /// Datagrams that are not DTLS records OpenSSL took (garbage, truncated), dropped.
        public var malformedDatagrams = 0
        /// Datagrams sent (records of one flight may share one).
        public var datagramsSent = 0
        /// Flights sent again because their answer was late.
        public var retransmissions = 0
    }

    /// The largest datagram sent.
    public static let maximumDatagramSize = 1_200
    /// The SRTP profiles offered, in order: GCM first (RFC 7714), then AES-CM-HMAC-SHA1-80.
    static let srtpProfiles = "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80"

    public let role: DTLSRole
    public let certificate: DTLSCertificate
    public let remoteFingerprints: [DTLSFingerprint]
    public let handshakeTimeout: Duration
    public private(set) var state: State = .new
    public private(set) var statistics = Statistics()

    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer
    private var outgoing: [[UInt8]] = []
    private var outgoingHead = 0
    private var deadline: Duration?
    private var retransmitAt: Duration?
    /// The last flight sent and the wait before it goes again (RFC 6347 4.2.4.1: an
    /// initial timeout, doubled up to 60 s), on the caller's clock. OpenSSL's own timer
    /// runs on the real clock, so a caller in virtual time would never see it expire: a
    /// flight it does not resend when ours does is resent as it was (the same records: a
    /// peer that had them drops them as replays, one that lost them takes them).
    private var lastFlight: [[UInt8]] = []
    private let initialRetransmission: Duration
    private var retransmissionInterval: Duration

    /// - Parameters:
    ///   - remoteFingerprints: Every `a=fingerprint` the peer sent: its certificate must
    ///     match one of them.
    /// - Throws: `DTLSError.setup` when OpenSSL refuses a setting.
    ///   - initialRetransmission: How long a flight waits for its answer before it is sent
    ///     again (doubling each time, RFC 6347 4.2.4.1).
    public init(role: DTLSRole, certificate: DTLSCertificate, remoteFingerprints: [DTLSFingerprint],
                handshakeTimeout: Duration = .seconds(10), initialRetransmission: Duration = .seconds(1)) throws(DTLSError) {
        self.role = role
        self.certificate = certificate
        self.remoteFingerprints = remoteFingerprints
        self.handshakeTimeout = handshakeTimeout
        self.initialRetransmission = initialRetransmission
        retransmissionInterval = initialRetransmission
        guard let method = DTLS_method(), let context = SSL_CTX_new(method) else { throw DTLSError.openSSL(.setup, "SSL_CTX_new") }
        guard SSL_CTX_use_certificate(context, certificate.certificate) == 1,
              SSL_CTX_use_PrivateKey(context, certificate.key) == 1,
              SSL_CTX_set_tlsext_use_srtp(context, Self.srtpProfiles) == 0,
              let ssl = SSL_new(context) else {
            let error = DTLSError.openSSL(.setup, "certificate, key or SRTP profiles")
            SSL_CTX_free(context)
            throw error
        }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            SSL_CTX_free(context)
            throw DTLSError.openSSL(.setup, "memory BIOs")
        }
        self.context = context
        self.ssl = ssl
        self.input = input
        self.output = output
        // An empty BIO reads as "try again", not as the end of the stream.
        _ = CSSL_BIO_set_mem_eof_return(input, -1)
        _ = CSSL_BIO_set_mem_eof_return(output, -1)
        SSL_set_bio(ssl, input, output)
        _ = SSL_set_options(ssl, CSSL_OP_NO_QUERY_MTU())
        _ = CSSL_set_mtu(ssl, Self.maximumDatagramSize - 28)
        _ = CSSL_DTLS_set_link_mtu(ssl, Self.maximumDatagramSize)
        CSSL_verify_with_fingerprints(ssl)
        CSSL_DTLS_set_initial_timeout(ssl, UInt32(clamping: Int64(initialRetransmission / .microseconds(1))))
        if role == .client { SSL_set_connect_state(ssl) } else { SSL_set_accept_state(ssl) }
    }

    deinit {
        SSL_free(ssl)  // frees both BIOs
        SSL_CTX_free(context)
    }

    /// Starts the handshake at `now`: the client's first flight is queued.
    public func start(now: Duration) {
        guard case .new = state else { return }
        state = .connecting
        deadline = deadline ?? now + handshakeTimeout
        advance(now: now)
    }

    /// The server's clock starts before the peer's first flight: from `now` (the path to
    /// the peer exists), the handshake must end within `handshakeTimeout`, ClientHello or
    /// not. A peer that checks and sends but never speaks DTLS fails, rather than holding
    /// its place forever.
    public func awaitPeer(now: Duration) {
        guard case .new = state, deadline == nil else { return }
        deadline = now + handshakeTimeout
    }

    /// One DTLS datagram from the peer. A datagram that is not a run of whole DTLS 1.x
    /// records is counted and dropped before OpenSSL sees it.
    public func handle(_ datagram: UnsafeRawBufferPointer, now: Duration) {
        statistics.datagramsReceived += 1
        guard Self.isRecords(datagram), let base = datagram.baseAddress else {
            statistics.malformedDatagrams += 1
            return
        }
        if case .new = state { start(now: now) }
        switch state {
        case .connecting:
            _ = BIO_write(input, base, Int32(datagram.count))
            advance(now: now)
        case .connected:
            // The peer may not have seen this side's last flight: OpenSSL answers its
            // retransmission while reading. Application data has no taker here.
            _ = BIO_write(input, base, Int32(datagram.count))
            var scratch = [UInt8](repeating: 0, count: 2_048)
            while true {
                let read = SSL_read(ssl, &scratch, Int32(scratch.count))
                if read > 0 { continue }
                if SSL_get_error(ssl, read) == SSL_ERROR_ZERO_RETURN { state = .closed }
                ERR_clear_error()
                break
            }
            collectOutput()
        case .new, .closed, .failed:
            break
        }
    }

    /// Whether `datagram` is one or more whole DTLS records: content type 20...25, version
    /// 1.0 or 1.2 (0xFEFF, 0xFEFD), each length within the datagram.
    static func isRecords(_ datagram: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < datagram.count {
            guard offset + 13 <= datagram.count, (20...25).contains(datagram[offset]), datagram[offset + 1] == 0xFE,
                  datagram[offset + 2] == 0xFF || datagram[offset + 2] == 0xFD else { return false }
            let length = Int(datagram[offset + 11]) << 8 | Int(datagram[offset + 12])
            offset += 13 + length
        }
        return offset == datagram.count && offset > 0
    }

    /// When `handleTimeout` next has work (a retransmission, the handshake deadline).
    public var nextTimeout: Duration? {
        if case .new = state { return deadline }
        guard case .connecting = state else { return nil }
        switch (retransmitAt, deadline) {
        case (let retransmit?, let deadline?): return min(retransmit, deadline)
        case (let retransmit, let deadline): return retransmit ?? deadline
        }
    }

    /// Retransmits a flight whose answer is late (OpenSSL's timer), fails a handshake past
    /// its deadline.
    public func handleTimeout(now: Duration) {
        if case .new = state, let deadline, now >= deadline {
            state = .failed(DTLSError(.timeout, "the peer began no DTLS handshake within \(handshakeTimeout)"))
            return
        }
        guard case .connecting = state else { return }
        if let deadline, now >= deadline {
            state = .failed(DTLSError(.timeout, "DTLS handshake did not finish within \(handshakeTimeout)"))
            return
        }
        if let retransmitAt, now >= retransmitAt {
            _ = CSSL_DTLS_handle_timeout(ssl)
            if !collectOutput() { outgoing.append(contentsOf: lastFlight) }
            statistics.retransmissions += 1
            retransmissionInterval = min(retransmissionInterval * 2, .seconds(60))
            scheduleRetransmission(now: now)
        }
    }

    /// The next datagram to send, or nil.
    public func pollTransmit() -> [UInt8]? {
        guard outgoingHead < outgoing.count else {
            outgoing.removeAll(keepingCapacity: true)
            outgoingHead = 0
            return nil
        }
        defer { outgoingHead += 1 }
        statistics.datagramsSent += 1
        return outgoing[outgoingHead]
    }

    /// The keys, once connected.
    public var keys: DTLSSRTPKeys? {
        if case .connected(let keys) = state { return keys }
        return nil
    }

    // MARK: The handshake

    private func advance(now: Duration) {
        let result = SSL_do_handshake(ssl)
        if collectOutput() { retransmissionInterval = initialRetransmission }
        if result == 1 {
            finish()
            return
        }
        let error = SSL_get_error(ssl, result)
        if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE {
            ERR_clear_error()
            scheduleRetransmission(now: now)
            return
        }
        state = .failed(DTLSError.openSSL(.handshake, "DTLS handshake failed"))
    }

    /// While OpenSSL waits for the peer's answer to a flight (its timer runs), the flight
    /// goes again after the current interval on the caller's clock.
    private func scheduleRetransmission(now: Duration) {
        var remaining = timeval()
        retransmitAt = CSSL_DTLS_get_timeout(ssl, &remaining) == 1 ? now + retransmissionInterval : nil
    }

    /// The handshake finished: check the peer's certificate against the fingerprints,
    /// then export the keys.
    private func finish() {
        retransmitAt = nil
        guard let peer = SSL_get1_peer_certificate(ssl) else {
            state = .failed(DTLSError(.fingerprintMismatch, "the peer sent no certificate"))
            return
        }
        defer { X509_free(peer) }
        let matches = remoteFingerprints.contains { expected in
            DTLSFingerprint.of(peer, algorithm: expected.algorithm)?.bytes == expected.bytes
        }
        guard matches else {
            let seen = DTLSFingerprint.of(peer, algorithm: "sha-256").map(\.description) ?? "none"
            state = .failed(DTLSError(.fingerprintMismatch, "the peer's certificate (\(seen)) matches none of the \(remoteFingerprints.count) fingerprint(s) its signaling sent"))
            return
        }
        guard let selected = SSL_get_selected_srtp_profile(ssl) else {
            state = .failed(DTLSError(.handshake, "no SRTP profile in common"))
            return
        }
        let profile: SRTPProfile
        switch selected.pointee.id {
        case UInt(SRTP_AEAD_AES_128_GCM): profile = .aeadAES128GCM
        case UInt(SRTP_AES128_CM_SHA1_80): profile = .aesCM128HMACSHA1_80
        default:
            state = .failed(DTLSError(.handshake, "SRTP profile \(selected.pointee.id) is not one this side offered"))
            return
        }
        let keyLength = 16
        let saltLength = profile.keyLength - keyLength
        var material = [UInt8](repeating: 0, count: 2 * profile.keyLength)
        let label = "EXTRACTOR-dtls_srtp"
        guard SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 else {
            state = .failed(DTLSError.openSSL(.handshake, "keying material export"))
            return
        }
        // client key | server key | client salt | server salt (RFC 5764 4.2).
        let clientKey = material[0..<keyLength], serverKey = material[keyLength..<(2 * keyLength)]
        let clientSalt = material[(2 * keyLength)..<(2 * keyLength + saltLength)]
        let serverSalt = material[(2 * keyLength + saltLength)...]
        do {
            let client = try SRTPKeyingMaterial(profile: profile, bytes: Array(clientKey + clientSalt))
            let server = try SRTPKeyingMaterial(profile: profile, bytes: Array(serverKey + serverSalt))
            state = .connected(role == .client ? DTLSSRTPKeys(profile: profile, local: client, remote: server)
                                               : DTLSSRTPKeys(profile: profile, local: server, remote: client))
        } catch {
            state = .failed(DTLSError(.handshake, "exported keys: \(error.message)"))
        }
    }

    /// Moves what OpenSSL wrote into datagrams: whole records, as many as fit in 1,200 bytes.
    /// Moves what OpenSSL wrote into datagrams to send; a flight written becomes the last one.
    /// - Returns: whether it wrote anything.
    @discardableResult
    private func collectOutput() -> Bool {
        let pending = CSSL_BIO_pending(output)
        guard pending > 0 else { return false }
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = BIO_read(output, &bytes, Int32(pending))
        guard read > 0 else { return false }
        let first = outgoing.count
        var datagram: [UInt8] = []
        var offset = 0
        while offset + 13 <= Int(read) {
            let length = 13 + (Int(bytes[offset + 11]) << 8 | Int(bytes[offset + 12]))
            let record = bytes[offset..<min(Int(read), offset + length)]
            if !datagram.isEmpty && datagram.count + record.count > Self.maximumDatagramSize {
                outgoing.append(datagram)
                datagram = []
            }
            datagram.append(contentsOf: record)
            offset += length
        }
        if !datagram.isEmpty { outgoing.append(datagram) }
        lastFlight = Array(outgoing[first...])
        return true
    }
}
