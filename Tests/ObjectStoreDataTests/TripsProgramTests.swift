// A program written the way Apple's SwiftData documentation writes one (its SampleTrips
// models, "Preserving your app's model data across launches", "Fetching and filtering",
// "Deleting persistent data"): this file's model code compiles unchanged with `import SwiftData`
// in its place.
import Foundation
import ObjectStoreData
import Testing
import TestSupport

@Model
final class Trip {
    #Unique<Trip>([\.name, \.startDate])
    #Index<Trip>([\.startDate], [\.name, \.destination])

    var name: String
    var destination: String
    var startDate: Date
    var endDate: Date

    @Relationship(deleteRule: .cascade, inverse: \BucketListItem.trip)
    var bucketList: [BucketListItem] = [BucketListItem]()

    @Relationship(deleteRule: .cascade, inverse: \LivingAccommodation.trip)
    var livingAccommodation: LivingAccommodation?

    init(name: String, destination: String, startDate: Date = .now, endDate: Date = .distantFuture) {
        self.name = name
        self.destination = destination
        self.startDate = startDate
        self.endDate = endDate
    }
}

@Model
final class BucketListItem {
    var title: String
    var details: String
    var hasReservation: Bool
    var isInPlan: Bool
    var trip: Trip?

    init(title: String, details: String, hasReservation: Bool, isInPlan: Bool) {
        self.title = title
        self.details = details
        self.hasReservation = hasReservation
        self.isInPlan = isInPlan
    }
}

@Model
final class LivingAccommodation {
    var address: String
    var placeName: String
    var trip: Trip?

    init(address: String, placeName: String) {
        self.address = address
        self.placeName = placeName
    }
}

/// The program's work: what a SwiftData app does with those models.
enum TripsProgram {
    static func run(_ container: ModelContainer) throws -> [String] {
        var printed: [String] = []
        let context = ModelContext(container)
        let day: TimeInterval = 86_400
        let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
        let lisbon = Trip(name: "Spring", destination: "Lisbon", startDate: start, endDate: start + 6 * day)
        lisbon.bucketList.append(BucketListItem(title: "Tram 28", details: "early", hasReservation: false, isInPlan: true))
        lisbon.bucketList.append(BucketListItem(title: "Belém", details: "pastries", hasReservation: true, isInPlan: true))
        lisbon.livingAccommodation = LivingAccommodation(address: "Rua Augusta 1", placeName: "Casa")
        context.insert(lisbon)
        context.insert(Trip(name: "Summer", destination: "Porto", startDate: start + 60 * day, endDate: start + 70 * day))
        context.insert(Trip(name: "Winter", destination: "Faro", startDate: start + 250 * day, endDate: start + 255 * day))
        try context.save()

        // Upsert: the same name and start date updates the stored trip.
        context.insert(Trip(name: "Summer", destination: "Porto and Braga", startDate: start + 60 * day, endDate: start + 72 * day))
        try context.save()

        // Sorted, filtered, limited.
        let after = start + 30 * day
        var upcoming = FetchDescriptor<Trip>(predicate: #Predicate { $0.startDate > after }, sortBy: [SortDescriptor(\.startDate)])
        upcoming.fetchLimit = 1
        printed += try context.fetch(upcoming).map { "next: \($0.name) to \($0.destination)" }
        printed.append("trips: \(try context.fetchCount(FetchDescriptor<Trip>()))")
        let planned = try context.fetch(FetchDescriptor<BucketListItem>(predicate: #Predicate { $0.isInPlan && !$0.hasReservation }))
        printed += planned.map { "to book: \($0.title) (\($0.trip?.destination ?? "?"))" }

        // Cascade: deleting a trip deletes its bucket list and accommodation.
        try context.delete(model: Trip.self, where: #Predicate { $0.destination == "Lisbon" })
        try context.save()
        printed.append("items left: \(try context.fetchCount(FetchDescriptor<BucketListItem>())), "
                       + "accommodations left: \(try context.fetchCount(FetchDescriptor<LivingAccommodation>()))")
        return printed
    }
}

@Suite("A SwiftData program on Linux: SampleTrips")
struct TripsProgramTests {
    @Test("the program prints the right answers on every backend", arguments: TypedBackends.all)
    func answers(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try ModelContainer(for: Trip.self, configurations: try place.configuration(backend, "trips"))
        #expect(try TripsProgram.run(container) == [
            "next: Summer to Porto and Braga",
            "trips: 3",
            "to book: Tram 28 (Lisbon)",
            "items left: 0, accommodations left: 0",
        ])
    }

    /// The Xcode model of the same entities, as Xcode writes it (the oracle).
    static let xcodeModel = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
            <entity name="BucketListItem" representedClassName="BucketListItem" syncable="YES">
                <attribute name="details" attributeType="String"/>
                <attribute name="hasReservation" attributeType="Boolean" usesScalarValueType="YES"/>
                <attribute name="isInPlan" attributeType="Boolean" usesScalarValueType="YES"/>
                <attribute name="title" attributeType="String"/>
                <relationship name="trip" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Trip" inverseName="bucketList" inverseEntity="Trip"/>
            </entity>
            <entity name="LivingAccommodation" representedClassName="LivingAccommodation" syncable="YES">
                <attribute name="address" attributeType="String"/>
                <attribute name="placeName" attributeType="String"/>
                <relationship name="trip" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Trip" inverseName="livingAccommodation" inverseEntity="Trip"/>
            </entity>
            <entity name="Trip" representedClassName="Trip" syncable="YES">
                <attribute name="destination" attributeType="String"/>
                <attribute name="endDate" attributeType="Date" usesScalarValueType="NO"/>
                <attribute name="name" attributeType="String"/>
                <attribute name="startDate" attributeType="Date" usesScalarValueType="NO"/>
                <relationship name="bucketList" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="BucketListItem" inverseName="trip" inverseEntity="BucketListItem"/>
                <relationship name="livingAccommodation" optional="YES" maxCount="1" deletionRule="Cascade" destinationEntity="LivingAccommodation" inverseName="trip" inverseEntity="LivingAccommodation"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="name"/>
                        <constraint value="startDate"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
        </model>
        """

    @Test("the SQLite store it leaves is read by objectstore export with the equivalent Xcode model: the hashes are equal, the values as the program set them")
    func exportWithXcodeModel() throws {
        let place = try TypedBackends.Place()
        let url = place.folder.appending(path: "trips.sqlite")
        do {
            let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
            _ = try TripsProgram.run(container)
        }
        let model = place.folder.appending(path: "Trips.xcdatamodel")
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        try Data(Self.xcodeModel.utf8).write(to: model.appending(path: "contents"))
        let export = try CLI.run("export", url.path, "--model", model.path)
        #expect(export.status == 0, "\(export.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: [[String: Any]]])
        let trips = try #require(document["Trip"])
        #expect(Set(trips.compactMap { $0["destination"] as? String }) == ["Porto and Braga", "Faro"])
        #expect(document["BucketListItem"]?.isEmpty == true && document["LivingAccommodation"]?.isEmpty == true)
        // The store's tables as SQLite holds them (Core Data's layout), read without our code.
        let raw = try RawDatabase(url)
        defer { raw.close() }
        #expect(try raw.strings("SELECT ZNAME, ZDESTINATION FROM ZTRIP ORDER BY ZSTARTDATE") == [["Summer", "Porto and Braga"], ["Winter", "Faro"]])
    }
}
