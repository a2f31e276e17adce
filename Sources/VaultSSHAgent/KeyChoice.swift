import VaultSSH

/// Which keys a connection is offered, and in which order (docs/SSH-AGENT.md, "How keys are chosen").
///
/// - No bind (an older client, or a program that is not ssh): every key, in `vault ssh list`'s order.
/// - A connection forwarded to a host (a bind with the forwarding flag): only keys whose `forward` field allows it.
/// - A bound host (the last bind: the host being authenticated to): the names known_hosts lists for its key; keys
///   whose `hosts` patterns match one come first, keys without `hosts` after; keys meant for other hosts are left out.
enum KeyChoice {
    static func offered(_ keys: [SSHEntry], binds: [SessionBind], knownHosts: (SSHPublicKey) -> KnownHosts) -> [SSHEntry] {
        let usable = binds.contains(where: \.forwarded) ? keys.filter(\.forward) : keys
        guard let bound = binds.last else { return usable }
        let host = knownHosts(bound.hostKey)
        let forHost = usable.filter { !$0.hosts.isEmpty && HostPattern.list($0.hosts, accepts: host.matches) }
        return forHost + usable.filter { $0.hosts.isEmpty }
    }

    /// The host of `bind` as a log shows it: a known_hosts name, else the host key's fingerprint.
    static func hostLabel(_ bind: SessionBind, _ host: KnownHosts) -> String {
        host.label ?? bind.hostKey.fingerprint
    }
}
