// What one status read costs on real (local) D1, from the `x-media-usage-cost` header (D1's own
// meta): the same statements at 10 rows left in a deletion as at 60,000 (20,000 entries, their
// sources and occurrences), and the same rows once each count reaches its cap, so a large
// deletion in progress no longer makes every status read cost the rows it has left.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { largeCollection, ok, cost } from "./helpers.mjs";

const CAP = 1000;
const workers = [];
after(() => Promise.all(workers.map((w) => w.dispose())));

/** A fresh site with the deletion of one collection of `shape` in progress; resolves with what
 * a status read then costs and the deletion's row of it. */
async function statusWhileDeleting(shape) {
  const w = await startWorker();
  workers.push(w);
  const c = await largeCollection(w, shape);
  ok(await w.del(`/schema/collections/${c.slug}?force=true`));
  const res = await w.get("/admin/media-usage/status");
  const status = ok(res);
  assert.equal(status.deletions.length, 1, JSON.stringify(status.deletions));
  return { cost: cost(res), deletion: status.deletions[0], more: status.deletionsMore };
}

test("a status read costs the same statements at 10 and at 20,000 entries left in a deletion, and bounded rows", { timeout: 300_000 }, async () => {
  const small = await statusWhileDeleting({ entries: 3, occurrences: 1, revisions: 1, revisionBytes: 10 });
  const past = await statusWhileDeleting({ entries: CAP + 1, occurrences: 1 });
  const large = await statusWhileDeleting({ entries: 20000, occurrences: 1 });
  assert.deepEqual([small.deletion.rowsLeft, small.deletion.rowsLeftCapped, small.more], [10, false, false]);
  assert.deepEqual([large.deletion.rowsLeft, large.deletion.rowsLeftCapped, large.deletion.estimate.atLeast], [3 * CAP, true, true]);
  assert.equal(small.cost.statements, large.cost.statements, "statements");
  assert.deepEqual([past.cost.statements, past.cost["rows-read"]], [large.cost.statements, large.cost["rows-read"]], "statements, rows read");
  // It used to read every row left of each kind: 40,008 rows here.
  assert.ok(large.cost["rows-read"] <= small.cost["rows-read"] + 3 * CAP + 3, JSON.stringify([small.cost, large.cost]));
});
