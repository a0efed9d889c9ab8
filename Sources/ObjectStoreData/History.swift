import Foundation
import ObjectModel
import ObjectStore

// Persistent history and observation in SwiftData's shape: `fetchHistory` with a
// `HistoryDescriptor`, transactions of `changes`, `deleteHistory`, a context's
// `transactionAuthor`; and what SwiftData leaves to notifications, as async sequences: the
// container's transactions (this process's and other processes' saves) and observed fetches.

/// Where a store's history stands: a transaction's place in it (SwiftData's `DefaultHistoryToken`).
/// `Codable`: keep the last one you processed, and fetch what came after it in a later run.
public struct DefaultHistoryToken: Sendable, Hashable, Comparable, Codable {
    /// The store layer's token.
    public let token: HistoryToken

    public static func < (a: DefaultHistoryToken, b: DefaultHistoryToken) -> Bool { a.token < b.token }
}

/// An inserted model.
public struct HistoryInsert: Sendable, Hashable {
    /// The model's identifier.
    public let changedPersistentIdentifier: PersistentIdentifier
}

/// An updated model and the properties the save set.
public struct HistoryUpdate: Sendable, Hashable {
    /// The model's identifier.
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The names of the properties the save set (SwiftData gives key paths; the names are the same).
    public let updatedAttributes: [String]
}

/// A deleted model.
public struct HistoryDelete: Sendable, Hashable {
    /// The model's identifier.
    public let changedPersistentIdentifier: PersistentIdentifier
}

/// One change of a transaction.
public enum HistoryChange: Sendable, Hashable {
    case insert(HistoryInsert)
    case update(HistoryUpdate)
    case delete(HistoryDelete)

    /// The identifier of the model it changed.
    public var changedPersistentIdentifier: PersistentIdentifier {
        switch self {
        case .insert(let change): change.changedPersistentIdentifier
        case .update(let change): change.changedPersistentIdentifier
        case .delete(let change): change.changedPersistentIdentifier
        }
    }
}

/// One saved transaction: its token, author, time and changes (SwiftData's `DefaultHistoryTransaction`).
public struct DefaultHistoryTransaction: Sendable, Hashable {
    /// Its place in the store's history.
    public let token: DefaultHistoryToken
    /// The transaction's number in its store.
    public var transactionIdentifier: Int64 { token.token.value }
    /// Who saved it (``ModelContext/transactionAuthor``, `objectstore --author`).
    public let author: String?
    /// When.
    public let timestamp: Date
    /// The store's UUID, as text.
    public var storeIdentifier: String { token.token.storeIdentifier.uuidString }
    /// Inserts, then updates, then deletes, each in key order.
    public let changes: [HistoryChange]
    /// The store layer's transaction.
    public let transaction: StoreTransaction

    init(_ transaction: StoreTransaction) {
        self.transaction = transaction
        token = DefaultHistoryToken(token: transaction.token)
        author = transaction.author
        timestamp = transaction.timestamp
        let store = transaction.token.storeIdentifier
        func id(_ key: ObjectKey) -> PersistentIdentifier { PersistentIdentifier(ObjectID(store: store, key: key)) }
        changes = transaction.inserted.map { .insert(HistoryInsert(changedPersistentIdentifier: id($0))) }
            + transaction.updated.map { .update(HistoryUpdate(changedPersistentIdentifier: id($0.key), updatedAttributes: $0.properties)) }
            + transaction.deleted.map { .delete(HistoryDelete(changedPersistentIdentifier: id($0))) }
    }
}

/// Which transactions ``ModelContext/fetchHistory(_:)`` returns: those after a token, by an
/// author, whatever a predicate over the transaction accepts, at most a limit.
///
/// ```swift
/// var descriptor = HistoryDescriptor<DefaultHistoryTransaction>()
/// descriptor.predicate = #Predicate { $0.token > lastToken }
/// for transaction in try context.fetchHistory(descriptor) { … }
/// ```
public struct HistoryDescriptor<T>: @unchecked Sendable {
    /// Which transactions; nil for all. Evaluated on each transaction.
    public var predicate: Predicate<DefaultHistoryTransaction>?
    /// Only those after this token (read by the store, cheaper than a predicate).
    public var after: DefaultHistoryToken?
    /// Only those of this author (read by the store).
    public var author: String?
    /// At most this many, the oldest first.
    public var fetchLimit: Int?

    /// A descriptor.
    public init(predicate: Predicate<DefaultHistoryTransaction>? = nil) {
        self.predicate = predicate
    }
}

extension ModelContext {
    /// Who this context's saves are by, in the store's history.
    public var transactionAuthor: String? {
        get { objects.transactionAuthor }
        set { objects.transactionAuthor = newValue }
    }

