// Media files on the real worker with Miniflare's local R2 and D1, served on a port so that
// EmDash's own client (`EmDashClient` from the `emdash` npm package) uploads through real HTTP:
// multipart upload, dedup, allowlist, size and magic-byte refusals, dimensions from real PNG and
// JPEG files, files larger than one part streamed into an R2 multipart upload, a body that ends
// before its form does, the file route (ETag/304/Range/416/404, HEAD answering as GET without a
// body), safe delete removing the object, and the storage sweep reclaiming an object left behind by
// a crash only after the grace period, never an object a media row references. The bucket may be
// shared: every object the worker stores carries its marker, and an object without it (put by the
// probe, as another application would) is never swept, served or deleted.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Miniflare } from "miniflare";
import { EmDashClient } from "emdash/client";
import jpeg from "jpeg-js";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb, ProbeBucket, dispatchTo, scheduledOn, png } from "./harness.mjs";

const LIMIT = 64 * 1024;
const LARGE_LIMIT = 32 * 1024 * 1024;
const PART = 5 * 1024 * 1024;
let mf;
let url;
let db;
let bucket;
/** The custom metadata every object the worker stores carries. */
const MARKER = { "emdash-media-worker": "1" };

before(async () => {
  const shared = { r2Buckets: { MEDIA_BUCKET: "media-files-test" } };
  const vars = { MEDIA_MAX_UPLOAD_BYTES: String(LIMIT), MEDIA_PUBLIC_URL: "", SITE_URL: "https://site.example" };
  mf = new Miniflare({
    port: 0,
    host: "127.0.0.1",
    workers: [
      { name: "main", ...workerOptions(vars), ...shared },
      { name: "nograce", ...workerOptions({ ...vars, MEDIA_STORAGE_GRACE_HOURS: "0" }), ...shared },
      { name: "crashdelete", ...workerOptions({ ...vars, MEDIA_USAGE_FAULT_STORAGE_DELETE: "1" }), ...shared },
      { name: "large", ...workerOptions({ ...vars, MEDIA_MAX_UPLOAD_BYTES: String(LARGE_LIMIT) }), ...shared },
      probeWorker(shared),
    ],
    unsafeTriggerHandlers: true,
  });
  url = (await mf.ready).origin;
  db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();
  bucket = new ProbeBucket(mf);
});

after(() => mf?.dispose());

const client = () => new EmDashClient({ baseUrl: url, token: ADMIN_TOKEN });
const keys = async () => (await bucket.keys()).sort();
const api = async (method, path, { worker = "main", headers = {}, body } = {}) => {
  if (body instanceof FormData) {
    // Encoded here, so that the form reaches a worker called directly with its content type.
    const encoded = new Request("http://localhost/", { method: "POST", body });
    headers = { "content-type": encoded.headers.get("content-type"), ...headers };
    body = Buffer.from(await encoded.arrayBuffer());
  }
  const init = { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers }, body };
  const res = worker === "main" ? await fetch(`${url}/_emdash/api${path}`, init) : await dispatchTo(mf, worker, `http://localhost/_emdash/api${path}`, init);
  return res;
};
const tick = (worker) => scheduledOn(mf, worker);

/** A real baseline JPEG of w×h encoded by jpeg-js. */
function jpg(w, h) {
  const data = Buffer.alloc(w * h * 4, 128);
  return new Uint8Array(jpeg.encode({ data, width: w, height: h }, 80).data);
}

test("EmDash's client uploads a PNG: stored in R2, registered with its header's dimensions, and deduplicated", async () => {
  const item = await client().mediaUpload(png(37, 21, 1), "photo.png", { alt: "A photo", caption: "Taken today" });
  assert.equal(item.mimeType, "image/png");
  assert.equal(item.filename, "photo.png");
  assert.deepEqual([item.width, item.height], [37, 21]);
  assert.equal(item.alt, "A photo");
  assert.equal(item.caption, "Taken today");
  assert.match(item.storageKey, /^[0-9a-f]{32}\.png$/);
  assert.equal(item.url, `/_emdash/api/media/file/${item.storageKey}`);
  assert.ok((await keys()).includes(item.storageKey));
  const stored = await bucket.get(item.storageKey);
  assert.equal(stored.contentType, "image/png");
  assert.deepEqual(stored.bytes, png(37, 21, 1));
  assert.deepEqual(stored.customMetadata, MARKER, "a single put carries the marker");

  // The same bytes again: the existing item, nothing stored.
  const before = await keys();
  const res = await api("POST", "/media", { body: form([["file", new Blob([png(37, 21, 1)], { type: "image/png" }), "again.png"]]) });
  assert.equal(res.status, 200);
  const again = (await res.json()).data;
  assert.equal(again.deduplicated, true);
  assert.equal(again.item.id, item.id);
  assert.deepEqual(await keys(), before);
  assert.equal((await client().mediaUpload(png(37, 21, 1), "third.png")).id, item.id, "the client sees the same item");
});

