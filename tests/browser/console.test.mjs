// The operator console in a real browser: Debian's Chromium driven by playwright-core against the
// real wasm worker served by Miniflare (local D1) on a port, with seeded data. Each view renders
// the seeded facts; Retry and Repair change what the API reports; the safe-delete refusal is
// shown with the entries; a bad token brings the token prompt back; no console error, page error
// or CSP violation; at 375 px the page never scrolls sideways; axe-core finds no serious or
// critical violation in any view. Media is served from another origin than the console's (the
// same worker as `localhost`, the console at `127.0.0.1`: `MEDIA_PUBLIC_URL`), so every
// thumbnail crosses the policy's `img-src`. Screenshots of every view at 375 px and 1280 px go to
// tests/browser/screenshots/ (git-ignored).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { workerOptions, migrationStatements, ADMIN_TOKEN, probeWorker, ProbeDb, scheduledOn, png } from "../workerd/harness.mjs";
import { postsSite } from "../workerd/helpers.mjs";

/** axe-core's browser build, evaluated in each page checked (by the test driver, not a script
 * tag: the console's policy refuses inline scripts, and it must). */
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const SHOTS = path.join(path.dirname(fileURLToPath(import.meta.url)), "screenshots");
const CHROMIUM = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const CONSOLE = "/_emdash/admin/media-usage";

let mf;
let db;
let origin;
let browser;
const seeded = {};

/** Calls the API as the admin, outside the browser (to seed and to check what it reports). */
async function api(method, p, body) {
  const res = await fetch(new URL(`/_emdash/api${p}`, origin), {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok && res.status !== 409 && res.status !== 404) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return { status: res.status, json };
}
const data = async (method, p, body) => (await api(method, p, body)).json.data;
/** Uploads a file as the admin (multipart, as EmDash's client does): the new media item. */
async function upload(filename, type, bytes) {
  const form = new FormData();
  form.append("file", new Blob([bytes], { type }), filename);
  const res = await fetch(new URL("/_emdash/api/media", origin), { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: form });
  const json = await res.json();
  assert.equal(res.status, 201, `upload ${filename}: ${JSON.stringify(json)}`);
  return json.data.item;
}
const sql = (q, ...binds) => db.prepare(q).bind(...binds).run();
const tick = () => scheduledOn(mf, "main");

/** A port free on this machine now (the worker's media URL must name it before it starts). */
const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer().on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** Where media is served: this worker's file route, under the name `localhost`. */
let mediaOrigin;

before(async () => {
  const port = await freePort();
  mediaOrigin = `http://localhost:${port}`;
  const vars = { MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY: "2", MEDIA_PUBLIC_URL: `${mediaOrigin}/_emdash/api/media/file/` };
  mf = new Miniflare({
    workers: [{ name: "main", ...workerOptions(vars), r2Buckets: { MEDIA_BUCKET: "console-media" } }, probeWorker()],
    unsafeTriggerHandlers: true,
    port,
    host: "127.0.0.1",
  });
  origin = (await mf.ready).origin;
  db = new ProbeDb(mf);
  for (const s of migrationStatements()) await db.prepare(s).run();

  // The posts site (tests/fixtures/posts_site.json), its images uploaded: three posts use
  // "hero.png", none uses "spare.png". One entry, saved behind the API (which refuses more
  // gallery images than this worker admits per entry, 2), has image ids so large that even their
  // list does not fit one bound value: its job fails for good and the collection's coverage is
  // partial.
  const { hero, spare } = await postsSite(data, (m) => upload(m.filename, m.mimeType, png(m.width, m.height, m.seed)));
  seeded.hero = hero.id;
  seeded.heroUrl = hero.url;
  seeded.spare = spare.id;
  const gallery = Array.from({ length: 8 }, (_, i) => ({ image: `${i}${"g".repeat(200_000)}` }));
  seeded.broken = "too-many";
  await sql("INSERT INTO ec_posts (id, slug, status, title, gallery) VALUES (?1, ?1, 'published', 'Too many', ?2)", seeded.broken, JSON.stringify(gallery));
  // Pages gain an image field after it has entries: coverage stale, reconciliation required.
  await data("POST", "/schema/collections", { slug: "pages", label: "Pages", fields: [{ slug: "title", type: "string" }] });
  await data("POST", "/content/pages", { slug: "about", status: "published", data: { title: "About" } });
  await data("POST", "/schema/collections/pages/fields", { slug: "banner", type: "image" });
  // A collection whose deletion failed at its sources phase.
  await data("POST", "/schema/collections", { slug: "old_news", label: "Old news", fields: [{ slug: "hero", type: "image" }] });
  await data("DELETE", "/schema/collections/old_news?force=true");
  for (let i = 0; i < 3; i++) await tick();
  await sql(
    `INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, attempt_count, last_error_code)
     VALUES ('gone-collection-id', 'old_news', 'failed', 'sources', 5, 'MEDIA_USAGE_COLLECTION_DELETION_FAILED')
     ON CONFLICT (collection_slug) DO UPDATE SET state = 'failed', phase = 'sources', attempt_count = 5,
       last_error_code = 'MEDIA_USAGE_COLLECTION_DELETION_FAILED', lease_token = NULL, lease_expires_at = NULL`,
  );
  seeded.oldNews = (await db.prepare("SELECT collection_id FROM _emdash_media_usage_collection_deletions WHERE collection_slug = 'old_news'").first()).collection_id;

  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});

after(async () => {
  await browser?.close();
  await mf?.dispose();
});

/** A fresh page (own session storage) that records what would make a session abnormal. */
async function open(width) {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  const seen = { errors: [], failures: [], api: [] };
  page.on("console", (m) => m.type() === "error" && seen.errors.push(m.text()));
  page.on("pageerror", (e) => seen.errors.push(`pageerror: ${e.message}`));
  page.on("response", (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith("/_emdash/api/")) seen.api.push(`${r.request().method()} ${u.pathname}${u.search} ${r.status()}`);
    if (r.status() >= 400) seen.failures.push(`${r.request().method()} ${u.pathname}${u.search} ${r.status()}`);
  });
  await page.goto(new URL(CONSOLE, origin).href);
  return { page, context, seen };
}

