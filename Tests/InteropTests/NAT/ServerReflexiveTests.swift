import Foundation
import MediaEngine
import MediaRouting
import Testing
import TestSupport

/// The forwarding server's media port tells a client behind a real NAT its server-reflexive
/// address: the router's WAN address and, through a port-preserving NAT, its own port.
@Suite(.serialized) struct ServerReflexiveTests {
    @Test func aClientBehindANATLearnsItsServerReflexiveAddressFromTheServer() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let router = try lab.addRouter(nat: .portPreserving)
            let host = try lab.addHost(behind: router)
            let serverHost = try lab.addPublicHost()
            let server = try lab.withNamespace(serverHost) {
                try ForwardingServer(bindTo: SocketAddress(host: serverHost.address, port: 0)) { _ in }
            }
            try server.start()
            defer { server.stop() }
            let address = server.localAddress

            let padding = STUNBinding.request().attributes
            let learned = try lab.withNamespace(host) {
                try STUNProbe.mappedAddress(of: address, localPort: 40_005, attributes: padding)
            }
            #expect(learned?.mapped == (try SocketAddress(host: router.wanAddress, port: 40_005)))

            // Unpadded, the same request gets nothing back, and the server counts it.
            let unpadded = try lab.withNamespace(host) { try STUNProbe.mappedAddress(of: address, localPort: 40_006, timeout: 0.4) }
            #expect(unpadded == nil)
            let counted = await eventually(timeout: .seconds(2)) {
                server.statistics.router.bindingsTooSmall >= 1 && server.statistics.router.bindingsAnswered >= 1
            }
            #expect(counted, "\(server.statistics.router)")
        }
    }
}
