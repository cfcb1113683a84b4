// Authentication, the role floor + scope rules of routes.rs `access()`, token minting, and the
// Cache-Control header on every response.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { startWorker, ADMIN_TOKEN } from "./harness.mjs";
import { ok, err, validation, rows, uniq, NO_STORE, settle } from "./helpers.mjs";

// Twins on the same database whose bootstrap secret is too short (ignored), or padded.
const SHORT_SECRET = "short-admin-token-0123456789";
const w = await startWorker({}, { short: { EMDASH_ADMIN_TOKEN: SHORT_SECRET }, padded: { EMDASH_ADMIN_TOKEN: ` ${ADMIN_TOKEN}\n` } });
after(() => w.dispose());

const ROLES = ["subscriber", "contributor", "author", "editor", "admin"];
const SCOPES = ["content:read", "content:write", "media:read", "media:write", "schema:read", "schema:write", "admin"];

const tokens = new Map();
/** A minted token with this role and these scopes (cached). */
async function tok(role, scopes) {
  const key = `${role}|${[...scopes].sort().join(",")}`;
  if (!tokens.has(key)) tokens.set(key, await w.token(role, scopes));
  return tokens.get(key);
}

// Fixtures made with the bootstrap admin token.
const COLL = uniq("authc");
const COLL_ID = ok(await w.post("/schema/collections", { slug: COLL, label: "Auth", fields: [{ slug: "title", type: "string" }] }), 201).item.id;
async function entry() {
  return ok(await w.post(`/content/${COLL}`, { slug: uniq("e"), data: { title: "T" } }), 201).item.id;
}
/**
 * An entry the caller may change: created with `token` when it may create entries (below
 * editor a token changes only its own), else by the admin (the request is refused before
 * ownership matters).
 */
async function ownEntry(token) {
  const res = await w.post(`/content/${COLL}`, { slug: uniq("e"), data: { title: "T" } }, { token });
  return res.status === 201 ? res.json.data.item.id : entry();
}
async function media() {
  return ok(await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: uniq("k") }), 201).item.id;
}
/** A media item the caller may change: registered with `token` when it may register media, else
 * by the admin (the request is refused before ownership matters). */
async function ownMedia(token) {
  const res = await w.post("/media", { filename: "a.png", mimeType: "image/png", storageKey: uniq("k") }, { token });
  return res.status === 201 ? res.json.data.item.id : media();
}
async function collection() {
  const slug = uniq("authdel");
  ok(await w.post("/schema/collections", { slug, label: "D" }), 201);
  return slug;
}
const ENTRY = await entry();
const MEDIA = await media();

/**
 * One access rule and a representative route for it. `make` prepares a fresh request that
 * succeeds with `status` for a sufficiently authorized caller.
 */
