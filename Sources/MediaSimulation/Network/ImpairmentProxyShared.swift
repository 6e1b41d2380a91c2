import MediaEngine
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the proxy thread and its owner share: the two models and every counter behind
/// one lock, and the stop flag.
///
/// The models live under the lock (rather than on the proxy thread) so `statistics`
/// reads exact counts while the proxy runs without copying the delay samples on every
/// packet; the thread holds the lock for one model decision at a time.
final class ImpairmentProxyShared: Sendable {
    enum Direction {
        case upstream
        case downstream
    }

    struct State {
        var upstream: ImpairmentModel
        var downstream: ImpairmentModel
        var statistics = UDPImpairmentProxy.Statistics()

        subscript(model direction: Direction) -> ImpairmentModel {
            get { direction == .upstream ? upstream : downstream }
            _modify {
                switch direction {
                case .upstream: yield &upstream
                case .downstream: yield &downstream
                }
            }
        }

        subscript(statistics direction: Direction) -> UDPImpairmentProxy.DirectionStatistics {
            get { direction == .upstream ? statistics.upstream : statistics.downstream }
            _modify {
                switch direction {
                case .upstream: yield &statistics.upstream
                case .downstream: yield &statistics.downstream
                }
            }
        }
    }

    private let state: Locked<State>
    private let stopFlag = Atomic<Bool>(false)

    init(upstream: ImpairmentModel, downstream: ImpairmentModel) {
        state = Locked(State(upstream: upstream, downstream: downstream))
    }

    var isStopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    func requestStop() { stopFlag.store(true, ordering: .releasing) }

    func withState<R>(_ body: (inout State) -> R) -> R {
        state.withLock { body(&$0) }
    }

    /// The counters with each model's statistics filled in.
    func snapshot() -> UDPImpairmentProxy.Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.upstream.impairment = state.upstream.statistics
            statistics.downstream.impairment = state.downstream.statistics
            return statistics
        }
    }
}

/// Wakes the proxy thread out of `poll` (for `stop()`): a datagram socket pair, since
/// this Glibc module offers neither `eventfd` nor `pipe2`.
final class ProxyWakeSignal: Sendable {
    let receiveDescriptor: Int32
    private let sendDescriptor: Int32

    init() throws(TransportError) {
        var descriptors: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0, &descriptors) == 0 else {
            throw TransportError.system("socketpair")
        }
        receiveDescriptor = descriptors[0]
        sendDescriptor = descriptors[1]
    }

    deinit {
        Glibc.close(receiveDescriptor)
        Glibc.close(sendDescriptor)
    }

    /// Makes the receiving end readable; never blocks (a full pair is already readable).
    func signal() {
        var byte: UInt8 = 1
        _ = Glibc.send(sendDescriptor, &byte, 1, Int32(MSG_DONTWAIT))
    }

    /// Reads every pending wake-up.
    func drain() {
        var byte: UInt8 = 0
        while Glibc.recv(receiveDescriptor, &byte, 1, Int32(MSG_DONTWAIT)) > 0 {}
    }
}
