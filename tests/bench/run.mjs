// `npm run bench`: figures for the media usage index on the real wasm worker in Miniflare with
// local D1. Prints one table and one JSON line. BENCH_SCALE (default 1) scales every size; `npm
// test` runs it at 0.01 so it cannot rot. Tick counts use the default statement budget with the
// wall-time budget lifted, so they do not depend on the machine; times are this machine's.
//
// CPU per invocation, two ways: the workerd process's CPU (user + system, /proc) across each
// kind of request or tick, divided by their number — an upper bound, since the same process runs
// Miniflare's D1 (SQLite) and its plumbing; and the core's own CPU natively
// (examples/core_cpu.rs: the same requests and ticks on in-memory SQLite, the thread's CPU
// minus what the executor spent). Extraction MB/s natively and in the wasm build
// (tests/bench/wasm_extraction.mjs).
import { execFileSync, execSync } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startWorker } from "../workerd/harness.mjs";
import { largeCollection } from "../workerd/helpers.mjs";
import { CORE_BUILD, printWasmExtraction, wasmExtraction } from "./wasm_extraction.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const n = (full, min = 1) => Math.max(min, Math.round(full * SCALE));
const now = () => performance.now();
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

// The default statement and rows budgets per tick; the wall-time budget and the daily budget
// lifted, so tick counts measure throughput, not the machine or the day.
const w = await startWorker({ MEDIA_USAGE_TICK_MAX_QUERIES: "40", MEDIA_USAGE_TICK_MAX_MS: "600000", MEDIA_USAGE_DAILY_ROWS_WRITTEN: "0" });
const db = w.db;

/** The workerd processes under this one (Miniflare starts one). */
function workerdPids() {
  const parent = new Map();
  const comm = new Map();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      comm.set(pid, stat.slice(stat.indexOf("(") + 1, close));
      parent.set(pid, stat.slice(close + 2).split(" ")[1]);
    } catch {
      // The process ended while we looked.
    }
  }
  const under = (pid) => {
    for (let p = parent.get(pid); p && p !== "0"; p = parent.get(p)) if (p === String(process.pid)) return true;
    return false;
  };
  return [...comm].filter(([pid, c]) => c === "workerd" && under(pid)).map(([pid]) => pid);
}
const PIDS = workerdPids();
const TICKS_PER_SECOND = Number(execSync("getconf CLK_TCK").toString().trim()) || 100;
/** CPU (user + system) of the workerd processes so far, in ms; null where /proc cannot say. */
function workerdCpuMs() {
  if (PIDS.length === 0) return null;
  let ticks = 0;
  for (const pid of PIDS) {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}
/** Adds up the workerd CPU of the invocations `measure` wraps. */
function cpuMeter() {
  let ms = 0;
  let n = 0;
  return {
    async measure(fn) {
      const before = workerdCpuMs();
      const out = await fn();
      const after = workerdCpuMs();
      if (before !== null) ms += after - before;
      n += 1;
      return out;
    },
    perInvocation: () => (PIDS.length === 0 || n === 0 ? null : ms / n),
  };
}
const ok = (res, status = 200) => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
  return res.json.data;
};
const cost = (res) =>
  Object.fromEntries(res.headers.get("x-media-usage-cost").split(",").map((kv) => kv.trim().split("=")).map(([k, v]) => [k, Number(v)]));