const RULES = [
  { route: "GET /schema/collections", role: "contributor", scope: "schema:read", status: 200, make: async () => ["GET", "/schema/collections"] },
  { route: "GET /schema/collections/{slug}", role: "contributor", scope: "schema:read", status: 200, make: async () => ["GET", `/schema/collections/${COLL}`] },
  {
    route: "POST /schema/collections",
    role: "admin",
    scope: "schema:write",
    status: 201,
    make: async () => ["POST", "/schema/collections", { slug: uniq("authnew"), label: "N" }],
  },
  {
    route: "POST /schema/collections/{slug}/fields",
    role: "admin",
    scope: "schema:write",
    status: 201,
    make: async () => ["POST", `/schema/collections/${COLL}/fields`, { slug: uniq("f"), type: "string" }],
  },
  { route: "DELETE /schema/collections/{slug}", role: "admin", scope: "schema:write", status: 200, make: async () => ["DELETE", `/schema/collections/${await collection()}`] },
  { route: "GET /content/{c}", role: "contributor", scope: "content:read", status: 200, make: async () => ["GET", `/content/${COLL}`] },
  { route: "GET /content/{c}/{id}", role: "contributor", scope: "content:read", status: 200, make: async () => ["GET", `/content/${COLL}/${ENTRY}`] },
  {
    route: "POST /content/{c}",
    role: "author",
    scope: "content:write",
    status: 201,
    make: async () => ["POST", `/content/${COLL}`, { slug: uniq("new"), data: { title: "x" } }],
  },
  { route: "PUT /content/{c}/{id}", role: "author", scope: "content:write", status: 200, make: async (t) => ["PUT", `/content/${COLL}/${await ownEntry(t)}`, { data: { title: "y" } }] },
  {
    route: "PUT /content/{c}/{id} draft",
    role: "author",
    scope: "content:write",
    status: 200,
    make: async (t) => ["PUT", `/content/${COLL}/${await ownEntry(t)}`, { draft: true, data: { title: "d" } }],
  },
  { route: "POST /content/{c}/{id}/publish", role: "author", scope: "content:write", status: 200, make: async (t) => ["POST", `/content/${COLL}/${await ownEntry(t)}/publish`] },
  { route: "POST /content/{c}/{id}/unpublish", role: "author", scope: "content:write", status: 200, make: async (t) => ["POST", `/content/${COLL}/${await ownEntry(t)}/unpublish`] },
  {
    route: "POST /content/{c}/{id}/restore",
    role: "author",
    scope: "content:write",
    status: 200,
    make: async (t) => {
      const id = await ownEntry(t);
      ok(await w.del(`/content/${COLL}/${id}`));
      return ["POST", `/content/${COLL}/${id}/restore`];
    },
  },
  { route: "DELETE /content/{c}/{id} (trash)", role: "author", scope: "content:write", status: 200, make: async (t) => ["DELETE", `/content/${COLL}/${await ownEntry(t)}`] },
  {
    route: "DELETE /content/{c}/{id}?permanent=false (trash)",
    role: "author",
    scope: "content:write",
    status: 200,
    make: async (t) => ["DELETE", `/content/${COLL}/${await ownEntry(t)}?permanent=false`],
  },
  {
    route: "DELETE /content/{c}/{id}?permanent=true",
    role: "admin",
    scope: "content:write",
    status: 200,
    make: async () => ["DELETE", `/content/${COLL}/${await entry()}?permanent=true`],
  },
  {
    route: "DELETE /content/{c}/{id}?permanent=1",
    role: "admin",
    scope: "content:write",
    status: 200,
    make: async () => ["DELETE", `/content/${COLL}/${await entry()}?permanent=1`],
  },
  { route: "GET /media", role: "subscriber", scope: "media:read", status: 200, make: async () => ["GET", "/media"] },
  { route: "GET /media/{id}", role: "subscriber", scope: "media:read", status: 200, make: async () => ["GET", `/media/${MEDIA}`] },
  {
    route: "POST /media",
    role: "author",
    scope: "media:write",
    status: 201,
    make: async () => ["POST", "/media", { filename: "b.png", mimeType: "image/png", storageKey: uniq("k") }],
  },
  {
    route: "PUT /media/{id}",
    role: "author",
    scope: "media:write",
    status: 200,
    make: async (t) => ["PUT", `/media/${await ownMedia(t)}`, { alt: "y" }],
  },
  {
    route: "DELETE /media/{id}",
    role: "author",
    scope: "media:write",
    status: 200,
    // A safe delete needs complete coverage: process whatever other rules left queued.
    make: async (t) => {
      await settle(w);
      return ["DELETE", `/media/${await ownMedia(t)}`];
    },
  },
  { route: "DELETE /media/{id}?force=true", role: "admin", scope: "media:write", status: 200, make: async () => ["DELETE", `/media/${await media()}?force=true`] },
  { route: "DELETE /media/{id}?force=1", role: "admin", scope: "media:write", status: 200, make: async () => ["DELETE", `/media/${await media()}?force=1`] },
  {
    route: "POST /admin/tokens",
    role: "admin",
    scope: "admin",
    status: 201,
    // A minter grants only scopes it holds itself: here its one scope.
    make: async () => ["POST", "/admin/tokens", { name: "t", role: "subscriber", scopes: ["admin"] }],
  },
  { route: "POST /admin/self-check", role: "admin", scope: "admin", status: 200, make: async () => ["POST", "/admin/self-check"] },
  { route: "GET /media/{id}/usage", role: "editor", scope: "media:read", status: 200, make: async () => ["GET", `/media/${MEDIA}/usage`] },
  { route: "GET /admin/media-usage/status", role: "admin", scope: "admin", status: 200, make: async () => ["GET", "/admin/media-usage/status"] },
  { route: "GET /admin/media-usage/ticks", role: "admin", scope: "admin", status: 200, make: async () => ["GET", "/admin/media-usage/ticks"] },
  { route: "GET /admin/media-usage/work", role: "admin", scope: "admin", status: 200, make: async () => ["GET", `/admin/media-usage/work?collection=${COLL}`] },
  {
    route: "POST /admin/media-usage/work/retry",
    role: "admin",
    scope: "admin",
    status: 200,
    make: async () => ["POST", "/admin/media-usage/work/retry", { collectionId: COLL_ID, contentId: ENTRY }],
  },
];

