import Foundation
import Testing
import VaultCore
@testable import VaultAuthCore
import VaultCredentials

@Suite("WWW-Authenticate parsing")
struct ChallengeParserTests {
    @Test func simpleBasic() {
        let challenges = AuthenticationChallenge.parse([#"Basic realm="WallyWorld""#])
        #expect(challenges == [AuthenticationChallenge(scheme: "Basic", parameters: ["realm": "WallyWorld"])])
    }

    @Test func charsetAndCaseInsensitiveSchemeAndNames() {
        let basic = BasicChallenge.first(in: [#"bAsIc REALM="foo", Charset="UTF-8""#])
        #expect(basic == BasicChallenge(realm: "foo", charset: "UTF-8"))
    }

    @Test func severalChallengesInOneField() {
        let value = #"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#
        let challenges = AuthenticationChallenge.parse([value])
        #expect(challenges.map(\.scheme) == ["Newauth", "Basic"])
        #expect(challenges[0].parameters == ["realm": "apps", "type": "1", "title": #"Login to "apps""#])
        #expect(challenges[1].parameters == ["realm": "simple"])
        #expect(BasicChallenge.first(in: [value])?.realm == "simple")
    }

    @Test func severalFieldsFirstBasicWins() {
        let fields = [#"Bearer realm="api", error="invalid_token""#, #"Basic realm="one""#, #"Basic realm="two""#]
        #expect(AuthenticationChallenge.parse(fields).map(\.scheme) == ["Bearer", "Basic", "Basic"])
        #expect(BasicChallenge.first(in: fields)?.realm == "one")
    }

    @Test func quotedRealmWithEscapesCommasAndUnicode() {
        let basic = BasicChallenge.first(in: [#"Basic realm="a \"quoted\", \\ realm — ü""#])
        #expect(basic?.realm == #"a "quoted", \ realm — ü"#)
    }

    @Test func token68AndBareSchemes() {
        let challenges = AuthenticationChallenge.parse(["Negotiate, NTLM, Custom abc+/def==, Basic realm=plain"])
        #expect(challenges.map(\.scheme) == ["Negotiate", "NTLM", "Custom", "Basic"])
        #expect(challenges[2].token68 == "abc+/def==")
        #expect(challenges[3].parameters["realm"] == "plain")
    }

    @Test func whitespaceAroundEqualsAndEmptyListElements() {
        let challenges = AuthenticationChallenge.parse([" ,  Basic   realm = \"x\" ,, charset=UTF-8 ,"])
        #expect(challenges == [AuthenticationChallenge(scheme: "Basic", parameters: ["realm": "x", "charset": "UTF-8"])])
    }

    @Test func duplicateParameterKeepsFirst() {
        #expect(BasicChallenge.first(in: [#"Basic realm="first", realm="second""#])?.realm == "first")
    }

    @Test func basicWithoutRealmHasEmptyRealm() {
        #expect(BasicChallenge.first(in: ["Basic"]) == BasicChallenge(realm: ""))
    }

    struct Junk: CustomTestStringConvertible, Sendable {
        let value: String
        let testDescription: String
        init(_ value: String, _ name: String? = nil) {
            self.value = value
            self.testDescription = name ?? value.debugDescription
        }
    }

    @Test(arguments: [
        Junk(#"Basic realm="unterminated"#),
        Junk(#"Basic realm="#),
        Junk(#"Basic realm="x" junk"#),
        Junk("Basic ;;;"),
        Junk(#"Basic"realm""#),
        Junk("\"Basic\" realm=x"),
        Junk("Basic dXNlcjpwYXNz"),
        Junk(""),
        Junk("   "),
        Junk(",,,"),
        Junk("="),
        Junk("Basic realm=\"x\\"),
        Junk(String(repeating: "Basic realm=\"", count: 1000), "1000 unterminated Basic challenges"),
        Junk(String(repeating: "a=b, ", count: 1000), "1000 parameters without a scheme"),
    ])
    func junkIsToleratedAndYieldsNoBasicChallenge(_ junk: Junk) {
        let value = junk.value
        // No crash, and no half-parsed Basic challenge that could send a credential to a wrong realm.
        #expect(BasicChallenge.first(in: [value]) == nil)
    }

    @Test func junkEndsOnlyItsOwnField() {
        let fields = [#"Basic realm="broken"#, #"Basic realm="good""#]
        #expect(BasicChallenge.first(in: fields)?.realm == "good")
        // Challenges before the junk in the same field are kept.
        #expect(BasicChallenge.first(in: [#"Basic realm="kept", Other x="unterminated"#])?.realm == "kept")
    }
}

@Suite("Protection spaces and credentials")
struct ProtectionSpaceTests {
    @Test func originNormalisesSchemeHostAndDefaultPort() throws {
        let a = try #require(Origin(URL(string: "HTTPS://Example.COM/path")!))
        #expect(a == Origin(scheme: "https", host: "example.com", port: 443))
        #expect(Origin(URL(string: "http://example.com:8080/")!)?.port == 8080)
        #expect(Origin(URL(string: "http://example.com/")!)?.port == 80)
        #expect(Origin(URL(string: "ftp://example.com/")!) == nil)
        #expect(Origin(URL(string: "/relative")!) == nil)
    }

    @Test func loopback() {
        #expect(Origin(scheme: "http", host: "127.0.0.1", port: 80).isLoopback)
        #expect(Origin(scheme: "http", host: "127.200.3.4", port: 80).isLoopback)
        #expect(Origin(scheme: "http", host: "localhost", port: 80).isLoopback)
        #expect(Origin(URL(string: "http://[::1]:8080/")!)?.isLoopback == true)
        #expect(!Origin(scheme: "http", host: "128.0.0.1", port: 80).isLoopback)
        #expect(!Origin(scheme: "http", host: "127.0.0.1.example.com", port: 80).isLoopback)
        #expect(!Origin(scheme: "http", host: "localhost.example.com", port: 80).isLoopback)
        #expect(!Origin(scheme: "http", host: "example.com", port: 80).isLoopback)
    }

    @Test func keyRoundTrips() throws {
        let spaces = [
            ProtectionSpace(origin: Origin(scheme: "https", host: "example.com", port: 443), realm: "My Realm/x%y"),
            ProtectionSpace(origin: Origin(scheme: "http", host: "::1", port: 8080), realm: ""),
            ProtectionSpace(origin: Origin(scheme: "https", host: "h", port: 1), realm: "ü \"q\""),
        ]
        #expect(spaces[0].key == "https://example.com:443/My%20Realm%2Fx%25y")
        #expect(spaces[1].key == "http://[::1]:8080/")
        for space in spaces {
            #expect(ProtectionSpace(key: space.key) == space)
        }
        for bad in ["", "https://", "ftp://h:1/r", "https://h/r", "https://h:0/r", "https://h:1/%zz", "https://H:1/r"] {
            #expect(ProtectionSpace(key: bad) == nil, "\(bad)")
        }
    }

    @Test func authorizationHeaderIsRFC7617() {
        // RFC 7617 section 2: Aladdin / open sesame.
        let credential = Credential(username: "Aladdin", password: "open sesame")
        #expect(credential.authorizationHeaderValue() == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        // RFC 7617 section 2.1: UTF-8 ("test" / "123£").
        #expect(Credential(username: "test", password: "123\u{A3}").authorizationHeaderValue() == "Basic dGVzdDoxMjPCow==")
        #expect(Credential(username: "a", password: "").authorizationHeaderValue() == "Basic YTo=")
    }

    @Test func descriptionNeverShowsThePassword() {
        let credential = Credential(username: "alice", password: "hunter2-secret")
        #expect(!"\(credential)".contains("hunter2"))
        #expect(!String(reflecting: credential).contains("hunter2"))
        #expect("\(credential)".contains("alice"))
    }

    @Test func usernameValidation() {
        #expect(throws: AuthenticationError.invalidUsername(.containsColon)) { try Credential(username: "a:b", password: "p").validate() }
        #expect(throws: AuthenticationError.invalidUsername(.empty)) { try Credential(username: "", password: "p").validate() }
        #expect(throws: AuthenticationError.invalidUsername(.containsControlCharacter)) { try Credential(username: "a\nb", password: "p").validate() }
        #expect(throws: Never.self) { try Credential(username: "älice@example.com", password: "p").validate() }
        #expect(throws: AuthenticationError.invalidUsername(.containsColon)) { try Credential.validate(username: "a:b") }
    }

    /// A password typed into the username field must not reach stderr or `--json`.
    @Test func invalidUsernameIsNotEchoed() {
        let typed = "hunter2:secret"
        do {
            try Credential.validate(username: typed)
            Issue.record("expected invalidUsername")
        } catch {
            #expect(!"\(error)".contains("hunter2"))
            #expect(!error.localizedDescription.contains("hunter2"))
            #expect(!String(reflecting: error).contains("hunter2"))
        }
    }
}
