// The media usage index in workerd on real (local) D1: capture triggers, after-write
// projection, "Used in", eligibility, admission, per-request cost, cron ticks, the capture
// fence, and resumption after an injected crash.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, faultVariants } from "./harness.mjs";
import { ok, err, rows, uniq, cost, newCollection, validation } from "./helpers.mjs";

const w = await startWorker({}, { ...faultVariants([6]), budget11: { MEDIA_USAGE_TICK_MAX_QUERIES: "11" } });
after(() => w.dispose());

const collection = (fields) => newCollection(w, fields);

const FIELDS = [
  { slug: "title", type: "string" },
  { slug: "hero", type: "image" },
  { slug: "attachment", type: "file" },
  { slug: "body", type: "portableText" },
  { slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }] },
];

async function media(name) {
  const d = ok(await w.post("/media", { filename: name, mimeType: "image/jpeg", storageKey: uniq(name) }), 201);
  return d.item.id;
}

async function entry(c, slug, data, status = "published") {
  const d = ok(await w.post(`/content/${c.slug}`, { slug, status, data }), 201);
  return d.item.id;
}

const usedIn = async (m) => ok(await w.get(`/media/${m}/usage`));
const gallery = (n, p) => Array.from({ length: n }, (_, i) => ({ image: `${p}${i}` }));

test("a content write is listed in Used in with its paths, synchronously", async () => {
  const c = await collection(FIELDS);
  const m = await media("hero.jpg");
  const id = await entry(c, "hello", {
    title: "Hello",
    hero: { id: m, mimeType: "image/jpeg" },
    gallery: [{ image: m }],
    body: [{ _type: "block" }, { _type: "image", asset: { _ref: m } }],
    attachment: { id: m, mimeType: "application/pdf" },
  });
  const u = await usedIn(m);
  assert.equal(u.coverage.status, "complete");
  assert.equal(u.items.length, 1);
  const item = u.items[0];
  assert.deepEqual(
    { collection: item.collection, contentId: item.contentId, slug: item.slug, title: item.title, status: item.status, locale: item.locale, deletedAt: item.deletedAt },
    { collection: c.slug, contentId: id, slug: "hello", title: "Hello", status: "published", locale: "en", deletedAt: null },
  );
  assert.deepEqual(
    item.occurrences.map((o) => [o.fieldSlug, o.fieldPath, o.referenceType, o.occurrenceIndex]),
    [
      ["attachment", "attachment", "file_field", 0],
      ["body", "body[1].asset._ref", "portable_text_image", 0],
      ["gallery", "gallery[0].image", "image_field", 0],
      ["hero", "hero", "image_field", 0],
    ],
  );
  const [kinds] = await rows(w, "SELECT group_concat(media_kind) AS k FROM (SELECT media_kind FROM _emdash_media_usage WHERE media_id = ?1 ORDER BY field_path)", m);
  assert.equal(kinds.k, "document,image,image,image");
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_work")).length, 0);
  err(await w.get("/media/unknown/usage"), 404, "NOT_FOUND");
});

test("draft overlays and published columns are eligible by the rules", async () => {
  const c = await collection(FIELDS);
  const [live, draft, old] = [await media("live"), await media("draft"), await media("old")];
  const a = await entry(c, "a", { hero: live });
  ok(await w.put(`/content/${c.slug}/${a}`, { draft: true, data: { hero: draft } }));
  const b = await entry(c, "b", { hero: old }, "draft");
  ok(await w.put(`/content/${c.slug}/${b}`, { draft: true, data: { hero: draft } }));
  const count = async (m) => ok(await w.get(`/media/${m}?includeUsage=1`)).item.usage;
  assert.deepEqual(await count(live), { count: 1, coverage: { scope: "all_content_collections", status: "complete" } });
  assert.equal((await count(draft)).count, 2);
  assert.equal((await count(old)).count, 0, "a draft entry's superseded live media is not in use");
  assert.equal((await usedIn(old)).items.length, 0);
  const d = await usedIn(draft);
  assert.deepEqual(d.items.map((i) => i.contentId).sort(), [a, b].sort());
  // Publishing moves the draft's media into the live columns; the old live media is released.
  ok(await w.post(`/content/${c.slug}/${a}/publish`, {}));
  assert.equal((await count(live)).count, 0);
  assert.equal((await usedIn(draft)).items.length, 2);
});

