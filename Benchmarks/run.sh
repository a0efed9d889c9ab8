#!/usr/bin/env bash
# Measures migration speed and memory, then the atomic file and the in-memory store, on this
# machine and prints Markdown tables (docs/performance.md records the figures).
# Usage: Benchmarks/run.sh [objects] [small objects] [atomic-file objects]
set -euo pipefail
cd "$(dirname "$0")"
# SwiftPM caches the main package's file list; touching the manifests makes it see new files.
touch Package.swift ../Package.swift
swift build -c release --product migration-bench >&2
swift build -c release --product atomic-bench >&2
.build/release/migration-bench report "${1:-1000000}" "${2:-100000}"
echo
.build/release/atomic-bench report "${3:-200000}"
# The ordo-one/benchmark suite (smaller stores, repeated): swift package benchmark