    /// The container's stores' transactions `descriptor` selects, oldest first.
    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws -> [DefaultHistoryTransaction] {
        var found: [DefaultHistoryTransaction] = []
        for store in container.coordinator.stores {
            let query = HistoryQuery(after: descriptor.after?.token.value, author: descriptor.author,
                                     limit: descriptor.predicate == nil ? descriptor.fetchLimit : nil)
            for transaction in try store.history(query).map(DefaultHistoryTransaction.init) {
                if let predicate = descriptor.predicate, try !predicate.evaluate(transaction) { continue }
                found.append(transaction)
                if let limit = descriptor.fetchLimit, found.count >= limit { return found }
            }
        }
        return found
    }

    /// Deletes the transactions `descriptor` selects and every one before them (history is
    /// deleted through a token, as in Core Data).
    public func deleteHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws {
        guard let last = try fetchHistory(descriptor).last else { return }
        for store in container.coordinator.stores where store.identifier == last.token.token.storeIdentifier {
            try store.deleteHistory(through: last.transactionIdentifier)
        }
    }

    /// Brings the context up to date with a transaction saved elsewhere: models it updated that
    /// the context holds without unsaved changes are read again, models it deleted leave the
    /// context (`ObjectContext.mergeChanges(from:)`). A model with unsaved changes keeps them,
    /// and saving them is a conflict naming it.
    public func merge(_ transaction: DefaultHistoryTransaction) throws {
        try objects.mergeChanges(from: transaction.transaction)
    }

    /// The models `descriptor` selects, now and again after every save that touches their type
    /// (in this process or another), as an async sequence: the first element is the current
    /// result; each later one follows one or more transactions that inserted, updated or
    /// deleted a model of `T` (or of a subclass), merged into this context first. Transactions
    /// that arrive together give one result, not one each.
    ///
    /// ```swift
    /// for try await books in context.results(for: FetchDescriptor<Book>(sortBy: [SortDescriptor(\.title)])) {
    ///     show(books)
    /// }
    /// ```
    public func results<T: PersistentModel>(for descriptor: FetchDescriptor<T>) -> ObservedResults<T> {
        ObservedResults(context: self, descriptor: descriptor)
    }
}

extension ModelContainer {
    /// The transactions saved to the container's store from now on (or after `token`), in
    /// order, by this process or another: a save's transaction arrives as it commits (file
    /// notifications, PostgreSQL's `LISTEN`, this process's saves; see `HistoryObserver`).
    public func transactions(after token: DefaultHistoryToken? = nil) -> AsyncThrowingStream<DefaultHistoryTransaction, any Error> {
        let (stream, continuation) = AsyncThrowingStream<DefaultHistoryTransaction, any Error>.makeStream()
        guard let store = coordinator.stores.first else {
            continuation.finish()
            return stream
        }
        do {
            let type = try coordinator.registry.type(named: store.storeType)
            return try HistoryObserver(store: store, type: type, after: token?.token.value).transactions(DefaultHistoryTransaction.init)
        } catch {
            continuation.finish(throwing: error)
        }
        return stream
    }
}

/// The results of a fetch, again after each save that touches their type: see ``ModelContext/results(for:)``.
public struct ObservedResults<T: PersistentModel>: AsyncSequence {
    public typealias Element = [T]
    public typealias Failure = any Error
    let context: ModelContext
    let descriptor: FetchDescriptor<T>

    public func makeAsyncIterator() -> Iterator {
        Iterator(context: context, descriptor: descriptor)
    }

    /// Yields the current results, then waits for transactions that touch `T`.
    public struct Iterator: AsyncIteratorProtocol {
        let context: ModelContext
        let descriptor: FetchDescriptor<T>
        private var started = false
        private var transactions: AsyncThrowingStream<DefaultHistoryTransaction, any Error>.Iterator?

        init(context: ModelContext, descriptor: FetchDescriptor<T>) {
            self.context = context
            self.descriptor = descriptor
        }

        /// The entity `T` is stored as, with its sub-entities.
        private var entities: Set<String> {
            Set(context.container.coordinator.model.entity(named: T.entityName)?.kindNames ?? [T.entityName])
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> [T]? {
            if !started {
                started = true
                // Watch from the store's newest transaction: what is saved after the first result comes next.
                let token = try context.container.coordinator.stores.first.map { store in
                    DefaultHistoryToken(token: HistoryToken(store: store.identifier, value: try store.lastHistoryToken()))
                }
                transactions = context.container.transactions(after: token).makeAsyncIterator()
                return try context.fetch(descriptor)
            }
            let watched = entities
            var touched = false
            while let transaction = try await transactions?.next(isolation: actor) {
                try context.merge(transaction)
                touched = touched || transaction.transaction.entities.contains(where: watched.contains)
                // Coalesced: one result once no committed transaction is left to merge.
                guard touched, let store = context.container.coordinator.store(withIdentifier: transaction.token.token.storeIdentifier),
                      try store.history(after: transaction.transactionIdentifier, limit: 1).isEmpty else { continue }
                return try context.fetch(descriptor)
            }
            return nil
        }

        public mutating func next() async throws -> [T]? {
            try await next(isolation: nil)
        }
    }
}
