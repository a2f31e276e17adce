import ArgumentParser
import MobileServices
import VaultAuth
import VaultCommands
import VaultCore

/// `vault-net`: the `vault` CLI with the verbs that talk HTTP (`login`, `fetch`, `logout`, `credential`,
/// `device`). `vault` executes it for those verbs; it also runs every other verb, so it is the whole CLI.
@main
struct VaultNetMain {
    static func main() async {
        ProcessHardening.apply()
        Exit.classifyOther = { error in
            switch error {
            case let error as AuthCLIError: return error.classification
            case let error as MobileServicesError: return classifyMobileServices(error)
            case let error as AuthenticationError: return classifyAuthentication(error, url: nil)
            default: return nil
            }
        }
        await VaultNet.main()
    }
}

struct VaultNet: AsyncParsableCommand {
    static let configuration = Root.configuration(
        networkVerbs: [Login.self, Fetch.self, Logout.self, CredentialHelper.self, Device.self])
}
