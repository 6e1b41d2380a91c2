import Signaling

/// The per-user mutes a `meeting join` user asked for (`--mute-audio-of`, `--mute-video-of`
/// and the stdin commands), kept as preferences: a user named before they join, or while
/// they are away, is muted whenever they are in the meeting. The API refuses a mute of
/// someone not in the meeting (there is nothing to stop forwarding); the command keeps the
/// wish and applies it on their `userJoined`.
actor StandingMutes {
    enum Kind { case audio, video }

    private let manager: NetCallManager
    private var audio: Set<String>
    private var video: Set<String>

    init(manager: NetCallManager, audio: Set<String>, video: Set<String>) {
        self.manager = manager
        self.audio = audio
        self.video = video
    }

    /// Applies every preference to the participants present now (after joining).
    func applyToPresent() async {
        for participant in await manager.meetingParticipants { await apply(to: participant.account) }
    }

    /// Applies the preferences about `user`, who just joined. A refusal (they left again
    /// in between) keeps the preference for their next arrival.
    func apply(to user: String) async {
        if audio.contains(user) { try? await manager.setAudioMute(true, forUser: user) }
        if video.contains(user) { try? await manager.setVideoMute(true, forUser: user) }
    }

    /// Records a preference and applies it at once when `user` is in the meeting.
    /// - Returns: Whether `user` is in the meeting now.
    /// - Throws: The server's refusal when `user` is present (yourself, say).
    func set(_ kind: Kind, of user: String, muted: Bool) async throws(SignalingError) -> Bool {
        switch (kind, muted) {
        case (.audio, true): audio.insert(user)
        case (.audio, false): audio.remove(user)
        case (.video, true): video.insert(user)
        case (.video, false): video.remove(user)
        }
        guard await manager.meetingParticipants.contains(where: { $0.account == user }) else { return false }
        switch kind {
        case .audio: try await manager.setAudioMute(muted, forUser: user)
        case .video: try await manager.setVideoMute(muted, forUser: user)
        }
        return true
    }
}
