// Real content on real (local) D1: galleries with drafts, long titles, files in repeaters, small
// repairs, stale drafts, revision retention, and bad input that must stay a 4xx.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, err, rows, uniq, validation, cost, newCollection } from "./helpers.mjs";

const w = await startWorker({}, { admit12: { MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY: "12" }, revisions3: { MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY: "3" }, cpu: { MEDIA_USAGE_TICK_MAX_CPU_MS: "600000" } });
after(() => w.dispose());

/**
 * The most statements a content write issues itself: a draft save reads the collection, the
 * entry and its draft, then writes one guarded batch of four (guard, revision, entry, pruning).
 */
const WRITE_STATEMENTS = 7;
/** The most statements one projection job issues (`JOB_MAX_STATEMENTS`). */
const JOB_STATEMENTS = 8;

const collection = (fields) => newCollection(w, fields);

const GALLERY = [
  { slug: "title", type: "string" },
  { slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }] },
];
const gallery = (n, p) => Array.from({ length: n }, (_, i) => ({ image: `${p}${i}` }));

async function coverageOf(c) {
  const st = ok(await w.get("/admin/media-usage/status"));
  return st.collections.find((x) => x.collection === c.slug);
}

async function occurrences(id, variant) {
  const [r] = await rows(
    w,
    `SELECT count(*) AS n FROM _emdash_media_usage u JOIN _emdash_media_usage_sources s
     ON s.source_key = u.source_key AND s.current_generation = u.generation
     WHERE s.content_id = ?1 AND s.source_variant = ?2`,
    id,
    variant,
  );
  return r.n;
}

test("a 200-image gallery goes through draft, publish, unpublish, trash, restore and delete, each indexed by its own request", async () => {
  const c = await collection(GALLERY);
  const step = async (what, res, status = 200) => {
    const d = ok(res, status);
    const left = await rows(w, "SELECT state, last_error_code FROM _emdash_media_usage_work WHERE collection_id = ?1", c.id);
    assert.deepEqual(left, [], `${what}: indexed in its own request`);
    const cov = await coverageOf(c);
    assert.equal(cov.status, "complete", `${what}: ${JSON.stringify(cov)}`);
    const statements = cost(res).statements;
    assert.ok(statements <= WRITE_STATEMENTS + JOB_STATEMENTS, `${what}: ${statements} statements`);
    return d;
  };
  const created = await step("create", await w.post(`/content/${c.slug}`, { slug: "g", status: "published", data: { gallery: gallery(200, "a") } }), 201);
  const id = created.item.id;
  const path = `/content/${c.slug}/${id}`;
  assert.equal(await occurrences(id, "columns"), 200);
  await step("draft", await w.put(path, { draft: true, data: { gallery: gallery(200, "b") } }));
  assert.deepEqual([await occurrences(id, "columns"), await occurrences(id, "draft_overlay")], [200, 200]);
  await step("publish", await w.post(`${path}/publish`, {}));
  assert.deepEqual([await occurrences(id, "columns"), await occurrences(id, "draft_overlay")], [200, 0]);
  const [old] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id LIKE 'a%'");
  assert.equal(old.n, 0);
  await step("unpublish", await w.post(`${path}/unpublish`, {}));
  await step("trash", await w.del(path));
  await step("restore", await w.post(`${path}/restore`, {}));
  await step("permanent delete", await w.del(`${path}?permanent=true`));
  const [left] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage_sources WHERE collection_id = ?1", c.id);
  assert.equal(left.n, 0);
});

test("a 7-image gallery entry with a draft is published into the index", async () => {
  const c = await collection(GALLERY);
  const id = ok(await w.post(`/content/${c.slug}`, { slug: "g", status: "published", data: { gallery: gallery(7, "s") } }), 201).item.id;
  ok(await w.put(`/content/${c.slug}/${id}`, { draft: true, data: { title: "x" } }));
  ok(await w.post(`/content/${c.slug}/${id}/publish`, {}));
  assert.equal((await coverageOf(c)).status, "complete");
  assert.equal(await occurrences(id, "columns"), 7);
});

