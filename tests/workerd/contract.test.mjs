// Contract and security on the real worker: token lifecycle, 405 with Allow, public routes that
// cost little and tell nothing, refusal before the body is read, and the field limit under races.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, BASE, ADMIN_TOKEN } from "./harness.mjs";
import { ok, err, rows, uniq, validation } from "./helpers.mjs";

const w = await startWorker({ SITE_URL: "https://site.example/", MEDIA_PUBLIC_URL: "https://cdn.example/m" });
after(() => w.dispose());

test("tokens are listed without secrets, revoked at once, expire, and never exceed their minter", async () => {
  const minted = ok(await w.post("/admin/tokens", { name: "ci", role: "editor", scopes: ["media:read"], expiresAt: "2999-01-01T00:00:00Z" }), 201);
  assert.equal(minted.expiresAt, "2999-01-01T00:00:00.000Z");
  ok(await w.get("/media", { token: minted.token }));
  const listed = ok(await w.get("/admin/tokens"));
  const item = listed.items.find((t) => t.id === minted.id);
  assert.deepEqual(Object.keys(item).sort(), ["createdAt", "createdBy", "expiresAt", "id", "lastUsedAt", "name", "role", "scopes"]);
  assert.equal(item.createdBy, "bootstrap");
  assert.equal(item.role, "editor");
  assert.ok(item.lastUsedAt);
  assert.ok(!JSON.stringify(listed).includes(minted.token.slice(7)));
  // The use was recorded once; a second use within the minute writes nothing.
  const [before] = await rows(w, "SELECT last_used_at FROM _emdash_api_tokens WHERE id = ?1", minted.id);
  ok(await w.get("/media", { token: minted.token }));
  const [again] = await rows(w, "SELECT last_used_at FROM _emdash_api_tokens WHERE id = ?1", minted.id);
  assert.equal(again.last_used_at, before.last_used_at);
  // Revoke: at once, not listed, a second revoke is a 404.
  assert.deepEqual(ok(await w.del(`/admin/tokens/${minted.id}`)), { id: minted.id, revoked: 1 });
  err(await w.get("/media", { token: minted.token }), 401, "UNAUTHORIZED");
  assert.ok(!ok(await w.get("/admin/tokens")).items.some((t) => t.id === minted.id));
  err(await w.del(`/admin/tokens/${minted.id}`), 404, "NOT_FOUND");
  // Expired.
  const soon = ok(await w.post("/admin/tokens", { name: "soon", role: "editor", scopes: ["media:read"], expiresAt: "2999-01-01T00:00:00Z" }), 201);
  await w.db.prepare("UPDATE _emdash_api_tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE id = ?1").bind(soon.id).run();
  err(await w.get("/media", { token: soon.token }), 401, "UNAUTHORIZED");
  validation(await w.post("/admin/tokens", { name: "x", role: "editor", scopes: ["media:read"], expiresAt: "2000-01-01T00:00:00Z" }), "expiresAt");
  // No escalation.
  const narrow = ok(await w.post("/admin/tokens", { name: "n", role: "admin", scopes: ["admin", "media:read"] }), 201).token;
  err(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: ["schema:write"] }, { token: narrow }), 403, "INSUFFICIENT_SCOPE");
  ok(await w.post("/admin/tokens", { name: "x", role: "editor", scopes: ["media:read"] }, { token: narrow }), 201);
});

test("an undeclared method on a known path is a 405 naming it, with Allow", async () => {
  const r = await w.call("PATCH", "/media");
  err(r, 405, "METHOD_NOT_ALLOWED");
  assert.equal(r.headers.get("allow"), "GET, POST");
  assert.match(r.json.error.message, /^PATCH is not allowed/);
  const r2 = await w.call("POST", "/content/posts/abc");
  assert.equal(r2.headers.get("allow"), "GET, PUT, DELETE");
});

