#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// YUV4MPEG2 (`.y4m`) files: a text header, then raw I420 frames each after a `FRAME`
/// line. Only 4:2:0 8-bit files are taken (`C420jpeg`, `C420paldv`, `C420mpeg2`, `C420`
/// or no C tag).
public enum Y4M {
    /// Largest width or height accepted, so a hostile header cannot ask for gigabytes.
    public static let maximumDimension = 16_384
    static let maximumLineLength = 1_024
    static let supportedColorspaces: Set<String> = ["420jpeg", "420paldv", "420mpeg2", "420"]

    /// Reads frames one at a time. One owner at a time. A file whose rate is unknown
    /// (`F0:0`) is read at 30 frames per second.
    public final class Reader {
        public let path: String
        public let width: Int
        public let height: Int
        /// Frame rate as numerator / denominator frames per second.
        public let frameRate: (numerator: Int, denominator: Int)
        private var file: UnsafeMutablePointer<FILE>?
        private var framesRead = 0

        /// Opens `path` and parses its header.
        /// - Throws: `MediaFileError` naming the file: `cannotOpen`, `corrupt` (bad header)
        ///   or `unsupportedFormat` (not 4:2:0 8-bit).
        public init(path: String) throws(MediaFileError) {
            self.path = path
            guard let file = fopen(path, "rb") else {
                throw MediaFileError(.cannotOpen, path: path, String(cString: strerror(errno)))
            }
            self.file = file
            guard let header = Y4M.readLine(file) else {
                fclose(file)
                throw MediaFileError(.corrupt, path: path, "no YUV4MPEG2 header line")
            }
            var tokens = header.split(separator: " ", omittingEmptySubsequences: true)
            guard tokens.first == "YUV4MPEG2" else {
                fclose(file)
                throw MediaFileError(.corrupt, path: path, "does not start with YUV4MPEG2")
            }
            tokens.removeFirst()
            var width: Int?
            var height: Int?
            var rate = (numerator: 30, denominator: 1)
            var failure: MediaFileError?
            for token in tokens {
                let value = token.dropFirst()
                switch token.first {
                case "W": width = Int(value)
                case "H": height = Int(value)
                case "F":
                    let parts = value.split(separator: ":")
                    if parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n > 0, d > 0, n <= 1_000_000, d <= 1_000_000 {
                        rate = (n, d)
                    } else if parts.count == 2, parts[0] == "0", Int(parts[1]) != nil {
                        // F0:0 (or F0:1, as GStreamer's y4menc writes without a rate): unknown; keep 30.
                    } else {
                        failure = MediaFileError(.corrupt, path: path, "frame rate '\(value)' is not N:D")
                    }
                case "C":
                    if !Y4M.supportedColorspaces.contains(String(value)) {
                        failure = MediaFileError(.unsupportedFormat, path: path,
                                                 "colourspace C\(value) is not supported; the engine takes 4:2:0 8-bit (C420jpeg)")
                    }
                default: break
                }
            }
            if failure == nil {
                if let width, let height, (1...Y4M.maximumDimension).contains(width),
                   (1...Y4M.maximumDimension).contains(height) {
                    self.width = width
                    self.height = height
                    self.frameRate = rate
                    return
                }
                failure = MediaFileError(.corrupt, path: path,
                                         "header needs W and H between 1 and \(Y4M.maximumDimension)")
            }
            fclose(file)
            throw failure!
        }

        deinit { if let file { fclose(file) } }

        /// Seconds per frame.
        public var frameDuration: Duration {
            .nanoseconds(Int64(frameRate.denominator) * 1_000_000_000 / Int64(frameRate.numerator))
        }

