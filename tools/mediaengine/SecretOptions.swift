import ArgumentParser
import Foundation

/// A secret a command needs (a login token, an SRTP key), from where only its owner can
/// read it: a file (`--token-file`) or an environment variable (`MEDIAENGINE_TOKEN`).
/// The argument form (`--token`) still works but warns: every user of the machine reads
/// a command line in the process list (`ps`, /proc/PID/cmdline). No message names the
/// secret itself, only where it came from.
struct SecretSource {
    /// The argument form, e.g. "--token".
    let option: String
    /// The file form, e.g. "--token-file".
    let fileOption: String
    /// The environment variable, e.g. "MEDIAENGINE_TOKEN".
    let variable: String
    /// What it is, for messages: "login token".
    let what: String

    static let token = SecretSource(option: "--token", fileOption: "--token-file", variable: "MEDIAENGINE_TOKEN", what: "login token")
    /// PostgreSQL's password: its "argument" is the one in --store's URL.
    static let storePassword = SecretSource(option: "a password in --store's URL", fileOption: "--store-password-file",
                                            variable: "PGPASSWORD", what: "database password")
    static let srtpKey = SecretSource(option: "--srtp-key", fileOption: "--srtp-key-file", variable: "MEDIAENGINE_SRTP_KEY",
                                      what: "SRTP key")

    /// A secret file is small: a token or a key, a line.
    static let maximumFileSize = 16 * 1_024

    /// The secret from exactly one of `argument`, `file` and the environment (in that
    /// order of precedence, but giving both the argument and the file is an error); nil
    /// when none is given. Warns (on standard error) when it came from the argument, or
    /// from a file other users can read.
    /// - Throws: `ValidationError` naming the option or file: both forms given, a file
    ///   that is missing, unreadable, larger than 16 KiB, or empty; an empty variable.
    func resolve(argument: String?, file: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                 warn: (String) -> Void = printError) throws -> String? {
        if argument != nil && file != nil { throw ValidationError("\(option) and \(fileOption) cannot be combined: give one") }
        if let argument {
            warn("warning: \(option) shows the \(what) to every user of this machine (in the process list); "
                 + "use \(fileOption) FILE or \(variable) instead")
            return argument
        }
        if let file { return try read(file, warn: warn) }
        if let value = environment[variable] {
            let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { throw ValidationError("\(variable) is set but empty") }
            return trimmed
        }
        return nil
    }

    /// Like `resolve`, for a secret the command cannot go without.
    func require(argument: String?, file: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                 warn: (String) -> Void = printError) throws -> String {
        guard let secret = try resolve(argument: argument, file: file, environment: environment, warn: warn) else {
            throw ValidationError("give the \(what) with \(fileOption) FILE or \(variable) (or \(option), which other users can see)")
        }
        return secret
    }

    /// The file's content without surrounding white space.
    private func read(_ path: String, warn: (String) -> Void) throws -> String {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw ValidationError("\(fileOption) \(path): no such file")
        }
        guard attributes[.type] as? FileAttributeType != .typeDirectory else {
            throw ValidationError("\(fileOption) \(path): is a directory")
        }
        if let size = (attributes[.size] as? NSNumber)?.intValue, size > Self.maximumFileSize {
            throw ValidationError("\(fileOption) \(path): \(size) bytes, more than a \(what) (at most \(Self.maximumFileSize))")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(fileOption) \(path): cannot be read (permission denied)")
        }
        guard data.count <= Self.maximumFileSize else {
            throw ValidationError("\(fileOption) \(path): more than a \(what) (at most \(Self.maximumFileSize) bytes)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw ValidationError("\(fileOption) \(path): not UTF-8 text") }
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw ValidationError("\(fileOption) \(path): the file is empty") }
        if let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0 {
            warn("warning: \(fileOption) \(path) can be read by other users (mode \(String(mode & 0o777, radix: 8))); chmod 600 it")
        }
        return secret
    }
}
