// Extraction MB/s in the wasm build, against the native build's, body for body. workerd's clocks
// do not advance while wasm runs, so the bench's extraction (examples/shared/extraction.rs) is
// built a second time as `examples/extraction_wasm.rs` for wasm32-unknown-unknown with the
// worker's release profile, bound by wasm-bindgen (its web target, instantiated from the bytes) (the CLI scripts/setup.sh
// installs), and run in this process, timed by its CPU clock (`process.cpuUsage`, user +
// system: one thread runs it); the native figures are `core_cpu`'s thread CPU on the same
// bodies. `wasmExtraction(native)` is step 5 of tests/bench/run.mjs; run alone
// (`node tests/bench/wasm_extraction.mjs`, after `. scripts/setup.sh`) it measures both builds
// and prints the table.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CARGO_BIN = path.join(process.env.CARGO_HOME ?? path.join(process.env.HOME ?? "", ".cargo"), "bin");
const quiet = { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] };

/** This process's CPU (user + system) in ms. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** How the native `core_cpu` is built: release, or (BENCH_CORE_PROFILE=dev) the dev build. */
export const CORE_BUILD = process.env.BENCH_CORE_PROFILE === "dev" ? { args: [], dir: "debug" } : { args: ["--release"], dir: "release" };

/** The native build's extraction figures: `core_cpu` with `CORE_CPU=extraction`. */
export function nativeExtraction() {
  execFileSync("cargo", ["build", ...CORE_BUILD.args, "--quiet", "--example", "core_cpu"], quiet);
  const line = execFileSync(path.join(ROOT, `target/${CORE_BUILD.dir}/examples/core_cpu`), { cwd: ROOT, env: { ...process.env, CORE_CPU: "extraction" } })
    .toString()
    .split("\n")
    .find((l) => l.startsWith("CORE_JSON "));
  return JSON.parse(line.slice("CORE_JSON ".length)).extraction;
}

/**
 * The wasm build's extraction figures beside `native`'s (`[{body, bytes, ms, mbPerS}]`): each
 * body's wasm ms and MB/s and its ratio (wasm ms / native ms), and the ratios' median and
 * largest.
 */
export async function wasmExtraction(native) {
  execFileSync("cargo", ["build", "--release", "--quiet", "--example", "extraction_wasm", "--target", "wasm32-unknown-unknown"], quiet);
  const out = path.join(ROOT, "target/extraction-wasm");
  const wasmBindgen = path.join(CARGO_BIN, "wasm-bindgen");
  rmSync(out, { recursive: true, force: true });
  execFileSync(wasmBindgen, ["--target", "web", "--out-dir", out, path.join(ROOT, "target/wasm32-unknown-unknown/release/examples/extraction_wasm.wasm")], quiet);
  // The web target's module, instantiated from the bytes (no fetch).
  const bench = await import(pathToFileURL(path.join(out, "extraction_wasm.js")).href);
  bench.initSync({ module: readFileSync(path.join(out, "extraction_wasm_bg.wasm")) });
  const wasm = JSON.parse(bench.extraction(cpuMs));
  const bodies = wasm.map((w) => {
    const n = native.find((x) => x.body === w.body);
    return { body: w.body, bytes: w.bytes, nativeMs: n.ms, nativeMbPerS: n.mbPerS, wasmMs: w.ms, wasmMbPerS: w.mbPerS, ratio: w.ms / n.ms };
  });
  const ratios = bodies.map((b) => b.ratio).sort((a, b) => a - b);
  return { bodies, medianRatio: ratios[Math.floor(ratios.length / 2)], maxRatio: ratios[ratios.length - 1] };
}

/** Prints the table of `wasmExtraction`'s result. */
export function printWasmExtraction(r) {
  const f = (x, d = 1) => x.toFixed(d);
  console.log(`\nExtraction of 1 MiB, native and wasm (CPU, best of 7; ratio: wasm time / native time)`);
  for (const b of r.bodies) {
    console.log(`  ${b.body.padEnd(28)} native ${`${f(b.nativeMbPerS, 0)} MB/s`.padEnd(10)} wasm ${`${f(b.wasmMbPerS, 0)} MB/s`.padEnd(10)} ×${f(b.ratio, 2)}`);
  }
  console.log(`  wasm / native: median ×${f(r.medianRatio, 2)}, largest ×${f(r.maxRatio, 2)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await wasmExtraction(nativeExtraction());
  printWasmExtraction(r);
  console.log(`WASM_EXTRACTION_JSON ${JSON.stringify(r)}`);
}
