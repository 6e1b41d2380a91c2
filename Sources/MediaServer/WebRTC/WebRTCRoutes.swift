import Foundation
import HTTPTypes
import Hummingbird
import Signaling

/// The HTTP routes of WHIP and WHEP (RFC 9725): `POST /whip/{meeting}`,
/// `POST /whep/{meeting}/{account}`, and `DELETE` on the session URL their `Location`
/// names. Tokens come in `Authorization` headers, never in URLs, so no log holds them.
enum WebRTCRoutes {
    static let whipSessions = "/whip/sessions/"
    static let whepSessions = "/whep/sessions/"

    static func add(to router: Router<BasicRequestContext>, hub: SignalingHub) {
        router.post("/whip/:meeting") { request, context -> Response in
            await offer(request, context, hub: hub, viewing: nil, sessionPath: whipSessions)
        }
        router.post("/whep/:meeting/:account") { request, context -> Response in
            guard let account = context.parameters.get("account")?.removingPercentEncoding else {
                return response(.refusal(400, "WHEP: the URL names no account"))
            }
            return await offer(request, context, hub: hub, viewing: account, sessionPath: whepSessions)
        }
        for path in [whipSessions, whepSessions] {
            router.delete(RouterPath(stringLiteral: path + ":session")) { request, context -> Response in
                let session = context.parameters.get("session") ?? ""
                return response(await hub.endWebRTCSession(session, authorization: request.headers[.authorization]))
            }
            // Trickle and ICE restarts (PATCH) are not taken: the server is ICE-lite and its
            // answer holds every candidate it has (RFC 9725 section 4.3.1).
            router.patch(RouterPath(stringLiteral: path + ":session")) { _, _ -> Response in
                var headers = HTTPFields()
                headers[.allow] = "DELETE"
                return Response(status: .methodNotAllowed, headers: headers)
            }
        }
    }

    private static func offer(_ request: Request, _ context: BasicRequestContext, hub: SignalingHub, viewing: String?,
                              sessionPath: String) async -> Response {
        let name = viewing == nil ? "WHIP" : "WHEP"
        guard let meeting = context.parameters.get("meeting")?.removingPercentEncoding else {
            return response(.refusal(400, "\(name): the URL names no meeting"))
        }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/sdp") == true else {
            return response(.refusal(415, "\(name): the offer must be Content-Type: application/sdp"))
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: SignalingHub.maximumOfferSize)
        } catch {
            return response(.refusal(413, "\(name): the offer is larger than \(SignalingHub.maximumOfferSize) bytes"))
        }
        guard let offer = body.getString(at: body.readerIndex, length: body.readableBytes) else {
            return response(.refusal(400, "\(name): the offer is not UTF-8 text"))
        }
        return response(await hub.webRTCSession(meeting: meeting, viewing: viewing, authorization: request.headers[.authorization],
                                                 offer: offer, sessionPath: sessionPath))
    }

    static func response(_ reply: WebRTCHTTPReply) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = reply.contentType
        for (name, values) in reply.headers.sorted(by: { $0.key < $1.key }) {
            guard let field = HTTPField.Name(name) else { continue }
            for value in values { headers.append(HTTPField(name: field, value: value)) }
        }
        return Response(status: HTTPResponse.Status(code: reply.status), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(string: reply.body)))
    }
}
