// /schema/collections/**: the content model through the real wasm worker and D1.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, err, validation, rows, schemaObjectExists, uniq } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

const MiB = 1024 * 1024;

async function createCollection(slug, fields = [], label = `Label ${slug}`) {
  return ok(await w.post("/schema/collections", { slug, label, fields }), 201).item;
}

async function fieldRows(collectionId) {
  return rows(
    w,
    "SELECT slug, type, column_type, required, validation, sort_order FROM _emdash_fields WHERE collection_id = ?1 ORDER BY sort_order",
    collectionId,
  );
}

test("create returns 201 with the collection, its fields, a registry row and the ec_ table", async () => {
  const slug = uniq("posts");
  const res = await w.post("/schema/collections", {
    slug,
    label: "Posts",
    fields: [
      { slug: "title", type: "string", label: "Title", required: true },
      { slug: "views", type: "number" },
      { slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }, { slug: "caption", type: "text" }] },
    ],
  });
  const item = ok(res, 201).item;
  assert.equal(typeof item.id, "string");
  assert.ok(item.id.length > 0);
  assert.equal(item.slug, slug);
  assert.equal(item.label, "Posts");
  assert.match(item.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.match(item.updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(item.fields.length, 3);
  const [title, views, gallery] = item.fields;
  assert.equal(typeof title.id, "string");
  assert.deepEqual(
    { slug: title.slug, label: title.label, type: title.type, required: title.required, sortOrder: title.sortOrder },
    { slug: "title", label: "Title", type: "string", required: true, sortOrder: 0 },
  );
  assert.deepEqual(
    { slug: views.slug, label: views.label, type: views.type, required: views.required, sortOrder: views.sortOrder },
    { slug: "views", label: "views", type: "number", required: false, sortOrder: 1 },
  );
  assert.equal(views.subFields, undefined);
  assert.equal(gallery.type, "repeater");
  assert.deepEqual(gallery.subFields, [
    { slug: "image", type: "image" },
    { slug: "caption", type: "text" },
  ]);

  const reg = await rows(w, "SELECT id, slug, label FROM _emdash_collections WHERE slug = ?1", slug);
  assert.deepEqual(reg, [{ id: item.id, slug, label: "Posts" }]);
  assert.ok(await schemaObjectExists(w, `ec_${slug}`));
  assert.ok(await schemaObjectExists(w, `idx_ec_${slug}_list`));
  const fr = await fieldRows(item.id);
  assert.deepEqual(
    fr.map((f) => [f.slug, f.type, f.column_type, f.required, f.sort_order]),
    [
      ["title", "string", "TEXT", 1, 0],
      ["views", "number", "REAL", 0, 1],
      ["gallery", "repeater", "TEXT", 0, 2],
    ],
  );
  assert.deepEqual(JSON.parse(fr[2].validation), {
    subFields: [
      { slug: "image", type: "image" },
      { slug: "caption", type: "text" },
    ],
  });
  // Field columns exist in the content table.
  await w.db.prepare(`SELECT title, views, gallery FROM ec_${slug} LIMIT 0`).all();
});