async function signIn(page, token = ADMIN_TOKEN) {
  await page.getByLabel("API token").fill(token);
  await page.getByLabel("API token").press("Enter");
}

const tab = (page, name) => page.getByRole("tab", { name, exact: true });
const view = (page, name) => page.locator(`#panel-${name.toLowerCase()}`);

/** The visible text of the page never shows a value the script failed to render. */
async function noRenderingSlips(page, what) {
  assert.doesNotMatch(await page.locator("main").innerText(), /\b(null|undefined|NaN)\b|\[object /, what);
}

async function noSidewaysScroll(page, what) {
  const { scroll, client } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
  }));
  assert.ok(scroll <= client, `${what}: the page scrolls sideways (${scroll} > ${client})`);
}

/** axe-core finds no serious or critical accessibility violation in the page as it is now. */
async function accessible(page, what) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
  });
  assert.deepEqual(violations, [], `${what}: axe-core`);
}

/** Checks a view (no sideways scroll, no rendering slips, no serious accessibility violation)
 * and keeps a screenshot of it. */
async function checkedShot(page, width, name) {
  await noSidewaysScroll(page, `${name} at ${width}px`);
  await noRenderingSlips(page, `${name} at ${width}px`);
  await accessible(page, `${name} at ${width}px`);
  await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
}

test("the page is served with a strict policy and makes no API call before a token is entered", async () => {
  const res = await fetch(new URL(CONSOLE, origin));
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/html/);
  const csp = res.headers.get("content-security-policy");
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https:/);
  assert.match(csp, new RegExp(`; img-src 'self' blob: ${mediaOrigin}; `), "images from exactly where media is served");
  assert.equal(csp.match(/http:/g).length, 1, "and no other origin");
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  for (const file of ["console.js", "console.css", "icon.svg"]) {
    const r = await fetch(new URL(`${CONSOLE}/${file}`, origin));
    assert.equal(r.status, 200, file);
    assert.equal(r.headers.get("x-content-type-options"), "nosniff");
  }

  const { page, context, seen } = await open(1280);
  await page.getByLabel("API token").waitFor();
  assert.equal(await page.locator("#app").isHidden(), true);
  assert.deepEqual(seen.api, [], "no API call before a token");
  assert.deepEqual(seen.failures, []);
  assert.deepEqual(seen.errors, []);
  await accessible(page, "the token prompt");
  await page.screenshot({ path: path.join(SHOTS, "token-1280.png"), fullPage: true });
  await context.close();
});

test("a bad token brings the token prompt back, with the reason", async () => {
  const { page, context, seen } = await open(375);
  await signIn(page, "not-a-real-token");
  await page.getByText(/The token was refused/).waitFor();
  assert.match(await page.locator("#login-message").innerText(), /UNAUTHORIZED/);
  assert.equal(await page.locator("#app").isHidden(), true);
  assert.equal(await page.getByLabel("API token").isVisible(), true);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, "the refused token is not kept");
  assert.ok(!page.url().includes("not-a-real-token"), "the token never goes into the URL");
  assert.deepEqual(seen.errors.filter((e) => !/401/.test(e)), [], "only the refused request itself is reported");
  await accessible(page, "the refused token");
  await page.screenshot({ path: path.join(SHOTS, "bad-token-375.png"), fullPage: true });
  await context.close();
});

