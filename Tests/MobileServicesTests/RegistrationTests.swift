import Foundation
@testable import MobileServices
import MobileServicesEmulator
import Testing
import VaultAuth
import VaultCore

/// The vault keys a registration writes, spelled out: the tests check the stored format, not the libraries'
/// constants (the credential keys are `VaultCredentialStore`'s own, and private).
enum Keys {
    static let applicationConnectionId = "appcid"
    /// The credential of the protection space `space` (`scheme://host:port/realm`), and the primary space's record.
    static func username(_ space: String) -> String { "credential/\(space)/username" }
    static func password(_ space: String) -> String { "credential/\(space)/password" }
    static let primary = "credential/primary"
    /// The earlier layout's primary credential (top level, the tutorials' keys), read and migrated.
    static let legacyUsername = "username"
    static let legacyPassword = "password"
    static let legacySpace = "credential.space"
    static let server = "mobileservices.server"
    static let applicationId = "mobileservices.appid"
}

/// One travel agency as the tutorials' app reads it (its OData model lives in Examples/DemoApp): the fields the
/// tests compare.
struct Agency: Decodable {
    let agencyNumber: String
    let name: String
    let city: String
    enum CodingKeys: String, CodingKey { case agencyNumber = "agencynum", name = "NAME", city = "CITY" }
}

extension MobileServicesClient {
    /// `GET {base}/{applicationId}/TravelAgencies` with the appcid and credentials, OData v2 `d.results`.
    func travelAgencies() async throws -> [Agency] {
        struct Collection: Decodable {
            struct Results: Decodable { let results: [Agency] }
            let d: Results
        }
        return try JSONDecoder().decode(Collection.self, from: await data(forServicePath: "TravelAgencies")).d.results
    }
}

