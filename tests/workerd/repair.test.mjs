// Index repair on D1: a schema change makes coverage stale; a repair run re-queues every entry in
// bounded steps (request + cron ticks) and finalises coverage complete.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, err, validation, rows, uniq } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

async function coverageOf(slug) {
  return ok(await w.get("/admin/media-usage/status")).collections.find((c) => c.collection === slug);
}

test("repair brings a stale collection back to complete and indexes the new field", async () => {
  const slug = uniq("repair");
  ok(await w.post("/schema/collections", { slug, label: "R", fields: [{ slug: "title", type: "string" }] }), 201);
  for (let i = 0; i < 6; i++) ok(await w.post(`/content/${slug}`, { slug: `e${i}`, status: "published", data: { title: "t" } }), 201);
  ok(await w.post(`/schema/collections/${slug}/fields`, { slug: "hero", type: "image" }), 201);
  const stale = await coverageOf(slug);
  assert.deepEqual([stale.status, stale.reconciliationRequired, stale.lastErrorCode], ["stale", true, "CONTENT_USAGE_STALE"]);
  // Values imported into the new column without capture.
  await w.db.prepare(`UPDATE "ec_${slug}" SET hero = 'img-' || slug`).run();
  await w.db.prepare("DELETE FROM _emdash_media_usage_work").run();

  const started = ok(await w.post("/admin/media-usage/repair", { scope: "collection", collection: slug }));
  assert.equal(started.started, 1);
  assert.ok(started.statements > 0 && started.statements <= 40, JSON.stringify(started));
  for (let i = 0; i < 30; i++) {
    if ((await rows(w, "SELECT 1 FROM _emdash_media_usage_reconciliations")).length === 0) break;
    await w.db.prepare("UPDATE _emdash_media_usage_reconciliations SET next_attempt_at = '2000-01-01T00:00:00.000Z'").run();
    assert.equal((await w.scheduled()).outcome, "ok");
  }
  const done = await coverageOf(slug);
  assert.deepEqual([done.status, done.reconciliationRequired], ["complete", false]);
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE 'img-%'");
  assert.equal(n.n, 6);
  // Six entries fit in the request's own budget: it answered complete, no cron tick was needed.
  assert.equal(started.status, "complete", JSON.stringify(started));
  const ticks = ok(await w.get("/admin/media-usage/ticks")).items;
  assert.ok(ticks.every((t) => t.statements <= 40));
});

test("repair requests are validated", async () => {
  validation(await w.post("/admin/media-usage/repair", {}), "scope");
  validation(await w.post("/admin/media-usage/repair", { scope: "all", x: 1 }), "x");
  validation(await w.post("/admin/media-usage/repair", { scope: "collection", collection: "Bad-Slug" }), "collection");
  err(await w.post("/admin/media-usage/repair", { scope: "collection", collection: "missing_one" }), 404, "COLLECTION_NOT_FOUND");
  err(await w.call("POST", "/admin/media-usage/repair", { rawBody: "{" }), 400, "INVALID_JSON");
});
