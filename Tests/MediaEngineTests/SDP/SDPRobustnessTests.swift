import Foundation
import Testing
@testable import MediaEngine

/// SplitMix64: a small seeded generator so the mutation run is the same every time.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Line endings, blanks, unknown content, limits, secrecy of descriptions, and a seeded
/// mutation run over every fixture.
@Suite struct SDPRobustness {
    @Test func lfCRLFAndMixedEndingsParseTheSame() throws {
        let crlf = try SessionDescription(parsing: SDPFixtures.ffmpegSRTP)
        let lf = try SessionDescription(parsing: SDPFixtures.ffmpegSRTP.replacingCRLF(with: "\n"))
        var mixedLines = SDPFixtures.ffmpegSRTP.replacingCRLF(with: "\n").split(separator: "\n").map(String.init)
        for index in stride(from: 0, to: mixedLines.count, by: 2) { mixedLines[index] += "\r" }
        let mixed = try SessionDescription(parsing: mixedLines.joined(separator: "\n"))  // and no final newline
        #expect(lf == crlf)
        #expect(mixed == crlf)
        #expect(lf.text == SDPFixtures.ffmpegSRTP)
    }

    @Test func trailingBlanksBlankLinesAndByteOrderMarkAreTolerated() throws {
        let clean = try SessionDescription(parsing: SDPFixtures.ffmpegSRTP)
        let lines = SDPFixtures.ffmpegSRTP.replacingCRLF(with: "\n").split(separator: "\n")
        let messy = "\u{FEFF}" + lines.map { $0 + " \t \r\n\r\n" }.joined() + "\r\n  \r\n"
        #expect(try SessionDescription(parsing: messy) == clean)
    }

    @Test func unknownAttributesAreKeptAndIgnored() throws {
        let text = SDPFixtures.ffmpegPlain + "a=rtpmapx:96 H264/90000\r\na=crypto-ish:1 x\r\na=fmtp-like\r\na=ssrc-group:FID 1 2\r\n"
        let sdp = try SessionDescription(parsing: text)
        let video = sdp.media[1]
        #expect(video.attributes.map(\.name) == ["rtpmap", "rtpmapx", "crypto-ish", "fmtp-like", "ssrc-group"])
        #expect(video.rtpMaps.count == 1 && video.crypto.isEmpty && video.formatParameters.isEmpty && video.ssrcAttributes.isEmpty)
        #expect(sdp.text == text)
    }

