// Rows read and written as budgets on real (local) D1, measured by D1's own meta (the tick log's
// `rowsWritten`/`rowsRead`: D1's figures for the tick's statements plus at most what its log
// write costs): no tick passes MEDIA_USAGE_TICK_MAX_ROWS_WRITTEN / _READ across the deletion of a
// 20,000-entry collection and a repair; the daily budget (MEDIA_USAGE_DAILY_ROWS_WRITTEN) stops
// the deletion on the database's UTC day D, not the work lane, and the deletion resumes on D+1
// (the stored days moved back a day, as the database clock moving on would see them); the
// status shows the day's use and an estimate for each deletion and repair; a cron event's time
// (2099 here) is stored nowhere.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { largeCollection, ok, rows, uniq, err } from "./helpers.mjs";

// The smallest row budgets (one projection job at the default admission limit): no claim or
// barrier reads the queue (a claim used to read the queued rows of a collection being deleted as
// it passed them, 69,000 with 20,000 queued; a repair's barrier, three per queued row); statements
// and time do not bind.
const MAX_WRITTEN = 14110;
const MAX_READ = 20510;
const tight = { MEDIA_USAGE_TICK_MAX_ROWS_WRITTEN: String(MAX_WRITTEN), MEDIA_USAGE_TICK_MAX_ROWS_READ: String(MAX_READ) };
const w = await startWorker(
  // The rows budgets alone bound these ticks: statements, wall time and modelled CPU are lifted.
  { MEDIA_USAGE_TICK_MAX_QUERIES: "1000", MEDIA_USAGE_TICK_MAX_MS: "60000", MEDIA_USAGE_TICK_MAX_CPU_MS: "600000", MEDIA_USAGE_DAILY_ROWS_WRITTEN: "0", ...tight },
  { daily: { MEDIA_USAGE_DAILY_ROWS_WRITTEN: "4000" } },
);
after(() => w.dispose());

const sql = (q, ...p) => w.db.prepare(q).bind(...p).run();
/** The database's UTC day. */
const today = async () => (await rows(w, "SELECT date('now') AS d"))[0].d;
/** The database's day passes for the daily budget: every day's row moves a day back. */
const aDayPasses = async () => {
  await sql("UPDATE _emdash_media_usage_daily SET day = date(day, '-1000 days')");
  await sql("UPDATE _emdash_media_usage_daily SET day = date(day, '+999 days')");
};

/** A collection of `n` entries, each queued for work, with a revision (unless not
 * `revisions`), a live source and an occurrence: the large-collection fixture, seeded through the
 * probe (as an import would). */
const collection = (n, revisions = true) =>
  largeCollection(w, { slug: uniq("r"), entries: n, occurrences: 1, revisions: revisions ? n : 0 });

async function lastTick() {
  return ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
}

function withinBudget(t, i) {
  assert.ok(t.rowsWritten <= MAX_WRITTEN, `tick ${i} wrote ${t.rowsWritten} rows: ${JSON.stringify(t)}`);
  assert.ok(t.rowsRead <= MAX_READ, `tick ${i} read ${t.rowsRead} rows: ${JSON.stringify(t)}`);
  // D1's own figures for the tick's statements, before its log write.
  assert.ok(t.details.d1.rowsWritten < t.rowsWritten && t.details.d1.rowsRead < t.rowsRead, JSON.stringify(t));
  assert.equal(t.details.error, null, JSON.stringify(t));
}

test("no tick passes its rows budgets across the deletion of 20,000 entries", async () => {
  const c = await collection(20000);
  ok(await w.del(`/schema/collections/${c.slug}?force=true`));
  const ticks = [];
  for (let i = 0; i < 80; i++) {
    await w.scheduled();
    const t = await lastTick();
    withinBudget(t, i);
    ticks.push([t.rowsWritten, t.rowsRead, t.details.deletedRows]);
    const [left] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1", c.id);
    if (left.n === 0) {
      assert.equal(ticks.reduce((s, t) => s + t[2], 0), 4 * 20000, "work, revisions, sources and occurrences");
      // The rows budgets, not the statements, bounded the ticks.
      assert.ok(ticks.length >= 4, JSON.stringify(ticks));
      assert.ok(ticks.some(([written, read]) => written > MAX_WRITTEN / 2 || read > MAX_READ / 2), JSON.stringify(ticks));
      return;
    }
  }
  throw new Error("the deletion did not finish in 80 ticks");
});

