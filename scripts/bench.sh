#!/usr/bin/env bash
# `npm run bench`: setup, the wasm release build, then tests/bench/run.mjs (BENCH_SCALE scales it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup.sh"
cd "$ROOT"
worker-build --release >&2
node tests/bench/run.mjs
