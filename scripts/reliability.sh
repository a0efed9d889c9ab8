#!/usr/bin/env bash
# The reliability harnesses run big (docs/reliability.md): the real binary killed at 40 points
# per scenario over stores of 3,000 objects, 1,000 random damages per backend (and 1,000
# damaged -wal files), 20 rounds of move-aside during an import per backend, the full-disk
# and two-process tests, then 1,000,000 libFuzzer executions per reader.
#   scripts/reliability.sh [FUZZ_RUNS]
# The default-size versions of the same tests run in `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
export OBJECTSTORE_KILLS=${OBJECTSTORE_KILLS:-40}
export OBJECTSTORE_CRASH_OBJECTS=${OBJECTSTORE_CRASH_OBJECTS:-3000}
export OBJECTSTORE_DAMAGES=${OBJECTSTORE_DAMAGES:-1000}
export OBJECTSTORE_RACES=${OBJECTSTORE_RACES:-20}
swift build --build-tests
start=$(date +%s)
swift test --skip-build --filter 'CrashTests\.|DamagedStoreTests|SQLiteRecoveryTests|FileSafetyTests|AtomicWriterTests|MigrateCommandTests|hostileArchives|damagedExternalFiles'
echo "harnesses: $(( $(date +%s) - start )) s (kills $OBJECTSTORE_KILLS per scenario, $OBJECTSTORE_CRASH_OBJECTS objects, $OBJECTSTORE_DAMAGES damages per backend, $OBJECTSTORE_RACES races)"
Fuzz/run.sh "$runs"
