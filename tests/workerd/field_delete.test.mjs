// Deleting and updating a collection's field on the real worker with Miniflare's local D1, served
// on a port so that EmDash's own client (`EmDashClient.deleteField`) deletes through real HTTP:
// the field leaves the registry and its column is renamed out of reach at once (D1 runs the
// rename in the request's guarded batch, and rolls it back with the rest when a statement fails),
// coverage reads `stale` and the safe delete refuses until the cron ticks have removed the
// field's occurrences, "Used in" changes, and the column is dropped. A field's update answers
// EmDash's `Field` (checked with EmDash's own zod schema); a type change has every entry
// projected again by the ticks.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { EmDashClient } from "emdash/client";
import * as s from "emdash/api/schemas";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb, dispatchTo, scheduledOn } from "./harness.mjs";
import { uniq } from "./helpers.mjs";

let mf;
let url;
let db;
// Fault twins fail from the k-th statement of each invocation: 1 is the request's read of the
// collection, 2 the first statement of its guarded batch, 6 the rename's batch further in.
const FAULTS = [1, 2, 6];

before(async () => {
  const vars = { MEDIA_PUBLIC_URL: "", MEDIA_USAGE_DAILY_ROWS_WRITTEN: "0" };
  mf = new Miniflare({
    port: 0,
    host: "127.0.0.1",
    workers: [
      { name: "main", ...workerOptions(vars) },
      ...FAULTS.map((k) => ({ name: `fault${k}`, ...workerOptions({ ...vars, MEDIA_USAGE_FAULT_AFTER_STATEMENTS: String(k) }) })),
      probeWorker(),
    ],
    unsafeTriggerHandlers: true,
  });
  url = (await mf.ready).origin;
  db = new ProbeDb(mf);
  for (const q of migrationStatements()) await db.prepare(q).run();
});

after(() => mf?.dispose());

const client = () => new EmDashClient({ baseUrl: url, token: ADMIN_TOKEN });

/** Calls the API on `worker` ("main" over the port, a twin directly); answers {status, json}. */
async function api(method, path, body, worker = "main") {
  const init = { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["content-type"] = "application/json";
  }
  const res = worker === "main" ? await fetch(`${url}/_emdash/api${path}`, init) : await dispatchTo(mf, worker, `http://localhost/_emdash/api${path}`, init);
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text), text };
}

function data(res, status = 200) {
  assert.equal(res.status, status, res.text);
  return res.json.data;
}

const rows = async (q, ...p) => (await db.prepare(q).bind(...p).all()).results;
const tick = () => scheduledOn(mf, "main");

/** Makes due what waits (backoffs, leases), as time passing would. */
async function timePasses() {
  for (const t of ["_emdash_media_usage_work", "_emdash_media_usage_field_deletions", "_emdash_media_usage_reconciliations"]) {
    await db.prepare(`UPDATE ${t} SET next_attempt_at = '2000-01-01T00:00:00.000Z'`).run();
    await db.prepare(`UPDATE ${t} SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE state = 'leased'`).run();
  }
}

/** The collection's coverage as the status reports it, and the field deletions in progress. */
async function status(slug) {
  const d = data(await api("GET", "/admin/media-usage/status"));
  return { coverage: d.collections.find((c) => c.collection === slug)?.status, fieldDeletions: d.fieldDeletions.filter((f) => f.collection === slug) };
}

/** Ticks until the collection has no field deletion in progress and its work is done. */
async function tickUntilDone(slug, max = 20) {
  for (let i = 0; i < max; i++) {
    await tick();
    const left = await rows("SELECT 1 FROM _emdash_media_usage_work WHERE state <> 'failed' LIMIT 1");
    if ((await status(slug)).fieldDeletions.length === 0 && left.length === 0) return i + 1;
    await timePasses();
  }
  throw new Error(`the field deletion of ${slug} did not finish in ${max} ticks`);
}

/** "Used in" of a media item: [contentSlug, [fieldPath, referenceType]...] per entry, and coverage. */
async function usedIn(id) {
  const d = data(await api("GET", `/media/${id}/usage`));
  const items = d.items.map((i) => [i.slug, i.occurrences.map((o) => [o.fieldPath, o.referenceType])]).sort();
  return { items, coverage: d.coverage.status };
}

const columns = async (slug) => (await rows(`SELECT name FROM pragma_table_info('ec_${slug}') ORDER BY cid`)).map((r) => r.name);

/** A collection (title, hero, gallery of images), media a (used through hero only) and b (hero of one entry, gallery of another), indexed. */
async function site() {
  const slug = uniq("f");
  data(
    await api("POST", "/schema/collections", {
      slug,
      label: slug,
      fields: [
        { slug: "title", type: "string" },
        { slug: "hero", type: "image" },
        { slug: "gallery", type: "repeater", subFields: [{ slug: "image", type: "image" }] },
      ],
    }),
    201,
  );
  const media = async (name) => data(await api("POST", "/media", { filename: name, mimeType: "image/png", storageKey: uniq(name) }), 201).item.id;
  const a = await media("a.png");
  const b = await media("b.png");
  const entry = async (s, d) => data(await api("POST", `/content/${slug}`, { slug: s, status: "published", data: d }), 201).item.id;
  await entry("one", { title: "One", hero: a, gallery: [{ image: b }] });
  await entry("two", { title: "Two", hero: b });
  await tickUntilDone(slug);
  assert.equal((await status(slug)).coverage, "complete");
  return { slug, a, b };
}

