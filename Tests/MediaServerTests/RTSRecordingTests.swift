import Foundation
@testable import MediaServer
import NIOCore
import Testing
import TestSupport

/// The recording format: records whole or absent, a partial tail skipped by readers and cut
/// by the writer when it opens the file again.
struct RTSRecordingTests {
    @Test func aPartialLastRecordIsSkippedAndCutOffOnReopen() throws {
        let directory = try temporaryDirectory("rts-format")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("1-ann.rts").path
        var writer: RTSRecordingWriter? = try RTSRecordingWriter(path: path)
        try writer?.append(timestamp: 5, ByteBuffer(string: "first"))
        try writer?.append(timestamp: 9, ByteBuffer(string: ""))
        writer = nil
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(Array(bytes.prefix(8)) == [13, 0, 0, 0, 5, 0, 0, 0], "length counts the header; both little-endian")
        // A record the server was killed in the middle of: its header says 20 bytes, 3 are there.
        bytes += Data([20, 0, 0, 0, 12, 0, 0, 0, 0x61, 0x62, 0x63])
        try bytes.write(to: URL(fileURLWithPath: path))
        let read = try RTSRecording.read(path)
        #expect(read.records == [RTSRecording.Record(timestamp: 5, data: Data("first".utf8)), RTSRecording.Record(timestamp: 9, data: Data())])
        #expect(read.truncatedTail == 11)
        writer = try RTSRecordingWriter(path: path)
        try writer?.append(timestamp: 30, ByteBuffer(string: "after"))
        writer = nil
        let again = try RTSRecording.read(path)
        #expect(again.records.map(\.timestamp) == [5, 9, 30] && again.truncatedTail == 0)
    }

    @Test func whatIsNoRecordingIsNamed() throws {
        #expect(throws: RTSRecording.ReadError.self) { try RTSRecording.parse(Data("eyJhbGciOiJIUzI1NiJ9".utf8)) }
        #expect(throws: RTSRecording.ReadError.self) { try RTSRecording.parse(Data([4, 0, 0, 0, 0, 0, 0, 0])) }
        #expect(try RTSRecording.parse(Data()).records.isEmpty)
    }
}
