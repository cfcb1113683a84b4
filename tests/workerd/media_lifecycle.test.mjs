// The media lifecycle on the real worker with Miniflare's local D1 and R2, by HTTP only: a
// permanent delete carries the safe delete's rule in the statement that deletes (an item in use,
// in the trash or not, is refused, first try or a retry after a crash); restoring from the trash
// needs an editor by every route (an author's re-upload of trashed bytes is refused); a JSON
// registration of a deleted upload's key neither serves its object nor keeps it from the sweep;
// the media list shows no usage below editor; and a key with slashes is served at its slashed
// path, its `url` keeping them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { workerOptions, migrationStatements, probeWorker, ProbeDb, ProbeBucket, Worker, png } from "./harness.mjs";
import { ok, err, uniq } from "./helpers.mjs";

/** The custom metadata every object the worker stores carries. */
const MARKER = { "emdash-media-worker": "1" };
const FILE = "http://localhost/_emdash/api/media/file";
let mf;
let w;
let bucket;
let slug;
let seed = 10;

before(async () => {
  const shared = { r2Buckets: { MEDIA_BUCKET: "media-lifecycle-test" } };
  const vars = { MEDIA_PUBLIC_URL: "" };
  const variants = {
    // Every invocation dies at its first statement (before the permanent delete's one statement).
    fault1: { MEDIA_USAGE_FAULT_AFTER_STATEMENTS: "1" },
    // The object delete after a row delete fails: the object waits for the sweep.
    crashdelete: { MEDIA_USAGE_FAULT_STORAGE_DELETE: "1" },
    nograce: { MEDIA_STORAGE_GRACE_HOURS: "0" },
  };
  mf = new Miniflare({
    workers: [
      { name: "main", ...workerOptions(vars), ...shared },
      ...Object.entries(variants).map(([name, extra]) => ({ name, ...workerOptions({ ...vars, ...extra }), ...shared })),
      probeWorker(shared),
    ],
    unsafeTriggerHandlers: true,
  });
  const db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();
  bucket = new ProbeBucket(mf);
  w = new Worker(mf, db, vars, variants);
  slug = uniq("posts");
  ok(await w.post("/schema/collections", { slug, label: "Posts", fields: [{ slug: "hero", type: "image" }] }), 201);
});

after(() => mf?.dispose());

/** Uploads distinct bytes (or `bytes`) as multipart, as `token` (the admin by default). */
async function upload({ bytes = png(4, 4, seed++), token, worker = w } = {}) {
  const form = new FormData();
  form.append("file", new Blob([bytes], { type: "image/png" }), "photo.png");
  const encoded = new Request("http://localhost/", { method: "POST", body: form });
  const rawBody = Buffer.from(await encoded.arrayBuffer());
  const headers = { "content-type": encoded.headers.get("content-type") };
  return worker.call("POST", "/media", { rawBody, headers, ...(token ? { token } : {}) });
}

const keys = async () => (await bucket.keys()).sort();
const row = async (id) => (await w.db.prepare("SELECT id, deleted_at FROM media WHERE id = ?1").bind(id).first()) ?? null;
const uses = (id) => w.post(`/content/${slug}`, { slug: uniq("e"), status: "published", data: { hero: id } });

test("a permanent delete refuses an item in use, in the trash or not, on the first try and on a retry after a crash", async () => {
  // In the trash (a safe delete, or a first try that got as far as trashing it), then used.
  const trashed = ok(await upload(), 201).item;
  ok(await w.del(`/media/${trashed.id}`));
  const entry = ok(await uses(trashed.id), 201).item;
  const e = err(await w.del(`/media/${trashed.id}?permanent=true`), 409, "MEDIA_IN_USE");
  assert.equal(e.details.count, 1);
  assert.deepEqual(e.details.entries.map((x) => x.contentId), [entry.id]);
  assert.ok((await row(trashed.id)).deleted_at, "the row is kept, in the trash");
  assert.ok((await keys()).includes(trashed.storageKey), "and its object");

  // A first try that crashes; a content write starts using the item; the client's retry.
  const item = ok(await upload(), 201).item;
  err(await w.as("fault1").del(`/media/${item.id}?permanent=true`), 500, "INTERNAL_ERROR");
  ok(await uses(item.id), 201);
  err(await w.del(`/media/${item.id}?permanent=true`), 409, "MEDIA_IN_USE");
  assert.ok(await row(item.id));
  assert.ok((await keys()).includes(item.storageKey));

  // Without the content write, the retry completes: row and object gone, then 404.
  const free = ok(await upload(), 201).item;
  ok(await w.del(`/media/${free.id}`));
  err(await w.as("fault1").del(`/media/${free.id}?permanent=true`), 500, "INTERNAL_ERROR");
  assert.deepEqual(ok(await w.del(`/media/${free.id}?permanent=true`)), { deleted: true, id: free.id });
  assert.equal(await row(free.id), null);
  assert.ok(!(await keys()).includes(free.storageKey));
  err(await w.del(`/media/${free.id}?permanent=true`), 404, "NOT_FOUND");
  // An admin's forced permanent delete takes an item in use.
  ok(await w.del(`/media/${trashed.id}?permanent=true&force=true`));
  assert.equal(await row(trashed.id), null);
  assert.ok(!(await keys()).includes(trashed.storageKey));
});

