import Crypto
import Foundation
import Testing
@testable import MediaEngine

/// MESSAGE-INTEGRITY, MESSAGE-INTEGRITY-SHA256 and FINGERPRINT against RFC 5769's vectors,
/// and the crypto underneath against swift-crypto and known values.
@Suite struct STUNIntegrityTests {
    /// RFC 5769's short-term password for samples 2.1-2.3.
    static let rfcPassword = "VOkJxbRl1RmTxUk/WvJxBt"

    /// RFC 5769 section 2.4, "Sample Request with Long-Term Authentication".
    static let longTermRequest: [UInt8] = [
        0x00, 0x01, 0x00, 0x60,  // Binding request, length 96
        0x21, 0x12, 0xA4, 0x42,  // magic cookie
        0x78, 0xAD, 0x34, 0x33,  // transaction ID
        0xC6, 0xAD, 0x72, 0xC0,
        0x29, 0xDA, 0x41, 0x2E,
        0x00, 0x06, 0x00, 0x12,  // USERNAME, length 18
        0xE3, 0x83, 0x9E, 0xE3,  // U+30DE U+30C8 U+30EA U+30C3 U+30AF U+30B9 in UTF-8
        0x83, 0x88, 0xE3, 0x83,
        0xAA, 0xE3, 0x83, 0x83,
        0xE3, 0x82, 0xAF, 0xE3,
        0x82, 0xB9, 0x00, 0x00,  // then 2 zero padding bytes
        0x00, 0x15, 0x00, 0x1C,  // NONCE, length 28
        0x66, 0x2F, 0x2F, 0x34,  // "f//499k954d6OL34oL9FSTvy64sA"
        0x39, 0x39, 0x6B, 0x39,
        0x35, 0x34, 0x64, 0x36,
        0x4F, 0x4C, 0x33, 0x34,
        0x6F, 0x4C, 0x39, 0x46,
        0x53, 0x54, 0x76, 0x79,
        0x36, 0x34, 0x73, 0x41,
        0x00, 0x14, 0x00, 0x0B,  // REALM, length 11
        0x65, 0x78, 0x61, 0x6D,  // "example.org"
        0x70, 0x6C, 0x65, 0x2E,
        0x6F, 0x72, 0x67, 0x00,  // then 1 zero padding byte
        0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, length 20
        0xF6, 0x70, 0x24, 0x65,  // HMAC-SHA1
        0x6D, 0xD6, 0x4A, 0x3E,
        0x02, 0xB8, 0xE0, 0x71,
        0x2E, 0x85, 0xC9, 0xA2,
        0x8C, 0xA8, 0x96, 0x66,
    ]
    static let longTermUsername = "\u{30DE}\u{30C8}\u{30EA}\u{30C3}\u{30AF}\u{30B9}"

    @Test(arguments: [
        STUNMessageTests.sampleRequest, STUNMessageTests.sampleIPv4Response, STUNMessageTests.sampleIPv6Response,
    ])
    func rfc5769ShortTermSamplesVerifyAndReserializeByteForByte(vector: [UInt8]) throws {
        let key = try STUNIntegrityKey.shortTerm(password: Self.rfcPassword)
        let message = try STUNMessage(parsing: vector)
        #expect(message.verifyIntegrity(key, in: vector))
        #expect(STUNMessage.verifyFingerprint(vector))
        // Recomputed over the received padding (spaces), both attributes come out identical.
        #expect(message.serialized(integrity: key, fingerprint: true) == vector)
        #expect(message.serializedSize(integrity: key, fingerprint: true) == vector.count)

        let wrongKey = try STUNIntegrityKey.shortTerm(password: "VOkJxbRl1RmTxUk/WvJxBT")
        #expect(!message.verifyIntegrity(wrongKey, in: vector))
        #expect(!message.verifyIntegrity(STUNIntegrityKey(bytes: key.bytes, algorithm: .sha256), in: vector))
    }

