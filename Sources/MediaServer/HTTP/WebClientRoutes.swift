import Foundation
import HTTPTypes
import Hummingbird

/// The web client (`Sources/MediaServer/Web`: plain HTML and JavaScript, no build step,
/// nothing fetched from elsewhere) at `GET /` and `GET /client.js`. Read once from the
/// package's resources; a missing file is a 404 naming it, not a crash.
enum WebClientRoutes {
    static let files: [(path: String, resource: String, contentType: String)] = [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/client.js", "client.js", "text/javascript; charset=utf-8"),
    ]

    static func add(to router: Router<BasicRequestContext>) {
        for file in files {
            let url = Bundle.module.resourceURL?.appendingPathComponent("Web/\(file.resource)")
            let body = url.flatMap { try? Data(contentsOf: $0) }
            router.get(RouterPath(stringLiteral: file.path)) { _, _ -> Response in
                guard let body else {
                    return Response(status: .notFound, body: .init(byteBuffer: ByteBuffer(string: "\(file.resource) is not installed next to the server\n")))
                }
                var headers = HTTPFields()
                headers[.contentType] = file.contentType
                // The page reads its token from the URL's fragment; no page it links to may see it.
                headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
                headers[.contentSecurityPolicy] = "default-src 'self'; media-src 'self' blob:; style-src 'self' 'unsafe-inline'"
                headers[.cacheControl] = "no-cache"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
            }
        }
    }
}
