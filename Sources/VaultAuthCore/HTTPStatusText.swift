import Foundation

/// The reason phrases of HTTP status codes (RFC 9110), for messages: the one table of the package.
public enum HTTPStatusText {
    private static let phrases: [Int: String] = [
        200: "OK", 201: "Created", 202: "Accepted", 204: "No Content",
        301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified", 307: "Temporary Redirect",
        308: "Permanent Redirect",
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout", 409: "Conflict",
        410: "Gone", 413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type",
        429: "Too Many Requests", 500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
        503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    ]

    /// The reason phrase of `status`, e.g. `Not Found`; for a code not in the table, its class
    /// (`client error`, `server error`, `redirect`, `success`, `informational`).
    public static func reason(_ status: Int) -> String {
        if let phrase = phrases[status] { return phrase }
        if status >= 500 { return "server error" }
        if status >= 400 { return "client error" }
        if status >= 300 { return "redirect" }
        if status >= 200 { return "success" }
        return "informational"
    }
}
