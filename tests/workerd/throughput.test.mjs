// Group jobs on real (local) D1: a backlog and a repair at the default statement budget, with
// the wall-time and CPU budgets lifted so counts measure the statement budget and do not depend
// on the machine (the native tests run the same at 10,000 entries: at most 40 ticks); and the
// same backlog at the default CPU budget, each tick's projections within it by the cost model.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, rows, uniq } from "./helpers.mjs";

const w = await startWorker({
  MEDIA_USAGE_TICK_MAX_QUERIES: "40",
  MEDIA_USAGE_TICK_MAX_MS: "600000",
  MEDIA_USAGE_TICK_MAX_CPU_MS: "600000",
});
const free = await startWorker({ MEDIA_USAGE_TICK_MAX_MS: "600000" });
after(() => Promise.all([w.dispose(), free.dispose()]));

async function collection(worker = w) {
  const slug = uniq("tp");
  ok(await worker.post("/schema/collections", { slug, label: slug, fields: [{ slug: "hero", type: "image" }] }), 201);
  return slug;
}

async function insert(slug, n, worker = w) {
  await worker.db
    .prepare(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ${n})
              INSERT INTO "ec_${slug}" (id, slug, status, hero) SELECT 'e' || i, 'e' || i, 'published', '${slug}-' || i FROM c`)
    .run();
}

const statuses = async (slug) => ok(await w.get("/admin/media-usage/status")).collections.find((c) => c.collection === slug);

test("a backlog of 1,000 queued entries drains in at most 5 default ticks", async () => {
  const slug = await collection();
  await insert(slug, 1000);
  let ticks = 0;
  while ((await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_work WHERE state <> 'failed'"))[0].n > 0) {
    await w.scheduled();
    ticks += 1;
    assert.ok(ticks <= 20, "the backlog does not drain");
  }
  // Five: the other seven lanes' looks for work take their share of each tick's 40 statements.
  assert.ok(ticks <= 5, `${ticks} ticks`);
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE ?1", `${slug}-%`);
  assert.equal(n.n, 1000);
  assert.equal((await statuses(slug)).status, "complete");
  const log = await rows(w, "SELECT statements, details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT ?1", ticks);
  for (const t of log) {
    assert.ok(t.statements <= 40);
    const d1 = JSON.parse(t.details).d1;
    assert.ok(d1.maxBinds <= 100 && d1.maxSqlBytes < 100_000, JSON.stringify(d1));
  }
});

test("a repair of 1,000 entries finishes in at most 4 default ticks after its request", async () => {
  const slug = await collection();
  await insert(slug, 1000);
  await w.db.prepare("DELETE FROM _emdash_media_usage_work").run();
  ok(await w.post("/admin/media-usage/repair", { scope: "collection", collection: slug }));
  let ticks = 0;
  while ((await statuses(slug)).status !== "complete") {
    await w.scheduled();
    ticks += 1;
    assert.ok(ticks <= 20, "the repair does not finish");
  }
  assert.ok(ticks <= 4, `${ticks} ticks`);
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE ?1", `${slug}-%`);
  assert.equal(n.n, 1000);
});

test("the rows of a group whose tick died are taken again as a group once their lease expires", async () => {
  const slug = await collection();
  await insert(slug, 200);
  // A tick died holding all 200 rows on their first attempt; their leases have expired.
  await w.db
    .prepare(
      `UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'dead', attempt_count = 1,
         lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE collection_slug = ?1`,
    )
    .bind(slug)
    .run();
  await w.scheduled();
  const [t] = ok(await w.get("/admin/media-usage/ticks?limit=1")).items;
  assert.equal(t.details.jobs, 200, JSON.stringify(t));
  assert.ok(t.statements <= 40, JSON.stringify(t));
  const [left] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_work WHERE collection_slug = ?1", slug);
  assert.equal(left.n, 0);
  assert.equal((await statuses(slug)).status, "complete");
});

test("at the default CPU budget a backlog drains in groups, each tick's projections within 4 ms by the cost model", async () => {
  const slug = await collection(free);
  await insert(slug, 1000, free);
  let ticks = 0;
  while ((await rows(free, "SELECT count(*) AS n FROM _emdash_media_usage_work WHERE state <> 'failed'"))[0].n > 0) {
    await free.scheduled();
    ticks += 1;
    assert.ok(ticks <= 40, "the backlog does not drain");
  }
  const log = await rows(free, "SELECT details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT ?1", ticks);
  const details = log.map((t) => JSON.parse(t.details));
  assert.equal(details.reduce((sum, d) => sum + d.jobs, 0), 1000);
  for (const d of details) {
    assert.ok(d.cpuModelUs > 0 && d.cpuModelUs <= 4000, JSON.stringify(d));
    assert.ok(d.jobs >= 20, `groups, not single jobs: ${JSON.stringify(d)}`);
  }
  const [n] = await rows(free, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE ?1", `${slug}-%`);
  assert.equal(n.n, 1000);
});
