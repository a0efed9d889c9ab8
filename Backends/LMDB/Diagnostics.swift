import Logging

/// The module's diagnostics (LMDB stores: opening, map growth), through swift-log at debug and trace
/// level: nothing is printed unless the application configures a handler that shows them
/// (`LoggingSystem.bootstrap`; `objectstore --verbose` does).
let logger = Logger(label: "objectstore.lmdb")
