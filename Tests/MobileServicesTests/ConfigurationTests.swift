import Foundation
import MobileServices
import Testing

@Suite struct ConfigurationTests {
    @Test func addressesFollowTheSeeds() throws {
        let configuration = try MobileServicesConfiguration(
            server: "https://hcpms-p12345678trial.hanatrial.ondemand.com/", applicationId: "com.sap.tutorial.demoapp")
        #expect(configuration.server == "https://hcpms-p12345678trial.hanatrial.ondemand.com")
        #expect(configuration.connectionsURL.absoluteString
            == "https://hcpms-p12345678trial.hanatrial.ondemand.com/odata/applications/latest/com.sap.tutorial.demoapp/Connections")
        #expect(configuration.connectionURL(applicationConnectionId: "ab-12").absoluteString
            == "https://hcpms-p12345678trial.hanatrial.ondemand.com/odata/applications/latest/com.sap.tutorial.demoapp/Connections('ab-12')")
        #expect(configuration.serviceRootURL.absoluteString
            == "https://hcpms-p12345678trial.hanatrial.ondemand.com/com.sap.tutorial.demoapp")
        #expect(configuration.serviceURL(path: "TravelAgencies").absoluteString
            == "https://hcpms-p12345678trial.hanatrial.ondemand.com/com.sap.tutorial.demoapp/TravelAgencies")
        let withPath = try MobileServicesConfiguration(server: "http://127.0.0.1:8080/mobile", applicationId: "a")
        #expect(withPath.serviceRootURL.absoluteString == "http://127.0.0.1:8080/mobile/a")
    }

    @Test(arguments: [
        ("ftp://example.com", "app"), ("example.com", "app"), ("https://", "app"),
        ("https://user:pw@example.com", "app"), ("https://example.com?x=1", "app"), ("https://example.com#f", "app"),
        ("https://example.com", ""), ("https://example.com", "a/b"), ("https://example.com", "a b"),
        ("https://example.com", "a')"),
    ])
    func rejectsUnusableConfigurations(server: String, applicationId: String) {
        #expect(throws: MobileServicesError.self) {
            try MobileServicesConfiguration(server: server, applicationId: applicationId)
        }
    }

    @Test func osReleaseNameAndVersion() {
        #expect(DeviceInfo.describeOSRelease("""
            PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
            NAME="Debian GNU/Linux"
            VERSION_ID="12"
            ID=debian
            """) == "Debian GNU/Linux 12")
        #expect(DeviceInfo.describeOSRelease("NAME='Arch Linux'\nID=arch\n") == "Arch Linux")
        #expect(DeviceInfo.describeOSRelease("# comment\nPRETTY_NAME=\"Some \\\"OS\\\"\"\n") == "Some \"OS\"")
        #expect(DeviceInfo.describeOSRelease("ID=x\n") == nil)
    }

    @Test func currentDeviceIsFilledFromTheHost() throws {
        let device = DeviceInfo.current()
        var names = utsname()
        uname(&names)
        let machine = withUnsafeBytes(of: &names.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(device.deviceType == machine)
        #expect(!device.deviceModel.isEmpty)
        let parts = device.userName.split(separator: "@")
        #expect(parts.count == 2)
        #expect(parts.allSatisfy { !$0.isEmpty })
        let body = try JSONEncoder().encode(device)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: String])
        #expect(Set(object.keys) == ["DeviceType", "DeviceModel", "UserName"])
    }
}