test("1,000 occurrences per variant are admitted; one more is refused up front; an entry over the limit anyway holds only its own media", async () => {
  const c = await collection(GALLERY);
  const okId = ok(await w.post(`/content/${c.slug}`, { slug: "thousand", status: "published", data: { gallery: gallery(1000, "k") } }), 201).item.id;
  ok(await w.put(`/content/${c.slug}/${okId}`, { draft: true, data: { gallery: gallery(1000, "l") } }));
  assert.deepEqual([await occurrences(okId, "columns"), await occurrences(okId, "draft_overlay")], [1000, 1000]);
  const refused = validation(await w.post(`/content/${c.slug}`, { slug: "too-big", status: "published", data: { gallery: gallery(1001, "x") } }), "data");
  assert.match(refused[0].message, /references 1001 media items; at most 1000/);
  assert.deepEqual(await rows(w, `SELECT id FROM ec_${c.slug} WHERE slug = 'too-big'`), []);
  assert.equal((await coverageOf(c)).status, "complete");
  // Saved behind the API (an earlier version let it in), with one registered image among 1,001.
  const used = ok(await w.post("/media", { filename: "u.png", mimeType: "image/png", storageKey: uniq("u") }), 201).item.id;
  const spare = ok(await w.post("/media", { filename: "s.png", mimeType: "image/png", storageKey: uniq("s") }), 201).item.id;
  const id = uniq("big");
  await rows(w, `INSERT INTO ec_${c.slug} (id, slug, status, gallery) VALUES (?1, ?1, 'published', ?2)`, id, JSON.stringify([{ image: used }, ...gallery(1000, "x")]));
  await w.scheduled();
  const [work] = await rows(w, "SELECT state, last_error_code, json_array_length(unindexed_media) AS n FROM _emdash_media_usage_work WHERE content_id = ?1", id);
  assert.deepEqual({ ...work }, { state: "failed", last_error_code: "MEDIA_USAGE_RESOURCE_LIMIT", n: 1001 });
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_sources WHERE content_id = ?1", id)).length, 0);
  const listed = ok(await w.get(`/admin/media-usage/work?collection=${c.slug}&state=failed`));
  assert.deepEqual([listed.items[0].contentId, listed.items[0].contentSlug], [id, id]);
  // Its media are known: coverage stays complete, and only what it uses is held.
  assert.equal((await coverageOf(c)).status, "complete");
  const inUse = err(await w.del(`/media/${used}`), 409, "MEDIA_IN_USE");
  assert.deepEqual(inUse.details.entries, [{ collection: c.slug, contentId: id, slug: null, indexed: false }]);
  assert.deepEqual(ok(await w.get(`/media/${used}/usage`)).unindexed, [{ collection: c.slug, contentId: id }]);
  ok(await w.del(`/media/${spare}`));
  // Fixing the entry indexes it and lets go of what it dropped.
  ok(await w.put(`/content/${c.slug}/${id}`, { data: { gallery: gallery(3, "ok") } }));
  assert.equal((await coverageOf(c)).status, "complete");
  ok(await w.del(`/media/${used}`));
  // Removing a source is always admitted, however many occurrences it holds.
  ok(await w.del(`/content/${c.slug}/${okId}?permanent=true`));
  assert.equal((await coverageOf(c)).status, "complete");
});

test("the occurrence limit is configurable", async () => {
  const c = await collection(GALLERY);
  const a = w.as("admit12");
  ok(await a.post(`/content/${c.slug}`, { slug: "twelve", status: "published", data: { gallery: gallery(12, "t") } }), 201);
  const r = validation(await a.post(`/content/${c.slug}`, { slug: "thirteen", status: "published", data: { gallery: gallery(13, "u") } }), "data");
  assert.match(r[0].message, /references 13 media items; at most 12/);
  // The default admits it.
  ok(await w.post(`/content/${c.slug}`, { slug: "thirteen", status: "published", data: { gallery: gallery(13, "u") } }), 201);
  assert.equal((await coverageOf(c)).status, "complete");
});

test("a 700 KB title is indexed by the next tick; Used in shows its first 200 characters", async () => {
  const c = await collection([{ slug: "title", type: "string" }, { slug: "hero", type: "image" }]);
  const m = ok(await w.post("/media", { filename: "t.jpg", mimeType: "image/jpeg", storageKey: uniq("t") }), 201).item.id;
  ok(await w.post(`/content/${c.slug}`, { slug: "long", status: "published", data: { title: "é".repeat(350_000), hero: m } }), 201);
  // Too heavy to project within the request's CPU budget: the write leaves it to the ticks.
  assert.equal((await coverageOf(c)).status, "stale");
  await w.scheduled();
  assert.equal((await coverageOf(c)).status, "complete");
  const u = ok(await w.get(`/media/${m}/usage`));
  assert.equal(u.items[0].title, "é".repeat(200));
});