/** Prepares the rule's request for `token` and sends it. */
async function sendAs(token, rule) {
  return send(token, rule.make(token));
}

async function send(token, request) {
  const [method, path, body] = await request;
  return w.call(method, path, { token, body });
}

for (const rule of RULES) {
  const floor = ROLES.indexOf(rule.role);
  const others = SCOPES.filter((s) => s !== rule.scope);

  test(`${rule.route}: without a token 401 UNAUTHORIZED`, async () => {
    err(await send(null, rule.make(null)), 401, "UNAUTHORIZED");
    err(await send("emdash_unknown", rule.make(null)), 401, "UNAUTHORIZED");
  });

  // (No role is below subscriber, so that rule has no FORBIDDEN case.)
  if (floor > 0) {
    test(`${rule.route}: roles below ${rule.role} get 403 FORBIDDEN even with every scope`, async () => {
      for (const role of ROLES.slice(0, floor)) {
        const e = err(await sendAs(await tok(role, [rule.scope]), rule), 403, "FORBIDDEN");
        assert.match(e.message, new RegExp(rule.role));
        err(await sendAs(await tok(role, SCOPES), rule), 403, "FORBIDDEN");
      }
    });
  }

  test(`${rule.route}: ${rule.role} and above without ${rule.scope} get 403 INSUFFICIENT_SCOPE`, async () => {
    for (const role of ROLES.slice(floor)) {
      const e = err(await sendAs(await tok(role, others), rule), 403, "INSUFFICIENT_SCOPE");
      assert.match(e.message, new RegExp(rule.scope));
    }
  });

  test(`${rule.route}: ${rule.role} with only ${rule.scope} succeeds (and so does every higher role)`, async () => {
    for (const role of ROLES.slice(floor)) {
      const res = await sendAs(await tok(role, [rule.scope]), rule);
      ok(res, rule.status);
    }
  });
}

test("denied writes change nothing", async () => {
  const reader = await tok("editor", SCOPES.filter((s) => s !== "content:write"));
  const slug = uniq("denied");
  err(await w.post(`/content/${COLL}`, { slug, data: { title: "no" } }, { token: reader }), 403, "INSUFFICIENT_SCOPE");
  assert.deepEqual(await rows(w, `SELECT id FROM ec_${COLL} WHERE slug = ?1`, slug), []);

  const author = await tok("author", ["content:write"]);
  const id = await entry();
  err(await w.del(`/content/${COLL}/${id}?permanent=true`, { token: author }), 403, "FORBIDDEN");
  assert.equal((await rows(w, `SELECT count(*) AS n FROM ec_${COLL} WHERE id = ?1`, id))[0].n, 1);

  const editor = await tok("editor", SCOPES);
  const m = await media();
  err(await w.del(`/media/${m}?force=true`, { token: editor }), 403, "FORBIDDEN");
  ok(await w.get(`/media/${m}`));
  await settle(w);
  ok(await w.del(`/media/${m}`, { token: editor }));

  const coll = uniq("deniedc");
  err(await w.post("/schema/collections", { slug: coll, label: "x" }, { token: editor }), 403, "FORBIDDEN");
  assert.deepEqual(await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", coll), []);
  err(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: ["admin"] }, { token: editor }), 403, "FORBIDDEN");
});

