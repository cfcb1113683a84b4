// Collection deletion on real (local) D1 with a crash injected (MEDIA_USAGE_FAULT_AFTER_STATEMENTS)
// at every statement of the DELETE request and of a cleanup tick: each run is resumed (by the
// lease expiring and ticks, or by repeating the request) to the same end state as a run without
// a crash: nothing of the collection left, the other collection and the media library intact.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, faultVariants } from "./harness.mjs";
import { ok, rows, uniq } from "./helpers.mjs";

const BATCH = { MEDIA_USAGE_CLEANUP_BATCH_ROWS: "2" };
// Crash points: twins of the worker failing from the k-th statement on, for every k below.
const MAX_K = 40;
const w = await startWorker(BATCH, faultVariants(Array.from({ length: MAX_K }, (_, i) => i + 1)));
after(() => w.dispose());

const FIELDS = [
  { slug: "title", type: "string" },
  { slug: "hero", type: "image" },
  { slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }] },
];

const media = [];
for (let i = 0; i < 2; i++) {
  media.push(ok(await w.post("/media", { filename: `m${i}.png`, mimeType: "image/png", storageKey: `crash-m${i}.png` }), 201).item.id);
}

/** A collection with published entries, drafts (revisions) and indexed media references. */
async function collection(n = 3) {
  const slug = uniq("k");
  ok(await w.post("/schema/collections", { slug, label: slug, fields: FIELDS }), 201);
  const [{ id }] = await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", slug);
  for (let i = 0; i < n; i++) {
    const e = ok(await w.post(`/content/${slug}`, { slug: `e${i}`, status: "published", data: { hero: media[0], gallery: [{ image: media[1] }] } }), 201).item.id;
    ok(await w.put(`/content/${slug}/${e}`, { draft: true, data: { hero: media[1] } }));
  }
  return { slug, id };
}

/** Everything stored about a collection, as text (to compare a bystander before and after). */
async function dump({ id, slug }) {
  const parts = await Promise.all([
    rows(w, "SELECT * FROM _emdash_collections WHERE id = ?1", id),
    rows(w, "SELECT * FROM _emdash_fields WHERE collection_id = ?1 ORDER BY slug", id),
    rows(w, `SELECT * FROM "ec_${slug}" ORDER BY id`),
    rows(w, "SELECT source_key, current_generation FROM _emdash_media_usage_sources WHERE collection_id = ?1 ORDER BY source_key", id),
    rows(w, "SELECT source_key, generation, field_path FROM _emdash_media_usage WHERE source_key >= ?1 AND source_key < ?2 ORDER BY 1, 3", `content:${id}:`, `content:${id};`),
    rows(w, "SELECT status, capture_state, change_epoch FROM _emdash_media_usage_index_status WHERE collection_id = ?1", id),
    rows(w, "SELECT id, data FROM revisions WHERE collection = ?1 ORDER BY id", slug),
  ]);
  return JSON.stringify(parts);
}

async function timePasses() {
  await w.db.prepare("UPDATE _emdash_media_usage_collection_deletions SET next_attempt_at = '2000-01-01T00:00:00.000Z'").run();
  await w.db
    .prepare("UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE state = 'leased'")
    .run();
  await w.db.prepare("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE state = 'leased'").run();
}

const tombstone = async (slug) => (await rows(w, "SELECT * FROM _emdash_media_usage_collection_deletions WHERE collection_slug = ?1", slug))[0];

async function finish(slug) {
  for (let i = 0; i < 30; i++) {
    if (!(await tombstone(slug))) return;
    await timePasses();
    await w.scheduled();
  }
  throw new Error(`${slug} not deleted: ${JSON.stringify(await tombstone(slug))}`);
}

async function assertEndState(c, bystander, bystanderBefore, what) {
  const [counts] = await rows(
    w,
    `SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'ec_' || ?2 OR tbl_name = 'ec_' || ?2)
          + (SELECT count(*) FROM _emdash_collections WHERE id = ?1)
          + (SELECT count(*) FROM _emdash_fields WHERE collection_id = ?1)
          + (SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = ?1)
          + (SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = ?1)
          + (SELECT count(*) FROM _emdash_media_usage WHERE source_key >= ?3 AND source_key < ?4)
          + (SELECT count(*) FROM _emdash_media_usage_index_status WHERE collection_id = ?1)
          + (SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE collection_id = ?1)
          + (SELECT count(*) FROM revisions WHERE collection = ?2)
          + (SELECT count(*) FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1)
          + (SELECT count(*) FROM _emdash_batch_guard) AS left_behind`,
    c.id,
    c.slug,
    `content:${c.id}:`,
    `content:${c.id};`,
  );
  assert.equal(counts.left_behind, 0, `${what}: rows left behind`);
  assert.equal(await dump(bystander), bystanderBefore, `${what}: the other collection changed`);
  for (const m of media) ok(await w.get(`/media/${m}`));
}

const bystander = await collection(2);
const bystanderBefore = await dump(bystander);

/** Statements an uninterrupted DELETE issues (from the cost header). */
async function statementsOfDelete() {
  const c = await collection();
  const res = await w.del(`/schema/collections/${c.slug}?force=true`);
  assert.equal(res.status, 200, res.text);
  await finish(c.slug);
  return Number(/statements=(\d+)/.exec(res.headers.get("x-media-usage-cost"))[1]);
}

test("a crash at any statement of the DELETE request is resumed to the same end state", async () => {
  const n = await statementsOfDelete();
  assert.ok(n >= 6, `${n} statements`);
  assert.ok(n <= MAX_K, `${n} statements`);
  for (let k = 1; k <= n; k++) {
    const c = await collection();
    const res = await w.as(`fault${k}`).del(`/schema/collections/${c.slug}?force=true`);
    assert.equal(res.status, 500, `k=${k}: ${res.text}`);
    assert.equal(res.json.error.code, "INTERNAL_ERROR");
    assert.ok(!res.text.includes("fault"), "a 500 never carries its cause");
    if (!(await tombstone(c.slug))) {
      // Crashed before the tombstone existed: nothing happened; repeating the request deletes it.
      ok(await w.get(`/schema/collections/${c.slug}`));
      assert.equal((await w.del(`/schema/collections/${c.slug}?force=true`)).status, 200);
    }
    await finish(c.slug);
    await assertEndState(c, bystander, bystanderBefore, `request k=${k}`);
  }
});

test("a crash at any statement of a cleanup tick is resumed to the same end state", async () => {
  // The statements of the first cleanup tick of an uninterrupted run.
  const probe = await collection();
  ok(await w.del(`/schema/collections/${probe.slug}?force=true`));
  await w.scheduled();
  const first = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
  await finish(probe.slug);
  assert.match(first.lane, /deletion/);
  assert.ok(first.statements >= 8, JSON.stringify(first));
  assert.ok(first.statements <= MAX_K, JSON.stringify(first));
  for (let k = 1; k <= first.statements; k++) {
    const c = await collection();
    ok(await w.del(`/schema/collections/${c.slug}?force=true`));
    await w.as(`fault${k}`).scheduled();
    await finish(c.slug);
    await assertEndState(c, bystander, bystanderBefore, `tick k=${k}`);
  }
});
