import BenchmarkSupport
import CBaseline
import Foundation
import GRDB
import ObjectModel
import ObjectStore
import ObjectStoreData
import SQLiteStore

// The context figures of issue 9, side by side in one process: ObjectContext on a SQLite store, and
// the typed layer (`@Model`, `#Predicate`, issue 21), against GRDB 7.10 (Codable records) and a C
// loop, same rows, same settings (WAL, synchronous=NORMAL).
//
// context-bench report [objects] [rounds] : every case, `rounds` times each (median), then each case's
//                                           peak memory in a process of its own; prints a Markdown report
// context-bench case <name> <folder> [objects]
//                                         : one case in this process, then prints its peak resident bytes
//                                           (getrusage ru_maxrss); the fetch cases read the stores the
//                                           report built in <folder>

SQLiteStore.register()

// MARK: The rows

/// Ours (GRDB has a protocol of that name).
typealias FetchRequest = ObjectStore.FetchRequest
/// Foundation's (GRDB has a type of that name).
typealias SortDescriptor = Foundation.SortDescriptor

/// One entity, five attributes (Integer 64 with a fetch index, Double, String, Date, Boolean).
let model = try ManagedObjectModel(entities: [
    Entity("Item", attributes: [
        Attribute("number", .integer64), Attribute("amount", .double), Attribute("name", .string),
        Attribute("created", .date), Attribute("flag", .boolean),
    ], indexes: [FetchIndex(name: "byNumber", elements: [.init("number")])]),
])

/// The values of row `key` of `count`, as the C loop makes them (`cbaseline_insert_loop`): `number`
/// is a permutation of 0..<count, so `number < count / 100` selects 1 % of the rows, spread over the table.
func number(_ key: Int64, of count: Int) -> Int64 { key * 7919 % Int64(count) }
func amount(_ key: Int64) -> Double { Double(key) / 3 }
func name(_ key: Int64) -> String { "item \(key)" }
func created(_ key: Int64) -> Date { Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(key)) }
func flag(_ key: Int64) -> Bool { key % 2 == 1 }

/// The same row for GRDB: a Codable record, dates stored as seconds since 2001 as ours are.
struct Item: Codable, FetchableRecord, PersistableRecord {
    var id: Int64
    var number: Int64
    var amount: Double
    var name: String
    var created: Date
    var flag: Bool

    static let databaseTableName = "item"
    static let databaseDateEncodingStrategy = DatabaseDateEncodingStrategy.timeIntervalSinceReferenceDate
    static let databaseDateDecodingStrategy = DatabaseDateDecodingStrategy.timeIntervalSinceReferenceDate
}

/// The same entity as a typed model (entity `Item`, its own store file).
enum Typed {
    @Model
    final class Item {
        #Index<Item>([\.number])
        var number: Int64
        var amount: Double
        var name: String
        var created: Date
        var flag: Bool

        init(number: Int64, amount: Double, name: String, created: Date, flag: Bool) {
            self.number = number
            self.amount = amount
            self.name = name
            self.created = created
            self.flag = flag
        }
    }
}

// MARK: The cases

struct Stores {
    let folder: URL
    let count: Int
    var ours: URL { folder.appending(path: "ours.sqlite") }
    var grdb: URL { folder.appending(path: "grdb.sqlite") }
    var c: URL { folder.appending(path: "c.sqlite") }
    var typed: URL { folder.appending(path: "typed.sqlite") }
    /// The predicate on the indexed attribute: 1 % of the rows.
    var threshold: Int64 { Int64(count / 100) }
    var indexedRequest: FetchRequest {
        FetchRequest(entity: "Item", predicate: .compare("number", .lessThan, .integer(threshold)))
    }

    func removeAll() {
        for url in [ours, grdb, c, typed] { try? SQLiteStoreType().destroy(at: url) }
    }

