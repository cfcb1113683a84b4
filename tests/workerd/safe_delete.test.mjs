// Safe media delete on D1: the in-use check, the coverage check and the delete are one guarded
// batch; force is for admins.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, err, rows, uniq } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

const slug = uniq("posts");
ok(await w.post("/schema/collections", { slug, label: "Posts", fields: [{ slug: "hero", type: "image" }] }), 201);

async function media() {
  const key = uniq("m");
  return ok(await w.post("/media", { filename: `${key}.png`, mimeType: "image/png", storageKey: key }), 201).item.id;
}

async function entry(hero) {
  return ok(await w.post(`/content/${slug}`, { slug: uniq("e"), status: "published", data: { hero } }), 201).item.id;
}

test("media used by entries is refused with the entries, and kept", async () => {
  const m = await media();
  const a = await entry(m);
  const b = await entry(m);
  ok(await w.del(`/content/${slug}/${b}`)); // trashed: still a reference
  const e = err(await w.del(`/media/${m}`), 409, "MEDIA_IN_USE");
  assert.equal(e.details.count, 2);
  assert.deepEqual(e.details.entries.map((x) => x.contentId).sort(), [a, b].sort());
  assert.ok(e.details.entries.every((x) => x.collection === slug && typeof x.slug === "string"));
  ok(await w.get(`/media/${m}`));
});

test("unreferenced media is refused while coverage is incomplete, deleted once it is complete", async () => {
  const m = await media();
  const id = await entry("someone-else");
  await w.db.prepare(`UPDATE "ec_${slug}" SET hero = 'x' WHERE id = ?1`).bind(id).run(); // captured, not yet projected
  const e = err(await w.del(`/media/${m}`), 409, "MEDIA_USAGE_COVERAGE_INCOMPLETE");
  assert.equal(e.details.coverage.status, "stale");
  await w.scheduled();
  assert.deepEqual(ok(await w.del(`/media/${m}`)), { deleted: true, id: m });
  const [row] = await rows(w, "SELECT deleted_at FROM media WHERE id = ?1", m);
  assert.ok(row.deleted_at, "in the trash");
});

test("force deletes regardless, for admins only", async () => {
  const m = await media();
  await entry(m);
  const editor = await w.token("editor", ["media:read", "media:write"]);
  err(await w.del(`/media/${m}?force=true`, { token: editor }), 403, "FORBIDDEN");
  err(await w.del(`/media/${m}`, { token: editor }), 409, "MEDIA_IN_USE");
  err(await w.del(`/media/${m}?permanent=true`, { token: editor }), 403, "FORBIDDEN");
  assert.deepEqual(ok(await w.del(`/media/${m}?force=true`)), { deleted: true, id: m });
  // In the trash, and still shown where it is used; a permanent delete refuses it like the safe
  // delete (in the trash or not), and deletes it for good only with force.
  assert.ok(ok(await w.get(`/media/${m}`)).item.deletedAt);
  assert.equal(ok(await w.get(`/media/${m}/usage`)).items.length, 1);
  err(await w.del(`/media/${m}?permanent=true`), 409, "MEDIA_IN_USE");
  assert.deepEqual(ok(await w.del(`/media/${m}?permanent=true&force=true`)), { deleted: true, id: m });
  err(await w.del(`/media/${m}?force=true`), 404, "NOT_FOUND");
});
