import Foundation
import HTTPTypes
import Hummingbird

/// The web client (`Sources/MediaServer/Web`: plain HTML and JavaScript, no build step,
/// nothing fetched from elsewhere) at `GET /`, `GET /client.js` and `GET /board.js`. Read once from the
/// package's resources; a missing file is a 404 naming it, not a crash.
enum WebClientRoutes {
    static let files: [(path: String, resource: String, contentType: String)] = [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/client.js", "client.js", "text/javascript; charset=utf-8"),
        ("/board.js", "board.js", "text/javascript; charset=utf-8"),
    ]

    /// The resource bundle SwiftPM builds beside the executable (or the test bundle).
    /// Found by hand: `Bundle.module` stops the process when the bundle is missing (a binary
    /// copied without it), where a missing page should be a 404.
    static let bundleName = "MediaEngine_MediaServer.resources"

    static func webDirectory() -> URL? {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent()
        return [Bundle.main.bundleURL, executable].map { $0.appendingPathComponent(bundleName).appendingPathComponent("Web") }
            .first { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// - Parameter otherNodes: The signaling URLs of the cluster's live nodes, read as the page
    ///   is served: it may connect to them (a whiteboard hosted on another node has its data
    ///   connection there).
    static func add(to router: Router<BasicRequestContext>, otherNodes: @escaping @Sendable () async -> [String] = { [] }) {
        let directory = webDirectory()
        for file in files {
            let body = directory.flatMap { try? Data(contentsOf: $0.appendingPathComponent(file.resource)) }
            router.get(RouterPath(stringLiteral: file.path)) { _, _ -> Response in
                guard let body else {
                    return Response(status: .notFound, body: .init(byteBuffer: ByteBuffer(string: "\(file.resource) is not installed next to the server\n")))
                }
                var headers = HTTPFields()
                headers[.contentType] = file.contentType
                // The page reads its token from the URL's fragment; no page it links to may see it.
                headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
                let nodes = file.resource == "index.html" ? await otherNodes() : []
                headers[.contentSecurityPolicy] = contentSecurityPolicy(otherNodes: nodes)
                headers[.cacheControl] = "no-cache"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
            }
        }
    }

    /// The page loads nothing from elsewhere, and connects to its own server and, in a
    /// cluster, to the other nodes' WebSocket origins (those that are plain `ws://` or
    /// `wss://` host-and-port origins: nothing else reaches the header).
    static func contentSecurityPolicy(otherNodes: [String]) -> String {
        let base = "default-src 'self'; media-src 'self' blob:; style-src 'self' 'unsafe-inline'"
        let origins = otherNodes.compactMap { url -> String? in
            guard let parts = URLComponents(string: url), let scheme = parts.scheme, scheme == "ws" || scheme == "wss",
                  let named = parts.host else { return nil }
            // An IPv6 address comes bracketed or not, depending on the platform.
            let host = named.hasPrefix("[") && named.hasSuffix("]") ? String(named.dropFirst().dropLast()) : named
            guard !host.isEmpty,
                  host.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-:".unicodeScalars.contains($0)) })
            else { return nil }
            let shown = host.contains(":") ? "[\(host)]" : host
            return "\(scheme)://\(shown)" + (parts.port.map { ":\($0)" } ?? "")
        }
        guard !origins.isEmpty else { return base }
        return base + "; connect-src 'self' " + Array(Set(origins)).sorted().joined(separator: " ")
    }
}
