// Collection deletion in workerd on real (local) D1, through HTTP and scheduled ticks: the
// tombstone and slug reservation, the fenced front phases of the DELETE request (and their D1
// guards), the cleanup lane (per step with MEDIA_USAGE_CLEANUP_BATCH_ROWS=50, as the reference
// cadence), recorded failures, operator endpoints, crashes injected at every statement, and
// per-tick budgets read from the tick log's D1 meta.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, faultVariants } from "./harness.mjs";
import { ok, err, validation, rows, uniq, NO_STORE } from "./helpers.mjs";

// Crash points below count a tick's statements; without a daily budget a tick does not read the
// day's use before its deletion step (rows_budget.test.mjs tests the daily budget).
const BATCH_50 = { MEDIA_USAGE_CLEANUP_BATCH_ROWS: "50", MEDIA_USAGE_DAILY_ROWS_WRITTEN: "0" };
const w = await startWorker(BATCH_50, faultVariants([5, 6, 7, 8, 9]));
after(() => w.dispose());

const FIELDS = [
  { slug: "title", type: "string" },
  { slug: "hero", type: "image" },
  { slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }] },
];

async function collection(fields = FIELDS) {
  const slug = uniq("d");
  ok(await w.post("/schema/collections", { slug, label: slug, fields }), 201);
  const [row] = await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", slug);
  return { slug, id: row.id };
}

async function entry(c, slug, data = {}, status = "published") {
  return ok(await w.post(`/content/${c.slug}`, { slug, status, data }), 201).item.id;
}

async function media(name) {
  return ok(await w.post("/media", { filename: name, mimeType: "image/png", storageKey: uniq(name) }), 201).item.id;
}

const sql = (q, ...p) => w.db.prepare(q).bind(...p).run();
const one = async (q, ...p) => (await rows(w, q, ...p))[0];
const tomb = (slug) => one("SELECT * FROM _emdash_media_usage_collection_deletions WHERE collection_slug = ?1", slug);
const del = (slug, q = "") => w.del(`/schema/collections/${slug}${q}`);
const tableExists = async (slug) => (await rows(w, "SELECT 1 FROM sqlite_master WHERE name = ?1", `ec_${slug}`)).length === 1;
const captureState = async (id) =>
  (await one("SELECT capture_state AS s FROM _emdash_media_usage_index_status WHERE collection_id = ?1", id))?.s;

/** Makes every waiting deletion due and every deletion lease expired, as time passing would. */
async function timePasses() {
  await sql("UPDATE _emdash_media_usage_collection_deletions SET next_attempt_at = '2000-01-01T00:00:00.000Z'");
  await sql(
    "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE state = 'leased'",
  );
}

/** Runs one scheduled tick and returns its log row. */
async function tick() {
  await w.scheduled();
  return ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
}

/** Ticks (letting time pass) until the slug's tombstone is gone; returns the tick rows. */
async function tickUntilGone(slug, max = 20) {
  const ticks = [];
  for (let i = 0; i < max; i++) {
    ticks.push(await tick());
    if (!(await tomb(slug))) return ticks;
    await timePasses();
  }
  throw new Error(`the deletion of ${slug} did not finish in ${max} ticks: ${JSON.stringify(await tomb(slug))}`);
}

/** Asserts nothing of a deleted collection is left. */
async function assertGone({ id, slug }) {
  const lo = `content:${id}:`;
  const hi = `content:${id};`;
  const counts = await one(
    `SELECT
       (SELECT count(*) FROM sqlite_master WHERE name = 'ec_' || ?2 OR (type = 'trigger' AND tbl_name = 'ec_' || ?2)) AS schema_objects,
       (SELECT count(*) FROM _emdash_collections WHERE id = ?1) AS registry,
       (SELECT count(*) FROM _emdash_fields WHERE collection_id = ?1) AS fields,
       (SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = ?1) AS work,
       (SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = ?1) AS sources,
       (SELECT count(*) FROM _emdash_media_usage WHERE source_key >= ?3 AND source_key < ?4) AS occurrences,
       (SELECT count(*) FROM _emdash_media_usage_index_status WHERE collection_id = ?1) AS status,
       (SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE collection_id = ?1) AS runs,
       (SELECT count(*) FROM revisions WHERE collection = ?2) AS revisions,
       (SELECT count(*) FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1) AS tombstone,
       (SELECT count(*) FROM _emdash_batch_guard) AS guard_rows`,
    id,
    slug,
    lo,
    hi,
  );
  for (const [k, v] of Object.entries(counts)) assert.equal(v, 0, `${k} of ${slug} left behind: ${JSON.stringify(counts)}`);
}

