#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// 64-bit NTP timestamps (RFC 5905: seconds since 1900 in the high word, fraction in
/// the low word), as RTCP sender reports carry them.
public enum NTPTime {
    /// Seconds between the NTP era (1900) and the Unix epoch (1970).
    static let unixOffset: UInt64 = 2_208_988_800

    /// The wall clock now.
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return from(seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
    }

    /// NTP form of a Unix time.
    public static func from(seconds: Int64, nanoseconds: Int64) -> UInt64 {
        let fraction = (UInt64(nanoseconds) << 32) / 1_000_000_000
        return (UInt64(seconds) &+ unixOffset) << 32 | fraction
    }

    /// The middle 32 bits, the "compact" form used in LSR and DLSR.
    public static func compact(_ timestamp: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: timestamp >> 16)
    }
}
