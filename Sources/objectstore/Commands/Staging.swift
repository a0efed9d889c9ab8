import Foundation
import ObjectStore

extension StagedLocation {
    /// The error to report when writing `destination` failed with `error`: it names the
    /// destination, and the staged name in its text is the destination's.
    func failure(_ error: any Error, writing destination: String) -> any Error {
        guard let (code, text) = ObjectStoreCommand.describe(error) else { return error }
        let staged = url.isFileURL ? url.path : url.absoluteString
        let message = text.replacingOccurrences(of: staged, with: destination)
        return CLIError(message.hasPrefix(destination + ":") ? message : "\(destination): not written: " + message, code: code)
    }
}

extension StoreType {
    /// Sweeps what interrupted runs left beside `destination`, telling the user on stderr.
    func sweepAndSay(beside destination: URL) {
        for leftover in sweepStaged(beside: destination) {
            printError("objectstore: removed \(leftover), left by an interrupted run\n")
        }
    }
}
