// EmDash's own client (`EmDashClient` from the `emdash` npm package, the version pinned in
// package.json), unchanged, against the real worker over HTTP: every method of the client is
// either offered (driven here, its answer checked against EmDash's own zod schemas from
// `emdash/api/schemas`) or out of scope (answered 404 `NOT_FOUND`, which the client raises as
// its own error). A client version with a method this list does not name fails the first test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { EmDashClient, EmDashApiError } from "emdash/client";
import * as s from "emdash/api/schemas";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb, png, scheduledOn } from "./harness.mjs";

let mf;
let url;

before(async () => {
  const shared = { r2Buckets: { MEDIA_BUCKET: "emdash-client-test" } };
  const vars = { MEDIA_PUBLIC_URL: "", SITE_URL: "https://site.example" };
  mf = new Miniflare({
    port: 0,
    host: "127.0.0.1",
    workers: [{ name: "main", ...workerOptions(vars), ...shared }, probeWorker(shared)],
    unsafeTriggerHandlers: true,
  });
  url = (await mf.ready).origin;
  const db = new ProbeDb(mf);
  for (const sql of migrationStatements()) await db.prepare(sql).run();
});

after(() => mf?.dispose());

const client = () => new EmDashClient({ baseUrl: url, token: ADMIN_TOKEN });

/** Asserts that `value` parses with EmDash's `schema`, naming every issue when it does not. */
function conforms(schema, value, what) {
  const parsed = schema.safeParse(value);
  const issues = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  assert.deepEqual(issues, [], `${what} does not match EmDash's schema`);
  return value;
}

/** The client's methods this service offers, each driven by a test below. */
const OFFERED = [
  "collections", "collection", "createCollection", "deleteCollection", "createField", "deleteField",
  "list", "listAll", "get", "create", "update", "delete", "publish", "unpublish", "restore",
  "schedule", "compare", "discardDraft", "translations",
  "mediaList", "mediaGet", "mediaGetUsage", "mediaUpload", "mediaDelete", "mediaRepairUsage",
];
/** The client's methods outside this service's scope (search, taxonomies, menus, manifest, schema export). */
const OUT_OF_SCOPE = {
  manifest: (c) => c.manifest(),
  schemaExport: (c) => c.schemaExport(),
  schemaTypes: (c) => c.schemaTypes(),
  search: (c) => c.search("hello"),
  taxonomies: (c) => c.taxonomies(),
  terms: (c) => c.terms("tags"),
  createTerm: (c) => c.createTerm("tags", { slug: "a", label: "A" }),
  menus: (c) => c.menus(),
  menu: (c) => c.menu("main"),
};
/** Plumbing, not API methods. */
const PLUMBING = ["constructor", "request", "requestRaw", "assertOk", "getFieldSchemas"];

test("every method of EmDash's client is either offered or named out of scope", () => {
  const methods = Object.getOwnPropertyNames(EmDashClient.prototype).filter((m) => !PLUMBING.includes(m));
  const named = [...OFFERED, ...Object.keys(OUT_OF_SCOPE)];
  assert.deepEqual(methods.filter((m) => !named.includes(m)), [], "methods of the client this suite does not name");
  assert.deepEqual(named.filter((m) => !methods.includes(m)), [], "names the client does not have");
});

test("methods out of scope answer 404 NOT_FOUND, raised by the client as its own error", async () => {
  for (const [name, call] of Object.entries(OUT_OF_SCOPE)) {
    await assert.rejects(call(client()), (e) => {
      assert.ok(e instanceof EmDashApiError, `${name}: ${e}`);
      assert.equal(e.status, 404, name);
      assert.equal(e.code, "NOT_FOUND", name);
      return true;
    });
  }
});

test("collections: create, list, get with fields, add a field, delete", async () => {
  const c = client();
  conforms(s.collectionSchema, await c.createCollection({ slug: "conf_posts", label: "Posts", fields: [{ slug: "title", type: "string" }] }), "createCollection");
  const listed = await c.collections();
  conforms(s.collectionListResponseSchema, { items: listed }, "collections");
  assert.ok(listed.some((x) => x.slug === "conf_posts"));
  const added = conforms(s.fieldSchema, await c.createField("conf_posts", { slug: "hero", type: "image", label: "Hero" }), "createField");
  assert.equal(added.slug, "hero");
  await c.createField("conf_posts", { slug: "extra", type: "string", label: "Extra" });
  const got = await c.collection("conf_posts");
  assert.deepEqual(got.fields.map((f) => f.slug), ["title", "hero", "extra"]);
  conforms(s.collectionWithFieldsResponseSchema, { item: got }, "collection");
  await c.deleteField("conf_posts", "extra");
  assert.deepEqual((await c.collection("conf_posts")).fields.map((f) => f.slug), ["title", "hero"]);
  await c.createCollection({ slug: "conf_gone", label: "Gone" });
  await c.deleteCollection("conf_gone");
  assert.ok(!(await c.collections()).some((x) => x.slug === "conf_gone"));
});