function form(parts) {
  const f = new FormData();
  for (const [name, value, filename] of parts) filename ? f.append(name, value, filename) : f.append(name, value);
  return f;
}

test("a real JPEG's dimensions come from its header", async () => {
  const item = await client().mediaUpload(jpg(64, 48), "photo.jpg");
  assert.equal(item.mimeType, "image/jpeg");
  assert.deepEqual([item.width, item.height], [64, 48]);
  assert.match(item.storageKey, /\.jpg$/);
});

test("refused uploads say why and leave no object behind", async () => {
  const before = await keys();
  const oversized = new Uint8Array(LIMIT + 16 * 1024);
  oversized.set(png(2, 2, 4));
  const cases = [
    [new Blob(["<html><script>alert(1)</script></html>"], { type: "text/html" }), "x.html", 400, "INVALID_TYPE"],
    [new Blob(["%PDF-1.7 but called a png"], { type: "image/png" }), "x.png", 400, "INVALID_TYPE"],
    [new Blob([png(2, 2, 3)], { type: "image/jpeg" }), "x.jpg", 400, "INVALID_TYPE"],
    // Over the file limit but within the body limit (file + 64 KiB of framing): read whole, so
    // the answer cannot race the upload (the early refusal is the next test's).
    [new Blob([oversized], { type: "image/png" }), "big.png", 413, "PAYLOAD_TOO_LARGE"],
  ];
  for (const [blob, name, status, code] of cases) {
    const res = await api("POST", "/media", { body: form([["file", blob, name]]) });
    assert.equal(res.status, status, name);
    assert.equal((await res.json()).error.code, code, name);
  }
  assert.ok(oversized.length > LIMIT && oversized.length < 2 * LIMIT, "the big one is over the file limit only");
  // The client surfaces the refusal.
  await assert.rejects(client().mediaUpload(new TextEncoder().encode("<svg onload=alert(1)/>"), "x.svg"), /INVALID_TYPE|type/i);
  assert.deepEqual(await keys(), before);
});

/** The head of a multipart form whose one part is a file of `type` (the file's bytes follow). */
const BOUNDARY = "----media-usage-test-boundary";
const formHead = (type = "image/png", name = "big.png") =>
  Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n`);
const formTail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/**
 * Sends a POST /media to the served worker: `head`, then `count` copies of `chunk` written as
 * the connection drains, stopping as soon as an answer arrives, then `tail`. Resolves with the
 * status (or "reset" when the worker closed the connection while the client was still sending),
 * the body and how many chunks were sent.
 */
function streamUpload({ head, chunk, count, tail = Buffer.alloc(0), headers = {} }) {
  const target = new URL(`${url}/_emdash/api/media`);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}`, ...headers } },
      (res) => {
        answered = true;
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          req.destroy();
          resolve({ status: res.statusCode, text, sent });
        });
      },
    );
    req.on("error", (e) => (answered ? undefined : e.code === "ECONNRESET" || e.code === "EPIPE" ? resolve({ status: "reset", text: "", sent }) : reject(e)));
    req.write(head);
    const write = () => {
      while (!answered && sent < count) {
        sent += 1;
        if (!req.write(chunk)) return req.once("drain", write);
      }
      if (!answered) req.end(tail);
    };
    write();
  });
}

test("an upload over the limit is refused before its whole body is read", async () => {
  // A PNG of up to 64 MiB in 16 KiB chunks, chunked (no declared length): the answer comes
  // before half of it is sent.
  const chunk = Buffer.alloc(16 * 1024);
  chunk.set(png(2, 2, 9));
  const total = 4096;
  const { status, text, sent } = await streamUpload({ head: formHead(), chunk, count: total, tail: formTail, headers: { "transfer-encoding": "chunked" } });
  assert.ok(status === 413 || status === "reset", `${status} ${text}`);
  if (status === 413) assert.equal(JSON.parse(text).error.code, "PAYLOAD_TOO_LARGE");
  assert.ok(sent < total / 2, `${sent} of ${total} chunks were sent before the answer`);
  const target = new URL(`${url}/_emdash/api/media`);
  // A declared length over the limit is refused at once: the answer comes before any body byte.
  const declared = await new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "multipart/form-data; boundary=x", "content-length": String(LIMIT * 1024) } },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          req.destroy();
          resolve({ status: res.statusCode, text });
        });
      },
    );
    req.on("error", reject);
    req.flushHeaders();
  });
  assert.equal(declared.status, 413, declared.text);
  assert.equal(JSON.parse(declared.text).error.code, "PAYLOAD_TOO_LARGE");
});

/** `len` bytes of a PNG: a real 8×8 image followed by varied filler, the same for the same seed. */
function bigPng(len, seed) {
  const bytes = new Uint8Array(len);
  for (let i = 0; i < len; i++) bytes[i] = (i * 31 + seed) % 251;
  bytes.set(png(8, 8, seed));
  return bytes;
}

