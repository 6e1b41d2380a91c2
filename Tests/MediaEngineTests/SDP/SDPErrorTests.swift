import Foundation
import Testing
@testable import MediaEngine

/// One malformed description and the exact error it must give.
struct SDPErrorRow: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let code: SDPError.Code
    let line: Int?
    let message: String
    var testDescription: String { name }

    /// The base document with `replace` applied: line number -> new line (nil deletes),
    /// `insert` lines added after the given line. Lines are numbered as in `base`.
    static let base = [
        "v=0",  // 1
        "o=- 0 0 IN IP4 127.0.0.1",  // 2
        "s=No Name",  // 3
        "t=0 0",  // 4
        "m=audio 5004 RTP/AVP 97",  // 5
        "c=IN IP4 127.0.0.1",  // 6
        "a=rtpmap:97 opus/48000/2",  // 7
        "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(SDPFixtures.key)",  // 8
    ]

    init(_ name: String, replace: [Int: String?] = [:], insert: [Int: String] = [:], _ code: SDPError.Code, line: Int?, _ message: String) {
        var lines: [String] = []
        for (index, original) in Self.base.enumerated() {
            let number = index + 1
            if let replacement = replace[number] {
                if let replacement { lines.append(replacement) }
            } else {
                lines.append(original)
            }
            if let extra = insert[number] { lines.append(extra) }
        }
        self.init(name, text: lines.map { $0 + "\r\n" }.joined(), code, line: line, message)
    }

    init(_ name: String, text: String, _ code: SDPError.Code, line: Int?, _ message: String) {
        self.name = name
        self.text = text
        self.code = code
        self.line = line
        self.message = line.map { "line \($0): \(message)" } ?? message
    }
}

/// A base64 key of `count` bytes.
private func key(bytes count: Int) -> String { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }).base64EncodedString() }
private let cryptoPrefix = "a=crypto:1 AES_CM_128_HMAC_SHA1_80 "
private let key = SDPFixtures.key

