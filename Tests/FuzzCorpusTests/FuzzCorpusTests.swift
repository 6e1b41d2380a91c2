import Foundation
import FuzzTargets
import MediaEngine
import Testing

/// Every fuzz target's corpus (`Fuzz/Corpus/TARGET/`) and every finding's input
/// (`Fuzz/Regressions/TARGET/`) run through the target in the ordinary test suite, without
/// libFuzzer or sanitizers: a failed property traps and fails the run, so CI checks every
/// stored input on every change. Debug builds also bounds-check every raw buffer read.
@Suite struct FuzzCorpusTests {
    /// `Fuzz/` in this checkout.
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    /// The files of `Fuzz/KIND/TARGET`, sorted; none when the directory is missing.
    static func inputs(_ kind: String, _ target: String) throws -> [URL] {
        let directory = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// Runs the input stored in `Fuzz/Regressions/TARGET/NAME` through its target.
    static func replay(_ target: String, _ name: String) throws -> Bool {
        let fuzzTarget = try #require(FuzzTargets.named(target))
        let input = try Data(contentsOf: fuzzDirectory.appendingPathComponent("Regressions/\(target)/\(name)"))
        return fuzzTarget.run(Array(input))
    }

    @Test func everyTargetHasACorpus() throws {
        #expect(FuzzTargets.all.count == Set(FuzzTargets.all.map(\.name)).count, "two targets share a name")
        for target in FuzzTargets.all {
            #expect(try Self.inputs("Corpus", target.name).count >= 3, "\(target.name) has under 3 seeds")
        }
        let directories = try FileManager.default.contentsOfDirectory(atPath: Self.fuzzDirectory.appendingPathComponent("Corpus").path)
            .filter { !$0.hasPrefix(".") && $0 != "README.md" }
        #expect(Set(directories) == Set(FuzzTargets.all.map(\.name)), "a corpus directory names no target")
    }

    /// Each seed runs without a property failing, and most get past the first parser: a
    /// corpus the parsers refuse outright would fuzz nothing but the refusals.
    @Test(arguments: FuzzTargets.all.map(\.name))
    func corpusRunsThroughItsTarget(_ name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let files = try Self.inputs("Corpus", name)
        var accepted = 0
        for file in files where target.run(Array(try Data(contentsOf: file))) { accepted += 1 }
        #expect(accepted * 2 >= files.count, "\(name): only \(accepted) of \(files.count) seeds get past the first check")
    }

    /// Every finding's input still runs cleanly (each also has a test of its own below).
    @Test(arguments: FuzzTargets.all.map(\.name))
    func regressionsRunThroughTheirTarget(_ name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        for file in try Self.inputs("Regressions", name) {
            target.run(Array(try Data(contentsOf: file)))
        }
    }

    // MARK: Findings, each named after what it found

    /// `ice-candidate`: a relayed candidate whose hidden base was spelled `raddr 0::` got
    /// the related address [::]:0, which the attribute writes as `raddr ::`, and that reads
    /// back as no related address. Every spelling of the unspecified address is now none.
    @Test func iceCandidateUnspecifiedRelatedAddressSpelledDifferently() throws {
        let input = try String(contentsOf: Self.fuzzDirectory.appendingPathComponent("Regressions/ice-candidate/unspecified-related-address-spelled-differently"), encoding: .utf8)
        #expect(try ICECandidate(attribute: input).relatedAddress == nil)
        #expect(try Self.replay("ice-candidate", "unspecified-related-address-spelled-differently"))
    }

    /// `sfu`: a publisher's leg closed, then a second passed: the subscribers' next bandwidth
    /// allocation read the closed leg through a target it left behind and trapped
    /// (`ForwardingRouterVideo.aPublisherLeavingAVideoMeetingLeavesTheOthersRunning` shows
    /// it in a meeting).
    @Test func sfuPublisherLeavesThenAllocation() throws {
        let input = [UInt8](try Data(contentsOf: Self.fuzzDirectory.appendingPathComponent("Regressions/sfu/publisher-leaves-then-allocation")))
        // Leg 1 leaves (control 0xF8 from the stranger's address), then 1,020 ms pass.
        #expect(input == [0x7A, 0xF8, 0x3F, 0xFF])
        #expect(try Self.replay("sfu", "publisher-leaves-then-allocation") == false, "nothing is forwarded")
    }

    /// `webrtc-offer`: an offer without a BUNDLE group whose first section's mid held
    /// spaces was answered with `a=group:BUNDLE <that mid>`, which reads back as several
    /// mids. A mid must be a token of at most 16 characters, or its section is refused.
    @Test func webrtcOfferMIDWithSpaces() throws {
        let bytes = try Data(contentsOf: Self.fuzzDirectory.appendingPathComponent("Regressions/webrtc-offer/mid-with-spaces"))
        let text = String(decoding: bytes, as: UTF8.self)  // as the target reads it: not all of it is UTF-8
        let offer = try WebRTCDescription(parsing: text)
        #expect(offer.sections.first?.mid?.contains(" ") == true)
        #expect(try Self.replay("webrtc-offer", "mid-with-spaces"))
    }

    /// `sfu`: any input (this one is a single byte) left every leg of the dropped router
    /// allocated, which LeakSanitizer reported (`ForwardingRouterLifetime` checks it
    /// directly).
    @Test func sfuRouterDroppedWithLegsOpen() throws {
        #expect(try Self.replay("sfu", "router-dropped-with-legs-open") == false)
    }

    /// `turn`: a Data indication from 192.0.2.10:4232 while the script had asked for a
    /// permission to 192.0.2.10:5000. Permissions are per IP, ports ignored (RFC 8656
    /// section 9), so the client was right to deliver it; the target's property expected
    /// the exact address and now compares IPs.
    @Test func turnDataFromAnotherPortOfAPermittedPeer() throws {
        #expect(try Self.replay("turn", "data-from-another-port-of-a-permitted-peer"))
    }

    /// `sdp`: an m= line whose last fields were separated by tabs, the last one a
    /// combining mark (U+0749), was written back with spaces, and `" \u{0749}"` is one
    /// Swift `Character`: split at characters, the written line had a field less. SDP is
    /// now split at Unicode scalars (`SDPRobustness.separatorsFollowedByCombiningMarksStillSeparate`).
    @Test func sdpCombiningMarkAfterABlank() throws {
        let input = [UInt8](try Data(contentsOf: Self.fuzzDirectory.appendingPathComponent("Regressions/sdp/combining-mark-after-a-blank")))
        let description = try SessionDescription(parsing: String(decoding: input, as: UTF8.self))
        #expect(description.media.first?.formats == ["\u{0749}"])
        #expect(try SessionDescription(parsing: description.text) == description)
        #expect(try Self.replay("sdp", "combining-mark-after-a-blank"), "the description parses")
    }

    /// `vp8`: an X byte that flags no field is read (2 bytes) but not written back (1 byte).
    /// The target's round-trip property assumed equal lengths; the parser is right (RFC 7741
    /// allows it), so the property now allows the one byte.
    @Test func vp8ExtensionByteFlaggingNoField() throws {
        let input = [UInt8](try Data(contentsOf: Self.fuzzDirectory.appendingPathComponent("Regressions/vp8/extension-byte-flagging-no-field")))
        let (descriptor, length) = try input.withUnsafeBytes { try VP8PayloadDescriptor.parse($0) }
        #expect(length == 2)
        #expect(descriptor == VP8PayloadDescriptor(startOfPartition: true, partitionIndex: 4))
        #expect(descriptor.size == 1)
        #expect(try Self.replay("vp8", "extension-byte-flagging-no-field"), "the descriptor parses")
    }
}
