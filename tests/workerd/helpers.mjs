// Assertions and small utilities shared by the workerd test files (not a test file itself).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The shared test data (tests/fixtures/). */
const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures");

export const NO_STORE = "private, no-store";

let counter = 0;
/** A collection/field slug that no other test in the process uses. */
export function uniq(prefix) {
  counter += 1;
  return `${prefix}_${process.pid.toString(36)}_${counter}`;
}

/** Asserts a success envelope with the exact status; returns `data`. */
export function ok(res, status = 200) {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
  assert.equal(res.headers.get("cache-control"), NO_STORE);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  assert.ok(res.json, `body is not JSON: ${res.text}`);
  assert.equal(res.json.success, true, res.text);
  assert.ok("data" in res.json, res.text);
  return res.json.data;
}

/** Asserts an error envelope with the exact status and code; returns `error`. */
export function err(res, status, code) {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.equal(res.headers.get("cache-control"), NO_STORE);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  assert.ok(res.json, `body is not JSON: ${res.text}`);
  assert.equal(res.json.success, false, res.text);
  assert.equal(res.json.error.code, code, res.text);
  assert.equal(typeof res.json.error.message, "string");
  assert.ok(res.json.error.message.length > 0);
  return res.json.error;
}

/**
 * Asserts a 400 VALIDATION_ERROR whose `details.issues` are well formed and include an issue at
 * each of `paths` (exact path match); returns the issues.
 */
export function validation(res, ...paths) {
  const e = err(res, 400, "VALIDATION_ERROR");
  assert.ok(e.details && Array.isArray(e.details.issues), res.text);
  assert.ok(e.details.issues.length > 0, res.text);
  for (const issue of e.details.issues) {
    assert.deepEqual(Object.keys(issue).sort(), ["message", "path"], res.text);
    assert.equal(typeof issue.path, "string");
    assert.equal(typeof issue.message, "string");
    assert.ok(issue.message.length > 0);
  }
  const got = e.details.issues.map((i) => i.path);
  for (const p of paths) {
    assert.ok(got.includes(p), `no issue at ${JSON.stringify(p)} in ${res.text}`);
  }
  return e.details.issues;
}

/** Rows of a query against the worker's D1 database. */
export async function rows(w, sql, ...params) {
  const r = await w.db.prepare(sql).bind(...params).all();
  return r.results;
}

/** Whether a table (or index, …) of that name exists. */
export async function schemaObjectExists(w, name) {
  const r = await rows(w, "SELECT name FROM sqlite_master WHERE name = ?1", name);
  return r.length === 1;
}

/**
 * Runs cron ticks until no work is due any more (at most 10), so coverage is complete again
 * after tests that queue work without processing it (e.g. an operator retry).
 */
export async function settle(w) {
  for (let i = 0; i < 10; i++) {
    const due = await rows(w, "SELECT 1 FROM _emdash_media_usage_work WHERE state <> 'failed' LIMIT 1");
    if (due.length === 0) return;
    await w.scheduled();
  }
  throw new Error("work did not settle in 10 ticks");
}

/** Parses the `x-media-usage-cost` header into numbers. */
export function cost(res) {
  const raw = res.headers.get("x-media-usage-cost");
  assert.ok(raw, "the cost header is present");
  return Object.fromEntries(raw.split(",").map((kv) => kv.trim().split("=")).map(([k, v]) => [k, Number(v)]));
}

/** Creates a collection with `fields` through the API; returns its slug and id. */
export async function newCollection(w, fields) {
  const slug = uniq("c");
  ok(await w.post("/schema/collections", { slug, label: slug, fields }), 201);
  const [row] = await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", slug);
  return { slug, id: row.id };
}

/**
 * The statements of an SQL fixture under tests/fixtures (as tests/it/support.rs splits them):
 * comment lines dropped, `{table}` named, split where a line ends in `;`.
 */
export function fixtureStatements(name, table) {
  const sql = readFileSync(path.join(FIXTURES, name), "utf8");
  return sql
    .split("\n")
    .filter((l) => !l.trimStart().startsWith("--"))
    .join("\n")
    .replaceAll("{table}", table)
    .split(";\n")
    .map((s) => s.trim().replace(/;$/, "").trim())
    .filter((s) => s.length > 0);
}

/**
 * Creates a collection (one image field `hero`) through the API and seeds it behind the API, as
 * an import would, with the large-collection fixture (tests/fixtures/large_collection.sql):
 * `entries` entries, each queued for work and with a live source of `occurrences` occurrences,
 * the first `revisions` of them with a revision of `revisionBytes` characters; in chunks of at
 * most `chunk` entries. Returns its slug and id.
 */
export async function largeCollection(w, { slug = uniq("l"), entries, occurrences = 1, revisions = 0, revisionBytes = 0, chunk = 25_000 }) {
  ok(await w.post("/schema/collections", { slug, label: slug, fields: [{ slug: "hero", type: "image" }] }), 201);
  const [{ id }] = await rows(w, "SELECT id FROM _emdash_collections WHERE slug = ?1", slug);
  const statements = fixtureStatements("large_collection.sql", `"ec_${slug}"`);
  for (let first = 1; first <= entries; first += chunk) {
    const last = Math.min(entries, first + chunk - 1);
    const binds = [id, slug, first, last, occurrences, revisions, revisionBytes];
    for (const sql of statements) {
      const used = Math.max(0, ...[...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
      await w.db.prepare(sql).bind(...binds.slice(0, used)).run();
    }
  }
  return { slug, id };
}

/**
 * Seeds the posts site (tests/fixtures/posts_site.json) through the API: `call(method, path,
 * body)` sends a request as the admin; `addMedia(m)` creates media `m` of the fixture (uploading
 * or registering it) and returns its item. Returns the media items by their fixture name.
 */
export async function postsSite(call, addMedia) {
  const site = JSON.parse(readFileSync(path.join(FIXTURES, "posts_site.json"), "utf8"));
  await call("POST", "/schema/collections", site.collection);
  const media = {};
  for (const m of site.media) media[m.name] = await addMedia(m);
  for (const e of site.entries) {
    const refs = Object.fromEntries(Object.entries(e.media).map(([field, name]) => [field, media[name].id]));
    await call("POST", `/content/${site.collection.slug}`, { slug: e.slug, status: e.status, data: { ...e.data, ...refs } });
  }
  return media;
}