test("a file larger than a part streams into an R2 multipart upload and is served whole and in ranges", async () => {
  const bytes = bigPng(2 * PART + 777_777, 21);
  const body = form([["file", new Blob([bytes], { type: "image/png" }), "large.png"], ["alt", "Large"]]);
  const res = await api("POST", "/media", { worker: "large", body });
  assert.equal(res.status, 201, await res.clone().text());
  const { item } = (await res.json()).data;
  assert.deepEqual([item.width, item.height, item.size], [8, 8, bytes.length]);
  const stored = await bucket.get(item.storageKey);
  assert.equal(stored.size, bytes.length);
  assert.equal(stored.contentType, "image/png");
  assert.deepEqual(stored.customMetadata, MARKER, "a multipart upload carries the marker");
  assert.deepEqual(stored.bytes, bytes, "the object is the file, byte for byte");
  // A range across the first part boundary.
  const path = `${url}/_emdash/api/media/file/${item.storageKey}`;
  const across = await fetch(path, { headers: { range: `bytes=${PART - 3}-${PART + 2}` } });
  assert.equal(across.status, 206);
  assert.deepEqual(new Uint8Array(await across.arrayBuffer()), bytes.slice(PART - 3, PART + 3));

  // The same bytes again: the existing item, and no second object.
  const before = await keys();
  const again = await api("POST", "/media", { worker: "large", body: form([["file", new Blob([bytes], { type: "image/png" }), "again.png"]]) });
  assert.equal(again.status, 200);
  const data = (await again.json()).data;
  assert.equal(data.deduplicated, true);
  assert.equal(data.item.id, item.id);
  assert.deepEqual(await keys(), before);
});

test("a large upload refused for its content after the first part is answered, not reset, and stores nothing", async () => {
  const before = await keys();
  // 20 MiB declared as a PNG whose content is a PDF, sent with its length as browsers do.
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  const head = Buffer.concat([formHead("image/png", "fake.png"), Buffer.from("%PDF-1.7\n")]);
  const count = 20;
  const length = head.length + count * chunk.length + formTail.length;
  const { status, text } = await streamUpload({ head, chunk, count, tail: formTail, headers: { "MF-Route-Override": "large", "content-length": String(length) } });
  assert.equal(status, 400, text);
  assert.equal(JSON.parse(text).error.code, "INVALID_TYPE");
  assert.deepEqual(await keys(), before);
});

test("a body that ends before its form does, after parts were stored, leaves no object and no row", async () => {
  const before = await keys();
  const [{ n: rowsBefore }] = (await db.prepare("SELECT count(*) AS n FROM media").all()).results;
  // Twelve MiB of a PNG, then the body simply ends: no closing boundary.
  const chunk = Buffer.from(bigPng(1024 * 1024, 22));
  const res = await dispatchTo(mf, "large", "http://localhost/_emdash/api/media", {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
    body: Buffer.concat([formHead(), ...Array(12).fill(chunk)]),
  });
  assert.equal(res.status, 400);
  const error = (await res.json()).error;
  assert.equal(error.code, "VALIDATION_ERROR");
  assert.match(error.message, /ended before the form/);
  assert.deepEqual(await keys(), before, "no object");
  const [{ n: rowsAfter }] = (await db.prepare("SELECT count(*) AS n FROM media").all()).results;
  assert.equal(rowsAfter, rowsBefore, "no row");
});

test("without MEDIA_PUBLIC_URL, sitemaps list uploaded images at the file route of the worker's origin", async () => {
  const item = await client().mediaUpload(png(5, 5, 30), "hero.png");
  const external = (await (await api("POST", "/media", { headers: { "content-type": "application/json" }, body: JSON.stringify({ filename: "e.png", mimeType: "image/png", storageKey: "elsewhere/e.png" }) })).json()).data.item;
  const schema = await api("POST", "/schema/collections", { headers: { "content-type": "application/json" }, body: JSON.stringify({ slug: "gallery", label: "Gallery", fields: [{ slug: "hero", type: "image" }, { slug: "icon", type: "image" }] }) });
  assert.equal(schema.status, 201);
  const entry = await api("POST", "/content/gallery", { headers: { "content-type": "application/json" }, body: JSON.stringify({ slug: "one", status: "published", data: { hero: item.id, icon: external.id } }) });
  assert.equal(entry.status, 201);
  const xml = await (await fetch(`${url}/sitemap-gallery.xml`)).text();
  assert.ok(xml.includes(`<image:loc>${url}/_emdash/api/media/file/${item.storageKey}</image:loc>`), xml);
  assert.ok(!xml.includes("elsewhere"), "media registered by JSON is stored elsewhere");
  const image = await fetch(`${url}/_emdash/api/media/file/${item.storageKey}`);
  assert.equal(image.status, 200, "the listed URL serves the image");
});

/**
 * GETs and HEADs `path` with `headers`: both must answer the same status and headers (`Content-Length`
 * included), the HEAD without a body. Resolves with the GET's response and its bytes. The local
 * HTTP server compresses text types by itself when asked to, so the file is asked for as is.
 */
