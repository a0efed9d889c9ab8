import Foundation

/// Reads the models Core Data writes in binary form: a compiled model (`.mom`, inside an
/// app's `.momd` folder) and the model a Core Data SQLite store carries (`Z_MODELCACHE`).
///
/// Both are `NSKeyedArchiver` archives of an `NSManagedObjectModel`; the store's is
/// compressed as a raw DEFLATE stream. They are decoded by reading the archive's objects as
/// data (nothing is instantiated) into a ``ManagedObjectModel`` whose version hashes equal
/// the ones Core Data computed for it. A class or key this library does not know is an
/// error naming it, never a guess. docs/coredata-formats.md describes the format.
///
/// ```swift
/// let model = try ModelArchive.decodeModelCache(blob)   // Z_MODELCACHE.Z_CONTENT
/// print(model.versionHashes == storeMetadata.versionHashes)
/// ```
public enum ModelArchive {
    /// Decodes an archived `NSManagedObjectModel`: the content of a `.mom` file.
    ///
    /// - Parameter data: a binary property list holding an `NSKeyedArchiver` archive.
    /// - Throws: ``ModelError``: `unreadable` for a damaged or truncated archive (a reference
    ///   past its end, a missing key), `unsupported` for an archive of something else or a
    ///   class, key or value this library does not decode (named in the message),
    ///   `inconsistentModel` when the decoded model does not hold together.
    public static func decodeModel(_ data: Data) throws -> ManagedObjectModel {
        try ArchivedModelReader(archive: KeyedArchiveObjects(data)).model()
    }

    /// Decodes the model a Core Data store carries: `Z_MODELCACHE.Z_CONTENT`, a raw DEFLATE
    /// stream of an archived `NSManagedObjectModel`.
    ///
    /// - Throws: ``ModelError``, as ``decodeModel(_:)``; `unreadable` when the stream does not
    ///   inflate (damaged, truncated, or not DEFLATE).
    public static func decodeModelCache(_ compressed: Data) throws -> ManagedObjectModel {
        try decodeModel(RawDeflate.inflate(compressed))
    }

    /// The model cache Core Data keeps in a store (`Z_MODELCACHE.Z_CONTENT`): `model` archived
    /// as Core Data archives an `NSManagedObjectModel`, compressed as a raw DEFLATE stream.
    /// ``decodeModelCache(_:)`` reads it back to a model with the same version hashes.
    ///
    /// - Throws: ``ModelError`` (`unsupported`) for a model using what no real archive has shown
    ///   the archived form of (abstract entities, validation rules, external storage, named
    ///   configurations), naming each.
    public static func encodeModelCache(_ model: ManagedObjectModel) throws -> Data {
        RawDeflate.deflate(try ArchivedModelWriter.encode(model))
    }

}
