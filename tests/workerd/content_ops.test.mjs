// EmDash's content operations on the real worker (Miniflare, local D1), driven by EmDash's own
// client (`EmDashClient` from the `emdash` npm package) over real HTTP and checked with EmDash's
// own response schemas (`emdash/api/schemas`): a create without a slug (and racing creates of
// one title), discard-draft taking the draft's uses out of "Used in", duplicate indexing its
// copy, revisions paging, translations, compare, ownership, and a crash at each statement of
// each new write followed by the client's retry.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { EmDashClient } from "emdash/client";
import * as s from "emdash/api/schemas";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb, Worker, faultVariants } from "./harness.mjs";

/** The statements a crash is injected at, for each new write: every one they issue. */
const FAULTS = Array.from({ length: 14 }, (_, i) => i + 1);
let mf;
let url;
let w;

before(async () => {
  const variants = faultVariants(FAULTS);
  mf = new Miniflare({
    port: 0,
    host: "127.0.0.1",
    workers: [
      { name: "main", ...workerOptions() },
      ...Object.entries(variants).map(([name, vars]) => ({ name, ...workerOptions(vars) })),
      probeWorker(),
    ],
    unsafeTriggerHandlers: true,
  });
  url = (await mf.ready).origin;
  const db = new ProbeDb(mf);
  for (const sql of migrationStatements()) await db.prepare(sql).run();
  w = new Worker(mf, db, {}, variants);
  const fields = [
    { slug: "title", type: "string" },
    { slug: "hero", type: "image" },
    { slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }] },
  ];
  assert.equal((await w.post("/schema/collections", { slug: "posts", label: "Posts", fields })).status, 201);
});

after(() => mf?.dispose());

const client = (token = ADMIN_TOKEN) => new EmDashClient({ baseUrl: url, token });

/** Asserts `value` parses with EmDash's zod `schema`; returns the parsed value. */
function conforms(schema, value, what) {
  const parsed = schema.safeParse(value);
  assert.ok(parsed.success, `${what}: ${JSON.stringify(parsed.error?.issues)}\n${JSON.stringify(value)}`);
  return parsed.data;
}

/** The answer's `data`, asserting the status. */
function ok(res, status = 200) {
  assert.equal(res.status, status, res.text);
  return res.json.data;
}

let keys = 0;
async function media() {
  const key = `m${keys++}.png`;
  return ok(await w.post("/media", { filename: key, mimeType: "image/png", storageKey: key }), 201).item.id;
}

/** The content ids "Used in" lists for media `m`, through EmDash's client. */
async function usedIn(m) {
  const d = await client().mediaGetUsage(m, { limit: 100 });
  return d.items.map((i) => i.contentId).sort();
}

test("EmDash's client creates without a slug: one is made from the title, unique, even for racing creates", async () => {
  const first = await client().create("posts", { data: { title: "Hello World" } });
  conforms(s.contentItemSchema, first, "create");
  assert.equal(first.slug, "hello-world");
  assert.equal(first.type, "posts");
  const second = await client().create("posts", { data: { title: "Hello, World!" } });
  assert.equal(second.slug, "hello-world-1");
  assert.equal((await client().create("posts", { data: { title: "Crème Brûlée" } })).slug, "creme-brulee");
  assert.equal((await client().create("posts", { data: { title: "日本語" } })).slug, null, "nothing left: no slug, as in EmDash");
  assert.equal((await client().create("posts", { data: {} })).slug, null);
  // The raw answer is EmDash's ContentResponse.
  conforms(s.contentResponseSchema, ok(await w.post("/content/posts", { data: { title: "Shape" } }), 201), "raw create");
  // Racing creates of one title: every one gets its own slug.
  const racing = await Promise.all(Array.from({ length: 6 }, () => client().create("posts", { data: { title: "Breaking News" } })));
  const slugs = racing.map((r) => r.slug).sort();
  assert.deepEqual(slugs, ["breaking-news", "breaking-news-1", "breaking-news-2", "breaking-news-3", "breaking-news-4", "breaking-news-5"]);
  // A given slug that is taken is still a 409 naming its holder.
  const taken = await w.post("/content/posts", { slug: "hello-world", data: { title: "x" } });
  assert.equal(taken.status, 409);
  assert.equal(taken.json.error.details.id, first.id);
});

test("discard-draft takes the draft's uses out of Used in, in the same request", async () => {
  const [a, b] = [await media(), await media()];
  const entry = await client().create("posts", { data: { title: "Live", hero: a }, status: "published" });
  ok(await w.put(`/content/posts/${entry.id}`, { draft: true, data: { hero: b } }));
  assert.deepEqual(await usedIn(b), [entry.id], "the draft's use is listed");
  await client().discardDraft("posts", entry.id);
  assert.deepEqual(await usedIn(b), [], "gone with the draft");
  assert.deepEqual(await usedIn(a), [entry.id], "the live use stays");
  const item = await client().get("posts", entry.id);
  assert.equal(item.draftRevisionId, null);
  // The raw answer, and a second discard (nothing to discard): EmDash's ContentResponse.
  const again = conforms(s.contentResponseSchema, ok(await w.post(`/content/posts/${entry.id}/discard-draft`)), "discard");
  assert.equal(again.item.version, item.version, "nothing to discard: unchanged");
  assert.equal((await w.post("/content/posts/nope/discard-draft")).status, 404);
});

