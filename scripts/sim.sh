#!/usr/bin/env bash
# `npm run sim -- [--seed S | --seeds A,B] [--ops N] [--trace FILE] [--replay DIR] [--shrink] [-v]`:
# the deterministic simulation (examples/sim, docs/simulation.md). Without arguments, the default
# run: the seeds and operations below, two processes at once, then every committed regression
# trace (tests/sim/traces) replayed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SIM_SEEDS=1,2,3,4
SIM_OPS=25000
cargo build --quiet --locked --example sim
SIM=target/debug/examples/sim
if [ "$#" -gt 0 ]; then
  exec "$SIM" "$@"
fi
# Two seeds per process, a process per core.
"$SIM" --seeds 1,2 --ops "$SIM_OPS" >target/sim-a.log 2>&1 & a=$!
"$SIM" --seeds 3,4 --ops "$SIM_OPS" >target/sim-b.log 2>&1 & b=$!
status=0
wait "$a" || status=1
wait "$b" || status=1
cat target/sim-a.log target/sim-b.log
[ "$status" -eq 0 ] || exit 1
"$SIM" --replay tests/sim/traces
cat target/sim-a.log target/sim-b.log | awk -v seeds="$SIM_SEEDS" '
  /^sim: [0-9]+ operations, [0-9]+ faults, invariants held \(seed [0-9,]+\)$/ { ops += $2; faults += $4 }
  END { printf "sim: %d operations, %d faults, invariants held (seed %s)\n", ops, faults, seeds }'

