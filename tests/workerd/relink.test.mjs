// Relinking an item's links on the real worker with Miniflare's local D1, by HTTP only (the
// replace is written with SQL, as a replace leaves it: the old key a version, the item's key the
// new one): POST /media/{id}/relink starts it, cron ticks run the relink lane, GET
// /media/{id}/relink reports its progress to `done`, and the entries' live data and drafts name
// the new key, nothing else changed. Bad requests get their documented 4xx.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { workerOptions, migrationStatements, probeWorker, ProbeDb, Worker } from "./harness.mjs";
import { ok, err, validation, uniq } from "./helpers.mjs";

let mf;
let w;
let slug;

before(async () => {
  const vars = { MEDIA_PUBLIC_URL: "https://cdn.example/media" };
  mf = new Miniflare({ workers: [{ name: "main", ...workerOptions(vars) }, probeWorker({})], unsafeTriggerHandlers: true });
  const db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();
  w = new Worker(mf, db, vars);
  slug = uniq("posts");
  const fields = [{ slug: "title", type: "string" }, { slug: "body", type: "text" }, { slug: "content", type: "portableText" }];
  ok(await w.post("/schema/collections", { slug, label: "Posts", fields }), 201);
});

after(() => mf?.dispose());

const body = (key) =>
  `<img src="/_emdash/api/media/file/${key}" srcset="https://site.example/_emdash/api/media/file/${key}?w=2 2x"> ` +
  `[f](/_emdash/api/media/file/${key.replaceAll("/", "%2F")}) https://cdn.example/cdn-cgi/image/w=80/media/${key}.`;
const blocks = (key) => [{ _type: "block", children: [{ _type: "span", text: `<a href="/_emdash/api/media/file/${key}">x</a>` }] }];

async function tickUntilDone(id, max = 60) {
  for (let i = 1; i <= max; i++) {
    const { outcome } = await w.scheduled();
    assert.equal(outcome, "ok");
    const r = ok(await w.get(`/media/${id}/relink`)).item;
    if (r.state === "done") return { ticks: i, relink: r };
  }
  throw new Error("the relink does not finish");
}

test("a relink started by POST rewrites every entry's links to the current key over cron ticks", async () => {
  const media = ok(await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: "img/old.png" }), 201).item;
  const ids = [];
  for (let i = 0; i < 6; i++) {
    const data = { title: `Entry ${i}`, body: body("img/old.png"), content: blocks("img/old.png") };
    ids.push(ok(await w.post(`/content/${slug}`, { slug: uniq("e"), status: "published", data }), 201).item.id);
  }
  ok(await w.put(`/content/${slug}/${ids[0]}`, { draft: true, data: { title: "Draft", body: `draft ${body("img/old.png")}` } }));
  // The projection of every write has run (inline); the replace, as it leaves the database.
  await w.db.prepare("INSERT INTO media_versions (storage_key, media_id, filename, mime_type) SELECT storage_key, id, filename, mime_type FROM media WHERE id = ?1").bind(media.id).run();
  await w.db.prepare("UPDATE media SET storage_key = 'img/v2/new.png' WHERE id = ?1").bind(media.id).run();

  err(await w.get(`/media/${media.id}/relink`), 404, "NOT_FOUND");
  const started = ok(await w.post(`/media/${media.id}/relink`, {}), 202).item;
  assert.equal(started.state, "queued");
  assert.equal(started.entriesLeft, 6);
  assert.equal(started.mediaId, media.id);
  assert.ok(started.eta.ticks >= 1 && started.eta.seconds >= 120, JSON.stringify(started.eta));
  // A retry answers the same relink.
  assert.equal(ok(await w.call("POST", `/media/${media.id}/relink`), 200).item.id, started.id);
  const status = ok(await w.get("/admin/media-usage/status"));
  assert.deepEqual(status.relinks.map((r) => r.id), [started.id]);
  assert.equal(status.relinksMore, false);

  const { relink } = await tickUntilDone(media.id);
  // Batches wrote the six entries (a tick writes several, D1 running each batch's guards and
  // writes atomically), each tick within its statement budget as D1's meta counted them.
  const log = (await w.db.prepare("SELECT statements, details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT 60").all()).results;
  const writing = log.filter((r) => (JSON.parse(r.details).entriesRelinked ?? 0) > 0);
  const batches = writing.map((r) => JSON.parse(r.details).entriesRelinked);
  assert.equal(batches.reduce((a, b) => a + b, 0), 6);
  assert.ok(Math.max(...batches) >= 2 && batches.length <= 3, JSON.stringify(batches));
  for (const r of writing) assert.ok(r.statements <= 40, `${r.statements} statements`);
  // Each entry's live data as written is its live revision, by the editor who asked.
  for (const id of ids) {
    const rev = await w.db.prepare(`SELECT r.data, r.author_id FROM revisions r JOIN "ec_${slug}" e ON e.live_revision_id = r.id WHERE e.id = ?1`).bind(id).first();
    assert.ok(rev && rev.author_id, id);
    assert.equal(JSON.parse(rev.data).body, body("img/v2/new.png"));
  }
  assert.equal(relink.entriesDone, 6);
  assert.equal(relink.entriesChanged, 6);
  assert.equal(relink.entriesLeft, 0);
  assert.ok(relink.finishedAt);
  for (const [i, id] of ids.entries()) {
    const item = ok(await w.get(`/content/${slug}/${id}`)).item;
    assert.equal(item.data.title, `Entry ${i}`);
    assert.equal(item.data.body, body("img/v2/new.png"));
    assert.deepEqual(item.data.content, blocks("img/v2/new.png"));
  }
  const [draft] = (await w.db.prepare(`SELECT r.data FROM revisions r JOIN ec_${slug} e ON e.draft_revision_id = r.id WHERE e.id = ?1`).bind(ids[0]).all()).results;
  assert.equal(JSON.parse(draft.data).body, `draft ${body("img/v2/new.png")}`);
  assert.deepEqual(ok(await w.get("/admin/media-usage/status")).relinks, []);
});

test("bad relink requests get their documented 4xx", async () => {
  const media = ok(await w.post("/media", { filename: "b.png", mimeType: "image/png", storageKey: "img/b.png" }), 201).item;
  err(await w.post("/media/no-such-item/relink", {}), 404, "NOT_FOUND");
  validation(await w.post(`/media/${media.id}/relink`, { all: true }), "all");
  const author = await w.token("author", ["media:read", "media:write"]);
  err(await w.post(`/media/${media.id}/relink`, {}, { token: author }), 403, "FORBIDDEN");
  err(await w.get(`/media/${media.id}/relink`, { token: author }), 403, "FORBIDDEN");
  // Into the trash whatever the earlier tests left queued (an admin's forced trash).
  ok(await w.del(`/media/${media.id}?force=true`));
  err(await w.post(`/media/${media.id}/relink`, {}), 409, "CONFLICT");
});