/// The client against the real emulator on loopback.
@Suite(.timeLimit(.minutes(2))) struct RegistrationTests {
    @Test func registerStoresEverythingInOneUpdateThenStatusAndAgencies() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            let prompt = RecordingPrompt(username: "alice", password: "s3cret:with-colon")
            let client = try makeClient(emulator, store: store, prompt: prompt)
            let generationBefore = try #require(store.generation)

            let appcid = try await client.register()

            // One atomic write for username, password, appcid (and the space and configuration).
            #expect(store.generation == generationBefore + 1)
            #expect(try store.getString(Keys.applicationConnectionId) == appcid)
            let space = "http://127.0.0.1:\(emulator.port)/mobile-services"
            #expect(try store.getString(Keys.username(space)) == "alice")
            #expect(try store.getBytes(Keys.password(space)) == SecureBytes(string: "s3cret:with-colon"))
            #expect(try store.getString(Keys.primary) == space)
            #expect(try !store.contains(Keys.legacyUsername) && !store.contains(Keys.legacyPassword))
            #expect(try store.getString(Keys.server) == emulator.server)
            #expect(try store.getString(Keys.applicationId) == testAppId)
            #expect(prompt.reasons == [.noStoredCredential])

            // The server has it, with the device info of the body and the authenticated user.
            let registration = try #require(emulator.state.connection(appcid))
            #expect(registration.user == "alice")
            #expect(registration.deviceType == "x86_64")
            #expect(registration.deviceModel == "Debian GNU/Linux 12")
            #expect(emulator.state.requestCount(route: .registerConnection, status: 401) == 1)
            #expect(emulator.state.requestCount(route: .registerConnection, status: 201) == 1)

            // A new client (a new start) checks once; the agencies come with X-SMP-APPCID and credentials.
            let restarted = try makeClient(emulator, store: store, prompt: nil)
            #expect(try await restarted.verifyRegistration() == .registered)
            #expect(try await restarted.verifyRegistration() == .registered)
            #expect(emulator.state.requestCount(route: .serviceRoot) == 1)
            #expect(emulator.state.requestCount(route: .serviceRoot, status: 200) == 1)
            let agencies = try await restarted.travelAgencies()
            #expect(agencies.map(\.name) == MobileServicesEmulator.TravelAgency.all.map(\.name))
            #expect(agencies.first?.agencyNumber == "00000055")
            #expect(agencies.first?.city == "Berlin")
            #expect(emulator.state.requestCount(route: .travelAgencies) == 1)
            #expect(emulator.state.requestCount(route: .travelAgencies, status: 200) == 1)
        }
    }

    @Test func secondStartAsksNothingAndChecksExactlyOnce() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let firstPrompt = RecordingPrompt(username: "bob", password: "hunter2")
            let first = try await MobileServicesStartup.start(
                store: vault.makeStore(), passphrase: vault.passphrase, configuration: try emulator.configuration,
                prompt: firstPrompt.prompt, options: loopbackOptions, deviceInfo: testDevice, timeout: 10)
            #expect(first.outcome == .registered)
            #expect(firstPrompt.count == 1)
            first.store.close()

            emulator.state.resetRequestCounts()
            let secondPrompt = RecordingPrompt()  // declines: must not even be asked
            let store = vault.makeStore()
            let second = try await MobileServicesStartup.start(
                store: store, passphrase: vault.passphrase, configuration: nil,  // remembered in the vault
                prompt: secondPrompt.prompt, options: loopbackOptions, deviceInfo: testDevice, timeout: 10)
            #expect(second.outcome == .verified)
            #expect(second.applicationConnectionId == first.applicationConnectionId)
            #expect(secondPrompt.count == 0)
            #expect(emulator.state.requestCount(route: .serviceRoot) == 1)
            #expect(emulator.state.requestCount(route: .serviceRoot, status: 200) == 1)
            #expect(emulator.totalRequests == 1)

            // Ready: the back end answers without a further check.
            #expect(try await second.client.travelAgencies().count == 5)
            #expect(emulator.state.requestCount(route: .serviceRoot) == 1)
            #expect(emulator.totalRequests == 2)
        }
    }

    @Test func removedRegistrationIsPurgedAndTheNextStartRegistersAgain() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            let client = try makeClient(emulator, store: store, prompt: RecordingPrompt(username: "alice", password: "s3cret:with-colon"))
            let oldAppcid = try await client.register()
            store.close()

            // The administrator deletes the registration.
            #expect(emulator.state.removeConnection(oldAppcid))

            emulator.state.resetRequestCounts()
            let prompt = RecordingPrompt(username: "alice", password: "s3cret:with-colon")
            let result = try await MobileServicesStartup.start(
                store: vault.makeStore(), passphrase: vault.passphrase, prompt: prompt.prompt, options: loopbackOptions,
                deviceInfo: testDevice, timeout: 10)
            #expect(result.outcome == .reregistered)
            #expect(result.applicationConnectionId != oldAppcid)
            // The purge removed the credentials too, so the user was asked again.
            #expect(prompt.reasons == [.noStoredCredential])
            #expect(emulator.state.requestCount(route: .serviceRoot, status: 404) == 1)
            #expect(emulator.state.requestCount(route: .registerConnection, status: 201) == 1)
            #expect(emulator.state.connections.map(\.applicationConnectionId) == [result.applicationConnectionId])
            #expect(try result.client.store.getString(Keys.applicationConnectionId) == result.applicationConnectionId)
            #expect(try result.client.store.getString(Keys.username("http://127.0.0.1:\(emulator.port)/mobile-services")) == "alice")
        }
    }

    @Test func verificationPurgesOnFourOhFourInOneUpdate() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            try store.put("keep me", forKey: "unrelated")
            let client = try makeClient(emulator, store: store, prompt: RecordingPrompt(username: "alice", password: "s3cret:with-colon"))
            let appcid = try await client.register()
            #expect(emulator.state.removeConnection(appcid))

            let restarted = try makeClient(emulator, store: store, prompt: nil)
            let generation = try #require(store.generation)
            #expect(try await restarted.verifyRegistration() == .registrationRemoved)
            #expect(store.generation == generation + 1)
            let space = "http://127.0.0.1:\(emulator.port)/mobile-services"
            for key in [Keys.applicationConnectionId, Keys.username(space), Keys.password(space), Keys.primary] {
                #expect(try store.contains(key) == false, "\(key) survived the purge")
            }
            // Where to register again, and the user's other entries, stay.
            #expect(try store.getString(Keys.server) == emulator.server)
            #expect(try store.getString(Keys.applicationId) == testAppId)
            #expect(try store.getString("unrelated") == "keep me")
            #expect(try await restarted.verifyRegistration() == .notRegistered)
            #expect(emulator.state.requestCount(route: .serviceRoot) == 1)
        }
    }

    @Test func wrongPasswordIsRejectedAndNothingIsStored() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            let before = try vault.bytes()
            let prompt = RecordingPrompt([
                Credential(username: "alice", password: "wrong"), Credential(username: "alice", password: "wrong again"),
            ])
            let client = try makeClient(emulator, store: store, prompt: prompt)
            await #expect(throws: AuthenticationError.credentialsRejected(space: emulator.space, username: "alice")) {
                try await client.register()
            }
            #expect(prompt.reasons == [.noStoredCredential, .enteredCredentialRejected(username: "alice")])
            #expect(emulator.state.requestCount(route: .registerConnection, status: 401) == 3)
            #expect(emulator.state.connections.isEmpty)
            #expect(try vault.bytes() == before)
            for key in registrationKeys { #expect(try store.contains(key) == false) }
            #expect(try store.keys().allSatisfy { !$0.hasPrefix("credential/") })
        }
    }

    @Test func declinedPromptAfterARejectionReportsTheRejection() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            let before = try vault.bytes()
            let client = try makeClient(emulator, store: store, prompt: RecordingPrompt(username: "alice", password: "wrong"))
            await #expect(throws: AuthenticationError.credentialsRejected(space: emulator.space, username: "alice")) {
                try await client.register()
            }
            #expect(try vault.bytes() == before)
        }
    }

    @Test func serverDownOnRegistrationIsAClearErrorAndTheVaultIsUnchanged() async throws {
        let refusing = try RefusingLoopbackPort()
        defer { withExtendedLifetime(refusing) {} }
        let port = refusing.port
        let vault = try TestVault()
        let store = try vault.openStore()
        let before = try vault.bytes()
        let prompt = RecordingPrompt(username: "alice", password: "s3cret:with-colon")
        let client = MobileServicesClient(
            configuration: try MobileServicesConfiguration(server: "http://127.0.0.1:\(port)", applicationId: testAppId),
            store: store, prompt: prompt.prompt, options: loopbackOptions, deviceInfo: testDevice, timeout: 10)
        let error = try await #require(throws: MobileServicesError.self) { try await client.register() }
        guard case let .serverUnreachable(url, _) = error else {
            Issue.record("expected serverUnreachable, got \(error)")
            return
        }
        #expect(url == "http://127.0.0.1:\(port)/odata/applications/latest/\(testAppId)/Connections")
        #expect(error.description.hasPrefix("cannot reach the mobile-services server at 'http://127.0.0.1:\(port)/"))
        #expect(prompt.count == 0)
        #expect(try vault.bytes() == before)
    }

    @Test func serverDownOnStartupDeletesNothing() async throws {
        let vault = try TestVault()
        var server = ""
        try await withEmulator { emulator in
            server = emulator.server
            let store = try vault.openStore()
            let client = try makeClient(emulator, store: store, prompt: RecordingPrompt(username: "alice", password: "s3cret:with-colon"))
            try await client.register()
            store.close()
        }
        // The emulator is stopped now: its port refuses connections.
        let before = try vault.bytes()
        let prompt = RecordingPrompt()
        let store = vault.makeStore()
        let error = try await #require(throws: MobileServicesError.self) {
            try await MobileServicesStartup.start(
                store: store, passphrase: vault.passphrase, prompt: prompt.prompt, options: loopbackOptions,
                deviceInfo: testDevice, timeout: 10)
        }
        guard case let .serverUnreachable(url, _) = error else {
            Issue.record("expected serverUnreachable, got \(error)")
            return
        }
        #expect(url == "\(server)/\(testAppId)")
        #expect(prompt.count == 0)
        #expect(try vault.bytes() == before)
        #expect(try store.getString(Keys.username(server + "/mobile-services")) == "alice")
        #expect(try store.contains(Keys.applicationConnectionId))
    }

    @Test(arguments: [
        ("not json", "the body is not JSON"),
        ("", "the body is empty"),
        (#"{"d":{}}"#, "no string 'd.ApplicationConnectionId'"),
        (#"[1,2]"#, "no object 'd'"),
        (#"{"d":{"ApplicationConnectionId":42}}"#, "no string 'd.ApplicationConnectionId'"),
        (#"{"d":{"ApplicationConnectionId":"x')/evil"}}"#,
         "'d.ApplicationConnectionId' is empty or has characters an id cannot have"),
        (#"{"d":{"ApplicationConnectionId":""}}"#,
         "'d.ApplicationConnectionId' is empty or has characters an id cannot have"),
    ])
    func malformedCreatedBodyIsAnErrorAndNothingIsStored(body: String, detail: String) async throws {
        let server = try ScriptedServer(status: 201, body: Data(body.utf8))
        defer { server.stop() }
        let vault = try TestVault()
        let store = try vault.openStore()
        let before = try vault.bytes()
        let client = MobileServicesClient(
            configuration: try MobileServicesConfiguration(server: server.server, applicationId: testAppId),
            store: store, prompt: RecordingPrompt(username: "alice", password: "pw").prompt, options: loopbackOptions,
            deviceInfo: testDevice, timeout: 10)
        let url = "\(server.server)/odata/applications/latest/\(testAppId)/Connections"
        await #expect(throws: MobileServicesError.malformedResponse(operation: .registration, url: url, status: 201, detail: detail)) {
            try await client.register()
        }
        #expect(try vault.bytes() == before)
        for key in registrationKeys { #expect(try store.contains(key) == false) }
        #expect(try store.keys().allSatisfy { !$0.hasPrefix("credential/") })
    }

    @Test(arguments: [200, 400, 403, 500, 503])
    func otherStatusIsAnErrorNamingItAndNothingIsStored(status: Int) async throws {
        let server = try ScriptedServer(status: status, body: Data(#"{"d":{"ApplicationConnectionId":"abc"}}"#.utf8))
        defer { server.stop() }
        let vault = try TestVault()
        let store = try vault.openStore()
        let before = try vault.bytes()
        let client = MobileServicesClient(
            configuration: try MobileServicesConfiguration(server: server.server, applicationId: testAppId),
            store: store, prompt: RecordingPrompt(username: "alice", password: "pw").prompt, options: loopbackOptions,
            deviceInfo: testDevice, timeout: 10)
        let url = "\(server.server)/odata/applications/latest/\(testAppId)/Connections"
        let error = try await #require(throws: MobileServicesError.self) { try await client.register() }
        #expect(error == .unexpectedStatus(operation: .registration, url: url, status: status))
        #expect(error.description.hasPrefix("registration failed: '\(url)' answered HTTP \(status) ("))
        #expect(try vault.bytes() == before)
    }

    @Test func verificationWithAnUnexpectedStatusDeletesNothing() async throws {
        let server = try ScriptedServer(status: 500, body: Data())
        defer { server.stop() }
        let vault = try TestVault()
        let store = try vault.openStore()
        try store.update { changes in
            try changes.put("abc-123", forKey: Keys.applicationConnectionId)
            // The earlier layout: read where it is; nothing migrates without a write.
            try changes.put("alice", forKey: Keys.legacyUsername)
            try changes.put("pw", forKey: Keys.legacyPassword)
            try changes.put("http://127.0.0.1:\(server.port)/mobile-services", forKey: Keys.legacySpace)
        }
        let before = try vault.bytes()
        let client = MobileServicesClient(
            configuration: try MobileServicesConfiguration(server: server.server, applicationId: testAppId),
            store: store, prompt: nil, options: loopbackOptions, deviceInfo: testDevice, timeout: 10)
        await #expect(throws: MobileServicesError.unexpectedStatus(
            operation: .verification, url: "\(server.server)/\(testAppId)", status: 500)) {
            try await client.verifyRegistration()
        }
        #expect(try vault.bytes() == before)
    }

    @Test func plainHTTPWithoutTheOptInSendsNoCredentials() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            let before = try vault.bytes()
            let prompt = RecordingPrompt(username: "alice", password: "s3cret:with-colon")
            let client = try makeClient(emulator, store: store, prompt: prompt, options: .init())
            await #expect(throws: AuthenticationError.self) { try await client.register() }
            #expect(prompt.count == 0)
            #expect(emulator.state.requestCount(route: .registerConnection, status: 401) == 1)
            #expect(try vault.bytes() == before)
        }
    }

    @Test func unregisterDeletesOnTheServerThenRemovesTheAppcid() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            let client = try makeClient(emulator, store: store, prompt: RecordingPrompt(username: "alice", password: "s3cret:with-colon"))
            let appcid = try await client.register()
            #expect(try await client.unregister() == true)
            #expect(emulator.state.connection(appcid) == nil)
            #expect(emulator.state.requestCount(route: .deleteConnection, status: 204) == 1)
            #expect(try store.contains(Keys.applicationConnectionId) == false)
            #expect(try store.getString(Keys.username("http://127.0.0.1:\(emulator.port)/mobile-services")) == "alice")
            #expect(try await client.verifyRegistration() == .notRegistered)
            await #expect(throws: MobileServicesError.notRegistered) { try await client.unregister() }
            await #expect(throws: MobileServicesError.notRegistered) { try await client.travelAgencies() }
        }
    }

    @Test func startupRefusesARegistrationWithAnotherServer() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            let client = try makeClient(emulator, store: store, prompt: RecordingPrompt(username: "alice", password: "s3cret:with-colon"))
            try await client.register()
            let other = try MobileServicesConfiguration(server: emulator.server, applicationId: "com.example.other")
            await #expect(throws: MobileServicesError.alreadyRegistered(server: emulator.server, applicationId: testAppId)) {
                try await MobileServicesStartup.start(
                    store: store, passphrase: nil, configuration: other, prompt: nil, options: loopbackOptions)
            }
        }
    }

    @Test func startupWithoutConfigurationSaysSo() async throws {
        let vault = try TestVault()
        await #expect(throws: MobileServicesError.notConfigured) {
            try await MobileServicesStartup.start(store: vault.makeStore(), passphrase: vault.passphrase, prompt: nil)
        }
    }

    /// A hand-edited `appcid` is the client's own error, not a vault type mismatch; nothing is sent.
    @Test func malformedStoredAppcidIsInvalidStoredRegistration() async throws {
        try await withEmulator { emulator in
            let vault = try TestVault()
            let store = try vault.openStore()
            try store.put("not/an id", forKey: Keys.applicationConnectionId)
            let client = try makeClient(emulator, store: store, prompt: nil)
            await #expect(throws: MobileServicesError.invalidStoredRegistration) { try await client.verifyRegistration() }
            await #expect(throws: MobileServicesError.invalidStoredRegistration) { try await client.unregister() }
            #expect(emulator.totalRequests == 0)
        }
    }

    /// The `201` body, decoded with `Decodable`: each way it can be unreadable keeps its own detail.
    @Test(arguments: [
        ("", "the body is empty"),
        ("not json", "the body is not JSON"),
        ("[]", "no object 'd'"),
        (#"{"x":1}"#, "no object 'd'"),
        (#"{"d":5}"#, "no object 'd'"),
        (#"{"d":null}"#, "no object 'd'"),
        (#"{"d":{}}"#, "no string 'd.ApplicationConnectionId'"),
        (#"{"d":{"ApplicationConnectionId":null}}"#, "no string 'd.ApplicationConnectionId'"),
        (#"{"d":{"ApplicationConnectionId":7}}"#, "no string 'd.ApplicationConnectionId'"),
        (#"{"d":{"ApplicationConnectionId":"a b"}}"#, "'d.ApplicationConnectionId' is empty or has characters an id cannot have"),
    ])
    func createdBodyDetails(body: String, detail: String) throws {
        let url = URL(string: "https://ms.example/odata/applications/latest/app/Connections")!
        #expect(throws: MobileServicesError.malformedResponse(
            operation: .registration, url: url.absoluteString, status: 201, detail: detail)) {
            try MobileServicesClient.applicationConnectionId(fromRegistrationBody: Data(body.utf8), url: url)
        }
        #expect(try MobileServicesClient.applicationConnectionId(
            fromRegistrationBody: Data(#"{"d":{"ApplicationConnectionId":"ab-1.c_D","Other":[1]}}"#.utf8), url: url) == "ab-1.c_D")
    }
}