test("a normal session at 1280 px: every view, Retry, Repair, and both kinds of refused delete", async () => {
  const width = 1280;
  const { page, context, seen } = await open(width);
  await signIn(page);
  const shot = (name) => checkedShot(page, width, name);

  // Coverage: the overall status, each collection's facts, and Repair.
  const coverage = view(page, "Coverage");
  const pagesRow = coverage.getByRole("row", { name: /^pages/ });
  await pagesRow.waitFor();
  assert.match(await pagesRow.innerText(), /stale\tactive\t\d+\tyes\t/);
  assert.match(await coverage.getByRole("row", { name: /^posts/ }).innerText(), /partial\tactive\t\d+\tno\tMEDIA_USAGE_RESOURCE_LIMIT/);
  assert.match(await coverage.innerText(), /Overall coverage: stale/);
  assert.match(await coverage.innerText(), /Tick budget: 40 statements, 2500 ms, 20,000 rows written, 200,000 rows read/);
  assert.match(await coverage.innerText(), /Background work on \d{4}-\d{2}-\d{2} \(UTC\): [\d,]+ rows written, [\d,]+ read in \d+ tick\(s\) of a daily budget of 50,000/);
  await shot("coverage");
  await pagesRow.getByRole("button", { name: "Repair pages" }).click();
  await page.getByText(/Repair of pages: 1 run\(s\) started, coverage is complete/).waitFor();
  const pages = (await data("GET", "/admin/media-usage/status")).collections.find((c) => c.collection === "pages");
  assert.deepEqual([pages.status, pages.reconciliationRequired], ["complete", false], "the API reports the repair");
  assert.match(await coverage.getByRole("row", { name: /^pages/ }).innerText(), /complete\tactive\t\d+\tno\t/);

  // Work (reached by keyboard: arrow keys move between tabs): the failed job, and Retry.
  await tab(page, "Coverage").focus();
  await page.keyboard.press("ArrowRight");
  assert.equal(await tab(page, "Work").getAttribute("aria-selected"), "true");
  assert.equal(await page.evaluate(() => document.activeElement.id), "tab-work");
  const work = view(page, "Work");
  const row = work.getByRole("row", { name: new RegExp(seeded.broken) });
  await row.waitFor();
  assert.match(await row.innerText(), /^posts\t\S+\tfailed\t1\tMEDIA_USAGE_RESOURCE_LIMIT\t/);
  await shot("work");
  await row.getByRole("button", { name: /^Retry/ }).click();
  await page.getByText(/is pending again/).waitFor();
  assert.equal((await data("GET", "/admin/media-usage/work?collection=posts&state=failed")).items.length, 0, "the API no longer reports it failed");
  const pending = await data("GET", "/admin/media-usage/work?collection=posts&state=pending");
  assert.ok(pending.items.some((w) => w.contentId === seeded.broken), "the API reports it pending");
  await work.getByText("No failed or retrying jobs.").waitFor();

  // Media while coverage is incomplete: "Unused" is offered only with the reason it is not, and
  // the unused "spare.png" cannot be proven unused.
  await tab(page, "Media").click();
  const unusedFilter = page.getByRole("button", { name: "Unused", exact: true });
  await page.locator("#unused-reason").waitFor();
  assert.equal(await unusedFilter.isDisabled(), true);
  assert.match(await page.locator("#unused-reason").innerText(), /“Unused” is unavailable: coverage is partial, so the index cannot prove/);
  assert.equal(await unusedFilter.getAttribute("aria-describedby"), "unused-reason");
  await page.getByLabel("Media ID").fill(seeded.spare);
  await page.getByLabel("Media ID").press("Enter");
  const media = view(page, "Media");
  await media.getByText("Not used in any entry.").waitFor();
  assert.match(await media.innerText(), /Usage count: unknown until coverage is complete\. Coverage: partial/);
  await page.getByRole("button", { name: "Move spare.png to the trash" }).click();
  await media.getByRole("alert").waitFor();
  assert.match(
    await media.getByRole("alert").innerText(),
    /Not deleted: the usage index is partial, so it cannot prove “spare.png” is unused\..*\(MEDIA_USAGE_COVERAGE_INCOMPLETE, HTTP 409\)/s,
  );
  assert.equal((await api("GET", `/media/${seeded.spare}`)).status, 200, "the media is kept");

  // The editor removes the oversized entry; ticks index the change; coverage is complete.
  await data("DELETE", `/content/posts/${seeded.broken}`);
  await data("DELETE", `/content/posts/${seeded.broken}?permanent=true`);
  for (let i = 0; i < 3; i++) await tick();
  assert.equal((await data("GET", "/admin/media-usage/status")).status, "complete");
  // An entry too large to index, saved behind the API, that uses hero.png too: its job fails for
  // good, but the media it uses are known, so coverage stays complete.
  await sql(
    "INSERT INTO ec_posts (id, slug, status, title, gallery) VALUES ('wall', 'wall', 'published', 'Wall', ?1)",
    JSON.stringify([{ image: seeded.hero }, { image: "w1" }, { image: "w2" }]),
  );
  await tick();
  assert.equal((await data("GET", "/admin/media-usage/status")).status, "complete");

  // Deletions: the failed deletion, and Retry.
  await tab(page, "Deletions").click();
  const deletions = view(page, "Deletions");
  const del = deletions.getByRole("row", { name: /old_news/ });
  await del.waitFor();
  assert.match(await del.innerText(), /^old_news\tsources\tfailed\t5\tMEDIA_USAGE_COLLECTION_DELETION_FAILED\t/);
  await shot("deletions");
  await del.getByRole("button", { name: "Retry deletion of old_news" }).click();
  await page.getByText(/Deletion of old_news is pending again at phase sources/).waitFor();
  const listed = await data("GET", "/admin/media-usage/collection-deletions?state=pending");
  assert.ok(listed.items.some((d) => d.collectionId === seeded.oldNews), "the API reports it pending");

  // Ticks: a bar per recorded tick, the budget line, and the table.
  await tab(page, "Ticks").click();
  const ticks = view(page, "Ticks");
  await ticks.locator("svg.chart").waitFor();
  const recorded = (await data("GET", "/admin/media-usage/ticks?limit=60")).items;
  assert.equal(await ticks.locator("svg.chart rect.bar").count(), recorded.length);
  assert.equal(await ticks.locator("svg.chart line.limit").count(), 1);
  assert.equal(await ticks.locator("tbody tr").count(), recorded.length);
  const newest = recorded[0];
  const n = (v) => v.toLocaleString("en-US");
  assert.match(
    await ticks.locator("tbody tr").first().innerText(),
    new RegExp(`^${newest.id}\\t.*\\t${newest.statements} / 40\\t${n(newest.rowsWritten)} / 20,000\\t${n(newest.rowsRead)} / 200,000\\t${newest.durationMs} ms`),
  );
  await shot("ticks");

  // Media with complete coverage: the count, and the refusal with the entries that use it.
  await tab(page, "Media").click();
  await page.getByLabel("Media ID").fill(seeded.hero);
  await page.getByLabel("Media ID").press("Enter");
  await media.getByText(/Used by 4 entries outside the trash\./).waitFor();
  await media.getByText(/Also used by 1 entry too large to index \(see Work\): posts\/wall/).waitFor();
  assert.equal(await media.getByRole("link", { name: "Open the file" }).getAttribute("href"), seeded.heroUrl);
  for (const title of ["Spring sale", "Our team", "Launch day"]) {
    assert.equal(await media.getByRole("row", { name: new RegExp(`^posts ${title}`) }).count(), 1, title);
  }
  await page.getByRole("button", { name: "Move hero.png to the trash" }).click();
  await media.getByRole("alert").getByText(/still used in 4 entries/).waitFor();
  const said = await media.getByRole("alert").innerText();
  assert.match(said, /MEDIA_IN_USE, HTTP 409/);
  for (const slug of ["spring-sale", "team-photo", "launch", "wall"]) assert.match(said, new RegExp(`posts / ${slug}`));
  assert.equal((await api("GET", `/media/${seeded.hero}`)).status, 200, "the media is kept");
  await shot("media");

  await data("DELETE", "/content/posts/wall?permanent=true");

  // A normal session: no console error or CSP violation; the only failed requests are the two
  // refused deletes (the browser itself logs those as errors).
  assert.deepEqual(seen.failures, [`DELETE /_emdash/api/media/${seeded.spare} 409`, `DELETE /_emdash/api/media/${seeded.hero} 409`]);
  assert.deepEqual(seen.errors.filter((e) => !/status of 409/.test(e)), []);
  await context.close();
});

