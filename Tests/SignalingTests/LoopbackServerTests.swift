import Testing
@testable import Signaling

/// Which signaling URLs put the server, and so the peers it introduces with loopback
/// candidates, on this host.
@Suite struct LoopbackServerURLs {
    @Test(arguments: [
        ("ws://127.0.0.1:8080/", true),
        ("ws://127.5.6.7:8080/", true),
        ("ws://localhost:8080/", true),
        ("ws://LocalHost/", true),
        ("ws://[::1]:8080/", true),
        ("ws://192.0.2.1:8080/", false),
        ("ws://[2001:db8::1]:8080/", false),
        ("ws://example.com/", false),
        ("not a url", false),
        ("", false),
    ])
    func aServerReachedOnLoopbackIsOnThisHost(url: String, loopback: Bool) {
        #expect(NetCallManager.isLoopback(url: url) == loopback, "\(url)")
    }
}
