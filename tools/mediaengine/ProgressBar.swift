import Foundation

/// A one-line progress bar on standard error, drawn only when standard error is a
/// terminal, so pipes and logs stay clean.
struct ProgressBar {
    private let enabled: Bool
    private let width = 30

    init(enabled: Bool = isatty(STDERR_FILENO) == 1) {
        self.enabled = enabled
    }

    func update(done: Int, total: Int, label: String) {
        guard enabled, total > 0 else { return }
        let filled = width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        var line = "\r[\(bar)] \(done)/\(total) \(label)"
        line += String(repeating: " ", count: max(0, 40 - label.count))
        if done == total { line = "\r" + String(repeating: " ", count: line.count) + "\r" }
        FileHandle.standardError.write(Data(line.utf8))
    }
}
