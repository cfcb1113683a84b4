// One source variant a job on real (local) D1: under a small CPU budget an entry whose live
// columns and draft are each heavy is indexed over two ticks, its live columns first (the work
// row handed back queued and marked), then its draft overlay; the tick log shows each tick's
// modelled CPU within the budget and the split job.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { err, ok, rows, uniq } from "./helpers.mjs";

// 0.5 ms by the cost model: an entry of 100 KB models at about 0.41 ms, the same with a draft of
// 100 KB at about 0.79 ms.
const w = await startWorker({ MEDIA_USAGE_TICK_MAX_MS: "600000", MEDIA_USAGE_TICK_MAX_CPU_MS: "0.5" });
after(() => w.dispose());

async function media(key) {
  const res = await w.post("/media", { filename: key, mimeType: "image/png", storageKey: key });
  return ok(res, 201).item.id;
}

const usedIn = async (id) => ok(await w.get(`/media/${id}/usage`)).items;
const lastTick = async () => ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
const queued = async (id) =>
  rows(w, "SELECT state, lease_token, work_version, partial_work_version FROM _emdash_media_usage_work WHERE content_id = ?1", id);

test("an entry with a heavy live version and a heavy draft is indexed over two ticks, one variant each", async () => {
  const slug = uniq("sp");
  ok(await w.post("/schema/collections", { slug, label: slug, fields: [{ slug: "title", type: "text" }, { slug: "hero", type: "image" }] }), 201);
  const [live, draft] = [await media(uniq("live")), await media(uniq("draft"))];
  const text = (c) => `${c} `.repeat(50_000);
  const item = ok(await w.post(`/content/${slug}`, { slug: "heavy", status: "published", data: { title: text("l"), hero: live } }), 201).item;
  ok(await w.put(`/content/${slug}/${item.id}`, { draft: true, data: { title: text("d"), hero: draft } }));
  // Too heavy to project inline: both writes left it queued.
  assert.equal((await queued(item.id))[0].state, "pending");

  await w.scheduled();
  const first = await lastTick();
  assert.equal(first.details.splitJobs, 1, JSON.stringify(first));
  assert.ok(first.details.cpuModelUs > 0 && first.details.cpuModelUs <= 500, JSON.stringify(first.details));
  const [marked] = await queued(item.id);
  assert.equal(marked.state, "pending");
  assert.equal(marked.lease_token, null);
  assert.equal(marked.partial_work_version, marked.work_version);
  assert.equal((await usedIn(live)).length, 1, "the live columns are indexed");
  assert.equal((await usedIn(draft)).length, 0, "the draft overlay is not yet");
  // Between the halves the queued row keeps coverage from proving anything: the item only the
  // draft names is not deletable.
  err(await w.del(`/media/${draft}`), 409, "MEDIA_USAGE_COVERAGE_INCOMPLETE");

  await w.scheduled();
  const second = await lastTick();
  assert.equal(second.details.splitJobs, 0, JSON.stringify(second));
  assert.equal(second.details.jobs, 1, JSON.stringify(second));
  assert.ok(second.details.cpuModelUs > 0 && second.details.cpuModelUs <= 500, JSON.stringify(second.details));
  assert.equal((await queued(item.id)).length, 0, "the row is complete");
  assert.equal((await usedIn(live)).length, 1);
  assert.equal((await usedIn(draft)).length, 1);
  const status = ok(await w.get("/admin/media-usage/status")).collections.find((c) => c.collection === slug);
  assert.equal(status.status, "complete");
  err(await w.del(`/media/${draft}`), 409, "MEDIA_IN_USE");
  console.log(`split: live tick ${first.details.cpuModelUs} µs, draft tick ${second.details.cpuModelUs} µs (budget 500 µs)`);
});

test("a write between the halves makes the mark stale: the next job starts again from the live columns", async () => {
  const slug = uniq("sq");
  ok(await w.post("/schema/collections", { slug, label: slug, fields: [{ slug: "title", type: "text" }, { slug: "hero", type: "image" }] }), 201);
  const [a, b, c] = [await media(uniq("a")), await media(uniq("b")), await media(uniq("c"))];
  const text = (ch) => `${ch} `.repeat(50_000);
  const item = ok(await w.post(`/content/${slug}`, { slug: "heavy", status: "published", data: { title: text("l"), hero: a } }), 201).item;
  ok(await w.put(`/content/${slug}/${item.id}`, { draft: true, data: { title: text("d"), hero: b } }));
  await w.scheduled();
  assert.equal((await lastTick()).details.splitJobs, 1);
  const [before] = await queued(item.id);
  // A write behind the API to the live columns: captured, the work version moves on.
  await w.db.prepare(`UPDATE "ec_${slug}" SET hero = ?1 WHERE id = ?2`).bind(c, item.id).run();
  const [after] = await queued(item.id);
  assert.equal(after.work_version, before.work_version + 1);
  await w.scheduled();
  assert.equal((await lastTick()).details.splitJobs, 1, "the live columns again, not the draft alone");
  assert.equal((await usedIn(c)).length, 1);
  assert.equal((await usedIn(a)).length, 0);
  await w.scheduled();
  assert.equal((await queued(item.id)).length, 0);
  assert.equal((await usedIn(b)).length, 1);
});