test("ownership: below editor a token changes only its own entries; a permanent delete needs admin", async () => {
  const write = ["content:read", "content:write"];
  const a = await w.token("author", write);
  const b = await w.token("author", write);
  const editor = await tok("editor", write);
  const admin = await tok("admin", write);
  const hash = createHash("sha256").update(a).digest("hex");
  const [{ id: aId }] = await rows(w, "SELECT id FROM _emdash_api_tokens WHERE token_hash = ?1", hash);
  const writes = (tag) => [
    ["update", "PUT", "", { data: { title: "changed" } }],
    ["re-slug", "PUT", "", { slug: uniq(`moved-${tag}`) }],
    ["draft", "PUT", "", { draft: true, data: { title: "draft" } }],
    ["publish", "POST", "/publish"],
    ["unpublish", "POST", "/unpublish"],
    ["trash", "DELETE", ""],
    ["restore", "POST", "/restore"],
    ["permanent delete", "DELETE", "?permanent=true"],
  ];
  const OK = 200;
  const NO = 403;
  const cases = [
    ["author A (own)", a, [OK, OK, OK, OK, OK, OK, OK, NO]],
    ["author B (other's)", b, [NO, NO, NO, NO, NO, NO, NO, NO]],
    ["editor", editor, [OK, OK, OK, OK, OK, OK, OK, NO]],
    ["admin", admin, [OK, OK, OK, OK, OK, OK, OK, OK]],
  ];
  for (const [who, token, expected] of cases) {
    const created = ok(await w.post(`/content/${COLL}`, { slug: uniq("own"), data: { title: "A" } }, { token: a }), 201).item;
    assert.equal(created.authorId, aId, `${who}: the entry records author A's token id`);
    for (const [[name, method, suffix, body], want] of writes(who.split(" ")[0]).map((op, i) => [op, expected[i]])) {
      const before = ok(await w.get(`/content/${COLL}/${created.id}`)).item;
      const res = await w.call(method, `/content/${COLL}/${created.id}${suffix}`, { token, body });
      if (want === OK) {
        ok(res);
      } else {
        err(res, 403, "FORBIDDEN");
        assert.deepEqual(ok(await w.get(`/content/${COLL}/${created.id}`)).item, before, `${who}: a refused ${name} changed nothing`);
      }
    }
  }
  // An entry from before authors were recorded is for editors and admins only.
  const legacy = await entry();
  await rows(w, `UPDATE ec_${COLL} SET author_id = NULL WHERE id = ?1`, legacy);
  err(await w.put(`/content/${COLL}/${legacy}`, { data: { title: "x" } }, { token: a }), 403, "FORBIDDEN");
  ok(await w.put(`/content/${COLL}/${legacy}`, { data: { title: "x" } }, { token: editor }));
});

test("an editor token carrying the admin scope is still not an admin; an admin token needs the admin scope", async () => {
  err(await w.post("/admin/self-check", undefined, { token: await tok("editor", ["admin"]) }), 403, "FORBIDDEN");
  err(await w.post("/admin/self-check", undefined, { token: await tok("admin", SCOPES.filter((s) => s !== "admin")) }), 403, "INSUFFICIENT_SCOPE");
  ok(await w.post("/admin/self-check", undefined, { token: await tok("admin", ["admin"]) }));
});

test("malformed or unknown credentials answer 401 UNAUTHORIZED", async () => {
  const valid = await tok("admin", SCOPES);
  for (const authorization of [
    "Bearer emdash_not-a-real-token",
    `Bearer ${ADMIN_TOKEN}x`,
    `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString("base64")}`,
    ADMIN_TOKEN,
    "Bearer",
    "Bearer ",
    "Bearer    ",
    `Bearer ${"a".repeat(600)}`,
    `Token ${valid}`,
  ]) {
    const res = await w.call("GET", "/schema/collections", { token: null, headers: { authorization } });
    err(res, 401, "UNAUTHORIZED");
  }
  // The authentication scheme is case-insensitive (RFC 7235 §2.1).
  ok(await w.call("GET", "/schema/collections", { token: null, headers: { authorization: `bearer ${valid}` } }));
  ok(await w.call("GET", "/schema/collections", { token: null, headers: { authorization: `BEARER ${ADMIN_TOKEN}` } }));
});

