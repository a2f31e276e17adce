import Foundation
import Testing
import VaultCore
@testable import VaultImport

extension PortableVersion {
    /// Field `name` as text, or nil.
    func text(_ name: String) -> String? {
        field(name).map { String(decoding: $0.value.unprotectedBytes, as: UTF8.self) }
    }

    var names: [String] { fields.map(\.name) }
}

extension PortableEntry {
    var name: String { EntryNaming.name(of: path, prefix: nil) }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The error `body` throws, as an ``ImportError`` (a test fails when it throws nothing or something else).
func importError(_ body: () throws -> Void) -> ImportError? {
    do {
        try body()
        Issue.record("no error thrown")
        return nil
    } catch let error as ImportError {
        return error
    } catch {
        Issue.record("not an ImportError: \(error)")
        return nil
    }
}