const collectionId = async (slug) => (await db.prepare("SELECT id FROM _emdash_collections WHERE slug = ?1").bind(slug).first()).id;
/** Runs `sql` (with `{n}` rows from a recursive counter) in chunks of 50,000 rows. */
async function fill(sql, total, binds = []) {
  for (let from = 0; from < total; from += 50_000) {
    const to = Math.min(total, from + 50_000);
    await db.prepare(`WITH RECURSIVE c(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ${to}) ${sql}`).bind(...binds).run();
  }
}
async function ticksUntil(done, cap) {
  let ticks = 0;
  const t0 = now();
  const cpu = cpuMeter();
  while (!(await done()) && ticks < cap) {
    await cpu.measure(() => w.scheduled());
    ticks += 1;
  }
  return { ticks, ms: now() - t0, finished: await done(), cpuMsPerTick: cpu.perInvocation() };
}
async function tickLog(last) {
  const rows = (await db.prepare("SELECT statements, rows_written, rows_read, details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT ?1").bind(last).all()).results;
  const d1 = rows.map((r) => JSON.parse(r.details).d1 ?? {});
  return {
    statements: rows.reduce((s, r) => s + r.statements, 0),
    maxStatements: Math.max(0, ...rows.map((r) => r.statements)),
    maxBinds: Math.max(0, ...d1.map((x) => x.maxBinds ?? 0)),
    maxSqlBytes: Math.max(0, ...d1.map((x) => x.maxSqlBytes ?? 0)),
    maxRowsWritten: Math.max(0, ...rows.map((r) => r.rows_written)),
    maxRowsRead: Math.max(0, ...rows.map((r) => r.rows_read)),
  };
}
const results = {};

// 1. Content writes: statements and time per write of a 1-image and a 50-image entry.
ok(await w.post("/schema/collections", { slug: "bench_posts", label: "B", fields: [{ slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }] }] }), 201);
for (const images of [1, 50]) {
  const ms = [];
  let statements = 0;
  const writes = n(40, 5);
  const cpu = cpuMeter();
  for (let i = 0; i < writes; i++) {
    const gallery = Array.from({ length: images }, (_, k) => ({ image: `w${images}-${i}-${k}` }));
    const t0 = now();
    const res = await cpu.measure(() => w.post("/content/bench_posts", { slug: `w${images}-${i}`, status: "published", data: { gallery } }));
    ms.push(now() - t0);
    ok(res, 201);
    statements = Math.max(statements, cost(res).statements);
  }
  results[`write${images}`] = { writes, statements, p50: pct(ms, 50), p95: pct(ms, 95), cpuMs: cpu.perInvocation() };
}

// 1b. A rich entry: references by every rule (inline images in Portable Text, a gallery block,
// a link to a file URL, an id in JSON, an <img> in text): the write and its job, with the lookup.
ok(await w.post("/schema/collections", { slug: "bench_rich", label: "R", fields: [
  { slug: "body", type: "portableText" }, { slug: "extra", type: "json" }, { slug: "notes", type: "text" }] }), 201);
const richMedia = [];
for (let k = 0; k < 3; k++) {
  richMedia.push(ok(await w.post("/media", { filename: `rich${k}.png`, mimeType: "image/png", storageKey: `rich-${k}.png` }), 201).item);
}
const richData = (i) => ({
  body: [
    ...Array.from({ length: 20 }, (_, b) => ({ _type: "block", _key: `b${b}`, markDefs: b === 3 ? [{ _type: "link", _key: "l", href: `/_emdash/api/media/file/${richMedia[2].storageKey}` }] : [],
      children: [{ _type: "span", text: `paragraph ${b} of entry ${i}` }, ...(b % 10 === 5 ? [{ _type: "image", asset: { _ref: richMedia[0].id } }] : [])] })),
    { _type: "gallery", images: richMedia.map((m) => ({ asset: { _ref: m.id } })) },
  ],
  extra: { ogImage: richMedia[1].id, unknown: "0123456789abcdef0123456789abcdef" },
  notes: `<p><img src="/_emdash/api/media/file/${richMedia[2].storageKey}"> and /_emdash/api/media/file/missing-${i}.png</p>`,
});
{
  const ms = [];
  let statements = 0;
  const writes = n(40, 5);
  const cpu = cpuMeter();
  for (let i = 0; i < writes; i++) {
    const t0 = now();
    const res = await cpu.measure(() => w.post("/content/bench_rich", { slug: `rich-${i}`, status: "published", data: richData(i) }));
    ms.push(now() - t0);
    ok(res, 201);
    statements = Math.max(statements, cost(res).statements);
  }
  const used = ok(await w.get(`/media/${richMedia[0].id}/usage?limit=1`)).items[0]?.occurrences.length ?? 0;
  results.writeRich = { writes, statements, p50: pct(ms, 50), p95: pct(ms, 95), occurrencesOfOneItem: used, cpuMs: cpu.perInvocation() };
}

