#!/usr/bin/env bash
# Sets up a fresh machine (apt packages, Python venv, Rust builds) and runs every test:
# formatting and lints, Rust unit/integration tests, quick runs of the benchmarks, bounded
# fuzzing, and the Python integration tests against real Open vSwitch, os-ken and Faucet.
# Used by CI through .ci/run.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

step() { printf '\n==> %s (%ss)\n' "$*" "$SECONDS"; }

step "setup"
scripts/setup.sh

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
.venv/bin/ruff check python
.venv/bin/ruff format --check python

step "rust tests"
# The daemon binary first: hairpinctl's tests drive a real hairpind.
cargo build --workspace --bins
cargo test --workspace

step "release build and quick benchmark runs"
cargo build --workspace --release --bins
HAIRPIN_BENCH_QUICK=1 cargo bench -p switch-core --bench flowmod
HAIRPIN_BENCH_QUICK=1 cargo bench -p dataplane --bench table2

step "fuzzing (bounded)"
scripts/fuzz.sh "${HAIRPIN_FUZZ_SECONDS:-60}"

step "python integration tests"
HAIRPIN_BIN="$REPO/target/release" .venv/bin/pytest -q python/tests
