import Foundation
import MediaEngine
import Signaling
import TestSupport
import Testing
@testable import MediaServer

/// The TURN relay's settings: the URL, the secret file and the lifetime, each refused with
/// a typed error that never holds the secret; and the credentials a login gets.
@Suite struct TURNRelaySettings {
    static let secret = "north-wind-7f3a9c1e5b2d8046"

    /// A temporary file holding `contents`, removed when the returned directory is.
    static func secretFile(_ contents: Data) throws -> (directory: URL, path: String) {
        let directory = try temporaryDirectory("turn-secret")
        let url = directory.appendingPathComponent("secret")
        try contents.write(to: url)
        return (directory, url.path)
    }

    @Test func theSecretFileIsReadWithoutTheWhiteSpaceAroundIt() throws {
        let (directory, path) = try Self.secretFile(Data("  \(Self.secret)\r\n\n".utf8))
        defer { try? FileManager.default.removeItem(at: directory) }
        let relay = try TURNRelay.load(url: "turn:192.0.2.1:3478?transport=UDP", secretFile: path)
        #expect(relay.secret == Self.secret)
        #expect(relay.url.description == "turn:192.0.2.1:3478?transport=udp")
        #expect(relay.credentialLifetime == .seconds(86_400))
    }

    @Test(arguments: [
        // file contents (nil: no file; "dir": a directory), code, what the message says
        (nil as String?, TURNRelayError.Code.unreadableSecretFile, "cannot read the TURN secret file"),
        ("dir", .unreadableSecretFile, "cannot read the TURN secret file"),
        ("", .emptySecret, "the TURN secret file is empty"),
        (" \n\t\n", .emptySecret, "the TURN secret file is empty"),
        (secret + "\nsecond-line", .badSecret, "holds a line break or another control character"),
        (secret + "\u{7}", .badSecret, "holds a line break or another control character"),
        (secret + String(repeating: "x", count: 300), .badSecret, "coturn keeps at most 255"),
        (secret + String(repeating: "x", count: 5_000), .badSecret, "larger than 4096 bytes"),
    ])
    func badSecretFilesAreTypedErrorsNamingThePathNeverTheSecret(contents: String?, code: TURNRelayError.Code, message: String) throws {
        let directory = try temporaryDirectory("turn-secret")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("secret").path
        switch contents {
        case nil: break
        case "dir"?: try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        case let text?: try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }
        let error = #expect(throws: TURNRelayError.self) { try TURNRelay.load(url: "turn:192.0.2.1:3478", secretFile: path) }
        #expect(error?.code == code)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
        #expect(error?.message.hasPrefix(path) == true, "the path is named: \(String(describing: error))")
        #expect(error.map { "\($0)".contains("north-wind") } == false, "the secret is never in the error")
    }

    @Test func aSecretFileThatIsNotUTF8IsRefused() throws {
        let (directory, path) = try Self.secretFile(Data([0x6E, 0x6F, 0xFF, 0xFE, 0x0A]))
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = #expect(throws: TURNRelayError.self) { try TURNRelay.load(url: "turn:192.0.2.1:3478", secretFile: path) }
        #expect(error?.code == .badSecret)
        #expect(error?.message == "\(path): the TURN secret file is not UTF-8 text")
    }

    @Test(arguments: [
        ("stun:192.0.2.1:3478", "not a TURN server over UDP"),
        ("turns:192.0.2.1:5349", "not a TURN server over UDP"),
        ("turn:192.0.2.1:3478?transport=tcp", "not a TURN server over UDP"),
        ("http://192.0.2.1:3478", "not a stun:, stuns:, turn: or turns: URL"),
        ("turn:192.0.2.1:0", "port '0' is not 1...65535"),
        ("turn://192.0.2.1:3478", "no '//' after the scheme"),
    ])
    func badURLsAreTypedErrorsNamingTheURL(url: String, message: String) {
        let error = #expect(throws: TURNRelayError.self) { try TURNRelay(url: url, secret: Self.secret) }
        #expect(error?.code == .badURL)
        #expect(error?.message.contains(url) == true, "the URL is named: \(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
        #expect(error.map { "\($0)".contains(Self.secret) } == false)
    }

    @Test func lifetimesAreWholePositiveSeconds() {
        for lifetime: Duration in [.zero, .seconds(-5), .milliseconds(1_500)] {
            let error = #expect(throws: TURNRelayError.self) {
                try TURNRelay(url: "turn:192.0.2.1", secret: Self.secret, credentialLifetime: lifetime)
            }
            #expect(error?.code == .badLifetime, "\(lifetime)")
        }
    }

    @Test func aLoginsCredentialsAreCoturnsRESTCredentialsExpiringAfterTheLifetime() throws {
        let relay = try TURNRelay(url: "turn:192.0.2.1:3478", secret: Self.secret, credentialLifetime: .seconds(600))
        let now = Date(timeIntervalSince1970: 1_700_000_000.75)
        let server = relay.iceServer(for: "alice", now: now)
        #expect(server.urls == ["turn:192.0.2.1:3478"])
        #expect(server.username == "1700000600:alice")
        // base64(HMAC-SHA1("north-wind-7f3a9c1e5b2d8046", "1700000600:alice")), from
        // `printf %s 1700000600:alice | openssl dgst -sha1 -hmac north-wind-7f3a9c1e5b2d8046 -binary | base64`.
        #expect(server.credential == "RsRevRDizQP4AFOtAFFHSZTogmM=")
        #expect(server.credential == TURNCredentials.restAPI(secret: Self.secret, account: "alice", expiresAt: 1_700_000_600).password)
    }

    @Test(arguments: [
        ("alice", "alice"),
        ("alice@example.com", "alice@example.com"),
        ("a-b.c_d~e+f", "a-b.c_d~e+f"),
        ("bob:smith", "bob%3Asmith"),
        ("100%", "100%25"),
        ("zoë", "zo%C3%AB"),
        ("tab\there", "tab%09here"),
    ])
    func accountsAreASCIIWithoutColonsInTheUsername(account: String, username: String) throws {
        let relay = try TURNRelay(url: "turn:192.0.2.1:3478", secret: Self.secret)
        let server = relay.iceServer(for: account, now: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(server.username == "1700086400:\(username)")
    }

    @Test func printingTheRelayOrTheServersSettingsNeverShowsTheSecret() throws {
        let relay = try TURNRelay(url: "turn:192.0.2.1:3478", secret: Self.secret)
        var configuration = SignalingServer.Configuration()
        configuration.turn = relay
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in ["\(relay)", String(reflecting: relay), "\(configuration)", String(reflecting: configuration), dumped] {
            #expect(!text.contains(Self.secret), "\(text)")
            #expect(text.contains("turn:192.0.2.1:3478"), "\(text)")
        }
    }
}
