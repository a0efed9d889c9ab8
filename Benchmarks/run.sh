#!/usr/bin/env bash
# Measures migration speed and memory, the context against GRDB 7.10, then the atomic file and the
# in-memory store, in one run on this machine, and prints Markdown tables (docs/performance.md
# records the figures). Each benchmark then checks its figures against the limits checked in under
# Thresholds/ (one JSON file per benchmark) and the script fails when one is over.
# Usage: Benchmarks/run.sh [objects] [small objects] [context objects] [context rounds] [atomic-file objects] [live-data books] [shapes small] [shapes large]
set -euo pipefail
cd "$(dirname "$0")"
# SwiftPM caches the main package's file list; touching the manifests makes it see new files.
touch Package.swift ../Package.swift
for product in migration-bench context-bench atomic-bench atomic-reader measure live-bench shapes-bench; do swift build -c release --product "$product" >&2; done
# The tool as the README builds it (its whole commands are measured below).
(cd .. && swift build -c release --static-swift-stdlib --product objectstore >&2)
.build/release/migration-bench report "${1:-1000000}" "${2:-100000}"
echo
.build/release/context-bench report "${3:-100000}" "${4:-5}"
echo
.build/release/atomic-bench report "${5:-200000}" 20000 ../.build/release/objectstore
echo
.build/release/live-bench report "${6:-500000}" 200 ../.build/release/objectstore
echo
# Whole convert commands on the model with the shapes users have, at 100,000 and 1,000,000 objects (issue 23).
.build/release/shapes-bench report "${7:-100000}" "${8:-1000000}" ../.build/release/objectstore
# The ordo-one/benchmark suite (smaller stores, repeated): swift package benchmark
