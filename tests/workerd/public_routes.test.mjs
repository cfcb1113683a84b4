// What D1 bills, measured from its own meta: the public routes read a bounded number of rows,
// whatever the size of the site (the draft save beside a large collection is `scans.test.mjs`'s). Costs are read from
// the `x-media-usage-cost` header, which a request with a valid token gets on public routes too
// (only such a request bypasses the sitemap cache, so every measured answer comes from D1; a
// header that cannot hold a valid token is served from the cache).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, uniq, cost, rows } from "./helpers.mjs";

const w = await startWorker({ SITE_URL: "https://site.example/", MEDIA_PUBLIC_URL: "https://cdn.example/m" });
after(() => w.dispose());

/** Inserts `n` entries into `ec_<slug>` in one statement (status `status`, ids `<prefix><i>`). */
async function seed(slug, n, { status = "published", prefix = "e", from = 1 } = {}) {
  await w.db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
       INSERT INTO "ec_${slug}" (id, slug, status) SELECT ?3 || i, ?3 || i, ?4 FROM n`,
    )
    .bind(from, from + n - 1, prefix, status)
    .run();
}

/** Rows read by an admin's request for `path` (a public route answered from D1). */
async function rowsRead(path) {
  const res = await w.get(path);
  return { status: res.status, rowsRead: cost(res)["rows-read"], text: res.text };
}

test("public routes read a bounded number of rows at 10 and at 20,000 published entries", { timeout: 120_000 }, async (t) => {
  const site = uniq("site");
  ok(await w.post("/schema/collections", { slug: site, label: site, fields: [{ slug: "title", type: "string" }] }), 201);
  // One fixed bound for every public answer that is not a page of URLs, and for a page a fixed
  // cost per URL listed plus the same fixed part: neither depends on the number of entries.
  const FIXED = 40;
  const PER_URL = 3;
  const measure = async () => {
    const out = {
      index: await rowsRead("http://localhost/sitemap.xml"),
      page: await rowsRead(`http://localhost/sitemap-${site}.xml`),
      pastLast: await rowsRead(`http://localhost/sitemap-${site}-9.xml`),
      unknown: await rowsRead("http://localhost/sitemap-nope.xml"),
      health: await rowsRead("/health"),
      file: await rowsRead("/media/file/none.jpg"),
    };
    assert.equal(out.index.status, 200);
    assert.equal(out.page.status, 200);
    for (const k of ["pastLast", "unknown", "file"]) assert.equal(out[k].status, 404, k);
    return out;
  };
  const check = (m, urls) => {
    for (const k of ["index", "pastLast", "unknown", "health", "file"]) {
      assert.ok(m[k].rowsRead <= FIXED, `${k}: ${m[k].rowsRead} rows read`);
    }
    assert.equal((m.page.text.match(/<url>/g) ?? []).length, urls);
    assert.ok(m.page.rowsRead <= FIXED + PER_URL * urls, `page: ${m.page.rowsRead} rows read for ${urls} URLs`);
  };

  await seed(site, 10);
  const small = await measure();
  check(small, 10);
  await seed(site, 19_990, { from: 11 });
  const large = await measure();
  const figures = (m) => Object.entries(m).map(([k, v]) => `${k}=${v.rowsRead}`).join(" ");
  t.diagnostic(`rows read at 10: ${figures(small)}; at 20,000: ${figures(large)}`);
  check(large, 20_000);
  // Not merely under the bound: the answers that list no URLs cost exactly what they cost at 10.
  for (const k of ["index", "pastLast", "unknown", "health", "file"]) {
    assert.equal(large[k].rowsRead, small[k].rowsRead, k);
  }

  // A page far down the table is read by keyset: its cost is its own URLs', not the pages'
  // before it.
  await w.db.prepare(`INSERT INTO "ec_${site}" (rowid, id, slug, status) VALUES (150001, 'far', 'far', 'published')`).run();
  const far = await rowsRead(`http://localhost/sitemap-${site}-4.xml`);
  assert.equal(far.status, 200);
  assert.ok(far.rowsRead <= FIXED + PER_URL, `page 4: ${far.rowsRead} rows read`);
  const index = await rowsRead("http://localhost/sitemap.xml");
  assert.match(index.text, new RegExp(`sitemap-${site}-4.xml`));
  assert.ok(index.rowsRead <= FIXED, `index: ${index.rowsRead}`);
  await w.db.prepare("DELETE FROM _emdash_media_usage_work WHERE collection_slug = ?1").bind(site).run();
});