test("at 375 px every view is readable without sideways scrolling, and an unused media is moved to the trash and restored", async () => {
  const width = 375;
  const { page, context, seen } = await open(width);
  await signIn(page);
  const shot = (name) => checkedShot(page, width, name);
  await view(page, "Coverage").getByRole("row", { name: /^posts/ }).waitFor();
  await shot("coverage");
  // The wide table scrolls inside its own container instead.
  const region = view(page, "Coverage").getByRole("region", { name: "Coverage per collection" });
  assert.ok(await region.evaluate((el) => el.scrollWidth > el.clientWidth), "the table scrolls in its container");
  await tab(page, "Work").click();
  await view(page, "Work").getByText("No failed or retrying jobs.").waitFor();
  await shot("work");
  await tab(page, "Deletions").click();
  await view(page, "Deletions").getByRole("row", { name: /old_news/ }).waitFor();
  await shot("deletions");
  await tab(page, "Ticks").click();
  await view(page, "Ticks").locator("svg.chart").waitFor();
  await shot("ticks");
  await tab(page, "Media").click();
  await page.getByLabel("Media ID").fill(seeded.spare);
  await page.getByLabel("Media ID").press("Enter");
  const media = view(page, "Media");
  await media.getByText("Not used in any entry.").waitFor();
  await shot("media");
  await page.getByRole("button", { name: "Move spare.png to the trash" }).click();
  await media.getByText(/Moved “spare.png” .* to the trash/).waitFor();
  assert.ok((await data("GET", `/media/${seeded.spare}`)).item.deletedAt, "the API has it in the trash");
  await page.getByRole("button", { name: "Restore media spare.png" }).click();
  await media.getByText(/Restored “spare.png”/).waitFor();
  assert.equal((await data("GET", `/media/${seeded.spare}`)).item.deletedAt, null, "and back");
  // An unknown media ID is said in words (the one failed request of this session).
  await page.getByLabel("Media ID").fill("no-such-media");
  await page.getByLabel("Media ID").press("Enter");
  await media.getByText(/No media has the ID “no-such-media”/).waitFor();
  assert.deepEqual(seen.failures, ["GET /_emdash/api/media/no-such-media?includeUsage=true 404"], JSON.stringify(seen.api.slice(-12)));
  // Five views, a trash and a restore: the status was read once for the session…
  const statusReads = () => seen.api.filter((r) => r.startsWith("GET /_emdash/api/admin/media-usage/status")).length;
  assert.equal(statusReads(), 1, JSON.stringify(seen.api));
  // …and is read again on an explicit Reload, once.
  await tab(page, "Coverage").click();
  await view(page, "Coverage").getByRole("row", { name: /^posts/ }).waitFor();
  assert.equal(statusReads(), 1, "a view change reads no status");
  const reread = page.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/admin/media-usage/status"));
  await view(page, "Coverage").getByRole("button", { name: "Reload" }).click();
  await reread;
  await view(page, "Coverage").getByRole("row", { name: /^posts/ }).waitFor();
  assert.equal(statusReads(), 2, JSON.stringify(seen.api));
  assert.deepEqual(seen.errors.filter((e) => !/status of 404/.test(e)), []);
  await context.close();
});

