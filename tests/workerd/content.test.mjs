// /content/{collection}/**: entries, pagination, concurrency, drafts, publish state and trash.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, err, validation, rows, uniq } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A collection with a required title and an optional number, plus `extra` fields. */
async function collection(prefix, extra = []) {
  const slug = uniq(prefix);
  ok(
    await w.post("/schema/collections", {
      slug,
      label: prefix,
      fields: [{ slug: "title", type: "string", required: true }, { slug: "views", type: "number" }, ...extra],
    }),
    201,
  );
  return slug;
}

async function create(coll, body) {
  return ok(await w.post(`/content/${coll}`, body), 201);
}

function assertItemShape(item) {
  for (const k of [
    "id",
    "slug",
    "status",
    "locale",
    "version",
    "data",
    "createdAt",
    "updatedAt",
    "publishedAt",
    "deletedAt",
    "draftRevisionId",
  ]) {
    assert.ok(k in item, `item lacks ${k}: ${JSON.stringify(item)}`);
  }
  assert.equal(typeof item.id, "string");
  assert.ok(item.id.length > 0);
  assert.equal(typeof item.slug, "string");
  assert.ok(["draft", "published", "scheduled"].includes(item.status));
  assert.equal(typeof item.locale, "string");
  assert.ok(Number.isInteger(item.version) && item.version >= 1);
  assert.equal(typeof item.data, "object");
  assert.ok(item.data !== null && !Array.isArray(item.data));
  assert.match(item.createdAt, TS);
  assert.match(item.updatedAt, TS);
  assert.ok(item.publishedAt === null || TS.test(item.publishedAt));
  assert.ok(item.deletedAt === null || TS.test(item.deletedAt));
  assert.ok(item.draftRevisionId === null || typeof item.draftRevisionId === "string");
}

test("create answers 201 with the entry's full shape and a _rev", async () => {
  const coll = await collection("cshape");
  const data = await create(coll, { slug: "hello-world", data: { title: "Hello", views: 3 } });
  const item = data.item;
  assertItemShape(item);
  assert.equal(item.slug, "hello-world");
  assert.equal(item.status, "draft");
  assert.equal(item.locale, "en");
  assert.equal(item.version, 1);
  assert.deepEqual(item.data, { title: "Hello", views: 3 });
  assert.equal(item.publishedAt, null);
  assert.equal(item.deletedAt, null);
  assert.equal(item.draftRevisionId, null);
  assert.equal(item.translationGroup, item.id);
  assert.equal(item.createdAt, item.updatedAt);
  assert.equal(typeof data._rev, "string");
  assert.ok(data._rev.length > 0);

  const pub = (await create(coll, { slug: "pub", status: "published", locale: "de-AT", translationGroup: "tg1", data: { title: "P" } })).item;
  assertItemShape(pub);
  assert.equal(pub.status, "published");
  assert.match(pub.publishedAt, TS);
  assert.equal(pub.locale, "de-AT");
  assert.equal(pub.translationGroup, "tg1");
  assert.deepEqual(pub.data, { title: "P", views: null });

  const stored = await rows(w, `SELECT slug, status, locale, version, title, views FROM ec_${coll} WHERE id = ?1`, item.id);
  assert.deepEqual(stored, [{ slug: "hello-world", status: "draft", locale: "en", version: 1, title: "Hello", views: 3 }]);
});

test("get returns the item and the same _rev; unknown ids are 404 NOT_FOUND", async () => {
  const coll = await collection("cget");
  const created = await create(coll, { slug: "a", data: { title: "A" } });
  const got = ok(await w.get(`/content/${coll}/${created.item.id}`));
  assert.deepEqual(got.item, created.item);
  assert.equal(got._rev, created._rev);
  err(await w.get(`/content/${coll}/nope`), 404, "NOT_FOUND");
  err(await w.get(`/content/${uniq("nocoll")}/x`), 404, "COLLECTION_NOT_FOUND");
  validation(await w.get(`/content/${encodeURIComponent("Bad-Slug")}/x`), "collection");
  validation(await w.get(`/content/${encodeURIComponent('posts";drop')}`), "collection");
});