test("a file used only in a repeater is in use: the safe delete refuses", async () => {
  const c = await collection([{ slug: "downloads", type: "repeater", subFields: [{ slug: "label", type: "string" }, { slug: "file", type: "file" }] }]);
  const pdf = ok(await w.post("/media", { filename: "guide.pdf", mimeType: "application/pdf", storageKey: uniq("pdf") }), 201).item.id;
  ok(await w.post(`/content/${c.slug}`, { slug: "guide", status: "published", data: { downloads: [{ label: "Guide", file: { id: pdf, mimeType: "application/pdf" } }] } }), 201);
  err(await w.del(`/media/${pdf}`), 409, "MEDIA_IN_USE");
  const u = ok(await w.get(`/media/${pdf}/usage`));
  assert.deepEqual(
    u.items[0].occurrences.map((o) => [o.fieldPath, o.referenceType]),
    [["downloads[0].file", "file_field"]],
  );
  ok(await w.get(`/media/${pdf}`));
});

test("a small repair answers complete in its own request (the CPU budget lifted)", async () => {
  // At the default CPU budget (4 ms modelled) a repair request may leave entries to the ticks.
  const c = await collection(GALLERY);
  for (let i = 0; i < 3; i++) {
    ok(await w.post(`/content/${c.slug}`, { slug: `e${i}`, status: "published", data: { gallery: gallery(1, `r${i}-`) } }), 201);
  }
  // A field add leaves the collection stale; values written past capture need the repair.
  ok(await w.post(`/schema/collections/${c.slug}/fields`, { slug: "hero", type: "image" }), 201);
  await w.db.prepare(`UPDATE "ec_${c.slug}" SET hero = 'h-' || slug`).run();
  await w.db.prepare("DELETE FROM _emdash_media_usage_work WHERE collection_id = ?1").bind(c.id).run();
  const r = await w.as("cpu").post("/admin/media-usage/repair", { scope: "collection", collection: c.slug });
  const d = ok(r);
  assert.equal(d.status, "complete", r.text);
  assert.equal(d.collections[0].indexedSourceCount, 3);
  assert.ok(cost(r).statements <= 40, r.headers.get("x-media-usage-cost"));
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_reconciliations WHERE collection_id = ?1", c.id)).length, 0);
  const [hero] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id = 'h-e1'");
  assert.equal(hero.n, 1);
});

test("publishing a draft older than the live row is a conflict; saving the draft again rebases it", async () => {
  const c = await collection([{ slug: "title", type: "string" }, { slug: "summary", type: "string" }]);
  const id = ok(await w.post(`/content/${c.slug}`, { slug: "a", status: "published", data: { title: "A", summary: "s" } }), 201).item.id;
  const path = `/content/${c.slug}/${id}`;
  ok(await w.put(path, { draft: true, data: { summary: "draft" } }));
  ok(await w.put(path, { data: { title: "B" } }));
  const before = ok(await w.get(path));
  err(await w.post(`${path}/publish`, {}), 409, "CONFLICT");
  assert.deepEqual(ok(await w.get(path)), before);
  ok(await w.put(path, { draft: true, data: { summary: "rebased" } }));
  const published = ok(await w.post(`${path}/publish`, {}));
  assert.deepEqual(published.item.data, { title: "B", summary: "rebased" });
});

test("an entry keeps at most the configured revisions, and they go with it", async () => {
  const c = await collection([{ slug: "title", type: "string" }]);
  const r3 = w.as("revisions3");
  const id = ok(await r3.post(`/content/${c.slug}`, { slug: "a", status: "published", data: { title: "A" } }), 201).item.id;
  const path = `/content/${c.slug}/${id}`;
  ok(await r3.put(path, { draft: true, data: { title: "live" } }));
  const live = ok(await r3.post(`${path}/publish`, {})).item.liveRevisionId;
  for (let i = 0; i < 6; i++) ok(await r3.put(path, { draft: true, data: { title: `d${i}` } }));
  const revs = await rows(w, "SELECT id FROM revisions WHERE entry_id = ?1", id);
  assert.equal(revs.length, 3);
  assert.ok(revs.some((r) => r.id === live), "the live revision is kept");
  ok(await r3.del(`${path}?permanent=true`));
  assert.equal((await rows(w, "SELECT id FROM revisions WHERE entry_id = ?1", id)).length, 0);
});

