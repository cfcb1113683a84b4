// Every spelling of a reference a page shows, in workerd with local D1 and R2, live and draft:
// "Used in" lists the entry at its path, the safe delete answers 409, and the purge (trash days 0,
// the item forced into the trash) keeps the row and the object. Look-alikes cost nothing: no
// occurrence, and the item is deleted and purged, object included.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { migrationStatements, probeWorker, workerOptions, ProbeDb, ProbeBucket, Worker, png } from "./harness.mjs";
import { ok, err, rows, newCollection } from "./helpers.mjs";

const PUBLIC = "https://cdn.example.com/media";
let w;
let bucket;
let salt = 1;

before(async () => {
  const shared = { r2Buckets: { MEDIA_BUCKET: "spellings-test" } };
  const vars = { MEDIA_PUBLIC_URL: PUBLIC, MEDIA_TRASH_DAYS: "0" };
  const mf = new Miniflare({ workers: [{ name: "main", ...workerOptions(vars), ...shared }, probeWorker(shared)], unsafeTriggerHandlers: true });
  const db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();
  w = new Worker(mf, db, vars);
  bucket = new ProbeBucket(mf);
});

after(() => w?.dispose());

/** Uploads a new image; its `{id, key}`. */
async function upload() {
  const form = new FormData();
  form.append("file", new Blob([png(3, 2, salt++)], { type: "image/png" }), "p.png");
  const encoded = new Request("http://localhost/", { method: "POST", body: form });
  const res = await w.call("POST", "/media", {
    rawBody: Buffer.from(await encoded.arrayBuffer()),
    headers: { "content-type": encoded.headers.get("content-type") },
  });
  const item = ok(res, 201).item;
  return { id: item.id, key: item.storageKey };
}

async function tickUntilIdle() {
  for (let i = 0; i < 20; i++) {
    assert.equal((await w.scheduled()).outcome, "ok");
    const [t] = ok(await w.get("/admin/media-usage/ticks?limit=1")).items;
    assert.notEqual(t.outcome, "error", JSON.stringify(t));
    if (t.outcome === "idle") return;
  }
  throw new Error("no idle tick");
}

const ageTrash = async () => {
  await w.db.prepare("UPDATE media SET deleted_at = '2000-01-01T00:00:00.000Z' WHERE deleted_at IS NOT NULL").run();
  // As long ago for the purge's rest between passes.
  await w.db.prepare("UPDATE _emdash_media_purge SET next_pass_at = NULL WHERE cursor_id IS NULL").run();
};
const mediaRows = async (id) => (await rows(w, "SELECT id FROM media WHERE id = ?1", id)).length;
const stored = async (key) => (await bucket.keys()).includes(key);

/** An entry of `c` holding `data` in its live columns, or (with `draft`) in its draft only. */
async function entry(c, data, draft) {
  const slug = `e${Math.random().toString(36).slice(2, 10)}`;
  if (!draft) return ok(await w.post(`/content/${c.slug}`, { slug, status: "published", data }), 201).item.id;
  const id = ok(await w.post(`/content/${c.slug}`, { slug, status: "published", data: { title: "T" } }), 201).item.id;
  ok(await w.put(`/content/${c.slug}/${id}`, { draft: true, data }));
  return id;
}

const FIELDS = [
  { slug: "title", type: "string" },
  { slug: "hero", type: "image" },
  { slug: "notes", type: "text" },
  { slug: "extra", type: "json" },
];

const keyPath = (id) => (/^[a-z]/.test(id) ? `extra.captions.${id}` : `extra.captions["${id}"]`);

// [name, data for the item {id, key}, its path, its reference type]
const SPELLINGS = [
  ["transformation on the public host", ({ key }) => ({ notes: `<img src="https://cdn.example.com/cdn-cgi/image/width=800,format=auto/media/${key}">` }), () => "notes", "embedded_url"],
  ["the host in capitals", ({ key }) => ({ notes: `https://CDN.Example.COM/media/${key}` }), () => "notes", "embedded_url"],
  ["the default port", ({ key }) => ({ notes: `https://cdn.example.com:443/media/${key}` }), () => "notes", "embedded_url"],
  ["an image endpoint's href", ({ key }) => ({ notes: `/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2F${key}&w=800` }), () => "notes", "embedded_url"],
  ["JSON-escaped slashes", ({ key }) => ({ notes: `\\/_emdash\\/api\\/media\\/file\\/${key}` }), () => "notes", "embedded_url"],
  ["HTML character references", ({ key }) => ({ notes: `<img src="&#47;_emdash&#x2F;api&sol;media/file/${key}?w=1&amp;h=2">` }), () => "notes", "embedded_url"],
  ["an id as an object key", ({ id }) => ({ extra: { captions: { [id]: "A cat" } } }), ({ id }) => keyPath(id), "embedded_id"],
  ["ids in a shortcode", ({ id }) => ({ notes: `[gallery ids="${id},0000"]` }), () => "notes", "embedded_id"],
  ["an id in an attribute", ({ id }) => ({ notes: `<figure data-media-id="${id}">` }), () => "notes", "embedded_id"],
];

const LOOK_ALIKES = [
  ({ key }) => ({ notes: `https://other.example/media/${key}` }),
  ({ key }) => ({ notes: `https://cdn.example.com/cdn-cgi/image/w=800/https://other.example/media/${key}` }),
  ({ key }) => ({ notes: `/_emdash/api/media/file/${key}x` }),
  ({ id }) => ({ notes: `${id}0 x${id} data:image/png;base64,${id}` }),
  ({ id }) => ({ hero: { provider: "external", id } }),
];

test("every spelling a page shows is a use, live and draft: Used in, 409, and the purge keeps row and object", async () => {
  const c = await newCollection(w, FIELDS);
  for (const [name, dataOf, pathOf, kind] of SPELLINGS) {
    for (const draft of [false, true]) {
      const m = await upload();
      const id = await entry(c, dataOf(m), draft);
      await tickUntilIdle();
      const used = ok(await w.get(`/media/${m.id}/usage`));
      assert.equal(used.coverage.status, "complete");
      const listed = used.items.map((i) => [i.contentId, i.occurrences.map((o) => [o.fieldPath, o.referenceType])]);
      assert.deepEqual(listed, [[id, [[pathOf(m), kind]]]], `${name}, draft ${draft}`);
      err(await w.del(`/media/${m.id}`), 409, "MEDIA_IN_USE");
      ok(await w.del(`/media/${m.id}?force=true`));
      await ageTrash();
      await tickUntilIdle();
      assert.equal(await mediaRows(m.id), 1, `${name}, draft ${draft}: the row stays`);
      assert.ok(await stored(m.key), `${name}, draft ${draft}: the object stays`);
    }
  }
});

test("look-alikes cost nothing: no occurrence, and the item is deleted and purged with its object", async () => {
  const c = await newCollection(w, FIELDS);
  for (const draft of [false, true]) {
    const m = await upload();
    for (const dataOf of LOOK_ALIKES) await entry(c, dataOf(m), draft);
    await tickUntilIdle();
    const [{ n }] = await rows(w, "SELECT count(*) AS n FROM _emdash_media_usage WHERE media_id = ?1", m.id);
    assert.equal(n, 0);
    assert.deepEqual(ok(await w.get(`/media/${m.id}/usage`)).items, []);
    ok(await w.del(`/media/${m.id}`));
    await ageTrash();
    await tickUntilIdle();
    assert.equal(await mediaRows(m.id), 0, `draft ${draft}`);
    assert.equal(await stored(m.key), false, `draft ${draft}`);
  }
});
