// EmDash's media API on the real worker with Miniflare's local D1 and R2, driven by EmDash's own
// client (`EmDashClient` from the `emdash` package, unchanged) where it has a method, and checked
// with EmDash's own zod schemas (`emdash/api/schemas`): the media list's `mimeType` (comma lists,
// `type/*`), `q` and `includeUsage=1` (each item's usage summary by the item route's rules: no
// count below editor or while coverage is incomplete); the media item JSON as EmDash's
// `mediaItemSchema`, `mediaReadItemSchema` and `mediaListReadItemSchema` parse it; media authors
// (`authorId`) and ownership: `PUT /media/{id}` (alt, caption, width, height; strict) and the safe
// delete take only the caller's own media below editor; the update after a crash at each of its
// statements; openapi.json's patterns for `mimeType` and `q` say what the worker accepts.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Miniflare } from "miniflare";
import { EmDashClient } from "emdash/client";
import {
  mediaItemSchema,
  mediaListReadResponseSchema,
  mediaReadItemSchema,
  mediaResponseSchema,
  mediaUsageSummarySchema,
} from "emdash/api/schemas";
import { workerOptions, migrationStatements, probeWorker, ProbeDb, Worker, ADMIN_TOKEN, png } from "./harness.mjs";
import { ok, err, validation, rows, uniq } from "./helpers.mjs";

let mf;
let url;
let w;
let seed = 40;
let slug;
/** Media of this test file, by name. */
const m = {};
/** Tokens: `{id, token}` by name. */
const t = {};

const FAULTS = [1, 2, 3, 4];

before(async () => {
  const shared = { r2Buckets: { MEDIA_BUCKET: "media-api-test" } };
  const vars = { MEDIA_PUBLIC_URL: "" };
  const variants = Object.fromEntries(FAULTS.map((k) => [`fault${k}`, { MEDIA_USAGE_FAULT_AFTER_STATEMENTS: String(k) }]));
  mf = new Miniflare({
    port: 0,
    host: "127.0.0.1",
    workers: [
      { name: "main", ...workerOptions(vars), ...shared },
      ...Object.entries(variants).map(([name, extra]) => ({ name, ...workerOptions({ ...vars, ...extra }), ...shared })),
      probeWorker(shared),
    ],
    unsafeTriggerHandlers: true,
  });
  url = (await mf.ready).origin;
  const db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();
  w = new Worker(mf, db, vars, variants);
  slug = uniq("posts");
  ok(await w.post("/schema/collections", { slug, label: "Posts", fields: [{ slug: "hero", type: "image" }, { slug: "doc", type: "file" }] }), 201);
  for (const [name, role] of [["a", "author"], ["b", "author"], ["editor", "editor"], ["subscriber", "subscriber"]]) {
    const d = ok(await w.post("/admin/tokens", { name, role, scopes: role === "subscriber" ? ["media:read"] : ["media:read", "media:write"] }), 201);
    t[name] = d;
  }
  for (const [name, mimeType] of [
    ["report.pdf", "application/pdf"],
    ["manual.pdf", "application/pdf"],
    ["Cat photo.png", "image/png"],
    ["dog.jpg", "image/jpeg"],
    ["clip.mp4", "video/mp4"],
    ["notes.txt", "text/plain"],
  ]) {
    m[name] = ok(await w.post("/media", { filename: name, mimeType, storageKey: `${uniq("k")}/${name}` }), 201).item;
  }
  // A published entry uses the report and the photo; a draft the manual; a trashed entry the dog.
  const entry = async (s, status, data) => ok(await w.post(`/content/${slug}`, { slug: s, status, data }), 201).item;
  await entry("live", "published", { hero: m["Cat photo.png"].id, doc: m["report.pdf"].id });
  await entry("draft", "draft", { doc: m["manual.pdf"].id });
  const gone = await entry("gone", "draft", { hero: m["dog.jpg"].id });
  ok(await w.del(`/content/${slug}/${gone.id}`));
  await settle();
});

after(() => mf?.dispose());

const client = (token = ADMIN_TOKEN) => new EmDashClient({ baseUrl: url, token });

