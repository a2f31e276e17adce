/// `Introspect` for the provider's objects (what `gdbus introspect` and `busctl` show): the interfaces of the Secret
/// Service API 0.2 that are served (docs/SECRET-SERVICE.md) and each node's children.
extension SecretServiceProvider {
    static let standard = """
          <interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"><arg name="xml" type="s" direction="out"/></method></interface>
          <interface name="org.freedesktop.DBus.Properties">
            <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
            <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
            <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
            <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
          </interface>

        """

    static let serviceXML = """
          <interface name="org.freedesktop.Secret.Service">
            <method name="OpenSession"><arg name="algorithm" type="s" direction="in"/><arg name="input" type="v" direction="in"/><arg name="output" type="v" direction="out"/><arg name="result" type="o" direction="out"/></method>
            <method name="CreateCollection"><arg name="properties" type="a{sv}" direction="in"/><arg name="alias" type="s" direction="in"/><arg name="collection" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/><arg name="unlocked" type="ao" direction="out"/><arg name="locked" type="ao" direction="out"/></method>
            <method name="Unlock"><arg name="objects" type="ao" direction="in"/><arg name="unlocked" type="ao" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <method name="Lock"><arg name="objects" type="ao" direction="in"/><arg name="locked" type="ao" direction="out"/><arg name="Prompt" type="o" direction="out"/></method>
            <method name="GetSecrets"><arg name="items" type="ao" direction="in"/><arg name="session" type="o" direction="in"/><arg name="secrets" type="a{o(oayays)}" direction="out"/></method>
            <method name="ReadAlias"><arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="out"/></method>
            <method name="SetAlias"><arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="in"/></method>
            <property name="Collections" type="ao" access="read"/>
            <signal name="CollectionCreated"><arg name="collection" type="o"/></signal>
            <signal name="CollectionDeleted"><arg name="collection" type="o"/></signal>
            <signal name="CollectionChanged"><arg name="collection" type="o"/></signal>
          </interface>

        """

    static let collectionXML = """
          <interface name="org.freedesktop.Secret.Collection">
            <method name="Delete"><arg name="prompt" type="o" direction="out"/></method>
            <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/><arg name="results" type="ao" direction="out"/></method>
            <method name="CreateItem"><arg name="properties" type="a{sv}" direction="in"/><arg name="secret" type="(oayays)" direction="in"/><arg name="replace" type="b" direction="in"/><arg name="item" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <signal name="ItemCreated"><arg name="item" type="o"/></signal>
            <signal name="ItemDeleted"><arg name="item" type="o"/></signal>
            <signal name="ItemChanged"><arg name="item" type="o"/></signal>
            <property name="Items" type="ao" access="read"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Locked" type="b" access="read"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>

        """

    static let itemXML = """
          <interface name="org.freedesktop.Secret.Item">
            <method name="Delete"><arg name="Prompt" type="o" direction="out"/></method>
            <method name="GetSecret"><arg name="session" type="o" direction="in"/><arg name="secret" type="(oayays)" direction="out"/></method>
            <method name="SetSecret"><arg name="secret" type="(oayays)" direction="in"/></method>
            <property name="Locked" type="b" access="read"/>
            <property name="Attributes" type="a{ss}" access="readwrite"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>

        """

    /// The XML of the object at `path`, or `nil` for a path that is not one of the provider's.
    func introspection(of path: String) -> String? {
        func node(_ body: String, children: [String]) -> String {
            "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\" "
                + "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n" + Self.standard + body
                + children.map { "  <node name=\"\($0)\"/>\n" }.joined() + "</node>\n"
        }
        if path == Self.root { return node(Self.serviceXML, children: ["collection", "aliases", "session"]) }
        if path == SecretStore.collectionPrefix { return node("", children: store.collections.map { String($0.path.split(separator: "/").last!) }) }
        if path == Self.root + "/aliases" { return node("", children: ["default"]) }
        if path == Self.root + "/session" { return node("", children: sessions.keys.sorted().map { String($0.split(separator: "/").last!) }) }
        if let collection = store.collection(at: path) {
            let items = (try? store.itemsOrIndexed(in: collection, matching: [])) ?? []
            return node(Self.collectionXML, children: items.map { String($0.path.split(separator: "/").last!) })
        }
        if store.itemAddress(path) != nil { return node(Self.itemXML, children: []) }
        return nil
    }
}
