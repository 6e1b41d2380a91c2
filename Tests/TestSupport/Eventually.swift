import Foundation

// Tests wait for what they need (a packet count, an event, a file on disk), not for a
// time that usually suffices: these two are the one way they poll, `eventually` in async
// code and `eventuallyBlocking` on a thread that may block. Each returns as soon as its
// condition holds, so a generous timeout costs nothing when things work and only bounds
// how long a broken run takes to fail. (Two names, not an overload: in async code the
// compiler would pick the blocking one for a condition that does not await.)

/// Checks `condition` every `interval` until it holds or `timeout` has passed.
///
/// Sleeps between checks by suspending, so the caller's thread stays free. The condition
/// runs in the caller's isolation, so an actor's method can poll its own state.
/// - Returns: true as soon as `condition` holds; false when it still does not at the
///   deadline (where it is checked a last time) or when the task is cancelled.
@discardableResult
public func eventually(timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(20),
                       isolation: isolated (any Actor)? = #isolation,
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        let now = ContinuousClock.now
        guard now < deadline, !Task.isCancelled else { return false }
        try? await Task.sleep(until: min(now + interval, deadline), clock: .continuous)
    }
}

/// Checks `condition` every `interval` until it holds or `timeout` has passed, blocking the
/// calling thread in between: for synchronous code (a helper called from `Heavy.run`, a
/// thread of the test's own, a media callback), never for a task on Swift's cooperative
/// threads.
/// - Returns: true as soon as `condition` holds; false when it still does not at the
///   deadline (where it is checked a last time).
@discardableResult
public func eventuallyBlocking(timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(20),
                               _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        let now = ContinuousClock.now
        guard now < deadline else { return false }
        Thread.sleep(forTimeInterval: min(interval, deadline - now) / .seconds(1))
    }
}
