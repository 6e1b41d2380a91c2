import Foundation

/// What nginx-rtmp's log (level info) says about the publishers of a stream key.
public struct RTMPPublishers: Sendable, Equatable {
    /// Connections that published the key since the last start.
    public var published = 0
    /// Those that have disconnected.
    public var ended = 0
    /// Those that asked to delete their stream first (FFmpeg does on a clean close).
    public var endedCleanly = 0
    /// Publishing now.
    public var active: Int { published - ended }
}

extension NginxRTMP {
    /// The publishers of `key`, from the log: nginx numbers connections (`*7 publish:
    /// name='KEY'`, later `*7 deleteStream`, `*7 disconnect`).
    public func publishers(key: String) -> RTMPPublishers {
        var connections: Set<Substring> = []
        var deleted: Set<Substring> = []
        var disconnected: Set<Substring> = []
        for line in log.split(separator: "\n") {
            guard let star = line.firstIndex(of: "*") else { continue }
            let connection = line[star...].prefix { $0 != " " }
            if line.contains("publish: name='\(key)'") { connections.insert(connection) }
            if line.contains("\(connection) deleteStream") { deleted.insert(connection) }
            if line.contains("\(connection) disconnect") { disconnected.insert(connection) }
        }
        return RTMPPublishers(published: connections.count, ended: connections.intersection(disconnected).count,
                              endedCleanly: connections.intersection(disconnected).intersection(deleted).count)
    }

    /// Waits until the publishers of `key` satisfy `condition`.
    /// - Returns: false on timeout.
    public func waitForPublishers(key: String, timeout: Double, until condition: (RTMPPublishers) -> Bool) -> Bool {
        eventuallyBlocking(timeout: .seconds(timeout), every: .milliseconds(50)) { condition(publishers(key: key)) }
    }
}
