#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MediaEngine
import MediaRouting

/// Network namespaces for one test: a "public" network (a bridge on 203.0.113.0/24, a
/// documentation range), routers on it that NAT a LAN of their own (10.N.0.0/24) with
/// nftables, and hosts behind them or directly on the public network. Needs root, `ip`
/// (iproute2) and `nft` (nftables), which `tools/bootstrap` installs.
///
/// Every namespace is named `nlab-PID-ID-ROLE` (ID 4 random hex digits, so two labs in one
/// process never meet). Veths are created straight inside their namespaces, never in the
/// machine's own, and are named `nlID…` (at most 10 characters, under the kernel's 15).
/// Deleting a namespace deletes its ends of the veths, and with them the other ends, so
/// `close()` (and `deinit`) need only stop the lab's processes and delete its namespaces.
/// A new lab first deletes the namespaces of labs whose process has died (a crashed run).
///
/// Code runs inside a namespace either as a program (`run(in:_:_:)`, via `ip netns exec`)
/// or in this process (`withNamespace(_:_:)`): a socket belongs to the namespace of the
/// thread that created it and keeps it for its whole life, from whichever thread uses it.
///
/// Not thread-safe: one test owns a lab.
public final class NetworkLab {
    /// How a router maps its LAN's flows to its WAN address.
    public enum NAT: Sendable, Hashable {
        /// nftables `masquerade`: a flow keeps its source port when it is free (endpoint-
        /// independent mapping, as most home routers).
        case portPreserving
        /// nftables `masquerade random`: every flow (source and destination) gets a random
        /// port, so each destination sees another mapping: a symmetric NAT.
        case symmetric
        /// Plain routing: the far side sees the LAN address (and needs a route to it).
        case none
    }

    /// A namespace of the lab and its address on the network it hangs from.
    public struct Namespace: Sendable, Hashable, CustomStringConvertible {
        /// The name `ip netns` knows it by.
        public let name: String
        /// Its IPv4 address: on the public network for routers and public hosts, on the
        /// router's LAN for hosts behind one.
        public let address: String
        public var description: String { "\(name) (\(address))" }
    }

    /// A router: its namespace (`namespace.address` is the WAN address) and its LAN.
    public struct Router: Sendable, Hashable {
        public let namespace: Namespace
        public let nat: NAT
        /// N of the LAN 10.N.0.0/24.
        public let index: Int
        /// The router's address on its LAN, the hosts' default route.
        public var lanAddress: String { "10.\(index).0.1" }
        /// The address hosts behind it appear from (with `.none`, their own).
        public var wanAddress: String { namespace.address }
    }

    /// All namespaces of all labs start with this.
    public static let namePrefix = "nlab-"
    /// 203.0.113.1, the public bridge's own address (in `publicNamespace`).
    public static let publicGateway = "203.0.113.1"

    /// `nlab-PID-ID`: this lab's namespaces start with it.
    public let prefix: String
    /// `nlID`: this lab's interfaces start with it.
    public let interfacePrefix: String
    /// The namespace holding the public bridge (it answers on `publicGateway` too).
    public let publicNamespace: Namespace

    private var namespaces: [String] = []
    private var processes: [BackgroundProcess] = []
    private var nextPublicHost = 2
    private var routers = 0
    private var hostsBehind: [Int: Int] = [:]
    private var veths = 0
    private var closed = false
    private let directory: URL