async function getAndHead(path, headers = {}) {
  const init = { headers: { "accept-encoding": "identity", ...headers } };
  const get = await fetch(path, init);
  const bytes = new Uint8Array(await get.arrayBuffer());
  const head = await fetch(path, { ...init, method: "HEAD" });
  const headBytes = new Uint8Array(await head.arrayBuffer());
  const label = `${path} ${JSON.stringify(headers)}`;
  assert.equal(head.status, get.status, label);
  assert.deepEqual(Object.fromEntries(head.headers), Object.fromEntries(get.headers), label);
  assert.equal(headBytes.length, 0, `${label}: HEAD has no body`);
  if (get.status !== 304 && get.status < 400) assert.equal(get.headers.get("content-length"), String(bytes.length), label);
  return { res: get, bytes };
}

test("stored files are served publicly with an entity tag, 304, ranges and 416, by GET and HEAD alike", async () => {
  const bytes = png(9, 9, 7);
  const item = await client().mediaUpload(bytes, "served.png");
  const path = `${url}/_emdash/api/media/file/${item.storageKey}`;
  const { res } = await getAndHead(path);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "image/png");
  assert.equal(res.headers.get("cache-control"), "public, max-age=31536000, immutable");
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  assert.equal(res.headers.get("content-security-policy"), "sandbox");
  assert.equal(res.headers.get("content-disposition"), null, "a PNG is shown inline");
  assert.equal(res.headers.get("x-media-usage-cost"), null);
  assert.equal(res.headers.get("content-length"), String(bytes.length));
  assert.equal(res.headers.get("accept-ranges"), "bytes");
  const etag = res.headers.get("etag");
  assert.ok(etag);
  const cached = await getAndHead(path, { "if-none-match": etag });
  assert.equal(cached.res.status, 304);
  assert.notEqual(cached.res.headers.get("cache-control"), "public, max-age=31536000, immutable");
  assert.equal(cached.res.headers.get("content-security-policy"), "sandbox");
  const part = await getAndHead(path, { range: "bytes=1-3" });
  assert.equal(part.res.status, 206);
  assert.equal(part.res.headers.get("content-range"), `bytes 1-3/${bytes.length}`);
  assert.equal(part.res.headers.get("content-length"), "3");
  assert.deepEqual(part.bytes, bytes.slice(1, 4));
  const tail = await getAndHead(path, { range: "bytes=-4" });
  assert.deepEqual(tail.bytes, bytes.slice(-4));
  const bad = await getAndHead(path, { range: `bytes=${bytes.length}-` });
  assert.equal(bad.res.status, 416);
  assert.equal(bad.res.headers.get("content-range"), `bytes */${bytes.length}`);
  assert.notEqual(bad.res.headers.get("cache-control"), "public, max-age=31536000, immutable");
  // Several ranges, or another unit: ignored (RFC 9110 §14.2), the whole file.
  for (const range of ["bytes=0-1,3-4", "items=0-1"]) {
    const whole = await getAndHead(path, { range });
    assert.equal(whole.res.status, 200, range);
    assert.equal(whole.res.headers.get("content-range"), null, range);
    assert.equal(whole.res.headers.get("cache-control"), "public, max-age=31536000, immutable", range);
    assert.deepEqual(whole.bytes, bytes, range);
  }
  const missing = await fetch(`${url}/_emdash/api/media/file/0000.png`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, "NOT_FOUND");
  assert.equal((await fetch(`${url}/_emdash/api/media/file/0000.png`, { method: "HEAD" })).status, 404);
  // Another method names both.
  const put = await fetch(path, { method: "PUT", body: "x" });
  assert.equal(put.status, 405);
  assert.equal(put.headers.get("allow"), "GET, HEAD");
});