test("the media library: thumbnails, usage counts, Unused with proof, search, keyboard, bulk move to trash, the Trash and Restore", async () => {
  // 30 small images to page through, and four named ones: one used by an entry, two unused
  // images and an unused PDF.
  for (let i = 0; i < 30; i++) await upload(`filler-${String(i).padStart(2, "0")}.png`, "image/png", png(8, 8, 100 + i));
  const used = await upload("library-used.png", "image/png", png(40, 30, 1));
  const a = await upload("library-a.png", "image/png", png(64, 48, 2));
  const b = await upload("library-b.png", "image/png", png(32, 32, 3));
  const pdf = await upload("library-notes.pdf", "application/pdf", new TextEncoder().encode("%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"));
  await data("POST", "/content/posts", { slug: "gallery-post", status: "published", data: { title: "Gallery post", hero: used.id } });
  for (let i = 0; i < 3; i++) await tick();
  assert.equal((await data("GET", "/admin/media-usage/status")).status, "complete");

  const width = 1280;
  const { page, context, seen } = await open(width);
  await signIn(page);
  await tab(page, "Media").click();
  const panel = view(page, "Media");
  const grid = panel.getByRole("list", { name: "Media library" });
  const card = (name) => grid.getByRole("listitem").filter({ has: page.getByRole("button", { name: `Show where ${name} is used` }) });
  const shownIds = () => grid.getByRole("listitem").evaluateAll((lis) => lis.map((li) => li.dataset.id));

  // All: the newest first, a page of 24, every thumbnail loaded, and the facts of each item.
  await card("library-notes.pdf").waitFor();
  assert.equal(await grid.getByRole("listitem").count(), 24);
  await page.waitForFunction(() => [...document.querySelectorAll("#media-grid img")].every((i) => i.complete && i.naturalWidth > 0));
  assert.equal(await card("library-a.png").locator("img").evaluate((i) => i.naturalWidth), 64, "the thumbnail is the file itself");
  assert.equal(await card("library-a.png").locator("img").getAttribute("src"), a.url);
  assert.ok(a.url.startsWith(`${mediaOrigin}/`), "loaded from where media is served");
  assert.equal(await card("library-notes.pdf").locator("img").count(), 0);
  assert.equal(await card("library-notes.pdf").locator(".placeholder").innerText(), "PDF");
  assert.match(await card("library-a.png").innerText(), /library-a\.png\n+image\/png · [\d.]+ (B|KB) · 64\u00a0×\u00a048\n+Not used/);
  assert.match(await card("library-used.png").innerText(), /Used in 1 entry/);
  assert.equal(await page.getByRole("button", { name: "Unused", exact: true }).isDisabled(), false);
  assert.equal(await page.locator("#unused-reason").isHidden(), true);
  await checkedShot(page, width, "media-library");

  // Load more: the rest of the library, keyboard focus on the first item added.
  await panel.getByRole("button", { name: "Load more" }).click();
  await page.waitForFunction(() => document.querySelectorAll("#media-grid > li").length > 24);
  const all = (await data("GET", "/media?limit=100")).items.map((m) => m.id);
  assert.deepEqual(await shownIds(), all, "every item once, in the API's order");
  assert.equal(await panel.getByRole("button", { name: "Load more" }).isHidden(), true);
  assert.equal(await page.evaluate(() => document.activeElement.closest("li").dataset.id), all[24]);

  // Unused: exactly the items nothing uses, by the index ("Used in" of each is empty).
  await page.getByRole("button", { name: "Unused", exact: true }).click();
  await page.waitForFunction(() => document.querySelector('[data-filter="unused"]').getAttribute("aria-pressed") === "true");
  await page.getByText(/items? used by no entry/).waitFor();
  while (await panel.getByRole("button", { name: "Load more" }).isVisible()) {
    const before = await grid.getByRole("listitem").count();
    await panel.getByRole("button", { name: "Load more" }).click();
    await page.waitForFunction((n) => document.querySelectorAll("#media-grid > li").length > n || document.querySelector("#load-more").hidden, before);
  }
  const unused = new Set(await shownIds());
  for (const id of all) {
    const users = (await data("GET", `/media/${id}/usage?limit=1`)).items.length;
    assert.equal(unused.has(id), users === 0, `${id}: listed as unused exactly when "Used in" is empty`);
  }
  assert.ok(unused.has(a.id) && unused.has(b.id) && unused.has(pdf.id) && !unused.has(used.id) && !unused.has(seeded.hero));

  // Search within Unused: the three unused "library-" items.
  await page.getByLabel("Search file names").fill("library-");
  await page.getByLabel("Search file names").press("Enter");
  await page.getByText("3 items used by no entry whose file name contains “library-”.").waitFor();
  assert.deepEqual(new Set(await shownIds()), new Set([a.id, b.id, pdf.id]));

  // The grid by keyboard: arrows move between items; Enter shows where one is used; Close goes back.
  await card("library-notes.pdf").getByRole("button", { name: /^Show where/ }).focus();
  await page.keyboard.press("ArrowRight");
  const second = await page.evaluate(() => document.activeElement.getAttribute("aria-label"));
  assert.match(second, /^Show where library-[ab]\.png is used$/);
  await page.keyboard.press("Enter");
  await panel.locator("#media-view").getByText("Not used in any entry.").waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.id), "media-view", "focus moves to what opened");
  await accessible(page, "an item's Used in");
  await panel.getByRole("button", { name: /^Close where library-[ab]\.png is used$/ }).click();
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute("aria-label")), second, "and back to the item");

  // Select all shown, then Move to trash: each item reported, the three gone from the library.
  await page.getByLabel("Select all shown").check();
  await page.getByText("3 selected").waitFor();
  assert.equal(await card("library-a.png").getByRole("checkbox", { name: "Select library-a.png" }).isChecked(), true);
  await page.getByRole("button", { name: "Move to trash" }).click();
  const report = panel.getByRole("list", { name: "What happened to each selected item" });
  await report.waitFor();
  assert.deepEqual((await report.getByRole("listitem").allInnerTexts()).sort(), [
    "library-a.png: moved to the trash",
    "library-b.png: moved to the trash",
    "library-notes.pdf: moved to the trash",
  ]);
  await page.getByText("No media used by no entry whose file name contains “library-”.").waitFor();
  for (const m of [a, b, pdf]) assert.ok((await data("GET", `/media/${m.id}`)).item.deletedAt, `${m.filename} is in the trash`);
  assert.equal((await fetch(new URL(a.url, origin))).status, 404, "a trashed file is not served");

  // All: a used item selected with an unused one is kept, and the report says where it is used.
  await page.getByRole("button", { name: "All", exact: true }).click();
  await page.getByText(/items? in the library whose file name contains “library-”/).waitFor();
  assert.deepEqual(await shownIds(), [used.id]);
  await page.getByLabel("Select library-used.png").check();
  await page.getByRole("button", { name: "Move to trash" }).click();
  await report.getByText("library-used.png: kept: still used in posts / gallery-post").waitFor();
  assert.equal((await data("GET", `/media/${used.id}`)).item.deletedAt, null, "the used item is kept");
  assert.equal(await panel.getByRole("alert").count(), 1, "a refusal is announced");

  // Trash: the three, with when; Restore brings one back, its file served again.
  await page.getByRole("button", { name: "Trash", exact: true }).click();
  await page.getByText("3 items in the trash whose file name contains “library-”.").waitFor();
  assert.deepEqual(new Set(await shownIds()), new Set([a.id, b.id, pdf.id]));
  assert.match(await card("library-a.png").innerText(), /In the trash since \d{4}-\d{2}-\d{2} /);
  assert.equal(await panel.getByLabel("Select all shown").isVisible(), false, "no selection in the trash");
  assert.equal(await grid.locator("img").count(), 0, "no thumbnail is asked for a file that is not served");
  assert.equal(await card("library-a.png").locator(".placeholder").innerText(), "PNG");
  await checkedShot(page, width, "media-trash");
  await card("library-a.png").getByRole("button", { name: "Restore media library-a.png" }).click();
  await page.getByText("Restored “library-a.png”: its file is served again at the same URL.").waitFor();
  await page.getByText("2 items in the trash whose file name contains “library-”.").waitFor();
  assert.equal((await data("GET", `/media/${a.id}`)).item.deletedAt, null);
  const served = await fetch(new URL(a.url, origin));
  assert.equal(served.status, 200, "the restored file is served again");
  assert.deepEqual(new Uint8Array(await served.arrayBuffer()), png(64, 48, 2));

  // A normal session: no response of 400 or more (thumbnails included), no console error.
  assert.deepEqual(seen.failures, []);
  assert.deepEqual(seen.errors, []);
  await context.close();

  // At 375 px: the library fits, by the same checks.
  const small = await open(375);
  await signIn(small.page);
  await tab(small.page, "Media").click();
  await view(small.page, "Media").getByRole("button", { name: "Show where library-a.png is used" }).waitFor();
  // (Thumbnails far below the fold load lazily, as the page is scrolled.)
  await small.page.waitForFunction(() => [...document.querySelectorAll("#media-grid img")].slice(0, 2).every((i) => i.complete && i.naturalWidth > 0));
  await checkedShot(small.page, 375, "media-library");
  assert.deepEqual(small.seen.failures, []);
  await small.context.close();
});

