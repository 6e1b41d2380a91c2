import Testing
@testable import MediaEngine

/// The typed attribute and field parsers on their own: value -> type -> value.
@Suite struct SDPAttributes {
    private typealias Crypto = MediaDescription.Crypto
    private typealias Connection = SessionDescription.Connection

    @Test func cryptoLifetimeAndMKIForms() throws {
        let key = SDPFixtures.key
        // (written, lifetime, MKI, written back)
        let rows: [(String, UInt64?, Crypto.MKI?, String)] = [
            ("1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|2^20", 1 << 20, nil, "1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|2^20"),
            ("1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|1048576", 1 << 20, nil, "1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|2^20"),
            ("1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|1000000", 1_000_000, nil, "1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|1000000"),
            ("1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|7:2", nil, .init(value: 7, length: 2), "1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|7:2"),
            ("1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|2^48|1:128", 1 << 48, .init(value: 1, length: 128), "1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|2^48|1:128"),
            // ABNF strings are case-insensitive: `INLINE:` and a lowercase suite are the same.
            ("9 aes_cm_128_hmac_sha1_32 INLINE:\(key)", nil, nil, "9 AES_CM_128_HMAC_SHA1_32 inline:\(key)"),
        ]
        for (written, lifetime, mki, back) in rows {
            let crypto = try Crypto(attributeValue: written)
            #expect(crypto.keyAndSalt == SDPFixtures.keyBytes, "\(back)")
            #expect(crypto.keys[0].lifetime == lifetime && crypto.keys[0].mki == mki, "\(back)")
            #expect(crypto.attributeValue == back)
            #expect(try Crypto(attributeValue: crypto.attributeValue) == crypto)
        }
    }

    @Test func cryptoWithSeveralKeysAndSessionParameters() throws {
        let second = "oKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9"
        let value = "3 AES_CM_128_HMAC_SHA1_80 inline:\(SDPFixtures.key)|2^20|1:4;inline:\(second)|2^20|2:4 KDR=1 UNENCRYPTED_SRTCP"
        let crypto = try Crypto(attributeValue: value)
        #expect(crypto.tag == 3)
        #expect(crypto.keys.map(\.mki) == [.init(value: 1, length: 4), .init(value: 2, length: 4)])
        let keyAndSalt: [UInt8] = (0..<30).map { (offset: UInt8) -> UInt8 in 0xA0 + offset }
        #expect(crypto.keys[1].keyAndSalt == keyAndSalt)
        #expect(crypto.sessionParameters == ["KDR=1", "UNENCRYPTED_SRTCP"])
        #expect(crypto.attributeValue == value)
    }

    @Test func unpaddedBase64IsAcceptedAndKeptAsWritten() throws {
        let unpadded = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw"  // 28 bytes, "==" dropped
        let crypto = try Crypto(attributeValue: "1 AEAD_AES_128_GCM inline:\(unpadded)")
        #expect(crypto.keyAndSalt == SDPFixtures.gcmKeyBytes)
        #expect(crypto.keys[0].base64Key == unpadded)
        #expect(crypto.attributeValue == "1 AEAD_AES_128_GCM inline:\(unpadded)")
    }

    @Test func suiteKeyLengths() {
        #expect(Crypto.Suite.aesCM128HMACSHA1_80.keyLength == 30)
        #expect(Crypto.Suite.aesCM128HMACSHA1_32.keyLength == 30)
        #expect(Crypto.Suite.aeadAES128GCM.keyLength == 28)
        #expect(Crypto.Suite.aeadAES256GCM.keyLength == 44)
        #expect(Crypto.Suite.aes256CMHMACSHA1_80.keyLength == 46)
        #expect(Crypto.Suite(rawValue: "NULL_HMAC_SHA1_80").keyLength == nil)
        #expect(Crypto.Suite.aesCM128HMACSHA1_80.rawValue == "AES_CM_128_HMAC_SHA1_80")
        #expect(Crypto.Suite.aeadAES128GCM.rawValue == "AEAD_AES_128_GCM")
    }

