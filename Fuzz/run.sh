#!/usr/bin/env bash
# Fuzzes every reader of untrusted input with libFuzzer: each target runs RUNS executions
# (default 1,000,000) from the seeds in Seeds/<target>; what it finds new is kept in corpus/.
# A crash leaves its input in artifacts/<target>/ and fails the script: make it a regression test.
#   Fuzz/run.sh [RUNS] [TARGET…]
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-1000000}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(atomic xml jsonmodel import predicate mapping plist archive)
# SwiftPM caches the main package's file list; touching the manifests makes it see new files.
touch Package.swift ../Package.swift
swift build -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library
binary=.build/debug/fuzz-targets
failed=0
printf '%-10s %12s %10s %8s %s\n' target executions seconds crashes corpus
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target" logs
    start=$(date +%s)
    status=0
    OBJECTSTORE_FUZZ_TARGET=$target "$binary" -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix="artifacts/$target/" -print_final_stats=1 "corpus/$target" "Seeds/$target" > "logs/$target.log" 2>&1 || status=$?
    seconds=$(( $(date +%s) - start ))
    executions=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "logs/$target.log" | grep -o '[0-9]*$' || echo 0)
    crashes=$(ls "artifacts/$target" | wc -l)
    printf '%-10s %12s %10s %8s %s\n' "$target" "$executions" "$seconds" "$crashes" "$(ls "corpus/$target" | wc -l)"
    if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then failed=1; tail -20 "logs/$target.log"; fi
done
exit $failed