test("SVG, PNG and PDF files carry their headers by GET and HEAD alike: only raster images and PDF inline", async () => {
  const pngBytes = png(4, 4, 8);
  const pngItem = await client().mediaUpload(pngBytes, "inline.png");
  const pdfBytes = new TextEncoder().encode("%PDF-1.4\n% a small document\n%%EOF\n");
  const pdfItem = await client().mediaUpload(pdfBytes, "doc.pdf");
  assert.equal(pdfItem.mimeType, "application/pdf");
  // Uploads refuse SVG (its content has no magic bytes to check); an SVG the worker stored with
  // another allowlist is stood for by an object carrying the marker, and the uploaded row that
  // names it (a file is served only while an uploaded row outside the trash names it: a JSON
  // registration of its key does not make it served).
  const svgBytes = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
  await bucket.put("stored-earlier.svg", svgBytes, { contentType: "image/svg+xml", customMetadata: MARKER });
  assert.equal((await fetch(`${url}/_emdash/api/media/file/stored-earlier.svg`)).status, 404, "while no row names it");
  const registered = await api("POST", "/media", {
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ filename: "earlier.svg", mimeType: "image/svg+xml", storageKey: "stored-earlier.svg" }),
  });
  assert.equal(registered.status, 201);
  assert.equal((await fetch(`${url}/_emdash/api/media/file/stored-earlier.svg`)).status, 404, "while only a JSON registration names it");
  await db.prepare("UPDATE media SET content_hash = 'svg-uploaded-earlier' WHERE storage_key = 'stored-earlier.svg'").run();
  const cases = [
    [pngItem.storageKey, pngBytes, "image/png", null],
    [pdfItem.storageKey, pdfBytes, "application/pdf", null],
    ["stored-earlier.svg", svgBytes, "image/svg+xml", "attachment"],
  ];
  for (const [key, bytes, type, disposition] of cases) {
    const path = `${url}/_emdash/api/media/file/${key}`;
    const { res, bytes: got } = await getAndHead(path);
    assert.equal(res.status, 200, key);
    assert.deepEqual(got, bytes, key);
    assert.equal(res.headers.get("content-type"), type, key);
    assert.equal(res.headers.get("content-disposition"), disposition, key);
    assert.equal(res.headers.get("content-security-policy"), "sandbox", key);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff", key);
    assert.equal(res.headers.get("accept-ranges"), "bytes", key);
    assert.equal(res.headers.get("content-length"), String(bytes.length), key);
    assert.equal(res.headers.get("cache-control"), "public, max-age=31536000, immutable", key);
    const etag = res.headers.get("etag");
    const part = await getAndHead(path, { range: "bytes=0-3" });
    assert.equal(part.res.status, 206, key);
    assert.equal(part.res.headers.get("content-disposition"), disposition, key);
    assert.deepEqual(part.bytes, bytes.slice(0, 4), key);
    for (const [headers, status] of [[{ "if-none-match": etag }, 304], [{ range: `bytes=${bytes.length + 5}-` }, 416]]) {
      const { res: r } = await getAndHead(path, headers);
      assert.equal(r.status, status, `${key} ${status}`);
      assert.equal(r.headers.get("cache-control"), "public, max-age=300", `${key} ${status}: not the year`);
      assert.equal(r.headers.get("content-security-policy"), "sandbox", `${key} ${status}`);
    }
    const several = await getAndHead(path, { range: "bytes=0-1,2-3" });
    assert.equal(several.res.status, 200, `${key}: several ranges are the whole file`);
    assert.deepEqual(several.bytes, bytes, key);
  }
});

test("a permanent delete removes the object; one that dies before the object delete is swept only after the grace period", async () => {
  const gone = await client().mediaUpload(png(3, 3, 11), "gone.png");
  // EmDash's client deletes into the trash: the object stays (not served) until a permanent delete.
  await client().mediaDelete(gone.id);
  assert.ok((await keys()).includes(gone.storageKey), "kept in the trash");
  assert.equal((await api("DELETE", `/media/${gone.id}?permanent=true`)).status, 200);
  assert.ok(!(await keys()).includes(gone.storageKey), "deleted before the response");

  // A crash between the row delete and the object delete leaves the object behind.
  const orphan = await client().mediaUpload(png(3, 3, 12), "orphan.png");
  const kept = await client().mediaUpload(png(3, 3, 13), "kept.png");
  const res = await api("DELETE", `/media/${orphan.id}?permanent=true`, { worker: "crashdelete" });
  assert.equal(res.status, 200);
  assert.equal((await api("GET", `/media/${orphan.id}`)).status, 404, "the row is gone");
  assert.ok((await keys()).includes(orphan.storageKey), "the object stayed behind");

  // Within the grace period (24 h by default) ticks leave it alone: a pass lists the bucket, then
  // the sweep rests for the grace period.
  await db.prepare("UPDATE _emdash_media_storage_sweep SET cursor = NULL, next_pass_ms = NULL").run();
  const sweeps = [];
  for (let i = 0; i < 3; i++) {
    await tick("main");
    const [log] = (await db.prepare("SELECT lane, details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT 1").all()).results;
    sweeps.push(JSON.parse(log.details));
  }
  assert.ok((await keys()).includes(orphan.storageKey));
  assert.ok(sweeps[0].storageOperations >= 1, JSON.stringify(sweeps[0]));
  assert.equal(sweeps[2].storageOperations, 0, JSON.stringify(sweeps[2]));
  assert.ok(sweeps.every((d) => d.objectsDeleted === 0));

  // After it (a grace of 0 here), the next tick sweeps the orphan and nothing a row references.
  await db.prepare("UPDATE _emdash_media_storage_sweep SET cursor = NULL, next_pass_ms = NULL").run();
  await tick("nograce");
  const left = await keys();
  assert.ok(!left.includes(orphan.storageKey), "swept");
  assert.ok(left.includes(kept.storageKey), "a referenced object is never swept");
  const rows = (await db.prepare("SELECT storage_key FROM media").all()).results.map((r) => r.storage_key);
  for (const k of rows.filter((k) => /^[0-9a-f]{32}\./.test(k))) assert.ok(left.includes(k), `${k} is referenced and kept`);
});