test("list pages with limit=2 over 5 entries never repeat or skip", async () => {
  const coll = await collection("cpage");
  const ids = [];
  for (let i = 0; i < 5; i++) {
    ids.push((await create(coll, { slug: `e${i}`, data: { title: `E${i}` } })).item.id);
  }
  const all = ok(await w.get(`/content/${coll}`));
  assert.equal(all.items.length, 5);
  assert.equal(all.nextCursor, undefined);
  assert.deepEqual(new Set(all.items.map((i) => i.id)), new Set(ids));
  // Newest first: created_at descending, ties broken by id descending.
  for (let i = 1; i < all.items.length; i++) {
    const a = all.items[i - 1];
    const b = all.items[i];
    assert.ok(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id), "order");
  }

  const seen = [];
  const sizes = [];
  let cursor = null;
  for (let guard = 0; guard < 10; guard++) {
    const q = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
    const page = ok(await w.get(`/content/${coll}${q}`));
    sizes.push(page.items.length);
    seen.push(...page.items.map((i) => i.id));
    for (const item of page.items) assertItemShape(item);
    cursor = page.nextCursor;
    if (cursor === undefined) break;
    assert.equal(typeof cursor, "string");
  }
  assert.deepEqual(sizes, [2, 2, 1]);
  assert.deepEqual(seen, all.items.map((i) => i.id));

  const exact = ok(await w.get(`/content/${coll}?limit=5`));
  assert.equal(exact.items.length, 5);
  assert.equal(exact.nextCursor, undefined);
  const four = ok(await w.get(`/content/${coll}?limit=4`));
  assert.equal(four.items.length, 4);
  const rest = ok(await w.get(`/content/${coll}?limit=4&cursor=${encodeURIComponent(four.nextCursor)}`));
  assert.deepEqual(rest.items.map((i) => i.id), [all.items[4].id]);
  assert.equal(rest.nextCursor, undefined);
});

test("list filters by status and locale and leaves trashed entries out", async () => {
  const coll = await collection("cfilter");
  const d1 = (await create(coll, { slug: "d1", data: { title: "x" } })).item;
  const p1 = (await create(coll, { slug: "p1", status: "published", data: { title: "x" } })).item;
  const de = (await create(coll, { slug: "d1", locale: "de", data: { title: "x" } })).item;
  const trashed = (await create(coll, { slug: "t", status: "published", data: { title: "x" } })).item;
  ok(await w.del(`/content/${coll}/${trashed.id}`));

  const ids = async (q) => ok(await w.get(`/content/${coll}${q}`)).items.map((i) => i.id).sort();
  assert.deepEqual(await ids(""), [d1.id, p1.id, de.id].sort());
  assert.deepEqual(await ids("?status=published"), [p1.id]);
  assert.deepEqual(await ids("?status=draft"), [d1.id, de.id].sort());
  assert.deepEqual(await ids("?status=scheduled"), []);
  assert.deepEqual(await ids("?locale=de"), [de.id]);
  assert.deepEqual(await ids("?locale=en"), [d1.id, p1.id].sort());
  assert.deepEqual(await ids("?locale=en&status=draft"), [d1.id]);
  assert.deepEqual(await ids("?locale=fr"), []);
  validation(await w.get(`/content/${coll}?status=bogus`), "status");
  validation(await w.get(`/content/${coll}?locale=EN`), "locale");
});

test("bad cursors answer 400 INVALID_CURSOR; bad limits 400 VALIDATION_ERROR", async () => {
  const coll = await collection("ccursor");
  await create(coll, { slug: "a", data: { title: "A" } });
  const emptyObj = Buffer.from("{}").toString("base64url");
  const wrongTypes = Buffer.from(JSON.stringify({ v: 1, id: 2 })).toString("base64url");
  for (const c of ["%%%", emptyObj, wrongTypes, "not-base64!!", Buffer.from("null").toString("base64url")]) {
    err(await w.get(`/content/${coll}?cursor=${encodeURIComponent(c)}`), 400, "INVALID_CURSOR");
    err(await w.get(`/content/${coll}?limit=2&cursor=${encodeURIComponent(c)}`), 400, "INVALID_CURSOR");
  }
  for (const l of ["0", "101", "abc", "-1", "1.5", ""]) {
    const issues = validation(await w.get(`/content/${coll}?limit=${l}`), "limit");
    assert.equal(issues.length, 1);
  }
  ok(await w.get(`/content/${coll}?limit=1`));
  ok(await w.get(`/content/${coll}?limit=100`));
});

