/// A small, fast, seedable generator (SplitMix64): the same seed gives the same sequence
/// on every machine, so impairment runs and simulations repeat exactly.
public struct SeededRandom: RandomNumberGenerator, Sendable, Hashable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// True with probability `probability` (0...1).
    public mutating func chance(_ probability: Double) -> Bool { probability > 0 && unit() < probability }

    /// Standard normal (Box-Muller).
    public mutating func normal() -> Double {
        let u = max(unit(), .leastNonzeroMagnitude)
        let v = unit()
        return (-2 * _log(u)).squareRoot() * _cos(2 * .pi * v)
    }
}

// Foundation-free libm access keeps this file usable from pure code.
#if canImport(Glibc)
import Glibc
@inline(__always) private func _log(_ x: Double) -> Double { Glibc.log(x) }
@inline(__always) private func _cos(_ x: Double) -> Double { Glibc.cos(x) }
#elseif canImport(Darwin)
import Darwin
@inline(__always) private func _log(_ x: Double) -> Double { Darwin.log(x) }
@inline(__always) private func _cos(_ x: Double) -> Double { Darwin.cos(x) }
#endif