test("a sitemap has one URL: other spellings are 404 and not cached, a canonical 404 is cached briefly", async () => {
  const slug = uniq("later");
  for (const path of [`/sitemap-${slug}.xml/`, `/sitemap-${slug}-02.xml`, `/sitemap-${slug.replace("l", "%6C")}.xml`, "/sitemap.xml/"]) {
    const res = await w.get(`http://localhost${path}`, { token: null });
    assert.equal(res.status, 404, path);
    assert.equal(res.headers.get("cache-control"), "private, no-store", path);
  }
  // The collection does not exist yet: its canonical 404 is cached for a minute…
  const before = await w.get(`http://localhost/sitemap-${slug}.xml`, { token: null });
  assert.equal(before.status, 404);
  assert.equal(before.headers.get("cache-control"), "public, max-age=60");
  ok(await w.post("/schema/collections", { slug, label: slug, fields: [{ slug: "title", type: "string" }] }), 201);
  ok(await w.post(`/content/${slug}`, { slug: "a", status: "published", data: { title: "A" } }), 201);
  // …so anonymous requests (any query string) get the cached answer without reaching D1…
  const cached = await w.get(`http://localhost/sitemap-${slug}.xml?x=1`, { token: null });
  assert.deepEqual([cached.status, cached.text], [before.status, before.text]);
  // …while a request with a token reads D1 and sees the new page.
  const fresh = await w.get(`http://localhost/sitemap-${slug}.xml`);
  assert.equal(fresh.status, 200);
  assert.match(fresh.text, /\/a<\/loc>/);
});

test("only a token that authenticates gets past the sitemap cache: a junk Authorization header is served from it", async () => {
  const slug = uniq("junk");
  // The collection does not exist yet: its canonical 404 goes into the cache…
  const before = await w.get(`http://localhost/sitemap-${slug}.xml`, { token: null });
  assert.equal(before.headers.get("cache-control"), "public, max-age=60");
  ok(await w.post("/schema/collections", { slug, label: slug, fields: [{ slug: "title", type: "string" }] }), 201);
  ok(await w.post(`/content/${slug}`, { slug: "a", status: "published", data: { title: "A" } }), 201);
  const minted = ok(await w.post("/admin/tokens", { name: "crawler", role: "subscriber", scopes: ["content:read"] }), 201).token;
  const unknown = `emdash_${"0123456789abcdef".repeat(4)}`;
  // …so requests whose header cannot hold a valid token (or holds an unknown one) get the cached
  // 404, which says nothing of what it cost: no D1 answer.
  for (const header of ["Bearer x", "Basic dXNlcjpwYXNz", "x", `Bearer ${unknown}`, `Bearer ${"a".repeat(64)}`]) {
    const res = await w.get(`http://localhost/sitemap-${slug}.xml`, { token: null, headers: { authorization: header } });
    assert.deepEqual([res.status, res.text], [before.status, before.text], header);
    assert.equal(res.headers.get("x-media-usage-cost"), null, header);
  }
  // A stored token that authenticates reads D1 and sees the new page.
  const fresh = await w.get(`http://localhost/sitemap-${slug}.xml`, { token: minted });
  assert.equal(fresh.status, 200, fresh.text);
  assert.match(fresh.text, /\/a<\/loc>/);
  assert.ok(cost(fresh)["rows-read"] > 0);
});

test("the sitemap index pages a collection whose first published entry is not its first row", async () => {
  // D1 may bind the page span as a real number: the page of rowid 2 must still be page 1.
  const slug = uniq("late");
  ok(await w.post("/schema/collections", { slug, label: slug, fields: [{ slug: "title", type: "string" }] }), 201);
  ok(await w.post(`/content/${slug}`, { slug: "draft", data: { title: "D" } }), 201);
  ok(await w.post(`/content/${slug}`, { slug: "live", status: "published", data: { title: "L" } }), 201);
  const index = await w.get("http://localhost/sitemap.xml");
  assert.equal(index.status, 200, index.text);
  assert.match(index.text, new RegExp(`sitemap-${slug}.xml`));
});