test("update with data bumps version and _rev; a stale _rev is 409 CONFLICT", async () => {
  const coll = await collection("cupdate");
  const created = await create(coll, { slug: "u", data: { title: "Old", views: 1 } });
  const id = created.item.id;

  const upd = ok(await w.put(`/content/${coll}/${id}`, { data: { title: "New" }, _rev: created._rev }));
  assertItemShape(upd.item);
  assert.equal(upd.item.version, 2);
  assert.deepEqual(upd.item.data, { title: "New", views: 1 });
  assert.notEqual(upd._rev, created._rev);
  assert.ok(upd.item.updatedAt >= created.item.updatedAt);
  assert.equal(upd.item.createdAt, created.item.createdAt);

  // The old _rev is stale now; nothing changes.
  err(await w.put(`/content/${coll}/${id}`, { data: { title: "Lost" }, _rev: created._rev }), 409, "CONFLICT");
  const cur = ok(await w.get(`/content/${coll}/${id}`));
  assert.equal(cur.item.data.title, "New");
  assert.equal(cur.item.version, 2);
  assert.equal(cur._rev, upd._rev);

  // Without _rev the write is unconditional.
  const third = ok(await w.put(`/content/${coll}/${id}`, { data: { views: 7.5 }, slug: "renamed", status: "published" }));
  assert.equal(third.item.version, 3);
  assert.equal(third.item.slug, "renamed");
  assert.equal(third.item.status, "published");
  assert.match(third.item.publishedAt, TS);
  assert.deepEqual(third.item.data, { title: "New", views: 7.5 });

  validation(await w.put(`/content/${coll}/${id}`, { _rev: "garbage!" }), "_rev");
  validation(await w.put(`/content/${coll}/${id}`, { _rev: 3 }), "_rev");
  validation(await w.put(`/content/${coll}/${id}`, { extra: 1 }), "extra");
  validation(await w.put(`/content/${coll}/${id}`, { status: "scheduled" }), "status");
  validation(await w.put(`/content/${coll}/${id}`, { data: { title: null } }), "data.title");
  err(await w.call("PUT", `/content/${coll}/${id}`, { rawBody: "{", headers: { "content-type": "application/json" } }), 400, "INVALID_JSON");
  err(await w.put(`/content/${coll}/missing`, { data: { title: "x" } }), 404, "NOT_FOUND");
  err(await w.put(`/content/${coll}/missing`, { data: { title: "x" }, _rev: upd._rev }), 404, "NOT_FOUND");
  assert.equal(ok(await w.get(`/content/${coll}/${id}`)).item.version, 3);
});

test("slugs are unique per locale: 409 CONFLICT in the same locale, fine in another", async () => {
  const coll = await collection("cslug");
  const en = (await create(coll, { slug: "same", data: { title: "EN" } })).item;
  // The 409 names the entry holding the slug: a retried create finds its own.
  const taken = err(await w.post(`/content/${coll}`, { slug: "same", data: { title: "again" } }), 409, "CONFLICT");
  assert.deepEqual(taken.details, { id: en.id, slug: "same", locale: "en" });
  err(await w.post(`/content/${coll}`, { slug: "same", locale: "en", data: { title: "again" } }), 409, "CONFLICT");
  const fr = (await create(coll, { slug: "same", locale: "fr", translationGroup: en.translationGroup, data: { title: "FR" } })).item;
  assert.equal(fr.slug, "same");
  assert.equal(fr.locale, "fr");
  assert.equal(fr.translationGroup, en.id);
  assert.equal((await rows(w, `SELECT count(*) AS n FROM ec_${coll}`))[0].n, 2);

  // Renaming into a taken slug is a conflict too; the entry is unchanged.
  const other = (await create(coll, { slug: "other", data: { title: "O" } })).item;
  err(await w.put(`/content/${coll}/${other.id}`, { slug: "same" }), 409, "CONFLICT");
  const back = ok(await w.get(`/content/${coll}/${other.id}`)).item;
  assert.equal(back.slug, "other");
  assert.equal(back.version, 1);
});