test("unpublishing an entry that is not published changes nothing", async () => {
  const c = await collection([{ slug: "title", type: "string" }]);
  const id = ok(await w.post(`/content/${c.slug}`, { slug: "d", data: { title: "D" } }), 201).item.id;
  const before = ok(await w.get(`/content/${c.slug}/${id}`));
  const after = ok(await w.post(`/content/${c.slug}/${id}/unpublish`, {}));
  assert.deepEqual(after, before);
  assert.equal((await rows(w, "SELECT * FROM _emdash_media_usage_work WHERE content_id = ?1", id)).length, 0);
});

test("bad input gets a 4xx with nothing written", async () => {
  const c = await collection([{ slug: "a", type: "text" }, { slug: "b", type: "text" }, { slug: "d", type: "text" }]);
  const id = ok(await w.post(`/content/${c.slug}`, { slug: "x", status: "published", data: { a: "1" } }), 201).item.id;
  const path = `/content/${c.slug}/${id}`;
  // A `_rev` decoding to 2^53 + 1.
  validation(await w.put(path, { _rev: "cmV2OjkwMDcxOTkyNTQ3NDA5OTM", data: { a: "2" } }), "_rev");
  // A ticks cursor whose id is past 2^53.
  const cursor = Buffer.from(JSON.stringify({ v: "x", id: "9007199254740993" })).toString("base64url");
  err(await w.get(`/admin/media-usage/ticks?cursor=${cursor}`), 400, "INVALID_CURSOR");
  // Writes that together pass D1's 2 MB row (local D1 stops at about 2.2 MB).
  ok(await w.put(path, { data: { a: "a".repeat(900_000) } }));
  ok(await w.put(path, { data: { b: "b".repeat(900_000) } }));
  const before = ok(await w.get(path));
  const tooBig = (res) => {
    assert.equal(res.status, 413, res.text.slice(0, 300));
    err(res, 413, "PAYLOAD_TOO_LARGE");
  };
  tooBig(await w.put(path, { data: { d: "d".repeat(450_000) } }));
  assert.deepEqual(ok(await w.get(path)), before);
  tooBig(await w.put(path, { draft: true, data: { d: "d".repeat(450_000) } }));
  assert.deepEqual(ok(await w.get(path)), before);
});

test("a list page of large entries stops at its size bound and continues with a cursor", async () => {
  const c = await collection([{ slug: "body", type: "text" }]);
  for (let i = 0; i < 6; i++) {
    ok(await w.post(`/content/${c.slug}`, { slug: `big${i}`, data: { body: "x".repeat(900_000) } }), 201);
  }
  const first = ok(await w.get(`/content/${c.slug}?limit=100`));
  assert.equal(first.items.length, 5);
  assert.ok(first.nextCursor);
  const rest = ok(await w.get(`/content/${c.slug}?limit=100&cursor=${first.nextCursor}`));
  assert.equal(rest.items.length, 1);
  assert.equal(rest.nextCursor, undefined);
});

test("a content write that finds its table dropped by a collection deletion answers 409, reads 404", async () => {
  const c = await collection([{ slug: "title", type: "string" }]);
  const id = ok(await w.post(`/content/${c.slug}`, { slug: "a", data: { title: "A" } }), 201).item.id;
  // As if a deletion dropped the table after this request read the collection.
  await w.db.prepare(`DROP TABLE "ec_${c.slug}"`).run();
  err(await w.post(`/content/${c.slug}`, { slug: "b", data: { title: "B" } }), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  err(await w.put(`/content/${c.slug}/${id}`, { data: { title: "B" } }), 409, "MEDIA_USAGE_CAPTURE_INACTIVE");
  err(await w.get(`/content/${c.slug}/${id}`), 404, "COLLECTION_NOT_FOUND");
  err(await w.get(`/content/${c.slug}`), 404, "COLLECTION_NOT_FOUND");
});
