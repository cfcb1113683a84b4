#!/usr/bin/env bash
# `npm test`: setup, native tests and lints, the wasm release build, the workerd suite
# (Miniflare driving the real wasm worker with an in-memory D1), the operator console in a real
# browser (Chromium against the same worker served on a local port), then contract fuzzing
# (schemathesis against the same worker served on a local port), with the bench at a small scale.
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
# The suite reaches workers, ticks, D1 and R2 by HTTP only (see tests/workerd/harness.mjs): no
# binding proxy, whose synchronous calls were seen paired with the wrong reply under load.
node --test --test-concurrency=1 tests/workerd/
step "node --test tests/browser/ (the operator console in Chromium)"
ensure_chromium
node --test --test-concurrency=1 tests/browser/
step "bench at BENCH_SCALE=0.01 (so it cannot rot)"
BENCH_SCALE=0.01 node tests/bench/run.mjs
step "contract fuzzing: the fuzzer catches an undeclared status"
node tests/fuzz/run.mjs --prove-it-fails
step "contract fuzzing: schemathesis, every check, fixed seed"
node tests/fuzz/run.mjs
