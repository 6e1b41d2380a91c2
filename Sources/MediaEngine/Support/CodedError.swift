/// What kind of failure an error is: a name to compare against (`error.code ==
/// .ssrcCollision`) and to print. Each error type has codes of its own (`Domain`), so a
/// code of one error never equals another's; it is a struct, not an enum, so adding a
/// code breaks no caller's `switch`. Only this package defines codes.
public struct ErrorCode<Domain>: Sendable, Hashable, CustomStringConvertible {
    /// The code's words, as errors print them.
    public let name: String

    package init(_ name: String) { self.name = name }

    public var description: String { name }
}

/// The shape of the package's errors: a code and a sentence for the user that names what
/// was wrong (the value, file, device or address; never a key or a token), which is also
/// the description. Some add what they are about (a device, a path, a C status).
public protocol CodedError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    var code: ErrorCode<Self> { get }
    /// The sentence for the user.
    var message: String { get }
}

extension CodedError {
    public var description: String { message }
}