test("below editor the media library shows no usage: no counts, Used and Unused off with the reason", async () => {
  const reader = (await data("POST", "/admin/tokens", { name: "reader", role: "subscriber", scopes: ["media:read"] })).token;
  const width = 1280;
  const { page, context, seen } = await open(width);
  await signIn(page, reader);
  await tab(page, "Media").click();
  const panel = view(page, "Media");
  const grid = panel.getByRole("list", { name: "Media library" });
  await grid.getByRole("listitem").first().waitFor();
  for (const text of await grid.getByRole("listitem").allInnerTexts()) {
    assert.match(text, /Usage is shown to editors and admins/);
    assert.doesNotMatch(text, /Used in|Not used|No indexed use/);
  }
  assert.equal(await page.getByRole("button", { name: "Used", exact: true }).isDisabled(), true);
  assert.equal(await page.getByRole("button", { name: "Unused", exact: true }).isDisabled(), true);
  assert.match(await page.locator("#unused-reason").innerText(), /“Used” and “Unused” are for editors and admins/);
  assert.equal(await page.locator("#error").isHidden(), true, `the view itself is not an error: ${await page.locator("#error").innerText()} ${JSON.stringify(seen.failures)}`);
  await checkedShot(page, width, "media-library-below-editor");
  // All it was refused is what only admins read (coverage, on the first view and the Media
  // view); the library never asked for a usage filter.
  assert.ok(seen.failures.length > 0 && seen.failures.every((f) => / 403$/.test(f) && f.includes("/admin/")), seen.failures.join("\n"));
  assert.ok(seen.api.every((r) => !/[?&]usage=/.test(r)), seen.api.join("\n"));
  assert.deepEqual(seen.errors.filter((e) => e.startsWith("pageerror")), []);
  await context.close();
});

