import MediaEngine
import MediaRouting
import Signaling

/// The media plane meetings run on: the signaling side's commands handed to a
/// `ForwardingServer` (which takes them between batches, never waiting).
public final class SFUMediaPlane: MediaPlane {
    public let server: ForwardingServer

    public init(server: ForwardingServer) { self.server = server }

    public func apply(_ command: MediaPlaneCommand) {
        switch command {
        case .addLeg(let leg):
            server.apply(.addLeg(leg))
        case .removeLeg(let id):
            server.apply(.removeLeg(id))
        case .setPublishing(let leg, let publishing):
            server.apply(.setPublishing(leg: leg, publishing))
        case .setForwarding(let subscriber, let publisher, let audio, let video):
            server.apply(.setForwarding(subscriber: subscriber, publisher: publisher, audio: audio, video: video))
        case .setVideoSize(let subscriber, let publisher, let width, let height):
            server.apply(.setVideoSize(subscriber: subscriber, publisher: publisher, width: width, height: height))
        }
    }
}
