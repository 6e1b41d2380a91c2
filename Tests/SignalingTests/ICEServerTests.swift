import Foundation
import MediaEngine
import Signaling
import Testing

@Suite struct ICEServerURLs {
    @Test(arguments: [
        // text, scheme, host, port, transport, canonical text
        ("stun:192.0.2.1", ICEServerURL.Scheme.stun, "192.0.2.1", 3_478, nil, "stun:192.0.2.1:3478"),
        ("stun:192.0.2.1:19302", .stun, "192.0.2.1", 19_302, nil, "stun:192.0.2.1:19302"),
        ("STUN:Stun.Example.com:3478", .stun, "Stun.Example.com", 3_478, nil, "stun:Stun.Example.com:3478"),
        ("stuns:stun.example.com", .stuns, "stun.example.com", 5_349, nil, "stuns:stun.example.com:5349"),
        ("turn:turn.example.com:3478", .turn, "turn.example.com", 3_478, nil, "turn:turn.example.com:3478"),
        ("turn:198.51.100.7:3478?transport=udp", .turn, "198.51.100.7", 3_478, ICEServerURL.Transport.udp,
         "turn:198.51.100.7:3478?transport=udp"),
        ("turn:198.51.100.7?Transport=TCP", .turn, "198.51.100.7", 3_478, .tcp, "turn:198.51.100.7:3478?transport=tcp"),
        ("turns:turn.example.com:443?transport=tcp", .turns, "turn.example.com", 443, .tcp, "turns:turn.example.com:443?transport=tcp"),
        ("stun:[2001:db8::1]:3478", .stun, "2001:db8::1", 3_478, nil, "stun:[2001:db8::1]:3478"),
        ("turn:[::1]", .turn, "::1", 3_478, nil, "turn:[::1]:3478"),
        ("stun:host_1.example:1", .stun, "host_1.example", 1, nil, "stun:host_1.example:1"),
        ("stun:a:65535", .stun, "a", 65_535, nil, "stun:a:65535"),
    ] as [(String, ICEServerURL.Scheme, String, Int, ICEServerURL.Transport?, String)])
    func urlsParse(text: String, scheme: ICEServerURL.Scheme, host: String, port: Int, transport: ICEServerURL.Transport?,
                   canonical: String) throws {
        let url = try ICEServerURL(parsing: text)
        #expect(url.scheme == scheme)
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(url.transport == transport)
        #expect(url.description == canonical)
        #expect(try ICEServerURL(parsing: url.description) == url, "the description parses back")
    }

    @Test(arguments: [
        // text, what the message says
        ("", "not a stun:, stuns:, turn: or turns: URL"),
        ("192.0.2.1:3478", "not a stun:, stuns:, turn: or turns: URL"),
        ("http://example.com", "not a stun:, stuns:, turn: or turns: URL"),
        ("stun://192.0.2.1:3478", "no '//' after the scheme"),
        ("stun:", "the host must be 1 to 253"),
        ("turn::3478", "the host must be 1 to 253"),
        ("stun:exa mple.com", "the host must be 1 to 253"),
        ("stun:ex%41mple.com", "the host must be 1 to 253"),
        ("stun:" + String(repeating: "a", count: 254), "the host must be 1 to 253"),
        ("stun:192.0.2.1:0", "port '0' is not 1...65535"),
        ("stun:192.0.2.1:65536", "port '65536' is not 1...65535"),
        ("stun:192.0.2.1:", "port '' is not 1...65535"),
        ("stun:192.0.2.1:34x", "port '34x' is not 1...65535"),
        ("stun:192.0.2.1:+3478", "port '+3478' is not 1...65535"),
        ("stun:192.0.2.1:003478", "port '003478' is not 1...65535"),
        ("turn:2001:db8::1", "an IPv6 address goes in brackets"),
        ("turn:[2001:db8::1", "'[' without ']'"),
        ("turn:[2001:db8::zz]:3478", "no IPv6 address between '[' and ']'"),
        ("turn:[192.0.2.1]:3478", "no IPv6 address between '[' and ']'"),
        ("turn:[::1]x", "only ':PORT' may follow ']'"),
        ("stun:192.0.2.1?transport=udp", "a stun: URL takes no query"),
        ("turn:192.0.2.1?transport=sctp", "the only query is transport=udp or transport=tcp"),
        ("turn:192.0.2.1?foo=bar", "the only query is transport=udp or transport=tcp"),
        ("turn:192.0.2.1?transport=udp&x=1", "the only query is transport=udp or transport=tcp"),
        ("stun:" + String(repeating: "a", count: 600), "longer than 512 bytes"),
    ])
    func malformedURLsAreTypedErrorsNamingTheProblem(text: String, message: String) {
        let error = #expect(throws: ICEServerError.self) { try ICEServerURL(parsing: text) }
        #expect(error?.code == .malformedURL)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test func aPasswordInTheURLIsNeverEchoed() {
        let error = #expect(throws: ICEServerError.self) { try ICEServerURL(parsing: "turn:alice:hunter2-password@192.0.2.1:3478") }
        #expect(error?.code == .malformedURL)
        #expect(error?.message.contains("user info") == true, "\(String(describing: error))")
        #expect(error?.description.contains("hunter2") == false)
    }
}