test("the media item view edits alt text and caption; an author edits its own uploads only", async () => {
  const admins = (await data("POST", "/media", { filename: "poster.png", mimeType: "image/png", storageKey: "console/poster.png" })).item;
  const width = 1280;
  const { page, context, seen } = await open(width);
  await signIn(page);
  await tab(page, "Media").click();
  const panel = view(page, "Media");
  await panel.getByRole("button", { name: "Show where poster.png is used" }).click();
  const form = panel.getByRole("form", { name: "Alt text and caption of poster.png" });
  await form.waitFor();
  await form.getByLabel("Alt text").fill("A spare image");
  await form.getByLabel("Caption").fill("Kept for later");
  await form.getByRole("button", { name: "Save alt text and caption" }).click();
  await form.getByText("Saved the alt text and caption of “poster.png”.").waitFor();
  const saved = (await data("GET", `/media/${admins.id}`)).item;
  assert.deepEqual([saved.alt, saved.caption], ["A spare image", "Kept for later"]);
  assert.match(await form.innerText(), /Uploaded or registered by token: bootstrap/);
  await checkedShot(page, width, "media-item-edit");
  assert.deepEqual(seen.errors.filter((e) => e.startsWith("pageerror")), []);
  await context.close();

  // An author: its own registration is saved; the admin's upload is refused in words, unchanged.
  const author = await data("POST", "/admin/tokens", { name: "console author", role: "author", scopes: ["media:read", "media:write"] });
  const mine = await fetch(new URL("/_emdash/api/media", origin), {
    method: "POST",
    headers: { authorization: `Bearer ${author.token}`, "content-type": "application/json" },
    body: JSON.stringify({ filename: "authors.pdf", mimeType: "application/pdf", storageKey: "console/authors.pdf" }),
  }).then((r) => r.json());
  const as = await open(width);
  await signIn(as.page, author.token);
  await tab(as.page, "Media").click();
  const authorPanel = view(as.page, "Media");
  await authorPanel.getByRole("button", { name: "Show where authors.pdf is used" }).click();
  const own = authorPanel.getByRole("form", { name: "Alt text and caption of authors.pdf" });
  await own.waitFor();
  assert.match(await authorPanel.locator("#media-view").innerText(), /Where it is used is shown to editors and admins/);
  await own.getByLabel("Caption").fill("My document");
  await own.getByRole("button", { name: "Save alt text and caption" }).click();
  await own.getByText("Saved the alt text and caption of “authors.pdf”.").waitFor();
  assert.equal((await data("GET", `/media/${mine.data.item.id}`)).item.caption, "My document");
  await authorPanel.getByRole("button", { name: "Show where poster.png is used" }).click();
  const theirs = authorPanel.getByRole("form", { name: "Alt text and caption of poster.png" });
  await theirs.waitFor();
  await theirs.getByLabel("Alt text").fill("Not mine");
  await theirs.getByRole("button", { name: "Save alt text and caption" }).click();
  await theirs.getByText(/^Not saved: Only editors and admins may change media uploaded or registered by someone else/).waitFor();
  assert.equal((await data("GET", `/media/${admins.id}`)).item.alt, "A spare image", "unchanged");
  await checkedShot(as.page, width, "media-item-edit-refused");
  assert.deepEqual(as.seen.errors.filter((e) => e.startsWith("pageerror")), []);
  await as.context.close();
});