// 2. "Used in": the first page for a media used by many entries, among many occurrences.
{
  const users = n(10_000, 20);
  const occurrences = n(1_000_000, 1000);
  ok(await w.post("/schema/collections", { slug: "bench_used", label: "U", fields: [{ slug: "hero", type: "image" }] }), 201);
  const cid = await collectionId("bench_used");
  // Current sources, as a publish leaves them (identity version 1): "Used in" lists them.
  await fill(`INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, content_slug, content_status, current_generation, source_completeness, identity_version)
    SELECT 'content:' || ?1 || ':u' || i || ':columns', ?1, 'bench_used', 'u' || i, 'columns', 'u' || i, 'published', 'g', 'complete', 1 FROM c`, users, [cid]);
  await fill(`INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id)
    SELECT 'o' || i, 'content:' || ?1 || ':u' || (i % ${users}) || ':columns', 'g', 'hero', 'hero[' || i || ']', 'image_field',
           CASE WHEN i < ${users} THEN 'hot' ELSE 'm' || i END, 'm' || i FROM c`, occurrences, [cid]);
  const media = ok(await w.post("/media", { filename: "hot.jpg", mimeType: "image/jpeg", storageKey: "hot.jpg" }), 201).item.id;
  await db.prepare("UPDATE _emdash_media_usage SET media_id = ?1 WHERE media_id = 'hot'").bind(media).run();
  const sql = readFileSync(path.join(ROOT, "src/sql/usage/usage_page.sql"), "utf8");
  const api = [];
  const raw = [];
  const cpu = cpuMeter();
  for (let i = 0; i < 15; i++) {
    let t0 = now();
    const page = ok(await cpu.measure(() => w.get(`/media/${media}/usage`)));
    // A full first page: the bench measures a media really used by that many entries.
    if (page.items.length !== Math.min(50, users)) throw new Error(`"Used in" listed ${page.items.length} entries`);
    api.push(now() - t0);
    t0 = now();
    await db.prepare(sql).bind(media, null, null, 51).all();
    raw.push(now() - t0);
  }
  results.usedIn = { users, occurrences, apiMs: pct(api, 50), rawMs: pct(raw, 50), ratio: pct(api, 50) / pct(raw, 50), cpuMs: cpu.perInvocation() };
}

// 2b. The media library's "Unused" filter: pages of a library of N media, half of them used,
// beside the occurrences above (each page examines a bounded window; none counts all occurrences).
{
  const libSize = n(100_000, 200);
  const users = n(10_000, 20);
  // Even items are used once each (their ids are occurrences' media ids), odd ones are not.
  await fill(`INSERT INTO media (id, filename, mime_type, storage_key, status, created_at)
    SELECT CASE WHEN i % 2 = 0 THEN 'm' || (${users} + i) ELSE 'free' || i END, 'lib' || i || '.jpg', 'image/jpeg', 'lib/' || i || '.jpg', 'ready',
           strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' seconds') FROM c`, libSize);
  const page = async (query) => {
    const t0 = now();
    const res = await w.get(`/media?limit=50&${query}`);
    const ms = now() - t0;
    const data = res.json?.data;
    return { status: res.status, ms, items: data?.items?.length ?? 0, next: data?.nextCursor ?? null, ...cost(res) };
  };
  const first = await page("usage=unused&include=usage");
  let deep = null;
  if (first.status === 200) {
    let cursor = first.next;
    for (let i = 0; i < 20 && cursor; i++) {
      const p = await page(`usage=unused&include=usage&cursor=${encodeURIComponent(cursor)}`);
      deep = p;
      cursor = p.next;
    }
  }
  results.unusedPage = { media: libSize, first, deep };
}