test("minting a token: 201 with a one-time secret; only its hash is stored", async () => {
  const res = await w.post("/admin/tokens", { name: "CI bot", role: "editor", scopes: ["content:read", "media:write"] });
  const data = ok(res, 201);
  assert.equal(typeof data.id, "string");
  assert.match(data.token, /^emdash_[A-Za-z0-9_-]{20,}$/);
  assert.equal(data.name, "CI bot");
  assert.equal(data.role, "editor");
  assert.deepEqual(data.scopes, ["content:read", "media:write"]);
  const stored = await rows(w, "SELECT name, token_hash, role, scopes FROM _emdash_api_tokens WHERE id = ?1", data.id);
  assert.deepEqual(stored, [
    {
      name: "CI bot",
      token_hash: createHash("sha256").update(data.token).digest("hex"),
      role: 40,
      scopes: JSON.stringify(["content:read", "media:write"]),
    },
  ]);
  const all = await rows(w, "SELECT token_hash FROM _emdash_api_tokens");
  assert.ok(!all.some((r) => r.token_hash.includes(data.token)));
  // Each mint gives a new secret, and the secret authenticates with exactly those grants.
  const second = ok(await w.post("/admin/tokens", { name: "CI bot", role: "editor", scopes: ["content:read"] }), 201);
  assert.notEqual(second.token, data.token);
  ok(await w.get(`/content/${COLL}`, { token: data.token }));
  err(await w.get("/media", { token: data.token }), 403, "INSUFFICIENT_SCOPE");
  await settle(w);
  ok(await w.del(`/media/${await media()}`, { token: data.token }));

  // A minted admin token can mint in turn.
  const admin = ok(await w.post("/admin/tokens", { name: "root", role: "admin", scopes: ["admin", "media:read"] }), 201).token;
  ok(await w.post("/admin/tokens", { name: "child", role: "subscriber", scopes: ["media:read"] }, { token: admin }), 201);
});

test("a bootstrap secret shorter than 32 characters is ignored; a padded one is trimmed", async () => {
  const short = w.as("short");
  err(await short.get("/schema/collections", { token: SHORT_SECRET }), 401, "UNAUTHORIZED");
  err(await short.post("/admin/tokens", { name: "x", role: "admin", scopes: ["admin"] }, { token: SHORT_SECRET }), 401, "UNAUTHORIZED");
  // Stored tokens still work there.
  ok(await short.get("/schema/collections", { token: await tok("admin", ["schema:read"]) }));
  ok(await w.as("padded").get("/schema/collections", { token: ADMIN_TOKEN }));
});

