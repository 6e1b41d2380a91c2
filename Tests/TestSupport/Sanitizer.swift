import Foundation

/// The sanitizer `tools/sanitize` built the package's modules with: it exports
/// MEDIAENGINE_SANITIZE, which `Package.swift` reads, to the tests it runs.
public enum Sanitizer {
    /// "address", "thread", or nil for a plain build.
    public static let active = ProcessInfo.processInfo.environment["MEDIAENGINE_SANITIZE"]

    /// Whether a process's resident memory tells anything about the engine. Under
    /// AddressSanitizer it does not: freed memory waits in a quarantine of up to 256 MB (so
    /// a use after free is caught), every allocation carries redzones, and shadow memory
    /// covers all of it; a meeting's server "grew" by 250 MB there while holding steady.
    public static var residentMemoryIsMeaningful: Bool { active != "address" }

    /// Whether the address of a local tells how deep the stack is. Under AddressSanitizer
    /// it does not: locals whose address is taken live in "fake stack" frames on the heap
    /// (its check for use after return), so two nested calls can see any two addresses.
    public static var stackAddressesAreMeaningful: Bool { active != "address" }

    /// Whether bounds at the scale of one audio frame (20 ms) hold. Under a sanitizer every
    /// memory access is checked (ThreadSanitizer runs 5 to 15 times slower), so a test that
    /// runs there for its races loosens them: a 20 MB transfer beside a meeting concealed one
    /// frame of 400,000 samples under ThreadSanitizer, none in the plain build.
    public static var frameBoundsHold: Bool { active == nil }
}
