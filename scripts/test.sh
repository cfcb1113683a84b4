#!/usr/bin/env bash
# `npm test`: setup, native tests and lints, the wasm release build, then the workerd suite
# (Miniflare driving the real wasm worker with an in-memory D1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup.sh"
cd "$ROOT"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy (native)"
cargo clippy --all-targets --locked -- -D warnings
step "cargo clippy (wasm32)"
cargo clippy --target wasm32-unknown-unknown --locked -- -D warnings
step "cargo test (native)"
cargo test --locked
step "worker-build --release"
worker-build --release
step "node --test tests/workerd/"
node --test --test-concurrency=1 tests/workerd/
