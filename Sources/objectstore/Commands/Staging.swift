import Foundation
import ObjectStore
import PostgreSQLStore

extension StagedStore {
    /// The error to report when writing `destination` failed with `error`: it names the
    /// destination, and the staged name in its text is the destination's.
    func failure(_ error: any Error, writing destination: String) -> any Error {
        guard let (code, text) = ObjectStoreCommand.describe(error) else { return error }
        let message = text.replacingOccurrences(of: url.path, with: destination)
        return CLIError(message.hasPrefix(destination + ":") ? message : "\(destination): not written: " + message, code: code)
    }

    /// Sweeps what interrupted runs left beside `destination`, telling the user on stderr.
    static func sweepAndSay(beside destination: URL) {
        for stem in sweep(beside: destination) {
            printError("objectstore: removed \(stem), left by an interrupted run\n")
        }
    }
}

extension PostgreSQLStagedStore {
    /// Sweeps the staging schemas interrupted runs left beside `destination`, telling the user on stderr.
    static func sweepAndSay(beside destination: URL) {
        for schema in sweep(beside: destination) {
            printError("objectstore: removed the schema \(schema), left by an interrupted run\n")
        }
    }
}