// 3. Repair of a collection of N entries at the default budget.
{
  const entries = n(100_000, 100);
  ok(await w.post("/schema/collections", { slug: "bench_repair", label: "R", fields: [{ slug: "hero", type: "image" }] }), 201);
  await fill(`INSERT INTO "ec_bench_repair" (id, slug, status, hero) SELECT 'r' || i, 'r' || i, 'published', 'h' || i FROM c`, entries);
  await db.prepare("DELETE FROM _emdash_media_usage_work").run();
  const before = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_ticks").first()).n;
  ok(await w.post("/admin/media-usage/repair", { scope: "collection", collection: "bench_repair" }));
  const cap = Math.max(200, entries); // per-entry jobs need about one tick per 4 entries today
  // Progress is read through the API between ticks, as an operator would.
  const done = async () => {
    const c = ok(await w.get("/admin/media-usage/status")).collections.find((x) => x.collection === "bench_repair");
    return c.status === "complete" && !c.reconciliationRequired;
  };
  const run = await ticksUntil(done, cap);
  const ticks = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_ticks").first()).n - before;
  results.repair = { entries, ticks: run.ticks, finished: run.finished, ms: run.ms, cpuMsPerTick: run.cpuMsPerTick, ...(await tickLog(Math.min(ticks, 1000))) };
}

// 3b. Repair (group projection) of N rich entries: every group looks its candidates up once.
{
  const entries = n(20_000, 50);
  ok(await w.post("/schema/collections", { slug: "bench_rich_repair", label: "RR", fields: [
    { slug: "body", type: "portableText" }, { slug: "extra", type: "json" }, { slug: "notes", type: "text" }] }), 201);
  const d = richData(0);
  await fill(`INSERT INTO "ec_bench_rich_repair" (id, slug, status, body, extra, notes) SELECT 'q' || i, 'q' || i, 'published', ?1, ?2, ?3 FROM c`,
    entries, [JSON.stringify(d.body), JSON.stringify(d.extra), d.notes]);
  await db.prepare("DELETE FROM _emdash_media_usage_work").run();
  const before = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_ticks").first()).n;
  ok(await w.post("/admin/media-usage/repair", { scope: "collection", collection: "bench_rich_repair" }));
  const done = async () => {
    const c = ok(await w.get("/admin/media-usage/status")).collections.find((x) => x.collection === "bench_rich_repair");
    return c.status === "complete" && !c.reconciliationRequired;
  };
  const run = await ticksUntil(done, Math.max(200, entries));
  const ticks = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_ticks").first()).n - before;
  const occurrences = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage WHERE source_key LIKE 'content:' || ?1 || ':%'").bind(await collectionId("bench_rich_repair")).first()).n;
  results.richRepair = { entries, occurrences, ticks: run.ticks, finished: run.finished, ms: run.ms, cpuMsPerTick: run.cpuMsPerTick, ...(await tickLog(Math.min(ticks, 1000))) };
}