test("content: create, get, update with _rev, list, publish, unpublish, trash, restore", async () => {
  const c = client();
  await c.createCollection({ slug: "conf_pages", label: "Pages", fields: [{ slug: "title", type: "string" }] });
  const created = conforms(s.contentItemSchema, await c.create("conf_pages", { slug: "hello", data: { title: "Hello" } }), "create");
  assert.equal(created.type, "conf_pages");
  // EmDash makes the slug from the title when none is given.
  const untitled = conforms(s.contentItemSchema, await c.create("conf_pages", { data: { title: "Hello World" } }), "create without a slug");
  assert.equal(untitled.slug, "hello-world");
  assert.equal((await c.create("conf_pages", { data: { title: "Hello World" } })).slug, "hello-world-1");
  const got = conforms(s.contentItemSchema, await c.get("conf_pages", created.id), "get");
  assert.ok(got._rev, "get carries _rev");
  const updated = conforms(s.contentItemSchema, await c.update("conf_pages", created.id, { data: { title: "Hi" }, _rev: got._rev }), "update");
  assert.equal(updated.data.title, "Hi");
  await assert.rejects(c.update("conf_pages", created.id, { data: { title: "Stale" }, _rev: got._rev }), (e) => e.status === 409 && e.code === "CONFLICT");
  const second = await c.create("conf_pages", { slug: "second", data: { title: "Second" } });
  const page = conforms(s.contentListResponseSchema, await c.list("conf_pages", { limit: 1 }), "list");
  assert.equal(page.items.length, 1);
  assert.equal(typeof page.nextCursor, "string");
  const all = [];
  for await (const item of c.listAll("conf_pages", { limit: 1 })) all.push(item.slug);
  assert.deepEqual(all.sort(), ["hello", "hello-world", "hello-world-1", "second"]);
  const last = conforms(s.contentListResponseSchema, await c.list("conf_pages", { limit: 10 }), "list (last page)");
  assert.equal(last.nextCursor, undefined, "no cursor on the last page");
  await c.publish("conf_pages", created.id);
  assert.equal((await c.get("conf_pages", created.id)).status, "published");
  await c.unpublish("conf_pages", created.id);
  assert.equal((await c.get("conf_pages", created.id)).status, "draft");
  // A draft beside the live entry: compare, then discard it.
  await c.publish("conf_pages", created.id);
  await c.request("PUT", `/content/conf_pages/${created.id}`, { draft: true, data: { title: "Draft title" } });
  const diff = conforms(s.contentCompareResponseSchema, await c.compare("conf_pages", created.id), "compare");
  assert.equal(diff.hasChanges, true);
  assert.equal(diff.draft.title, "Draft title");
  await c.discardDraft("conf_pages", created.id);
  const discarded = conforms(s.contentCompareResponseSchema, await c.compare("conf_pages", created.id), "compare after discard");
  assert.equal(discarded.hasChanges, false);
  assert.equal((await c.get("conf_pages", created.id)).draftRevisionId, null);
  const translations = conforms(s.contentTranslationsResponseSchema, await c.translations("conf_pages", created.id), "translations");
  assert.deepEqual(translations.translations.map((t) => t.id), [created.id]);
  // A schedule in the future: the entry is scheduled until a tick at or after its time.
  const at = new Date(Date.now() + 86_400_000).toISOString();
  await c.schedule("conf_pages", second.id, { at });
  const scheduled = conforms(s.contentItemSchema, await c.get("conf_pages", second.id), "get (scheduled)");
  assert.equal(scheduled.status, "scheduled");
  assert.equal(Date.parse(scheduled.scheduledAt), Date.parse(at));
  await c.unpublish("conf_pages", created.id);
  await c.delete("conf_pages", created.id);
  // Unlike EmDash (404), an entry in the trash is still answered, with `deletedAt` set.
  assert.equal(typeof conforms(s.contentItemSchema, await c.get("conf_pages", created.id), "get (trashed)").deletedAt, "string");
  await c.restore("conf_pages", created.id);
  assert.equal((await c.get("conf_pages", created.id)).deletedAt, null);
});

test("media and usage: upload, get and list with usage, Used in, repair, safe delete", async () => {
  const c = client();
  await c.createCollection({ slug: "conf_media", label: "Media users", fields: [{ slug: "title", type: "string" }, { slug: "hero", type: "image" }] });
  const item = conforms(s.mediaItemSchema, await c.mediaUpload(png(5, 4, 9), "conf.png", { alt: "Alt" }), "mediaUpload");
  assert.equal(item.filename, "conf.png");
  const listed = conforms(s.mediaListReadResponseSchema, await c.mediaList({ mimeType: "image/png", includeUsage: true }), "mediaList");
  assert.deepEqual(listed.items.map((m) => m.id), [item.id]);
  assert.equal((await c.mediaList({ mimeType: "application/pdf" })).items.length, 0);
  const entry = await c.create("conf_media", { slug: "uses", data: { title: "Uses", hero: { id: item.id } } });
  const usage = conforms(s.mediaUsageDetailsResponseSchema, await c.mediaGetUsage(item.id), "mediaGetUsage");
  assert.deepEqual(usage.items.map((i) => i.contentId), [entry.id]);
  assert.deepEqual(usage.items[0].sources.map((x) => x.variant), ["columns"]);
  assert.equal(usage.items[0].sources[0].occurrences[0].referenceType, "image_field");
  assert.equal(usage.nextCursor, undefined);
  // The ticks first project what the other tests queued: a repair whose run finishes within
  // the request answers one of EmDash's four statuses (one still running answers `running`).
  for (let i = 0; i < 5; i++) await scheduledOn(mf, "main");
  const repaired = conforms(s.mediaUsageRepairResponseSchema, await c.mediaRepairUsage({ scope: "collection", collection: "conf_media" }), "mediaRepairUsage");
  assert.deepEqual(repaired.collections.map((x) => x.collection), ["conf_media"]);
  const got = conforms(s.mediaReadItemSchema, await c.mediaGet(item.id, { includeUsage: true }), "mediaGet");
  assert.deepEqual(got.usage, { count: 1, coverage: { scope: "all_content_collections", status: "complete" } });
  await assert.rejects(c.mediaDelete(item.id), (e) => e.status === 409);
  await c.delete("conf_media", entry.id);
  await assert.rejects(c.mediaDelete(item.id), (e) => e.status === 409, "an entry in the trash still holds its media");
});