test("draft save keeps live data, publish copies the draft and clears draftRevisionId", async () => {
  const coll = await collection("cdraft");
  const created = await create(coll, { slug: "d", status: "published", data: { title: "Live", views: 1 } });
  const id = created.item.id;
  const firstPublishedAt = created.item.publishedAt;

  const d1 = ok(await w.put(`/content/${coll}/${id}`, { draft: true, data: { title: "Draft 1" }, _rev: created._rev }));
  assertItemShape(d1.item);
  assert.deepEqual(d1.item.data, { title: "Live", views: 1 });
  assert.equal(typeof d1.item.draftRevisionId, "string");
  assert.equal(d1.item.version, 2);
  assert.equal(d1.item.status, "published");
  assert.notEqual(d1._rev, created._rev);
  const rev1 = await rows(w, "SELECT collection, entry_id, data FROM revisions WHERE id = ?1", d1.item.draftRevisionId);
  assert.equal(rev1.length, 1);
  assert.equal(rev1[0].collection, coll);
  assert.equal(rev1[0].entry_id, id);
  assert.deepEqual(JSON.parse(rev1[0].data), { title: "Draft 1", views: 1 });
  const live = await rows(w, `SELECT title, views FROM ec_${coll} WHERE id = ?1`, id);
  assert.deepEqual(live, [{ title: "Live", views: 1 }]);

  // A stale _rev is refused for draft saves too.
  err(await w.put(`/content/${coll}/${id}`, { draft: true, data: { title: "x" }, _rev: created._rev }), 409, "CONFLICT");
  // A draft cannot change status, and its data is validated.
  validation(await w.put(`/content/${coll}/${id}`, { draft: true, status: "draft" }), "status");
  validation(await w.put(`/content/${coll}/${id}`, { draft: true, data: { views: "many" } }), "data.views");
  validation(await w.put(`/content/${coll}/${id}`, { draft: "yes" }), "draft");

  // A second draft overlays the first.
  const d2 = ok(await w.put(`/content/${coll}/${id}`, { draft: true, data: { views: 2 }, slug: "d-new", _rev: d1._rev }));
  assert.notEqual(d2.item.draftRevisionId, d1.item.draftRevisionId);
  assert.equal(d2.item.version, 3);
  assert.equal(d2.item.slug, "d");
  assert.deepEqual(d2.item.data, { title: "Live", views: 1 });
  const got = ok(await w.get(`/content/${coll}/${id}`));
  assert.deepEqual(got.item, d2.item);

  const pub = ok(await w.post(`/content/${coll}/${id}/publish`));
  assertItemShape(pub.item);
  assert.deepEqual(pub.item.data, { title: "Draft 1", views: 2 });
  assert.equal(pub.item.slug, "d-new");
  assert.equal(pub.item.draftRevisionId, null);
  assert.equal(pub.item.liveRevisionId, d2.item.draftRevisionId);
  assert.equal(pub.item.status, "published");
  assert.equal(pub.item.publishedAt, firstPublishedAt);
  assert.equal(pub.item.version, 4);
  assert.deepEqual(ok(await w.get(`/content/${coll}/${id}`)).item, pub.item);
  const stored = await rows(w, `SELECT title, views, slug, draft_revision_id FROM ec_${coll} WHERE id = ?1`, id);
  assert.deepEqual(stored, [{ title: "Draft 1", views: 2, slug: "d-new", draft_revision_id: null }]);
});

test("publish without a draft, unpublish, and unknown ids", async () => {
  const coll = await collection("cpub");
  const e = (await create(coll, { slug: "p", data: { title: "T" } })).item;
  assert.equal(e.publishedAt, null);
  const pub = ok(await w.post(`/content/${coll}/${e.id}/publish`)).item;
  assert.equal(pub.status, "published");
  assert.match(pub.publishedAt, TS);
  assert.equal(pub.version, 2);
  assert.deepEqual(pub.data, { title: "T", views: null });
  assert.deepEqual(ok(await w.get(`/content/${coll}?status=published`)).items.map((i) => i.id), [e.id]);

  const un = ok(await w.post(`/content/${coll}/${e.id}/unpublish`)).item;
  assert.equal(un.status, "draft");
  assert.equal(un.version, 3);
  assert.deepEqual(un.data, { title: "T", views: null });
  assert.deepEqual(ok(await w.get(`/content/${coll}?status=published`)).items, []);
  assert.equal(ok(await w.get(`/content/${coll}/${e.id}`)).item.status, "draft");

  for (const action of ["publish", "unpublish", "restore"]) {
    err(await w.post(`/content/${coll}/missing/${action}`), 404, "NOT_FOUND");
    err(await w.post(`/content/${uniq("nocoll")}/x/${action}`), 404, "COLLECTION_NOT_FOUND");
  }
  err(await w.get(`/content/${coll}/${e.id}/publish`), 405, "METHOD_NOT_ALLOWED");
});

