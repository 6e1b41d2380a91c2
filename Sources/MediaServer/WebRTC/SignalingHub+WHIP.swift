import Foundation
import MediaEngine
import MediaRouting
import Signaling

/// What an HTTP request about a WebRTC session gets: a status, headers, and a body (the SDP
/// answer, or a sentence naming the problem).
public struct WebRTCHTTPReply: Sendable, Hashable {
    public var status: Int
    public var headers: [String: [String]]
    public var body: String
    public var contentType: String

    init(status: Int, headers: [String: [String]] = [:], body: String, contentType: String = "text/plain; charset=utf-8") {
        self.status = status
        self.headers = headers
        self.body = body
        self.contentType = contentType
    }

    static func refusal(_ status: Int, _ message: String) -> WebRTCHTTPReply {
        WebRTCHTTPReply(status: status, headers: status == 401 ? ["WWW-Authenticate": ["Bearer"]] : [:], body: message + "\n")
    }

    /// The status a refusal of the meeting rules maps to.
    static func refusal(_ error: SignalingError) -> WebRTCHTTPReply {
        let status = switch error.code {
        case .unauthorized: 401
        case .forbidden: 403
        case .meetingNotFound, .notInMeeting, .callNotFound: 404
        case .alreadyInMeeting, .meetingFull, .liveRoomMismatch, .meetingExists: 409
        case .serverUnavailable: 503
        case .invalidRequest: 422
        default: 400
        }
        return refusal(status, error.message)
    }
}

/// WHIP (RFC 9725) and WHEP for meetings: a WebRTC encoder publishes into a meeting, a
/// WebRTC player views one participant, each with one HTTP request carrying its SDP offer.
/// The answer's server is ICE-lite on the media port (its host candidates, complete) and
/// keys the leg with DTLS-SRTP under a certificate of the leg's own, as the DTLS server
/// (`a=setup:passive` to an `actpass` offer), so its profile order picks AEAD_AES_128_GCM.
extension SignalingHub {
    /// Largest SDP offer taken (a browser's is 3 to 8 KB).
    public static let maximumOfferSize = 64 * 1_024

