import MediaEngine
import Signaling

/// The media plane meetings run on: the signaling side's commands, with keys decoded,
/// handed to a `ForwardingServer` (which takes them between batches, never waiting).
public final class SFUMediaPlane: MediaPlane {
    public let server: ForwardingServer

    public init(server: ForwardingServer) { self.server = server }

    public func apply(_ command: MediaPlaneCommand) {
        switch command {
        case .addLeg(let leg):
            // The registry checked the profile; a key that does not decode leaves the leg
            // unopened, and the participant's checks go unanswered (it times out).
            guard let profile = SRTPProfile(rawValue: leg.srtpProfile),
                  let inbound = try? SRTPKeyingMaterial(profile: profile, base64: leg.inboundKey),
                  let outbound = try? SRTPKeyingMaterial(profile: profile, base64: leg.outboundKey) else { return }
            server.apply(.addLeg(ForwardingRouter.LegSetup(id: leg.id, meeting: leg.meeting, account: leg.account, publishing: leg.publishing,
                                                           audioSSRC: leg.audioSSRC, videoSSRC: leg.videoSSRC, inboundKeying: inbound,
                                                           outboundKeying: outbound,
                                                           ice: ICECredentials(ufrag: leg.iceUfrag, password: leg.icePassword))))
        case .removeLeg(let id):
            server.apply(.removeLeg(id))
        case .setPublishing(let leg, let publishing):
            server.apply(.setPublishing(leg: leg, publishing))
        case .setForwarding(let subscriber, let publisher, let audio, let video):
            server.apply(.setForwarding(subscriber: subscriber, publisher: publisher, audio: audio, video: video))
        }
    }
}
