import Foundation
import MediaEngine

/// The state of one service of a session (NIM's `onRTS(service, status)`).
public enum RTSServiceStatus: String, Sendable, Hashable, Codable {
    /// The service can be used: data flows both ways, or the voice is connected.
    case connected
    /// The service ended (the session ended, or its connection went).
    case disconnected
}

/// One data message that arrived.
public struct RTSData: Sendable, Hashable {
    public var channelID: UInt64
    /// The session it came in, for a point-to-point session.
    public var sessionID: String?
    /// The conference it came in, for a conference.
    public var conference: String?
    /// The account that sent it.
    public var from: String
    public var data: Data

    public init(channelID: UInt64, sessionID: String?, conference: String?, from: String, data: Data) {
        self.channelID = channelID
        self.sessionID = sessionID
        self.conference = conference
        self.from = from
        self.data = data
    }
}

/// Everything of real-time sessions, in order (NIM's `NIMRTSManagerDelegate` and
/// `NIMRTSConferenceManagerDelegate`): data and the events around it.
public enum RTSEvent: Sendable, Hashable {
    /// A session request (`onRTSRequest`).
    case request(sessionID: String, channelID: UInt64, from: String, services: [RTSService], extendMessage: String?)
    /// The callee answered this side's request (`onRTSResponse`).
    case response(sessionID: String, from: String, accepted: Bool)
    /// Another device of this account answered the request (`onRTSResponsedByOther`).
    case responsedByOther(sessionID: String, accepted: Bool)
    /// A service of a session changed state (`onRTS(service, status)`).
    case serviceStatus(sessionID: String, RTSService, RTSServiceStatus)
    /// Data from another member (`onRTSReceive`, a conference's data handler).
    case data(RTSData)
    /// Control text from the other member (`onRTSControl`).
    case control(sessionID: String, from: String, String)
    /// The session ended (`onRTSTerminate`): by the other member, or by the server (`by` nil).
    case terminate(sessionID: String, by: String?, reason: RTSEndReason)
    case userJoined(channelID: UInt64, conference: String, account: String)
    case userLeft(channelID: UInt64, conference: String, account: String, reason: RTSLeaveReason)
    /// This device is out of a conference without asking (`onLeftConference(error)`).
    case leftConference(channelID: UInt64, conference: String, SignalingError)
    /// The server did not relay `count` of the messages `first...last` sent on this device's
    /// data connection (counted from 1), for the error's reason.
    case dataRefused(first: UInt64, last: UInt64, count: Int, SignalingError)
}

/// The sequence of `RTSEvent`s: one reader, nothing dropped. Data waits for the reader: when
/// more than `dataLimit` bytes of it are unread, the data connection stops reading, and the
/// server sees this device as slow (it disconnects one that stays behind); events other than
/// data are never held back.
public final class RTSEventStream: AsyncSequence, Sendable {
    public typealias Element = RTSEvent

    struct State {
        var buffer: [RTSEvent] = []
        var head = 0
        var dataBytes = 0
        var consumer: CheckedContinuation<RTSEvent?, Never>?
        var producers: [CheckedContinuation<Void, Never>] = []
        var finished = false
    }

    /// Unread data bytes before the data connection waits.
    public let dataLimit: Int
    private let state = Locked(State())

    init(dataLimit: Int = 4 * 1_048_576) {
        self.dataLimit = dataLimit
    }

    /// Adds an event without waiting.
    func push(_ event: RTSEvent) {
        let consumer: CheckedContinuation<RTSEvent?, Never>? = state.withLock { state in
            guard !state.finished else { return nil }
            if let consumer = state.consumer {
                state.consumer = nil
                return consumer
            }
            state.buffer.append(event)
            return nil
        }
        consumer?.resume(returning: event)
    }

    /// Adds data, waiting while more than `dataLimit` bytes of data are unread.
    func push(data: RTSData) async {
        while true {
            let wait: Bool = state.withLock { state in
                state.dataBytes > dataLimit && !state.finished
            }
            guard wait else { break }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.dataBytes <= dataLimit || state.finished { return true }
                    state.producers.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        let consumer: CheckedContinuation<RTSEvent?, Never>? = state.withLock { state in
            guard !state.finished else { return nil }
            if let consumer = state.consumer {
                state.consumer = nil
                return consumer
            }
            state.buffer.append(.data(data))
            state.dataBytes += data.data.count
            return nil
        }
        consumer?.resume(returning: .data(data))
    }

    /// Ends the sequence after what is buffered.
    func finish() {
        let (consumer, producers) = state.withLock { state -> (CheckedContinuation<RTSEvent?, Never>?, [CheckedContinuation<Void, Never>]) in
            state.finished = true
            let consumer = state.head == state.buffer.count ? state.consumer : nil
            if consumer != nil { state.consumer = nil }
            let producers = state.producers
            state.producers = []
            return (consumer, producers)
        }
        consumer?.resume(returning: nil)
        for producer in producers { producer.resume() }
    }

    func next() async -> RTSEvent? {
        await withCheckedContinuation { (continuation: CheckedContinuation<RTSEvent?, Never>) in
            let (event, done, producers) = state.withLock { state -> (RTSEvent?, Bool, [CheckedContinuation<Void, Never>]) in
                if state.head < state.buffer.count {
                    let event = state.buffer[state.head]
                    state.head += 1
                    if state.head > 1_024, state.head * 2 > state.buffer.count {
                        state.buffer.removeFirst(state.head)
                        state.head = 0
                    }
                    var released: [CheckedContinuation<Void, Never>] = []
                    if case .data(let data) = event {
                        state.dataBytes -= data.data.count
                        if state.dataBytes <= dataLimit {
                            released = state.producers
                            state.producers = []
                        }
                    }
                    return (event, false, released)
                }
                if state.finished { return (nil, true, []) }
                state.consumer = continuation
                return (nil, false, [])
            }
            for producer in producers { producer.resume() }
            if let event {
                continuation.resume(returning: event)
            } else if done {
                continuation.resume(returning: nil)
            }
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: RTSEventStream

        public mutating func next() async -> RTSEvent? { await stream.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }
}
