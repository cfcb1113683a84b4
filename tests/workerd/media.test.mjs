// /media/**: the media library's metadata through the real wasm worker and D1.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, err, validation, rows, uniq } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function createMedia(over = {}) {
  const key = uniq("uploads/img");
  return ok(await w.post("/media", { filename: "cat.jpg", mimeType: "image/jpeg", storageKey: `${key}.jpg`, ...over }), 201).item;
}

test("create answers 201 with the media shape; get returns it", async () => {
  const storageKey = `${uniq("2026/04")}/cat photo.jpg`;
  const res = await w.post("/media", {
    filename: "cat photo.jpg",
    mimeType: "Image/JPEG",
    size: 12345,
    width: 800,
    height: 600,
    alt: "A cat",
    storageKey,
  });
  const item = ok(res, 201).item;
  assert.equal(typeof item.id, "string");
  assert.ok(item.id.length > 0);
  assert.deepEqual(
    { ...item, id: undefined, createdAt: undefined },
    {
      id: undefined,
      createdAt: undefined,
      filename: "cat photo.jpg",
      mimeType: "image/jpeg",
      size: 12345,
      width: 800,
      height: 600,
      alt: "A cat",
      caption: null,
      storageKey,
      status: "ready",
      // EmDash's media item fields: no hash for a JSON registration, no placeholders, and the
      // token that registered it (the bootstrap secret's id).
      contentHash: null,
      blurhash: null,
      dominantColor: null,
      authorId: "bootstrap",
      // No MEDIA_PUBLIC_URL: the file route, each segment of the key percent-encoded, its
      // slashes kept (EmDash's file URLs).
      url: `/_emdash/api/media/file/${storageKey.split("/").map(encodeURIComponent).join("/")}`,
      // In the library, not the trash.
      deletedAt: null,
    },
  );
  assert.match(item.createdAt, TS);
  // GET adds the item's earlier files (none yet).
  const { versions, ...got } = ok(await w.get(`/media/${item.id}`)).item;
  assert.deepEqual(versions, []);
  assert.deepEqual(got, item);

  const stored = await rows(w, "SELECT filename, mime_type, size, storage_key FROM media WHERE id = ?1", item.id);
  assert.deepEqual(stored, [{ filename: "cat photo.jpg", mime_type: "image/jpeg", size: 12345, storage_key: storageKey }]);

  // Optional fields may be omitted or null.
  const bare = ok(await w.post("/media", { filename: "a.pdf", mimeType: "application/pdf", storageKey: uniq("a"), size: null }), 201).item;
  assert.equal(bare.size, null);
  assert.equal(bare.width, null);
  assert.equal(bare.height, null);
  assert.equal(bare.alt, null);
});

test("size 2**33 + 5 and the largest safe integer round-trip exactly", async () => {
  const big = 2 ** 33 + 5;
  const item = await createMedia({ size: big });
  assert.equal(item.size, big);
  assert.equal(ok(await w.get(`/media/${item.id}`)).item.size, big);
  const listed = ok(await w.get("/media?limit=100")).items.find((m) => m.id === item.id);
  assert.equal(listed.size, big);
  const [row] = await rows(w, "SELECT size, typeof(size) AS t FROM media WHERE id = ?1", item.id);
  assert.equal(row.size, big);
  assert.equal(row.t, "integer");

  const max = Number.MAX_SAFE_INTEGER;
  const m2 = await createMedia({ size: max });
  assert.equal(m2.size, max);
  assert.equal(ok(await w.get(`/media/${m2.id}`)).item.size, max);
  // Beyond 2^53 − 1 the value cannot round-trip and is refused.
  validation(await w.post("/media", { filename: "x", mimeType: "image/png", storageKey: uniq("k"), size: 2 ** 53 }), "size");
});