    @Test func rfc5769LongTermSampleIsWrittenByteForByte() throws {
        let transactionID = try #require(STUNTransactionID(Array(Self.longTermRequest[8..<20])))
        // SASLprep turns the password "The<U+00AD>M<U+00AA>tr<U+2168>" into "TheMatrIX";
        // this code refuses to do that itself, so the test derives the key from the result.
        let key = STUNIntegrityKey(bytes: STUNCrypto.md5(Array("\(Self.longTermUsername):example.org:TheMatrIX".utf8)))
        let message = STUNMessage(type: .bindingRequest, transactionID: transactionID, attributes: [
            .username(Self.longTermUsername), .nonce("f//499k954d6OL34oL9FSTvy64sA"), .realm("example.org"),
        ])
        #expect(message.serialized(integrity: key, fingerprint: false) == Self.longTermRequest)

        let parsed = try STUNMessage(parsing: Self.longTermRequest)
        #expect(parsed.username == Self.longTermUsername)
        #expect(parsed.nonce == "f//499k954d6OL34oL9FSTvy64sA")
        #expect(parsed.realm == "example.org")
        #expect(parsed.verifyIntegrity(key, in: Self.longTermRequest))
        #expect(!STUNMessage.verifyFingerprint(Self.longTermRequest))  // it has none

        let error = #expect(throws: STUNCredentialError.self) {
            try STUNIntegrityKey.longTerm(username: Self.longTermUsername, realm: "example.org", password: "TheMatrIX")
        }
        #expect(error?.code == .nonASCII)
        #expect(error?.field == "username")
        #expect(throws: STUNCredentialError.self) { try STUNIntegrityKey.shortTerm(password: "The\u{00AD}M\u{00AA}tr\u{2168}") }
    }

    @Test func longTermKeyIsMD5OfUsernameRealmPassword() throws {
        let key = try STUNIntegrityKey.longTerm(username: "1700000000:alice", realm: "media.test", password: "s3cret")
        let expected = Array(Insecure.MD5.hash(data: Array("1700000000:alice:media.test:s3cret".utf8)))
        #expect(key.bytes == expected)
        #expect(key.algorithm == .sha1)
    }

    @Test func cryptoAgreesWithSwiftCryptoAndKnownValues() {
        let key = Array("key".utf8)
        let data = Array("The quick brown fox jumps over the lazy dog".utf8)
        let sha1 = Array(HMAC<Insecure.SHA1>.authenticationCode(for: data, using: SymmetricKey(data: key)))
        #expect(STUNCrypto.hmac(.sha1, key: key, data: data) == sha1)
        let sha256 = Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
        #expect(STUNCrypto.hmac(.sha256, key: key, data: data) == sha256)
        #expect(STUNCrypto.hmac(.sha1, key: [], data: []).count == 20)
        // The CRC-32 check value of "123456789".
        let crc = Array("123456789".utf8).withUnsafeBytes { STUNCrypto.crc32($0) }
        #expect(crc == 0xCBF4_3926)
    }

    @Test func sha256IntegrityRoundTrips() throws {
        let key = try STUNIntegrityKey.longTerm(username: "user", realm: "realm", password: "pass", algorithm: .sha256)
        let message = STUNMessage(type: .allocateRequest, transactionID: STUNMessageTests.countingID, attributes: [
            .requestedTransport(17), .username("user"), .realm("realm"), .nonce("n"),
        ])
        let bytes = message.serialized(integrity: key, fingerprint: true)
        #expect(bytes.count == 20 + 8 + 8 + 12 + 8 + 36 + 8)
        let parsed = try STUNMessage(parsing: bytes)
        guard case .messageIntegritySHA256(let mac) = parsed.attributes[4] else {
            Issue.record("no MESSAGE-INTEGRITY-SHA256: \(parsed.attributes)")
            return
        }
        #expect(mac.count == 32)
        #expect(parsed.verifyIntegrity(key, in: bytes))
        #expect(STUNMessage.verifyFingerprint(bytes))
        #expect(!parsed.verifyIntegrity(STUNIntegrityKey(bytes: key.bytes, algorithm: .sha1), in: bytes))
        let other = try STUNIntegrityKey.longTerm(username: "user", realm: "realm", password: "pasS", algorithm: .sha256)
        #expect(!parsed.verifyIntegrity(other, in: bytes))
    }

    @Test func everyTamperedByteFailsIntegrityAndFingerprint() throws {
        let key = try STUNIntegrityKey.shortTerm(password: Self.rfcPassword)
        let vector = STUNMessageTests.sampleRequest
        let integrityEnd = 100  // MESSAGE-INTEGRITY covers bytes 0..<80 and sits at 80..<100
        var parsedTampered = 0
        // The length bytes are left out: changing them makes the bytes no STUN message.
        for index in 0..<vector.count where !(2...3).contains(index) {
            var tampered = vector
            tampered[index] ^= 0x01
            #expect(!STUNMessage.verifyFingerprint(tampered), "byte \(index)")
            if index < integrityEnd, let message = try? STUNMessage(parsing: tampered) {
                parsedTampered += 1
                #expect(!message.verifyIntegrity(key, in: tampered), "byte \(index)")
            }
        }
        #expect(parsedTampered > 80)  // most flips still parse, so integrity is what catches them
    }

    @Test func integrityFromABuiltMessageIsNotVerifiable() throws {
        let key = try STUNIntegrityKey.shortTerm(password: "pw")
        let message = STUNMessage(type: .bindingRequest, transactionID: STUNMessageTests.countingID, attributes: [.username("a:b")])
        let bytes = message.serialized(integrity: key, fingerprint: false)
        // Only a parsed message knows where its attributes were.
        #expect(!message.verifyIntegrity(key, in: bytes))
        #expect(try STUNMessage(parsing: bytes).verifyIntegrity(key, in: bytes))
        // An existing integrity attribute is replaced, not repeated.
        let parsed = try STUNMessage(parsing: bytes)
        let again = parsed.serialized(integrity: key, fingerprint: true)
        #expect(try STUNMessage(parsing: again).attributes.map(\.type) == [0x0006, 0x0008, 0x8028])
        let rebuilt: [UInt8] = Array(again[20..<bytes.count]), original: [UInt8] = Array(bytes[20...])
        #expect(rebuilt == original)
    }
}
