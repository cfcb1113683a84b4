// No scan of a table that grows with content, on real (local) D1: a draft save that prunes
// revisions beside a 100,000-entry collection reads a bounded number of rows (D1's foreign-key
// checks search the content tables' revision indexes), and a table created before those
// indexes existed gets them from the tick's `tables` lane.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, rows, cost, newCollection } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

const BIG = 100_000;
const FIELDS = [{ slug: "title", type: "string" }];

const posts = await newCollection(w, FIELDS);
const big = await newCollection(w, FIELDS);
// One statement each: the large collection's entries, each with its live revision.
await w.db
  .prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${BIG})
     INSERT INTO revisions (id, collection, entry_id, data) SELECT 'big-r' || i, '${big.slug}', 'big-e' || i, '{}' FROM n`,
  )
  .run();
await w.db
  .prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${BIG})
     INSERT INTO "ec_${big.slug}" (id, slug, status, live_revision_id, title)
     SELECT 'big-e' || i, 's' || i, 'published', 'big-r' || i, 't' FROM n`,
  )
  .run();

const id = ok(await w.post(`/content/${posts.slug}`, { slug: "a", data: { title: "A" } }), 201).item.id;
const save = async (title) => {
  const res = await w.put(`/content/${posts.slug}/${id}`, { draft: true, data: { title } });
  ok(res);
  return cost(res);
};
for (let i = 0; i < 25; i++) await save(`v${i}`);

test("a draft save that prunes a revision reads a bounded number of rows beside 100,000 entries", async (t) => {
  const k = await save("bounded");
  t.diagnostic(`draft save beside ${BIG} entries: ${JSON.stringify(k)}`);
  assert.ok(k["rows-written"] > 0, JSON.stringify(k));
  assert.ok(k["rows-read"] < 1_000, `a draft save read ${k["rows-read"]} rows: ${JSON.stringify(k)}`);
});

test("a tick with a 100,000-entry backlog reads about what its jobs need", async (t) => {
  // Inserting the entries queued each for projection (the capture trigger).
  const [queued] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_work");
  assert.ok(queued.n >= BIG, JSON.stringify(queued));
  const before = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0]?.id ?? 0;
  await w.scheduled();
  const [tick] = ok(await w.get("/admin/media-usage/ticks?limit=1")).items.filter((k) => k.id > before);
  t.diagnostic(`tick beside a ${BIG}-row queue: ${tick.details.jobs} jobs, ${tick.rowsRead} rows read`);
  assert.ok(tick.details.jobs > 0, JSON.stringify(tick));
  // The claims find each collection's earliest work by index: no claim reads the queue.
  assert.ok(tick.rowsRead < 100 * tick.details.jobs, JSON.stringify(tick));
  // The rest of the backlog is not what the next test looks at.
  await w.db.prepare("DELETE FROM _emdash_media_usage_work").run();
});

test("a table created before the revision indexes gets them from the tables lane, once", async (t) => {
  // As a table created by an earlier version: no revision indexes, table revision 0.
  await w.db.prepare(`DROP INDEX "idx_ec_${big.slug}_live_revision"`).run();
  await w.db.prepare(`DROP INDEX "idx_ec_${big.slug}_draft_revision"`).run();
  await w.db.prepare(`DROP INDEX "idx_ec_${big.slug}_translations"`).run();
  await w.db.prepare("UPDATE _emdash_collections SET table_revision = 0 WHERE id = ?1").bind(big.id).run();
  const scanning = await save("scanning");
  t.diagnostic(`the same save without the indexes: ${JSON.stringify(scanning)}`);
  assert.ok(scanning["rows-read"] > BIG, `the foreign-key check scans: ${JSON.stringify(scanning)}`);
  const before = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0]?.id ?? 0;
  await w.scheduled();
  await w.scheduled();
  const ticks = ok(await w.get("/admin/media-usage/ticks")).items.filter((t) => t.id > before);
  assert.equal(ticks.reduce((n, t) => n + t.details.tablesUpgraded, 0), 1, JSON.stringify(ticks));
  const [row] = await rows(w, "SELECT table_revision FROM _emdash_collections WHERE id = ?1", big.id);
  // Revision 2: the translations index too.
  assert.equal(row.table_revision, 2);
  const indexes = await rows(w, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 ORDER BY name", `ec_${big.slug}`);
  assert.ok(indexes.some((i) => i.name === `idx_ec_${big.slug}_translations`), JSON.stringify(indexes));
  const k = await save("bounded again");
  assert.ok(k["rows-read"] < 1_000, JSON.stringify(k));
});