test("a minted token never outlives its minter; the list says who minted each token", async () => {
  const parent = ok(await w.post("/admin/tokens", { name: "parent", role: "admin", scopes: ["admin", "media:read"], expiresAt: "2999-06-01T00:00:00Z" }), 201);
  assert.equal(parent.createdBy, "bootstrap");
  assert.equal(parent.expiresAt, "2999-06-01T00:00:00.000Z", "the bootstrap token's mints are uncapped");
  const mintAs = async (token, body) => ok(await w.post("/admin/tokens", { role: "editor", scopes: ["media:read"], ...body }, { token }), 201);
  const defaulted = await mintAs(parent.token, { name: "defaulted" });
  const later = await mintAs(parent.token, { name: "later", expiresAt: "3000-01-01T00:00:00Z" });
  const earlier = await mintAs(parent.token, { name: "earlier", expiresAt: "2999-01-01T00:00:00Z" });
  assert.equal(defaulted.expiresAt, "2999-06-01T00:00:00.000Z");
  assert.equal(later.expiresAt, "2999-06-01T00:00:00.000Z");
  assert.equal(earlier.expiresAt, "2999-01-01T00:00:00.000Z");
  const stored = await rows(w, "SELECT id, expires_at, created_by FROM _emdash_api_tokens WHERE created_by = ?1 ORDER BY name", parent.id);
  assert.deepEqual(
    stored,
    [defaulted, earlier, later].map((t) => ({ id: t.id, expires_at: t.expiresAt, created_by: parent.id })),
  );
  const forever = ok(await w.post("/admin/tokens", { name: "forever", role: "admin", scopes: ["admin", "media:read"] }), 201);
  assert.equal(forever.expiresAt, null);
  const open = await mintAs(forever.token, { name: "open" });
  assert.equal(open.expiresAt, null);
  const listed = ok(await w.get("/admin/tokens?limit=100")).items;
  for (const t of [parent, defaulted, later, earlier, forever, open]) {
    const item = listed.find((i) => i.id === t.id);
    assert.equal(item.createdBy, t.createdBy, t.name);
    assert.equal(item.expiresAt, t.expiresAt, t.name);
  }
  assert.equal(listed.find((i) => i.id === open.id).createdBy, forever.id);
  ok(await w.get("/media", { token: later.token }));
});

test("a cascade revoke takes every token minted from it, transitively; a plain one only the token", async () => {
  const mintAs = async (token, name) =>
    ok(await w.post("/admin/tokens", { name, role: "admin", scopes: ["admin", "media:read"] }, { token }), 201);
  const root = await mintAs(ADMIN_TOKEN, "root");
  const child = await mintAs(root.token, "child");
  const grandchild = await mintAs(child.token, "grandchild");
  const second = await mintAs(root.token, "second");
  const sibling = await mintAs(ADMIN_TOKEN, "sibling");
  const nephew = await mintAs(sibling.token, "nephew");
  for (const t of [root, child, grandchild, second, sibling, nephew]) ok(await w.get("/media", { token: t.token }));

  assert.deepEqual(ok(await w.del(`/admin/tokens/${root.id}?cascade=true`)), { id: root.id, revoked: 4 });
  for (const t of [root, child, grandchild, second]) err(await w.get("/media", { token: t.token }), 401, "UNAUTHORIZED");
  for (const t of [sibling, nephew]) ok(await w.get("/media", { token: t.token }));
  const left = await rows(w, "SELECT id FROM _emdash_api_tokens WHERE id IN (?1, ?2, ?3, ?4)", root.id, child.id, grandchild.id, second.id);
  assert.deepEqual(left, []);
  err(await w.del(`/admin/tokens/${root.id}?cascade=true`), 404, "NOT_FOUND");
  validation(await w.del(`/admin/tokens/${sibling.id}?cascade=yes`), "cascade");

  // Without cascade the tokens minted from it keep working.
  assert.deepEqual(ok(await w.del(`/admin/tokens/${sibling.id}`)), { id: sibling.id, revoked: 1 });
  err(await w.get("/media", { token: sibling.token }), 401, "UNAUTHORIZED");
  ok(await w.get("/media", { token: nephew.token }));
  assert.equal(ok(await w.get("/admin/tokens?limit=100")).items.find((t) => t.id === nephew.id).createdBy, sibling.id);
});

