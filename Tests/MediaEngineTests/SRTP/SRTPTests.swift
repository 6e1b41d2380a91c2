import Crypto
import Foundation
import Testing
import _CryptoExtras
@testable import MediaEngine

private func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// AES-128 in counter mode from swift-crypto (BoringSSL), independent of libsrtp.
private func aesCounterKeystream(key: [UInt8], iv: [UInt8], blocks: Int) throws -> [UInt8] {
    let zeros = [UInt8](repeating: 0, count: 16 * blocks)
    return Array(try AES._CTR.encrypt(zeros, using: SymmetricKey(data: key), nonce: AES._CTR.Nonce(nonceBytes: iv)))
}

private func rtpPacket(sequence: UInt16, payload: [UInt8] = [UInt8](repeating: 0xAB, count: 160), ssrc: UInt32 = 0xCAFE_BABE) throws -> [UInt8] {
    try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: sequence, timestamp: 0xDECA_FBAD, ssrc: ssrc),
                  payload: payload).serialized()
}

/// Protects `packet` and returns the SRTP bytes.
private func protect(_ packet: [UInt8], with context: SRTPContext, rtcp: Bool = false) throws -> [UInt8] {
    var buffer = packet + [UInt8](repeating: 0, count: SRTPContext.trailerCapacity)
    let length = try buffer.withUnsafeMutableBytes {
        rtcp ? try context.protectRTCP($0, length: packet.count) : try context.protect($0, length: packet.count)
    }
    return Array(buffer[0..<length])
}

/// Unprotects `packet` and returns the plain bytes.
private func unprotect(_ packet: [UInt8], with context: SRTPContext, rtcp: Bool = false) throws -> [UInt8] {
    var buffer = packet
    let length = try buffer.withUnsafeMutableBytes {
        rtcp ? try context.unprotectRTCP($0, length: packet.count) : try context.unprotect($0, length: packet.count)
    }
    return Array(buffer[0..<length])
}

@Suite struct SRTPVectors {
    // RFC 3711 Appendix B.3.
    static let masterKey = hex("E1F97A0D3E018BE0D64FA32C06DE4139")
    static let masterSalt = hex("0EC675AD498AFEEBB6960B3AABE6")
    static let cipherKey = hex("C61E7A93744F39EE10734AFE3FF7A087")
    static let cipherSalt = hex("30CBBC08863D8C85D49DB34A9AE1")
    static let authKey = hex("CEBE321F6FF7716B6FD4AB49AF256A156D38BAA4")

    @Test func referenceCipherReproducesTheRFC3711B2Keystream() throws {
        let keystream = try aesCounterKeystream(key: hex("2B7E151628AED2A6ABF7158809CF4F3C"),
                                                iv: hex("F0F1F2F3F4F5F6F7F8F9FAFBFCFD0000"), blocks: 0xFF02)
        #expect(Array(keystream[0..<48]) == hex("E03EAD0935C95E80E166B16DD92B4EB4D23513162B02D0F72A43A2FE4A5F97AB41E95B3BB0A2E8DD477901E4FCA894C0"))
        #expect(Array(keystream[(0xFEFF * 16)..<(0xFF02 * 16)])
            == hex("EC8CDF7398607CB0F2D21675EA9EA1E4362B7C3C6773516318A077D7FC5073AE6A2CC3787889374FBEB4C81B17BA6C44"))
    }

    /// libsrtp, driven through `SRTPContext` with the B.3 master key, must encrypt with the
    /// B.3 session key and salt and tag with the B.3 authentication key.
    @Test func protectUsesTheRFC3711B3SessionKeys() throws {
        let keying = try SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: Self.masterKey + Self.masterSalt)
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let plain = try rtpPacket(sequence: 0x1234)
        let protected = try protect(plain, with: sender)
        #expect(protected.count == plain.count + 10)
        #expect(Array(protected[0..<12]) == Array(plain[0..<12]), "the header stays in the clear")

        // IV = (salt << 16) XOR (SSRC << 64) XOR (index << 16), RFC 3711 4.1.1.
        var iv = Self.cipherSalt + [0, 0]
        let ssrc: [UInt8] = [0xCA, 0xFE, 0xBA, 0xBE]
        for index in 0..<4 { iv[4 + index] ^= ssrc[index] }
        let packetIndex: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x12, 0x34]  // ROC 0, sequence 0x1234
        for index in 0..<6 { iv[8 + index] ^= packetIndex[index] }
        let keystream = try aesCounterKeystream(key: Self.cipherKey, iv: iv, blocks: 10)
        let expectedPayload = (0..<160).map { plain[12 + $0] ^ keystream[$0] }
        #expect(Array(protected[12..<172]) == expectedPayload)

        // Tag = HMAC-SHA1(auth key, header || encrypted payload || ROC) truncated to 80 bits.
        var mac = HMAC<Insecure.SHA1>(key: SymmetricKey(data: Self.authKey))
        mac.update(data: protected[0..<172])
        mac.update(data: [0, 0, 0, 0])
        #expect(Array(protected[172...]) == Array(Data(mac.finalize()).prefix(10)))
    }
}

