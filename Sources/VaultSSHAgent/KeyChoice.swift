import VaultSSH

/// Which keys a connection is offered, and in which order (docs/SSH-AGENT.md, "How keys are chosen").
///
/// - No bind (an older client, or a program that is not ssh): every key, in `vault ssh list`'s order.
/// - A connection forwarded to a host (a bind with the forwarding flag): only keys whose `forward` field allows it.
/// - A connection whose bind was refused (a signature that does not verify, a host key type we cannot check, a
///   malformed bind) may be a forwarded one that hides it: only keys whose `forward` field allows it, for no host.
///   OpenSSH's agent refuses every key after a failed bind; keys the user lets travel are the ones any host may use.
/// - A bound host (the last bind: the host being authenticated to): the names known_hosts gives it (``KnownHosts``:
///   for its key, or for the host certificate it presented, its principals a `@cert-authority` line accepts); keys
///   whose `hosts` patterns match one come first, keys without `hosts` after; keys meant for other hosts are left out.
enum KeyChoice {
    static func offered(
        _ keys: [SSHEntry], binds: [SessionBind], bindFailed: Bool = false, knownHosts: (SessionBind) -> KnownHosts
    ) -> [SSHEntry] {
        let forwarded = bindFailed || binds.contains(where: \.forwarded)
        let usable = forwarded ? keys.filter(\.forward) : keys
        if bindFailed { return usable.filter { $0.hosts.isEmpty } }
        guard let bound = binds.last else { return usable }
        let host = knownHosts(bound)
        let forHost = usable.filter { !$0.hosts.isEmpty && HostPattern.list($0.hosts, accepts: host.matches) }
        return forHost + usable.filter { $0.hosts.isEmpty }
    }

    /// The host of `bind` as a log shows it: a known_hosts name, else the host key's fingerprint.
    static func hostLabel(_ bind: SessionBind, _ host: KnownHosts) -> String {
        host.label ?? bind.hostKey.fingerprint
    }
}
