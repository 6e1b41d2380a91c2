import Foundation

extension MediaDescription {
    /// An SDES `a=crypto` line (RFC 4568 9.1): an SRTP master key and salt for one
    /// direction, as ffmpeg writes and reads it.
    ///
    /// ```
    /// a=crypto:<tag> <crypto-suite> <key-params> [<session-params>]
    /// key-params = inline:<base64 key||salt>[|<lifetime>][|<MKI>:<MKI length>] *(";" key-params)
    /// ```
    ///
    /// The key is a secret. `attributeValue` contains it (that is its job); `description`,
    /// `debugDescription`, the mirror and every `SDPError` leave it out.
    public struct Crypto: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// An SRTP crypto suite name (RFC 4568, RFC 6188, RFC 7714).
        public struct Suite: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
            /// The suite name as written, such as `AES_CM_128_HMAC_SHA1_80`.
            public var rawValue: String
            /// Creates a suite from its name; known names are matched case-insensitively
            /// and normalised.
            public init(rawValue: String) {
                let upper = rawValue.uppercased()
                self.rawValue = Self.keyLengths[upper] == nil ? rawValue : upper
            }

            /// AES-128 counter mode, 80-bit HMAC-SHA1 tag. ffmpeg's and the engine's default.
            public static let aesCM128HMACSHA1_80 = Suite(rawValue: "AES_CM_128_HMAC_SHA1_80")
            /// AES-128 counter mode, 32-bit HMAC-SHA1 tag on RTP.
            public static let aesCM128HMACSHA1_32 = Suite(rawValue: "AES_CM_128_HMAC_SHA1_32")
            /// AES-128 GCM (RFC 7714).
            public static let aeadAES128GCM = Suite(rawValue: "AEAD_AES_128_GCM")
            /// AES-256 GCM (RFC 7714).
            public static let aeadAES256GCM = Suite(rawValue: "AEAD_AES_256_GCM")
            /// AES-256 counter mode, 80-bit tag (RFC 6188).
            public static let aes256CMHMACSHA1_80 = Suite(rawValue: "AES_256_CM_HMAC_SHA1_80")
            /// AES-256 counter mode, 32-bit tag (RFC 6188).
            public static let aes256CMHMACSHA1_32 = Suite(rawValue: "AES_256_CM_HMAC_SHA1_32")

            // Master key + master salt bytes per suite.
            private static let keyLengths: [String: Int] = [
                "AES_CM_128_HMAC_SHA1_80": 30, "AES_CM_128_HMAC_SHA1_32": 30, "F8_128_HMAC_SHA1_80": 30,
                "AES_192_CM_HMAC_SHA1_80": 38, "AES_192_CM_HMAC_SHA1_32": 38,
                "AES_256_CM_HMAC_SHA1_80": 46, "AES_256_CM_HMAC_SHA1_32": 46,
                "AEAD_AES_128_GCM": 28, "AEAD_AES_256_GCM": 44,
            ]

            /// Master key plus master salt length in bytes (30 for AES_CM_128_*, 28 for
            /// AEAD_AES_128_GCM), or nil for a suite this code does not know.
            public var keyLength: Int? { Self.keyLengths[rawValue] }

