#if canImport(Glibc)
import Glibc
#endif
import CLibFuzzer
import FuzzTargets

/// `mediaengine-fuzz TARGET [libFuzzer flags and corpus directories]`: runs one of
/// `FuzzTargets.all` under libFuzzer. `mediaengine-fuzz --list` prints the targets.
@main
enum FuzzDriver {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2, arguments[1] != "--list", arguments[1] != "-h", arguments[1] != "--help" else {
            for target in FuzzTargets.all { print("\(target.name)\t\(target.summary)") }
            exit(arguments.count >= 2 ? 0 : 2)
        }
        guard Selection.target != nil else {
            let message = "mediaengine-fuzz: no target '\(arguments[1])'; --list names them\n"
            _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            exit(2)
        }
        // libFuzzer sees the program name and everything after the target's name.
        var forwarded = ([arguments[0]] + arguments.dropFirst(2)).map { strdup($0) }
        forwarded.append(nil)
        var count = Int32(forwarded.count - 1)
        let status = forwarded.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var argv = buffer.baseAddress
            return LLVMFuzzerRunDriver(&count, &argv) { data, size in
                _ = Selection.target?.run(UnsafeRawBufferPointer(start: data, count: size))
                return 0
            }
        }
        exit(status)
    }
}

/// The target named on the command line, read once.
enum Selection {
    static let target: FuzzTarget? = CommandLine.arguments.count >= 2 ? FuzzTargets.named(CommandLine.arguments[1]) : nil
}
