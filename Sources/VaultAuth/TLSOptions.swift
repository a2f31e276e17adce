import Foundation
import NIOSSL
import VaultSodium

/// What a server's TLS certificate must satisfy besides the system's trust store (curl's `--cacert` and
/// `--pinned-pubkey`).
///
/// - The certificate chain is always verified, with the host name (or the IP address of an address literal):
///   against the system's roots plus ``additionalTrustRoots`` (curl's `--cacert` *replaces* the system roots;
///   here they are *added*, so a private CA's certificate does not stop public servers from working).
/// - With ``pinnedPublicKeys``, the server certificate's public key (the SHA-256 of its DER
///   SubjectPublicKeyInfo) must also be one of them, after the chain verified; otherwise the connection is
///   closed before anything is sent. Pins narrow trust; they never replace verification.
public struct TLSOptions: Sendable, Equatable {
    /// Certificates trusted in addition to the system's roots.
    public let additionalTrustRoots: [NIOSSLCertificate]
    /// SHA-256 digests (32 bytes each) of the accepted SubjectPublicKeyInfo; empty: no pinning.
    public let pinnedPublicKeys: [[UInt8]]

    /// The system's roots, no pinning.
    public init() {
        additionalTrustRoots = []
        pinnedPublicKeys = []
    }

    public init(additionalTrustRoots: [NIOSSLCertificate], pinnedPublicKeys: [[UInt8]]) {
        self.additionalTrustRoots = additionalTrustRoots
        self.pinnedPublicKeys = pinnedPublicKeys
    }

    /// Reads the options as curl takes them.
    ///
    /// - Parameters:
    ///   - caCertificatesFile: a PEM file of one or more CA certificates (`--cacert`).
    ///   - pinnedPublicKey: `sha256//BASE64[;sha256//BASE64…]` (`--pinned-pubkey`; curl's other form, a key file,
    ///     is not taken).
    /// - Throws: ``AuthenticationError/invalidTLSOption(_:)`` naming the problem (never the file's content).
    public init(caCertificatesFile: String?, pinnedPublicKey: String?) throws(AuthenticationError) {
        var roots: [NIOSSLCertificate] = []
        if let path = caCertificatesFile {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw .invalidTLSOption("cannot read the CA certificate file '\(path)'")
            }
            do {
                roots = try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                throw .invalidTLSOption("'\(path)' holds no PEM certificate")
            }
            guard !roots.isEmpty else { throw .invalidTLSOption("'\(path)' holds no PEM certificate") }
        }
        var pins: [[UInt8]] = []
        if let pinnedPublicKey {
            pins = try Self.parsePins(pinnedPublicKey)
        }
        self.init(additionalTrustRoots: roots, pinnedPublicKeys: pins)
    }

    /// Parses curl's `sha256//BASE64` list (separated by `;`); each digest must be 32 bytes.
    static func parsePins(_ text: String) throws(AuthenticationError) -> [[UInt8]] {
        var pins: [[UInt8]] = []
        for item in text.split(separator: ";", omittingEmptySubsequences: false) {
            let item = item.trimmingCharacters(in: .whitespaces)
            guard item.hasPrefix("sha256//") else {
                throw .invalidTLSOption("a pinned public key is 'sha256//' followed by the base64 SHA-256 of the key")
            }
            guard let digest = Data(base64Encoded: String(item.dropFirst("sha256//".count))), digest.count == 32 else {
                throw .invalidTLSOption("a pinned public key's base64 does not decode to a 32-byte SHA-256 digest")
            }
            pins.append(Array(digest))
        }
        return pins
    }

    /// `sha256//BASE64` of a certificate's public key (curl's pin of it).
    public static func pin(of certificate: NIOSSLCertificate) throws -> String {
        "sha256//" + Data(try publicKeyDigest(of: certificate)).base64EncodedString()
    }

    /// The SHA-256 digest of the certificate's DER SubjectPublicKeyInfo.
    static func publicKeyDigest(of certificate: NIOSSLCertificate) throws -> [UInt8] {
        let spki = try certificate.extractPublicKey().toSPKIBytes()
        return spki.withUnsafeBytes { Sodium.sha256($0) }
    }

    /// `true` when no pin is set or `certificate`'s public key is one of the pins.
    func accepts(_ certificate: NIOSSLCertificate) -> Bool {
        guard !pinnedPublicKeys.isEmpty else { return true }
        guard let digest = try? Self.publicKeyDigest(of: certificate) else { return false }
        return pinnedPublicKeys.contains(digest)
    }

    /// The client context: full verification against the system roots and ``additionalTrustRoots``.
    func makeContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .fullVerification
        if !additionalTrustRoots.isEmpty {
            configuration.additionalTrustRoots = [.certificates(additionalTrustRoots)]
        }
        configuration.applicationProtocols = ["http/1.1"]
        return try NIOSSLContext(configuration: configuration)
    }
}
