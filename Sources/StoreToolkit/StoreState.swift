import Foundation
import ObjectStore
import Synchronization

/// What an open store holds until it is closed (an environment, its tables, a shared read
/// transaction), behind one lock, with the checks every call makes first: that the store is open,
/// and for a write that it may write. Backends keep their open state in one of these rather than
/// each in its own optional and its own guards, so a closed or read-only store refuses a call the
/// same way on every backend (`StoreError.closed(_:snapshot:)`, `StoreError.readOnly(_:snapshot:)`).
public final class StoreState<Resource: Sendable>: Sendable {
    /// The store's URL, named by its errors.
    public let url: URL?
    /// Whether writes are refused.
    public let isReadOnly: Bool
    /// Whether the store is a snapshot (its errors say so).
    public let isSnapshot: Bool
    private let resource: Mutex<Resource?>

    /// The state of a store opened on `resource`.
    public init(_ resource: Resource, url: URL?, readOnly: Bool, snapshot: Bool = false) {
        self.url = url
        isReadOnly = readOnly || snapshot
        isSnapshot = snapshot
        self.resource = Mutex(resource)
    }

    /// The resource, for a call that uses it outside the lock (an environment that serves
    /// several threads itself).
    /// - Throws: `StoreError` with code `closed` once the store is closed.
    public func open() throws -> Resource {
        try resource.withLock { resource in
            guard let resource else { throw StoreError.closed(url, snapshot: isSnapshot) }
            return resource
        }
    }

    /// The resource, for a write that uses it outside the lock.
    /// - Throws: `StoreError` with code `readOnly`, or `closed` once the store is closed.
    public func openForWriting() throws -> Resource {
        try checkWritable()
        return try open()
    }

    /// Runs `body` on the resource under the lock: one call at a time.
    /// - Throws: `StoreError` with code `closed` once the store is closed, or what `body` throws.
    public func withLock<T>(_ body: (inout Resource) throws -> T) throws -> T {
        try resource.withLock { resource in
            guard resource != nil else { throw StoreError.closed(url, snapshot: isSnapshot) }
            return try body(&resource!)
        }
    }

    /// Runs `body` on the resource under the lock, for a write.
    /// - Throws: `StoreError` with code `readOnly`, or `closed` once the store is closed, or what `body` throws.
    public func withLockForWriting<T>(_ body: (inout Resource) throws -> T) throws -> T {
        try checkWritable()
        return try withLock(body)
    }

    /// Throws `StoreError` with code `readOnly` when writes are refused.
    public func checkWritable() throws {
        if isReadOnly { throw StoreError.readOnly(url, snapshot: isSnapshot) }
    }

    /// Closes the state: `body` runs on the resource under the lock (its last work: a final write,
    /// a sync), then every later call is refused as closed, whether `body` succeeded or not. A
    /// closed state runs nothing.
    public func close(_ body: (Resource) throws -> Void = { _ in }) throws {
        try resource.withLock { resource in
            guard let current = resource else { return }
            defer { resource = nil }
            try body(current)
        }
    }

    /// Takes the resource out, leaving the state closed; nil when it was closed already. For a
    /// resource whose closing work must not hold the lock (it waits for calls under way).
    public func take() -> Resource? {
        resource.withLock { resource in
            defer { resource = nil }
            return resource
        }
    }
}
