// Scheduled publishing on the real worker with local D1, driven by EmDash's own client
// (`EmDashClient.schedule(collection, id, {at})`, unchanged) over real HTTP, and by cron ticks
// whose scheduled time the test sets: a tick before the time changes nothing, the tick at the time
// publishes the entry, and what counts as a use (usage counts) and the sitemap change then, not
// before; a cancelled schedule publishes nothing; an idle tick costs the same statements (and D1
// rows read) however many entries are scheduled for later. Responses are checked against EmDash's
// own schemas.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { EmDashClient } from "emdash/client";
import * as s from "emdash/api/schemas";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb, scheduledOn } from "./harness.mjs";

let mf;
let url;
let db;
/** Crash points of the firing tick: every statement it issues (checked below). */
const MAX_K = 36;

before(async () => {
  const vars = { SITE_URL: "https://site.example", MEDIA_PUBLIC_URL: "https://cdn.example/media" };
  mf = new Miniflare({
    port: 0,
    host: "127.0.0.1",
    workers: [
      { name: "main", ...workerOptions(vars) },
      // Twins failing from the k-th statement of every invocation on (a crash there).
      ...Array.from({ length: MAX_K }, (_, i) => ({ name: `fault${i + 1}`, ...workerOptions({ ...vars, MEDIA_USAGE_FAULT_AFTER_STATEMENTS: String(i + 1) }) })),
      probeWorker(),
    ],
    unsafeTriggerHandlers: true,
  });
  url = (await mf.ready).origin;
  db = new ProbeDb(mf);
  for (const sql of migrationStatements()) await db.prepare(sql).run();
});

after(() => mf?.dispose());

const client = () => new EmDashClient({ baseUrl: url, token: ADMIN_TOKEN });

/** Calls the API as the admin; resolves with `{status, json}`. */
async function api(method, path, body) {
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${url}${path.startsWith("/sitemap") ? "" : "/_emdash/api"}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, text, json };
}

/** The `data` of a success answer with `status`. */
function data(res, status = 200) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.json?.success, true, res.text);
  return res.json.data;
}

/** An EmDash content response (`{item, _rev?}`), checked against EmDash's schema. */
function content(res) {
  const d = data(res);
  const parsed = s.contentResponseSchema.safeParse(d);
  assert.ok(parsed.success, JSON.stringify(parsed.error?.issues ?? null) + res.text);
  return d.item;
}

let seq = 0;
async function setup() {
  seq += 1;
  const slug = `posts${seq}`;
  data(await api("POST", "/schema/collections", { slug, label: "Posts", fields: [{ slug: "title", type: "string" }, { slug: "hero", type: "image" }] }), 201);
  const media = async (key) => data(await api("POST", "/media", { filename: key, mimeType: "image/png", storageKey: `${slug}/${key}` }), 201).item.id;
  const entry = async (entrySlug, status, d) => data(await api("POST", `/content/${slug}`, { slug: entrySlug, status, data: d }), 201).item.id;
  return { slug, media, entry };
}

/** Entries using media `id` by what counts as a use. */
async function uses(id) {
  return data(await api("GET", `/media/${id}?includeUsage=1`)).item.usage.count;
}

/** The collection's sitemap (read from D1: the request carries a token), or "" when it has none. */
async function sitemap(slug) {
  const res = await api("GET", `/sitemap-${slug}.xml`);
  if (res.status === 404) return "";
  assert.equal(res.status, 200, res.text);
  return res.text;
}

/** Runs a cron tick of `worker` scheduled at `time` (ms); resolves with the newest tick log row. */
async function tickAt(time, worker = "main") {
  const { outcome } = await scheduledOn(mf, worker, "*/2 * * * *", time);
  assert.equal(outcome, "ok");
  return data(await api("GET", "/admin/media-usage/ticks?limit=1")).items[0];
}

/** Time passes for the queues: the leases of holders that died expire. */
async function timePasses() {
  await db.prepare("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z', next_attempt_at = '2000-01-01T00:00:00.000Z' WHERE state IN ('leased', 'retry')").run();
}

