// Replacing an item's file on the real worker with Miniflare's local D1 and R2, by HTTP only:
// POST /media/{id}/replace (multipart, as an upload) gives the item a new key and makes its old
// file a version, served as before; usage shows which entries link the old key by URL, and a safe
// delete is still refused; identical bytes, another item's bytes, a wrong type, an unknown item,
// an item in the trash and another author's item get their documented answers; a relink moves the
// links to the new key (the version no longer linked); a revert makes the old file current again.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { workerOptions, migrationStatements, probeWorker, ProbeDb, ProbeBucket, Worker, png } from "./harness.mjs";
import { ok, err, validation, uniq, settle } from "./helpers.mjs";

let mf;
let w;
let bucket;
let slug;

before(async () => {
  const shared = { r2Buckets: { MEDIA_BUCKET: "media-replace-test" } };
  const vars = { MEDIA_PUBLIC_URL: "", SITE_URL: "https://site.example" };
  mf = new Miniflare({ workers: [{ name: "main", ...workerOptions(vars), ...shared }, probeWorker(shared)], unsafeTriggerHandlers: true });
  const db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();
  w = new Worker(mf, db, vars);
  bucket = new ProbeBucket(mf);
  slug = uniq("posts");
  const fields = [
    { slug: "title", type: "string" },
    { slug: "hero", type: "image" },
    { slug: "link", type: "string" },
  ];
  ok(await w.post("/schema/collections", { slug, label: "Posts", fields }), 201);
});

after(() => mf?.dispose());

const IMMUTABLE = "public, max-age=31536000, immutable";
const fileUrl = (key) => `/_emdash/api/media/file/${key}`;

/** A multipart form of `parts` ([name, value, filename?]), encoded: `{rawBody, headers}`. */
async function multipart(parts) {
  const f = new FormData();
  for (const [name, value, filename] of parts) filename ? f.append(name, value, filename) : f.append(name, value);
  const encoded = new Request("http://localhost/", { method: "POST", body: f });
  return { rawBody: Buffer.from(await encoded.arrayBuffer()), headers: { "content-type": encoded.headers.get("content-type") } };
}

const pngPart = (bytes, name = "photo.png") => ["file", new Blob([bytes], { type: "image/png" }), name];

async function upload(bytes, { token, alt, caption } = {}) {
  const parts = [pngPart(bytes)];
  if (alt) parts.push(["alt", alt]);
  if (caption) parts.push(["caption", caption]);
  return ok(await w.call("POST", "/media", { token, ...(await multipart(parts)) }), 201).item;
}

async function replace(id, parts, opts = {}) {
  return w.call("POST", `/media/${id}/replace`, { ...opts, ...(await multipart(parts)) });
}