test("a 1,001-occurrence write is refused; one saved behind the API fails terminally, holds only its own media, and an operator retry fails it again", async () => {
  const c = await collection(FIELDS);
  await entry(c, "thousand", { gallery: gallery(1000, "t") });
  const [n12] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage u JOIN _emdash_media_usage_sources s ON s.source_key = u.source_key WHERE s.collection_id = ?1", c.id);
  assert.equal(n12.n, 1000);
  validation(await w.post(`/content/${c.slug}`, { slug: "too-big", status: "published", data: { gallery: gallery(1001, "x") } }), "data");
  const id = uniq("big");
  await rows(w, `INSERT INTO ec_${c.slug} (id, slug, status, gallery) VALUES (?1, ?1, 'published', ?2)`, id, JSON.stringify(gallery(1001, "x")));
  await w.scheduled();
  const [work] = await rows(w, "SELECT state, attempt_count, last_error_code FROM _emdash_media_usage_work WHERE content_id = ?1", id);
  assert.deepEqual({ ...work }, { state: "failed", attempt_count: 1, last_error_code: "MEDIA_USAGE_RESOURCE_LIMIT" });
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_sources WHERE content_id = ?1", id)).length, 0);
  const status = ok(await w.get("/admin/media-usage/status")).collections.find((x) => x.collection === c.slug);
  assert.equal(status.status, "complete", "its media are known");
  const listed = ok(await w.get(`/admin/media-usage/work?collection=${c.slug}&state=failed`));
  assert.equal(listed.items[0].contentId, id);
  // An operator retry reopens the failed job (attempts reset); it fails again while the entry
  // is still too large.
  const r = ok(await w.post("/admin/media-usage/work/retry", { collectionId: c.id, contentId: id }));
  assert.equal(r.changed, true);
  assert.equal(r.item.state, "pending");
  assert.equal(r.item.attemptCount, 0);
  await w.scheduled();
  const [again] = await rows(w, "SELECT state, last_error_code FROM _emdash_media_usage_work WHERE content_id = ?1", id);
  assert.deepEqual({ ...again }, { state: "failed", last_error_code: "MEDIA_USAGE_RESOURCE_LIMIT" });
  assert.equal(ok(await w.get("/admin/media-usage/status")).collections.find((x) => x.collection === c.slug).status, "complete");
  // Fixing the entry re-captures it; the write's own job succeeds.
  ok(await w.put(`/content/${c.slug}/${id}`, { data: { gallery: gallery(2, "ok") } }));
  const fixed = ok(await w.get("/admin/media-usage/status")).collections.find((x) => x.collection === c.slug);
  assert.equal(fixed.status, "complete");
  assert.equal(fixed.lastErrorCode, null);
  assert.deepEqual(await rows(w, "SELECT * FROM _emdash_media_usage_work WHERE content_id = ?1", id), []);
});

test("a 12-occurrence draft update stays within 40 statements, 100 binds and 100 KB per statement", async () => {
  const c = await collection(FIELDS);
  const id = await entry(c, "budget", { gallery: gallery(12, "live") });
  const res = await w.put(`/content/${c.slug}/${id}`, { draft: true, data: { gallery: gallery(12, "draft") } });
  ok(res);
  const k = cost(res);
  assert.ok(k.statements > 5 && k.statements <= 40, JSON.stringify(k));
  assert.ok(k["max-binds"] <= 100, JSON.stringify(k));
  assert.ok(k["max-sql-bytes"] < 100_000, JSON.stringify(k));
  assert.ok(k["rows-written"] > 12 && k["rows-written"] <= 135, JSON.stringify(k));
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE 'draft%'");
  assert.equal(n.n, 12, "the draft overlay is indexed by the same request");
});