test("minting validation: unknown role or scope, empty or duplicate scopes, bad keys → 400", async () => {
  const count = async () => (await rows(w, "SELECT count(*) AS n FROM _emdash_api_tokens"))[0].n;
  const before = await count();
  validation(await w.post("/admin/tokens", { name: "x", role: "superuser", scopes: ["admin"] }), "role");
  validation(await w.post("/admin/tokens", { name: "x", role: "Admin", scopes: ["admin"] }), "role");
  validation(await w.post("/admin/tokens", { name: "x", role: 50, scopes: ["admin"] }), "role");
  validation(await w.post("/admin/tokens", { name: "x", scopes: ["admin"] }), "role");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: ["content:delete"] }), "scopes[0]");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: ["media:read", "media:*"] }), "scopes[1]");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: ["media:read", 7] }), "scopes[1]");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: ["media:read", "media:read"] }), "scopes[1]");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: [] }), "scopes");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: "admin" }), "scopes");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin" }), "scopes");
  validation(await w.post("/admin/tokens", { role: "admin", scopes: ["admin"] }), "name");
  validation(await w.post("/admin/tokens", { name: "", role: "admin", scopes: ["admin"] }), "name");
  validation(await w.post("/admin/tokens", { name: "x", role: "admin", scopes: ["admin"], expires: 1 }), "expires");
  validation(await w.post("/admin/tokens", { name: 1, role: "root", scopes: ["x"] }), "name", "role", "scopes[0]");
  err(await w.call("POST", "/admin/tokens", { rawBody: "{", headers: { "content-type": "application/json" } }), 400, "INVALID_JSON");
  assert.equal(await count(), before);
});

test("health and openapi.json are public", async () => {
  const health = ok(await w.get("/health", { token: null }));
  assert.deepEqual(health, { status: "ok", database: "ok" });
  const res = await w.get("/openapi.json", { token: null });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), NO_STORE);
  assert.match(res.headers.get("content-type"), /^application\/json/);
  const committed = JSON.parse(readFileSync(new URL("../../openapi.json", import.meta.url), "utf8"));
  assert.deepEqual(res.json, committed);
  assert.match(res.json.openapi, /^3\.1\./);
  // A token of any role is fine too.
  ok(await w.get("/health", { token: await tok("subscriber", ["media:read"]) }));
});

test("every response carries Cache-Control: private, no-store", async () => {
  const cases = [
    ["GET", "/health", { token: null }, 200],
    ["GET", "/openapi.json", { token: null }, 200],
    ["GET", "/schema/collections", {}, 200],
    ["POST", "/schema/collections", { body: { slug: uniq("cc"), label: "x" } }, 201],
    ["GET", "/nope", { token: null }, 404],
    ["GET", "/nope", {}, 404],
    ["GET", "http://localhost/", { token: null }, 404],
    ["GET", "http://localhost/_emdash/api", { token: null }, 404],
    ["GET", "/content", {}, 404],
    ["GET", "/media/a/b/c", {}, 404],
    ["PATCH", "/media", { token: null }, 405],
    ["PUT", "/schema/collections", {}, 405],
    ["DELETE", "/media", {}, 405],
    ["POST", "/health", { token: null }, 405],
    ["PUT", "/admin/tokens", {}, 405],
    ["GET", "/schema/collections", { token: null }, 401],
    ["GET", "/schema/collections", { token: "bogus" }, 401],
    ["GET", "/schema/collections", { token: "SUBSCRIBER" }, 403],
    ["GET", `/schema/collections/${uniq("missing")}`, {}, 404],
    ["GET", `/schema/collections/${encodeURIComponent("Bad-Slug")}`, {}, 400],
    ["POST", "/schema/collections", { rawBody: "{", headers: { "content-type": "application/json" } }, 400],
    ["POST", "/schema/collections", { rawBody: " ".repeat(1024 * 1024 + 1), headers: { "content-type": "application/json" } }, 413],
  ];
  const subscriber = await tok("subscriber", ["media:read"]);
  for (const [method, p, opts, status] of cases) {
    const o = { ...opts };
    if (o.token === "SUBSCRIBER") o.token = subscriber;
    const res = await w.call(method, p, o);
    assert.equal(res.status, status, `${method} ${p}: ${res.text}`);
    assert.equal(res.headers.get("cache-control"), NO_STORE, `${method} ${p}`);
    if (status >= 400) {
      assert.equal(res.json.success, false, `${method} ${p}`);
      const code = { 400: /^(VALIDATION_ERROR|INVALID_JSON)$/, 401: /^UNAUTHORIZED$/, 403: /^FORBIDDEN$/, 404: /NOT_FOUND$/, 405: /^METHOD_NOT_ALLOWED$/, 413: /^PAYLOAD_TOO_LARGE$/ }[status];
      assert.match(res.json.error.code, code, `${method} ${p}`);
    }
  }
});