    func openGRDB() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.journalMode = .wal   // and synchronous = NORMAL, as GRDB sets it with WAL
        return try DatabaseQueue(path: grdb.path, configuration: configuration)
    }

    func openOurs() throws -> (StoreCoordinator, ObjectContext) {
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(type: "sqlite", at: ours)   // WAL, synchronous = NORMAL by default
        return (coordinator, ObjectContext(coordinator: coordinator))
    }

    // Inserts: each into a new, empty store; only the inserts and the commit are timed.

    func insertOurs() throws -> Double {
        try? SQLiteStoreType().destroy(at: ours)
        let (coordinator, context) = try openOurs()
        defer { for store in coordinator.stores { try? coordinator.removeStore(store) } }
        return try seconds {
            for key in 1...Int64(count) {
                let item = try context.insert("Item")
                try item.set("number", number(key, of: count))
                try item.set("amount", amount(key))
                try item.set("name", name(key))
                try item.set("created", created(key))
                try item.set("flag", flag(key))
            }
            try context.save()
        }
    }

    /// The typed layer: `@Model` objects inserted into a `ModelContext`, one save.
    func insertTyped() throws -> Double {
        try? SQLiteStoreType().destroy(at: typed)
        let context = ModelContext(try ModelContainer(for: Typed.Item.self, configurations: ModelConfiguration(url: typed)))
        return try seconds {
            for key in 1...Int64(count) {
                context.insert(Typed.Item(number: number(key, of: count), amount: amount(key), name: name(key), created: created(key), flag: flag(key)))
            }
            try context.save()
        }
    }

    /// A typed fetch of every model, or of those `#Predicate` selects by the index, on a warm
    /// store; each time in a new context, so that every model is made anew.
    func fetchTyped(_ filter: Bool, expecting expected: Int) throws -> Double {
        let container = try ModelContainer(for: Typed.Item.self, configurations: ModelConfiguration(url: typed))
        let threshold = self.threshold
        let descriptor = FetchDescriptor<Typed.Item>(predicate: filter ? #Predicate { $0.number < threshold } : nil)
        _ = try ModelContext(container).fetch(descriptor)
        let context = ModelContext(container)
        var items: [Typed.Item] = []
        let time = try seconds { items = try context.fetch(descriptor) }
        guard items.count == expected, items.allSatisfy({ !$0.name.isEmpty }) else { throw failure("the typed fetch gave \(items.count) models, not \(expected)") }
        return time
    }

    func typedPlan() throws -> [String] {
        let threshold = self.threshold
        let context = ModelContext(try ModelContainer(for: Typed.Item.self, configurations: ModelConfiguration(url: typed)))
        return try context.queryPlan(FetchDescriptor<Typed.Item>(predicate: #Predicate { $0.number < threshold }))
    }

    func insertGRDB() throws -> Double {
        try? SQLiteStoreType().destroy(at: grdb)
        let queue = try openGRDB()
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE item (id INTEGER PRIMARY KEY, number INTEGER, amount REAL, name TEXT, created REAL, flag INTEGER);
                CREATE INDEX item_number ON item (number)
                """)
        }
        defer { try? queue.close() }
        return try seconds {
            try queue.write { db in
                for key in 1...Int64(count) {
                    try Item(id: key, number: number(key, of: count), amount: amount(key), name: name(key),
                             created: created(key), flag: flag(key)).insert(db)
                }
            }
        }
    }

    /// The floor: C binds the same values to a prepared INSERT into a store of our layout.
    func insertC() throws -> Double {
        try? SQLiteStoreType().destroy(at: c)
        try SQLiteStoreType().open(at: c, model: model, options: StoreOptions()).close()
        var error = [CChar](repeating: 0, count: 512)
        var rows: Int64 = 0
        let time = seconds {
            rows = cbaseline_insert_loop(
                c.path, "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNUMBER, ZAMOUNT, ZNAME, ZCREATED, ZFLAG) VALUES (?1, 1, 1, ?2, ?3, ?4, ?5, ?6)",
                Int64(count), "UPDATE Z_PRIMARYKEY SET Z_MAX = \(count) WHERE Z_ENT = 1", &error, Int32(error.count))
        }
        guard rows == count else { throw failure("C insert loop", error) }
        return time
    }

    // Fetches: every object, then the 1 % the predicate selects, on a warm connection: each side runs the
    // fetch once untimed (the first statement of a connection reads the schema), then again; ours on a
    // context emptied in between (`reset()`), so that every object is made anew.

    func fetchOurs(_ request: FetchRequest, expecting expected: Int) throws -> Double {
        let (coordinator, context) = try openOurs()
        defer { for store in coordinator.stores { try? coordinator.removeStore(store) } }
        _ = try context.fetch(request)
        context.reset()
        var objects: [ManagedObject] = []
        let time = try seconds { objects = try context.fetch(request) }
        guard objects.count == expected, objects.allSatisfy({ $0["name"] != nil }) else {
            throw failure("ObjectContext fetched \(objects.count) objects, not \(expected)")
        }
        return time
    }

    func fetchGRDB(_ filter: Bool, expecting expected: Int) throws -> Double {
        let queue = try openGRDB()
        defer { try? queue.close() }
        let fetch = { try queue.read { db in filter ? try Item.filter(Column("number") < threshold).fetchAll(db) : try Item.fetchAll(db) } }
        _ = try fetch()
        var items: [Item] = []
        let time = try seconds { items = try fetch() }
        guard items.count == expected else { throw failure("GRDB fetched \(items.count) rows, not \(expected)") }
        return time
    }

    func fetchC(_ filter: Bool, expecting expected: Int) throws -> Double {
        var error = [CChar](repeating: 0, count: 512)
        var rows: Int64 = 0
        let sql = "SELECT Z_PK, Z_ENT, Z_OPT, ZNUMBER, ZAMOUNT, ZNAME, ZCREATED, ZFLAG FROM ZITEM" + (filter ? " WHERE ZNUMBER < \(threshold)" : "")
        var time = 0.0
        rows = cbaseline_read_loop(c.path, sql, &time, &error, Int32(error.count))
        guard rows == expected else { throw failure("C read loop", error) }
        return time
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func failure(_ what: String, _ error: [CChar] = [0]) -> CocoaError {
    let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: message.isEmpty ? what : "\(what): \(message)"])
}

/// Runs one case in a process of its own (this binary, `case <name>`) and returns its peak resident bytes.
func childPeak(_ name: String, _ stores: Stores) throws -> Int {
    try runChild(["case", name, stores.folder.path, String(stores.count)])
}

/// Runs one case by name (what `case` runs in a child process).
func run(_ name: String, _ stores: Stores) throws {
    let all = stores.count, some = stores.count / 100
    switch name {
    case "insert-ours": _ = try stores.insertOurs()
    case "insert-grdb": _ = try stores.insertGRDB()
    case "insert-c": _ = try stores.insertC()
    case "fetch-ours": _ = try stores.fetchOurs(FetchRequest(entity: "Item"), expecting: all)
    case "fetch-grdb": _ = try stores.fetchGRDB(false, expecting: all)
    case "indexed-ours": _ = try stores.fetchOurs(stores.indexedRequest, expecting: some)
    case "indexed-grdb": _ = try stores.fetchGRDB(true, expecting: some)
    case "insert-typed": _ = try stores.insertTyped()
    case "fetch-typed": _ = try stores.fetchTyped(false, expecting: all)
    case "indexed-typed": _ = try stores.fetchTyped(true, expecting: some)
    default: throw failure("no case named \(name)")
    }
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

func log(_ message: String) { FileHandle.standardError.write(Data((message + "\n").utf8)) }

// MARK: Main

let arguments = CommandLine.arguments
switch arguments.dropFirst().first {
case "case" where arguments.count >= 4:
    let stores = Stores(folder: URL(filePath: arguments[3]), count: Int(arguments.count > 4 ? arguments[4] : "100000")!)
    try run(arguments[2], stores)
    print(peakResidentBytes())

case "report":
    let count = Int(arguments.count > 2 ? arguments[2] : "100000")!
    let rounds = max(1, Int(arguments.count > 3 ? arguments[3] : "5")!)
    let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-context-bench")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let stores = Stores(folder: folder, count: count)
    stores.removeAll()
    let some = count / 100

    // Times: the sides alternate within each round; the median of the rounds is reported.
    var times: [String: [Double]] = [:]
    for round in 1...rounds {
        log("round \(round) of \(rounds): inserts, fetches, indexed fetches (\(count) objects)…")
        times["insert-c", default: []].append(try stores.insertC())
        times["insert-grdb", default: []].append(try stores.insertGRDB())
        times["insert-ours", default: []].append(try stores.insertOurs())
        times["insert-typed", default: []].append(try stores.insertTyped())
        times["fetch-c", default: []].append(try stores.fetchC(false, expecting: count))
        times["fetch-grdb", default: []].append(try stores.fetchGRDB(false, expecting: count))
        times["fetch-ours", default: []].append(try stores.fetchOurs(FetchRequest(entity: "Item"), expecting: count))
        times["fetch-typed", default: []].append(try stores.fetchTyped(false, expecting: count))
        times["indexed-c", default: []].append(try stores.fetchC(true, expecting: some))
        times["indexed-grdb", default: []].append(try stores.fetchGRDB(true, expecting: some))
        times["indexed-ours", default: []].append(try stores.fetchOurs(stores.indexedRequest, expecting: some))
        times["indexed-typed", default: []].append(try stores.fetchTyped(true, expecting: some))
    }
    let time = times.mapValues(median)

    // The indexed fetch's plan, from the store itself.
    let store = try SQLiteStoreType().open(at: stores.ours, model: model, options: StoreOptions()) as! SQLiteStore
    let plan = try store.queryPlan(stores.indexedRequest)
    try store.close()
    let usesIndex = plan.contains { $0.contains("USING INDEX Z_Item_byNumber") }
    let version = try DatabaseQueue().read { try String.fetchOne($0, sql: "SELECT sqlite_version()") } ?? "?"
    let sorts = plan.contains { $0.contains("TEMP B-TREE") }

    // Peaks: each case in a process of its own (the fetch cases read the stores the rounds left).
    var peak: [String: Int] = [:]
    let typedPlan = try stores.typedPlan()
    let typedUsesIndex = typedPlan.contains { $0.contains("USING INDEX") && $0.contains("number") }
    for name in ["insert-ours", "insert-grdb", "fetch-ours", "fetch-grdb", "indexed-ours", "indexed-grdb", "insert-typed", "fetch-typed", "indexed-typed"] {
        log("peak memory: \(name) in a process of its own…")
        peak[name] = try childPeak(name, stores)
    }
    // The insert children left fresh stores behind; the fetch children read them. Clean up.
    stores.removeAll()

    func ms(_ s: Double) -> String { String(format: "%.1f ms", s * 1000) }
    func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.2f×", a / b) }
    func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
    func verdict(_ ok: Bool) -> String { ok ? "pass" : "**miss**" }
    func row(_ label: String, _ key: String, target: String, limit: Double) -> String {
        let ours = time["\(key)-ours"]!, grdb = time["\(key)-grdb"]!, c = time["\(key)-c"]!
        return "| \(label) | \(ms(ours)) | \(ms(grdb)) | \(ratio(ours, grdb)) | \(target) | \(verdict(ours / grdb <= limit)) | \(ms(c)) (\(ratio(ours, c))) |"
    }
    func memoryRow(_ label: String, _ key: String, side: String = "ours") -> String {
        let ours = peak["\(key)-\(side)"]!, grdb = peak["\(key)-grdb"]!
        let r = Double(ours) / Double(grdb)
        return "| \(label) | \(mib(ours)) | \(mib(grdb)) | \(String(format: "%.2f×", r)) | ≤ 2× | \(verdict(r <= 2)) |"
    }
    func typedRow(_ label: String, _ key: String, target: String, limit: Double) -> String {
        let typed = time["\(key)-typed"]!, grdb = time["\(key)-grdb"]!, c = time["\(key)-c"]!
        return "| \(label) | \(ms(typed)) | \(ms(grdb)) | \(ratio(typed, grdb)) | \(target) | \(verdict(typed / grdb <= limit)) | \(ms(c)) (\(ratio(typed, c))) |"
    }
    print("""
    \(count) objects of one entity (Integer 64 with a fetch index, Double, String, Date, Boolean), SQLite \(version), \
    WAL, synchronous=NORMAL; median of \(rounds) rounds, the sides alternating in each.

    | case | ObjectContext | GRDB 7.10 | ours / GRDB | target | | C loop (ours / C) |
    |---|---|---|---|---|---|---|
    \(row("insert \(count), save once (GRDB: Codable `insert` in one `write`)", "insert", target: "≤ 1×", limit: 1))
    \(row("fetch all as objects (GRDB: `fetchAll`)", "fetch", target: "≤ 2×", limit: 2))
    \(row("fetch `number < \(stores.threshold)` (\(some) objects, indexed, no sort)", "indexed", target: "uses the index", limit: .infinity))

    | peak resident memory (each case in its own process) | ObjectContext | GRDB 7.10 | ours / GRDB | target | |
    |---|---|---|---|---|---|
    \(memoryRow("insert \(count), save once", "insert"))
    \(memoryRow("fetch all", "fetch"))
    \(memoryRow("fetch 1 % by the index", "indexed"))

    Plan of the indexed fetch (`SQLiteStore.queryPlan`): \(plan.map { "`\($0)`" }.joined(separator: ", ")) — \
    index \(usesIndex ? "used" : "**not used**"), \(sorts ? "**a sort step**" : "no sort step").

    The typed layer (`@Model` class, `ModelContext`, `#Predicate`), the same rows:

    | case | typed | GRDB 7.10 | typed / GRDB | target | | C loop (typed / C) |
    |---|---|---|---|---|---|---|
    \(typedRow("insert \(count) models, save once", "insert", target: "≤ 1×", limit: 1))
    \(typedRow("fetch all as models", "fetch", target: "≤ 1.5×", limit: 1.5))
    \(typedRow("`#Predicate { $0.number < \(stores.threshold) }` (\(some) models, indexed)", "indexed", target: "≤ 1.5×", limit: 1.5))

    | peak resident memory (each case in its own process) | typed | GRDB 7.10 | typed / GRDB | target | |
    |---|---|---|---|---|---|
    \(memoryRow("insert \(count), save once", "insert", side: "typed"))
    \(memoryRow("fetch all", "fetch", side: "typed"))

    Plan of the typed indexed fetch (`ModelContext.queryPlan`): \(typedPlan.map { "`\($0)`" }.joined(separator: ", ")) — \
    index \(typedUsesIndex ? "used" : "**not used**").

    """)
    let thresholds = try Thresholds(benchmark: "context-bench")
    thresholds.record("insert, save once: ObjectContext / GRDB", time["insert-ours"]! / time["insert-grdb"]!)
    thresholds.record("fetch all: ObjectContext / GRDB", time["fetch-ours"]! / time["fetch-grdb"]!)
    thresholds.record("peak memory, insert: ObjectContext / GRDB", Double(peak["insert-ours"]!) / Double(peak["insert-grdb"]!))
    thresholds.record("peak memory, fetch all: ObjectContext / GRDB", Double(peak["fetch-ours"]!) / Double(peak["fetch-grdb"]!))
    thresholds.record("indexed fetch: index unused or a sort step (0 = neither)", usesIndex && !sorts ? 0 : 1)
    thresholds.record("typed insert, save once: typed / GRDB", time["insert-typed"]! / time["insert-grdb"]!)
    thresholds.record("typed fetch all: typed / GRDB", time["fetch-typed"]! / time["fetch-grdb"]!)
    thresholds.record("typed indexed fetch: typed / GRDB", time["indexed-typed"]! / time["indexed-grdb"]!)
    thresholds.record("typed indexed fetch: index unused (0 = used)", typedUsesIndex ? 0 : 1)
    thresholds.record("peak memory, typed fetch all: typed / GRDB", Double(peak["fetch-typed"]!) / Double(peak["fetch-grdb"]!))
    thresholds.finish()

default:
    print("usage: context-bench report [objects] [rounds] | case <name> <folder> [objects]")
}
