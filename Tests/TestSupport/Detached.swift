/// Copies in storage of their own, for what a test reads out of a lock while the threads
/// that fill it go on.
///
/// A plain copy taken under the lock shares its buffer with the value left there. Reading
/// it outside the lock is safe: the next append under the lock either copies (the reader
/// still holds the buffer) or writes in place only after the reader released it. But the
/// release and the uniqueness check that order the two are atomics in the Swift runtime,
/// which is not instrumented, so ThreadSanitizer sees an unordered read and write of one
/// buffer and reports a race. A detached copy, made while the lock is held, shares nothing.
extension Array {
    public var detached: [Element] { withUnsafeBufferPointer { Array($0) } }
}

extension Dictionary {
    public var detached: [Key: Value] { Dictionary(uniqueKeysWithValues: map { ($0.key, $0.value) }) }

    /// With each array value detached too.
    public func deeplyDetached<Element>() -> [Key: [Element]] where Value == [Element] {
        Dictionary<Key, [Element]>(uniqueKeysWithValues: map { ($0.key, $0.value.detached) })
    }
}

extension Set {
    public var detached: Set<Element> { Set(Array(self)) }
}