/** The file route's answer for `key`: status, headers and bytes. */
async function served(key) {
  const res = await mf.dispatchFetch(`http://localhost${fileUrl(key)}`, { headers: { "MF-Route-Override": "main" } });
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

const usage = async (id) => ok(await w.get(`/media/${id}/usage`));
const entryOf = (u, contentId) => u.items.find((i) => i.contentId === contentId);

async function tickUntilRelinked(id, max = 60) {
  for (let i = 1; i <= max; i++) {
    assert.equal((await w.scheduled()).outcome, "ok");
    const r = ok(await w.get(`/media/${id}/relink`)).item;
    if (r.state === "done") return r;
  }
  throw new Error("the relink does not finish");
}

test("a replaced file stays served and used by URL until a relink; a revert brings it back", async () => {
  const first = png(12, 8, 1);
  const second = png(40, 30, 2);
  const item = await upload(first, { alt: "A photo", caption: "Taken today" });
  const oldKey = item.storageKey;
  assert.deepEqual([item.width, item.height], [12, 8]);
  const byId = ok(await w.post(`/content/${slug}`, { slug: uniq("id"), status: "published", data: { title: "By id", hero: { id: item.id } } }), 201).item.id;
  const byUrl = ok(await w.post(`/content/${slug}`, { slug: uniq("url"), status: "published", data: { title: "By URL", link: fileUrl(oldKey) } }), 201).item.id;
  await settle(w);
  const indexed = await usage(item.id);
  assert.equal(indexed.coverage.status, "complete");
  assert.deepEqual(indexed.items.map((i) => i.contentId).sort(), [byId, byUrl].sort());

  // The replace: a new key and the new file's dimensions; the id, alt and caption stay.
  const replaced = ok(await replace(item.id, [pngPart(second, "second.png")])).item;
  assert.equal(replaced.id, item.id);
  assert.notEqual(replaced.storageKey, oldKey);
  assert.match(replaced.storageKey, /^[0-9a-f]{32}\.png$/);
  assert.equal(replaced.url, fileUrl(replaced.storageKey));
  assert.deepEqual([replaced.width, replaced.height], [40, 30]);
  assert.equal(replaced.alt, "A photo");
  assert.equal(replaced.caption, "Taken today");
  assert.equal(replaced.filename, item.filename, "no filename part: the name is kept");
  assert.equal(replaced.createdAt, item.createdAt);
  const newKey = replaced.storageKey;
  const got = ok(await w.get(`/media/${item.id}`)).item;
  assert.deepEqual(got, replaced, "the answer is the item as GET shows it");
  assert.equal(got.versions.length, 1);
  assert.equal(got.versions[0].storageKey, oldKey);
  assert.equal(got.versions[0].url, fileUrl(oldKey));
  assert.deepEqual([got.versions[0].width, got.versions[0].height], [12, 8]);
  assert.equal(got.versions[0].linked, 1, "the URL entry links the old key");

  // Both keys are served, each with its own bytes, cacheable for a year.
  for (const [key, bytes] of [[oldKey, first], [newKey, second]]) {
    const f = await served(key);
    assert.equal(f.status, 200, key);
    assert.equal(f.headers.get("cache-control"), IMMUTABLE, key);
    assert.deepEqual(f.bytes, new Uint8Array(bytes), key);
    assert.deepEqual((await bucket.get(key)).bytes, new Uint8Array(bytes), key);
  }

  // Usage: the URL entry links the old key, the id entry no earlier key.
  const u = await usage(item.id);
  assert.deepEqual(entryOf(u, byUrl).versions, [oldKey]);
  assert.deepEqual(entryOf(u, byUrl).occurrences.map((o) => o.linkedKey), [oldKey]);
  assert.deepEqual(entryOf(u, byId).versions, []);
  assert.deepEqual(entryOf(u, byId).occurrences.map((o) => o.linkedKey), [null]);
  err(await w.del(`/media/${item.id}`), 409, "MEDIA_IN_USE");

  // The same bytes again: unchanged, no new version, nothing stored.
  const objects = (await bucket.keys()).sort();
  const again = ok(await replace(item.id, [pngPart(second, "again.png")])).item;
  assert.equal(again.storageKey, newKey);
  assert.equal(again.versions.length, 1);
  assert.deepEqual((await bucket.keys()).sort(), objects);

  // The relink moves the URL entry to the new key; once re-indexed, the version is no longer linked.
  ok(await w.post(`/media/${item.id}/relink`, {}), 202);
  const relink = await tickUntilRelinked(item.id);
  assert.equal(relink.entriesChanged, 1);
  const entry = ok(await w.get(`/content/${slug}/${byUrl}`)).item;
  assert.equal(entry.data.link, fileUrl(newKey));
  assert.equal(entry.data.title, "By URL");
  await settle(w);
  const after = await usage(item.id);
  assert.deepEqual(entryOf(after, byUrl).versions, []);
  assert.deepEqual(entryOf(after, byUrl).occurrences.map((o) => o.linkedKey), [newKey]);
  assert.equal(ok(await w.get(`/media/${item.id}`)).item.versions[0].linked, 0);

  // The revert: the old file is current again, the replaced one a version.
  const reverted = ok(await w.post(`/media/${item.id}/revert`, { version: oldKey })).item;
  assert.equal(reverted.storageKey, oldKey);
  assert.equal(reverted.url, fileUrl(oldKey));
  assert.deepEqual([reverted.width, reverted.height], [12, 8]);
  assert.deepEqual(reverted.versions.map((v) => v.storageKey), [newKey]);
  assert.deepEqual(ok(await w.get(`/media/${item.id}`)).item, reverted);
  for (const [key, bytes] of [[oldKey, first], [newKey, second]]) {
    const f = await served(key);
    assert.equal(f.status, 200, key);
    assert.deepEqual(f.bytes, new Uint8Array(bytes), key);
  }
  err(await w.post(`/media/${item.id}/revert`, { version: "no-such-key.png" }), 404, "NOT_FOUND");
  validation(await w.post(`/media/${item.id}/revert`, { version: newKey, force: true }), "force");
  const same = ok(await w.post(`/media/${item.id}/revert`, { version: oldKey })).item;
  assert.deepEqual(same, reverted, "reverting to the current key changes nothing");
});

test("refused replaces say why and change nothing", async () => {
  // Whatever an earlier test left queued is indexed: the trash below takes only a provably unused item.
  await settle(w);
  const item = await upload(png(9, 9, 20));
  const other = await upload(png(9, 9, 21));
  const objects = (await bucket.keys()).sort();
  const conflict = err(await replace(item.id, [pngPart(png(9, 9, 21))]), 409, "CONFLICT");
  assert.equal(conflict.details.id, other.id);
  err(await replace(item.id, [["file", new Blob(["just some text"], { type: "image/png" }), "notes.png"]]), 400, "INVALID_TYPE");
  err(await replace("no-such-item", [pngPart(png(9, 9, 22))]), 404, "NOT_FOUND");
  assert.deepEqual((await bucket.keys()).sort(), objects, "nothing stored");
  const unchanged = ok(await w.get(`/media/${item.id}`)).item;
  assert.equal(unchanged.storageKey, item.storageKey);
  assert.deepEqual(unchanged.versions, []);

  // In the trash: restore it first.
  const trashed = await upload(png(9, 9, 23));
  ok(await w.del(`/media/${trashed.id}`));
  err(await replace(trashed.id, [pngPart(png(9, 9, 24))]), 409, "CONFLICT");

  // An author may not replace an editor's item.
  const editor = await w.token("editor", ["media:read", "media:write"]);
  const author = await w.token("author", ["media:read", "media:write"]);
  const editors = await upload(png(9, 9, 25), { token: editor });
  err(await replace(editors.id, [pngPart(png(9, 9, 26))], { token: author }), 403, "FORBIDDEN");
  err(await w.post(`/media/${editors.id}/revert`, { version: editors.storageKey }, { token: author }), 403, "FORBIDDEN");
  assert.equal(ok(await w.get(`/media/${editors.id}`)).item.storageKey, editors.storageKey);
});