test("list pages newest first with a cursor; pages never repeat or skip", async () => {
  // Other tests' media share this worker and are part of the listing.
  const mine = [];
  for (let i = 0; i < 5; i++) mine.push((await createMedia({ filename: `p${i}.png`, mimeType: "image/png" })).id);
  const all = ok(await w.get("/media?limit=100"));
  // The last page has no cursor (EmDash's list leaves it out).
  assert.equal("nextCursor" in all, false);
  for (const id of mine) assert.ok(all.items.some((m) => m.id === id));
  for (let i = 1; i < all.items.length; i++) {
    const a = all.items[i - 1];
    const b = all.items[i];
    assert.ok(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id), "order");
  }
  const seen = [];
  let cursor;
  let pages = 0;
  do {
    const q = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
    const page = ok(await w.get(`/media${q}`));
    pages += 1;
    assert.ok(page.items.length <= 2);
    if (page.nextCursor !== undefined) assert.equal(page.items.length, 2);
    seen.push(...page.items.map((m) => m.id));
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages < 100);
  assert.equal(cursor, undefined);
  assert.deepEqual(seen, all.items.map((m) => m.id));
  assert.equal(pages, Math.max(1, Math.ceil(all.items.length / 2)));

  // Default limit is 50 and there is no further page when everything fits.
  const def = ok(await w.get("/media"));
  assert.deepEqual(def.items.map((m) => m.id), all.items.slice(0, 50).map((m) => m.id));

  for (const c of ["%%%", Buffer.from("{}").toString("base64url")]) {
    err(await w.get(`/media?cursor=${encodeURIComponent(c)}`), 400, "INVALID_CURSOR");
  }
  for (const l of ["0", "101", "abc"]) validation(await w.get(`/media?limit=${l}`), "limit");
});

test("delete answers 200 and moves the media to the trash; a permanent delete makes it 404 NOT_FOUND", async () => {
  const m = await createMedia();
  assert.deepEqual(ok(await w.del(`/media/${m.id}`)), { deleted: true, id: m.id });
  assert.ok(!ok(await w.get("/media?limit=100")).items.some((i) => i.id === m.id), "no longer listed");
  assert.ok(ok(await w.get(`/media/${m.id}`)).item.deletedAt, "in the trash");
  assert.deepEqual(ok(await w.del(`/media/${m.id}`)), { deleted: true, id: m.id }, "a retry answers the same");
  assert.deepEqual(ok(await w.del(`/media/${m.id}?permanent=true`)), { deleted: true, id: m.id });
  err(await w.get(`/media/${m.id}`), 404, "NOT_FOUND");
  err(await w.del(`/media/${m.id}`), 404, "NOT_FOUND");
  assert.deepEqual(await rows(w, "SELECT id FROM media WHERE id = ?1", m.id), []);
  err(await w.get("/media/does-not-exist"), 404, "NOT_FOUND");
  // The storage key is free again.
  const again = await createMedia({ storageKey: m.storageKey });
  assert.notEqual(again.id, m.id);
});

test("a duplicate storageKey answers 409 CONFLICT naming the item that holds it", async () => {
  const m = await createMedia();
  const taken = err(await w.post("/media", { filename: "other.jpg", mimeType: "image/jpeg", storageKey: m.storageKey }), 409, "CONFLICT");
  assert.deepEqual(taken.details, { id: m.id, storageKey: m.storageKey });
  assert.equal((await rows(w, "SELECT count(*) AS n FROM media WHERE storage_key = ?1", m.storageKey))[0].n, 1);
});

test("invalid media input answers 400 with every issue located", async () => {
  const key = uniq("bad");
  validation(await w.post("/media", { mimeType: "image/png", storageKey: key }), "filename");
  validation(await w.post("/media", { filename: "", mimeType: "image/png", storageKey: key }), "filename");
  validation(await w.post("/media", { filename: "a.png", storageKey: key }), "mimeType");
  for (const mimeType of ["png", "image png", "im", 5]) {
    validation(await w.post("/media", { filename: "a.png", mimeType, storageKey: key }), "mimeType");
  }
  validation(await w.post("/media", { filename: "a.png", mimeType: "image/png" }), "storageKey");
  validation(await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: "a\u0000b" }), "storageKey");
  for (const size of [-1, 1.5, "12"]) {
    validation(await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: key, size }), "size");
  }
  validation(await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: key, width: 1_000_001 }), "width");
  validation(await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: key, height: -5 }), "height");
  validation(await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: key, caption: "no" }), "caption");
  validation(
    await w.post("/media", { mimeType: "nope", storageKey: 1, extra: true }),
    "filename",
    "mimeType",
    "storageKey",
    "extra",
  );
  err(await w.call("POST", "/media", { rawBody: "{oops", headers: { "content-type": "application/json" } }), 400, "INVALID_JSON");
  assert.deepEqual(await rows(w, "SELECT id FROM media WHERE storage_key = ?1", key), []);
});