    /// `POST /whip/{meeting}` (`viewing` nil) or `POST /whep/{meeting}/{account}`.
    /// - Parameters:
    ///   - authorization: The `Authorization` header: `Bearer <token>`; the token's account
    ///     is the publisher (or viewer).
    ///   - sessionPath: Where sessions live (`/whip/sessions/`), for `Location`.
    public func webRTCSession(meeting name: String, viewing: String?, authorization: String?, offer: String,
                              sessionPath: String) async -> WebRTCHTTPReply {
        let request = viewing == nil ? "WHIP" : "WHEP"
        let account: String
        let grants: Grants
        do throws(SignalingError) {
            (account, grants) = try await authority.verifyWithGrants(Self.bearer(authorization))
        } catch {
            logger.info("\(request) refused", metadata: ["reason": "\(error.message)"])
            return .refusal(401, "\(request): \(error.message)")
        }
        guard mediaPlane != nil else { return .refusal(503, "\(request): this server runs no media plane for meetings") }
        if cluster != nil, meetings.meetingID(named: name) == nil {
            return .refusal(409, "\(request): meeting '\(name)' is not hosted on this node; send the request to the node that hosts it")
        }
        let description: WebRTCDescription
        do throws(JSEPError) {
            description = try WebRTCDescription(parsing: offer)
        } catch {
            return .refusal(400, "\(request): the offer: \(error.message)")
        }
        var tracks: [WebRTCAnswerer.Track] = []
        if let viewing {
            let target: MeetingParticipant
            do throws(SignalingError) {
                target = try meetings.webRTCPublisher(viewing, in: name)
            } catch {
                return .refusal(error)
            }
            tracks.append(WebRTCAnswerer.Track(kind: .audio, ssrc: target.audioSSRC, stream: viewing, id: "\(viewing)-audio", cname: viewing))
            if let video = target.videoSSRC {
                tracks.append(WebRTCAnswerer.Track(kind: .video, ssrc: video, stream: viewing, id: "\(viewing)-video", cname: viewing,
                                                   rtxSSRC: RTXStream.ssrc(forVideo: video)))
            }
        }
        let certificate: DTLSCertificate
        do throws(DTLSError) {
            certificate = try DTLSCertificate(commonName: "mediaengine-sfu")
        } catch {
            return .refusal(503, "\(request): no DTLS certificate: \(error.message)")
        }
        var random = SystemRandomNumberGenerator()
        let ice = ICECredentials.random(using: &random)
        // The leg `joinWebRTC` below gives it (nothing is awaited between).
        let candidates = meetings.webRTCCandidates(forLeg: meetings.nextLeg)
        let local = WebRTCAnswerer.Local(iceUfrag: ice.ufrag, icePassword: ice.password, iceLite: true, fingerprint: certificate.fingerprint,
                                         candidates: candidates, candidatesComplete: true, tracks: tracks, receives: viewing == nil,
                                         dtlsRole: .server)
        let negotiation: WebRTCNegotiation
        do throws(JSEPError) {
            negotiation = try WebRTCAnswerer.answer(description, local: local)
        } catch {
            return .refusal(error.code == .malformed ? 400 : 422, "\(request): \(error.message)")
        }
        let audio = negotiation.sections.first { $0.kind == .audio }
        let video = negotiation.sections.first { $0.kind == .video }
        let audioSSRC: UInt32
        var videoSSRC: UInt32?
        var videoRIDs: ForwardingRouter.LegSetup.RIDLayers?
        let kind: MeetingRegistry.WebRTCJoin.Kind
        if let viewing {
            guard negotiation.sections.contains(where: { $0.track != nil }) else {
                return .refusal(422, "WHEP: the offer has no section that receives audio or video (a=recvonly)")
            }
            kind = .viewer(of: viewing)
            // Its own numbers, never forwarded (it is audience), distinct from the meeting's.
            audioSSRC = UInt32.random(in: 1 ... .max, using: &random)
        } else {
            guard let audio, audio.direction.takesMedia, let ssrc = audio.remoteSSRCs.first else {
                return .refusal(422, "WHIP: the offer must send Opus audio with its SSRC announced (a=sendonly or sendrecv, a=ssrc)")
            }
            kind = .publisher
            audioSSRC = ssrc
            if let video, video.direction.takesMedia {
                if let layers = MeetingRegistry.ridLayers(of: video) {
                    // Simulcast: viewers get it under an SSRC of the server's.
                    videoRIDs = layers
                    videoSSRC = UInt32.random(in: 1 ... .max, using: &random)
                } else {
                    guard let ssrc = video.remoteSSRCs.first else {
                        return .refusal(422, "WHIP: the video section must announce its SSRC (a=ssrc) or send simulcast (a=simulcast, a=rid)")
                    }
                    videoSSRC = ssrc
                }
            }
        }
        let media = ForwardingRouter.LegSetup.Media(negotiation)
        var session = ""
        for _ in 0..<4 { session += String(UInt64.random(in: 0 ... .max, using: &random), radix: 16) }
        var join = MeetingRegistry.WebRTCJoin(
            kind: kind, meeting: name, session: session, audioSSRC: audioSSRC, videoSSRC: videoSSRC,
            keying: .dtls(role: negotiation.dtlsRole, certificate: certificate, remoteFingerprints: negotiation.remoteTransport.fingerprints),
            media: media, ice: ice)
        join.videoRIDs = videoRIDs
        let outputs: [MeetingRegistry.Output]
        do throws(SignalingError) {
            (_, outputs) = try meetings.joinWebRTC(join, account: account, grants: grants, at: time)
        } catch {
            logger.info("\(request) refused", metadata: ["account": "\(account)", "reason": "\(error.message)"])
            return .refusal(error)
        }
        await perform(outputs)
        logger.info("\(request) session", metadata: ["account": "\(account)", "meeting": "\(name)"])
        var headers: [String: [String]] = ["Location": [sessionPath + session]]
        headers["Link"] = webRTCICEServers(for: account).flatMap(Self.links)
        return WebRTCHTTPReply(status: 201, headers: headers, body: negotiation.answer.text, contentType: "application/sdp")
    }

    /// `DELETE` on a session's URL: its endpoint leaves the meeting.
    public func endWebRTCSession(_ session: String, authorization: String?) async -> WebRTCHTTPReply {
        let account: String
        do throws(SignalingError) {
            account = try await authority.verify(Self.bearer(authorization))
        } catch {
            return .refusal(401, "DELETE: \(error.message)")
        }
        do throws(SignalingError) {
            let outputs = try meetings.endWebRTC(session: session, account: account, at: time)
            await perform(outputs)
            return WebRTCHTTPReply(status: 200, body: "")
        } catch {
            return .refusal(error)
        }
    }

    /// The ICE servers a WebRTC peer of the SFU is told of: the TURN server only. The
    /// server is ICE-lite and its answers carry the media port's host candidates, so a
    /// STUN entry naming that port gives the peer nothing; worse, libwebrtc (Chrome) takes
    /// every packet from a configured STUN server's address for a STUN server response, so
    /// the answers to its checks were dropped and the leg never connected.
    func webRTCICEServers(for account: String) -> [ICEServer] {
        turn.map { [$0.iceServer(for: account)] } ?? []
    }

    /// The token of an `Authorization: Bearer` header.
    static func bearer(_ header: String?) throws(SignalingError) -> String {
        guard let header, header.utf8.count <= 8_192, header.lowercased().hasPrefix("bearer ") else {
            throw SignalingError(.unauthorized, "an Authorization: Bearer <token> header is required")
        }
        return String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
    }

    /// RFC 9725 section 4.6: one `Link` per ICE server URL, TURN ones with their credentials.
    static func links(_ server: ICEServer) -> [String] {
        server.urls.map { url in
            var link = "<\(url)>; rel=\"ice-server\""
            if let username = server.username, let credential = server.credential {
                link += "; username=\"\(username)\"; credential=\"\(credential)\"; credential-type=\"password\""
            }
            return link
        }
    }
}

extension MediaDescription.Direction {
    /// Whether this side's direction takes the peer's media.
    var takesMedia: Bool { self == .sendReceive || self == .receiveOnly }
}
