// Collection deletion budgets on real (local) D1: every tick through finalisation stays within
// MEDIA_USAGE_TICK_MAX_QUERIES (the default 40 and the smallest, 11), measured by the worker's
// meter (the tick log's `statements`) and by D1's own meta (the tick log's `details.d1`, one
// result per statement), with every statement within D1's bind and SQL-size limits; and a
// collection of 2,000 entries / 6,000 occurrences is gone within 5 ticks at default settings.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { largeCollection, ok, rows, uniq } from "./helpers.mjs";

const w = await startWorker({}, { batch50: { MEDIA_USAGE_CLEANUP_BATCH_ROWS: "50" }, budget11: { MEDIA_USAGE_TICK_MAX_QUERIES: "11" } });
after(() => w.dispose());

const sql = (q, ...p) => w.db.prepare(q).bind(...p).run();

/** A collection of `n` entries (each queued for work, with a draft revision, a live source and
 * three occurrences), written the way an import would: the large-collection fixture. */
const collection = (n) => largeCollection(w, { slug: uniq("b"), entries: n, occurrences: 3, revisions: n });

async function deleteWithTicks(c, maxStatements, ticker = w) {
  ok(await w.del(`/schema/collections/${c.slug}?force=true`));
  const ticks = [];
  for (let i = 0; i < 50; i++) {
    await ticker.scheduled();
    const t = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
    ticks.push(t);
    assert.ok(t.statements <= maxStatements, `tick ${i}: ${t.statements} statements > ${maxStatements}`);
    // The meter and D1 agree: every statement but the log write either returned D1's result
    // (with its meta) or failed (a statement meeting the dropped table).
    assert.equal(t.details.d1.results + t.details.d1.failed, t.statements - 1, `tick ${i}: ${JSON.stringify(t)}`);
    assert.ok(t.details.d1.maxBinds <= 100, JSON.stringify(t.details));
    assert.ok(t.details.d1.maxSqlBytes < 100 * 1024, JSON.stringify(t.details));
    assert.ok(t.rowsWritten >= t.details.d1.rowsWritten, JSON.stringify(t));
    assert.equal(t.details.error, null, JSON.stringify(t));
    const [left] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1", c.id);
    if (left.n === 0) return ticks;
  }
  throw new Error("the deletion did not finish in 50 ticks");
}

test("every tick stays within the default budget of 40 (51 work rows, 51 occurrences, batch 50)", async () => {
  {
    const c = await collection(17); // 17 entries: 17 work rows and revisions, 51 occurrences
    await sql(
      `INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, state)
       SELECT ?1, 'extra' || value, ?2, 'failed' FROM json_each('[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34]')`,
      c.id,
      c.slug,
    );
    const ticks = await deleteWithTicks(c, 40, w.as("batch50"));
    assert.ok(ticks.length <= 8, `${ticks.length} ticks`);
    assert.ok(ticks.some((t) => t.details.deletionsFinalized === 1));
  }
});

test("every tick stays within the smallest budget of 11, and the deletion still finishes", async () => {
  const c = await collection(300);
  const ticks = await deleteWithTicks(c, 11, w.as("budget11"));
  assert.ok(ticks.every((t) => t.lane.includes("deletion")), "every tick advanced it");
});

test("2,000 entries and 6,000 occurrences are gone within 5 ticks at default settings", async () => {
  const c = await collection(2000);
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE source_key >= ?1 AND source_key < ?2", `content:${c.id}:`, `content:${c.id};`);
  assert.equal(n.n, 6000);
  const ticks = await deleteWithTicks(c, 40);
  assert.ok(ticks.length <= 5, `${ticks.length} ticks: ${JSON.stringify(ticks.map((t) => [t.statements, t.details.deletedRows]))}`);
  // The work lane leaves the collection's queued rows to the deletion: no job claims one, so no
  // statement of the tick is spent on work that the deletion deletes anyway.
  assert.ok(ticks.every((t) => t.details.jobs === 0 && t.details.conflicts === 0 && t.details.d1.failed === 0), JSON.stringify(ticks));
  const deleted = ticks.reduce((s, t) => s + t.details.deletedRows, 0);
  assert.equal(deleted, 2000 + 2000 + 2000 + 6000, "work, revisions, sources and occurrences");
});