// 3c. Relinking N entries: each page links the item's file by URL twice (an <img> and a link);
// the item is replaced, then a relink rewrites every page to the new key. Its ticks write the
// pages (the relink lane) and project them again (the work lane); both count against the day.
{
  const entries = n(10_000, 100);
  ok(await w.post("/schema/collections", { slug: "bench_relink", label: "RL", fields: [{ slug: "title", type: "string" }, { slug: "body", type: "text" }] }), 201);
  const cid = await collectionId("bench_relink");
  const media = ok(await w.post("/media", { filename: "old.png", mimeType: "image/png", storageKey: "bench/old.png" }), 201).item.id;
  const body = '<p><img src="/_emdash/api/media/file/bench/old.png" alt=""> <a href="/_emdash/api/media/file/bench/old.png">full size</a></p>';
  await fill(`INSERT INTO "ec_bench_relink" (id, slug, status, title, body) SELECT 'l' || i, 'l' || i, 'published', 'Page ' || i, ?1 FROM c`, entries, [body]);
  // The index as a projection leaves it: each page's live source and its two URL occurrences.
  await fill(`INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, content_slug, content_status, current_generation, source_completeness, identity_version)
    SELECT 'content:' || ?1 || ':l' || i || ':columns', ?1, 'bench_relink', 'l' || i, 'columns', 'l' || i, 'published', 'g', 'complete', 1 FROM c`, entries, [cid]);
  for (const k of [0, 1]) {
    await fill(`INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, occurrence_index, reference_type, media_id, provider_asset_id, linked_key)
      SELECT 'rl${k}-' || i, 'content:' || ?1 || ':l' || i || ':columns', 'g', 'body', 'body', ${k}, 'embedded_url', ?2, ?2, 'bench/old.png' FROM c`, entries, [cid, media]);
  }
  await db.prepare("DELETE FROM _emdash_media_usage_work").run();
  // The replace, as its batch leaves it: the old key a version, the item on a new one.
  await db.batch([
    db.prepare("INSERT INTO media_versions (storage_key, media_id, filename, mime_type) SELECT storage_key, id, filename, mime_type FROM media WHERE id = ?1").bind(media),
    db.prepare("UPDATE media SET storage_key = 'bench/new.png' WHERE id = ?1").bind(media),
  ]);
  // Rows written come from the daily budget's rows (every tick's, kept per UTC day); the tick
  // log keeps only the latest ticks, so the largest tick is read from those.
  const daily = async () => (await db.prepare("SELECT coalesce(sum(rows_written), 0) AS rows, coalesce(sum(ticks), 0) AS ticks FROM _emdash_media_usage_daily").first());
  const before = await daily();
  const started = ok(await w.post(`/media/${media}/relink`, {}), 202).item;
  const relinked = async () => ok(await w.get(`/media/${media}/relink`)).item.state === "done";
  const run = await ticksUntil(relinked, Math.max(400, entries));
  // Then the pages' projections left (the work lane's share of the rows).
  const idle = async () => (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_work").first()).n === 0;
  const drain = await ticksUntil(idle, Math.max(400, entries));
  const after = await daily();
  const ticks = run.ticks + drain.ticks;
  const log = (await db.prepare("SELECT statements, rows_written, details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT ?1").bind(Math.min(ticks, 1000)).all()).results;
  const rowsWritten = after.rows - before.rows;
  const left = (await db.prepare("SELECT count(*) AS n FROM \"ec_bench_relink\" WHERE body LIKE '%bench/old.png%'").first()).n;
  // On the Free defaults: 720 ticks a day (*/2) and 50,000 background rows written a day.
  results.relink = {
    entries, etaTicks: started.eta.ticks, ticks, loggedTicks: after.ticks - before.ticks,
    finished: run.finished && drain.finished && left === 0,
    rowsWritten, rowsPerEntry: rowsWritten / entries, meanRowsWrittenPerTick: rowsWritten / Math.max(1, ticks),
    maxRowsWrittenPerTick: Math.max(0, ...log.map((r) => r.rows_written)),
    maxStatements: Math.max(0, ...log.map((r) => r.statements)),
    maxEntriesPerTick: Math.max(0, ...log.map((r) => JSON.parse(r.details).entriesRelinked ?? 0)),
    freeDays: Math.max(ticks / 720, rowsWritten / 50_000), ms: run.ms + drain.ms,
  };
}

// 4. Deleting a collection of N entries and 3N occurrences, vs plain bulk SQL on the same rows.
{
  const entries = n(100_000, 100);
  // The large-collection fixture: N entries, each queued for work, with a live source of three
  // occurrences.
  const seed = async (slug) => (await largeCollection(w, { slug, entries, occurrences: 3, chunk: 20_000 })).id;
  // The copy for plain SQL is seeded after the deletion: its entries queue 100,000 jobs, which
  // would share the deletion's ticks.
  await seed("bench_gone");
  const before = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_ticks").first()).n;
  const t0 = now();
  ok(await w.del("/schema/collections/bench_gone?force=true"));
  const gone = async () => ok(await w.get("/admin/media-usage/status")).deletions.length === 0;
  const run = await ticksUntil(gone, 200);
  const ms = now() - t0;
  const ticks = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_ticks").first()).n - before;
  const plainId = await seed("bench_plain");
  const t1 = now();
  await db.batch([
    db.prepare("DELETE FROM _emdash_media_usage WHERE source_key >= ?1 AND source_key < ?2").bind(`content:${plainId}:`, `content:${plainId};`),
    db.prepare("DELETE FROM _emdash_media_usage_sources WHERE collection_id = ?1").bind(plainId),
    db.prepare("DELETE FROM _emdash_media_usage_work WHERE collection_id = ?1").bind(plainId),
    db.prepare(`DROP TABLE "ec_bench_plain"`),
  ]);
  const plainMs = now() - t1;
  results.deletion = { entries, occurrences: 3 * entries, ticks: run.ticks, finished: run.finished, ms, plainMs, ratio: ms / plainMs, cpuMsPerTick: run.cpuMsPerTick, ...(await tickLog(Math.max(1, ticks))) };
}

// 5. The core's own CPU, natively (release build, or the dev build `cargo test` made when
// BENCH_CORE_PROFILE=dev: `npm test` checks the budgets, which are modelled, without compiling
// everything again for release), at the same scale.
{
  execFileSync("cargo", ["build", ...CORE_BUILD.args, "--quiet", "--example", "core_cpu"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  const line = execFileSync(path.join(ROOT, `target/${CORE_BUILD.dir}/examples/core_cpu`), { cwd: ROOT, env: { ...process.env, BENCH_SCALE: String(SCALE) } })
    .toString()
    .split("\n")
    .find((l) => l.startsWith("CORE_JSON "));
  results.core = JSON.parse(line.slice("CORE_JSON ".length));
}

// 5b. Extraction in the wasm build (workerd's clocks stand still while wasm runs: the same bench
// built for wasm32 and run in this process), against the native figures of step 5.
results.wasmExtraction = await wasmExtraction(results.core.extraction);

// 6. The wasm module.
{
  const dir = path.join(ROOT, "build");
  const wasm = readdirSync(dir).find((f) => f.endsWith(".wasm"));
  const bytes = readFileSync(path.join(dir, wasm));
  results.wasm = { raw: statSync(path.join(dir, wasm)).size, gzip: gzipSync(bytes).length };
}
await w.dispose();

const f = (x, d = 1) => (typeof x === "number" ? x.toFixed(d) : String(x));
const r = results;
const tickWord = (k) => `${k} tick${k === 1 ? "" : "s"}`;
const table = [
  ["content write, 1 image", `${r.write1.statements} statements`, `p50 ${f(r.write1.p50)} ms, p95 ${f(r.write1.p95)} ms`],
  ["content write, 50 images", `${r.write50.statements} statements`, `p50 ${f(r.write50.p50)} ms, p95 ${f(r.write50.p95)} ms`],
  [`content write, rich entry (${r.writeRich.occurrencesOfOneItem} uses of one item)`, `${r.writeRich.statements} statements`, `p50 ${f(r.writeRich.p50)} ms, p95 ${f(r.writeRich.p95)} ms`],
  [`"Used in" page (${r.usedIn.users} users, ${r.usedIn.occurrences} occ.)`, `${f(r.usedIn.apiMs)} ms vs raw ${f(r.usedIn.rawMs)} ms`, `ratio ${f(r.usedIn.ratio, 2)}`],
  [`repair of ${r.repair.entries} entries`, `${tickWord(r.repair.ticks)}${r.repair.finished ? "" : " (stopped: not finished)"}`, `${r.repair.statements} statements (≤ ${r.repair.maxStatements}/tick), ≤ ${r.repair.maxRowsWritten} rows written and ${r.repair.maxRowsRead} read/tick, ${f(r.repair.ms / 1000)} s`],
  [`repair of ${r.richRepair.entries} rich entries (${r.richRepair.occurrences} occ.)`, `${tickWord(r.richRepair.ticks)}${r.richRepair.finished ? "" : " (stopped: not finished)"}`, `${r.richRepair.statements} statements (≤ ${r.richRepair.maxStatements}/tick), ≤ ${r.richRepair.maxBinds} binds, ${f(r.richRepair.ms / 1000)} s`],
  [`relink of ${r.relink.entries} entries (2 URLs each)`, `${tickWord(r.relink.ticks)}${r.relink.finished ? "" : " (stopped: not finished)"} (≤ ${r.relink.maxEntriesPerTick} entries/tick)`, `${f(r.relink.rowsPerEntry)} rows written/entry, ≤ ${r.relink.maxRowsWrittenPerTick} (mean ${f(r.relink.meanRowsWrittenPerTick, 0)})/tick, ≤ ${r.relink.maxStatements} statements/tick; ${f(r.relink.freeDays, 2)} days on Free defaults (ETA said ${r.relink.etaTicks} ticks)`],
  [`deletion of ${r.deletion.entries} entries / ${r.deletion.occurrences} occ.`, `${tickWord(r.deletion.ticks)}, ≤ ${r.deletion.maxStatements} statements/tick`, `≤ ${r.deletion.maxRowsWritten} rows written and ${r.deletion.maxRowsRead} read/tick, ≤ ${r.deletion.maxBinds} binds, ≤ ${r.deletion.maxSqlBytes} B SQL; ${f(r.deletion.ms)} ms vs plain ${f(r.deletion.plainMs)} ms (×${f(r.deletion.ratio, 2)})`],
  [
    `"Unused" page (${r.unusedPage.media} media, half used)`,
    r.unusedPage.first.status === 200 ? `${r.unusedPage.first.items} items, ${r.unusedPage.first["rows-read"]} rows read` : `HTTP ${r.unusedPage.first.status}`,
    r.unusedPage.first.status === 200
      ? `${f(r.unusedPage.first.ms)} ms; 21st page ${r.unusedPage.deep ? `${r.unusedPage.deep["rows-read"]} rows read, ${f(r.unusedPage.deep.ms)} ms` : "n/a"}`
      : "",
  ],
  ["wasm", `${r.wasm.raw} B raw`, `${r.wasm.gzip} B gzip`],
];
// CPU per invocation: the core natively (median, largest) and workerd's process (upper bound).
const c = r.core;
const ms = (x) => (x === null || x === undefined ? "n/a" : `${f(x, 2)} ms`);
const native = (s) => `core ${ms(s.p50Ms)} (max ${ms(s.maxMs)})`;
const cpuTable = [
  ["content write, 1 image", native(c.write1), ms(r.write1.cpuMs)],
  ["content write, 50 images", native(c.write50), ms(r.write50.cpuMs)],
  ["content write, rich entry", native(c.writeRich), ms(r.writeRich.cpuMs)],
  ['"Used in" page', native(c.usedIn), ms(r.usedIn.cpuMs)],
  [`repair tick (${c.repairTick.entries} entries)`, native(c.repairTick.ticks), ms(r.repair.cpuMsPerTick)],
  [`repair tick, rich (${c.richRepairTick.entries} entries)`, native(c.richRepairTick.ticks), ms(r.richRepair.cpuMsPerTick)],
  [`deletion tick (${c.deletionTick.entries} entries)`, native(c.deletionTick.ticks), ms(r.deletion.cpuMsPerTick)],
];
console.log(`\nmedia-usage-worker bench (BENCH_SCALE=${SCALE})`);
for (const [a, b, c] of table) console.log(`  ${a.padEnd(48)} ${b.padEnd(34)} ${c}`);
console.log(`\nCPU per invocation (native core: p50, max; workerd process incl. local D1: mean, an upper bound)`);
for (const [a, b, c] of cpuTable) console.log(`  ${a.padEnd(48)} ${b.padEnd(34)} workerd ${c}`);
// Extraction of 1 MiB bodies, natively: plain text and adversarial ones, side by side.
const plain = c.extraction.find((e) => e.body === "plain text");
console.log(`\nExtraction of 1 MiB (native core, best of 7; ×: against plain text)`);
for (const e of c.extraction) console.log(`  ${e.body.padEnd(48)} ${`${f(e.ms, 2)} ms`.padEnd(34)} ${f(e.mbPerS, 0)} MB/s (×${f(e.ms / plain.ms, 2)})`);
printWasmExtraction(r.wasmExtraction);
console.log(`BENCH_JSON ${JSON.stringify({ scale: SCALE, ...results })}`);
if (!r.deletion.finished || !r.repair.finished || !r.richRepair.finished || !r.relink.finished) process.exitCode = 1;