test("a duplicate is a new draft of the live data, indexed like any new entry", async () => {
  const [a, b, c] = [await media(), await media(), await media()];
  // Published: its live data stays in use beside its draft (an unpublished entry's draft
  // supersedes its live columns in "Used in", EmDash's rule).
  const original = await client().create("posts", { data: { title: "Gallery", hero: a, gallery: [{ image: c }] }, status: "published" });
  ok(await w.put(`/content/posts/${original.id}`, { draft: true, data: { hero: b } }));
  const copy = conforms(s.contentResponseSchema, ok(await w.post(`/content/posts/${original.id}/duplicate`), 201), "duplicate").item;
  assert.notEqual(copy.id, original.id);
  assert.equal(copy.data.title, "Gallery (Copy)");
  assert.equal(copy.slug, "gallery-copy");
  assert.equal(copy.status, "draft");
  assert.equal(copy.data.hero, a, "the live data, not the draft");
  assert.deepEqual(await usedIn(a), [original.id, copy.id].sort(), "the copy's uses are listed");
  assert.deepEqual(await usedIn(c), [original.id, copy.id].sort());
  assert.deepEqual(await usedIn(b), [original.id], "the draft is not copied");
  const again = ok(await w.post(`/content/posts/${original.id}/duplicate`), 201).item;
  assert.equal(again.slug, "gallery-copy-1");
});

test("an author cannot discard or duplicate another author's entry: 403, nothing changes", async () => {
  const scopes = ["content:read", "content:write", "media:read"];
  const ta = await w.token("author", scopes);
  const tb = ok(await w.post("/admin/tokens", { name: "author b", role: "author", scopes }), 201).token;
  const m = await media();
  const mine = await client(ta).create("posts", { data: { title: "Mine" } });
  ok(await w.put(`/content/posts/${mine.id}`, { draft: true, data: { hero: m } }, { token: ta }));
  const before = ok(await w.get(`/content/posts/${mine.id}`));
  const count = async () => (await w.db.prepare("SELECT count(*) AS n FROM ec_posts").all()).results[0].n;
  const entries = await count();
  await assert.rejects(client(tb).discardDraft("posts", mine.id), (e) => e.status === 403 && e.code === "FORBIDDEN");
  const dup = await w.post(`/content/posts/${mine.id}/duplicate`, undefined, { token: tb });
  assert.equal(dup.status, 403, dup.text);
  assert.equal(dup.json.error.code, "FORBIDDEN");
  assert.deepEqual(ok(await w.get(`/content/posts/${mine.id}`)), before, "nothing changed");
  assert.equal(await count(), entries, "nothing created");
  assert.deepEqual(await usedIn(m), [mine.id]);
  // The author itself may.
  await client(ta).discardDraft("posts", mine.id);
  assert.deepEqual(await usedIn(m), []);
  assert.equal((await w.post(`/content/posts/${mine.id}/duplicate`, undefined, { token: ta })).status, 201);
});

test("revisions are listed newest first in bounded pages; compare is live beside draft", async () => {
  const entry = await client().create("posts", { data: { title: "v" } });
  const path = `/content/posts/${entry.id}`;
  const none = conforms(s.contentCompareResponseSchema, await client().compare("posts", entry.id), "compare");
  assert.deepEqual(none, { hasChanges: false, live: { title: "v", hero: null, gallery: null }, draft: null });
  for (let i = 0; i < 7; i++) ok(await w.put(path, { draft: true, data: { title: `v${i}` } }));
  const cmp = conforms(s.contentCompareResponseSchema, await client().compare("posts", entry.id), "compare");
  assert.equal(cmp.hasChanges, true);
  assert.equal(cmp.live.title, "v");
  assert.equal(cmp.draft.title, "v6");
  const seen = [];
  let cursor = null;
  for (let page = 0; page < 5; page++) {
    const d = ok(await w.get(`${path}/revisions?limit=3${cursor ? `&cursor=${cursor}` : ""}`));
    assert.equal(d.total, 7);
    assert.ok(d.items.length <= 3);
    for (const r of d.items) {
      assert.deepEqual(Object.keys(r).sort(), ["authorId", "collection", "createdAt", "data", "entryId", "id"]);
      assert.equal(r.entryId, entry.id);
      seen.push(r.data.title);
    }
    cursor = d.nextCursor;
    if (!cursor) break;
  }
  assert.deepEqual(seen, ["v6", "v5", "v4", "v3", "v2", "v1", "v0"]);
  assert.equal((await w.get(`${path}/revisions?cursor=garbage`)).json.error.code, "INVALID_CURSOR");
});