/** Runs ticks until no work is due and coverage is complete. */
async function settle() {
  for (let i = 0; i < 10; i++) {
    const due = await rows(w, "SELECT 1 FROM _emdash_media_usage_work WHERE state <> 'failed' LIMIT 1");
    if (due.length === 0) break;
    await w.scheduled();
  }
  assert.equal(ok(await w.get("/admin/media-usage/status")).status, "complete");
}

/** Every item `mediaList(options)` gives, following the cursors. */
async function listAll(c, options) {
  const items = [];
  let cursor;
  for (let i = 0; i < 50; i++) {
    const page = await c.mediaList({ limit: 100, ...options, cursor });
    const parsed = mediaListReadResponseSchema.safeParse(page);
    assert.ok(parsed.success, `${JSON.stringify(options)}: ${JSON.stringify(parsed.error?.issues)}`);
    items.push(...page.items);
    if (!page.nextCursor) return items;
    cursor = page.nextCursor;
  }
  throw new Error("the cursors do not end");
}

const names = (items) => items.map((i) => i.filename).sort();

/** Upload distinct PNG bytes as `token`. */
async function upload(token) {
  const form = new FormData();
  form.append("file", new Blob([png(3, 2, seed++)], { type: "image/png" }), "photo.png");
  const encoded = new Request("http://localhost/", { method: "POST", body: form });
  const rawBody = Buffer.from(await encoded.arrayBuffer());
  return w.call("POST", "/media", { rawBody, headers: { "content-type": encoded.headers.get("content-type") }, token });
}

test("EmDash's client lists only the PDFs with includeUsage, each with the item route's usage summary", async () => {
  const c = client();
  const pdfs = await listAll(c, { mimeType: "application/pdf", includeUsage: true });
  assert.deepEqual(names(pdfs), ["manual.pdf", "report.pdf"]);
  for (const item of pdfs) {
    assert.equal(item.mimeType, "application/pdf");
    assert.ok(mediaUsageSummarySchema.safeParse(item.usage).success, JSON.stringify(item.usage));
    assert.deepEqual(item.usage, (await c.mediaGet(item.id, { includeUsage: true })).usage);
    assert.deepEqual(item.usage.coverage, { scope: "all_content_collections", status: "complete" });
  }
  const count = (items, name) => items.find((i) => i.filename === name).usage.count;
  assert.equal(count(pdfs, "report.pdf"), 1);
  assert.equal(count(pdfs, "manual.pdf"), 1, "a draft's media count for an admin");
  // Every item of the library: the trashed entry's media counts no use.
  const all = await listAll(c, { includeUsage: true });
  assert.equal(all.length, 6);
  assert.equal(count(all, "dog.jpg"), 0);
  assert.equal(count(all, "notes.txt"), 0);
  // Without includeUsage: no usage.
  for (const item of await listAll(c, { mimeType: "application/pdf" })) assert.equal(item.usage, undefined);
});

test("the list's usageCount and the item route's count agree: a live use, a draft-only use, an entry in the trash", async () => {
  const items = ok(await w.get("/media?include=usage&includeUsage=1&limit=100")).items;
  assert.equal(items.length, 6);
  const counts = {};
  for (const item of items) {
    const own = ok(await w.get(`/media/${item.id}?includeUsage=1`)).item.usage.count;
    assert.deepEqual([item.usageCount, item.usage.count], [own, own], item.filename);
    counts[item.filename] = own;
  }
  assert.deepEqual(counts, { "report.pdf": 1, "manual.pdf": 1, "Cat photo.png": 1, "dog.jpg": 0, "clip.mp4": 0, "notes.txt": 0 });
  // The entry in the trash counts no use, yet still blocks the delete: the item is listed as used.
  const used = ok(await w.get("/media?usage=used&include=usage&limit=100")).items;
  assert.deepEqual(names(used), ["Cat photo.png", "dog.jpg", "manual.pdf", "report.pdf"]);
  assert.equal(used.find((i) => i.filename === "dog.jpg").usageCount, 0);
});