    /// Creates the public network.
    /// - Throws: `ToolFailure` when not root, `ip` or `nft` is missing, or a command fails.
    public init() throws {
        guard getuid() == 0 else { throw ToolFailure("NetworkLab needs root (network namespaces)") }
        let id = String(UInt16.random(in: 0 ... .max), radix: 16).leftPadded(to: 4)
        prefix = "\(Self.namePrefix)\(getpid())-\(id)"
        interfacePrefix = "nl\(id)"
        directory = try temporaryDirectory("nlab")
        publicNamespace = Namespace(name: "\(prefix)-pub", address: Self.publicGateway)
        Self.removeLeftovers()
        do {
            try addNamespace(publicNamespace.name)
            let bridge = "\(interfacePrefix)br"
            try ip("-n", publicNamespace.name, "link", "add", "name", bridge, "type", "bridge")
            try ip("-n", publicNamespace.name, "addr", "add", "\(Self.publicGateway)/24", "dev", bridge)
            try ip("-n", publicNamespace.name, "link", "set", bridge, "up")
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Adds a router with a WAN veth on the public bridge and a LAN bridge 10.N.0.0/24,
    /// forwarding between them, NATing onto the WAN as `nat` says, and (with NAT) dropping
    /// what comes in on the WAN unasked, as a home router's firewall does.
    public func addRouter(nat: NAT) throws -> Router {
        routers += 1
        let index = routers
        let name = "\(prefix)-r\(index)"
        let wanAddress = takePublicAddress()
        try addNamespace(name)
        let wan = "\(interfacePrefix)wan", lan = "\(interfacePrefix)lan"
        try attach(name, interface: wan, address: "\(wanAddress)/24", toBridgeIn: publicNamespace.name, bridge: "\(interfacePrefix)br")
        try ip("-n", name, "route", "add", "default", "via", Self.publicGateway)
        try ip("-n", name, "link", "add", "name", lan, "type", "bridge")
        try ip("-n", name, "addr", "add", "10.\(index).0.1/24", "dev", lan)
        try ip("-n", name, "link", "set", lan, "up")
        try execute(in: name, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        if nat != .none {
            // The firewall every home router has: what comes in on the WAN unasked (no flow it
            // answers) is dropped, before conntrack confirms an entry for it. Without this, a
            // peer's check that arrives first leaves an unreplied entry whose tuple then
            // clashes with the local host's own flow to that peer, and masquerade moves the
            // host's flow to another port: hole punching (ICE) could never meet.
            let rules = """
                table ip nat {
                    chain postrouting {
                        type nat hook postrouting priority srcnat; policy accept;
                        oifname "\(wan)" \(nat == .symmetric ? "masquerade random" : "masquerade")
                    }
                }
                table ip firewall {
                    chain prerouting {
                        type filter hook prerouting priority -150; policy accept;
                        iifname "\(wan)" ct state new drop
                    }
                }

                """
            let file = directory.appendingPathComponent("\(name).nft")
            try rules.write(to: file, atomically: true, encoding: .utf8)
            try execute(in: name, "nft", "-f", file.path)
        }
        return Router(namespace: Namespace(name: name, address: wanAddress), nat: nat, index: index)
    }

    /// Adds a host on `router`'s LAN (10.N.0.2 and up) whose default route is the router.
    public func addHost(behind router: Router) throws -> Namespace {
        let number = hostsBehind[router.index, default: 1] + 1
        guard number < 255 else { throw ToolFailure("router \(router.index)'s LAN is full") }
        hostsBehind[router.index] = number
        let name = "\(router.namespace.name)-h\(number)"
        let address = "10.\(router.index).0.\(number)"
        try addNamespace(name)
        try attach(name, interface: "\(interfacePrefix)eth", address: "\(address)/24", toBridgeIn: router.namespace.name,
                   bridge: "\(interfacePrefix)lan")
        try ip("-n", name, "route", "add", "default", "via", router.lanAddress)
        return Namespace(name: name, address: address)
    }

    /// Adds a host directly on the public network (203.0.113.x), as a server with a public
    /// address. Like routers, its default route is the public gateway, which forwards
    /// nothing: a datagram to another LAN's private address leaves and is lost, as on the
    /// internet, instead of failing at once with "network unreachable" (coturn closes a
    /// whole allocation when a send from its relay socket fails).
    public func addPublicHost() throws -> Namespace {
        let address = takePublicAddress()
        let name = "\(prefix)-p\(address.split(separator: ".").last!)"
        try addNamespace(name)
        try attach(name, interface: "\(interfacePrefix)eth", address: "\(address)/24", toBridgeIn: publicNamespace.name,
                   bridge: "\(interfacePrefix)br")
        try ip("-n", name, "route", "add", "default", "via", Self.publicGateway)
        return Namespace(name: name, address: address)
    }

    /// Starts `program` (found on PATH, or an absolute path) inside `namespace`, through `ip netns exec`. The
    /// lab kills it on `close()` if it still runs.
    /// - Parameter input: Standard input is a pipe the test writes (`write`), as for secrets.
    public func run(in namespace: Namespace, _ program: String, _ arguments: [String], input: Bool = false) throws -> BackgroundProcess {
        let found = program.hasPrefix("/") ? URL(fileURLWithPath: program) : LivePort.executable(program)
        guard let executable = found else { throw ToolFailure("\(program) is not installed") }
        let process = try BackgroundProcess(executable: try Self.tool("ip"),
                                            arguments: ["netns", "exec", namespace.name, executable.path] + arguments, input: input)
        processes.append(process)
        return process
    }

    /// Runs `body` on a new thread that has first joined `namespace`'s network namespace
    /// (`setns(CLONE_NEWNET)`), and waits for it. Sockets `body` creates belong to that
    /// namespace for their whole life and keep working from any thread afterwards, so
    /// create a `UDPSocket` or a `ForwardingServer` (whose thread then runs in this
    /// process's own namespace, reading that socket) inside, and use them outside. The
    /// thread ends with `body`, so no other work ever runs in the namespace by accident.
    /// - Throws: what `body` throws, or `ToolFailure` when the namespace cannot be joined.
    public func withNamespace<T: Sendable>(_ namespace: Namespace, _ body: @escaping @Sendable () throws -> T) throws -> T {
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let path = "/var/run/netns/\(namespace.name)"
        let thread = Thread {
            let result: Result<T, any Error>
            do {
                try Self.enterNetworkNamespace(path)
                result = Result { try body() }
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.name = "netns \(namespace.name)"
        thread.start()
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    /// The lab's namespaces that exist now (for tests of the cleanup).
    public var existingNamespaces: [String] { Self.listNamespaces().filter { $0.hasPrefix(prefix) } }

    /// Stops the processes `run` started and deletes every namespace of the lab (and with
    /// them every veth and bridge). Idempotent.
    public func close() {
        guard !closed else { return }
        closed = true
        for process in processes where process.isRunning {
            process.terminate()
            _ = try? process.wait(timeout: 5)
        }
        processes.removeAll()
        for name in namespaces.reversed() { Self.deleteNamespace(name) }
        namespaces.removeAll()
    }

    // MARK: Plumbing

    private func addNamespace(_ name: String) throws {
        try ip("netns", "add", name)
        namespaces.append(name)
        try ip("-n", name, "link", "set", "lo", "up")
    }

    /// Joins `namespace` to `bridge` in `bridgeNamespace` with a veth whose inner end is
    /// `interface` with `address`.
    private func attach(_ namespace: String, interface: String, address: String, toBridgeIn bridgeNamespace: String,
                        bridge: String) throws {
        veths += 1
        let outer = "\(interfacePrefix)v\(veths)"
        try ip("-n", namespace, "link", "add", "name", interface, "type", "veth", "peer", "name", outer, "netns", bridgeNamespace)
        try ip("-n", bridgeNamespace, "link", "set", outer, "master", bridge, "up")
        try ip("-n", namespace, "addr", "add", address, "dev", interface)
        try ip("-n", namespace, "link", "set", interface, "up")
    }

    private func takePublicAddress() -> String {
        defer { nextPublicHost += 1 }
        return "203.0.113.\(nextPublicHost)"
    }

    private func ip(_ arguments: String...) throws {
        try Self.command("ip", arguments)
    }

    private func execute(in namespace: String, _ program: String, _ arguments: String...) throws {
        try Self.command("ip", ["netns", "exec", namespace, try Self.tool(program).path] + arguments)
    }

    @discardableResult
    private static func command(_ program: String, _ arguments: [String]) throws -> String {
        let run = try BackgroundProcess(executable: try tool(program), arguments: arguments).wait(timeout: 10)
        guard run.status == 0 else {
            throw ToolFailure("\(program) \(arguments.joined(separator: " ")) failed (\(run.status)): \(run.stderr)")
        }
        return run.stdout
    }

    private static func tool(_ name: String) throws -> URL {
        guard let url = LivePort.executable(name) else {
            throw ToolFailure("\(name) is not installed (tools/bootstrap installs iproute2 and nftables)")
        }
        return url
    }

    private static func listNamespaces() -> [String] {
        // `ip netns list` prints "NAME" or "NAME (id: N)".
        ((try? command("ip", ["netns", "list"])) ?? "").split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// Kills what still runs in `name` (only the lab's own programs can) and deletes it.
    private static func deleteNamespace(_ name: String) {
        let pids = ((try? command("ip", ["netns", "pids", name])) ?? "").split(separator: "\n").compactMap { pid_t($0) }
        for pid in pids { kill(pid, SIGKILL) }
        _ = try? command("ip", ["netns", "del", name])
    }

    /// Deletes namespaces of labs whose process no longer exists.
    private static func removeLeftovers() {
        for name in listNamespaces() where name.hasPrefix(namePrefix) {
            let fields = name.dropFirst(namePrefix.count).split(separator: "-")
            guard let pid = fields.first.flatMap({ pid_t($0) }), kill(pid, 0) != 0, errno == ESRCH else { continue }
            deleteNamespace(name)
        }
    }

    private typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
    /// glibc's setns(2): Swift's Glibc module leaves it out (it is behind _GNU_SOURCE).
    private static let setNamespace: SetNamespace? = dlsym(nil, "setns").map { unsafeBitCast($0, to: SetNamespace.self) }
    private static let cloneNewNet: Int32 = 0x4000_0000

    private static func enterNetworkNamespace(_ path: String) throws {
        guard let setNamespace else { throw ToolFailure("setns is not in this libc") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ToolFailure("open \(path): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(descriptor) }
        guard setNamespace(descriptor, cloneNewNet) == 0 else {
            throw ToolFailure("setns \(path): \(String(cString: strerror(errno)))")
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
