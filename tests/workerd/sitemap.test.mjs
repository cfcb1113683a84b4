// Image sitemaps served by the wasm worker from D1.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, uniq } from "./helpers.mjs";

const w = await startWorker({ SITE_URL: "https://site.example/", MEDIA_PUBLIC_URL: "https://cdn.example/m" });
after(() => w.dispose());

test("the index and a collection sitemap list published entries and their live local images", async () => {
  const slug = uniq("blog");
  ok(await w.post("/schema/collections", { slug, label: "Blog", fields: [{ slug: "hero", type: "image" }] }), 201);
  const img = ok(await w.post("/media", { filename: "a.jpg", mimeType: "image/jpeg", storageKey: "2026/a b.jpg" }), 201).item.id;
  ok(await w.post(`/content/${slug}`, { slug: "first post", status: "published", data: { hero: img } }), 201);
  ok(await w.post(`/content/${slug}`, { slug: "draft", data: { hero: img } }), 201);

  const index = await w.get("http://localhost/sitemap.xml", { token: null });
  assert.equal(index.status, 200);
  assert.equal(index.headers.get("content-type"), "application/xml; charset=utf-8");
  assert.equal(index.headers.get("cache-control"), "public, max-age=300");
  assert.match(index.text, new RegExp(`<loc>https://site.example/sitemap-${slug}.xml</loc>`));

  const page = await w.get(`http://localhost/sitemap-${slug}.xml`, { token: null });
  assert.equal(page.status, 200);
  assert.match(page.text, /^<\?xml version="1.0" encoding="UTF-8"\?>/);
  assert.match(page.text, new RegExp(`<loc>https://site.example/${slug}/first%20post</loc>`));
  assert.match(page.text, /<image:loc>https:\/\/cdn.example\/m\/2026\/a%20b.jpg<\/image:loc>/);
  assert.doesNotMatch(page.text, /draft/);
  assert.equal(page.text.match(/<url>/g).length, 1);

  // A canonical sitemap URL that names nothing is a 404 shared caches may keep for a minute.
  for (const path of ["/sitemap-nope.xml", `/sitemap-${slug}-2.xml`]) {
    const res = await w.get(`http://localhost${path}`, { token: null });
    assert.equal(res.status, 404, path);
    assert.equal(res.json.error.code, "NOT_FOUND");
    assert.equal(res.headers.get("cache-control"), "public, max-age=60");
  }
});
