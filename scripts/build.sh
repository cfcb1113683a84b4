#!/usr/bin/env bash
# Release build of the worker into build/ (worker-build: cargo → wasm-bindgen → wasm-opt → esbuild).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup.sh"
cd "$ROOT"
worker-build --release
