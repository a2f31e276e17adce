import VaultCore
#if canImport(Glibc)
import Glibc
#endif

extension SyncEngine {
    /// One sync: the engine's settings, the copy, the local vault once opened.
    final class Run {
        let engine: SyncEngine
        let copy: any VaultCopy
        let local: LocalFileStorage
        let records: SyncRecord.Place?
        private var opened: (any KeyValueVault)?
        var report = SyncReport()
        /// The local file as this attempt's merge wrote it, when the vault said (through the agent: in the merge's
        /// answer), so that it is not read again.
        var mergedFile: [UInt8]?

        init(engine: SyncEngine, copy: any VaultCopy) {
            self.engine = engine
            self.copy = copy
            self.local = LocalFileStorage(path: engine.path)
            self.records = engine.stateDirectory.map { SyncRecord.Place(directory: $0, local: engine.path) }
        }

        func vault() throws -> any KeyValueVault {
            if let opened { return opened }
            let vault = try engine.open()
            opened = vault
            return vault
        }

        func remember(_ version: StorageVersion, of localBytes: [UInt8]) {
            records?.write(SyncRecord(etag: version, localBytes: localBytes), for: localBytes, copy: copy)
        }

        func sync() async throws -> SyncReport {
            let path = engine.path
            var conditional = true
            for attempt in 1...engine.attempts {
                report.attempts = attempt
                let localBytes = try local.loadForWrite()?.bytes
                let record = localBytes.flatMap { records?.read(for: $0, copy: copy) }
                let asked = conditional ? record.map { StorageVersion($0.etag) } : nil
                var version: StorageVersion?
                var creating = false
                mergedFile = nil
                switch try await copy.fetch(ifNoneMatch: asked) {
                case .notModified:
                    guard let localBytes, asked != nil else {
                        throw SyncError.status(304, code: nil, message: "a 304 to a GET that named no version", url: copy.label)
                    }
                    if LocalFileStorage.version(of: localBytes).value == record?.localVersion { return report }
                    // This side changed since the last sync: read the copy and merge as always (the local vault is
                    // opened and checked by the merge; a copy put back here is refused, not sent).
                    conditional = false
                    continue
                case .notFound(let deletedVersion):
                    guard localBytes != nil else { throw SyncError.nothingToSync(local: path, remote: copy.label) }
                    if let record, !record.legacy, !engine.recreate {
                        throw SyncError.deletedInStore(remote: copy.label, whileSyncing: false)
                    }
                    // Open and check the local vault (format version 2, its key, MACs and rollback record; the agent
                    // reads the file again for a listing) before it is sent.
                    _ = try vault().keys()
                    version = deletedVersion
                    creating = true
                    report.merge = report.merge ?? MergeReport()
                    report.merge!.otherLacks = true
                case .object(let bytes, let objectVersion):
                    version = objectVersion
                    guard let localBytes else {
                        try adopt(bytes, version: objectVersion)
                        report.fetched = true
                        return report
                    }
                    if bytes == localBytes {
                        remember(objectVersion, of: localBytes)
                        return report
                    }
                    var merged = try merge(bytes, version: objectVersion, record: record)
                    // A key followed at an earlier attempt (whose store was refused) is followed still: said so.
                    merged.followedKey = merged.followedKey ?? report.merge?.followedKey
                    report.merge = merged
                    if !engine.dryRun, !merged.otherLacks, !merged.written {
                        // Nothing changed here and the copy holds all of it: remember the pair. (When the merge
                        // wrote, a write of another process may have followed it: the next sync looks again.)
                        remember(objectVersion, of: localBytes)
                    }
                }
                guard !engine.dryRun, report.merge?.otherLacks == true else { return report }
                guard let merged = try mergedFile ?? local.loadForWrite()?.bytes else { throw VaultError.vaultNotFound(path: path) }
                switch try await copy.store(merged, ifMatch: version) {
                case .stored(let newVersion):
                    report.pushed = true
                    report.created = creating
                    // A key change made here is in the copy now: other copies follow it; it is no longer pending.
                    if let protection = engine.rollbackProtection { DocumentVault.keyChangePublished(merged, protection: protection) }
                    if let newVersion { remember(newVersion, of: merged) }
                    return report
                case .preconditionFailed:
                    conditional = false
                    continue  // another writer came in between: read, merge, try again
                case .conflict:
                    try await engine.backOff(attempt)
                case .notFound:
                    guard engine.recreate else { throw SyncError.deletedInStore(remote: copy.label, whileSyncing: true) }
                    records?.remove(for: merged, copy: copy)
                }
            }
            throw SyncError.keptChanging(remote: copy.label, attempts: engine.attempts)
        }

        /// Merges the copy's `bytes` here (through ``SyncEngine/merging``).
        func merge(_ bytes: [UInt8], version: StorageVersion, record: SyncRecord?) throws -> MergeReport {
            let entries = try vault()
            let label = copy.label, dryRun = engine.dryRun
            do {
                return try engine.merging(label) { passphrase, acceptDeletions in
                    let (report, file) = try entries.mergeKeepingFile(
                        bytes, label: label, dryRun: dryRun, otherPassphrase: passphrase, acceptDeletions: acceptDeletions)
                    mergedFile = file
                    return report
                }
            } catch VaultError.staleKey where record.map({ !$0.legacy && $0.etag == version.value }) ?? false {
                // The copy is the very one this vault last synced with (its version), all of which this vault holds,
                // under the key a change made here since (a recipient's removal) retired at once: nothing of it to
                // merge; the change is sent.
                var behind = MergeReport()
                behind.otherLacks = true
                return behind
            }
        }

        /// No local vault: the copy becomes it, once it opens with what ``SyncEngine/open`` opens it with.
        func adopt(_ bytes: [UInt8], version: StorageVersion) throws {
            let location = copy.label
            guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: location) }
            _ = try DocumentHeader.parse(bytes, label: location, policy: engine.kdfPolicy)
            if engine.dryRun { return }
            _ = try local.replace(bytes, expecting: nil)
            do {
                _ = try vault().keys().count
            } catch {
                // It does not open with what was given: no vault is left behind, unless another process wrote one
                // there meanwhile (then it stays: it is someone's vault now).
                _ = try? local.exclusively { _ in
                    if try local.loadForWrite()?.version == LocalFileStorage.version(of: bytes) { unlink(local.path) }
                }
                throw error
            }
            remember(version, of: bytes)
        }
    }
}
