import Foundation
import ObjectModel
import ObjectStore
import PostgreSQLStore

// Clients in one process saving disjoint objects into one PostgreSQL store at once, against one
// client making the same saves one after another (issue 24): the store's connection pool lets the
// clients' transactions run side by side on the server.
//
// Usage: clients-bench <postgresql URL without schema> [saves] [objects per save]
// Prints a Markdown table. Every save must go in: the rows are counted at the end.

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: clients-bench <postgresql URL without schema> [saves] [objects per save]\n".utf8))
    exit(64)
}
let server = arguments[1]
let saves = arguments.count > 2 ? Int(arguments[2]) ?? 2_000 : 2_000
let perSave = arguments.count > 3 ? Int(arguments[3]) ?? 5 : 5

/// The users' shape in small: an owner with items, one-to-many with its inverse, required attributes.
let model = try! JSONModelFormat.decode(Data("""
{"format": "objectstore-model", "formatVersion": 1, "entities": [
 {"name": "Owner", "attributes": [{"name": "name", "type": "String", "optional": false}],
  "relationships": [{"name": "items", "destination": "Item", "inverse": "owner", "toMany": true}]},
 {"name": "Item", "attributes": [{"name": "title", "type": "String", "optional": false, "minLength": 1},
                                 {"name": "amount", "type": "Double"}, {"name": "created", "type": "Date"}],
  "relationships": [{"name": "owner", "destination": "Owner", "inverse": "items"}]}]}
""".utf8), file: "clients model")

/// One save: an owner and its items, all new (no other client's objects are touched).
@Sendable func save(_ store: any PersistentStore, client: Int, number: Int, perSave: Int) throws {
    let owner = ObjectKey("Owner", try store.allocatePrimaryKeys(entity: "Owner", count: 1).lowerBound)
    let keys = try store.allocatePrimaryKeys(entity: "Item", count: perSave)
    var records = [ObjectRecord(key: owner, attributes: ["name": .string("client \(client) save \(number)")])]
    for pk in keys {
        var item = ObjectRecord(key: ObjectKey("Item", pk), attributes: [
            "title": .string("item \(pk) of client \(client)"), "amount": .double(Double(pk) / 4), "created": .date(Date(timeIntervalSinceReferenceDate: Double(pk))),
        ])
        item.toOne["owner"] = owner
        records.append(item)
    }
    try store.save(ChangeSet(inserted: records))
}

/// Seconds for `clients` threads to make `saves` saves between them into a new store, and the
/// failures; checks that every object is there.
func run(clients: Int, pool: Int, schema: String) throws -> (seconds: Double, failures: Int) {
    let (saves, perSave) = (saves, perSave)
    let url = URL(string: "\(server)&schema=\(schema)&pool=\(pool)")!
    try? PostgreSQLStoreType().destroy(at: url)
    let store = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
    let failures = Failures()
    let group = DispatchGroup()
    let start = Date()
    for client in 0..<clients {
        group.enter()
        let thread = Thread {
            for number in stride(from: client, to: saves, by: clients) {
                do { try save(store, client: client, number: number, perSave: perSave) } catch { failures.add(error) }
            }
            group.leave()
        }
        thread.start()
    }
    group.wait()
    let seconds = Date().timeIntervalSince(start)
    let items = try store.count(FetchRequest(entity: "Item")), owners = try store.count(FetchRequest(entity: "Owner"))
    try store.close()
    try? PostgreSQLStoreType().destroy(at: url)
    guard failures.count > 0 || (items == saves * perSave && owners == saves) else {
        throw StoreError(.corrupt, "\(clients) clients: \(owners) owners and \(items) items, not \(saves) and \(saves * perSave)")
    }
    return (seconds, failures.count)
}

final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [any Error] = []
    func add(_ error: any Error) { lock.withLock { errors.append(error) } }
    var count: Int { lock.withLock { errors.count } }
}

let one = try run(clients: 1, pool: 8, schema: "clients_one")
let eight = try run(clients: 8, pool: 8, schema: "clients_eight")
let unpooled = try run(clients: 8, pool: 1, schema: "clients_unpooled")
func rate(_ r: (seconds: Double, failures: Int)) -> String { String(format: "%.2f s, %.0f saves/s", r.seconds, Double(saves) / r.seconds) }
print("| \(saves) saves of \(perSave + 1) new objects each (an owner and its items), one store | time | failed saves | against one client |")
print("|---|---|---|---|")
print("| 1 client | \(rate(one)) | \(one.failures) | 1.00× |")
print("| 8 clients, a pool of 8 connections | \(rate(eight)) | \(eight.failures) | " + String(format: "%.2f×", one.seconds / eight.seconds) + " |")
print("| 8 clients, one connection (pool=1) | \(rate(unpooled)) | \(unpooled.failures) | " + String(format: "%.2f×", one.seconds / unpooled.seconds) + " |")