test("EmDash's client schedules; the tick before the time changes nothing, the tick at it publishes and changes usage and the sitemap", async () => {
  const { slug, media, entry } = await setup();
  const [a, b, c] = [await media("a.png"), await media("b.png"), await media("c.png")];
  // A published entry using A with a draft using B, and a draft using C.
  const live = await entry("live", "published", { title: "Live", hero: a });
  content(await api("PUT", `/content/${slug}/${live}`, { draft: true, data: { hero: b } }));
  const draft = await entry("draft", "draft", { title: "Draft", hero: c });
  const time = Date.now() + 3_600_000;
  const at = new Date(time).toISOString();
  await client().schedule(slug, live, { at });
  await client().schedule(slug, draft, { at });
  const l = content(await api("GET", `/content/${slug}/${live}`));
  assert.deepEqual([l.status, l.scheduledAt, l.type], ["published", at, slug]);
  const d = content(await api("GET", `/content/${slug}/${draft}`));
  assert.deepEqual([d.status, d.scheduledAt, d.publishedAt], ["scheduled", at, null]);

  const before = [await uses(a), await uses(b), await uses(c), await sitemap(slug)];
  assert.deepEqual(before.slice(0, 3), [1, 1, 1]);
  assert.match(before[3], new RegExp(`/${slug}/live</loc>`));
  assert.match(before[3], /a\.png/);
  assert.doesNotMatch(before[3], new RegExp(`/${slug}/draft</loc>`));

  // A millisecond before the time: nothing fires.
  const early = await tickAt(time - 1);
  assert.equal(early.details.scheduledPublished, 0, JSON.stringify(early));
  assert.deepEqual([await uses(a), await uses(b), await uses(c), await sitemap(slug)], before);
  assert.equal(content(await api("GET", `/content/${slug}/${draft}`)).status, "scheduled");

  // At the time: both published, projected in the same tick.
  const fired = await tickAt(time);
  assert.equal(fired.details.scheduledPublished, 2, JSON.stringify(fired));
  assert.ok(fired.lane.split(",").includes("schedule"), fired.lane);
  assert.equal(fired.details.error, null, JSON.stringify(fired));
  const l2 = content(await api("GET", `/content/${slug}/${live}`));
  assert.deepEqual([l2.status, l2.scheduledAt, l2.draftRevisionId, l2.data.hero], ["published", null, null, b]);
  assert.equal(l2.publishedAt, l.publishedAt, "its first publication stands");
  const d2 = content(await api("GET", `/content/${slug}/${draft}`));
  assert.deepEqual([d2.status, d2.scheduledAt, d2.publishedAt], ["published", null, at]);
  assert.deepEqual([await uses(a), await uses(b), await uses(c)], [0, 1, 1]);
  const after = await sitemap(slug);
  assert.match(after, new RegExp(`/${slug}/draft</loc>`));
  assert.match(after, /c\.png/);
  assert.match(after, /b\.png/);
  assert.doesNotMatch(after, /a\.png/);
  assert.equal(data(await api("GET", "/admin/media-usage/status")).status, "complete");
  assert.equal((await tickAt(time)).details.scheduledPublished, 0, "once");
});

