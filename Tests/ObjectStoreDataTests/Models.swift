import Foundation
import ObjectStoreData

/// The test models: a one-to-many with its inverse (Author – Book), a many-to-many (Book –
/// Tag), required attributes, enums, a Codable value, optionals of every kind.
@Model
final class Author {
    #Unique<Author>([\.name])
    var name: String
    var born: Date?
    @Relationship(deleteRule: .cascade, inverse: \Book.author) var books: [Book] = []

    init(name: String, born: Date? = nil) {
        self.name = name
        self.born = born
    }
}

enum Genre: String, Codable, CaseIterable {
    case fiction, poetry, essay
}

struct Dimensions: Codable, Equatable {
    var width: Double
    var height: Double
}

@Model
final class Book {
    #Index<Book>([\.pages])
    var title: String
    var pages: Int
    var rating: Double = 0
    var genre: Genre = Genre.fiction
    var subtitle: String?
    var isbn: UUID?
    var size: Dimensions?
    var author: Author?
    var tags: [Tag] = []
    @Transient var opened = 0

    init(title: String, pages: Int, author: Author? = nil) {
        self.title = title
        self.pages = pages
        self.author = author
    }
}

@Model
final class Tag {
    @Attribute(.unique) var label: String
    var books: [Book] = []

    init(label: String) {
        self.label = label
    }
}
