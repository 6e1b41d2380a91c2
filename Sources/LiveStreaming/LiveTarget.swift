import Foundation
import MediaEngine

/// Where a live room's stream goes: an RTMP ingest, an icecast mount, or a file.
///
/// Each kind fixes the container and codecs:
/// - `rtmp` (`rtmp://`, `rtmps://`): FLV with H.264 and AAC;
/// - `icecast` (`icecast://`, and `http://` or `https://` as an icecast source, HTTP PUT):
///   live WebM with VP8 and Opus;
/// - `file`: by extension, `.flv` (H.264/AAC), `.mp4` (fragmented H.264/AAC, so a file
///   cut off still plays) or `.webm` (VP8/Opus).
///
/// `description` never shows secrets: an RTMP stream key (the URL's last path component,
/// any query) and a URL's `user:password` read `***`.
public enum LiveTarget: Sendable, Hashable, CustomStringConvertible {
    /// An RTMP or RTMPS ingest URL ending in the stream key: `rtmp://host[:port]/app/KEY`.
    case rtmp(String)
    /// An icecast source URL with its mount: `icecast://source:PASSWORD@host[:port]/mount.webm`
    /// (`http://` and `https://` are taken as icecast sources too).
    case icecast(String)
    /// A file path ending in `.flv`, `.mp4` or `.webm`.
    case file(String)

    /// Parses a target: a URL with scheme `rtmp`, `rtmps`, `icecast`, `http`, `https` or
    /// `file`, or a plain file path.
    /// - Throws: `LiveStreamError` (code 20202) naming the problem: an unknown scheme, a URL
    ///   without a host, a bad port, an RTMP URL without a stream key, an icecast URL
    ///   without a mount, a file extension other than flv, mp4 or webm.
    public init(_ text: String) throws(LiveStreamError) {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw LiveStreamError.invalidTarget("an empty target") }
        guard let schemeEnd = text.range(of: "://") else {
            self = try Self.file(path: text)
            return
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        switch scheme {
        case "rtmp", "rtmps":
            let parts = try Self.urlParts(text)
            let components = parts.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            guard components.count >= 2, let key = components.last, !key.isEmpty, !components.first!.isEmpty else {
                throw LiveStreamError.invalidTarget("\(Self.redacted(text)): an RTMP URL needs an application and a stream key (rtmp://host/app/KEY); the stream key is empty")
            }
            self = .rtmp(text)
        case "icecast", "http", "https":
            let parts = try Self.urlParts(text)
            guard parts.path.count > 1 else {
                throw LiveStreamError.invalidTarget("\(Self.redacted(text)): an icecast URL needs a mount (icecast://source:PASSWORD@host:port/mount.webm)")
            }
            self = .icecast(text)
        case "file":
            self = try Self.file(path: String(text[schemeEnd.upperBound...]))
        default:
            let shown = scheme.isEmpty ? "an empty scheme" : "the scheme '\(scheme)'"
            throw LiveStreamError.invalidTarget("\(Self.redacted(text)): \(shown) is not a live target (rtmp, rtmps, icecast, http, https or a file)")
        }
    }

    /// The target with its stream key and password shown as `***`.
    public var description: String {
        switch self {
        case .rtmp(let url), .icecast(let url): Self.redacted(url)
        case .file(let path): path
        }
    }

    /// The container libavformat writes.
    var container: LiveContainer {
        switch self {
        case .rtmp: .flv
        case .icecast: .webm
        case .file(let path):
            switch (path as NSString).pathExtension.lowercased() {
            case "flv": .flv
            case "mp4": .mp4
            default: .webm
            }
        }
    }

    /// The codecs the container carries, which decides the encoder set an output shares.
    var family: LiveCodecFamily { container == .webm ? .vp8Opus : .h264AAC }

    /// Whether it is a file (no reconnecting: a full disk stays full).
    var isFile: Bool {
        if case .file = self { return true }
        return false
    }

    /// The URL libavformat opens: icecast's own scheme for `http(s)://` sources (`https`
    /// adds the `tls` option, see `protocolOptions`).
    var muxerURL: String {
        switch self {
        case .rtmp(let url): return url
        case .file(let path): return path
        case .icecast(let url):
            guard let end = url.range(of: "://") else { return url }
            return "icecast://" + url[end.upperBound...]
        }
    }

