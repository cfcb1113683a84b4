// Continuation ticks through a local queue: a tick that leaves due work sends one message, the
// consumer runs another tick with the same budgets, and the chain ends when nothing is due.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, rows, uniq } from "./helpers.mjs";

const QUEUE = "media-usage-continue-test";
const w = await startWorker(
  { MEDIA_USAGE_TICK_MAX_QUERIES: "11", MEDIA_USAGE_TICK_MAX_MS: "60000" },
  { plain: { MEDIA_USAGE_TICK_MAX_QUERIES: "11", MEDIA_USAGE_TICK_MAX_MS: "60000" } },
  { queueProducers: { MEDIA_USAGE_CONTINUE: QUEUE }, queueConsumers: { [QUEUE]: { maxBatchSize: 1, maxBatchTimeout: 1 } } },
);
after(() => w.dispose());

/** Waits for `check` to hold (polling the database), failing after `ms`. */
async function until(check, ms, what) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function backlog(n) {
  const c = uniq("cq");
  ok(await w.post("/schema/collections", { slug: c, label: c, fields: [{ slug: "hero", type: "image" }] }), 201);
  for (let i = 0; i < n; i++) {
    await w.db.prepare(`INSERT INTO "ec_${c}" (id, slug, status, hero) VALUES (?1, ?1, 'published', ?2)`).bind(`e${i}`, `m${i}`).run();
  }
  return c;
}

const due = async () => (await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_work WHERE state <> 'failed'"))[0].n;
const ticks = async () => (await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_ticks"))[0].n;

test("one cron tick drains a backlog through continuation ticks, then the chain ends", { timeout: 60_000 }, async () => {
  await backlog(40);
  assert.equal(await due(), 40);
  const before = await ticks();
  await w.scheduled();
  // One cron tick at 11 statements runs one job; the rest is done by continuation ticks.
  await until(async () => (await due()) === 0, 45_000, "the backlog to drain");
  await until(async () => (await rows(w, "SELECT * FROM _emdash_media_usage_continuation")).length === 0, 15_000, "the chain to end");
  const run = (await ticks()) - before;
  assert.ok(run > 10, `${run} ticks ran from one cron tick`);
  const log = await rows(w, "SELECT statements, details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT ?1", run);
  assert.ok(log.every((t) => t.statements <= 11), "every tick within its budget");
  const continued = log.filter((t) => JSON.parse(t.details).continued).length;
  assert.equal(continued, run - 1, "every tick but the last handed on one continuation");
});

test("without the queue binding, cron alone drives the work", async () => {
  const c = await backlog(5);
  const before = await ticks();
  await w.as("plain").scheduled();
  assert.equal((await ticks()) - before, 1);
  assert.ok((await due()) > 0, "work is left for the next cron tick");
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_continuation")).length, 0);
  assert.ok(c);
});