test("trash, restore, permanent delete", async () => {
  const coll = await collection("ctrash");
  const e = (await create(coll, { slug: "t", data: { title: "T" } })).item;

  const trashed = ok(await w.del(`/content/${coll}/${e.id}`)).item;
  assert.match(trashed.deletedAt, TS);
  assert.equal(trashed.version, 2);
  assert.deepEqual(ok(await w.get(`/content/${coll}`)).items, []);
  // Trashed entries can still be read by id.
  assert.deepEqual(ok(await w.get(`/content/${coll}/${e.id}`)).item, trashed);
  // Trashing again is idempotent.
  const again = ok(await w.del(`/content/${coll}/${e.id}`)).item;
  assert.equal(again.deletedAt, trashed.deletedAt);
  assert.equal(again.version, 2);

  const restored = ok(await w.post(`/content/${coll}/${e.id}/restore`)).item;
  assert.equal(restored.deletedAt, null);
  assert.equal(restored.version, 3);
  assert.deepEqual(ok(await w.get(`/content/${coll}`)).items.map((i) => i.id), [e.id]);
  // Restoring a live entry is a no-op.
  assert.equal(ok(await w.post(`/content/${coll}/${e.id}/restore`)).item.version, 3);

  const gone = ok(await w.del(`/content/${coll}/${e.id}?permanent=true`));
  assert.deepEqual(gone, { deleted: true, id: e.id });
  err(await w.get(`/content/${coll}/${e.id}`), 404, "NOT_FOUND");
  err(await w.del(`/content/${coll}/${e.id}?permanent=true`), 404, "NOT_FOUND");
  err(await w.del(`/content/${coll}/${e.id}`), 404, "NOT_FOUND");
  err(await w.post(`/content/${coll}/${e.id}/restore`), 404, "NOT_FOUND");
  assert.equal((await rows(w, `SELECT count(*) AS n FROM ec_${coll}`))[0].n, 0);

  // The slug is free again.
  await create(coll, { slug: "t", data: { title: "T2" } });
});

test("field values are validated by type; required and unknown keys are reported", async () => {
  const coll = await collection("cvalid", [
    { slug: "flag", type: "boolean" },
    { slug: "when", type: "datetime" },
    { slug: "hero", type: "image" },
    { slug: "doc", type: "file" },
    { slug: "body", type: "portableText" },
    { slug: "rows", type: "repeater", subFields: [{ slug: "image", type: "image" }] },
    { slug: "blob", type: "json" },
  ]);
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", views: "12" } }), "data.views");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { views: 1 } }), "data.title");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: {} }), "data.title");
  validation(await w.post(`/content/${coll}`, { slug: "a" }), "data.title");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: null } }), "data.title");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", nope: 1 } }), "data.nope");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: 5 } }), "data.title");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", flag: 1 } }), "data.flag");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", when: "yesterday" } }), "data.when");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", when: "2026-13-01" } }), "data.when");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", hero: 3 } }), "data.hero");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", doc: [] } }), "data.doc");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", body: { _type: "block" } } }), "data.body");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: { title: "x", rows: [1, 2] } }), "data.rows");
  // Several problems at once are all reported.
  const issues = validation(
    await w.post(`/content/${coll}`, { slug: " a", locale: "EN", status: "scheduled", extra: 1, data: { views: "x", flag: "y" } }),
    "slug",
    "locale",
    "status",
    "extra",
    "data.views",
    "data.flag",
    "data.title",
  );
  assert.ok(issues.length >= 7);
  // A slug may be left out (one is made from the title), but not be something else.
  validation(await w.post(`/content/${coll}`, { slug: 5, data: { title: "x" } }), "slug");
  validation(await w.post(`/content/${coll}`, { slug: "a\nb", data: { title: "x" } }), "slug");
  validation(await w.post(`/content/${coll}`, { slug: "x".repeat(201), data: { title: "x" } }), "slug");
  validation(await w.post(`/content/${coll}`, { slug: "a", data: "nope" }), "data");
  err(await w.call("POST", `/content/${coll}`, { rawBody: "nope", headers: { "content-type": "application/json" } }), 400, "INVALID_JSON");
  err(await w.post(`/content/${uniq("nocoll")}`, { slug: "a", data: {} }), 404, "COLLECTION_NOT_FOUND");
  assert.equal((await rows(w, `SELECT count(*) AS n FROM ec_${coll}`))[0].n, 0);
  // 200 characters (not bytes) are allowed.
  const long = (await create(coll, { slug: "é".repeat(200), data: { title: "x" } })).item;
  assert.equal(long.slug, "é".repeat(200));
});

