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
        // libFuzzer runs itself again for -minimize_crash, -fork and -jobs, with its own
        // flags and without the target's name: the environment carries the name to it.
        let named = arguments.count >= 2 ? FuzzTargets.named(arguments[1]) : nil
        let inherited = getenv(Selection.variable).flatMap { FuzzTargets.named(String(cString: $0)) }
        if arguments.count < 2 || ["--list", "-h", "--help"].contains(arguments[1]) {
            for target in FuzzTargets.all { print("\(target.name)\t\(target.summary)") }
            exit(arguments.count >= 2 ? 0 : 2)
        }
        if named == nil && inherited == nil {
            let message = "mediaengine-fuzz: no target '\(arguments[1])'; --list names them\n"
            _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            exit(2)
        }
        if let named { setenv(Selection.variable, named.name, 1) }
        // libFuzzer sees the program name and everything after the target's name.
        var forwarded = ([arguments[0]] + arguments.dropFirst(named == nil ? 1 : 2)).map { strdup($0) }
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

/// The target named on the command line (or, in a process libFuzzer started, in the
/// environment), read once.
enum Selection {
    static let variable = "MEDIAENGINE_FUZZ_TARGET"
    static let target: FuzzTarget? = getenv(variable).flatMap { FuzzTargets.named(String(cString: $0)) }
}
