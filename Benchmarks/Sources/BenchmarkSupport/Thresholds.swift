import Foundation

/// The limits a benchmark's figures must keep, checked in as JSON under `Benchmarks/Thresholds/`
/// (one file per benchmark executable, the way swift-nio keeps its allocation limits next to its
/// benchmarks): each key names a figure, each value is the largest ratio (or, for figures in
/// microseconds, the largest value) it may reach. A report records every figure it measured;
/// ``finish()`` prints them against their limits and ends the process with status 1 when one is
/// over or missing.
public final class Thresholds {
    /// The limits, by figure name.
    public let limits: [String: Double]
    private let file: URL
    private var measured: [(name: String, value: Double)] = []

    /// Reads `Thresholds/<benchmark>.json` from the benchmark package's folder (the working
    /// directory `Benchmarks/run.sh` runs in, or the folder given by `OBJECTSTORE_THRESHOLDS`).
    public init(benchmark: String) throws {
        let folder = ProcessInfo.processInfo.environment["OBJECTSTORE_THRESHOLDS"].map { URL(filePath: $0) }
            ?? URL(filePath: FileManager.default.currentDirectoryPath).appending(path: "Thresholds")
        file = folder.appending(path: "\(benchmark).json")
        guard let data = FileManager.default.contents(atPath: file.path),
              let limits = try JSONSerialization.jsonObject(with: data) as? [String: Double] else {
            throw BenchmarkFailure("\(file.path): no thresholds (a JSON object of figure names to limits)")
        }
        self.limits = limits
    }

    /// Records a figure.
    public func record(_ name: String, _ value: Double) {
        measured.append((name, value))
    }

    /// Prints every figure against its limit as a Markdown table; exits with status 1, saying why
    /// on standard error, when a figure is over its limit, a figure has no limit, or a limit no
    /// figure was measured for.
    public func finish() {
        print("| figure (\(file.lastPathComponent)) | measured | limit | |")
        print("|---|---|---|---|")
        var problems: [String] = []
        for (name, value) in measured {
            guard let limit = limits[name] else { problems.append("\(name): no limit in \(file.lastPathComponent)"); continue }
            let holds = value <= limit
            print("| \(name) | \(String(format: "%.2f", value)) | ≤ \(String(format: "%.2f", limit)) | \(holds ? "holds" : "**over**") |")
            if !holds { problems.append("\(name): \(String(format: "%.2f", value)) over its limit \(limit)") }
        }
        for name in Set(limits.keys).subtracting(measured.map(\.name)).sorted() { problems.append("\(name): not measured") }
        guard problems.isEmpty else {
            FileHandle.standardError.write(Data(("thresholds not kept: " + problems.joined(separator: "; ") + "\n").utf8))
            exit(1)
        }
    }
}