test("a cancelled schedule makes the entry a draft again and publishes nothing; bad times are refused", async () => {
  const { slug, entry } = await setup();
  const id = await entry("later", "draft", { title: "Later" });
  const time = Date.now() + 7_200_000;
  // An offset is kept as the instant it names, in UTC.
  const local = new Date(time + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
  await client().schedule(slug, id, { at: local });
  const scheduled = content(await api("GET", `/content/${slug}/${id}`));
  assert.deepEqual([scheduled.status, scheduled.scheduledAt], ["scheduled", new Date(time).toISOString()]);
  const cancelled = content(await api("DELETE", `/content/${slug}/${id}/schedule`));
  assert.deepEqual([cancelled.status, cancelled.scheduledAt], ["draft", null]);
  const tick = await tickAt(time);
  assert.equal(tick.details.scheduledPublished, 0, JSON.stringify(tick));
  assert.equal(content(await api("GET", `/content/${slug}/${id}`)).status, "draft");
  // Cancelled again: answered as it is.
  assert.equal(content(await api("DELETE", `/content/${slug}/${id}/schedule`)).version, cancelled.version);

  // A time in the past (EmDash's rule) and a time that is not ISO 8601 are refused by the client's call.
  for (const at of [new Date(Date.now() - 60_000).toISOString(), "next tuesday", "2099-02-30T00:00:00Z"]) {
    await assert.rejects(client().schedule(slug, id, { at }), (e) => {
      assert.equal(e.status, 400, String(e));
      assert.equal(e.code, "VALIDATION_ERROR", String(e));
      return true;
    });
  }
  const res = await api("POST", `/content/${slug}/${id}/schedule`, { scheduledAt: new Date(Date.now() - 60_000).toISOString() });
  assert.equal(res.json.error.details.issues[0].path, "scheduledAt");
  assert.equal(res.json.error.details.issues[0].message, "Must lie in the future");
  assert.equal((await api("POST", `/content/${slug}/nope/schedule`, { scheduledAt: local })).status, 404);
  assert.equal(content(await api("GET", `/content/${slug}/${id}`)).version, cancelled.version, "nothing written");
});

test("an idle tick costs the same statements and D1 rows however many entries are scheduled for later", async () => {
  const { slug, entry } = await setup();
  const time = Date.now();
  const idle = async () => {
    const t = await tickAt(time);
    assert.equal(t.outcome, "idle", JSON.stringify(t));
    return t;
  };
  for (let i = 0; i < 3; i++) {
    await client().schedule(slug, await entry(`e${i}`, "draft", {}), { at: new Date(time + 86_400_000).toISOString() });
  }
  await idle();
  const few = await idle();
  // Five thousand more, written behind the API.
  const [{ id: collectionId }] = (await db.prepare("SELECT id FROM _emdash_collections WHERE slug = ?1").bind(slug).all()).results;
  await db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
       INSERT INTO _emdash_content_schedule (collection_id, content_id, collection_slug, scheduled_at)
       SELECT ?1, 'x' || i, ?2, '2099-06-01T00:00:00.000Z' FROM n`,
    )
    .bind(collectionId, slug)
    .run();
  const many = await idle();
  assert.equal(many.statements, few.statements, `${JSON.stringify(few)}\n${JSON.stringify(many)}`);
  assert.equal(many.details.d1.rowsRead, few.details.d1.rowsRead, `${JSON.stringify(few.details.d1)}\n${JSON.stringify(many.details.d1)}`);
  assert.equal(many.details.scheduledPublished, 0);
  // One probe per lane (work, schedule, deletion, fields, repair, purge, tables, relink: 8), the read of the day's
  // use of the daily budget, the repair lane's look for collections proven under other reference
  // rules, and the log write.
  assert.ok(many.statements <= 11, JSON.stringify(many));
});

test("a crash at any statement of the tick a schedule fires in is made good by the next ticks", async () => {
  const time = Date.now() + 3_600_000;
  const at = new Date(time).toISOString();
  /** A published entry using A with a draft using B, and a draft using C, both scheduled at `time`. */
  async function scheduled() {
    const { slug, media, entry } = await setup();
    const [a, b, c] = [await media("a.png"), await media("b.png"), await media("c.png")];
    const live = await entry("live", "published", { title: "Live", hero: a });
    content(await api("PUT", `/content/${slug}/${live}`, { draft: true, data: { hero: b } }));
    const draft = await entry("draft", "draft", { title: "Draft", hero: c });
    await client().schedule(slug, live, { at });
    await client().schedule(slug, draft, { at });
    return { slug, live, draft, a, b, c };
  }
  /** What the fired schedules leave, once the ticks have settled. */
  async function settled({ slug, live, draft, a, b, c }) {
    for (let i = 0; i < 10; i++) {
      const [{ n }] = (await db.prepare("SELECT count(*) AS n FROM _emdash_media_usage_work WHERE collection_slug = ?1").bind(slug).all()).results;
      const [{ m }] = (await db.prepare("SELECT count(*) AS m FROM _emdash_content_schedule WHERE collection_slug = ?1").bind(slug).all()).results;
      if (n === 0 && m === 0) break;
      await timePasses();
      await tickAt(time);
    }
    const l = content(await api("GET", `/content/${slug}/${live}`));
    const d = content(await api("GET", `/content/${slug}/${draft}`));
    return {
      live: [l.status, l.data.hero === b, l.draftRevisionId, l.scheduledAt],
      draft: [d.status, d.publishedAt, d.scheduledAt],
      uses: [await uses(a), await uses(b), await uses(c)],
      sitemap: /b\.png/.test(await sitemap(slug)) && /c\.png/.test(await sitemap(slug)) && !/a\.png/.test(await sitemap(slug)),
    };
  }
  const expected = { live: ["published", true, null, null], draft: ["published", at, null], uses: [0, 1, 1], sitemap: true };
  // Without a crash: the statements of the firing tick are the crash points.
  const reference = await scheduled();
  const fired = await tickAt(time);
  assert.equal(fired.details.scheduledPublished, 2, JSON.stringify(fired));
  assert.ok(fired.statements <= MAX_K, `the firing tick issued ${fired.statements} statements`);
  assert.deepEqual(await settled(reference), expected);
  for (let k = 1; k <= fired.statements; k++) {
    const run = await scheduled();
    await scheduledOn(mf, `fault${k}`, "*/2 * * * *", time);
    assert.deepEqual(await settled(run), expected, `crash at statement ${k}`);
  }
});