@Suite struct SRTPBehaviour {
    @Test(arguments: SRTPProfile.allCases)
    func roundTripAcrossTheSequenceWrap(profile: SRTPProfile) throws {
        let keying = SRTPKeyingMaterial.random(profile: profile)
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound)
        for sequence in (65_530...65_535).map(UInt16.init) + (0...5).map(UInt16.init) {
            let plain = try rtpPacket(sequence: sequence)
            let protected = try protect(plain, with: sender)
            #expect(protected.count == plain.count + profile.rtpOverhead)
            #expect(protected[12...] != plain[12...], "payload is encrypted")
            #expect(try unprotect(protected, with: receiver) == plain, "sequence \(sequence)")
        }
        #expect(receiver.statistics.packetsUnprotected == 12)
    }

    @Test(arguments: SRTPProfile.allCases)
    func replayIsRejectedAndCounted(profile: SRTPProfile) throws {
        let keying = SRTPKeyingMaterial.random(profile: profile)
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound)
        let protected = try protect(rtpPacket(sequence: 7), with: sender)
        _ = try unprotect(protected, with: receiver)
        let error = #expect(throws: SRTPError.self) { try unprotect(protected, with: receiver) }
        #expect(error?.code == .replayed)
        #expect(receiver.statistics.replays == 1)
    }

    @Test(arguments: SRTPProfile.allCases)
    func everyFlippedBitFailsAuthentication(profile: SRTPProfile) throws {
        let keying = SRTPKeyingMaterial.random(profile: profile)
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound)
        var sequence: UInt16 = 100
        // Flip one bit in the payload, the header and the tag, each in a fresh packet.
        for position in [30, 5, -1] {
            var protected = try protect(rtpPacket(sequence: sequence), with: sender)
            let index = position >= 0 ? position : protected.count - 1
            protected[index] ^= 0x04
            let error = #expect(throws: SRTPError.self) { try unprotect(protected, with: receiver) }
            // A flipped sequence-number bit can also land outside the window; any refusal counts.
            #expect(error != nil)
            if position != 5 { #expect(error?.code == .authenticationFailed) }
            sequence += 1
        }
        #expect(receiver.statistics.authenticationFailures >= 2)
        // The receiver still accepts a good packet afterwards.
        #expect(try unprotect(try protect(rtpPacket(sequence: sequence), with: sender), with: receiver).count == 172)
    }

    @Test func wrongKeyFailsAuthentication() throws {
        let sender = try SRTPContext(keying: .random(), direction: .outbound)
        let receiver = try SRTPContext(keying: .random(), direction: .inbound)
        let error = #expect(throws: SRTPError.self) { try unprotect(try protect(rtpPacket(sequence: 1), with: sender), with: receiver) }
        #expect(error?.code == .authenticationFailed)
        #expect(receiver.statistics.authenticationFailures == 1)
    }

    @Test func packetsBehindTheReplayWindowAreTooOld() throws {
        let keying = SRTPKeyingMaterial.random()
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound, replayWindow: 128)
        let old = try protect(rtpPacket(sequence: 10), with: sender)
        let within = try protect(rtpPacket(sequence: 300), with: sender)
        let newest = try protect(rtpPacket(sequence: 400), with: sender)
        _ = try unprotect(newest, with: receiver)
        // 100 behind the newest: inside a 128-packet window, so accepted out of order.
        #expect(try unprotect(within, with: receiver).count == 172)
        let error = #expect(throws: SRTPError.self) { try unprotect(old, with: receiver) }
        #expect(error?.code == .tooOld)
        #expect(receiver.statistics.tooOld == 1)
    }

    @Test func srtcpRoundTripsAndRejectsReplays() throws {
        let keying = SRTPKeyingMaterial.random(profile: .aesCM128HMACSHA1_32)
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound)
        // A receiver report with no report blocks.
        let rtcp: [UInt8] = [0x80, 201, 0x00, 0x01, 0x12, 0x34, 0x56, 0x78]
        let protected = try protect(rtcp, with: sender, rtcp: true)
        // SRTCP adds the 4-byte E+index word and, for this suite, an 80-bit tag.
        #expect(protected.count == rtcp.count + 4 + 10)
        #expect(try unprotect(protected, with: receiver, rtcp: true) == rtcp)
        #expect(throws: SRTPError.self) { try unprotect(protected, with: receiver, rtcp: true) }
    }

    @Test func shortPacketsAndSmallBuffersAreTypedErrors() throws {
        let sender = try SRTPContext(keying: .random(), direction: .outbound)
        let receiver = try SRTPContext(keying: .random(), direction: .inbound)
        let error = #expect(throws: SRTPError.self) { try unprotect([0x80, 0x60, 0x00], with: receiver) }
        #expect(error?.code == .malformed)
        var tight = try rtpPacket(sequence: 1)
        let count = tight.count
        let small = #expect(throws: SRTPError.self) { try tight.withUnsafeMutableBytes { try sender.protect($0, length: count) } }
        #expect(small?.code == .bufferTooSmall)
    }

    @Test func keysAreValidatedAndNeverPrinted() throws {
        let keying = SRTPKeyingMaterial.random()
        #expect(!"\(keying)".contains(keying.base64))
        var dumped = ""
        dump(keying, to: &dumped)
        for text in [String(reflecting: keying), dumped, "\([keying])"] {
            #expect(!text.contains(keying.base64) && !text.contains(keying.hex) && !text.contains("\(keying.bytes)"))
            #expect(text.contains("redacted"), "\(text)")
        }
        #expect(try SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, base64: keying.base64) == keying)
        let secret = "c2VjcmV0LWtleS1tYXRlcmlhbA=="  // 21 bytes
        let short = #expect(throws: SRTPError.self) { try SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, base64: secret) }
        #expect(short?.code == .badKey)
        #expect(short?.message.contains("needs 30 bytes") == true)
        #expect(short?.message.contains(secret) == false)
        let invalid = #expect(throws: SRTPError.self) { try SRTPKeyingMaterial(profile: .aeadAES128GCM, base64: "not base64!!") }
        #expect(invalid?.message.contains("not base64") == false)
        #expect(throws: SRTPError.self) { try SRTPContext(keying: keying, direction: .inbound, replayWindow: 10) }
    }
}