test("EmDash's client deletes a field: coverage is stale and the safe delete refuses until the ticks have removed its uses, then Used in changes", async () => {
  const { slug, a, b } = await site();
  assert.deepEqual(await usedIn(a), { items: [["one", [["hero", "image_field"]]]], coverage: "complete" });

  await client().deleteField(slug, "hero");

  // Gone from the API at once; the column out of reach (renamed), not yet dropped.
  const fields = data(await api("GET", `/schema/collections/${slug}`)).item.fields;
  assert.deepEqual(fields.map((f) => f.slug), ["title", "gallery"]);
  for (const f of fields) assert.ok(s.fieldSchema.safeParse(f).success, JSON.stringify(f));
  const cols = await columns(slug);
  assert.ok(!cols.includes("hero") && cols.some((c) => c.startsWith("_deleted_")), cols.join());
  const write = await api("POST", `/content/${slug}`, { slug: "late", data: { hero: a } });
  assert.equal(write.status, 400, write.text);

  // Until the ticks have run: the index still lists the uses, coverage is stale, the safe delete refuses.
  const during = await status(slug);
  assert.equal(during.coverage, "stale");
  assert.deepEqual(during.fieldDeletions.map((f) => [f.field, f.phase]), [["hero", "occurrences"]]);
  assert.equal((await usedIn(a)).items.length, 1);
  const refused = await api("DELETE", `/media/${a}`);
  assert.equal(refused.status, 409, refused.text);
  assert.equal(refused.json.error.code, "MEDIA_IN_USE");

  const ticks = await tickUntilDone(slug);
  assert.ok(ticks <= 3, `${ticks} ticks`);
  const log = data(await api("GET", "/admin/media-usage/ticks?limit=10")).items;
  assert.ok(log.some((t) => t.details.fieldOccurrencesDeleted === 2), JSON.stringify(log.map((t) => t.details)));
  assert.ok(log.some((t) => t.details.fieldDeletionsFinalized === 1));

  // Used in changed: a is used nowhere, b only by one's gallery.
  assert.deepEqual(await usedIn(a), { items: [], coverage: "complete" });
  assert.deepEqual(await usedIn(b), { items: [["one", [["gallery[0].image", "image_field"]]]], coverage: "complete" });
  assert.equal((await status(slug)).coverage, "complete");
  assert.equal((await api("DELETE", `/media/${a}`)).status, 200);
  const kept = await api("DELETE", `/media/${b}`);
  assert.equal(kept.status, 409, kept.text);
  assert.equal(kept.json.error.code, "MEDIA_IN_USE");
  // The column is dropped.
  assert.ok(!(await columns(slug)).some((c) => c.startsWith("_deleted_")));
  // EmDash's client sees an unknown field as an error (404).
  await assert.rejects(client().deleteField(slug, "hero"), /404|not found/i);
});

test("a crash at a statement of the DELETE request leaves the field fully there, and the client's retry deletes it", async () => {
  for (const k of FAULTS) {
    const { slug, a } = await site();
    const crashed = await api("DELETE", `/schema/collections/${slug}/fields/hero`, undefined, `fault${k}`);
    assert.equal(crashed.status, 500, `k=${k}: ${crashed.text}`);
    // The guarded batch is atomic on D1, its rename included: nothing of it happened.
    const fieldRows = await rows(`SELECT slug FROM _emdash_fields WHERE slug = 'hero' AND collection_id = (SELECT id FROM _emdash_collections WHERE slug = ?1)`, slug);
    assert.equal(fieldRows.length, 1, `k=${k}`);
    assert.ok((await columns(slug)).includes("hero"), `k=${k}`);
    assert.equal((await status(slug)).fieldDeletions.length, 0, `k=${k}`);
    data(await api("DELETE", `/schema/collections/${slug}/fields/hero`));
    await tickUntilDone(slug);
    assert.deepEqual(await usedIn(a), { items: [], coverage: "complete" }, `k=${k}`);
  }
});

test("a field's update answers EmDash's Field; a type change has every entry projected again, a label change does not", async () => {
  const { slug } = await site();
  const d = await (async () => data(await api("POST", "/media", { filename: "d.png", mimeType: "image/png", storageKey: uniq("d") }), 201).item.id)();
  data(await api("POST", `/schema/collections/${slug}/fields`, { slug: "note", type: "text" }), 201);
  data(await api("POST", `/content/${slug}`, { slug: "three", status: "published", data: { note: d } }), 201);
  await tickUntilDone(slug);
  assert.deepEqual(await usedIn(d), { items: [["three", [["note", "embedded_id"]]]], coverage: "complete" });

  const labelled = await api("PUT", `/schema/collections/${slug}/fields/note`, { label: "A note", required: false, options: { rows: 4 } });
  const item = data(labelled).item;
  assert.ok(s.fieldResponseSchema.safeParse(labelled.json.data).success, labelled.text);
  assert.deepEqual([item.label, item.type, item.options], ["A note", "text", { rows: 4 }]);
  assert.equal((await status(slug)).coverage, "complete", "a label changes no use");

  const retyped = await api("PUT", `/schema/collections/${slug}/fields/note`, { type: "image" });
  assert.ok(s.fieldResponseSchema.safeParse(retyped.json.data).success, retyped.text);
  assert.equal(data(retyped).item.type, "image");
  assert.equal((await status(slug)).coverage, "stale");
  await tickUntilDone(slug);
  assert.deepEqual(await usedIn(d), { items: [["three", [["note", "image_field"]]]], coverage: "complete" });

  const across = await api("PUT", `/schema/collections/${slug}/fields/note`, { type: "portableText" });
  assert.equal(across.status, 400, across.text);
  assert.equal(across.json.error.code, "FIELD_TYPE_COLUMN_CHANGE");
  const unknown = await api("PUT", `/schema/collections/${slug}/fields/note`, { widget: "textarea" });
  assert.equal(unknown.status, 400, unknown.text);
  assert.equal(unknown.json.error.code, "VALIDATION_ERROR");
});