test("mimeType takes type/* and comma lists; q is a trimmed case-insensitive part of the file name", async () => {
  const c = client();
  assert.deepEqual(names(await listAll(c, { mimeType: "image/*" })), ["Cat photo.png", "dog.jpg"]);
  assert.deepEqual(names(await listAll(c, { mimeType: "image/png,application/pdf" })), ["Cat photo.png", "manual.pdf", "report.pdf"]);
  assert.deepEqual(names(await listAll(c, { mimeType: "video/*, text/plain" })), ["clip.mp4", "notes.txt"]);
  assert.deepEqual(names(await listAll(c, { mimeType: "IMAGE/JPEG" })), ["dog.jpg"]);
  // `q` (EmDash's client does not send it: by hand).
  const q = async (query) => names(ok(await w.get(`/media?limit=100&${query}`)).items);
  assert.deepEqual(await q("q=CAT"), ["Cat photo.png"]);
  assert.deepEqual(await q(`q=${encodeURIComponent("  .PDF ")}`), ["manual.pdf", "report.pdf"]);
  assert.deepEqual(await q("q=o&mimeType=image/*"), ["Cat photo.png", "dog.jpg"]);
  assert.deepEqual(await q("q=o&search=.jpg"), ["dog.jpg"]);
  assert.deepEqual(await q("search=report"), ["report.pdf"]);
  validation(await w.get(`/media?q=${"x".repeat(201)}`), "q");
  validation(await w.get(`/media?q=${encodeURIComponent("   ")}`), "q");
  validation(await w.get("/media?mimeType=pdf"), "mimeType");
  validation(await w.get(`/media?mimeType=${encodeURIComponent("image/png image/jpeg")}`), "mimeType");
  const e = await client().mediaList({ mimeType: "*/*" }).then(() => null, (x) => x);
  assert.equal(e?.status, 400, "EmDash's client sees the 400");
});

test("below editor the summary has no count; while coverage is incomplete no one gets one", async () => {
  for (const who of ["a", "subscriber"]) {
    const items = await listAll(client(t[who].token), { includeUsage: true });
    assert.equal(items.length, 6, who);
    for (const item of items) {
      assert.deepEqual(item.usage, { count: null, coverage: { scope: "all_content_collections", status: "complete" } }, who);
      assert.deepEqual(item.usage, (await client(t[who].token).mediaGet(item.id, { includeUsage: true })).usage);
    }
  }
  const editorItems = await listAll(client(t.editor.token), { mimeType: "application/pdf", includeUsage: true });
  assert.deepEqual(editorItems.map((i) => i.usage.count), [1, 1]);
  // A write behind the API: work is due, coverage is not complete until a tick runs it.
  await w.db.prepare(`UPDATE ec_${slug} SET hero = NULL WHERE slug = 'live'`).run();
  const items = await listAll(client(), { includeUsage: true });
  for (const item of items) {
    assert.equal(item.usage.count, null);
    assert.notEqual(item.usage.coverage.status, "complete");
  }
  await settle();
  const photo = (await listAll(client(), { mimeType: "image/png", includeUsage: true }))[0];
  assert.equal(photo.usage.count, 0, "the entry no longer uses it");
});

test("media item JSON parses with EmDash's media schemas: registration, upload, item, list, update", async () => {
  const registered = ok(await w.post("/media", { filename: "s.png", mimeType: "image/png", storageKey: uniq("shape") }, { token: t.a.token }), 201).item;
  const check = (schema, value, what) => {
    const parsed = schema.safeParse(value);
    assert.ok(parsed.success, `${what}: ${JSON.stringify(parsed.error?.issues)} in ${JSON.stringify(value)}`);
    return parsed.data;
  };
  const item = check(mediaItemSchema, registered, "registration");
  assert.deepEqual([item.authorId, item.contentHash, item.blurhash, item.dominantColor, item.status], [t.a.id, null, null, null, "ready"]);
  const uploaded = await client(t.a.token).mediaUpload(png(5, 4, seed++), "up.png");
  assert.equal(check(mediaItemSchema, uploaded, "upload").authorId, t.a.id);
  assert.match(uploaded.contentHash, /^[0-9a-f]{64}$/);
  check(mediaReadItemSchema, await client().mediaGet(uploaded.id), "get");
  check(mediaReadItemSchema, await client().mediaGet(uploaded.id, { includeUsage: true }), "get with usage");
  const page = await client().mediaList({ includeUsage: true, limit: 100 });
  check(mediaListReadResponseSchema, page, "list");
  assert.equal(page.nextCursor, undefined, "the last page has no cursor (EmDash's list leaves it out)");
  const put = ok(await w.put(`/media/${uploaded.id}`, { alt: "x" }, { token: t.a.token }));
  check(mediaResponseSchema, put, "update");
  const admins = ok(await w.post("/media", { filename: "b.png", mimeType: "image/png", storageKey: uniq("shape") }), 201).item;
  assert.equal(check(mediaItemSchema, admins, "the admin's registration").authorId, "bootstrap");
});