test("no tick passes its rows budgets across a repair, and the status estimates it", async () => {
  const slug = uniq("p");
  ok(await w.post("/schema/collections", { slug, label: slug, fields: [{ slug: "title", type: "string" }] }), 201);
  await sql(
    `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 10000)
     INSERT INTO "ec_${slug}" (id, slug, title) SELECT printf('p%06d', i), printf('p%06d', i), 'T' FROM seq`,
  );
  // An import behind the API: nothing queued.
  await sql(`DELETE FROM _emdash_media_usage_work WHERE collection_slug = ?1`, slug);
  const repair = ok(await w.post("/admin/media-usage/repair", { scope: "collection", collection: slug }));
  assert.equal(repair.status, "running");
  const status = ok(await w.get("/admin/media-usage/status"));
  const run = status.repairs.find((r) => r.collection === slug);
  assert.ok(run && run.entriesLeft + run.queuedLeft > 0 && run.estimate.rowsToWrite > 0, JSON.stringify(status.repairs));
  for (let i = 0; i < 150; i++) {
    await w.scheduled();
    const t = await lastTick();
    withinBudget(t, i);
    const s = ok(await w.get("/admin/media-usage/status"));
    if (s.collections.find((c) => c.collection === slug).status === "complete" && s.repairs.length === 0) return;
  }
  throw new Error("the repair did not finish in 150 ticks");
});

test("the daily budget stops the deletion on day D (not the work lane) and it resumes on day D+1", async () => {
  const d = w.as("daily");
  // No revisions: deleting one reads every other collection's entries (no index on the columns
  // that point at revisions yet), which would bound these ticks by rows read instead.
  const c = await collection(3000, false);
  ok(await w.del(`/schema/collections/${c.slug}?force=true`));
  // A fresh day (the tests above wrote far more than this budget today): its ticks count the
  // deletion's rows, then delete until the budget is spent.
  await aDayPasses();
  const day = await today();
  let spent = null;
  for (let i = 0; i < 10 && !spent; i++) {
    await d.scheduled();
    const t = await lastTick();
    withinBudget(t, i);
    assert.equal(t.budgetDay, day);
    if (t.details.dailyBudgetSpent) spent = t;
  }
  assert.ok(spent, "the day's budget was spent");
  // Resting: a tick on day D deletes nothing and asks for no continuation, but the work lane
  // still projects what content writes queued.
  const other = uniq("n");
  ok(await w.post("/schema/collections", { slug: other, label: other }), 201);
  await sql(`INSERT INTO "ec_${other}" (id, slug) VALUES ('n1', 'n1')`);
  await d.scheduled();
  const resting = await lastTick();
  assert.equal(resting.details.deletedRows, 0, JSON.stringify(resting));
  assert.equal(resting.details.jobs, 1, JSON.stringify(resting));
  assert.ok(resting.details.dailyBudgetSpent && resting.outcome !== "budget", JSON.stringify(resting));
  const status = ok(await d.get("/admin/media-usage/status"));
  assert.equal(status.daily.day, day);
  assert.equal(status.daily.budget, 4000);
  assert.ok(status.daily.rowsWritten > 3000 && status.daily.ticks >= 2, JSON.stringify(status.daily));
  const deletion = status.deletions.find((x) => x.collectionId === c.id);
  assert.ok(deletion.rowsLeft > 0 && deletion.estimate.days >= 1, JSON.stringify(deletion));
  assert.equal(deletion.estimate.finishDay > day, true, JSON.stringify(deletion));
  err(await d.get("/admin/media-usage/status?day=2031-02-30x"), 400, "VALIDATION_ERROR");

  // Day D+1: it resumes.
  await aDayPasses();
  await d.scheduled();
  const resumed = await lastTick();
  assert.equal(resumed.budgetDay, day);
  assert.ok(resumed.details.deletedRows > 0, JSON.stringify(resumed));
  const nextDay = ok(await d.get("/admin/media-usage/status")).daily;
  assert.ok(nextDay.rowsWritten > 0 && nextDay.rowsWritten <= 4000 + 20, JSON.stringify(nextDay));
});

test("a tick whose event says 2099 stores no 2099 value anywhere", async () => {
  const c = await collection(50);
  ok(await w.del(`/schema/collections/${c.slug}?force=true`));
  const time = Date.UTC(2099, 0, 1, 12);
  const stored = async () => {
    const found = [];
    const tables = await rows(w, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'");
    for (const { name } of tables) {
      for (const { column } of await rows(w, "SELECT name AS column FROM pragma_table_info(?1)", name)) {
        const [hit] = await rows(
          w,
          `SELECT count(*) AS n FROM "${name}" WHERE CAST("${column}" AS TEXT) LIKE '%2099-%' OR CAST("${column}" AS TEXT) LIKE ?1`,
          `%${time}%`,
        );
        if (hit.n > 0) found.push(`${name}.${column}`);
      }
    }
    return found;
  };
  assert.deepEqual(await stored(), []);
  await w.scheduled("*/2 * * * *", time);
  const t = await lastTick();
  assert.ok(t.details.deletedRows > 0, JSON.stringify(t));
  assert.equal(t.budgetDay, await today());
  assert.deepEqual(await stored(), []);
});
