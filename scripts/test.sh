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
# Miniflare's synchronous D1 proxy (used by test SQL reads) now and then pairs a reply with the
# wrong request ("SynchronousFetcher" assertion) and every later read of that file fails. Only a
# file whose failures show that assertion is run once more; any other failure fails at once.
WORKERD_LOG="$(mktemp)"
if ! node --test --test-concurrency=1 tests/workerd/ 2>&1 | tee "$WORKERD_LOG"; then
  if ! grep -q "SynchronousFetcher.fetch" "$WORKERD_LOG"; then exit 1; fi
  mapfile -t AGAIN < <(grep -A4 "^not ok" "$WORKERD_LOG" | sed -n "s/^ *location: '\(.*\.test\.mjs\):.*/\1/p" | sort -u)
  if [ "${#AGAIN[@]}" -eq 0 ]; then exit 1; fi
  step "node --test again, for the proxy assertion only: ${AGAIN[*]}"
  node --test --test-concurrency=1 "${AGAIN[@]}"
fi
step "node --test tests/browser/ (the operator console in Chromium)"
ensure_chromium
node --test --test-concurrency=1 tests/browser/
step "bench at BENCH_SCALE=0.01 (so it cannot rot)"
BENCH_SCALE=0.01 node tests/bench/run.mjs
step "contract fuzzing: the fuzzer catches an undeclared status"
node tests/fuzz/run.mjs --prove-it-fails
step "contract fuzzing: schemathesis, every check, fixed seed"
node tests/fuzz/run.mjs
