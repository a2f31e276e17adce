import ArgumentParser
import MobileServices
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

/// `vault-net`: the `vault` CLI with the verbs that talk HTTP (`login`, `fetch`, `logout`, `credential`,
/// `device`). `vault` executes it for those verbs; it also runs every other verb, so it is the whole CLI.
@main
struct VaultNetMain {
    static func main() async {
        ProcessHardening.apply()
        await VaultNet.main()
    }
}

struct VaultNet: AsyncParsableCommand {
    static let configuration = Root.configuration(
        networkVerbs: [Login.self, Fetch.self, Logout.self, CredentialHelper.self, Device.self])
}

// Interim conformances (the network verbs' presentation is being moved into one place per error type).
extension AuthCLIError: CLIReportable {
    var exitCode: Int32 { classification.exitCode }
    var code: String { classification.code }
    var message: String { classification.message }
    var hint: String? { classification.hint }
}

extension MobileServicesError: CLIReportable {
    package var exitCode: Int32 { classifyMobileServices(self).exitCode }
    package var code: String { classifyMobileServices(self).code }
    package var message: String { classifyMobileServices(self).message }
    package var hint: String? { classifyMobileServices(self).hint }
}

extension AuthenticationError: CLIReportable {
    package var exitCode: Int32 { classifyAuthentication(self, url: nil).exitCode }
    package var code: String { classifyAuthentication(self, url: nil).code }
    package var message: String { classifyAuthentication(self, url: nil).message }
    package var hint: String? { classifyAuthentication(self, url: nil).hint }
}
