import Foundation
import NIOCore

/// The server's recording of one member's data in a session or conference: every message the
/// member sent, as the server received it, one record after another:
/// `| length (4 bytes, the whole record, header included) | timestamp (4 bytes, milliseconds
/// since the channel began) | data |`, both numbers little-endian (NIM's layout).
///
/// A record is whole or absent: each goes to the file in one `writev`, and a file left with a
/// partial record at its end (the server killed in the middle of one) is cut back to its last
/// whole record when it is opened again; readers skip such a tail and say so.
public enum RTSRecording {
    public static let headerSize = 8
    /// The longest record a reader accepts: far above the largest message a member may send
    /// (50 KB), so that a length beyond it means the file is no recording, not a cut record.
    public static let maximumRecordSize = 1 << 20

    /// One record.
    public struct Record: Sendable, Hashable {
        /// Milliseconds since the channel began.
        public var timestamp: UInt32
        public var data: Data

        public init(timestamp: UInt32, data: Data) {
            self.timestamp = timestamp
            self.data = data
        }
    }

    /// What a file holds: its whole records, and the bytes of a partial one at the end.
    public struct Contents: Sendable, Hashable {
        public var records: [Record]
        /// Bytes after the last whole record (a write the server did not finish).
        public var truncatedTail: Int
    }

    /// Why a file cannot be read as a recording.
    public struct ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Reads a whole file.
    /// - Throws: `ReadError` naming the file: missing, unreadable, a directory, or a record whose
    ///   length is shorter than its header (not a recording).
    public static func read(_ path: String) throws(ReadError) -> Contents {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ReadError(message: "\(path): no such file")
        }
        guard !isDirectory.boolValue else { throw ReadError(message: "\(path): is a directory") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ReadError(message: "\(path): cannot be read (permission denied)")
        }
        return try parse(data, name: path)
    }

    /// Parses a recording's bytes.
    public static func parse(_ data: Data, name: String = "recording") throws(ReadError) -> Contents {
        var records: [Record] = []
        let (end, _) = try scan(data, name: name) { offset, length, timestamp in
            let start = data.startIndex + offset + headerSize
            records.append(Record(timestamp: timestamp, data: Data(data[start ..< start + length - headerSize])))
        }
        return Contents(records: records, truncatedTail: data.count - end)
    }

    /// Walks the records; returns where the last whole one ends and how many there are.
    static func scan(_ data: Data, name: String, _ each: (_ offset: Int, _ length: Int, _ timestamp: UInt32) -> Void = { _, _, _ in })
        throws(ReadError) -> (end: Int, count: Int) {
        var offset = 0
        var count = 0
        while data.count - offset >= headerSize {
            let base = data.startIndex + offset
            let length = Int(littleEndian32(data, at: base))
            let timestamp = littleEndian32(data, at: base + 4)
            guard length >= headerSize, length <= maximumRecordSize else {
                throw ReadError(message: "\(name): record \(count + 1) at byte \(offset) has length \(length), "
                                + (length < headerSize ? "shorter than its header" : "more than \(maximumRecordSize) bytes") + ": not a recording")
            }
            guard data.count - offset >= length else { break }
            each(offset, length, timestamp)
            offset += length
            count += 1
        }
        return (offset, count)
    }

    private static func littleEndian32(_ data: Data, at index: Data.Index) -> UInt32 {
        UInt32(data[index]) | UInt32(data[index + 1]) << 8 | UInt32(data[index + 2]) << 16 | UInt32(data[index + 3]) << 24
    }
}

/// Appends records to one member's recording file. Not thread-safe: one owner (the relay).
final class RTSRecordingWriter {
    let path: String
    private let descriptor: Int32
    private var header = [UInt8](repeating: 0, count: RTSRecording.headerSize)
    /// Records written, and bytes (headers included).
    private(set) var records = 0
    private(set) var bytes = 0

    /// Opens `path` for appending, creating it (mode 0640); an existing file's partial last
    /// record is cut off first.
    /// - Throws: `StoreError` naming the file and the system's reason.
    init(path: String) throws(StoreError) {
        self.path = path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw StoreError("\(path): cannot create the recording: \(String(cString: strerror(errno)))") }
        self.descriptor = descriptor
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_size > 0, let data = FileManager.default.contents(atPath: path) {
            let end = (try? RTSRecording.scan(data, name: path).end) ?? data.count
            if end < data.count { _ = ftruncate(descriptor, off_t(end)) }
        }
    }

    deinit { close(descriptor) }

    /// Appends one record in one system call.
    /// - Throws: `StoreError` when the write fails or is short (a full disk).
    func append(timestamp: UInt32, _ payload: ByteBuffer) throws(StoreError) {
        let length = RTSRecording.headerSize + payload.readableBytes
        let size = UInt32(truncatingIfNeeded: length).littleEndian
        let time = timestamp.littleEndian
        withUnsafeBytes(of: size) { for index in 0 ..< 4 { header[index] = $0[index] } }
        withUnsafeBytes(of: time) { for index in 0 ..< 4 { header[4 + index] = $0[index] } }
        let written = header.withUnsafeMutableBytes { head in
            payload.withUnsafeReadableBytes { body in
                withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { vectors in
                    vectors[0] = iovec(iov_base: head.baseAddress, iov_len: head.count)
                    vectors[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress), iov_len: body.count)
                    return writev(descriptor, vectors.baseAddress, 2)
                }
            }
        }
        guard written == length else {
            let reason = written < 0 ? String(cString: strerror(errno)) : "wrote \(written) of \(length) bytes"
            // Leave no partial record behind.
            if written > 0, let end = try? fileSize() { _ = ftruncate(descriptor, off_t(end - written)) }
            throw StoreError("\(path): recording write failed: \(reason)")
        }
        records += 1
        bytes += length
    }

    private func fileSize() throws -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw StoreError("fstat") }
        return Int(status.st_size)
    }
}