/** Inserts a tombstone row directly (states the API cannot be caught in). */
async function tombstone(id, slug, { state = "pending", phase = "fence", force = 0, token = null, expires = null } = {}) {
  await sql(
    `INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, force_delete, state, phase, lease_token, lease_expires_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
    id,
    slug,
    force,
    state,
    phase,
    token,
    expires,
  );
}

// ------------------------------------------------------------------------------------------
// Front phases through DELETE.

test("deleting an empty collection: 200, registry and table gone, fenced, tombstone pending at work", async () => {
  const c = await collection();
  const d = ok(await del(c.slug));
  assert.deepEqual(d, { deleted: true, slug: c.slug, collectionId: c.id });
  assert.equal((await rows(w, "SELECT 1 FROM _emdash_collections WHERE id = ?1", c.id)).length, 0);
  assert.equal(await tableExists(c.slug), false);
  assert.equal(await captureState(c.id), "deleting");
  const t = await tomb(c.slug);
  assert.equal(t.collection_id, c.id);
  assert.deepEqual([t.state, t.phase, t.lease_token, t.lease_expires_at, t.attempt_count], ["pending", "work", null, null, 0]);
  err(await w.get(`/schema/collections/${c.slug}`), 404, "COLLECTION_NOT_FOUND");
  // A repeated DELETE past the front phases changes nothing.
  ok(await del(c.slug));
  assert.deepEqual(await tomb(c.slug), t);
  await tickUntilGone(c.slug);
  await assertGone(c);
});

test("live entries refuse without force; trashed-only deletes; force deletes and is recorded", async () => {
  const c = await collection();
  const live = await entry(c, "live");
  err(await del(c.slug), 400, "COLLECTION_HAS_CONTENT");
  assert.equal(await tableExists(c.slug), true);
  assert.equal(await captureState(c.id), "active");
  assert.equal(await tomb(c.slug), undefined);
  ok(await w.del(`/content/${c.slug}/${live}`)); // trash
  ok(await del(c.slug));
  assert.equal((await tomb(c.slug)).force_delete, 0);

  const f = await collection();
  await entry(f, "keep-me-not");
  ok(await del(f.slug, "?force=true"));
  assert.equal((await tomb(f.slug)).force_delete, 1);
  await tickUntilGone(c.slug);
  await tickUntilGone(f.slug);
  await assertGone(c);
  await assertGone(f);
});

test("an entry present when the fence runs (not forced) cancels the deletion on D1 and keeps the collection", async () => {
  // A tombstone whose request died before its fence: the next DELETE takes it over and fences
  // without a pre-check, so the fence's own content check is what answers.
  const c = await collection();
  await entry(c, "arrived-late");
  await tombstone(c.id, c.slug, { state: "leased", token: "dead", expires: "2000-01-01T00:00:00.000Z" });
  err(await del(c.slug), 400, "COLLECTION_HAS_CONTENT");
  assert.equal(await tomb(c.slug), undefined, "the tombstone was cancelled");
  assert.equal(await captureState(c.id), "active");
  assert.equal(await tableExists(c.slug), true);
  ok(await w.get(`/schema/collections/${c.slug}`));
  await entry(c, "still-writable");
});

test("unknown slugs answer 404 and invalid ones 400 before any deletion", async () => {
  err(await del("no_such_collection"), 404, "COLLECTION_NOT_FOUND");
  for (const bad of ["Bad-Slug", "posts%22%3Bdrop_table", "a".repeat(64)]) {
    validation(await del(bad), "slug");
  }
  assert.equal((await rows(w, "SELECT 1 FROM _emdash_media_usage_collection_deletions WHERE collection_slug LIKE 'posts%'")).length, 0);
});

test("a collection whose capture is not active cannot be fenced: 409, nothing changes", async () => {
  const c = await collection();
  await sql("UPDATE _emdash_media_usage_index_status SET capture_state = 'ready' WHERE collection_id = ?1", c.id);
  err(await del(c.slug, "?force=true"), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  assert.equal(await tomb(c.slug), undefined);
  assert.equal(await tableExists(c.slug), true);
  await sql("UPDATE _emdash_media_usage_index_status SET capture_state = 'active' WHERE collection_id = ?1", c.id);
});

test("a front phase held by someone else is 409 CONFLICT; once its lease expires a DELETE takes over", async () => {
  const c = await collection();
  await tombstone(c.id, c.slug, { state: "leased", token: "other", expires: "2999-01-01T00:00:00.000Z" });
  const e = err(await del(c.slug), 409, "CONFLICT");
  assert.equal(e.details.phase, "fence");
  assert.equal(e.details.leaseExpiresAt, "2999-01-01T00:00:00.000Z");
  assert.equal((await tomb(c.slug)).lease_token, "other");
  assert.equal(await captureState(c.id), "active");
  await timePasses();
  ok(await del(c.slug));
  assert.equal((await tomb(c.slug)).phase, "work");
  await tickUntilGone(c.slug);
  await assertGone(c);
});

test("a crash after the fence, after the registry phase, or after the table drop is resumed by DELETE", async () => {
  // Fenced, lease expired at fence: a forced DELETE resumes and skips the guard.
  const a = await collection();
  await entry(a, "x");
  await sql("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = ?1", a.id);
  await tombstone(a.id, a.slug, { state: "leased", force: 1, token: "dead", expires: "2000-01-01T00:00:00.000Z" });
  ok(await del(a.slug, "?force=true"));
  assert.equal((await tomb(a.slug)).phase, "work");
  assert.equal(await tableExists(a.slug), false);
  for (const phase of ["registry", "table"]) {
    const c = await collection();
    await sql("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = ?1", c.id);
    await sql("DELETE FROM _emdash_collections WHERE id = ?1", c.id);
    if (phase === "table") await sql(`DROP TABLE "ec_${c.slug}"`);
    await tombstone(c.id, c.slug, { state: "leased", phase, token: "dead", expires: "2000-01-01T00:00:00.000Z" });
    for (let i = 0; i < 2; i++) {
      ok(await del(c.slug));
      const t = await tomb(c.slug);
      assert.deepEqual([t.state, t.phase, t.lease_token], ["pending", "work", null], phase);
    }
    assert.equal(await tableExists(c.slug), false);
    await tickUntilGone(c.slug);
    await assertGone(c);
  }
  await tickUntilGone(a.slug);
  await assertGone(a);
});

test("the table drop's guarded batch aborts on D1 while the slug is registered, dropping nothing", async () => {
  // A tombstone at `table` whose registry row is (wrongly) still there: the guard refuses.
  const c = await collection();
  await sql("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = ?1", c.id);
  await tombstone(c.id, c.slug, { state: "leased", phase: "table", token: "dead", expires: "2000-01-01T00:00:00.000Z" });
  const e = err(await del(c.slug), 409, "CONFLICT");
  assert.equal(e.details.phase, "table");
  assert.equal(await tableExists(c.slug), true, "the DROP in the aborted batch was rolled back");
  assert.equal((await rows(w, "SELECT * FROM _emdash_batch_guard")).length, 0);
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1", c.id)).length, 1);
  // With the registry row gone (as the registry phase leaves it), the next holder drops it.
  await sql("DELETE FROM _emdash_collections WHERE id = ?1", c.id);
  await timePasses();
  ok(await del(c.slug));
  assert.equal(await tableExists(c.slug), false);
  await tickUntilGone(c.slug);
  await assertGone(c);
});

test("B1: a forced fence that loses its race is stale, never has-content; then a clean fence on D1", async () => {
  const c = await collection();
  await entry(c, "live");
  // Forced, the registry row is gone: the tick's fence changes nothing and records a failure.
  await sql("DELETE FROM _emdash_collections WHERE id = ?1", c.id);
  await tombstone(c.id, c.slug, { force: 1 });
  const t1 = await tick();
  assert.match(t1.lane, /deletion/);
  let t = await tomb(c.slug);
  assert.ok(t, "a forced fence never cancels the tombstone");
  assert.deepEqual([t.state, t.phase, t.attempt_count, t.last_error_code], ["retry", "fence", 1, "MEDIA_USAGE_COLLECTION_DELETION_FAILED"]);
  assert.equal(await captureState(c.id), "active");
  // Registry back, entries trashed, not forced: the fence holds and the deletion runs to the end.
  await sql("INSERT INTO _emdash_collections (id, slug, label) VALUES (?1, ?2, ?2)", c.id, c.slug);
  await sql(`UPDATE "ec_${c.slug}" SET deleted_at = '2026-01-01T00:00:00.000Z'`);
  await sql("UPDATE _emdash_media_usage_collection_deletions SET force_delete = 0 WHERE collection_id = ?1", c.id);
  await timePasses();
  await tickUntilGone(c.slug);
  await assertGone(c);
});

test("the slug is reserved until cleanup finishes; then it is free for a new collection", async () => {
  const c = await collection();
  for (let i = 0; i < 3; i++) await entry(c, `e${i}`, { title: "x" });
  ok(await del(c.slug, "?force=true"));
  const taken = err(await w.post("/schema/collections", { slug: c.slug, label: "again" }), 409, "COLLECTION_EXISTS");
  assert.deepEqual(taken.details.deletion, { collectionId: c.id, phase: "work", state: "pending" });
  const st = ok(await w.get("/admin/media-usage/status"));
  const shown = st.deletions.find((d) => d.collectionId === c.id);
  assert.deepEqual(
    { collection: shown.collection, phase: shown.phase, state: shown.state, leaseExpiresAt: shown.leaseExpiresAt },
    { collection: c.slug, phase: "work", state: "pending", leaseExpiresAt: null },
  );
  assert.ok(!st.collections.some((x) => x.collectionId === c.id), "no longer a registered collection");
  await tickUntilGone(c.slug);
  await assertGone(c);
  const again = ok(await w.post("/schema/collections", { slug: c.slug, label: "again" }), 201);
  assert.notEqual(again.item.id, c.id);
});

test("content writes are fenced (409) while the deletion runs, and a vanished table is never a 500", async () => {
  const c = await collection();
  const id = await entry(c, "e");
  // Fence only (a front phase that crashed after it): writes are refused and nothing is queued.
  await sql("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = ?1", c.id);
  err(await w.post(`/content/${c.slug}`, { slug: "late" }), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  err(await w.put(`/content/${c.slug}/${id}`, { data: { title: "t" } }), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  err(await w.del(`/content/${c.slug}/${id}?permanent=true`), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  assert.equal((await rows(w, "SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id)).length, 0);
  // The table dropped under a registered collection (a write that found the registry row just
  // before the drop): 409 for writes, 404 for reads, never 500.
  await sql(`DROP TABLE "ec_${c.slug}"`);
  err(await w.post(`/content/${c.slug}`, { slug: "later" }), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  err(await w.get(`/content/${c.slug}/${id}`), 404, "COLLECTION_NOT_FOUND");
  err(await w.get(`/content/${c.slug}`), 404, "COLLECTION_NOT_FOUND");
  // Tidy up: make it a proper deletion and let ticks finish it.
  await tombstone(c.id, c.slug, { phase: "registry", force: 1 });
  await tickUntilGone(c.slug);
  await assertGone(c);
});

// ------------------------------------------------------------------------------------------
// The cleanup lane, step by step (batch 50; a fault after a step's statements stops the tick).

/** Runs one tick whose statements fail from the `k`-th on (the rest of the tick "crashed"). */
async function tickCrashingAt(k) {
  await w.as(`fault${k}`).scheduled();
  await timePasses();
}

/** A collection whose front phases are done (tombstone pending at `work`). */
async function deleted() {
  const c = await collection();
  ok(await del(c.slug));
  return c;
}

// A tick's first statements: the work lane's (empty) claim, the schedule lane's look for due
// entries, the deletion lane's claim, then the deletion's first step (a cleanup statement in a
// batch with its counter's); the fields lane's claim comes next, so a fault at 6 stops right
// after the first deletion step.
const AFTER_FIRST_STEP = 6;

/**
 * Sets a deletion's counters to what its tables hold, as its lane's counting steps would (they
 * come before any cleanup step; tested in `status.test.mjs` and natively), so the cleanup steps
 * below are each one tick's first deletion step.
 */
async function counted(c) {
  await sql(
    `UPDATE _emdash_media_usage_collection_deletions
     SET count_kind = 4,
         left_work = (SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = ?1),
         left_revisions = (SELECT count(*) FROM revisions WHERE collection = ?2),
         left_occurrences = (SELECT count(*) FROM _emdash_media_usage
                             WHERE source_key >= 'content:' || ?1 || ':' AND source_key < 'content:' || ?1 || ';'),
         left_sources = (SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = ?1)
     WHERE collection_id = ?1`,
    c.id,
    c.slug,
  );
}

/**
 * Queues work rows for a deleted collection in states the work lane does not claim (failed, or
 * leased live): the deletion removes them whatever their state or lease.
 */
async function workRows(c, ids) {
  await sql(
    `INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, state, lease_token, lease_expires_at)
     SELECT ?1, value, ?2,
            CASE WHEN key % 2 = 0 THEN 'failed' ELSE 'leased' END,
            CASE WHEN key % 2 = 0 THEN NULL ELSE 'someone' END,
            CASE WHEN key % 2 = 0 THEN NULL ELSE '2999-01-01T00:00:00.000Z' END
     FROM json_each(?3)`,
    c.id,
    c.slug,
    JSON.stringify(ids),
  );
}

test("a fresh tombstone goes through one front phase per step: registry, then table, then work", async () => {
  const c = await collection();
  await tombstone(c.id, c.slug);
  // work-lane probe, schedule probe, claim, then the fence batch (fence, checkpoint, cancel): 6
  // statements.
  await tickCrashingAt(7);
  assert.equal((await tomb(c.slug)).phase, "registry");
  assert.equal(await captureState(c.id), "deleting");
  assert.equal((await rows(w, "SELECT 1 FROM _emdash_collections WHERE id = ?1", c.id)).length, 1, "still registered");
  // probes, claim, then the registry batch (delete, checkpoint): 5 statements.
  await tickCrashingAt(6);
  assert.equal((await tomb(c.slug)).phase, "table");
  assert.equal((await rows(w, "SELECT 1 FROM _emdash_collections WHERE id = ?1", c.id)).length, 0, "left the registry");
  assert.equal(await tableExists(c.slug), true);
  // probes, claim, then the guarded drop (guard, drop, checkpoint, guard cleanup): 7 statements.
  await tickCrashingAt(8);
  assert.equal((await tomb(c.slug)).phase, "work");
  assert.equal(await tableExists(c.slug), false);
  await tickUntilGone(c.slug);
  await assertGone(c);
});

test("work rows go 50 per step: 55 → 5 left, then the phase moves on; of 51 exactly the last remains", async () => {
  const c = await deleted();
  const ids = Array.from({ length: 55 }, (_, i) => `entry-${String(i).padStart(3, "0")}`);
  await workRows(c, ids);
  await counted(c);
  await tickCrashingAt(AFTER_FIRST_STEP);
  assert.equal((await one("SELECT count(*) AS n FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id)).n, 5);
  assert.equal((await tomb(c.slug)).phase, "work");
  // The batch took what it deleted off the counter (D1's `changes()` in the same batch).
  assert.equal((await one("SELECT left_work AS n FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1", c.id)).n, 5);
  // The next step: the last 5, the (absent) revisions (each with its counter's statement), and
  // the checkpoint; then the fault.
  await tickCrashingAt(AFTER_FIRST_STEP + 3);
  assert.equal((await one("SELECT count(*) AS n FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id)).n, 0);
  assert.equal((await tomb(c.slug)).phase, "sources", "the last 5 and the (absent) revisions, then the next phase");
  await tickUntilGone(c.slug);
  await assertGone(c);

  const d = await deleted();
  await workRows(d, ids.slice(0, 51));
  await counted(d);
  await tickCrashingAt(AFTER_FIRST_STEP);
  assert.deepEqual(await rows(w, "SELECT content_id FROM _emdash_media_usage_work WHERE collection_id = ?1", d.id), [
    { content_id: "entry-050" },
  ]);
  await tickUntilGone(d.slug);
  await assertGone(d);
});

async function source(key, collectionId, slug) {
  await sql(
    `INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, current_generation, identity_version)
     VALUES (?1, ?2, ?3, 'e', 'columns', 'g0', 1)`,
    key,
    collectionId,
    slug,
  );
}

async function occurrences(key, n) {
  await sql(
    `WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ?2 - 1)
     INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id)
     SELECT ?1 || '-' || printf('%03d', i), ?1, 'g' || (i % 3), 'hero', 'hero[' || i || ']', 'image_field', 'm' FROM seq`,
    key,
    n,
  );
}

test("occurrences go by the collection's key range across generations, then the source rows; others are never touched", async () => {
  const c = await deleted();
  await sql("UPDATE _emdash_media_usage_collection_deletions SET phase = 'sources' WHERE collection_id = ?1", c.id);
  const key = `content:${c.id}:e:columns`;
  await source(key, c.id, c.slug);
  await occurrences(key, 55);
  // A legacy source of the same slug (no collection id) and another collection's source.
  const legacy = `content:${c.slug}:e:columns`;
  await source(legacy, null, c.slug);
  await occurrences(legacy, 2);
  await source(`content:other_${c.id}:e:columns`, `other_${c.id}`, c.slug);
  await counted(c);
  await tickCrashingAt(AFTER_FIRST_STEP);
  assert.equal((await one("SELECT count(*) AS n FROM _emdash_media_usage WHERE source_key = ?1", key)).n, 5);
  assert.equal((await one("SELECT count(*) AS n FROM _emdash_media_usage_sources WHERE source_key = ?1", key)).n, 1);
  // Someone deletes the source row mid-drain (bypassing its trigger): its occurrences still go.
  await sql("DROP TRIGGER _emdash_media_usage_sources_deleted");
  await sql("DELETE FROM _emdash_media_usage_sources WHERE source_key = ?1", key);
  await sql(
    `CREATE TRIGGER _emdash_media_usage_sources_deleted AFTER DELETE ON _emdash_media_usage_sources
     BEGIN DELETE FROM _emdash_media_usage WHERE source_key = OLD.source_key; END`,
  );
  await tickUntilGone(c.slug);
  await assertGone(c);
  assert.equal((await one("SELECT count(*) AS n FROM _emdash_media_usage WHERE source_key = ?1", legacy)).n, 2);
  assert.equal((await one("SELECT count(*) AS n FROM _emdash_media_usage_sources WHERE collection_slug = ?1", c.slug)).n, 2);
  await sql("DELETE FROM _emdash_media_usage_sources WHERE collection_slug = ?1", c.slug);
});

test("leftovers at status fail with backoff 30/60/120/240 s, then for good; an operator retry finishes it", async () => {
  const c = await deleted();
  await sql("UPDATE _emdash_media_usage_collection_deletions SET phase = 'status' WHERE collection_id = ?1", c.id);
  await workRows(c, ["left"]);
  const delays = [];
  for (let attempt = 1; attempt <= 5; attempt++) {
    const t = await tick();
    assert.equal(t.outcome, "error", JSON.stringify(t));
    assert.equal(t.details.deletionFailures, 1);
    const row = await one(
      `SELECT state, phase, attempt_count, last_error_code, lease_token,
              CAST(round((julianday(next_attempt_at) - julianday(updated_at)) * 86400) AS INTEGER) AS delay
       FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1`,
      c.id,
    );
    assert.deepEqual(
      [row.state, row.phase, row.attempt_count, row.last_error_code, row.lease_token],
      [attempt < 5 ? "retry" : "failed", "status", attempt, "MEDIA_USAGE_COLLECTION_DELETION_FAILED", null],
    );
    if (attempt < 5) {
      delays.push(row.delay);
      // Not due yet: a tick now does not touch it.
      const quiet = await tick();
      assert.ok(!quiet.lane.includes("deletion"), JSON.stringify(quiet));
      assert.equal((await tomb(c.slug)).attempt_count, attempt);
    }
    await sql("UPDATE _emdash_media_usage_collection_deletions SET next_attempt_at = '2000-01-01T00:00:00.000Z' WHERE collection_id = ?1", c.id);
  }
  assert.deepEqual(delays, [30, 60, 120, 240]);
  await tick();
  assert.equal((await tomb(c.slug)).state, "failed", "failed is never claimed");
  const listed = ok(await w.get("/admin/media-usage/collection-deletions"));
  assert.ok(listed.items.some((i) => i.collectionId === c.id));
  await sql("DELETE FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id);
  const r = ok(await w.post("/admin/media-usage/collection-deletions/retry", { collectionId: c.id }));
  assert.deepEqual([r.changed, r.item.state, r.item.phase, r.item.attemptCount], [true, "pending", "status", 0]);
  await tickUntilGone(c.slug);
  await assertGone(c);
});

test("finalize refuses while the registry row or table still exists, keeping the tombstone", async () => {
  const c = await collection();
  await sql("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = ?1", c.id);
  await tombstone(c.id, c.slug, { phase: "finalize" });
  await tick();
  const t = await tomb(c.slug);
  assert.deepEqual([t.state, t.phase, t.last_error_code], ["retry", "finalize", "MEDIA_USAGE_COLLECTION_DELETION_FAILED"]);
  assert.equal(await tableExists(c.slug), true);
  // Put it back where it belongs: the deletion resumes from the registry phase and finishes.
  await sql("UPDATE _emdash_media_usage_collection_deletions SET phase = 'registry' WHERE collection_id = ?1", c.id);
  await timePasses();
  await tickUntilGone(c.slug);
  await assertGone(c);
});

test("every stored deletion timestamp comes from the database clock", async () => {
  const c = await deleted();
  const t = await tomb(c.slug);
  const [{ now }] = await rows(w, "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now");
  for (const k of ["created_at", "updated_at", "next_attempt_at"]) {
    assert.match(t[k], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, k);
    assert.ok(t[k] <= now && t[k].slice(0, 10) === now.slice(0, 10), `${k} ${t[k]} vs ${now}`);
  }
  await tickUntilGone(c.slug);
});

test("a job for a collection whose registry row is gone writes nothing (B4)", async () => {
  const c = await collection();
  const m = await media("b4.png");
  // Queued by the capture trigger but not yet projected.
  await sql(`INSERT INTO "ec_${c.slug}" (id, slug, hero) VALUES ('e1', 'e1', ?1)`, m);
  assert.equal((await rows(w, "SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id)).length, 1);
  ok(await del(c.slug, "?force=true"));
  await tickUntilGone(c.slug);
  await assertGone(c);
  assert.equal((await rows(w, "SELECT 1 FROM _emdash_media_usage WHERE media_id = ?1", m)).length, 0);
});

test("media rows survive; usage counts drop to 0 as soon as the collection leaves the registry", async () => {
  const c = await collection();
  const m = await media("kept.png");
  await entry(c, "uses-it", { hero: m });
  const count = async () => ok(await w.get(`/media/${m}?includeUsage=1`)).item.usage.count;
  assert.equal(await count(), 1);
  ok(await del(c.slug, "?force=true"));
  assert.equal(await count(), 0, "counts drop with the registry row, before cleanup");
  assert.deepEqual(ok(await w.get(`/media/${m}/usage`)).items, []);
  await tickUntilGone(c.slug);
  await assertGone(c);
  ok(await w.get(`/media/${m}`));
});

// ------------------------------------------------------------------------------------------
// Operator endpoints.

const ITEM_KEYS = [
  "attemptCount",
  "collectionId",
  "collectionSlug",
  "lastErrorCode",
  "leaseExpiresAt",
  "nextAttemptAt",
  "phase",
  "state",
  "updatedAt",
].sort();

test("listing deletions: failed by default, every field (never the lease token), keyset pages", async () => {
  const ids = [`op_a_${uniq("x")}`, `op_b_${uniq("x")}`];
  for (const [i, id] of ids.entries()) {
    await tombstone(id, `slug_${i}_${uniq("s")}`, { state: "failed", phase: "sources" });
    await sql("UPDATE _emdash_media_usage_collection_deletions SET last_error_code = 'MEDIA_USAGE_COLLECTION_DELETION_FAILED', attempt_count = 5 WHERE collection_id = ?1", id);
  }
  await tombstone(`op_live_${uniq("x")}`, uniq("s"), { state: "leased", token: "secret-token", expires: "2999-01-01T00:00:00.000Z" });
  try {
    const all = ok(await w.get("/admin/media-usage/collection-deletions"));
    assert.ok(all.items.length >= 2);
    for (const item of all.items) {
      assert.deepEqual(Object.keys(item).sort(), ITEM_KEYS);
      assert.equal(item.state, "failed");
    }
    assert.ok(!JSON.stringify(all).includes("secret-token"));
    const leased = ok(await w.get("/admin/media-usage/collection-deletions?state=leased"));
    assert.equal(leased.items.length, 1);
    assert.equal(leased.items[0].leaseExpiresAt, "2999-01-01T00:00:00.000Z");
    assert.ok(!JSON.stringify(leased).includes("secret-token"));
    // Pages of one: every failed row once, newest first.
    const seen = [];
    let cursor = null;
    for (let i = 0; i < 10; i++) {
      const page = ok(await w.get(`/admin/media-usage/collection-deletions?limit=1${cursor ? `&cursor=${cursor}` : ""}`));
      seen.push(...page.items.map((x) => x.collectionId));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    assert.deepEqual([...seen].sort(), all.items.map((x) => x.collectionId).sort());
    assert.equal(new Set(seen).size, seen.length);
  } finally {
    await sql("DELETE FROM _emdash_media_usage_collection_deletions WHERE collection_id LIKE 'op_%'");
  }
});

test("listing deletions rejects bad parameters", async () => {
  for (const q of ["limit=0", "limit=101", "limit=abc", "state=done", `cursor=${"a".repeat(2049)}`]) {
    validation(await w.get(`/admin/media-usage/collection-deletions?${q}`));
  }
  err(await w.get("/admin/media-usage/collection-deletions?cursor=%25%25%25"), 400, "INVALID_CURSOR");
  err(await w.get(`/admin/media-usage/collection-deletions?cursor=${Buffer.from("{}").toString("base64url")}`), 400, "INVALID_CURSOR");
});

test("retrying a deletion: failed, retrying or expired → pending at the same phase; live, pending or unknown refused", async () => {
  const retry = (collectionId) => w.post("/admin/media-usage/collection-deletions/retry", { collectionId });
  const cases = [
    ["failed", { state: "failed", phase: "sources" }],
    ["retry", { state: "retry", phase: "status" }],
    ["expired", { state: "leased", phase: "work", token: "dead", expires: "2000-01-01T00:00:00.000Z" }],
  ];
  try {
    for (const [name, t] of cases) {
      const id = `op_${name}_${uniq("x")}`;
      await tombstone(id, uniq("s"), t);
      await sql("UPDATE _emdash_media_usage_collection_deletions SET attempt_count = 3, next_attempt_at = '2999-01-01T00:00:00.000Z' WHERE collection_id = ?1", id);
      const d = ok(await retry(id));
      assert.equal(d.changed, true);
      assert.deepEqual(Object.keys(d.item).sort(), ITEM_KEYS);
      assert.deepEqual([d.item.state, d.item.phase, d.item.attemptCount, d.item.leaseExpiresAt, d.item.lastErrorCode], ["pending", t.phase, 0, null, null], name);
      assert.ok(d.item.nextAttemptAt < "2999", "due now");
      // Already pending now: 409 WORK_CHANGED, never 200 changed:false.
      err(await retry(id), 409, "WORK_CHANGED");
    }
    const live = `op_live_${uniq("x")}`;
    await tombstone(live, uniq("s"), { state: "leased", token: "t", expires: "2999-01-01T00:00:00.000Z" });
    const e = err(await retry(live), 409, "WORK_LEASE_ACTIVE");
    assert.equal(e.details.leaseExpiresAt, "2999-01-01T00:00:00.000Z");
    err(await retry("op_unknown"), 404, "NOT_FOUND");
    // Bodies are strict.
    validation(await w.post("/admin/media-usage/collection-deletions/retry", { collectionId: "" }), "collectionId");
    validation(await w.post("/admin/media-usage/collection-deletions/retry", {}), "collectionId");
    validation(await w.post("/admin/media-usage/collection-deletions/retry", { collectionId: "x", extra: 1 }), "extra");
    validation(await w.post("/admin/media-usage/collection-deletions/retry", { collectionId: "x".repeat(2049) }), "collectionId");
    err(await w.call("POST", "/admin/media-usage/collection-deletions/retry", { rawBody: "{nope", headers: { "content-type": "application/json" } }), 400, "INVALID_JSON");
  } finally {
    await sql("DELETE FROM _emdash_media_usage_collection_deletions WHERE collection_id LIKE 'op_%'");
  }
});

test("deletion endpoints need an admin token with the admin scope", async () => {
  const editorAdminScope = await w.token("editor", ["admin"]);
  const adminReadOnly = await w.token("admin", ["content:read"]);
  const calls = [
    (o) => w.get("/admin/media-usage/collection-deletions", o),
    (o) => w.post("/admin/media-usage/collection-deletions/retry", { collectionId: "x" }, o),
  ];
  for (const call of calls) {
    err(await call({ token: null }), 401, "UNAUTHORIZED");
    err(await call({ token: editorAdminScope }), 403, "FORBIDDEN");
    err(await call({ token: adminReadOnly }), 403, "INSUFFICIENT_SCOPE");
    const r = await call({});
    assert.equal(r.headers.get("cache-control"), NO_STORE);
  }
  // Deleting a collection needs schema:write as an admin; a refused one changes nothing.
  const c = await collection();
  err(await w.del(`/schema/collections/${c.slug}`, { token: adminReadOnly }), 403, "INSUFFICIENT_SCOPE");
  err(await w.del(`/schema/collections/${c.slug}`, { token: editorAdminScope }), 403, "FORBIDDEN");
  assert.equal(await tomb(c.slug), undefined);
  ok(await del(c.slug));
  await tickUntilGone(c.slug);
});