test("a bucket shared with other files: foreign objects survive ten sweeps at grace 0, are never served, and a JSON registration's delete leaves them", async () => {
  const foreign = png(6, 6, 40);
  await bucket.put("theirs/photo.png", foreign, { contentType: "image/png" });
  await bucket.put("theirs/tagged.png", png(6, 6, 41), { contentType: "image/png", customMetadata: { owner: "another-app" } });
  await bucket.put("theirs/registered.png", png(6, 6, 42), { contentType: "image/png" });
  await bucket.put("theirs/deleted.png", png(6, 6, 43), { contentType: "image/png" });
  const json = (key) => api("POST", "/media", { headers: { "content-type": "application/json" }, body: JSON.stringify({ filename: "f.png", mimeType: "image/png", storageKey: key }) });
  const registered = (await (await json("theirs/registered.png")).json()).data.item;
  const deleted = (await (await json("theirs/deleted.png")).json()).data.item;
  // A JSON registration's delete, to the trash or for good, never deletes the object it names.
  assert.equal((await api("DELETE", `/media/${deleted.id}?force=true`)).status, 200);
  assert.equal((await api("DELETE", `/media/${deleted.id}?permanent=true`)).status, 200);
  assert.ok((await keys()).includes("theirs/deleted.png"));

  // An upload from before the marker existed: its object has none, its row was uploaded.
  const legacy = await client().mediaUpload(png(6, 6, 44), "legacy.png");
  await bucket.put(legacy.storageKey, png(6, 6, 44), { contentType: "image/png" });
  // And an orphan the worker stored (its row delete "crashed" before the object delete).
  const orphan = await client().mediaUpload(png(6, 6, 45), "orphan.png");
  assert.equal((await api("DELETE", `/media/${orphan.id}?permanent=true`, { worker: "crashdelete" })).status, 200);

  // Only objects the worker stored are served: a foreign key is 404 by GET and HEAD, even when a
  // JSON registration names it; the legacy upload is still served.
  for (const key of ["theirs/photo.png", "theirs/tagged.png", "theirs/registered.png", "theirs/deleted.png"]) {
    const path = `${url}/_emdash/api/media/file/${encodeURIComponent(key)}`;
    const get = await fetch(path);
    assert.equal(get.status, 404, key);
    assert.equal((await get.json()).error.code, "NOT_FOUND", key);
    const head = await fetch(path, { method: "HEAD" });
    assert.equal(head.status, 404, key);
    assert.equal((await head.arrayBuffer()).byteLength, 0, key);
  }
  const served = await getAndHead(`${url}/_emdash/api/media/file/${legacy.storageKey}`);
  assert.equal(served.res.status, 200);
  assert.deepEqual(served.bytes, png(6, 6, 44));

  // Ten ticks with no grace at all: the marked orphan goes, every foreign object stays.
  await db.prepare("UPDATE _emdash_media_storage_sweep SET cursor = NULL, next_pass_ms = NULL").run();
  for (let i = 0; i < 10; i++) await tick("nograce");
  const left = await keys();
  assert.ok(!left.includes(orphan.storageKey), "the worker's own orphan was swept");
  for (const key of ["theirs/photo.png", "theirs/tagged.png", "theirs/registered.png", "theirs/deleted.png", legacy.storageKey]) {
    assert.ok(left.includes(key), `${key} survived`);
  }
  assert.deepEqual((await bucket.get("theirs/photo.png")).bytes, foreign, "untouched");
  assert.equal((await fetch(`${url}/_emdash/api/media/file/theirs%2Fphoto.png`)).status, 404);
  assert.equal((await fetch(`${url}/_emdash/api/media/file/theirs%2Fphoto.png`, { method: "HEAD" })).status, 404);
  assert.equal((await api("DELETE", `/media/${registered.id}`)).status, 200);
  assert.ok((await keys()).includes("theirs/registered.png"), "a safe delete of a JSON registration leaves the object");
});

/** Distinct images (their bytes differ: uploads deduplicate by content). */
let seed = 150;
/** A worker-stored image used by an entry of a fresh collection, and `n` unused ones; every write
 * projected. */
async function library(n) {
  const slug = `lib${Math.random().toString(36).slice(2, 8)}`;
  const create = await api("POST", "/schema/collections", {
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ slug, label: slug, fields: [{ slug: "hero", type: "image" }] }),
  });
  assert.equal(create.status, 201);
  const used = await client().mediaUpload(png(4, 4, seed++), `used-${slug}.png`);
  const unused = [];
  for (let i = 0; i < n; i++) unused.push(await client().mediaUpload(png(4, 4, seed++), `unused-${slug}-${i}.png`));
  const entry = await api("POST", `/content/${slug}`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ slug: "e", data: { hero: used.id } }),
  });
  assert.equal(entry.status, 201);
  return { slug, used, unused, entryId: (await entry.json()).data.item.id };
}