test("the cron tick drains pending work and records itself", async () => {
  const c = await collection(FIELDS);
  for (let i = 0; i < 4; i++) await entry(c, `e${i}`, { hero: `h${i}` });
  // Writes made behind the API fire the capture triggers but are not projected yet.
  await w.db.prepare(`UPDATE "ec_${c.slug}" SET hero = 'cron-' || hero`).run();
  const pending = await rows(w, "SELECT state FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id);
  assert.equal(pending.length, 4);
  assert.ok(pending.every((p) => p.state === "pending"));
  const before = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0]?.id ?? 0;
  for (let i = 0; i < 5; i++) {
    const result = await w.scheduled();
    assert.equal(result.outcome, "ok");
    const left = await rows(w, "SELECT * FROM _emdash_media_usage_work WHERE state <> 'failed'");
    if (left.length === 0) break;
  }
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id)).length, 0);
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE 'cron-%'");
  assert.equal(n.n, 4);
  const ticks = ok(await w.get("/admin/media-usage/ticks")).items.filter((t) => t.id > before);
  assert.ok(ticks.length >= 1);
  for (const tick of ticks) {
    assert.equal(tick.lane, "work");
    assert.ok(["progress", "budget", "idle"].includes(tick.outcome), JSON.stringify(tick));
    assert.ok(tick.statements > 0 && tick.statements <= 40, JSON.stringify(tick));
    assert.match(tick.startedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
  assert.ok(ticks.reduce((sum, t) => sum + t.details.jobs, 0) >= 4);
  assert.ok(ticks.some((t) => t.rowsWritten > 0));
  // Nothing due: the next tick is idle and cheap.
  await w.scheduled();
  const idle = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
  assert.equal(idle.outcome, "idle");
  // One probe per lane (work, schedule, deletion, fields, repair, purge, tables, relink: 8), the read of the day's
  // use of the daily budget, the repair lane's look for collections proven under other reference
  // rules, and the log write.
  assert.ok(idle.statements <= 11, JSON.stringify(idle));
});

test("writes to a collection whose capture is not active fail with 409 and queue nothing", async () => {
  const c = await collection(FIELDS);
  const id = await entry(c, "fenced", { hero: "h" });
  await w.db.prepare("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = ?1").bind(c.id).run();
  err(await w.post(`/content/${c.slug}`, { slug: "new", data: {} }), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  err(await w.put(`/content/${c.slug}/${id}`, { data: { hero: "x" } }), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  err(await w.del(`/content/${c.slug}/${id}`), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id)).length, 0);
  const [row] = await rows(w, `SELECT hero, deleted_at FROM "ec_${c.slug}" WHERE id = ?1`, id);
  assert.deepEqual({ ...row }, { hero: "h", deleted_at: null });
  // Directly on D1, too: the trigger aborts the statement.
  await assert.rejects(w.db.prepare(`UPDATE "ec_${c.slug}" SET hero = 'y'`).run(), /media usage capture inactive/);
});

test("a crash injected mid-request is resumed by the cron tick after the lease expires", async () => {
  const c = await collection(FIELDS);
  const id = await entry(c, "crash", { gallery: gallery(3, "before") });
  // Every statement from the 6th on fails: the write commits, its projection job dies midway.
  const res = await w.as("fault6").put(`/content/${c.slug}/${id}`, { data: { gallery: gallery(3, "after") } });
  assert.equal(res.status, 200, res.text);
  const visible = async () =>
    (await rows(w, `SELECT u.media_id AS m FROM _emdash_media_usage u JOIN _emdash_media_usage_sources s ON s.source_key = u.source_key AND s.current_generation = u.generation WHERE s.content_id = ?1 ORDER BY 1`, id)).map((r) => r.m);
  assert.deepEqual(await visible(), ["before0", "before1", "before2"], "the old generation stays fully visible");
  const [work] = await rows(w, "SELECT state FROM _emdash_media_usage_work WHERE content_id = ?1", id);
  assert.equal(work.state, "leased");
  // The dead invocation's lease runs out; the next tick finishes the job.
  await w.db.prepare("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = ?1").bind(id).run();
  await w.scheduled();
  assert.deepEqual(await visible(), ["after0", "after1", "after2"]);
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_work WHERE content_id = ?1", id)).length, 0);
});

test("D1 keeps exactly one generation per source and no guard rows", async () => {
  const [orphans] = await rows(
    w,
    "SELECT count(*) AS n FROM _emdash_media_usage u WHERE NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources s WHERE s.source_key = u.source_key AND s.current_generation = u.generation)",
  );
  assert.equal(orphans.n, 0);
  assert.equal((await rows(w, "SELECT * FROM _emdash_batch_guard")).length, 0);
});

test("the smallest supported tick budget (11 statements) still makes progress and stays within it", async () => {
  const c = await collection(FIELDS);
  for (let i = 0; i < 3; i++) await entry(c, `b${i}`, { hero: `b${i}` });
  await w.db.prepare(`UPDATE "ec_${c.slug}" SET hero = 'small-' || hero`).run();
  for (let i = 0; i < 10; i++) {
    if ((await rows(w, "SELECT 1 FROM _emdash_media_usage_work WHERE state <> 'failed'")).length === 0) break;
    await w.as("budget11").scheduled();
    const tick = ok(await w.get("/admin/media-usage/ticks?limit=1")).items[0];
    assert.ok(tick.statements <= 11, JSON.stringify(tick));
  }
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE 'small-%'");
  assert.equal(n.n, 3);
});