@Suite struct SDPErrors {
    static let rows: [SDPErrorRow] = [
        // Structure.
        .init("empty", text: "", .missingField, line: nil, "SDP is empty"),
        .init("blank lines only", text: "\r\n \r\n", .missingField, line: nil, "SDP is empty"),
        .init("no v= first", replace: [1: "o=- 0 0 IN IP4 127.0.0.1"], .missingField, line: 1, "SDP must start with v=0"),
        .init("version 1", replace: [1: "v=1"], .unsupported, line: 1, "only SDP version 0 is supported"),
        .init("second v=", insert: [1: "v=0"], .malformedLine, line: 2, "second v= line"),
        .init("not a type line", insert: [2: "hello world"], .malformedLine, line: 3, "expected <letter>=<value>, a lowercase type letter and '='"),
        .init("uppercase type", insert: [2: "A=foo"], .malformedLine, line: 3, "expected <letter>=<value>, a lowercase type letter and '='"),
        .init("type letter alone", insert: [2: "a"], .malformedLine, line: 3, "expected <letter>=<value>, a lowercase type letter and '='"),
        .init("leading blank", insert: [2: " s=x"], .malformedLine, line: 3, "expected <letter>=<value>, a lowercase type letter and '='"),
        .init("control character", replace: [3: "s=No\u{1}Name"], .malformedLine, line: 3, "contains control character 1"),
        .init("lone CR inside a line", replace: [3: "s=No\rName"], .malformedLine, line: 3, "contains control character 13"),
        .init("no o=", replace: [2: nil], .missingField, line: 4, "no o= line in the session section"),
        .init("no s=", replace: [3: nil], .missingField, line: 4, "no s= line in the session section"),
        .init("no t=", replace: [4: nil], .missingField, line: 4, "no t= line in the session section"),
        .init("no t= and no media", text: "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\n", .missingField, line: 3, "no t= line in the session section"),
        .init("second o=", insert: [2: "o=- 1 1 IN IP4 127.0.0.1"], .malformedLine, line: 3, "second o= line"),
        .init("second s=", insert: [3: "s=again"], .malformedLine, line: 4, "second s= line"),
        .init("o= in a media section", insert: [6: "o=- 0 0 IN IP4 127.0.0.1"], .malformedLine, line: 7, "o= is not allowed inside a media section (m= on line 5)"),
        .init("t= in a media section", insert: [7: "t=0 0"], .malformedLine, line: 8, "t= is not allowed inside a media section (m= on line 5)"),
        .init("r= before t=", insert: [3: "r=7d 1h 0 25h"], .malformedLine, line: 4, "r= line before any t= line"),

        // o=, c=, b=, t=.
        .init("o= with 5 fields", replace: [2: "o=- 0 0 IN IP4"], .malformedLine, line: 2, "o= line needs 6 fields, found 5"),
        .init("o= id not a number", replace: [2: "o=- abc 0 IN IP4 127.0.0.1"], .malformedLine, line: 2, "o= session id is not a decimal number"),
        .init("o= version overflows", replace: [2: "o=- 0 99999999999999999999 IN IP4 127.0.0.1"], .malformedLine, line: 2, "o= session version is not a decimal number"),
        .init("c= with 2 fields", replace: [6: "c=IN IP4"], .malformedLine, line: 6, "c= needs 3 fields (nettype addrtype address), found 2"),
        .init("c= TTL 300", replace: [6: "c=IN IP4 239.0.0.1/300"], .malformedLine, line: 6, "c= TTL is not a number in 0...255"),
        .init("c= IPv4 with 3 slashes", replace: [6: "c=IN IP4 239.0.0.1/3/2/1"], .malformedLine, line: 6, "c= IP4 address has the wrong form (address[/ttl][/count])"),
        .init("c= count 0", replace: [6: "c=IN IP6 ff15::1/0"], .malformedLine, line: 6, "c= address count is not a number in 1...65535"),
        .init("second c= in a section", insert: [6: "c=IN IP4 10.0.0.1"], .unsupported, line: 7, "several c= lines in one media section (layered multicast) are not supported"),
        .init("second session c=", insert: [3: "c=IN IP4 10.0.0.1\r\nc=IN IP4 10.0.0.2"], .malformedLine, line: 5, "second c= line in the session section"),
        .init("b= not a number", insert: [6: "b=AS:lots"], .malformedLine, line: 7, "b= bandwidth is not a decimal number"),
        .init("b= without type", insert: [6: "b=64"], .malformedLine, line: 7, "b= line needs <type>:<number>"),
        .init("t= not numbers", replace: [4: "t=now later"], .malformedLine, line: 4, "t= line needs two decimal times"),

        // m=.
        .init("m= with 3 fields", replace: [5: "m=audio 5004 RTP/AVP"], .malformedLine, line: 5, "m= line needs at least 4 fields (media port proto format), found 3"),
        .init("port 70000", replace: [5: "m=audio 70000 RTP/AVP 97"], .malformedLine, line: 5, "m= port is not a number in 0...65535"),
        .init("port negative", replace: [5: "m=audio -1 RTP/AVP 97"], .malformedLine, line: 5, "m= port is not a number in 0...65535"),
        .init("port count 0", replace: [5: "m=audio 5004/0 RTP/AVP 97"], .malformedLine, line: 5, "m= port count is not a number in 1...65535"),
        .init("payload type not a number", replace: [5: "m=audio 5004 RTP/AVP 97 opus"], .malformedLine, line: 5, "m= format 2 is not an RTP payload type (0...127)"),
        .init("payload type 128", replace: [5: "m=audio 5004 RTP/SAVP 128"], .malformedLine, line: 5, "m= format 1 is not an RTP payload type (0...127)"),
        .init("no c= anywhere", replace: [6: nil], .missingField, line: 5, "m= section has no c= line and the session has none"),
        .init("no c= in the second section", insert: [8: "m=video 5006 RTP/AVP 96"], .missingField, line: 9, "m= section has no c= line and the session has none"),

        // Attributes.
        .init("attribute without name", insert: [7: "a=:value"], .malformedLine, line: 8, "a= line needs an attribute name without blanks before ':'"),
        .init("rtpmap flag", replace: [7: "a=rtpmap"], .badAttribute, line: 7, "a=rtpmap needs a value"),
        .init("rtpmap payload type 200", replace: [7: "a=rtpmap:200 opus/48000/2"], .badAttribute, line: 7, "rtpmap payload type is not a number in 0...127"),
        .init("rtpmap without clock", replace: [7: "a=rtpmap:97 opus"], .badAttribute, line: 7, "rtpmap for payload type 97 needs <encoding>/<clock rate>[/<channels>]"),
        .init("rtpmap clock 0", replace: [7: "a=rtpmap:97 opus/0/2"], .badAttribute, line: 7, "rtpmap for payload type 97 has a clock rate that is not a positive number"),
        .init("rtpmap channels 0", replace: [7: "a=rtpmap:97 opus/48000/0"], .badAttribute, line: 7, "rtpmap for payload type 97 has a channel count that is not a number in 1...255"),
        .init("rtpmap extra field", replace: [7: "a=rtpmap:97 opus/48000/2 x"], .badAttribute, line: 7, "rtpmap needs <payload type> <encoding>/<clock rate>"),
        .init("second rtpmap", insert: [7: "a=rtpmap:97 PCMU/8000"], .badAttribute, line: 8, "second rtpmap for payload type 97"),
        .init("fmtp bad format", insert: [7: "a=fmtp:opus minptime=10"], .badAttribute, line: 8, "fmtp format is not a payload type in 0...127"),
        .init("second fmtp", insert: [7: "a=fmtp:97 minptime=10\r\na=fmtp:97 stereo=1"], .badAttribute, line: 9, "second fmtp for the same format"),
        .init("extmap id 0", insert: [7: "a=extmap:0 urn:x"], .badAttribute, line: 8, "extmap id is not a number in 1...255"),
        .init("extmap id 256", insert: [7: "a=extmap:256 urn:x"], .badAttribute, line: 8, "extmap id is not a number in 1...255"),
        .init("extmap direction", insert: [7: "a=extmap:1/sideways urn:x"], .badAttribute, line: 8, "extmap 1 direction is not sendrecv, sendonly, recvonly or inactive"),
        .init("extmap no URI", insert: [7: "a=extmap:1"], .badAttribute, line: 8, "extmap 1 has no URI"),
        .init("extmap id reused", insert: [7: "a=extmap:1 urn:x\r\na=extmap:1 urn:y"], .badAttribute, line: 9, "extmap id 1 is used twice"),
        .init("ssrc not a number", insert: [7: "a=ssrc:4294967296 cname:x"], .badAttribute, line: 8, "ssrc is not a number in 0...4294967295"),
        .init("ssrc without attribute", insert: [7: "a=ssrc:5"], .badAttribute, line: 8, "ssrc 5 needs a source attribute such as cname:<name>"),
        .init("rtcp port", insert: [7: "a=rtcp:port"], .badAttribute, line: 8, "rtcp port is not a number in 0...65535"),
        .init("rtcp address", insert: [7: "a=rtcp:5005 IN IP4"], .badAttribute, line: 8, "rtcp address needs 3 fields (nettype addrtype address), found 2"),
        .init("second rtcp", insert: [7: "a=rtcp:5005\r\na=rtcp:5007"], .badAttribute, line: 9, "second a=rtcp line"),
        .init("two directions", insert: [7: "a=sendonly\r\na=recvonly"], .badAttribute, line: 9, "a=recvonly after a=sendonly on line 8; a section has one direction"),
        .init("two session directions", insert: [4: "a=inactive\r\na=sendrecv"], .badAttribute, line: 6, "a=sendrecv after a=inactive on line 5; a section has one direction"),
        .init("direction with value", insert: [7: "a=sendonly:yes"], .badAttribute, line: 8, "a=sendonly takes no value"),
        .init("empty mid", insert: [7: "a=mid:"], .badAttribute, line: 8, "a=mid needs a value"),
        .init("second mid", insert: [7: "a=mid:a\r\na=mid:b"], .badAttribute, line: 9, "second a=mid line"),

        // Crypto: every row carries the key somewhere; none may echo it.
        .init("crypto flag", replace: [8: "a=crypto"], .badCrypto, line: 8, "a=crypto needs a value"),
        .init("crypto 29-byte key", replace: [8: cryptoPrefix + "inline:" + key(bytes: 29)], .badCrypto, line: 8, "AES_CM_128_HMAC_SHA1_80 key and salt are 29 bytes, the suite needs 30"),
        .init("crypto 16-byte key", replace: [8: "a=crypto:1 AES_CM_128_HMAC_SHA1_32 inline:" + key(bytes: 16)], .badCrypto, line: 8, "AES_CM_128_HMAC_SHA1_32 key and salt are 16 bytes, the suite needs 30"),
        .init("GCM with a 30-byte key", replace: [8: "a=crypto:1 AEAD_AES_128_GCM inline:\(key)"], .badCrypto, line: 8, "AEAD_AES_128_GCM key and salt are 30 bytes, the suite needs 28"),
        .init("key not base64", replace: [8: cryptoPrefix + "inline:\(key)*"], .badCrypto, line: 8, "crypto key is not valid base64"),
        .init("key with one stray character", replace: [8: cryptoPrefix + "inline:\(key)A"], .badCrypto, line: 8, "crypto key is not valid base64"),
        .init("empty key", replace: [8: cryptoPrefix + "inline:"], .badCrypto, line: 8, "crypto key is not valid base64"),
        .init("no inline:", replace: [8: cryptoPrefix + key], .badCrypto, line: 8, "crypto key parameter must start with inline:"),
        .init("misspelt inline:", replace: [8: cryptoPrefix + "inlin:\(key)"], .badCrypto, line: 8, "crypto key parameter must start with inline:"),
        .init("crypto 2 fields", replace: [8: "a=crypto:1 inline:\(key)"], .badCrypto, line: 8, "crypto line needs <tag> <suite> inline:<key>, found 2 fields"),
        .init("crypto tag 0", replace: [8: "a=crypto:0 AES_CM_128_HMAC_SHA1_80 inline:\(key)"], .badCrypto, line: 8, "crypto tag is not a number in 1...999999999"),
        .init("crypto tag is the key", replace: [8: "a=crypto:\(key) AES_CM_128_HMAC_SHA1_80 inline:\(key)"], .badCrypto, line: 8, "crypto tag is not a number in 1...999999999"),
        .init("crypto suite is the key", replace: [8: "a=crypto:1 \(key) inline:\(key)"], .badCrypto, line: 8, "crypto suite is not a name of letters, digits and underscores"),
        .init("lifetime 2^99", replace: [8: cryptoPrefix + "inline:\(key)|2^99"], .badCrypto, line: 8, "crypto lifetime 2^n needs n in 1...63"),
        .init("lifetime 0", replace: [8: cryptoPrefix + "inline:\(key)|0"], .badCrypto, line: 8, "crypto lifetime is not a positive number or 2^n"),
        .init("MKI length 0", replace: [8: cryptoPrefix + "inline:\(key)|1:0"], .badCrypto, line: 8, "crypto MKI length is not a number in 1...128"),
        .init("MKI value too big", replace: [8: cryptoPrefix + "inline:\(key)|99999999999999999999:4"], .badCrypto, line: 8, "crypto MKI value is not a decimal number below 2^64"),
        .init("lifetime after MKI", replace: [8: cryptoPrefix + "inline:\(key)|1:4|2^20"], .badCrypto, line: 8, "crypto lifetime must come before the MKI"),
        .init("two MKIs", replace: [8: cryptoPrefix + "inline:\(key)|1:4|2:4"], .badCrypto, line: 8, "crypto key parameter has two MKIs"),
        .init("too many key parts", replace: [8: cryptoPrefix + "inline:\(key)|2^20|1:4|x"], .badCrypto, line: 8, "crypto key parameter has more than lifetime and MKI after the key"),
        .init("two keys without MKI", replace: [8: cryptoPrefix + "inline:\(key);inline:\(key)"], .badCrypto, line: 8, "crypto line has 2 keys; each needs an MKI"),
        .init("crypto tag reused", insert: [8: "a=crypto:1 AES_CM_128_HMAC_SHA1_32 inline:\(key)"], .badCrypto, line: 9, "crypto tag 1 is used twice"),
        .init("key on a line of its own", insert: [7: "inline:\(key)"], .malformedLine, line: 8, "expected <letter>=<value>, a lowercase type letter and '='"),
        .init("key in an m= port", replace: [5: "m=audio \(key) RTP/AVP 97"], .malformedLine, line: 5, "m= port is not a number in 0...65535"),
        .init("key in an rtpmap", replace: [7: "a=rtpmap:97 \(key)"], .badAttribute, line: 7, "rtpmap for payload type 97 needs <encoding>/<clock rate>[/<channels>]"),
        .init("key after a control character", replace: [8: cryptoPrefix + "inline:\u{0}\(key)"], .malformedLine, line: 8, "contains control character 0"),

        // Limits.
        .init(
            "too large", text: SDPErrorRow.base.joined(separator: "\r\n") + "\r\n" + String(repeating: "a=x\r\n", count: 13_200),
            .tooLarge, line: nil, "SDP is \(SDPErrorRow.base.joined(separator: "\r\n").utf8.count + 66_002) bytes; the limit is 65536"),
        .init(
            "too many lines", text: SDPErrorRow.base.joined(separator: "\n") + "\n" + String(repeating: "a=x\n", count: 4_100),
            .tooLarge, line: 4_097, "more than 4096 lines"),
    ]

    @Test(arguments: rows)
    func row(_ row: SDPErrorRow) {
        do {
            let parsed = try SessionDescription(parsing: row.text)
            Issue.record("parsed without error: \(parsed.media.count) media sections")
        } catch {
            #expect(error.code == row.code)
            #expect(error.message == row.message)
            #expect(error.line == row.line)
            for shown in [error.message, error.description, error.debugDescription, String(reflecting: error), "\(error)"] {
                #expect(!shown.contains(SDPFixtures.key))
                #expect(!shown.contains(SDPFixtures.key.prefix(12)))
            }
        }
    }

    @Test func everyRowIsDifferentFromTheValidBase() throws {
        // The base parses; each row's failure comes from its one change.
        let base = SDPErrorRow.base.map { $0 + "\r\n" }.joined()
        let sdp = try SessionDescription(parsing: base)
        #expect(sdp.media.first?.crypto.first?.keyAndSalt == SDPFixtures.keyBytes)
        #expect(Set(Self.rows.map(\.text)).count == Self.rows.count)
    }
}
