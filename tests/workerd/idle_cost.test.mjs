// An idle tick costs what an empty site's costs, on the real worker with local D1 and R2: beside
// 1,000 items in the trash (half of them in use), 1,500 objects of another application in the
// bucket and a large collection deletion with nothing due (waiting to be retried, or leased by
// another invocation), once the work there is to do is done, an idle tick issues the same
// statements and reads and writes the same D1 rows (as D1 reports them, from the tick log) as on
// an empty site (while the deletion still has queued work rows to delete, at most 3 rows read
// more, whatever their number). The purge walks on from where the last tick left it, so unused
// items behind 500 in use are purged within a few ticks.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb, ProbeBucket, dispatchTo, scheduledOn, Worker } from "./harness.mjs";
import { largeCollection } from "./helpers.mjs";

/** Two sites, each its own worker, database and bucket. */
const sites = {};

async function site(name) {
  const shared = { r2Buckets: { MEDIA_BUCKET: `idle-${name}` }, d1Databases: { DB: `idle-${name}` } };
  const mf = new Miniflare({
    workers: [
      { name: "main", ...workerOptions({ MEDIA_PUBLIC_URL: "" }), ...shared },
      probeWorker(shared),
    ],
    unsafeTriggerHandlers: true,
  });
  const db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();
  const s = { mf, db, bucket: new ProbeBucket(mf) };
  s.api = async (method, path, body) => {
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await dispatchTo(mf, "main", `http://localhost/_emdash/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: await res.json().catch(() => null) };
  };
  s.rows = async (sql, ...params) => (await db.prepare(sql).bind(...params).all()).results;
  /** One cron tick; its log row. */
  s.tick = async () => {
    const { outcome } = await scheduledOn(mf, "main");
    assert.equal(outcome, "ok");
    const res = await s.api("GET", "/admin/media-usage/ticks?limit=1");
    return res.json.data.items[0];
  };
  assert.equal((await s.api("POST", "/schema/collections", { slug: "posts", label: "Posts", fields: [{ slug: "hero", type: "image" }] })).status, 201);
  return s;
}

before(async () => {
  sites.empty = await site("empty");
  sites.big = await site("big");
});

after(async () => {
  for (const s of Object.values(sites)) await s.mf.dispose();
});

/** Statements, rows written and rows read of a tick. */
const cost = (t) => ({ statements: t.statements, rowsWritten: t.details.d1.rowsWritten, rowsRead: t.details.d1.rowsRead, outcome: t.outcome });

/** Ticks until `n` idle ticks in a row (at most `max` ticks); the cost of the last. */
async function idleCost(s, n = 3, max = 80) {
  let idle = 0;
  for (let i = 0; i < max; i++) {
    const t = await s.tick();
    assert.equal(t.details.error, null, JSON.stringify(t));
    idle = t.outcome === "idle" ? idle + 1 : 0;
    if (idle === n) return cost(t);
  }
  throw new Error(`no ${n} idle ticks in a row in ${max} ticks`);
}

test("idle ticks beside a large trash, a shared bucket and a waiting deletion cost what an empty site's cost", async () => {
  const { big, empty } = sites;
  // 500 entries, each using its own media item; the items are then forced into the trash long ago
  // (behind the API), and 500 unused items trashed after them.
  await big.db.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 1000)
     INSERT INTO media (id, filename, mime_type, storage_key) SELECT printf('m%04d', i), 'm.png', 'image/png', printf('m%04d.png', i) FROM k`,
  ).run();
  await big.db.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 500)
     INSERT INTO ec_posts (id, slug, status, hero) SELECT printf('e%04d', i), printf('e%04d', i), 'published', printf('m%04d', i) FROM k`,
  ).run();
  for (let i = 0; i < 60; i++) {
    const [{ n }] = await big.rows("SELECT count(*) AS n FROM _emdash_media_usage_work WHERE state <> 'failed'");
    if (n === 0) break;
    await big.tick();
  }
  const [{ used }] = await big.rows("SELECT count(DISTINCT media_id) AS used FROM _emdash_media_usage_current");
  assert.equal(used, 500, "the 500 entries are indexed");
  await big.db.prepare("UPDATE media SET deleted_at = CASE WHEN id <= 'm0500' THEN '2001-01-01T00:00:00.000Z' ELSE '2001-01-02T00:00:00.000Z' END").run();
  // 1,500 objects of another application.
  for (let i = 0; i < 1500; i++) {
    await big.bucket.put(`theirs/${String(i).padStart(5, "0")}.jpg`, new Uint8Array([1, 2, 3]), { contentType: "image/jpeg" });
  }
  // A day passes for the purge, whose pass over an empty trash during the projection rests.
  await big.db.prepare("UPDATE _emdash_media_purge SET next_pass_at = NULL WHERE cursor_id IS NULL").run();
  // The purge walks on from where each tick left it: the unused items behind the 500 in use go
  // within a few ticks, and those in use stay.
  let ticks = 0;
  for (;;) {
    const [{ n }] = await big.rows("SELECT count(*) AS n FROM media");
    if (n === 500) break;
    await big.tick();
    ticks += 1;
    assert.ok(ticks <= 8, `the unused items were not purged in ${ticks} ticks (${n} items left)`);
  }
  const [{ trashed }] = await big.rows("SELECT count(*) AS trashed FROM media WHERE deleted_at IS NOT NULL AND id <= 'm0500'");
  assert.equal(trashed, 500, "the items in use stay");

  const emptyCost = await idleCost(empty);
  assert.deepEqual(await idleCost(big), emptyCost, "an idle tick beside 500 trashed items in use and 1,500 foreign objects");
  // A large collection deletion (20,000 indexed entries, each queued for work, their sources and
  // occurrences left to delete) waiting to be retried (backing off after a failure).
  const old = await largeCollection(new Worker(big.mf, big.db), { slug: "old", entries: 20_000, occurrences: 1 });
  assert.equal((await big.api("DELETE", "/schema/collections/old?force=true")).status, 200);
  await big.db.prepare("UPDATE _emdash_media_usage_collection_deletions SET state = 'retry', attempt_count = 3, next_attempt_at = '2099-01-01T00:00:00.000Z'").run();

  // D1 counts every row a statement steps onto, a neighbour that ends an index range included,
  // so the deleting collection's rows are tried on either side of the registered one's
  // (collection ids are random): its id is moved to the first and to the last possible id, in
  // every table that holds it.
  let id = old.id;
  const moveTo = async (to) => {
    for (const t of ["_emdash_fields", "_emdash_media_usage_sources", "_emdash_media_usage_index_status", "_emdash_media_usage_work",
      "_emdash_media_usage_reconciliations", "_emdash_media_usage_collection_deletions", "_emdash_content_schedule", "_emdash_media_usage_field_deletions"]) {
      await big.db.prepare(`UPDATE ${t} SET collection_id = ?1 WHERE collection_id = ?2`).bind(to, id).run();
    }
    id = to;
  };
  // While its first cleanup phase (`work`) has work rows left to delete, the claim's look for work of a
  // collection neither registered nor being deleted steps onto the first due work row of each
  // state: a few rows more than an empty site's, the same for 20,000 rows queued as for 10.
  const queued = {};
  for (const to of ["0".repeat(32), "f".repeat(32)]) {
    await moveTo(to);
    queued[to] = await idleCost(big);
    assert.deepEqual({ ...queued[to], rowsRead: 0 }, { ...emptyCost, rowsRead: 0 }, `beside a deletion with 20,000 work rows left (id ${to})`);
    assert.ok(queued[to].rowsRead <= emptyCost.rowsRead + 3, `${JSON.stringify(queued[to])} ${JSON.stringify(emptyCost)}`);
  }
  await big.db.prepare("DELETE FROM _emdash_media_usage_work WHERE rowid NOT IN (SELECT rowid FROM _emdash_media_usage_work ORDER BY rowid LIMIT 10)").run();
  assert.deepEqual(await idleCost(big), queued["f".repeat(32)], "beside a deletion with 10 work rows left");
  // Past that phase (its work rows deleted), 20,000 sources and occurrences left: the same
  // statements and rows, read and written, as an empty site.
  await big.db.prepare("DELETE FROM _emdash_media_usage_work").run();
  await big.db.prepare("UPDATE _emdash_media_usage_collection_deletions SET phase = 'sources'").run();
  for (const to of ["0".repeat(32), "f".repeat(32)]) {
    await moveTo(to);
    assert.deepEqual(await idleCost(big), emptyCost, `an idle tick beside 500 trashed items in use, 1,500 foreign objects and a deletion waiting to be retried (id ${to})`);
  }
  // Leased by another invocation whose lease is live: nothing due either.
  await big.db.prepare("UPDATE _emdash_media_usage_collection_deletions SET state = 'leased', lease_token = 'another', lease_expires_at = '2099-01-01T00:00:00.000Z'").run();
  for (const to of ["0".repeat(32), "f".repeat(32)]) {
    await moveTo(to);
    assert.deepEqual(await idleCost(big), emptyCost, `an idle tick beside a deletion another invocation holds (id ${to})`);
  }
  const [{ left }] = await big.rows("SELECT count(*) AS left FROM _emdash_media_usage_sources WHERE collection_id = ?1", id);
  assert.equal(left, 20_000, "the deletion waited: its 20,000 sources are left");
  assert.equal((await big.bucket.keys()).length, 1500, "the foreign objects stay");
});
