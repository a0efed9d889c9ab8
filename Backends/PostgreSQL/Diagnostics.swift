import Logging

/// The module's diagnostics (PostgreSQL stores: connections, staging schemas), through swift-log at debug and trace
/// level: nothing is printed unless the application configures a handler that shows them
/// (`LoggingSystem.bootstrap`; `objectstore --verbose` does).
let logger = Logger(label: "objectstore.postgresql")