    @Test func unknownLineTypesAreKeptInTheirSection() throws {
        let text = SDPFixtures.ffmpegPlain.replacingOccurrences(of: "a=tool:", with: "w=session-level\r\na=tool:") + "q=media-level\r\n"
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.otherLines == [SessionDescription.Line(type: "w", value: "session-level")])
        #expect(sdp.media[1].otherLines == [SessionDescription.Line(type: "q", value: "media-level")])
        #expect(try SessionDescription(parsing: sdp.text) == sdp)
    }

    @Test func descriptionsNeverShowKeys() throws {
        let text = SDPFixtures.everyField + "k=clear:\(SDPFixtures.key)\na=key-mgmt:mikey \(SDPFixtures.key)\n"
        let sdp = try SessionDescription(parsing: text)
        let audio = sdp.media[0]
        let crypto = try #require(audio.crypto.first)
        let malformed = SessionDescription.Attribute(name: "crypto", value: "x inline:\(SDPFixtures.key)")
        var dumped = ""
        dump(sdp, to: &dumped)
        var dumpedCrypto = ""
        dump(crypto, to: &dumpedCrypto)
        let shown: [String] = [
            sdp.description, String(reflecting: sdp), "\(sdp)", dumped,
            audio.description, String(reflecting: audio), "\(audio)",
            crypto.description, String(reflecting: crypto), "\(crypto)", dumpedCrypto,
            crypto.keys[0].description, String(reflecting: crypto.keys[0]), "\(crypto.keys)",
            "\(audio.attributes)", String(reflecting: audio.attributes), malformed.description,
            "\(sdp.media[2].otherLines)", String(reflecting: sdp.media[2].otherLines),
        ]
        for (index, text) in shown.enumerated() {
            #expect(!text.contains(SDPFixtures.key.prefix(12)), "output \(index) shows the key")
            #expect(!text.contains("AAECAwQFBgcICQoL"), "output \(index) shows the GCM key")
        }
        // Redaction keeps what is not secret, so the output stays useful.
        #expect(crypto.description == "crypto:1 AES_CM_128_HMAC_SHA1_80 inline:<redacted 30 bytes>|2^31|1:4 KDR=1")
        #expect(sdp.description.contains("a=crypto:2 AEAD_AES_128_GCM inline:<redacted 28 bytes>\r\n"))
        // k= and unknown lines follow the section's a= lines.
        #expect(sdp.description.hasSuffix("a=key-mgmt:<redacted>\r\ny=another unknown line\r\nk=<redacted>\r\n"))
        #expect(malformed.description == "a=crypto:<redacted>")
        // The wire form is intact.
        #expect(sdp.text.contains("inline:\(SDPFixtures.key)|2^31|1:4"))
        #expect(sdp.text.contains("k=clear:\(SDPFixtures.key)"))
    }

    @Test func largestAcceptedInputParses() throws {
        // Just under both limits: 4,000 attribute lines in one section.
        var text = SDPFixtures.ffmpegPlain
        var id = 0
        while text.utf8.count < SessionDescription.maximumSize - 40, id < 4_000 {
            id += 1
            text += "a=ssrc:\(id) cname:source-\(id)\r\n"
        }
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.media[1].ssrcs.count == id)
        #expect(sdp.text == text)

        // And at the line limit: short lines up to line 4096.
        let lineCount = SDPFixtures.ffmpegPlain.utf8.filter { $0 == 0x0A }.count
        let many = SDPFixtures.ffmpegPlain + String(repeating: "a=x\r\n", count: SessionDescription.maximumLineCount - lineCount)
        #expect(try SessionDescription(parsing: many).media[1].attributes.count == SessionDescription.maximumLineCount - lineCount + 1)
    }

    /// SDP is split at Unicode scalars: a combining mark after a separator makes one Swift
    /// `Character` of the two (`" \u{0749}"`), and splitting at characters read a field
    /// that starts with a mark as part of the one before it, or hid a ':' or ';'.
    @Test func separatorsFollowedByCombiningMarksStillSeparate() throws {
        let text = [
            "v=0", "o=- 0 0 IN IP4 127.0.0.1", "s=x", "c=IN IP4 127.0.0.1", "t=0 0",
            "m=application 9\t\u{FFFD}\t\u{0749}", "a=x:\u{0749}", "a=fmtp:\u{0749} a=1;\u{0301}b=2", "a=ssrc:1 cname:\u{0301}",
        ].joined(separator: "\r\n")
        let sdp = try SessionDescription(parsing: text)
        let media = try #require(sdp.media.first)
        #expect(media.transportProtocol.rawValue == "\u{FFFD}")
        #expect(media.formats == ["\u{0749}"])
        #expect(media.attributes.first == SessionDescription.Attribute(name: "x", value: "\u{0749}"))
        let parameters = try MediaDescription.FormatParameters(attributeValue: "\u{0749} a=1;\u{0301}b=2", payloadTypes: false)
        #expect(parameters.parameters == ["a": "1", "\u{0301}b": "2"])
        #expect(media.ssrcAttributes.first?.value == "\u{0301}")
        // Written with single spaces, where " \u{0749}" is one Character, it reads the same.
        #expect(sdp.text.contains("m=application 9 \u{FFFD} \u{0749}"))
        #expect(try SessionDescription(parsing: sdp.text) == sdp)
    }

    @Test func everyPrefixOfEveryFixtureParsesOrFailsCleanly() {
        for fixture in SDPFixtures.allFFmpeg + [SDPFixtures.everyField] {
            let bytes = Array(fixture.utf8)
            for length in 0...bytes.count {
                expectCleanOutcome(String(decoding: bytes[..<length], as: UTF8.self))
            }
        }
    }

    @Test func seededMutationsNeverCrashAndRoundTripWhenAccepted() {
        var generator = SeededGenerator(state: 0x5DB0_2026)
        let interesting = Array("=:/ \r\n\t0159amcbtov-;|^".utf8) + [0x00, 0x7F, 0xC3, 0xFF]
        let extraLines = [
            "m=audio 1 RTP/AVP 0", "c=IN IP4 1.2.3.4/9/2", "a=crypto:7 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw",
            "a=extmap:14/recvonly urn:x a b", "a=sendonly", "a=rtcp:9 IN IP6 ::1", "t=1 2", "r=1 2 3", "k=prompt", "b=TIAS:1",
            "a=fmtp:0 x=1;;y", "a=ssrc:1 cname", "z=0 0", "a=rtcp-mux", "e=x", "s=again", "m=video 0 udp x y",
        ]
        var accepted = 0
        for fixture in SDPFixtures.allFFmpeg + [SDPFixtures.everyField] {
            for _ in 0..<300 {
                var lines = fixture.replacingCRLF(with: "\n").split(separator: "\n", omittingEmptySubsequences: false).map { Array($0.utf8) }
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let row = Int.random(in: 0..<lines.count, using: &generator)
                    switch Int.random(in: 0..<5, using: &generator) {
                    case 0 where !lines[row].isEmpty:
                        lines[row][Int.random(in: 0..<lines[row].count, using: &generator)] = interesting.randomElement(using: &generator)!
                    case 1:
                        lines.insert(Array(extraLines.randomElement(using: &generator)!.utf8), at: row)
                    case 2:
                        lines.remove(at: row)
                        if lines.isEmpty { lines = [[]] }
                    case 3:
                        lines.swapAt(row, Int.random(in: 0..<lines.count, using: &generator))
                    default:
                        lines[row] = Array(lines[row].prefix(Int.random(in: 0...lines[row].count, using: &generator)))
                    }
                }
                let text = String(decoding: Array(lines.joined(separator: [0x0D, 0x0A])), as: UTF8.self)
                if expectCleanOutcome(text) { accepted += 1 }
            }
        }
        print("SDP mutation run: \(accepted) of 1800 mutated descriptions parsed and round-tripped, the rest were refused with a line number")
        // The run must exercise both outcomes to mean anything.
        #expect(accepted > 100 && accepted < 1_700, "accepted \(accepted) of 1800")
    }

    /// Parses `text`; a failure must name a line (or be a whole-input problem) and not
    /// show the key; a success must survive text -> parse unchanged. Returns whether it parsed.
    @discardableResult
    private func expectCleanOutcome(_ text: String) -> Bool {
        do {
            let sdp = try SessionDescription(parsing: text)
            let again = try SessionDescription(parsing: sdp.text)
            #expect(again == sdp, "round trip changed: \(sdp.description)")
            #expect(again.text == sdp.text)
            return true
        } catch {
            #expect(error.line != nil || error.code == .tooLarge || error.message == "SDP is empty", "\(error)")
            #expect(!error.message.contains(SDPFixtures.key.prefix(12)))
            return false
        }
    }
}

extension String {
    fileprivate func replacingCRLF(with separator: String) -> String {
        replacingOccurrences(of: "\r\n", with: separator)
    }
}
