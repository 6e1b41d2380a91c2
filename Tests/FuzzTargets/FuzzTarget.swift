/// One fuzz target: a function that takes arbitrary bytes, feeds them to one of the
/// engine's parsers (or a path built on them) and checks what it can about the result.
///
/// A target must never crash on any input. It traps (through `FuzzCheck`) only when a
/// property fails, such as a parsed value that serializes and parses back to something
/// else; libFuzzer and the corpus tests report that as a finding like any crash. It
/// returns whether the input got past the first check into the code behind it (a packet
/// that parsed, a script that delivered something), so the corpus tests can tell a corpus
/// that still reaches the code from one the parsers now refuse outright.
/// Targets run one input at a time on one thread and keep no state between inputs, so
/// every finding reproduces from its input alone.
public struct FuzzTarget: Sendable {
    /// The name `tools/fuzz` and the corpus directory use, such as `rtcp`.
    public let name: String
    /// One line saying what the target feeds and checks.
    public let summary: String
    /// Runs one input; returns whether it got past the first check.
    public let run: @Sendable (UnsafeRawBufferPointer) -> Bool

    /// Creates a target.
    ///
    /// - Parameters:
    ///   - name: The target's name: lowercase words joined by `-`.
    ///   - summary: One line for `tools/fuzz --list`.
    ///   - run: Runs one input; traps only on a failed property; returns whether the input
    ///     got past the first check.
    public init(name: String, summary: String, run: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        self.name = name
        self.summary = summary
        self.run = run
    }

    /// Runs one input held in an array.
    ///
    /// - Parameter input: The bytes.
    /// - Returns: Whether the input got past the first check.
    @discardableResult
    public func run(_ input: [UInt8]) -> Bool {
        input.withUnsafeBytes { run($0) }
    }
}

/// Every fuzz target, by name.
public enum FuzzTargets {
    /// All targets, in the order `tools/fuzz --list` prints them.
    public static let all: [FuzzTarget] = [
        RTPTargets.packet,
        RTPTargets.headerExtensions,
        RTCPTarget.target,
        VP8Target.target,
        OpusTarget.target,
        STUNTarget.target,
        TURNTarget.target,
        SDPTarget.target,
        WebRTCOfferTarget.target,
        ICECandidateTarget.target,
        SignalingTarget.target,
        NetDetectTarget.target,
        MediaFileTargets.y4m,
        MediaFileTargets.wav,
        SFUTarget.target,
    ]

    /// The target called `name`, or nil.
    ///
    /// - Parameter name: A target's name.
    /// - Returns: The target, or nil when there is none by that name.
    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// How targets report a failed property: a trap with the target's name and what failed,
/// which libFuzzer records as a crash with the input that caused it.
enum FuzzCheck {
    /// Traps when `condition` is false.
    ///
    /// - Parameters:
    ///   - condition: The property.
    ///   - message: What failed, evaluated only then.
    static func require(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz property failed: \(message())") }
    }
}