test("PUT /media/{id} updates alt, caption, width and height, strictly", async () => {
  const id = m["notes.txt"].id;
  const item = ok(await w.put(`/media/${id}`, { alt: "Notes", caption: "Meeting notes", width: 10, height: 20 })).item;
  assert.deepEqual([item.alt, item.caption, item.width, item.height], ["Notes", "Meeting notes", 10, 20]);
  assert.deepEqual(ok(await w.get(`/media/${id}`)).item, item);
  assert.equal(ok(await w.put(`/media/${id}`, { caption: "" })).item.caption, "", "an empty string clears");
  assert.equal(ok(await w.put(`/media/${id}`, {})).item.alt, "Notes", "an empty object changes nothing");
  const before = await rows(w, "SELECT * FROM media WHERE id = ?1", id);
  validation(await w.put(`/media/${id}`, { alt: null }), "alt");
  validation(await w.put(`/media/${id}`, { width: 0, height: 1.5 }), "width", "height");
  validation(await w.put(`/media/${id}`, { width: 1_000_001 }), "width");
  validation(await w.put(`/media/${id}`, { caption: "x".repeat(1001) }), "caption");
  validation(await w.put(`/media/${id}`, { filename: "x", authorId: "me" }), "filename", "authorId");
  validation(await w.put(`/media/${id}`, ["alt"]), "");
  err(await w.call("PUT", `/media/${id}`, { rawBody: "{oops", headers: { "content-type": "application/json" } }), 400, "INVALID_JSON");
  assert.deepEqual(await rows(w, "SELECT * FROM media WHERE id = ?1", id), before, "nothing changed");
  err(await w.put("/media/does-not-exist", { alt: "x" }), 404, "NOT_FOUND");
});

test("an author updates and deletes only its own media; an item without an author is nobody's", async () => {
  const a = t.a.token;
  const bUpload = ok(await upload(t.b.token), 201).item;
  const bRegistered = ok(await w.post("/media", { filename: "b.pdf", mimeType: "application/pdf", storageKey: uniq("b") }, { token: t.b.token }), 201).item;
  assert.equal(bUpload.authorId, t.b.id);
  const legacy = uniq("legacy");
  await w.db.prepare("INSERT INTO media (id, filename, mime_type, storage_key) VALUES (?1, 'old.png', 'image/png', ?1)").bind(legacy).run();
  for (const id of [bUpload.id, bRegistered.id, legacy]) {
    const before = await rows(w, "SELECT * FROM media WHERE id = ?1", id);
    err(await w.put(`/media/${id}`, { alt: "mine" }, { token: a }), 403, "FORBIDDEN");
    err(await w.del(`/media/${id}`, { token: a }), 403, "FORBIDDEN");
    const e = await client(a).mediaDelete(id).then(() => null, (x) => x);
    assert.equal(e?.status, 403, "EmDash's client's delete too");
    assert.deepEqual(await rows(w, "SELECT * FROM media WHERE id = ?1", id), before, `${id}: unchanged`);
  }
  // Its own: updated, then deleted through EmDash's client (moved to the trash).
  const mine = ok(await upload(a), 201).item;
  assert.equal(ok(await w.put(`/media/${mine.id}`, { alt: "Mine", width: 3 }, { token: a })).item.alt, "Mine");
  await client(a).mediaDelete(mine.id);
  assert.ok(ok(await w.get(`/media/${mine.id}`)).item.deletedAt, "in the trash");
  err(await w.post(`/media/${mine.id}/restore`, undefined, { token: a }), 403, "FORBIDDEN");
  // An editor changes anyone's, the unknown author's too.
  assert.equal(ok(await w.put(`/media/${legacy}`, { alt: "edited" }, { token: t.editor.token })).item.alt, "edited");
  assert.equal(ok(await w.del(`/media/${bUpload.id}`, { token: t.editor.token })).deleted, true);
  // The author cannot be written: the database refuses it.
  await assert.rejects(w.db.prepare("UPDATE media SET author_id = 'x' WHERE id = ?1").bind(mine.id).run(), /author_id is written once/);
});