test("an item's file at 375 px: replace with a preview, the entries still linking the earlier version, update links, revert", async () => {
  const logo = await upload("logo.png", "image/png", png(40, 20, 31));
  // One entry shows the logo by id (an image field), another links its file URL in its text.
  await data("POST", "/schema/collections", { slug: "notes", label: "Notes", fields: [{ slug: "body", type: "string" }, { slug: "cover", type: "image" }] });
  await data("POST", "/content/notes", { slug: "by-id", status: "published", data: { body: "Plain", cover: logo.id } });
  const byUrl = (await data("POST", "/content/notes", { slug: "by-url", status: "published", data: { body: `<p><img src="${logo.url}" alt="Logo"></p>` } })).item;
  for (let i = 0; i < 3; i++) await tick();

  const width = 375;
  const { page, context, seen } = await open(width);
  await signIn(page);
  await tab(page, "Media").click();
  const panel = view(page, "Media");
  await panel.getByRole("button", { name: "Show where logo.png is used" }).click();
  const form = panel.getByRole("form", { name: "Replace the file of logo.png" });
  await form.waitFor();
  assert.match(await panel.locator("#file-section").innerText(), /No earlier versions\./);

  // Choosing a file previews it before anything is sent.
  await form.getByLabel("New file").setInputFiles({ name: "logo-2.png", mimeType: "image/png", buffer: Buffer.from(png(60, 30, 32)) });
  await form.locator("#replace-preview img").waitFor();
  assert.match(await form.locator("#replace-preview").innerText(), /New file: logo-2\.png \(image\/png/);
  assert.ok(!seen.api.some((a) => a.includes("/replace")), "nothing sent before the button");
  await checkedShot(page, width, "media-replace-preview");
  await form.getByRole("button", { name: "Replace file", exact: true }).click();
  await page.getByText(/^Replaced the file of “logo\.png”/).waitFor();

  const replaced = (await data("GET", `/media/${logo.id}`)).item;
  assert.notEqual(replaced.url, logo.url, "a new key, a new URL");
  assert.deepEqual([replaced.width, replaced.height], [60, 30]);
  assert.equal(replaced.versions.length, 1);
  assert.equal(replaced.versions[0].storageKey, logo.storageKey);
  const versions = panel.getByRole("region", { name: "Earlier versions" });
  await versions.waitFor();
  assert.match(await versions.innerText(), /1 entry/, "the entry linking the old URL is counted");
  assert.match(await panel.locator("#links-summary").innerText(), /1 entry links to an earlier version/);
  const used = await panel.getByRole("region", { name: "Used in" }).innerText();
  assert.match(used, /by-url[\s\S]*the version replaced/, "the URL entry links the earlier version");
  assert.match(used, /by-id[\s\S]*current file/, "the id entry shows the current file");
  await checkedShot(page, width, "media-versions");

  // Update links: the lane rewrites the entry's URL at the next ticks.
  await panel.getByRole("button", { name: "Update links" }).click();
  await panel.locator("#relink-result").getByText(/^(Queued|Updating links|Links updated)/).waitFor();
  for (let i = 0; i < 4; i++) await tick();
  await panel.getByRole("button", { name: "Check progress" }).click();
  await panel.locator("#relink-result").getByText(/^Links updated: 1 entry checked, 1 rewritten/).waitFor();
  const note = (await data("GET", `/content/notes/${byUrl.id}`)).item;
  assert.ok(note.data.body.includes(replaced.url) && !note.data.body.includes(logo.url), note.data.body);

  // Revert: the earlier file is current again, and the replacing one becomes a version.
  await panel.getByRole("button", { name: "Show where logo.png is used" }).click();
  await panel.getByRole("button", { name: /^Revert to the version replaced/ }).click();
  await page.getByText(/^Reverted “logo\.png”/).waitFor();
  const reverted = (await data("GET", `/media/${logo.id}`)).item;
  assert.equal(reverted.url, logo.url);
  assert.deepEqual(reverted.versions.map((v) => v.url), [replaced.url]);
  await checkedShot(page, width, "media-reverted");
  assert.deepEqual(seen.errors, []);
  await context.close();
});
