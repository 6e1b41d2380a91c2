import ArgumentParser
import Foundation
import Logging

@main
struct MediaEngineCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaengine",
        abstract: "MediaEngine, a real-time media engine for Linux (Opus, VP8): command-line tools.",
        discussion: """
        Secrets stay out of the process list: give login tokens with --token-file FILE or MEDIAENGINE_TOKEN, \
        SRTP keys with --srtp-key-file FILE or MEDIAENGINE_SRTP_KEY (--token and --srtp-key still work, with a \
        warning). MEDIAENGINE_LOG_LEVEL (trace, debug, info, notice, warning, error, critical) sets how much \
        every command logs to standard error; no level logs a token, key or secret.
        """,
        version: "0.1.0",
        subcommands: [BenchGroup.self, SendCommand.self, ReceiveCommand.self, DevicesCommand.self, NetsimCommand.self, NetemCommand.self,
                      ServerCommand.self, TokenCommand.self, CallCommand.self, AnswerCommand.self, MeetingCommand.self, DemoCommand.self,
                      NetDetectCommand.self, ProcessAudioCommand.self, RTSCommand.self]
    )

    static func main() async {
        LogLevel.bootstrap()
        await main(nil)
    }
}

/// The log level of MEDIAENGINE_LOG_LEVEL, for every logger of the process.
enum LogLevel {
    /// The level the environment asks for; nil when it names none (each logger keeps its own).
    nonisolated(unsafe) private(set) static var configured: Logger.Level?

    /// Reads MEDIAENGINE_LOG_LEVEL and makes every logger write to standard error at that
    /// level (info without it). An unknown level is named in a warning and ignored.
    static func bootstrap(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let text = environment["MEDIAENGINE_LOG_LEVEL"] {
            if let level = Logger.Level(rawValue: text.lowercased()) {
                configured = level
            } else {
                printError("warning: MEDIAENGINE_LOG_LEVEL=\(text) is not one of "
                           + Logger.Level.allCases.map(\.rawValue).joined(separator: ", ") + "; ignored")
            }
        }
        let level = configured ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// `configured`, else `fallback`: for a logger whose level is set explicitly.
    static func level(or fallback: Logger.Level) -> Logger.Level { configured ?? fallback }
}