test("a crash at any statement of an update, then the client's retry, ends with the update", async () => {
  const a = t.a.token;
  const body = { alt: "After", caption: "crash", width: 7, height: 8 };
  let crashed = 0;
  for (const k of FAULTS) {
    const item = ok(await w.post("/media", { filename: "c.png", mimeType: "image/png", storageKey: uniq("crash") }, { token: t.a.token }), 201).item;
    const first = await w.as(`fault${k}`).put(`/media/${item.id}`, body, { token: a });
    if (first.status === 500) {
      crashed += 1;
      err(first, 500, "INTERNAL_ERROR");
      // The update is one statement: a crash before it wrote nothing, one after it (the read of
      // the item's versions for the answer) left it whole.
      const [row] = await rows(w, "SELECT alt, caption, width, height FROM media WHERE id = ?1", item.id);
      const seen = [row.alt, row.caption, row.width, row.height];
      assert.ok(
        JSON.stringify(seen) === JSON.stringify([null, null, null, null]) || JSON.stringify(seen) === JSON.stringify(["After", "crash", 7, 8]),
        `fault at ${k}: a crashed update is whole or absent: ${JSON.stringify(seen)}`,
      );
    } else {
      ok(first);
    }
    const retry = ok(await w.put(`/media/${item.id}`, body, { token: a })).item;
    assert.deepEqual([retry.alt, retry.caption, retry.width, retry.height], ["After", "crash", 7, 8], `fault at ${k}`);
    // Someone else's: crashed or not, nothing changes.
    const r = await w.as(`fault${k}`).put(`/media/${item.id}`, { alt: "theirs" }, { token: t.b.token });
    assert.ok(r.status === 500 || r.status === 403, r.text);
    assert.equal((await rows(w, "SELECT alt FROM media WHERE id = ?1", item.id))[0].alt, "After");
  }
  assert.ok(crashed >= 2, `the faults reached the update's statements (${crashed})`);
});

test("openapi.json's mimeType and q patterns say what the worker accepts", async () => {
  const doc = JSON.parse(readFileSync(new URL("../../openapi.json", import.meta.url), "utf8"));
  const params = doc.paths["/_emdash/api/media"].get.parameters;
  const schema = (name) => params.find((p) => p.name === name).schema;
  const accepts = (s, value) =>
    typeof value === "string" && value.length >= s.minLength && [...value].length <= s.maxLength && new RegExp(s.pattern, "u").test(value);
  const samples = {
    mimeType: [
      "application/pdf", "image/*", "image/", "IMAGE/PNG", "image/png,application/pdf", " image/png , ,", ",image/png",
      "image/png; charset=x", "image/png;", "image/*;q=1", "a/b,c/d,e/*", Array(20).fill("image/png").join(","),
      Array(21).fill("image/png").join(","), "", ",", " ", "image", "png", "*/*", "image/*x", "image//", "/png",
      "image/png image/jpeg", "image/p ng", "imäge/png", "image/png\n", "image;x/png", "image/png;a,b", "\tvideo/mp4\t",
    ],
    q: ["cat", " cat ", "x".repeat(200), "x".repeat(201), "", " ", " \t\n\r", "\u3000", "\uFEFF", " a ", "%_"],
  };
  for (const [name, values] of Object.entries(samples)) {
    for (const value of values) {
      const res = await w.get(`/media?limit=1&${name}=${encodeURIComponent(value)}`);
      assert.ok(res.status === 200 || res.status === 400, res.text);
      assert.equal(res.status === 200, accepts(schema(name), value), `${name}=${JSON.stringify(value)}: ${res.text}`);
    }
  }
});
