#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time each (default 60 s): the OpenFlow decoder, the
# datapath pipeline, and the packet parser with a trace through tables of every action kind.
# Installs cargo-fuzz on first use. Exits non-zero on any crash.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_PER_TARGET=${1:-60}
cd "$REPO/fuzz"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo +nightly install cargo-fuzz --locked --quiet
fi
for target in $(cargo +nightly fuzz list); do
    printf 'fuzz: %s for %ss\n' "$target" "$SECONDS_PER_TARGET"
    mkdir -p "corpus/$target"
    log=$(mktemp)
    status=0
    cargo +nightly fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E '^(stat::number_of_executed_units|SUMMARY|thread .* panicked)' "$log" || true
    if [[ $status -ne 0 ]]; then
        tail -n 40 "$log"
        exit "$status"
    fi
    rm -f "$log"
done