const listAll = async (query) => {
  const items = [];
  let cursor = null;
  for (let i = 0; i < 100; i++) {
    const res = await api("GET", `/media?limit=100${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    assert.equal(res.status, 200, await res.clone().text());
    const page = (await res.json()).data;
    items.push(...page.items);
    if (!page.nextCursor) return items;
    cursor = page.nextCursor;
  }
  throw new Error("no end");
};
const fileStatus = async (item) => (await fetch(`${url}/_emdash/api/media/file/${item.storageKey}`)).status;

test("the library: usage=unused lists exactly what the index proves unused, with usage counts, and 409 while coverage is incomplete", async () => {
  const lib = await library(3);
  const unused = new Set((await listAll("&usage=unused")).map((m) => m.id));
  for (const m of lib.unused) assert.ok(unused.has(m.id), `${m.filename} is unused`);
  assert.ok(!unused.has(lib.used.id), "the used image is not listed as unused");
  const used = await listAll("&usage=used&include=usage");
  const mine = used.find((m) => m.id === lib.used.id);
  assert.ok(mine, "listed as used");
  assert.equal(mine.usageCount, 1);
  assert.equal(mine.usageCountCapped, false);
  assert.ok(used.every((m) => m.usageCount > 0 && !unused.has(m.id)), "used and unused are disjoint");
  // Every item matches the index's own answer.
  for (const m of [lib.used, ...lib.unused]) {
    const usage = (await (await api("GET", `/media/${m.id}/usage`)).json()).data;
    assert.equal(usage.items.length > 0, !unused.has(m.id), m.filename);
  }
  // By file name.
  const named = await listAll(`&search=${encodeURIComponent(`UNUSED-${lib.slug}`)}`);
  assert.deepEqual(named.map((m) => m.id).sort(), lib.unused.map((m) => m.id).sort());
  // A write the index has not seen yet (behind the API: the capture trigger queues it).
  await db.prepare(`UPDATE "ec_${lib.slug}" SET hero = ?1`).bind(lib.unused[0].id).run();
  const refused = await api("GET", "/media?usage=unused");
  assert.equal(refused.status, 409);
  assert.equal((await refused.json()).error.code, "MEDIA_USAGE_COVERAGE_INCOMPLETE");
  assert.equal((await api("GET", "/media?usage=used")).status, 200, "used is never a claim of absence");
  for (const bad of ["usage=maybe", "include=everything", "search=", "trashed=perhaps"]) {
    const res = await api("GET", `/media?${bad}`);
    assert.equal(res.status, 400, bad);
    assert.equal((await res.json()).error.code, "VALIDATION_ERROR", bad);
  }
  await tick("main");
  // The write used unused[0]: now it is used, and unused no longer lists it.
  const after = new Set((await listAll("&usage=unused")).map((m) => m.id));
  assert.ok(!after.has(lib.unused[0].id) && after.has(lib.unused[1].id));
});

test("trash: a delete hides the item and its file, restore brings both back, a permanent delete and the purge remove row and object", async () => {
  const lib = await library(3);
  const [a, b, c] = lib.unused;
  const aBytes = new Uint8Array(await (await fetch(`${url}/_emdash/api/media/file/${a.storageKey}`)).arrayBuffer());
  // EmDash's client: delete answers as before; the item moves to the trash.
  await client().mediaDelete(a.id);
  assert.equal(await fileStatus(a), 404, "a trashed file is not served");
  assert.ok((await keys()).includes(a.storageKey), "its object is kept");
  const item = (await (await api("GET", `/media/${a.id}`)).json()).data.item;
  assert.match(item.deletedAt, /^\d{4}-\d\d-\d\dT/);
  const listed = await client().mediaList({ limit: 100 });
  assert.ok(!listed.items.some((m) => m.id === a.id), "EmDash's mediaList no longer shows it");
  assert.ok((await listAll("&trashed=true")).some((m) => m.id === a.id), "the trash does");
  // A retry answers as the first try.
  assert.equal((await api("DELETE", `/media/${a.id}`)).status, 200);
  // Restore: the same id and URL, served again.
  const restored = await api("POST", `/media/${a.id}/restore`);
  assert.equal(restored.status, 200);
  const back = (await restored.json()).data.item;
  assert.equal(back.deletedAt, null);
  assert.equal(back.url, a.url);
  assert.equal(await fileStatus(a), 200);
  assert.ok((await client().mediaList({ limit: 100 })).items.some((m) => m.id === a.id));
  assert.equal((await api("POST", "/media/no-such-media/restore")).status, 404);

  // A used item: the safe delete refuses; force trashes it, and "Used in" still shows the entry.
  const inUse = await api("DELETE", `/media/${lib.used.id}`);
  assert.equal(inUse.status, 409);
  assert.equal((await inUse.json()).error.code, "MEDIA_IN_USE");
  assert.equal((await api("DELETE", `/media/${lib.used.id}?force=true`)).status, 200);
  const usedIn = (await (await api("GET", `/media/${lib.used.id}/usage`)).json()).data;
  assert.deepEqual(usedIn.items.map((e) => e.contentId), [lib.entryId]);

  // The purge, on a controlled clock: 29 days in the trash stay, 31 go (row, then object); an
  // item in use stays in the trash whatever its age.
  await api("DELETE", `/media/${b.id}`);
  await api("DELETE", `/media/${c.id}`);
  // Days pass for the trash, and for the purge's rest between passes.
  const age = async (id, days) => {
    await db.prepare(`UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-${days} days') WHERE id = ?1`).bind(id).run();
    await db.prepare("UPDATE _emdash_media_purge SET next_pass_at = NULL WHERE cursor_id IS NULL").run();
  };
  await age(b.id, 29);
  await age(c.id, 31);
  await age(lib.used.id, 31);
  await tick("main");
  assert.equal((await api("GET", `/media/${b.id}`)).status, 200, "29 days: kept");
  assert.equal((await api("GET", `/media/${c.id}`)).status, 404, "31 days: purged");
  assert.ok(!(await keys()).includes(c.storageKey), "with its object");
  assert.equal((await api("GET", `/media/${lib.used.id}`)).status, 200, "in use: never purged");
  const [log] = (await db.prepare("SELECT details FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT 1").all()).results;
  assert.ok(JSON.parse(log.details).mediaPurged >= 1, log.details);

  // A purge that dies between the row and the object leaves an object no row names: swept.
  await age(b.id, 31);
  await tick("crashdelete");
  assert.equal((await api("GET", `/media/${b.id}`)).status, 404, "the row went first");
  assert.ok((await keys()).includes(b.storageKey), "the object stayed behind");
  await db.prepare("UPDATE _emdash_media_storage_sweep SET cursor = NULL, next_pass_ms = NULL").run();
  await tick("nograce");
  assert.ok(!(await keys()).includes(b.storageKey), "swept");

  // Permanent (admins): row and object at once; an item in use only with force.
  const d = await client().mediaUpload(png(4, 4, seed++), "permanent.png");
  assert.equal((await api("DELETE", `/media/${d.id}?permanent=true`)).status, 200);
  assert.equal((await api("GET", `/media/${d.id}`)).status, 404);
  assert.ok(!(await keys()).includes(d.storageKey));
  await api("POST", `/media/${lib.used.id}/restore`);
  assert.equal((await api("DELETE", `/media/${lib.used.id}?permanent=true`)).status, 409, "in use");
  // Uploading the same bytes again brings a trashed item back.
  await api("DELETE", `/media/${a.id}`);
  const again = await client().mediaUpload(aBytes, "again.png");
  assert.equal(again.id, a.id);
  assert.equal(await fileStatus(a), 200);
});

