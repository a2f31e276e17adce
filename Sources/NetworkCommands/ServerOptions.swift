import ArgumentParser
import MobileServices

/// `--server URL --app-id ID`: the mobile-services server of `device register` and the DemoApp, given together
/// once and then remembered in the vault.
package struct ServerOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "The mobile-services base URL, e.g. https://hcpms-ACCOUNT.hanatrial.ondemand.com (default: the one remembered in the vault).",
        valueName: "url"))
    package var server: String?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The application id (default: the remembered one).", valueName: "id"))
    package var applicationId: String?

    package func validate() throws {
        if (server == nil) != (applicationId == nil) { throw ValidationError("--server and --app-id go together") }
    }

    /// The configuration given on the command line, or `nil` to use the remembered one.
    package func configuration() throws -> MobileServicesConfiguration? {
        guard let server, let applicationId else { return nil }
        return try MobileServicesConfiguration(server: server, applicationId: applicationId)
    }
}