test("restoring from the trash needs an editor: an author's re-upload of trashed bytes is refused, an editor's restores", async () => {
  const author = await w.token("author", ["media:read", "media:write"]);
  const editor = await w.token("editor", ["media:read", "media:write"]);
  const bytes = png(5, 5, seed++);
  const item = ok(await upload({ bytes, token: author }), 201).item;
  ok(await w.del(`/media/${item.id}`));
  const before = await keys();
  const e = err(await upload({ bytes, token: author }), 403, "FORBIDDEN");
  assert.equal(e.message, "This file is in the media trash; restoring it needs an editor");
  assert.deepEqual(e.details, { id: item.id });
  assert.ok((await row(item.id)).deleted_at, "still in the trash");
  assert.deepEqual(await keys(), before, "nothing stored");
  err(await w.post(`/media/${item.id}/restore`, undefined, { token: author }), 403, "FORBIDDEN");
  const back = ok(await upload({ bytes, token: editor }));
  assert.equal(back.deduplicated, true);
  assert.equal(back.item.id, item.id);
  assert.equal(back.item.deletedAt, null);
  assert.equal((await row(item.id)).deleted_at, null);
  assert.deepEqual(await keys(), before);
});

test("a JSON registration of a deleted upload's key neither serves its object nor keeps it from the sweep", async () => {
  const author = await w.token("author", ["media:read", "media:write"]);
  const item = ok(await upload(), 201).item;
  // Deleted for good, its object delete failed: the object waits for the sweep, not served.
  ok(await w.as("crashdelete").del(`/media/${item.id}?permanent=true`));
  assert.ok((await keys()).includes(item.storageKey));
  assert.equal((await fetchFile(item.storageKey)).status, 404);
  // An author registers its key by JSON: still not served, by GET or HEAD ...
  const registered = ok(await w.post("/media", { filename: "mine.png", mimeType: "image/png", storageKey: item.storageKey }, { token: author }), 201).item;
  assert.equal(registered.storageKey, item.storageKey);
  const get = await fetchFile(item.storageKey);
  assert.equal(get.status, 404);
  assert.equal((await get.json()).error.code, "NOT_FOUND");
  assert.equal((await fetchFile(item.storageKey, "HEAD")).status, 404);
  // ... nor kept: the sweep (no grace) takes it although a row names its key.
  const kept = ok(await upload(), 201).item;
  await w.db.prepare("UPDATE _emdash_media_storage_sweep SET cursor = NULL, next_pass_ms = NULL").run();
  await w.as("nograce").scheduled();
  const left = await keys();
  assert.ok(!left.includes(item.storageKey), "swept");
  assert.ok(left.includes(kept.storageKey), "an uploaded row's object is kept");
  assert.equal((await fetchFile(kept.storageKey)).status, 200);
});

/** The file route by HTTP, as a browser asks for it. */
function fetchFile(path, method = "GET") {
  return mf.dispatchFetch(`${FILE}/${path}`, { method, headers: { "MF-Route-Override": "main" } });
}

test("below editor the media list shows no usage: no counts, and usage=used|unused is refused", async () => {
  const used = ok(await upload(), 201).item;
  ok(await uses(used.id), 201);
  await w.scheduled();
  for (const role of ["subscriber", "author"]) {
    const token = await w.token(role, ["media:read"]);
    const items = ok(await w.get("/media?include=usage&limit=100", { token })).items;
    assert.ok(items.length > 0);
    for (const m of items) assert.ok(!("usageCount" in m) && !("usageCountCapped" in m), `${role}: ${JSON.stringify(m)}`);
    for (const q of ["usage=used", "usage=unused", "usage=used&include=usage"]) {
      err(await w.get(`/media?${q}`, { token }), 403, "FORBIDDEN");
    }
  }
  const editor = await w.token("editor", ["media:read"]);
  const listed = ok(await w.get("/media?include=usage&usage=used&limit=100", { token: editor })).items;
  assert.equal(listed.find((m) => m.id === used.id)?.usageCount, 1);
});

test("a key with slashes is served at its slashed path, its url keeps them, and a dot segment reaches no other file", async () => {
  const stored = async (key, bytes) => {
    await bucket.put(key, bytes, { contentType: "image/png", customMetadata: MARKER });
    const id = uniq("m").replace(/_/g, "");
    await w.db
      .prepare("INSERT INTO media (id, filename, mime_type, storage_key, content_hash) VALUES (?1, 'f.png', 'image/png', ?2, ?3)")
      .bind(id, key, `hash-${id}`)
      .run();
    return id;
  };
  const bytes = png(6, 6, seed++);
  const id = await stored("2026/05/photo one.png", bytes);
  assert.equal(ok(await w.get(`/media/${id}`)).item.url, "/_emdash/api/media/file/2026/05/photo%20one.png");
  for (const path of ["2026/05/photo%20one.png", "2026%2F05%2Fphoto%20one.png", "2026%2F05/photo%20one.png"]) {
    const res = await fetchFile(path);
    assert.equal(res.status, 200, path);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes, path);
    const head = await fetchFile(path, "HEAD");
    assert.equal(head.status, 200, path);
    assert.equal(head.headers.get("content-length"), String(bytes.length));
  }
  assert.equal((await fetchFile("2026/05")).status, 404, "a prefix is another key");
  // A key with a dot segment is served only as one segment, which is what its url says; the
  // file its slashed path would resolve to is another one.
  const other = png(6, 6, seed++);
  const literal = png(6, 6, seed++);
  await stored("b.png", other);
  const dotted = await stored("a/../b.png", literal);
  assert.equal(ok(await w.get(`/media/${dotted}`)).item.url, "/_emdash/api/media/file/a%2F..%2Fb.png");
  assert.deepEqual(new Uint8Array(await (await fetchFile("a%2F..%2Fb.png")).arrayBuffer()), literal);
  assert.deepEqual(new Uint8Array(await (await fetchFile("b.png")).arrayBuffer()), other);
  // A registration of a key no URL can name is refused.
  for (const key of [".", ".."]) {
    err(await w.post("/media", { filename: "f.png", mimeType: "image/png", storageKey: key }), 400, "VALIDATION_ERROR");
  }
});