    /// Options for the protocol (avio_open2), beyond the read/write timeout.
    var protocolOptions: [(String, String)] {
        guard case .icecast(let url) = self else { return [] }
        var options = [("content_type", "video/webm")]
        if url.lowercased().hasPrefix("https://") { options.append(("tls", "1")) }
        return options
    }

    private static func file(path: String) throws(LiveStreamError) -> LiveTarget {
        guard !path.isEmpty, !path.hasSuffix("/") else { throw LiveStreamError.invalidTarget("'\(path)': a file target needs a file name") }
        let fileExtension = (path as NSString).pathExtension.lowercased()
        guard ["flv", "mp4", "webm"].contains(fileExtension) else {
            let shown = fileExtension.isEmpty ? "no extension" : "the extension '.\(fileExtension)'"
            throw LiveStreamError.invalidTarget("\(path): \(shown) is not a live file format (.flv, .mp4 or .webm)")
        }
        return .file(path)
    }

    /// Splits `scheme://[userinfo@]host[:port]/path` and checks the host and port.
    private static func urlParts(_ text: String) throws(LiveStreamError) -> (host: String, path: String) {
        let rest = text[text.range(of: "://")!.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let path = String(rest[authorityEnd...].prefix { $0 != "?" && $0 != "#" })
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        if authority.hasPrefix("[") {
            // An IPv6 literal: [::1]:1935.
            guard let close = authority.firstIndex(of: "]") else {
                throw LiveStreamError.invalidTarget("\(redacted(text)): an unclosed IPv6 address")
            }
            host = authority[...close]
            authority = authority[authority.index(after: close)...]
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            authority = authority[colon...]
        } else {
            authority = ""
        }
        guard !host.isEmpty, host != "[]" else { throw LiveStreamError.invalidTarget("\(redacted(text)): the URL has no host") }
        if !authority.isEmpty {
            let port = authority.dropFirst()
            guard authority.first == ":", let number = Int(port), (1...65_535).contains(number), port.allSatisfy(\.isASCII) else {
                throw LiveStreamError.invalidTarget("\(redacted(text)): the port '\(authority.dropFirst())' is not a number in 1...65535")
            }
        }
        return (String(host), path)
    }

    /// `text` with `user:password@` as `***@`, any query as `***`, for RTMP the last path
    /// component (the stream key) as `***`, and for other unknown schemes the whole path.
    static func redacted(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        let scheme = text[..<schemeEnd.lowerBound]
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = String(rest[..<authorityEnd])
        if let at = authority.lastIndex(of: "@") { authority = "***@" + authority[authority.index(after: at)...] }
        var path = String(rest[authorityEnd...])
        let isRTMP = scheme.lowercased().hasPrefix("rtmp")
        guard isRTMP || ["icecast", "http", "https"].contains(scheme.lowercased()) else {
            // An unknown scheme: where its secrets sit is unknown too.
            return "\(scheme)://\(authority)" + (path.isEmpty ? "" : path.first == "/" ? "/***" : "?***")
        }
        if let query = path.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            // Keys and tokens travel in queries too.
            path = String(path[..<query]) + "?***"
        }
        if isRTMP, let slash = path.lastIndex(of: "/") {
            let keyEnd = path.firstIndex(of: "?") ?? path.endIndex
            if slash < keyEnd, path.index(after: slash) < keyEnd {
                path.replaceSubrange(path.index(after: slash)..<keyEnd, with: "***")
            }
        }
        return "\(scheme)://\(authority)\(path)"
    }
}

/// The containers live outputs write.
enum LiveContainer: String, Sendable {
    case flv, mp4, webm

    /// libavformat's muxer name.
    var muxerName: String { rawValue }
}

/// The encoder sets live outputs share: outputs of one family take the same packets.
enum LiveCodecFamily: Sendable, Hashable, CaseIterable {
    /// H.264 (libx264) and AAC, for FLV and MP4.
    case h264AAC
    /// VP8 (libvpx) and Opus (libopus), for WebM.
    case vp8Opus
}
