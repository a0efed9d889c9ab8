import ArgumentParser
import Foundation
import ObjectModel
import ObjectStore

/// Filters a transaction's objects to some entities (and their sub-entities): `--entity`.
private struct EntityFilter {
    let query: HistoryQuery
    let model: ManagedObjectModel

    init(_ names: [String], model: ManagedObjectModel) throws {
        for name in names where model.entity(named: name) == nil { throw CLIError("--entity \(name): the store's model has no such entity") }
        query = HistoryQuery(entities: Set(names))
        self.model = model
    }

    func admits(_ key: ObjectKey) -> Bool { query.covers(key.entity, in: model) }

    /// The transaction with only the admitted objects, or nil when none is left.
    func apply(_ transaction: StoreTransaction) -> StoreTransaction? {
        guard !query.entities.isEmpty else { return transaction }
        var kept = transaction
        kept.inserted = transaction.inserted.filter(admits)
        kept.updated = transaction.updated.filter { admits($0.key) }
        kept.deleted = transaction.deleted.filter(admits)
        return kept.inserted.isEmpty && kept.updated.isEmpty && kept.deleted.isEmpty ? nil : kept
    }
}

/// Refuses a `--since` token the store cannot have given: below 0, or above its newest.
private func checkSince(_ since: Int64?, _ store: any PersistentStore) throws {
    guard let since else { return }
    guard since >= 0 else { throw ValidationError("--since \(since): tokens start at 1 (0 means from the first)") }
    let newest = try store.lastHistoryToken()
    if since > newest { throw CLIError("--since \(since): the store's newest transaction is \(newest); a later token was never handed out") }
}

/// A transaction as one line of text: `<token> <timestamp> <author|-> inserted […] updated […] deleted […]`.
private func line(_ transaction: StoreTransaction, json: Bool) -> String {
    if json { return JSONInterchange.json(of: transaction) }
    var parts = [String(transaction.token.value), ValueText.iso8601(transaction.timestamp), transaction.author ?? "-"]
    if !transaction.inserted.isEmpty { parts.append("inserted " + transaction.inserted.map(JSONInterchange.id).joined(separator: " ")) }
    if !transaction.updated.isEmpty {
        parts.append("updated " + transaction.updated.map { "\(JSONInterchange.id($0.key))(\($0.properties.joined(separator: ",")))" }.joined(separator: " "))
    }
    if !transaction.deleted.isEmpty { parts.append("deleted " + transaction.deleted.map(JSONInterchange.id).joined(separator: " ")) }
    return parts.joined(separator: " ")
}

/// `objectstore watch <store> [--json] [--entity E]...`.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print one line per transaction saved to the store from now on, by any process, until interrupted.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var modelSelection: ModelSelection
    @OptionGroup var typeOption: StoreTypeOption
    @Flag(name: .long, help: "One JSON object per line (docs/observation.md).") var json = false
    @Option(name: .long, help: "Only transactions that change objects of this entity (and its sub-entities), and only those objects (repeatable).")
    var entity: [String] = []
    @Option(name: .long, help: "Start after this history token instead of now (prints what came since first).") var since: Int64?

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let opened = try StoreLocator.open(store, type: type, selection: modelSelection, readOnly: true)
        defer { try? opened.close() }
        let filter = try EntityFilter(entity, model: opened.model)
        try checkSince(since, opened)
        // Runs until interrupted: the signals that stop it work even when the parent blocked them.
        var stopping = sigset_t()
        sigemptyset(&stopping)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&stopping, signal) }
        pthread_sigmask(SIG_UNBLOCK, &stopping, nil)
        let observer = try HistoryObserver(store: opened, type: type, after: since)
        // Ready: a script may start writing once this line is on stderr.
        printError("watching \(shown(store)) after token \(observer.start)\n")
        try observer.run { transaction in
            guard let shown = filter.apply(transaction) else { return true }
            do {
                try FileHandle.standardOutput.write(contentsOf: Data((line(shown, json: json) + "\n").utf8))
            } catch {
                return false   // nobody reads any more (a closed pipe): done
            }
            return true
        }
    }
}

