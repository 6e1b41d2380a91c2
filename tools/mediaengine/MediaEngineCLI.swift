import ArgumentParser

@main
struct MediaEngineCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaengine",
        abstract: "MediaEngine, a real-time media engine for Linux (Opus, VP8): command-line tools.",
        version: "0.1.0",
        subcommands: [BenchGroup.self, SendCommand.self, ReceiveCommand.self, DevicesCommand.self, NetsimCommand.self, NetemCommand.self,
                      ServerCommand.self, TokenCommand.self, CallCommand.self, AnswerCommand.self, MeetingCommand.self, DemoCommand.self,
                      NetDetectCommand.self]
    )
}
