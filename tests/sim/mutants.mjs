// `npm run sim:mutants`: plants each defect of tests/sim/mutants.json in a scratch copy of the
// crate, builds the simulator there and runs its default run (scripts/sim.sh's seeds and
// operations): every defect must break an invariant. Prints the table README shows and ends with
// `mutants: K planted, K found`. Exits non-zero when a defect goes unnoticed. Numbers given as
// arguments plant only those; `--shrink` also shrinks each failure to a short trace, saved as
// target/sim-mutants/shrunk-<n>.jsonl (what tests/sim/traces keeps for the defects that were real).
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const scratch = join(root, "target", "sim-mutants");
const copy = join(scratch, "crate");
const mutants = JSON.parse(readFileSync(join(root, "tests", "sim", "mutants.json"), "utf8"));
const only = process.argv.slice(2).map(Number).filter((n) => n > 0);
const shrink = process.argv.includes("--shrink");
const { seeds, ops } = defaultRun();

function defaultRun() {
  const script = readFileSync(join(root, "scripts", "sim.sh"), "utf8");
  return { seeds: script.match(/^SIM_SEEDS=(\S+)/m)[1], ops: script.match(/^SIM_OPS=(\S+)/m)[1] };
}

rmSync(copy, { recursive: true, force: true });
mkdirSync(copy, { recursive: true });
for (const entry of ["Cargo.toml", "Cargo.lock", "rust-toolchain.toml", "openapi.json", "src", "migrations", "examples"]) {
  cpSync(join(root, entry), join(copy, entry), { recursive: true });
}
const env = { ...process.env, CARGO_TARGET_DIR: join(scratch, "target") };
// Start from the crate's own build of its dependencies (hard links), so only the crate is built.
if (!existsSync(join(scratch, "target", "debug")) && existsSync(join(root, "target", "debug", "deps"))) {
  mkdirSync(join(scratch, "target", "debug"), { recursive: true });
  for (const dir of ["deps", "build", ".fingerprint"]) {
    execFileSync("cp", ["-al", join(root, "target", "debug", dir), join(scratch, "target", "debug", dir)]);
  }
}
const rows = [];
let found = 0;
mutants.forEach((m, i) => {
  const n = i + 1;
  if (only.length && !only.includes(n)) return;
  const originals = new Map();
  for (const e of m.edits) {
    const path = join(copy, e.file);
    const text = originals.get(path) ?? readFileSync(path, "utf8");
    originals.set(path, text);
    const current = readFileSync(path, "utf8");
    const at = current.split(e.from).length - 1;
    if (at !== 1) throw new Error(`mutant ${n}: ${JSON.stringify(e.from)} occurs ${at} times in ${e.file}`);
    writeFileSync(path, current.replace(e.from, e.to));
  }
  try {
    execFileSync("cargo", ["build", "--quiet", "--locked", "--example", "sim"], { cwd: copy, env, stdio: ["ignore", "ignore", "inherit"] });
    const run = spawnSync(join(scratch, "target", "debug", "examples", "sim"), ["--seeds", seeds, "--ops", ops], {
      cwd: copy,
      encoding: "utf8",
      maxBuffer: 1 << 28,
    });
    const broken = /invariant broken \(seed (\d+)\) after (\d+) operations[^\n]*\n\s+([^\n]*)/.exec(run.stderr ?? "");
    if (run.status !== 0 && broken) {
      found += 1;
      rows.push([n, m.defect, broken[1], broken[2], broken[3].slice(0, 90)]);
      if (shrink) {
        spawnSync(join(scratch, "target", "debug", "examples", "sim"), ["--trace", join("target", "sim", `failure-${broken[1]}.jsonl`), "--shrink"], {
          cwd: copy,
          encoding: "utf8",
          maxBuffer: 1 << 28,
        });
        cpSync(join(copy, "target", "sim", `shrunk-${broken[1]}.jsonl`), join(scratch, `shrunk-${n}.jsonl`));
      }
    } else {
      rows.push([n, m.defect, "-", "not found", (run.stderr ?? "").split("\n").filter(Boolean).pop() ?? ""]);
    }
  } finally {
    for (const [path, text] of originals) writeFileSync(path, text);
  }
  const r = rows[rows.length - 1];
  console.log(`mutant ${n}: ${r[1]} — seed ${r[2]}, ${r[3]} operations: ${r[4]}`);
});
console.log("\n| # | Planted defect | Seed | Operations until found | Invariant that broke |\n|---|---|---|---|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
console.log(`\nmutants: ${rows.length} planted, ${found} found`);
process.exit(found === rows.length ? 0 : 1);