/// `objectstore history <store> [--since TOKEN] [--author A] [--entity E]... [--json] [--delete-through TOKEN]`.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the store's saved transactions (token, time, author, objects), oldest first; or delete them up to a token.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var modelSelection: ModelSelection
    @OptionGroup var typeOption: StoreTypeOption
    @Option(name: .long, help: "Only transactions after this token.") var since: Int64?
    @Option(name: .long, help: "Only transactions by this author.") var author: String?
    @Option(name: .long, help: "Only transactions that change objects of this entity (and its sub-entities), and only those objects (repeatable).")
    var entity: [String] = []
    @Flag(name: .long, help: "One JSON object per line (docs/observation.md).") var json = false
    @Option(name: .customLong("delete-through"), help: "Delete the history up to and including this token, and print how many transactions went.")
    var deleteThrough: Int64?

    func validate() throws {
        if deleteThrough != nil, since != nil || author != nil || !entity.isEmpty || json {
            throw ValidationError("--delete-through deletes; it takes no --since, --author, --entity or --json")
        }
    }

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        if let deleteThrough {
            let opened = try StoreLocator.open(store, type: type, selection: modelSelection, readOnly: false)
            defer { try? opened.close() }
            let count = try opened.deleteHistory(through: deleteThrough)
            try opened.close()
            output("deleted \(count) transaction\(count == 1 ? "" : "s")")
            return
        }
        let opened = try StoreLocator.snapshot(store, type: type, selection: modelSelection, checkingRows: false)
        defer { try? opened.close() }
        let filter = try EntityFilter(entity, model: opened.model)
        try checkSince(since, opened)
        for transaction in try opened.history(HistoryQuery(after: since, author: author, entities: Set(entity))) {
            if let shown = filter.apply(transaction) { output(line(shown, json: json)) }
        }
    }
}

/// What `update` and `delete` act on: a store, an entity and a predicate, and who the change is by.
struct BatchTarget: ParsableArguments {
    @Argument(help: "The store.") var store: String
    @OptionGroup var modelSelection: ModelSelection
    @OptionGroup var typeOption: StoreTypeOption
    @Option(name: .long, help: "The entity (its sub-entities' objects too).") var entity: String
    @Option(name: .customLong("where"), help: "Only objects matching this predicate (NSPredicate syntax); without it, every object of the entity.")
    var predicate: String?
    @OptionGroup var authorOption: AuthorOption

    /// Opens the store for writing, runs `body` on it with the entity and the request, closes it
    /// (durably) and prints `<verb> <count>`.
    func run(_ verb: String, _ body: (any PersistentStore, EntityDescription, FetchRequest) throws -> Int) throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let opened = try StoreLocator.open(store, type: type, selection: modelSelection, readOnly: false, author: authorOption.author)
        defer { try? opened.close() }
        guard let description = opened.model.entity(named: entity) else { throw CLIError("--entity \(entity): the store's model has no such entity") }
        let count = try body(opened, description, FetchRequest(entity: entity, predicate: try parsePredicate(predicate)))
        try opened.close()
        output("\(verb) \(count)")
    }
}

/// `objectstore update <store> --entity E [--where P] --set KEY=VALUE... [--author A]`.
struct UpdateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Set attributes of every object of an entity that matches a predicate, in one transaction, without loading them; print the count.")

    @OptionGroup var target: BatchTarget
    @Option(name: .customLong("set"), help: "KEY=VALUE: an attribute and its new value (null clears it; repeatable).") var assignments: [String] = []

    func run() throws {
        guard !assignments.isEmpty else { throw ValidationError("give at least one --set KEY=VALUE") }
        try target.run("updated") { store, description, request in
            var values: [String: Value?] = [:]
            for assignment in assignments {
                guard let equals = assignment.firstIndex(of: "=") else { throw ValidationError("--set \(assignment): write KEY=VALUE") }
                let key = String(assignment[..<equals]), text = String(assignment[assignment.index(after: equals)...])
                guard values[key] == nil else { throw ValidationError("--set \(key) is given twice") }
                guard let attribute = description.attributesByName[key] else {
                    let what = description.relationshipsByName[key] != nil ? "a relationship (update sets attributes)" : "not a property of \(description.name)"
                    throw CLIError("--set \(key): \(what)")
                }
                values[key] = .some(try JSONInterchange.value(fromText: text, for: attribute, place: "--set \(key)"))
            }
            return try store.batchUpdate(request, set: values)
        }
    }
}

/// `objectstore delete <store> --entity E [--where P] [--author A]`.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete every object of an entity that matches a predicate, delete rules applied, in one transaction; print the count.")

    @OptionGroup var target: BatchTarget

    func run() throws {
        try target.run("deleted") { store, _, request in try store.batchDelete(request) }
    }
}

/// `--where`'s predicate, or a usage error saying where it does not parse.
func parsePredicate(_ text: String?) throws -> ObjectPredicate? {
    do { return try text.map { try ObjectPredicate($0) } } catch let error as PredicateSyntaxError {
        throw ValidationError("--where: \(error)")
    }
}