        /// Reads the next frame into `frame`, reshaping it to the file's size.
        /// - Returns: false at the end of the file.
        /// - Throws: `MediaFileError.corrupt` for a bad FRAME line or a truncated frame.
        public func read(into frame: inout VideoFrame) throws(MediaFileError) -> Bool {
            guard let file else { return false }
            let first = getc(file)
            if first == EOF { return false }
            ungetc(first, file)
            guard let line = Y4M.readLine(file), line.hasPrefix("FRAME") else {
                throw MediaFileError(.corrupt, path: path, "frame \(framesRead) does not start with a FRAME line")
            }
            if frame.width != width || frame.height != height || frame.strideY != width {
                frame.reshape(width: width, height: height)
            }
            let expected = frame.data.count
            let got = frame.withMutablePlanes { y, _, _ in
                fread(y.baseAddress, 1, expected, file)
            }
            guard got == expected else {
                throw MediaFileError(.corrupt, path: path, "frame \(framesRead) is truncated: \(got) of \(expected) bytes")
            }
            // From the frame index, not by summing rounded durations, so timestamps do not drift.
            frame.timestamp = .nanoseconds(Int64(framesRead) * Int64(frameRate.denominator) * 1_000_000_000
                                           / Int64(frameRate.numerator))
            framesRead += 1
            return true
        }

        /// The next frame, or nil at the end of the file.
        public func read() throws(MediaFileError) -> VideoFrame? {
            var frame = VideoFrame(width: width, height: height)
            return try read(into: &frame) ? frame : nil
        }
    }

    /// Writes frames of one size. Call `close()` to learn whether the last writes
    /// reached the disk.
    public final class Writer {
        public let path: String
        public let width: Int
        public let height: Int
        private var file: UnsafeMutablePointer<FILE>?

        /// Creates (or replaces) `path` and writes the header.
        public init(path: String, width: Int, height: Int, frameRate: Int) throws(MediaFileError) {
            self.path = path
            self.width = width
            self.height = height
            guard let file = fopen(path, "wb") else {
                throw MediaFileError(.cannotOpen, path: path, String(cString: strerror(errno)))
            }
            self.file = file
            let header = "YUV4MPEG2 W\(width) H\(height) F\(frameRate):1 Ip A1:1 C420jpeg\n"
            try put(Array(header.utf8))
        }

        deinit { if let file { fclose(file) } }

        /// Appends one frame.
        /// - Throws: `MediaFileError.writeFailed` when the size differs or the write fails.
        public func write(_ frame: VideoFrame) throws(MediaFileError) {
            guard frame.width == width, frame.height == height else {
                throw MediaFileError(.writeFailed, path: path,
                                     "frame is \(frame.width)x\(frame.height), file is \(width)x\(height)")
            }
            try put(Array("FRAME\n".utf8))
            try frame.withPlanes { (y, u, v) throws(MediaFileError) in
                try writeRows(y, rows: height, width: width, stride: frame.strideY)
                try writeRows(u, rows: frame.chromaHeight, width: frame.chromaWidth, stride: frame.strideUV)
                try writeRows(v, rows: frame.chromaHeight, width: frame.chromaWidth, stride: frame.strideUV)
            }
        }

        /// Flushes and closes the file.
        public func close() throws(MediaFileError) {
            guard let file else { return }
            self.file = nil
            guard fclose(file) == 0 else {
                throw MediaFileError(.writeFailed, path: path, String(cString: strerror(errno)))
            }
        }

        private func writeRows(_ plane: UnsafeBufferPointer<UInt8>, rows: Int, width: Int, stride: Int) throws(MediaFileError) {
            for row in 0..<rows {
                try put(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: plane[(row * stride)..<(row * stride + width)])))
            }
        }

        private func put(_ bytes: [UInt8]) throws(MediaFileError) {
            try bytes.withUnsafeBufferPointer { (buffer) throws(MediaFileError) in try put(UnsafeRawBufferPointer(buffer)) }
        }

        private func put(_ bytes: UnsafeRawBufferPointer) throws(MediaFileError) {
            guard let file else { throw MediaFileError(.writeFailed, path: path, "file is closed") }
            guard fwrite(bytes.baseAddress, 1, bytes.count, file) == bytes.count else {
                throw MediaFileError(.writeFailed, path: path, String(cString: strerror(errno)))
            }
        }
    }

    /// One header or FRAME line without its newline, or nil at EOF or when too long.
    static func readLine(_ file: UnsafeMutablePointer<FILE>) -> String? {
        var bytes: [UInt8] = []
        while bytes.count < maximumLineLength {
            let c = getc(file)
            if c == EOF { return nil }
            if c == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(UInt8(truncatingIfNeeded: c))
        }
        return nil
    }
}