test("public routes carry no cost header; refusals neither; authenticated answers do", async () => {
  const health = await w.get("/health", { token: null });
  assert.equal(health.status, 200);
  assert.equal(health.headers.get("x-media-usage-cost"), null);
  const map = await w.get("http://localhost/sitemap.xml", { token: null });
  assert.equal(map.status, 200);
  assert.equal(map.headers.get("x-media-usage-cost"), null);
  const refused = await w.get("/media", { token: "nope" });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("x-media-usage-cost"), null);
  assert.ok((await w.get("/media")).headers.get("x-media-usage-cost"));
});

test("sitemaps: unknown and empty collections answer the same 404; a cached sitemap is served without D1", async () => {
  const c = uniq("sm");
  ok(await w.post("/schema/collections", { slug: c, label: c, fields: [{ slug: "title", type: "string" }] }), 201);
  // A canonical 404 is cached for a minute, so the empty collection asked for is another one.
  const e = uniq("sm_empty");
  ok(await w.post("/schema/collections", { slug: e, label: e, fields: [{ slug: "title", type: "string" }] }), 201);
  const empty = await w.get(`http://localhost/sitemap-${e}.xml`, { token: null });
  const unknown = await w.get("http://localhost/sitemap-nope.xml", { token: null });
  assert.deepEqual([empty.status, empty.text], [unknown.status, unknown.text]);
  assert.equal(empty.status, 404);
  err(await w.get(`http://localhost/sitemap-${c}-10001.xml`, { token: null }), 404, "NOT_FOUND");
  const id = ok(await w.post(`/content/${c}`, { slug: "a", status: "published", data: { title: "A" } }), 201).item.id;
  const first = await w.get(`http://localhost/sitemap-${c}.xml`, { token: null });
  assert.equal(first.status, 200);
  assert.match(first.text, /\/a<\/loc>/);
  // Gone from D1, yet the cached sitemap is served for its max-age: no query reached D1.
  await w.db.prepare(`UPDATE "ec_${c}" SET slug = 'renamed' WHERE id = ?1`).bind(id).run();
  const second = await w.get(`http://localhost/sitemap-${c}.xml?bust=1`, { token: null });
  assert.equal(second.status, 200);
  assert.equal(second.text, first.text);
  assert.equal(second.headers.get("cache-control"), "public, max-age=300");
});

/** A request body that sends `bytes` and then never ends. */
function endless(bytes) {
  let sent = false;
  return new ReadableStream({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new Uint8Array(bytes));
      }
      // Never closes: a worker that waited for the whole body would never answer.
    },
  });
}

test("a request without a valid token is refused before its body is read", { timeout: 20_000 }, async () => {
  const res = await w.mf.dispatchFetch(`${BASE}/media`, {
    method: "POST",
    headers: { authorization: "Bearer nope", "content-type": "application/json" },
    body: endless(1024),
    duplex: "half",
  });
  assert.equal(res.status, 401);
  await res.body?.cancel();
});

test("a chunked body over 1 MiB is refused while streaming", { timeout: 20_000 }, async () => {
  const res = await w.mf.dispatchFetch(`${BASE}/media`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: endless(1024 * 1024 + 1),
    duplex: "half",
  });
  assert.equal(res.status, 413);
  const body = await res.json();
  assert.equal(body.error.code, "PAYLOAD_TOO_LARGE");
});

test("concurrent field adds cannot pass the field limit", async () => {
  const c = uniq("wide");
  const fields = Array.from({ length: 79 }, (_, i) => ({ slug: `f${i}`, type: "string" }));
  ok(await w.post("/schema/collections", { slug: c, label: c, fields }), 201);
  const results = await Promise.all([
    w.post(`/schema/collections/${c}/fields`, { slug: "x1", type: "string" }),
    w.post(`/schema/collections/${c}/fields`, { slug: "x2", type: "string" }),
    w.post(`/schema/collections/${c}/fields`, { slug: "x3", type: "string" }),
  ]);
  assert.equal(results.filter((r) => r.status === 201).length, 1, results.map((r) => r.text).join("\n"));
  assert.ok(results.every((r) => [201, 400, 409].includes(r.status)));
  const [n] = await rows(w, "SELECT count(*) AS n FROM _emdash_fields f JOIN _emdash_collections c ON c.id = f.collection_id WHERE c.slug = ?1", c);
  assert.equal(n.n, 80);
});