    @Test func rtpMapForms() throws {
        let rows: [(String, MediaDescription.RTPMap)] = [
            ("111 opus/48000/2", .init(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2)),
            ("96 VP8/90000", .init(payloadType: 96, encodingName: "VP8", clockRate: 90_000)),
            ("0 PCMU/8000", .init(payloadType: 0, encodingName: "PCMU", clockRate: 8_000)),
            ("127 L16/44100/6", .init(payloadType: 127, encodingName: "L16", clockRate: 44_100, channels: 6)),
        ]
        for (value, expected) in rows {
            #expect(try MediaDescription.RTPMap(attributeValue: value) == expected)
            #expect(expected.attributeValue == value)
        }
    }

    @Test func formatParametersBuiltFromPairs() {
        let fmtp = MediaDescription.FormatParameters(payloadType: 101, parameters: ["0-15": "", "rate": "8000"])
        #expect(fmtp.attributeValue == "101 0-15;rate=8000")
        #expect(fmtp.parameters == ["0-15": "", "rate": "8000"])
        // First value wins when a key repeats; blanks and empty items are ignored.
        let repeated = MediaDescription.FormatParameters(format: "96", parameterString: " a=1 ;; a=2; b = x=y ")
        #expect(repeated.parameters == ["a": "1", "b": "x=y"])
    }

    @Test func extensionMapForms() throws {
        let rows: [(String, MediaDescription.ExtensionMap)] = [
            ("1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", .init(id: 1, uri: MediaDescription.ExtensionMap.audioLevelURI)),
            ("14/recvonly urn:x", .init(id: 14, direction: .receiveOnly, uri: "urn:x")),
            ("255/inactive urn:y some attributes here", .init(id: 255, direction: .inactive, uri: "urn:y", extensionAttributes: "some attributes here")),
        ]
        for (value, expected) in rows {
            #expect(try MediaDescription.ExtensionMap(attributeValue: value) == expected)
            #expect(expected.attributeValue == value)
        }
        #expect(rows.map { $0.1.fitsOneByteHeader } == [true, true, false])
    }

    @Test func ssrcAndRTCPForms() throws {
        #expect(try MediaDescription.SSRCAttribute(attributeValue: "4294967295 cname:x:y") == .init(ssrc: .max, name: "cname", value: "x:y"))
        #expect(try MediaDescription.SSRCAttribute(attributeValue: "1 flag") == .init(ssrc: 1, name: "flag"))
        #expect(MediaDescription.SSRCAttribute(ssrc: 1, name: "flag").attributeValue == "1 flag")
        #expect(try MediaDescription.RTCPEndpoint(attributeValue: "53020") == .init(port: 53_020))
        let v6 = MediaDescription.RTCPEndpoint(port: 9, connection: .ip6("2001:db8::1"))
        #expect(v6.attributeValue == "9 IN IP6 2001:db8::1")
        #expect(try MediaDescription.RTCPEndpoint(attributeValue: v6.attributeValue) == v6)
    }

    @Test func connectionForms() throws {
        let rows: [(String, Connection)] = [
            ("IN IP4 127.0.0.1", .ip4("127.0.0.1")),
            ("IN IP4 233.252.0.1/127/3", Connection(addressType: .ip4, address: "233.252.0.1", ttl: 127, addressCount: 3)),
            ("IN IP6 ff15::101/3", Connection(addressType: .ip6, address: "ff15::101", addressCount: 3)),
            ("IN IP6 ::1", .ip6("::1")),
            // Unknown address types keep the address whole.
            ("ATM NSAP 47.0091.8100.0000.0060.3e64.fd01/x", Connection(networkType: "ATM", addressType: .init(rawValue: "NSAP"), address: "47.0091.8100.0000.0060.3e64.fd01/x")),
        ]
        for (value, expected) in rows {
            #expect(try Connection(parsing: value[...]) == expected)
            #expect(expected.value == value)
        }
    }

    @Test func directionTokens() {
        #expect(MediaDescription.Direction.allCases.map(\.rawValue) == ["sendrecv", "sendonly", "recvonly", "inactive"])
        #expect(SessionDescription.Attribute.direction(.receiveOnly) == .init(name: "recvonly"))
    }
}
