// What one status read costs on real (local) D1, from the `x-media-usage-cost` header (D1's own
// meta): the same statements and the same rows read at 10 rows left in a deletion as at 60,000
// (20,000 entries, their sources and occurrences). A deletion's rows left are counters its lane
// keeps on its tombstone (counted before it deletes anything, then taken off by each cleanup
// batch), so the read reads the tombstone's row, not the rows left.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { largeCollection, ok, cost, rows } from "./helpers.mjs";

const workers = [];
after(() => Promise.all(workers.map((w) => w.dispose())));

/** The rows the deletion of collection `id` (slug `slug`) has left, counted in the tables. */
async function left(w, id, slug) {
  const [r] = await rows(
    w,
    `SELECT (SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = ?1)
          + (SELECT count(*) FROM revisions WHERE collection = ?2)
          + (SELECT count(*) FROM _emdash_media_usage WHERE source_key >= 'content:' || ?1 || ':' AND source_key < 'content:' || ?1 || ';')
          + (SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = ?1) AS n`,
    id,
    slug,
  );
  return r.n;
}

/** A fresh site (ticks of the smallest budget, 11 statements) with the deletion of one
 * collection of `shape` in progress, ticked until its lane has counted what it has left;
 * resolves with what a status read then costs, the deletion's row of it, and the rows left. */
async function statusWhileDeleting(shape) {
  const w = await startWorker({ MEDIA_USAGE_TICK_MAX_QUERIES: "11", MEDIA_USAGE_TICK_MAX_MS: "60000" });
  workers.push(w);
  const c = await largeCollection(w, shape);
  const [{ id }] = await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", c.slug);
  ok(await w.del(`/schema/collections/${c.slug}?force=true`));
  // Before the lane has run: nothing counted, and the status says so.
  const before = ok(await w.get("/admin/media-usage/status")).deletions[0];
  assert.deepEqual([before.rowsLeft, before.counting, before.rowsLeftCapped, before.estimate.atLeast], [0, true, true, true]);
  // Counting reads at most 3 rows (D1's meta) per row counted, as the lane declares
  // (`COUNT_ROW_COST`), beside each statement's own (`COUNT_STATEMENT_ROWS`).
  let counted = 0;
  for (let i = 0; ; i++) {
    const [t] = await rows(w, "SELECT count_kind FROM _emdash_media_usage_collection_deletions");
    if (t.count_kind === 4) break;
    assert.ok(i < 20, "counted within 20 ticks");
    await w.scheduled();
    const tick = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
    const now = ok(await w.get("/admin/media-usage/status")).deletions[0].rowsLeft;
    assert.ok(tick.rowsRead <= 3 * (now - counted) + 4 * 1100, JSON.stringify([tick, now, counted]));
    counted = now;
  }
  const res = await w.get("/admin/media-usage/status");
  const status = ok(res);
  assert.equal(status.deletions.length, 1, JSON.stringify(status.deletions));
  return { w, id, slug: c.slug, cost: cost(res), deletion: status.deletions[0], left: await left(w, id, c.slug) };
}

test("a status read costs the same statements and rows at 10 and at 60,000 rows left in a deletion", { timeout: 300_000 }, async () => {
  const small = await statusWhileDeleting({ entries: 3, occurrences: 1, revisions: 1, revisionBytes: 10 });
  const large = await statusWhileDeleting({ entries: 20000, occurrences: 1 });
  assert.ok(small.left > 0 && small.left <= 10, `${small.left}`);
  assert.ok(large.left >= 59000, `${large.left}`);
  for (const { deletion, left } of [small, large]) {
    // Exact: the counters the lane keeps.
    assert.deepEqual(
      [deletion.rowsLeft, deletion.counting, deletion.rowsLeftCapped, deletion.estimate.atLeast],
      [left, false, false, false],
      JSON.stringify(deletion),
    );
  }
  assert.deepEqual(
    [small.cost.statements, small.cost["rows-read"]],
    [large.cost.statements, large.cost["rows-read"]],
    "statements, rows read",
  );
  // It used to read every row left of each kind: 40,008 rows here.
  assert.ok(large.cost["rows-read"] < 100, JSON.stringify(large.cost));
  // (The sixth reads the page of relinks in progress.)
  assert.equal(large.cost.statements, 6, JSON.stringify(large.cost));
  // As the cleanup runs, each batch takes what it deleted off the counters (D1's `changes()` in
  // the same batch): the figure stays exact.
  let before = large.left;
  for (let i = 0; i < 3; i++) {
    await large.w.scheduled();
    const deletion = ok(await large.w.get("/admin/media-usage/status")).deletions[0];
    const now = await left(large.w, large.id, large.slug);
    assert.ok(now < before, `tick ${i} deleted rows: ${now}`);
    assert.equal(deletion.rowsLeft, now, JSON.stringify(deletion));
    before = now;
  }
});
