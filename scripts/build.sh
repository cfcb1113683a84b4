#!/usr/bin/env bash
# Release build of the worker into build/ (worker-build: cargo → wasm-bindgen → wasm-opt → esbuild).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup.sh"
cd "$ROOT"
# `npm test` builds first and then runs `wrangler deploy --dry-run`, whose [build] step lands
# here: it sets MEDIA_USAGE_BUILT=1 so the build it just made is packaged as it is.
if [ "${MEDIA_USAGE_BUILT:-}" = 1 ] && [ -f build/worker/shim.mjs ]; then
  exit 0
fi
worker-build --release
