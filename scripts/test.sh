#!/usr/bin/env bash
# Sets up a fresh machine (apt packages, Python venv, Rust builds) and runs every test:
# formatting and lints, Rust unit/integration tests, Python integration tests against real
# Open vSwitch and os-ken, and bounded fuzzing. Used by CI through .ci/run.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

step() { printf '\n==> %s\n' "$*"; }

step "setup"
scripts/setup.sh

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings
.venv/bin/ruff check python
.venv/bin/ruff format --check python

step "build"
cargo build --workspace --release --bins

step "rust tests"
cargo test --workspace --release

step "fuzzing (bounded)"
scripts/fuzz.sh "${HAIRPIN_FUZZ_SECONDS:-60}"

step "python integration tests"
HAIRPIN_BIN="$REPO/target/release" .venv/bin/pytest -q python/tests
