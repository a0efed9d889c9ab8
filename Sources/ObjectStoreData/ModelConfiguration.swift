import BuiltInBackends
import Foundation
import ObjectStore

/// Where and how a container keeps its store.
///
/// ```swift
/// ModelConfiguration(isStoredInMemoryOnly: true)                       // memory
/// ModelConfiguration(url: URL(filePath: "trips.store"))               // SQLite (.store, .sqlite)
/// ModelConfiguration(url: URL(filePath: "trips.lmdb"))                // LMDB, by its extension
/// ModelConfiguration(url: URL(string: "postgresql://u@/db?host=/run/postgresql&schema=trips")!)
/// ModelConfiguration(url: URL(filePath: "trips.data"), storeType: "atomic")
/// ```
///
/// The store type: `storeType` when given, else `postgresql` for a `postgresql://` URL, else
/// the URL's extension (`.store`, as SwiftData names its files, and `.sqlite`, `.db`: SQLite;
/// `.lmdb`; `.atomic`), else SQLite.
public struct ModelConfiguration: Sendable, Hashable, Identifiable {
    /// The configuration's name (`default` unless given).
    public var name: String
    /// Where the store is (for an in-memory store, a URL of its own).
    public var url: URL
    /// Whether the store lives in memory only, gone when the container is.
    public var isStoredInMemoryOnly: Bool
    /// Whether contexts may save into it (false opens the store read-only).
    public var allowsSave: Bool
    /// The store type's name (`sqlite`, `lmdb`, `atomic`, `memory`, `postgresql`), when given.
    public var storeType: String?
    /// The schema this configuration holds (the container's when nil).
    public var schema: Schema?
    /// Whether migrating the store to the schema may drop data it holds (a property or model
    /// removed with values, objects a filter leaves out). By default such a migration is refused,
    /// naming every drop with its count, and the store is left as it is (`StoreMigrator.allowsDataLoss`).
    public var allowsDataLoss = false

    public var id: String { name }

    /// Where an app group's shared store would be: there are no app groups here, so `.automatic`
    /// and `.none` both mean the default location (accepted for source compatibility).
    public struct GroupContainer: Sendable, Hashable {
        let identifier: String?
        /// The app's own location.
        public static let automatic = GroupContainer(identifier: nil)
        /// No group.
        public static let none = GroupContainer(identifier: nil)
        /// A named group: refused by the container (there are none on this platform).
        public static func identifier(_ groupName: String) -> GroupContainer { GroupContainer(identifier: groupName) }
    }

    /// Which CloudKit database mirrors the store: there is no CloudKit here, so `.automatic`
    /// (which mirrors only with the entitlement) and `.none` both mean none.
    public struct CloudKitDatabase: Sendable, Hashable {
        let container: String?
        /// Mirrored only when the app has the entitlement: never, here.
        public static let automatic = CloudKitDatabase(container: nil)
        /// Not mirrored.
        public static let none = CloudKitDatabase(container: nil)
        /// A private database of a named container: refused by the container.
        public static func `private`(_ container: String) -> CloudKitDatabase { CloudKitDatabase(container: container) }
    }

    /// What the container refuses in this configuration (a group container or CloudKit
    /// database by name), or nil.
    var unsupported: String?

    /// A store at the default location (`$XDG_DATA_HOME`, else `~/.local/share`, then the
    /// program's name, `default.store`), or in memory.
    public init(_ name: String? = nil, schema: Schema? = nil, isStoredInMemoryOnly: Bool = false, allowsSave: Bool = true,
                groupContainer: GroupContainer = .automatic, cloudKitDatabase: CloudKitDatabase = .automatic) {
        self.name = name ?? "default"
        self.schema = schema
        self.isStoredInMemoryOnly = isStoredInMemoryOnly
        self.allowsSave = allowsSave
        url = isStoredInMemoryOnly ? URL(string: "memory://objectstore-data/\(UUID().uuidString)")! : Self.defaultURL(name ?? "default")
        storeType = isStoredInMemoryOnly ? "memory" : nil
        unsupported = Self.unsupported(groupContainer, cloudKitDatabase)
    }

    /// A store at the default location, or in memory.
    public init(isStoredInMemoryOnly: Bool = false) {
        self.init(nil, schema: nil, isStoredInMemoryOnly: isStoredInMemoryOnly, allowsSave: true)
    }

    /// A configuration for a store of these model types (the container's schema holds them).
    public init(for forTypes: any PersistentModel.Type..., isStoredInMemoryOnly: Bool = false) {
        self.init(schema: Schema(forTypes), isStoredInMemoryOnly: isStoredInMemoryOnly)
    }

    /// A store at `url`.
    public init(_ name: String? = nil, schema: Schema? = nil, url: URL, allowsSave: Bool = true,
                cloudKitDatabase: CloudKitDatabase = .automatic) {
        self.name = name ?? "default"
        self.schema = schema
        self.url = url
        self.allowsSave = allowsSave
        isStoredInMemoryOnly = false
        storeType = nil
        unsupported = Self.unsupported(.automatic, cloudKitDatabase)
    }

    private static func unsupported(_ group: GroupContainer, _ cloudKit: CloudKitDatabase) -> String? {
        if let name = group.identifier { return "the app group container \(name): there are no app groups on this platform" }
        if let name = cloudKit.container { return "the CloudKit container \(name): there is no CloudKit on this platform" }
        return nil
    }

    /// A store of `storeType` at `url`.
    public init(_ name: String? = nil, schema: Schema? = nil, url: URL, storeType: String, allowsSave: Bool = true) {
        self.init(name, schema: schema, url: url, allowsSave: allowsSave)
        self.storeType = storeType
        isStoredInMemoryOnly = storeType == "memory"
    }

    /// The store type's name this configuration opens: the one given, else the type of the URL's
    /// scheme, else the type an existing file's content says, else of its file extension, else the
    /// default (SQLite).
    func resolvedStoreType(in registry: StoreTypeRegistry) -> String {
        if let storeType { return storeType }
        if !url.isFileURL, let scheme = url.scheme, let type = registry.type(forScheme: scheme) { return type.name }
        // A file that is there is the store its content says (whatever its name).
        if url.isFileURL, let type = registry.detectType(at: url) { return type.name }
        // `.store`, SwiftData's default name, is the default type's here, as there.
        let fileExtension = url.pathExtension.lowercased()
        if fileExtension != "store", let type = registry.type(forExtension: fileExtension) { return type.name }
        return BuiltInBackends.defaultType.name
    }

    static func defaultURL(_ name: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_DATA_HOME"].map { URL(filePath: $0) }
            ?? URL(filePath: NSHomeDirectory()).appending(path: ".local/share")
        let program = ProcessInfo.processInfo.processName
        return base.appending(path: program).appending(path: "\(name).store")
    }
}
