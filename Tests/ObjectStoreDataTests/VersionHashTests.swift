import Foundation
import ObjectModel
import ObjectStoreData
import Testing

/// The schema `@Model` classes make has the version hashes of the Xcode model of the same
/// entities: a store SwiftData wrote with the same classes opens here, and the other way round.
@Suite("Typed models: the same version hashes as the Xcode model")
struct VersionHashTests {
    /// The Xcode model of Models.swift, as Xcode writes it (the oracle, written by hand).
    static let xcodeModel = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22758" systemVersion="23F79" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
            <entity name="Author" representedClassName="Author" syncable="YES">
                <attribute name="born" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
                <attribute name="name" attributeType="String"/>
                <relationship name="books" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Book" inverseName="author" inverseEntity="Book"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="name"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
            <entity name="Book" representedClassName="Book" syncable="YES">
                <attribute name="genre" attributeType="String"/>
                <attribute name="isbn" optional="YES" attributeType="UUID" usesScalarValueType="NO"/>
                <attribute name="pages" attributeType="Integer 64" defaultValueString="0" usesScalarValueType="YES"/>
                <attribute name="rating" attributeType="Double" defaultValueString="0.0" usesScalarValueType="YES"/>
                <attribute name="size" optional="YES" attributeType="Transformable"/>
                <attribute name="subtitle" optional="YES" attributeType="String"/>
                <attribute name="title" attributeType="String"/>
                <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/>
                <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="books" inverseEntity="Tag"/>
            </entity>
            <entity name="Tag" representedClassName="Tag" syncable="YES">
                <attribute name="label" attributeType="String"/>
                <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="tags" inverseEntity="Book"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="label"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
        </model>
        """

    @Test("Author, Book and Tag hash as the Xcode model of them does, entity by entity")
    func sameHashes() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-data-\(UUID().uuidString)/Library.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        try Data(Self.xcodeModel.utf8).write(to: folder.appending(path: "contents"))
        let xcode = try ModelLoader.loadModel(at: folder)
        let schema = Schema([Author.self])
        #expect(Set(schema.model.entityNames) == ["Author", "Book", "Tag"], "the related models come with Author")
        for name in ["Author", "Book", "Tag"] {
            #expect(schema.model.versionHashes[name] == xcode.versionHashes[name], "\(name)")
        }
        // The relationships as the model layer sees them: inverses named and inferred.
        let book = try #require(schema.model.entity(named: "Book"))
        #expect(book.relationshipsByName["author"]?.inverse == "books")
        #expect(book.relationshipsByName["tags"]?.inverse == "books")
        #expect(schema.model.entity(named: "Author")?.relationshipsByName["books"]?.deleteRule == .cascade)
    }
}