test("bulk delete: each id trashed or refused with its reason, in one statement, and a racing write never loses its item", async () => {
  const lib = await library(4);
  const [a, b, c, d] = lib.unused;
  const bulk = (ids) => api("POST", "/media/bulk-delete", { headers: { "content-type": "application/json" }, body: JSON.stringify({ ids }) });
  const res = await bulk([a.id, lib.used.id, "no-such-media", a.id]);
  assert.equal(res.status, 200);
  const out = (await res.json()).data;
  assert.deepEqual(out.items.map((i) => [i.id, i.status]), [[a.id, "trashed"], [lib.used.id, "in_use"], ["no-such-media", "not_found"]]);
  assert.deepEqual(out.items[1].entries.map((e) => e.contentId), [lib.entryId]);
  assert.equal(out.trashed, 1);
  assert.equal(await fileStatus(a), 404);
  for (const body of [{}, { ids: [] }, { ids: "x" }, { ids: [1] }, { ids: Array.from({ length: 101 }, (_, i) => `m${i}`) }]) {
    const r = await api("POST", "/media/bulk-delete", { headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    assert.equal(r.status, 400, JSON.stringify(body));
  }
  // A content write that starts using b, in flight with the bulk delete (both orders, many times):
  // b is never lost — either refused, or trashed and then kept by the purge because it is used.
  for (const item of [b, c, d]) {
    const write = api("POST", `/content/${lib.slug}`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ slug: `w-${item.id}`, data: { hero: item.id } }),
    });
    const [w1, del] = await Promise.all([write, bulk([item.id])]);
    assert.equal(w1.status, 201);
    assert.equal(del.status, 200);
    await tick("main");
    await db.prepare(`UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-31 days') WHERE id = ?1 AND deleted_at IS NOT NULL`).bind(item.id).run();
    await db.prepare("UPDATE _emdash_media_purge SET next_pass_at = NULL WHERE cursor_id IS NULL").run();
    await tick("main");
    assert.equal((await api("GET", `/media/${item.id}`)).status, 200, `${item.filename} was kept`);
    const usage = (await (await api("GET", `/media/${item.id}/usage`)).json()).data;
    assert.equal(usage.items.length, 1, "and the index knows the entry that uses it");
  }
});