test("translations list the group's entries by locale, in EmDash's shape", async () => {
  const en = await client().create("posts", { data: { title: "Welcome" } });
  const de = await client().create("posts", { data: { title: "Willkommen" }, locale: "de", translationGroup: en.translationGroup });
  // EmDash's way: `translationOf` names the source entry.
  const fr = await client().create("posts", { data: { title: "Bienvenue" }, locale: "fr", translationOf: de.id });
  assert.equal(fr.translationGroup, en.translationGroup);
  assert.equal(de.slug, "willkommen");
  const t = conforms(s.contentTranslationsResponseSchema, await client().translations("posts", fr.id), "translations");
  assert.equal(t.translationGroup, en.translationGroup);
  assert.deepEqual(t.translations.map((x) => [x.locale, x.id]), [["de", de.id], ["en", en.id], ["fr", fr.id]]);
  await client().delete("posts", de.id);
  const after = await client().translations("posts", en.id);
  assert.deepEqual(after.translations.map((x) => x.locale), ["en", "fr"], "the trash is left out");
  const paged = ok(await w.get(`/content/posts/${en.id}/translations?limit=1`));
  assert.equal(paged.translations.length, 1);
  assert.ok(paged.nextCursor);
});

/** Time passes for the work queue: the lease of a request that died mid-projection expires. */
async function timePasses() {
  await w.db.prepare("UPDATE _emdash_media_usage_work SET next_attempt_at = '2000-01-01T00:00:00.000Z'").run();
  await w.db.prepare("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE state = 'leased'").run();
}

/** Runs `request` on the worker that crashes from statement k on, for every k; after a 5xx the
 * client retries on the healthy worker and `recover`s; then a tick runs and `check` sees the
 * state the write must end in. Returns how many runs crashed. */
async function crashEverywhere(prepare, request, recover, check) {
  let crashed = 0;
  for (const k of FAULTS) {
    const ctx = await prepare(k);
    const first = await request(w.as(`fault${k}`), ctx);
    if (first.status >= 500) {
      crashed++;
      assert.equal(first.json.error.code, "INTERNAL_ERROR");
      const retry = await request(w, ctx);
      assert.ok(retry.status < 300, `statement ${k}: the retry answered ${retry.status}: ${retry.text}`);
      await recover(ctx, retry);
    }
    await timePasses();
    await w.scheduled();
    await check(ctx, k);
  }
  return crashed;
}

test("a crash at any statement of a new write, then the client's retry, ends as without the crash", async () => {
  // Discard draft.
  let crashed = await crashEverywhere(
    async (k) => {
      const [a, b] = [await media(), await media()];
      const e = await client().create("posts", { data: { title: `crash discard ${k}`, hero: a }, status: "published" });
      ok(await w.put(`/content/posts/${e.id}`, { draft: true, data: { hero: b } }));
      return { id: e.id, a, b };
    },
    (worker, { id }) => worker.post(`/content/posts/${id}/discard-draft`),
    async () => {},
    async ({ id, a, b }, k) => {
      assert.equal(ok(await w.get(`/content/posts/${id}`)).item.draftRevisionId, null, `statement ${k}`);
      assert.deepEqual(await usedIn(b), [], `statement ${k}`);
      assert.deepEqual(await usedIn(a), [id], `statement ${k}`);
    },
  );
  assert.ok(crashed >= 2, `discard: ${crashed} crashed`);
  // A create without a slug and a duplicate: a retry after a 5xx may make a second entry, which
  // the client deletes (it keeps the earlier one).
  const twins = async (title) => (await w.db.prepare("SELECT id, slug FROM ec_posts WHERE title = ?1 ORDER BY rowid").bind(title).all()).results;
  const dropRetryTwin = async (title, retry) => {
    if ((await twins(title)).length > 1) ok(await w.del(`/content/posts/${retry.json.data.item.id}?permanent=true`));
  };
  crashed = await crashEverywhere(
    async (k) => ({ title: `Crash create ${k}`, m: await media() }),
    (worker, { title, m }) => worker.post("/content/posts", { data: { title, hero: m } }),
    ({ title }, retry) => dropRetryTwin(title, retry),
    async ({ title, m }, k) => {
      const [only, ...rest] = await twins(title);
      assert.equal(rest.length, 0, `statement ${k}`);
      assert.equal(only.slug, `crash-create-${k}`);
      assert.deepEqual(await usedIn(m), [only.id], `statement ${k}`);
    },
  );
  assert.ok(crashed >= 2, `create: ${crashed} crashed`);
  crashed = await crashEverywhere(
    async (k) => {
      const m = await media();
      const e = await client().create("posts", { data: { title: `Crash dup ${k}`, hero: m } });
      return { id: e.id, m, title: `Crash dup ${k} (Copy)` };
    },
    (worker, { id }) => worker.post(`/content/posts/${id}/duplicate`),
    ({ title }, retry) => dropRetryTwin(title, retry),
    async ({ id, m, title }, k) => {
      const [copy, ...rest] = await twins(title);
      assert.equal(rest.length, 0, `statement ${k}`);
      assert.deepEqual(await usedIn(m), [id, copy.id].sort(), `statement ${k}`);
    },
  );
  assert.ok(crashed >= 2, `duplicate: ${crashed} crashed`);
  const status = ok(await w.get("/admin/media-usage/status"));
  assert.equal(status.status, "complete", JSON.stringify(status));
});
