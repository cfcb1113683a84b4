#!/usr/bin/env bash
# Installs everything the build and tests need, from package registries only, and exports the
# tool locations worker-build would otherwise try to download. Idempotent: each step is skipped
# when the pinned version is already present. Source it: `. scripts/setup.sh`.
#
# Tool versions are pinned here and nowhere else (npm packages are pinned in package.json and
# package-lock.json; the wasm-bindgen crate is pinned in Cargo.toml).
set -euo pipefail

WORKER_BUILD_VERSION="0.8.7"
# The contract fuzzer, from the Python package registry, in a private virtual environment.
SCHEMATHESIS_VERSION="4.32.5"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Where `cargo install` puts binaries; the tools are looked up there, not anywhere on PATH.
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$CARGO_BIN:$PATH"

log() { printf '[setup] %s\n' "$*" >&2; }

# The wasm-bindgen CLI must match the wasm-bindgen crate resolved in Cargo.lock exactly.
WASM_BINDGEN_VERSION="$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' "$ROOT/Cargo.lock")"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown >&2
fi

# The CLIs worker-build runs, compiled from the Rust crate registry (once). Unoptimized
# (`--debug`): each compiles in about a minute instead of several, and a build runs them for a
# couple of seconds more (measured: the wasm release build 35 s against 33 s).
install_cargo_tools() {
  if [ "$("$CARGO_BIN/wasm-bindgen" --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
    log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a minute, once)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked --debug --force >&2
  fi

  if [ "$("$CARGO_BIN/worker-build" --version 2>/dev/null | awk '{print $NF}')" != "$WORKER_BUILD_VERSION" ]; then
    log "installing worker-build $WORKER_BUILD_VERSION (a minute, once)"
    cargo install worker-build --version "$WORKER_BUILD_VERSION" --locked --debug --force >&2
  fi
}

# The npm packages (esbuild and wasm-opt for worker-build, Miniflare, wrangler, the browser driver).
STAMP="$ROOT/node_modules/.package-lock.json"
install_npm() {
  if [ ! -f "$STAMP" ] || [ "$ROOT/package-lock.json" -nt "$STAMP" ]; then
    log "installing npm packages"
    (cd "$ROOT" && npm ci --no-audit --no-fund >&2)
  fi
}

VENV="$ROOT/.tools/schemathesis"
install_schemathesis() {
  if [ "$("$VENV/bin/st" --version 2>/dev/null | awk '{print $NF}')" != "$SCHEMATHESIS_VERSION" ]; then
    log "installing schemathesis $SCHEMATHESIS_VERSION"
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2
  fi
}

# The browser for the console tests (`npm test` calls this; `npm start` does not need it):
# Debian's chromium package, driven by playwright-core from npm. Installed when missing and this
# machine can (root with apt-get); otherwise the browser tests fail and say why.
ensure_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      log "installing chromium (Debian package)"
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
    else
      log "chromium is missing: install Debian's chromium package (needs root) for the browser tests"
    fi
  fi
  CHROMIUM_BIN="$(command -v chromium || echo /usr/bin/chromium)"
  export CHROMIUM_BIN
}

# Everything at once, in order; `npm test` sets SETUP_LATER and runs these itself, beside its
# first stages.
if [ -z "${SETUP_LATER:-}" ]; then
  install_cargo_tools
  install_npm
  install_schemathesis
fi

export SCHEMATHESIS_BIN="$VENV/bin/st"
export WASM_BINDGEN_BIN="$CARGO_BIN/wasm-bindgen"
export ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild"
export WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt"
export PATH="$ROOT/node_modules/.bin:$PATH"
