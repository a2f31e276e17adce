import Foundation

/// Header fields of a request or response, in order, names compared case-insensitively (RFC 9110 section 5.1).
public struct HTTPHeaderFields: Sendable, Equatable, Sequence {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// The first value of `name`, or `nil`.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// Adds a field (another value of a name already present is kept).
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every value of `name` with `value`, or removes them when `value` is `nil`.
    public mutating func set(_ name: String, _ value: String?) {
        remove(name)
        if let value { fields.append((name, value)) }
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }
}

/// One HTTP request: method, absolute `http`/`https` URL, header fields and an optional body.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: URL
    public var headers: HTTPHeaderFields
    public var body: [UInt8]?

    public init(method: String = "GET", url: URL, headers: HTTPHeaderFields = .init(), body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The head of one HTTP response (its body is read separately: buffered with a bound, or streamed).
public struct HTTPResponse: Sendable {
    public var statusCode: Int
    /// The URL that answered, after the redirects that were followed.
    public var url: URL
    public var headers: HTTPHeaderFields

    public init(statusCode: Int, url: URL, headers: HTTPHeaderFields = .init()) {
        self.statusCode = statusCode
        self.url = url
        self.headers = headers
    }
}