test("every field type maps to its column type", async () => {
  const slug = uniq("alltypes");
  const types = ["string", "text", "number", "boolean", "datetime", "image", "file", "portableText", "repeater", "json"];
  const item = await createCollection(
    slug,
    types.map((t) => ({ slug: `f_${t.toLowerCase()}`, type: t })),
  );
  assert.deepEqual(item.fields.map((f) => f.type), types);
  const fr = await fieldRows(item.id);
  assert.deepEqual(
    fr.map((f) => f.column_type),
    ["TEXT", "TEXT", "REAL", "INTEGER", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT"],
  );
});

test("list returns created collections with their fields; get returns one", async () => {
  const a = uniq("lista");
  const b = uniq("listb");
  const ca = await createCollection(a, [{ slug: "title", type: "string" }]);
  const cb = await createCollection(b);
  const data = ok(await w.get("/schema/collections"));
  assert.ok(Array.isArray(data.items));
  const byslug = Object.fromEntries(data.items.map((c) => [c.slug, c]));
  assert.deepEqual(byslug[a], ca);
  assert.deepEqual(byslug[b], cb);
  assert.deepEqual(byslug[b].fields, []);
  // The list is sorted by slug.
  const slugs = data.items.map((c) => c.slug);
  assert.deepEqual(slugs, [...slugs].sort());

  assert.deepEqual(ok(await w.get(`/schema/collections/${a}`)).item, ca);
  assert.deepEqual(ok(await w.get(`/schema/collections/${a}?includeFields=true`)).item, ca);
  // A trailing slash resolves to the same route.
  assert.deepEqual(ok(await w.get(`/schema/collections/${b}/`)).item, cb);
});

test("duplicate slug answers 409 COLLECTION_EXISTS and leaves the first collection alone", async () => {
  const slug = uniq("dup");
  const first = await createCollection(slug, [{ slug: "title", type: "string" }]);
  const res = await w.post("/schema/collections", { slug, label: "Again", fields: [{ slug: "other", type: "text" }] });
  err(res, 409, "COLLECTION_EXISTS");
  const reg = await rows(w, "SELECT id, label FROM _emdash_collections WHERE slug = ?1", slug);
  assert.deepEqual(reg, [{ id: first.id, label: first.label }]);
  assert.deepEqual((await fieldRows(first.id)).map((f) => f.slug), ["title"]);
  assert.equal((await rows(w, "SELECT count(*) AS n FROM _emdash_batch_guard"))[0].n, 0);
});

test("invalid collection slugs in the path answer 400 VALIDATION_ERROR", async () => {
  for (const raw of ["Bad-Slug", 'posts";drop', "1abc", "_x", "a".repeat(64)]) {
    const enc = encodeURIComponent(raw);
    for (const [method, p, body] of [
      ["GET", `/schema/collections/${enc}`],
      ["DELETE", `/schema/collections/${enc}`],
      ["POST", `/schema/collections/${enc}/fields`, { slug: "x", type: "string" }],
    ]) {
      const res = await w.call(method, p, { body });
      const issues = validation(res, "slug");
      assert.match(issues[0].message, /Invalid collection slug/, `${method} ${p}`);
    }
  }
  // Nothing named like the injection attempt was created.
  const r = await rows(w, "SELECT name FROM sqlite_master WHERE name LIKE '%drop%'");
  assert.deepEqual(r, []);
});

test("invalid collection slugs in the body answer 400 VALIDATION_ERROR and create nothing", async () => {
  for (const raw of ["Bad-Slug", 'posts";drop', "", "9lives", "a".repeat(64)]) {
    const res = await w.post("/schema/collections", { slug: raw, label: "Bad" });
    validation(res, "slug");
    const reg = await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", raw);
    assert.deepEqual(reg, []);
  }
  // A slug of exactly 63 characters is fine.
  const long = `l${uniq("x")}`.padEnd(63, "z");
  assert.equal(long.length, 63);
  await createCollection(long);
  assert.ok(await schemaObjectExists(w, `ec_${long}`));
});

test("missing, mistyped and unknown keys are all reported with paths", async () => {
  let res = await w.post("/schema/collections", { label: "No slug" });
  validation(res, "slug");

  res = await w.post("/schema/collections", { slug: uniq("nolabel") });
  validation(res, "label");

  res = await w.post("/schema/collections", { slug: 5, label: ["x"], extra: true, fields: "nope" });
  const issues = validation(res, "slug", "label", "extra", "fields");
  assert.equal(issues.find((i) => i.path === "extra").message, "Unrecognized key");

  const slug = uniq("badfields");
  res = await w.post("/schema/collections", {
    slug,
    label: "Bad fields",
    fields: [
      { slug: "ok", type: "string" },
      { slug: "Bad", type: "string" },
      { slug: "t", type: "nope" },
      { slug: "ok", type: "text" },
      { slug: "r", type: "string", subFields: [{ slug: "a", type: "image" }] },
      { slug: "rep", type: "repeater", subFields: [{ slug: "inner", type: "repeater" }, { slug: "x", type: "image", bogus: 1 }] },
      { slug: "z", type: "string", colour: "red" },
      "not an object",
    ],
  });
  validation(
    res,
    "fields[1].slug",
    "fields[2].type",
    "fields[3].slug",
    "fields[4].subFields",
    "fields[5].subFields[0].type",
    "fields[5].subFields[1].bogus",
    "fields[6].colour",
    "fields[7]",
  );
  assert.deepEqual(await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", slug), []);
  assert.equal(await schemaObjectExists(w, `ec_${slug}`), false);

  res = await w.post("/schema/collections", ["not", "an", "object"]);
  validation(res, "");
});

test("a field slug that is a system column is refused", async () => {
  for (const reserved of ["status", "id", "slug", "deleted_at", "version", "locale"]) {
    const slug = uniq("reserved");
    const res = await w.post("/schema/collections", { slug, label: "R", fields: [{ slug: reserved, type: "string" }] });
    const issues = validation(res, "fields[0].slug");
    assert.match(issues[0].message, /reserved/);
    assert.equal(await schemaObjectExists(w, `ec_${slug}`), false);
  }
  const slug = uniq("resadd");
  const c = await createCollection(slug);
  const res = await w.post(`/schema/collections/${slug}/fields`, { slug: "status", type: "string" });
  validation(res, "slug");
  assert.deepEqual(await fieldRows(c.id), []);
});

test("bad JSON answers 400 INVALID_JSON", async () => {
  const slug = uniq("badjson");
  await createCollection(slug);
  for (const rawBody of ["{not json", "", "   ", '{"slug": "x",}']) {
    err(await w.call("POST", "/schema/collections", { rawBody, headers: { "content-type": "application/json" } }), 400, "INVALID_JSON");
    err(
      await w.call("POST", `/schema/collections/${slug}/fields`, { rawBody, headers: { "content-type": "application/json" } }),
      400,
      "INVALID_JSON",
    );
  }
});

test("bodies over 1 MiB answer 413 PAYLOAD_TOO_LARGE; exactly 1 MiB is accepted", async () => {
  const slug = uniq("big");
  const json = JSON.stringify({ slug, label: "Big" });
  const over = json + " ".repeat(MiB + 1 - json.length);
  assert.equal(Buffer.byteLength(over), MiB + 1);
  err(await w.call("POST", "/schema/collections", { rawBody: over, headers: { "content-type": "application/json" } }), 413, "PAYLOAD_TOO_LARGE");
  assert.equal(await schemaObjectExists(w, `ec_${slug}`), false);

  const label = "x".repeat(2 * MiB);
  err(await w.post("/schema/collections", { slug, label }), 413, "PAYLOAD_TOO_LARGE");

  const exact = json + " ".repeat(MiB - json.length);
  assert.equal(Buffer.byteLength(exact), MiB);
  ok(await w.call("POST", "/schema/collections", { rawBody: exact, headers: { "content-type": "application/json" } }), 201);
  assert.ok(await schemaObjectExists(w, `ec_${slug}`));
});

test("unknown collections answer 404 COLLECTION_NOT_FOUND", async () => {
  const slug = uniq("ghost");
  err(await w.get(`/schema/collections/${slug}`), 404, "COLLECTION_NOT_FOUND");
  err(await w.del(`/schema/collections/${slug}`), 404, "COLLECTION_NOT_FOUND");
  err(await w.del(`/schema/collections/${slug}?force=true`), 404, "COLLECTION_NOT_FOUND");
  err(await w.post(`/schema/collections/${slug}/fields`, { slug: "x", type: "string" }), 404, "COLLECTION_NOT_FOUND");
});

test("add field: 201 with the field, registry row and column; existing entries read it as null", async () => {
  const slug = uniq("addf");
  const c = await createCollection(slug, [{ slug: "title", type: "string" }]);
  const entry = ok(await w.post(`/content/${slug}`, { slug: "first", data: { title: "Hello" } }), 201).item;

  const res = await w.post(`/schema/collections/${slug}/fields`, { slug: "rating", type: "number", label: "Rating", required: false });
  const field = ok(res, 201).item;
  assert.equal(typeof field.id, "string");
  assert.deepEqual(
    { slug: field.slug, label: field.label, type: field.type, required: field.required, sortOrder: field.sortOrder },
    { slug: "rating", label: "Rating", type: "number", required: false, sortOrder: 1 },
  );
  const rep = ok(
    await w.post(`/schema/collections/${slug}/fields`, { slug: "items", type: "repeater", subFields: [{ slug: "photo", type: "image" }] }),
    201,
  ).item;
  assert.deepEqual(rep.subFields, [{ slug: "photo", type: "image" }]);
  assert.equal(rep.sortOrder, 2);

  const fr = await fieldRows(c.id);
  assert.deepEqual(fr.map((f) => [f.slug, f.column_type]), [["title", "TEXT"], ["rating", "REAL"], ["items", "TEXT"]]);
  await w.db.prepare(`SELECT rating, items FROM ec_${slug} LIMIT 0`).all();

  const got = ok(await w.get(`/schema/collections/${slug}`)).item;
  assert.deepEqual(got.fields.map((f) => f.slug), ["title", "rating", "items"]);
  assert.deepEqual(got.fields[1], field);
  assert.ok(got.updatedAt >= c.updatedAt);

  const e = ok(await w.get(`/content/${slug}/${entry.id}`)).item;
  assert.deepEqual(e.data, { title: "Hello", rating: null, items: null });
  // And the new field is writable.
  const upd = ok(await w.put(`/content/${slug}/${entry.id}`, { data: { rating: 4.5 } })).item;
  assert.equal(upd.data.rating, 4.5);
});

test("add field: duplicate 409 CONFLICT, invalid input 400, nothing changes", async () => {
  const slug = uniq("dupf");
  const c = await createCollection(slug, [{ slug: "title", type: "string" }]);
  err(await w.post(`/schema/collections/${slug}/fields`, { slug: "title", type: "text" }), 409, "CONFLICT");
  validation(await w.post(`/schema/collections/${slug}/fields`, { slug: "Nope", type: "string" }), "slug");
  validation(await w.post(`/schema/collections/${slug}/fields`, { slug: "x", type: "bogus" }), "type");
  validation(await w.post(`/schema/collections/${slug}/fields`, { slug: "x" }), "type");
  validation(await w.post(`/schema/collections/${slug}/fields`, { type: "string" }), "slug");
  validation(await w.post(`/schema/collections/${slug}/fields`, { slug: "x", type: "string", unknown: 1 }), "unknown");
  validation(await w.post(`/schema/collections/${slug}/fields`, { slug: "x", type: "string", required: "yes" }), "required");
  validation(
    await w.post(`/schema/collections/${slug}/fields`, { slug: "x", type: "text", subFields: [{ slug: "a", type: "image" }] }),
    "subFields",
  );
  validation(
    await w.post(`/schema/collections/${slug}/fields`, {
      slug: "x",
      type: "repeater",
      subFields: [{ slug: "a", type: "image" }, { slug: "a", type: "text" }],
    }),
    "subFields[1].slug",
  );
  const fr = await fieldRows(c.id);
  assert.deepEqual(fr.map((f) => f.slug), ["title"]);
  assert.deepEqual(ok(await w.get(`/schema/collections/${slug}`)).item.fields.map((f) => f.slug), ["title"]);
});

test("delete: an empty collection goes with its fields and table", async () => {
  const slug = uniq("delplain");
  const c = await createCollection(slug, [{ slug: "title", type: "string" }, { slug: "body", type: "text" }]);
  assert.equal((await fieldRows(c.id)).length, 2);
  const data = ok(await w.del(`/schema/collections/${slug}`));
  assert.deepEqual(data, { deleted: true, slug, collectionId: c.id });
  err(await w.get(`/schema/collections/${slug}`), 404, "COLLECTION_NOT_FOUND");
  assert.deepEqual(await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", slug), []);
  assert.deepEqual(await fieldRows(c.id), []);
  assert.equal(await schemaObjectExists(w, `ec_${slug}`), false);
  assert.equal(await schemaObjectExists(w, `idx_ec_${slug}_list`), false);
  assert.ok(!ok(await w.get("/schema/collections")).items.some((i) => i.slug === slug));
  // Deleting again changes nothing (the cleanup is under way); the slug is reserved until the
  // cron ticks have finished it, then it can be reused.
  ok(await w.del(`/schema/collections/${slug}`));
  err(await w.post("/schema/collections", { slug, label: "again" }), 409, "COLLECTION_EXISTS");
  for (let i = 0; i < 5 && (await rows(w, "SELECT 1 FROM _emdash_media_usage_collection_deletions WHERE collection_slug = ?1", slug)).length; i++) {
    await w.scheduled();
  }
  err(await w.del(`/schema/collections/${slug}`), 404, "COLLECTION_NOT_FOUND");
  const again = await createCollection(slug, [{ slug: "other", type: "json" }]);
  assert.notEqual(again.id, c.id);
  assert.deepEqual(again.fields.map((f) => f.slug), ["other"]);
});

test("delete: live content refuses with 400 COLLECTION_HAS_CONTENT; trashed-only deletes; force deletes", async () => {
  const slug = uniq("delcontent");
  const c = await createCollection(slug, [{ slug: "title", type: "string" }]);
  const e = ok(await w.post(`/content/${slug}`, { slug: "one", data: { title: "T" } }), 201).item;

  err(await w.del(`/schema/collections/${slug}`), 400, "COLLECTION_HAS_CONTENT");
  err(await w.del(`/schema/collections/${slug}?force=false`), 400, "COLLECTION_HAS_CONTENT");
  assert.ok(await schemaObjectExists(w, `ec_${slug}`));
  assert.equal((await fieldRows(c.id)).length, 1);
  assert.equal((await rows(w, `SELECT count(*) AS n FROM ec_${slug}`))[0].n, 1);
  assert.equal((await rows(w, "SELECT count(*) AS n FROM _emdash_batch_guard"))[0].n, 0);

  // Trashed entries do not block deletion.
  ok(await w.del(`/content/${slug}/${e.id}`));
  assert.deepEqual(ok(await w.del(`/schema/collections/${slug}`)), { deleted: true, slug, collectionId: c.id });
  assert.equal(await schemaObjectExists(w, `ec_${slug}`), false);
  assert.deepEqual(await fieldRows(c.id), []);

  // force=true deletes despite live entries.
  const forced = uniq("delforce");
  const fc = await createCollection(forced, [{ slug: "title", type: "string" }]);
  ok(await w.post(`/content/${forced}`, { slug: "a", data: { title: "A" } }), 201);
  ok(await w.post(`/content/${forced}`, { slug: "b", data: { title: "B" }, status: "published" }), 201);
  err(await w.del(`/schema/collections/${forced}`), 400, "COLLECTION_HAS_CONTENT");
  assert.deepEqual(ok(await w.del(`/schema/collections/${forced}?force=true`)), { deleted: true, slug: forced, collectionId: fc.id });
  assert.equal(await schemaObjectExists(w, `ec_${forced}`), false);
  assert.deepEqual(await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", forced), []);
  assert.deepEqual(await fieldRows(fc.id), []);
  err(await w.get(`/content/${forced}`), 404, "COLLECTION_NOT_FOUND");
  assert.equal((await rows(w, "SELECT count(*) AS n FROM _emdash_batch_guard"))[0].n, 0);
});
