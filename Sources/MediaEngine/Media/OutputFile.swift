import Foundation

/// Where recordings and snapshots go: files are created, their directories never.
public enum OutputFile {
    /// The directory `path` would be created in, when it does not exist (nil when it does;
    /// a bare file name is in the current directory).
    public static func missingDirectory(of path: String) -> String? {
        let directory = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory, isDirectory: &isDirectory)
        return exists && isDirectory.boolValue ? nil : directory
    }

    /// A fresh path in the temporary directory, for a recording started without one.
    static func temporary(_ name: String, extension: String) -> String {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("mediaengine-\(name)-\(Int64(Date().timeIntervalSince1970 * 1_000)).\(`extension`)").path
    }
}
