// Property-based contract fuzzing: serves the real wasm worker (Miniflare, local D1) on a port
// and runs schemathesis against openapi.json with every check, a fixed seed and a floor on the
// number of generated test cases. `SCHEMATHESIS_BIN` names the `st` executable (scripts/setup.sh).
//
//   node tests/fuzz/run.mjs                 the full run (npm test)
//   node tests/fuzz/run.mjs --prove-it-fails
//       the same fuzzer against a copy of openapi.json with one status deliberately left
//       undeclared (getMedia's 404): it must report the failure, or this run fails.
import { Miniflare } from "miniflare";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb } from "../workerd/harness.mjs";
import { postsSite } from "../workerd/helpers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const ST = process.env.SCHEMATHESIS_BIN ?? "st";
const PROVE = process.argv.includes("--prove-it-fails");
const MIN_CASES = PROVE ? 0 : 2000;
const MAX_EXAMPLES = PROVE ? "5" : "30";

let schema = path.join(ROOT, "openapi.json");
if (PROVE) {
  const doc = JSON.parse(readFileSync(schema, "utf8"));
  delete doc.paths["/_emdash/api/media/{id}"].get.responses["404"];
  schema = path.join(mkdtempSync(path.join(tmpdir(), "fuzz-")), "openapi.json");
  writeFileSync(schema, JSON.stringify(doc));
}

const mf = new Miniflare({
  workers: [
    {
      name: "main",
      ...workerOptions({ SITE_URL: "https://site.example/", MEDIA_PUBLIC_URL: "https://cdn.example/m" }),
      // Uploads are fuzzed end to end, into a local bucket.
      r2Buckets: { MEDIA_BUCKET: "fuzz-media" },
    },
    probeWorker(),
  ],
  port: 0,
  host: "127.0.0.1",
});
const url = await mf.ready;
const db = new ProbeDb(mf);
for (const sql of migrationStatements()) await db.prepare(sql).run();

// A little content so that reads have something to find.
const api = async (method, p, body) => {
  const res = await fetch(new URL(`/_emdash/api${p}`, url), {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json();
};
// The posts site (tests/fixtures/posts_site.json), its images registered by key.
await postsSite(api, async (m) => (await api("POST", "/media", { filename: m.filename, mimeType: m.mimeType, storageKey: `uploads/${m.filename}` })).data.item);

// Every check is enabled by default (none is named here: a check named on the command line
// would override the per-operation settings of schemathesis.toml). One worker: with two, the
// fuzzer's threads parse Python source at once (the property-testing library describes its
// filters), and this machine's Python 3.11 then fails at random with "AST constructor recursion
// depth mismatch", a runtime error of the interpreter, not a finding.
const args = [
  "--config-file", path.join(HERE, "schemathesis.toml"),
  "run", schema,
  "--url", new URL("/", url).toString().replace(/\/$/, ""),
  "--seed", "20261203",
  "--max-examples", MAX_EXAMPLES,
  "--header", `Authorization: Bearer ${ADMIN_TOKEN}`,
  "--workers", "1",
  "--no-color",
  ...(PROVE ? ["--include-operation-id", "getMedia"] : []),
];
const env = { ...process.env, SCHEMATHESIS_HOOKS: "hooks", PYTHONPATH: HERE };
const child = spawn(ST, args, { stdio: ["ignore", "pipe", "inherit"], env });
let out = "";
child.stdout.on("data", (d) => {
  out += d;
  if (!PROVE) process.stdout.write(d);
});
const code = await new Promise((resolve) => child.on("close", resolve));
await mf.dispose();
const cases = Number(/(\d[\d,]*) generated/.exec(out)?.[1].replace(/,/g, "") ?? 0);
const summary = out.trim().split("\n").filter((l) => /={3,}/.test(l)).pop() ?? "(no summary)";
if (PROVE) {
  const caught = code !== 0 && /ST103|Undocumented status code/.test(out);
  console.log(`fuzz self-test: an undeclared 404 ${caught ? "is reported" : "was NOT reported"}: ${summary}`);
  process.exit(caught ? 0 : 1);
}
console.log(`fuzz: ${summary.replace(/=/g, "").trim()}; ${cases} generated test cases (floor ${MIN_CASES})`);
if (code !== 0) process.exit(code ?? 1);
if (cases < MIN_CASES) {
  console.error(`fuzz: fewer than ${MIN_CASES} generated test cases`);
  process.exit(1);
}