test("every field type round-trips", async () => {
  const coll = await collection("ctypes", [
    { slug: "s", type: "string" },
    { slug: "t", type: "text" },
    { slug: "flag", type: "boolean" },
    { slug: "off", type: "boolean" },
    { slug: "when", type: "datetime" },
    { slug: "day", type: "datetime" },
    { slug: "hero", type: "image" },
    { slug: "hero_obj", type: "image" },
    { slug: "doc", type: "file" },
    { slug: "doc_obj", type: "file" },
    { slug: "body", type: "portableText" },
    { slug: "rows", type: "repeater", subFields: [{ slug: "image", type: "image" }, { slug: "caption", type: "string" }] },
    { slug: "blob", type: "json" },
    { slug: "blob_str", type: "json" },
    { slug: "blob_arr", type: "json" },
    { slug: "blob_num", type: "json" },
  ]);
  const data = {
    title: "Ünïcødé \"quoted\" 'single' 🎉",
    views: 3.25,
    s: "007",
    t: "line 1\nline 2\ttabbed",
    flag: true,
    off: false,
    when: "2026-03-04T05:06:07.123+02:00",
    day: "2026-02-28",
    hero: "01HMEDIAID",
    hero_obj: { id: "m1", provider: "local", alt: "A cat", meta: { width: 800, height: 600 } },
    doc: "doc-legacy-id",
    doc_obj: { id: "f1", provider: "s3", src: "https://cdn.example/f1.pdf" },
    body: [
      { _type: "block", _key: "a", children: [{ _type: "span", text: "Hi", marks: ["strong"] }], markDefs: [] },
      { _type: "image", _key: "b", asset: { _ref: "m2" } },
    ],
    rows: [
      { image: { id: "m3" }, caption: "first" },
      { image: "m4", caption: "second" },
    ],
    blob: { a: [1, "x", null, true, { b: -2.5 }], nested: { deep: "yes" } },
    blob_str: "{not really json}",
    blob_arr: [1, 2, 3],
    blob_num: 42,
  };
  const created = await create(coll, { slug: "all", data });
  assert.deepEqual(created.item.data, data);
  assert.deepEqual(ok(await w.get(`/content/${coll}/${created.item.id}`)).item.data, data);
  assert.deepEqual(ok(await w.get(`/content/${coll}`)).items[0].data, data);

  // Storage follows DESIGN §8: booleans 0/1, numbers REAL, JSON-bearing fields as JSON text.
  const [row] = await rows(
    w,
    `SELECT typeof(views) AS tv, flag, off, typeof(flag) AS tf, hero, hero_obj, body, typeof(body) AS tb, blob_num FROM ec_${coll} WHERE id = ?1`,
    created.item.id,
  );
  assert.equal(row.tv, "real");
  assert.equal(row.flag, 1);
  assert.equal(row.off, 0);
  assert.equal(row.tf, "integer");
  assert.equal(row.hero, "01HMEDIAID");
  assert.deepEqual(JSON.parse(row.hero_obj), data.hero_obj);
  assert.equal(row.tb, "text");
  assert.deepEqual(JSON.parse(row.body), data.body);
  assert.equal(row.blob_num, "42");

  // Whole numbers, negatives and nulls round-trip too; null clears a field.
  const upd = ok(
    await w.put(`/content/${coll}/${created.item.id}`, {
      data: { views: 42, s: null, flag: false, hero_obj: null, rows: [], blob: null },
    }),
  ).item;
  assert.deepEqual(upd.data, { ...data, views: 42, s: null, flag: false, hero_obj: null, rows: [], blob: null });
  const neg = ok(await w.put(`/content/${coll}/${created.item.id}`, { data: { views: -1e-3 } })).item;
  assert.equal(neg.data.views, -0.001);
  assert.deepEqual(ok(await w.get(`/content/${coll}/${created.item.id}`)).item, neg);
});