@Suite struct ICEServers {
    static let credential = "c2VjcmV0LXBhc3N3b3JkLWJ5dGVz"

    @Test func anEntryHasWebRTCsShapeOnTheWire() throws {
        let server = ICEServer(urls: ["turn:192.0.2.1:3478"], username: "1700000000:alice", credential: Self.credential)
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(server)) as? [String: Any])
        #expect(json["urls"] as? [String] == ["turn:192.0.2.1:3478"])
        #expect(json["username"] as? String == "1700000000:alice")
        #expect(json["credential"] as? String == Self.credential)
        // A browser's RTCIceServer decodes as one.
        let browser = #"{"urls":["stun:192.0.2.1:3478"]}"#
        #expect(try JSONDecoder().decode(ICEServer.self, from: Data(browser.utf8)) == ICEServer(urls: ["stun:192.0.2.1:3478"]))
    }

    @Test func printingAnEntryNeverShowsItsCredential() {
        let server = ICEServer(urls: ["turn:192.0.2.1:3478"], username: "1700000000:alice", credential: Self.credential)
        var dumped = ""
        dump(server, to: &dumped)
        let reply = Reply.Login(account: "alice", device: "d", activeCalls: [], iceServers: [server])
        for text in [server.description, String(reflecting: server), dumped, "\(reply)", String(reflecting: reply), "\([server])"] {
            #expect(!text.contains(Self.credential), "\(text)")
            #expect(text.contains("1700000000:alice"), "the username is shown: \(text)")
        }
        #expect(server.description == #"ICEServer(urls: ["turn:192.0.2.1:3478"], username: 1700000000:alice, credential redacted)"#)
        let credentials = TURNCredentials(username: "1700000000:alice", password: Self.credential)
        #expect(!"\(credentials)".contains(Self.credential))
        #expect(!String(reflecting: TURNClient.Configuration(server: try! SocketAddress(host: "192.0.2.1", port: 3478),
                                                             credentials: credentials)).contains(Self.credential))
    }

    @Test func aLoginReplyWithoutICEServersStillDecodes() throws {
        let older = #"{"account":"alice","device":"d","activeCalls":[7],"echoPort":8080}"#
        let reply = try JSONDecoder().decode(Reply.Login.self, from: Data(older.utf8))
        #expect(reply == Reply.Login(account: "alice", device: "d", activeCalls: [7], echoPort: 8_080, iceServers: []))

        let servers = [ICEServer(urls: ["stun:192.0.2.1:8080"]),
                       ICEServer(urls: ["turn:192.0.2.1:3478"], username: "1700000000:alice", credential: Self.credential)]
        let current = Reply.Login(account: "alice", device: "d", activeCalls: [], echoPort: 8_080, iceServers: servers)
        #expect(try JSONDecoder().decode(Reply.Login.self, from: JSONEncoder().encode(current)) == current)
    }

    @Test func gatheringTakesUDPServersAsEngineTypes() throws {
        let servers = [
            ICEServer(urls: ["stun:192.0.2.1:8080", "stun:[2001:db8::1]:8080"]),
            ICEServer(urls: ["turn:198.51.100.7:3478?transport=udp", "turn:198.51.100.7:3478?transport=tcp", "turns:198.51.100.7:5349"],
                      username: "1700000000:alice", credential: Self.credential),
        ]
        let gathering = try ICEGatheringServers(servers)
        #expect(gathering.stun == [try SocketAddress(host: "192.0.2.1", port: 8_080), try SocketAddress(host: "2001:db8::1", port: 8_080)])
        #expect(gathering.turn.count == 1)
        #expect(gathering.turn.first?.server == (try SocketAddress(host: "198.51.100.7", port: 3_478)))
        #expect(gathering.turn.first?.credentials == TURNCredentials(username: "1700000000:alice", password: Self.credential))
        #expect(gathering.skipped.map(\.description) == ["turn:198.51.100.7:3478?transport=tcp", "turns:198.51.100.7:5349"])
    }

    @Test(arguments: [
        (ICEServer(urls: ["turn:198.51.100.7:3478"]), ICEServerError.Code.missingCredentials, "needs a username and a credential"),
        (ICEServer(urls: ["turn:198.51.100.7:3478"], username: "1700000000:alice", credential: ""), .missingCredentials,
         "needs a username and a credential"),
        (ICEServer(urls: ["stun:192.0.2.1:8080", "stun:192.0.2.1:99999"]), .malformedURL, "port '99999'"),
        (ICEServer(urls: ["stun:no-such-host.invalid:3478"]), .unresolvable, "stun:no-such-host.invalid:3478"),
    ])
    func unusableEntriesAreTypedErrors(server: ICEServer, code: ICEServerError.Code, message: String) {
        let error = #expect(throws: ICEServerError.self) { try ICEGatheringServers([server]) }
        #expect(error?.code == code)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }
}
