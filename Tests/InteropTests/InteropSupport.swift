import Foundation
import MediaEngine
import TestSupport

/// A UDP port P with P...P+3 free on loopback (audio RTP/RTCP, video RTP/RTCP).
func freePortBlock() throws -> Int {
    for _ in 0..<50 {
        let probe = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        let base = probe.localAddress.port & ~1
        probe.close()
        guard base + 3 <= 65_535 else { continue }
        let taken = (0..<4).contains { offset in
            (try? UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: base + offset))) == nil
        }
        if !taken { return base }
    }
    throw TransportError(.socketFailed, "no block of four free UDP ports found")
}

/// The tone frequency of a recorded file's first channel, skipping its first 0.3 s.
func toneFrequency(ofWAV path: String) throws -> Double? {
    let audio = try AudioFile.read(path: path)
    let channels = audio.layout.count
    let first = stride(from: 0, to: audio.samples.count, by: channels).map { audio.samples[$0] }
    return first.dropFirst(14_400).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
}

/// Seconds of audio in a recorded file.
func duration(ofWAV path: String) throws -> Double {
    Double(try AudioFile.read(path: path).samplesPerChannel) / Double(AudioFrame.sampleRate)
}

/// Frames in a Y4M file, and the size of the first.
func frames(ofY4M path: String) throws -> (count: Int, width: Int, height: Int) {
    let reader = try Y4M.Reader(path: path)
    var count = 0
    var frame = VideoFrame(width: reader.width, height: reader.height)
    while try reader.read(into: &frame) { count += 1 }
    return (count, reader.width, reader.height)
}

/// Whole 4:2:0 frames of `width` x `height` in a Y4M file being written (0 before its
/// header), from its size: each is a bare `FRAME` line and the planes.
func framesWritten(toY4M path: String, width: Int, height: Int) -> Int {
    guard let handle = FileHandle(forReadingAtPath: path) else { return 0 }
    defer { try? handle.close() }
    guard let size = try? handle.seekToEnd(), (try? handle.seek(toOffset: 0)) != nil,
          let start = try? handle.read(upToCount: 256), let end = start.firstIndex(of: UInt8(ascii: "\n")) else { return 0 }
    let header = UInt64(end - start.startIndex + 1)
    return Int((size - min(size, header)) / UInt64(6 + width * height * 3 / 2))
}

/// A random 30-byte SRTP key in the base64 (SDP, ffmpeg) and hex (GStreamer) forms.
func randomKey() -> (base64: String, hex: String) {
    let key = SRTPKeyingMaterial.random()
    return (key.base64, key.hex)
}

/// The `sent: ... frames=N ...` count printed by `mediaengine send`.
func sentVideoFrames(_ output: String) -> Int? {
    guard let range = output.range(of: "frames=") else { return nil }
    return Int(output[range.upperBound...].prefix { $0.isNumber })
}

/// Waits until some process has bound UDP `port` (read from /proc/net/udp and udp6), so a
/// test can start sending only when the receiver listens.
/// - Returns: false on timeout.
func waitUntilUDPPortIsBound(_ port: Int, timeout: Double) -> Bool {
    let needle = ":" + String(format: "%04X", port) + " "
    return eventuallyBlocking(timeout: .seconds(timeout), every: .milliseconds(50)) {
        ["/proc/net/udp", "/proc/net/udp6"].contains { table in
            // Each row's second column is local_address as HEXADDR:HEXPORT.
            let rows = ((try? String(contentsOfFile: table, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst()
            return rows.contains { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map { "\($0) ".hasSuffix(needle) } ?? false }
        }
    }
}
