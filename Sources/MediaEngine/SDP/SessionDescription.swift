/// A session description (SDP, RFC 8866, which obsoletes RFC 4566): what `mediaengine
/// send` writes for ffmpeg and GStreamer, and what `mediaengine receive --sdp` reads
/// from ffmpeg's `-sdp_file`.
///
/// ```
/// v=0
/// o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>
/// s=<session name>
/// i=  u=  e=*  p=*  c=  b=*         (optional)
/// t=<start> <stop>  r=*             (one or more)
/// z=  a=*                           (optional)
/// m=<media> <port> <proto> <fmt> ...  then i= c= b=* a=* per media section
/// ```
///
/// Parsing accepts LF or CRLF line endings, trailing blanks, blank lines and any order of
/// lines within a section; it validates the fields and the known attributes and throws
/// `SDPError` naming the line. See `init(parsing:)` for exactly what is checked.
/// Serializing (`text`) writes CRLF lines in RFC 8866 order, which ffmpeg requires.
///
/// `description` is the SDP with key material redacted; `text` is the real thing.
public struct SessionDescription: Hashable, Sendable, CustomStringConvertible {
    /// The largest text `init(parsing:)` accepts, in UTF-8 bytes.
    public static let maximumSize = 65_536
    /// The most lines `init(parsing:)` accepts.
    public static let maximumLineCount = 4_096

    /// `v=`; always 0.
    public var version: Int
    /// `o=`.
    public var origin: Origin
    /// `s=`; empty is written as `s= ` (RFC 8866 5.3).
    public var name: String
    /// `i=` session information.
    public var information: String?
    /// `u=` URI.
    public var uri: String?
    /// `e=` email addresses.
    public var emailAddresses: [String]
    /// `p=` phone numbers.
    public var phoneNumbers: [String]
    /// The session-level `c=` line, the default for media sections without their own.
    public var connection: Connection?
    /// Session-level `b=` lines.
    public var bandwidths: [Bandwidth]
    /// `t=` lines with their `r=` lines; at least one.
    public var timings: [Timing]
    /// The `z=` line, as written.
    public var timeZoneAdjustments: String?
    /// Session-level `a=` lines in order, known or not.
    public var attributes: [Attribute]
    /// Session-level `k=` and lines of unknown types.
    public var otherLines: [Line]
    /// The media sections in order.
    public var media: [MediaDescription]

    /// Creates a description; the defaults give what ffmpeg writes for a local stream.
    ///
    /// ```swift
    /// let sdp = SessionDescription(connection: .ip4("127.0.0.1"), media: [audio, video])
    /// try sdp.text.write(toFile: "out.sdp", atomically: true, encoding: .utf8)
    /// ```
    /// - Parameters:
    ///   - origin: The `o=` line.
    ///   - name: The `s=` line.
    ///   - information: An `i=` line.
    ///   - connection: The session-level `c=` line; each media section without its own
    ///     uses it.
    ///   - bandwidths: Session-level `b=` lines.
    ///   - timings: `t=` lines; `t=0 0` by default.
    ///   - attributes: Session-level `a=` lines.
    ///   - media: The media sections.
    public init(
        origin: Origin = Origin(), name: String = "MediaEngine", information: String? = nil,
        connection: Connection? = nil, bandwidths: [Bandwidth] = [], timings: [Timing] = [Timing()],
        attributes: [Attribute] = [], media: [MediaDescription] = []
    ) {
        self.version = 0
        self.origin = origin
        self.name = name
        self.information = information
        self.uri = nil
        self.emailAddresses = []
        self.phoneNumbers = []
        self.connection = connection
        self.bandwidths = bandwidths
        self.timings = timings
        self.timeZoneAdjustments = nil
        self.attributes = attributes
        self.otherLines = []
        self.media = media
    }

    /// Parses SDP text.
    ///
    /// Checked at parse time, each failure an `SDPError` whose message starts "line N: ":
    /// - size and line count (`tooLarge`), control characters, lines not of the form
    ///   `<letter>=<value>` (`malformedLine`);
    /// - `v=0` first, exactly one `o=` and `s=`, at least one `t=` (`missingField` when
    ///   absent, `unsupported` for another version);
    /// - the fields of `o=`, `c=`, `b=`, `t=`, `m=` (port 0...65535, at least 4 fields,
    ///   payload types 0...127 for RTP protocols);
    /// - a `c=` for every media section, its own or the session's (`missingField`);
    /// - the known attributes: `rtpmap`, `fmtp`, `extmap`, `ssrc`, `rtcp`, `mid` and the
    ///   direction flags (`badAttribute`), `crypto` including the key length for known
    ///   suites (`badCrypto`); duplicates that would make an accessor ambiguous (two
    ///   rtpmaps for one payload type, two directions, reused extmap IDs or crypto tags).
    ///
    /// Unknown attributes and unknown line types are kept, unvalidated. After a successful
    /// parse the typed accessors cannot fail.
    /// - Parameter text: The SDP, LF or CRLF line endings.
    /// - Throws: `SDPError`; its message never contains key material.
    public init(parsing text: String) throws(SDPError) {
        self = try SDPParser.parse(text)
    }

    /// The SDP with CRLF line endings, fields in RFC 8866 order. Contains any keys.
    ///
    /// Values are written as stored; a CR or LF inside a value is replaced by a space so
    /// no value can start a line of its own.
    public var text: String {
        SDPWriter.lines(of: self, redacting: false).map { $0 + "\r\n" }.joined()
    }

    /// The SDP with `a=crypto` keys, `a=key-mgmt` and `k=` values redacted.
    public var description: String {
        SDPWriter.lines(of: self, redacting: true).map { $0 + "\r\n" }.joined()
    }

    /// The connection `media` uses: its own `c=` line, else the session's.
    /// - Parameter media: A section of this description.
    /// - Returns: The connection, or nil when neither level has one (only possible for a
    ///   description built in code).
    public func effectiveConnection(for media: MediaDescription) -> Connection? {
        media.connection ?? connection
    }

    /// The session-level direction attribute, or nil.
    public var direction: MediaDescription.Direction? {
        attributes.lazy.compactMap { $0.value == nil ? MediaDescription.Direction(rawValue: $0.name) : nil }.first
    }

    /// The direction `media` has: its own attribute, else the session's, else `sendrecv`.
    public func effectiveDirection(for media: MediaDescription) -> MediaDescription.Direction {
        media.direction ?? direction ?? .sendReceive
    }
}