            /// The token as written in SDP.
            public var description: String { rawValue }
        }

        /// A master key index: which key a packet uses when several are offered.
        public struct MKI: Hashable, Sendable {
            /// The index value.
            public var value: UInt64
            /// Bytes the MKI takes in each packet, 1...128.
            public var length: Int

            /// Creates an MKI.
            public init(value: UInt64, length: Int) {
                self.value = value
                self.length = length
            }
        }

        /// One `inline:` key parameter. Its description shows the key's length, never
        /// the key.
        public struct KeyParameters: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
            /// The key and salt in base64, as written. A secret.
            public let base64Key: String
            /// The decoded master key followed by the master salt. A secret.
            public let keyAndSalt: [UInt8]
            /// Packets the key may protect (`|2^31` or `|2147483648`), when given.
            public var lifetime: UInt64?
            /// The master key index, when given.
            public var mki: MKI?

            /// Wraps raw key material, encoding it as padded base64.
            /// - Parameters:
            ///   - keyAndSalt: Master key followed by master salt.
            ///   - lifetime: Packets the key may protect.
            ///   - mki: The master key index.
            public init(keyAndSalt: [UInt8], lifetime: UInt64? = nil, mki: MKI? = nil) {
                self.keyAndSalt = keyAndSalt
                self.base64Key = Data(keyAndSalt).base64EncodedString()
                self.lifetime = lifetime
                self.mki = mki
            }

            /// Decodes base64 key material; missing `=` padding is tolerated.
            /// - Throws: `SDPError` with code `badCrypto` when it is not base64. The
            ///   message does not repeat the key.
            public init(base64Key: String, lifetime: UInt64? = nil, mki: MKI? = nil) throws(SDPError) {
                var padded = base64Key
                switch padded.utf8.count % 4 {
                case 2: padded += "=="
                case 3: padded += "="
                default: break
                }
                guard padded.utf8.count <= 1_024, let data = Data(base64Encoded: padded), !data.isEmpty else {
                    throw SDPError(.badCrypto, "crypto key is not valid base64")
                }
                self.base64Key = base64Key
                self.keyAndSalt = Array(data)
                self.lifetime = lifetime
                self.mki = mki
            }

            init(parsing text: Substring) throws(SDPError) {
                let parts = SDPScanning.split(text, at: "|", omittingEmptySubsequences: false)
                guard let method = SDPScanning.cut(parts[0], at: ":"), method.before.lowercased() == "inline" else {
                    throw SDPError(.badCrypto, "crypto key parameter must start with inline:")
                }
                guard parts.count <= 3 else { throw SDPError(.badCrypto, "crypto key parameter has more than lifetime and MKI after the key") }
                var lifetime: UInt64?
                var mki: MKI?
                for (index, part) in parts.dropFirst().enumerated() {
                    if let mkiParts = SDPScanning.cut(part, at: ":") {
                        guard mki == nil else { throw SDPError(.badCrypto, "crypto key parameter has two MKIs") }
                        guard let value = SDPScanning.decimal(mkiParts.before, as: UInt64.self) else {
                            throw SDPError(.badCrypto, "crypto MKI value is not a decimal number below 2^64")
                        }
                        guard let length = SDPScanning.decimal(mkiParts.after, as: UInt8.self), (1...128).contains(length) else {
                            throw SDPError(.badCrypto, "crypto MKI length is not a number in 1...128")
                        }
                        mki = MKI(value: value, length: Int(length))
                    } else {
                        // RFC 4568: lifetime comes before the MKI.
                        guard index == 0, mki == nil else { throw SDPError(.badCrypto, "crypto lifetime must come before the MKI") }
                        lifetime = try Self.lifetime(part)
                    }
                }
                try self.init(base64Key: String(method.after), lifetime: lifetime, mki: mki)
            }

            private static func lifetime(_ text: Substring) throws(SDPError) -> UInt64 {
                if text.hasPrefix("2^") {
                    guard let exponent = SDPScanning.decimal(text.dropFirst(2), as: UInt8.self), (1...63).contains(exponent) else {
                        throw SDPError(.badCrypto, "crypto lifetime 2^n needs n in 1...63")
                    }
                    return 1 << UInt64(exponent)
                }
                guard let value = SDPScanning.decimal(text, as: UInt64.self), value > 0 else {
                    throw SDPError(.badCrypto, "crypto lifetime is not a positive number or 2^n")
                }
                return value
            }

            /// `inline:<key>[|lifetime][|mki:length]`. Contains the key.
            var text: String { "inline:" + SDPScanning.token(base64Key) + suffix }

            private var suffix: String {
                var text = ""
                if let lifetime {
                    let exponent = lifetime.trailingZeroBitCount
                    text += lifetime.nonzeroBitCount == 1 && exponent > 0 ? "|2^\(exponent)" : "|\(lifetime)"
                }
                if let mki { text += "|\(mki.value):\(mki.length)" }
                return text
            }

            /// `inline:<redacted N bytes>` with the lifetime and MKI.
            public var description: String { "inline:<redacted \(keyAndSalt.count) bytes>" + suffix }
            /// Like `description`; no key.
            public var debugDescription: String { "KeyParameters(\(description))" }
            /// Children without key material, for `dump` and debuggers.
            public var customMirror: Mirror {
                Mirror(self, children: ["keyLength": keyAndSalt.count, "lifetime": lifetime as Any, "mki": mki as Any], displayStyle: .struct)
            }
        }

        /// Identifies this line among the section's offers, 1...999999999.
        public var tag: UInt32
        /// The crypto suite.
        public let suite: Suite
        /// The key parameters, at least one; several need an MKI each.
        public let keys: [KeyParameters]
        /// Session parameters such as `KDR=1` or `UNENCRYPTED_SRTCP`, as written.
        public var sessionParameters: [String]

        /// Creates a crypto line.
        /// - Parameters:
        ///   - tag: 1...999999999; ffmpeg writes 1.
        ///   - suite: The crypto suite.
        ///   - keys: One key, or several with MKIs.
        ///   - sessionParameters: Extra parameters, written after the keys.
        /// - Throws: `SDPError` with code `badCrypto` when a key's length does not fit a
        ///   known suite, there is no key, or several keys lack MKIs.
        public init(tag: UInt32 = 1, suite: Suite = .aesCM128HMACSHA1_80, keys: [KeyParameters], sessionParameters: [String] = []) throws(SDPError) {
            guard (1...999_999_999).contains(tag) else { throw SDPError(.badCrypto, "crypto tag is not a number in 1...999999999") }
            guard !keys.isEmpty else { throw SDPError(.badCrypto, "crypto line has no key") }
            if let expected = suite.keyLength {
                for key in keys where key.keyAndSalt.count != expected {
                    throw SDPError(.badCrypto, "\(suite) key and salt are \(key.keyAndSalt.count) bytes, the suite needs \(expected)")
                }
            }
            if keys.count > 1, keys.contains(where: { $0.mki == nil }) {
                throw SDPError(.badCrypto, "crypto line has \(keys.count) keys; each needs an MKI")
            }
            self.tag = tag
            self.suite = suite
            self.keys = keys
            self.sessionParameters = sessionParameters
        }

        /// Creates a crypto line with one key and no lifetime or MKI, the form ffmpeg reads.
        /// - Parameters:
        ///   - tag: 1...999999999.
        ///   - suite: The crypto suite.
        ///   - keyAndSalt: Master key followed by master salt (30 bytes for AES_CM_128_*).
        /// - Throws: `SDPError` with code `badCrypto` when the length does not fit the suite.
        public init(tag: UInt32 = 1, suite: Suite = .aesCM128HMACSHA1_80, keyAndSalt: [UInt8]) throws(SDPError) {
            try self.init(tag: tag, suite: suite, keys: [KeyParameters(keyAndSalt: keyAndSalt)])
        }

        /// Parses the value after `a=crypto:`.
        /// - Throws: `SDPError` with code `badCrypto`; the message never contains the key.
        public init(attributeValue value: String) throws(SDPError) {
            let fields = SDPScanning.fields(value[...])
            guard fields.count >= 3 else {
                throw SDPError(.badCrypto, "crypto line needs <tag> <suite> inline:<key>, found \(fields.count) fields")
            }
            guard fields[0].utf8.count <= 9, let tag = SDPScanning.decimal(fields[0], as: UInt32.self) else {
                throw SDPError(.badCrypto, "crypto tag is not a number in 1...999999999")
            }
            let isNameByte = { (byte: UInt8) in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
            }
            guard fields[1].utf8.count <= 64, fields[1].utf8.allSatisfy(isNameByte) else {
                throw SDPError(.badCrypto, "crypto suite is not a name of letters, digits and underscores")
            }
            var keys: [KeyParameters] = []
            for part in SDPScanning.split(fields[2], at: ";", omittingEmptySubsequences: false) {
                keys.append(try KeyParameters(parsing: part))
            }
            try self.init(tag: tag, suite: Suite(rawValue: String(fields[1])), keys: keys, sessionParameters: fields.dropFirst(3).map(String.init))
        }

        /// The value after `a=crypto:`. Contains the key: a secret.
        public var attributeValue: String {
            ([String(tag), SDPScanning.token(suite.rawValue), keys.map(\.text).joined(separator: ";")] + sessionParameters.map(SDPScanning.token))
                .joined(separator: " ")
        }

        /// The first key's master key and salt. A secret.
        public var keyAndSalt: [UInt8] { keys[0].keyAndSalt }

        var redactedValue: String {
            ([String(tag), suite.rawValue, keys.map(\.description).joined(separator: ";")] + sessionParameters).joined(separator: " ")
        }

        /// The value of an `a=crypto` attribute with keys redacted, even when it does not parse.
        static func redacted(_ value: String) -> String {
            if let crypto = try? Crypto(attributeValue: value) { return crypto.redactedValue }
            return "<redacted>"
        }

        /// `crypto:<tag> <suite> inline:<redacted N bytes>...`.
        public var description: String { "crypto:" + redactedValue }
        /// Like `description`; no key.
        public var debugDescription: String { "Crypto(\(redactedValue))" }
        /// Children without key material, for `dump` and debuggers.
        public var customMirror: Mirror {
            Mirror(self, children: ["tag": tag, "suite": suite, "keys": keys, "sessionParameters": sessionParameters], displayStyle: .struct)
        }
    }

    /// The `a=crypto` lines, in order; an offer may list several, one per suite.
    public var crypto: [Crypto] {
        attributes(named: "crypto").compactMap { $0.value.flatMap { try? Crypto(attributeValue: $0) } }
    }
}

extension SessionDescription.Attribute {
    /// `a=crypto:<value>`.
    public static func crypto(_ crypto: MediaDescription.Crypto) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: "crypto", value: crypto.attributeValue)
    }
}
