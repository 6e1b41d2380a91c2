#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// GCC's loss-based controller (draft-ietf-rmcat-gcc-02 section 6), acting on loss
/// windows: packets reported lost or received are gathered until a window holds at least
/// 20 packets and spans at least 500 ms (an RTCP receiver report's fraction lost is a
/// window of its own). When a window closes with loss fraction p:
/// - p > 10 %: rate = target × (1 − 0.5 p), at most once per 300 ms + rtt (else no rise);
/// - p < 2 %: rate = target × 1.05^t, t the window's length in seconds (capped at 1 s),
///   so 5 % per second;
/// - otherwise hold at the target.
/// "Target" is the combined target before the update, so this rate never runs away
/// above a target the delay-based controller holds down. Each window's p also feeds an
/// EWMA (weight 0.3) that callers use for Opus's expected loss.
struct LossBasedController: Sendable {
    static let highLoss = 0.10
    static let lowLoss = 0.02
    static let increasePerSecond = 1.05
    static let decreaseInterval = Duration.milliseconds(300)
    static let minimumPackets = 20
    static let minimumWindow = Duration.milliseconds(500)
    static let smoothing = 0.3

    private(set) var bitrate: Double
    /// The last closed window's loss fraction.
    private(set) var lastLossFraction: Double?
    /// EWMA of the windows' loss fractions.
    private(set) var smoothedLossFraction = 0.0
    private var windowLost = 0
    private var windowExpected = 0
    private var windowStart: Duration?
    private var lastDecrease: Duration?

    init(start: Double) { bitrate = start }

    /// Adds packets from one feedback; a packet first counted lost and now received comes
    /// as `lost: -1, received: 1`.
    ///
    /// - Returns: The loss fraction and length of the window this closed, if it did.
    mutating func record(lost: Int, received: Int, now: Duration) -> (fraction: Double, length: Duration)? {
        let start = windowStart ?? now
        windowStart = start
        windowLost = max(0, windowLost + lost)
        windowExpected = max(windowLost, windowExpected + lost + received)
        guard windowExpected >= Self.minimumPackets, now - start >= Self.minimumWindow else { return nil }
        let fraction = Double(windowLost) / Double(windowExpected)
        windowLost = 0
        windowExpected = 0
        windowStart = now
        return (fraction, now - start)
    }

    /// Applies one loss window's fraction.
    ///
    /// - Parameters:
    ///   - fraction: Lost share of the window's packets, 0...1.
    ///   - length: The window's length (for the 5 %/s increase).
    ///   - target: The combined target before this update.
    ///   - roundTripTime: The current round-trip estimate.
    ///   - now: The current time.
    mutating func update(fraction: Double, length: Duration, target: Double, roundTripTime: Duration, now: Duration) {
        let fraction = min(max(fraction, 0), 1)
        lastLossFraction = fraction
        smoothedLossFraction = (1 - Self.smoothing) * smoothedLossFraction + Self.smoothing * fraction
        if fraction > Self.highLoss {
            if lastDecrease.map({ now - $0 >= Self.decreaseInterval + roundTripTime }) ?? true {
                bitrate = target * (1 - 0.5 * fraction)
                lastDecrease = now
            } else {
                bitrate = min(bitrate, target)
            }
        } else if fraction < Self.lowLoss {
            bitrate = target * pow(Self.increasePerSecond, min(max(length.seconds, 0), 1))
        } else {
            bitrate = target
        }
    }

    /// A probe's result: the rate rises to `bitrate` (never falls).
    mutating func probed(_ bitrate: Double) { self.bitrate = max(self.bitrate, bitrate) }

    /// Bounds the rate after the caller's limits changed.
    mutating func clamp(minimum: Double, maximum: Double) {
        bitrate = min(max(bitrate, minimum), maximum)
    }
}
