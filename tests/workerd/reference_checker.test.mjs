// A brute-force check of "what counts as a use" (the reference rules) against the real worker.
//
// Seeded random content (ids, asset objects, file URLs in text, HTML and Markdown, drafts,
// publishes, trash, permanent deletes, plus look-alikes that must not count) is written through
// the API; then, for every media item, "Used in" is compared with an oracle that knows nothing of
// the worker's code: it reads each entry back (live data through the API, the draft revision's
// data through the probe) and looks at every string value of it. The seed is fixed and printed
// in every failure; `REFERENCE_CHECKER_SEED=<n>` runs another one.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, rows, newCollection } from "./helpers.mjs";

const SEED = Number(process.env.REFERENCE_CHECKER_SEED ?? 20261203);
const PUBLIC_URL = "https://cdn.example.test/media";
const FILE_ROUTE = "/_emdash/api/media/file/";
const PUBLIC_PREFIX = "//cdn.example.test/media/";
const REFERENCE_TYPES = ["image_field", "file_field", "portable_text_image", "embedded_asset", "embedded_id", "embedded_url"];

const w = await startWorker({ MEDIA_PUBLIC_URL: PUBLIC_URL });
after(() => w.dispose());

// ---------------------------------------------------------------------------------------------
// Seeded randomness.

function mulberry32(a) {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = mulberry32(SEED);
const int = (n) => Math.floor(random() * n);
const pick = (xs) => xs[int(xs.length)];
const chance = (p) => random() < p;
const hex = (n) => Array.from({ length: n }, () => "0123456789abcdef"[int(16)]).join("");
const times = (n, f) => Array.from({ length: n }, (_, i) => f(i));
const say = (msg) => `[seed ${SEED}] ${msg}`;

// ---------------------------------------------------------------------------------------------
// The oracle: which media a piece of data names, by the documented rules only.

/** Every string value of `value`, at any depth (object keys are not values); the ids of an
 * object with `provider: "external"` are the provider's, not strings a page shows as media. */
function strings(value, out = []) {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value && typeof value === "object") {
    const external = typeof value.provider === "string" && value.provider.trim() === "external";
    for (const [k, v] of Object.entries(value)) if (!(external && (k === "id" || k === "_ref"))) strings(v, out);
  }
  return out;
}

/** Characters that end a URL's key: whitespace, quotes, `<>()[]{}?#&\|^` and backtick. */
const ENDS_URL = /[\s"'<>()[\]{}?#&\\|^`]/;

/**
 * Where `key` ends when written at the start of `rest`, each character either as itself (when it
 * cannot end the URL there) or percent-encoded (its UTF-8 bytes as `%XX`, either case); -1 when
 * `rest` does not start with it.
 */
function keyWrittenAt(rest, key, slashEnds) {
  let i = 0;
  for (const ch of key) {
    const rawAllowed = !ENDS_URL.test(ch) && ch !== "%" && !(slashEnds && ch === "/");
    if (rawAllowed && rest.startsWith(ch, i)) {
      i += ch.length;
      continue;
    }
    for (const byte of new TextEncoder().encode(ch)) {
      const m = /^%([0-9a-fA-F]{2})/.exec(rest.slice(i, i + 3));
      if (!m || parseInt(m[1], 16) !== byte) return -1;
      i += 3;
    }
  }
  return i;
}

/** Whether a URL's key may end before `after`: at the end, or trailing `.,;:!` then the end or
 * a character that ends a URL (or `/` on the file route, whose key is one path segment). */
function keyEndsBefore(after, slashEnds) {
  const m = /^[.,;:!]*/.exec(after);
  const next = after[m[0].length];
  return next === undefined || ENDS_URL.test(next) || (slashEnds && next === "/");
}

function namesUrl(s, prefix, key, slashEnds) {
  for (let at = s.indexOf(prefix); at >= 0; at = s.indexOf(prefix, at + 1)) {
    const rest = s.slice(at + prefix.length);
    const end = keyWrittenAt(rest, key, slashEnds);
    if (end > 0 && keyEndsBefore(rest.slice(end), slashEnds)) return true;
  }
  return false;
}

/** Whether `s` holds `id` as a whole token (no letter, digit, `-` or `_` on either side). */
function holdsToken(s, id) {
  const isIdChar = (c) => c !== undefined && /[A-Za-z0-9_-]/.test(c);
  for (let at = s.indexOf(id); at >= 0; at = s.indexOf(id, at + 1)) {
    if (!isIdChar(s[at - 1]) && !isIdChar(s[at + id.length])) return true;
  }
  return false;
}

/** Whether string `s` names media `m`: its id as a whole token, or one of its file URLs (the
 * file route's key keeps its slashes). */
function names(s, m) {
  return holdsToken(s, m.id) || namesUrl(s, FILE_ROUTE, m.key, false) || namesUrl(s, PUBLIC_PREFIX, m.key, false);
}

/** The media of `library` named anywhere in `data`. */
function used(data, library) {
  const all = strings(data);
  return new Set(library.filter((m) => all.some((s) => names(s, m))).map((m) => m.id));
}

/** The draft as the worker stores it: the live data with the revision's fields laid over it. */
function overlay(live, revision) {
  const out = { ...live };
  for (const [k, v] of Object.entries(revision)) if (!k.startsWith("_")) out[k] = v;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Content generators: every rule and position, and look-alikes that must not count.

const FIELDS = [
  { slug: "title", type: "string" },
  { slug: "hero", type: "image" },
  { slug: "doc", type: "file" },
  { slug: "body", type: "portableText" },
  { slug: "extra", type: "json" },
  { slug: "notes", type: "text" },
  { slug: "downloads", type: "repeater", subFields: [{ slug: "file", type: "file" }, { slug: "caption", type: "string" }] },
];
const EDITABLE = FIELDS.map((f) => f.slug);

const library = []; // registered media: {id, key, mimeType}
const unregistered = []; // keys content may link before their media is registered: {key, mimeType}

function mimeOf(key) {
  if (key.endsWith(".pdf")) return "application/pdf";
  if (key.endsWith(".jpg")) return "image/jpeg";
  return "image/png";
}

function keyFor(n) {
  const r = hex(6);
  switch (n % 6) {
    case 1:
      return `dir/k${n}-${r}.pdf`; // a slash: the file route names it with its slash or encoded
    case 3:
      return `k${n} ${r}.png`; // a space: only a percent-encoded URL names it
    case 4:
      return `k${n}-\u00fc${r}.jpg`; // UTF-8 when percent-encoded
    default:
      return `k${n}-${r}.png`;
  }
}

const fullEncode = (s) => Array.from(new TextEncoder().encode(s), (b) => `%${b.toString(16).padStart(2, "0")}`).join("");
const canBeRaw = (key, slashEnds) => !ENDS_URL.test(key) && !(slashEnds && key.includes("/"));

function fileUrl(key) {
  const forms = [encodeURIComponent(key), fullEncode(key)];
  if (canBeRaw(key, false)) forms.push(key, key);
  return pick(["", "", "https://site.example", "http://localhost:8787", "https://other.test"]) + FILE_ROUTE + pick(forms);
}

function publicUrl(key) {
  const forms = [encodeURI(key), encodeURIComponent(key)];
  if (canBeRaw(key, false)) forms.push(key, key);
  return pick(["https:", "http:", ""]) + PUBLIC_PREFIX + pick(forms);
}

/** A URL of a file that does not name it: look-alike keys, other origins' paths, other routes. */
function decoyUrl(key) {
  return pick([
    () => `${FILE_ROUTE}${encodeURIComponent(key)}.bak`,
    () => `${FILE_ROUTE}${encodeURIComponent(key)}2`,
    () => `https://cdn.example.test/media/${encodeURI(key)}.bak`,
    () => `https://cdn.example.test/media/${encodeURI(key)}2`,
    () => `https://elsewhere.test/media/${encodeURI(key)}`,
    () => `https://cdn.example.test/mediax/${encodeURI(key)}`,
    () => `/_emdash/api/media/${encodeURIComponent(key)}`,
    () => `${FILE_ROUTE}x${encodeURIComponent(key)}`,
    () => `${FILE_ROUTE}old/${encodeURIComponent(key)}`,
  ])();
}

/** A file (media or not yet registered) whose URLs content may carry. */
const anyFile = () => (chance(0.85) || unregistered.length === 0 ? pick(library) : pick(unregistered));
const urlOf = (key) => (chance(0.55) ? fileUrl(key) : publicUrl(key));
/** What may follow a URL in text: nothing, a terminator, a query, trailing punctuation. */
const follow = () => pick(["", "", " ", "?v=2", "#top", ".", ",", "!", ")", "'", "\n", ";x"]);

/** A string that looks like a reference: unknown ids, altered ids, an id inside text (a whole
 * token there: a use), blank. */
function decoyString() {
  const m = pick(library);
  return pick([
    () => hex(32),
    () => m.id.toUpperCase(),
    () => `${m.id}0`,
    () => m.id.slice(1),
    () => `id ${m.id}`,
    () => "",
    () => "   ",
    () => `01J${hex(23).toUpperCase()}`,
    () => decoyUrl(anyFile().key),
  ])();
}

/** A sentence that may carry references and decoys. */
function prose() {
  const parts = [pick(["Lorem ipsum", "See the files", "Caption:", "Read more"])];
  for (let i = int(3); i > 0; i--) {
    const f = anyFile();
    parts.push(
      pick([
        () => urlOf(f.key) + follow(),
        () => `(${urlOf(f.key)})`,
        () => `<img src="${urlOf(f.key)}" alt="x">`,
        () => `![pic](${urlOf(f.key)} "t")`,
        () => `[doc](${urlOf(f.key)})`,
        () => decoyString(),
        () => "plain words",
      ])(),
    );
  }
  return parts.join(" ");
}

/** A value of an image or file field (or repeater sub-field). */
function mediaValue() {
  const m = pick(library);
  return pick([
    () => m.id,
    () => ` ${m.id} `,
    () => ({ id: m.id, mimeType: m.mimeType }),
    () => ({ id: m.id, alt: `${urlOf(anyFile().key)}${follow()}` }),
    () => ({ provider: "external", id: pick(["https://ext.test/a.png", "ext-asset-1", ""]) }),
    () => ({ provider: "external", id: m.id }), // not a use: the id is the provider's
    () => hex(32),
    () => ({ id: hex(32) }),
    () => ({ id: "  " }),
    () => "",
    () => null,
  ])();
}

function asset() {
  const m = pick(library);
  return pick([
    () => ({ _ref: m.id }),
    () => ({ _ref: m.id }),
    () => ({ id: m.id }),
    () => ({ _ref: "", id: m.id }),
    () => ({ _ref: m.id, url: urlOf(anyFile().key) }),
    () => ({ _ref: hex(32) }),
    () => ({ _ref: "  " }),
    () => ({ provider: "external", _ref: pick(["https://ext.test/x.png", "ext-9", m.id.slice(4)]) }),
  ])();
}

let keys = 0;
const key = () => `k${(keys += 1)}`;

function block() {
  return pick([
    // A text block: spans, an inline image among the children, a link whose href is a file URL.
    () => {
      const children = [{ _type: "span", _key: key(), text: chance(0.4) ? prose() : "text", marks: [] }];
      if (chance(0.5)) children.push({ _type: "image", _key: key(), asset: asset() });
      if (chance(0.3)) children.push({ _type: "span", _key: key(), text: chance(0.5) ? decoyString() : "more" });
      const markDefs = chance(0.5) ? [{ _key: key(), _type: "link", href: chance(0.8) ? urlOf(anyFile().key) + pick(["", "?dl=1", "#p"]) : decoyUrl(anyFile().key) }] : [];
      return { _type: "block", _key: key(), style: "normal", children, markDefs };
    },
    // A top-level image block.
    () => ({ _type: "image", _key: key(), asset: asset(), alt: chance(0.3) ? decoyString() : "alt" }),
    // A custom gallery block.
    () => ({ _type: "gallery", _key: key(), images: times(1 + int(3), () => ({ _key: key(), asset: asset() })) }),
    // A custom block holding an id and a caption.
    () => ({ _type: "callout", _key: key(), media: chance(0.5) ? pick(library).id : decoyString(), caption: prose() }),
  ])();
}

function jsonValue(depth = 0) {
  const o = {};
  for (let i = 1 + int(4); i > 0; i--) {
    const f = anyFile();
    const [k, v] = pick([
      () => ["ogImage", chance(0.7) ? pick(library).id : decoyString()],
      () => ["og:image", urlOf(f.key)],
      () => ["html", `<p>Hi <img src="${urlOf(f.key)}" alt="x"></p>`],
      () => ["md", `![alt](${urlOf(f.key)}) and [doc](${chance(0.5) ? urlOf(anyFile().key) : decoyUrl(f.key)})`],
      () => ["cover", { asset: asset() }],
      () => ["list", [int(9), chance(0.5), pick(library).id, decoyString()]],
      () => ["weird key", decoyString()],
      () => ["n", int(100)],
      () => ["nested", depth < 2 ? jsonValue(depth + 1) : { leaf: prose() }],
    ])();
    o[k] = v;
  }
  return chance(0.15) ? [o, { extra: decoyString() }] : o;
}

/** A random value for field `slug` (null clears it). */
function fieldValue(slug) {
  switch (slug) {
    case "title":
      return pick([() => `Entry ${hex(4)}`, () => `Entry ${hex(4)}`, () => pick(library).id, () => decoyString()])();
    case "hero":
    case "doc":
      return mediaValue();
    case "body":
      return chance(0.15) ? null : times(int(5), block);
    case "extra":
      return chance(0.15) ? null : jsonValue();
    case "notes":
      // Never JSON-looking: a text that starts with `{` or `[` is read as JSON by the index.
      return pick([() => `Note: ${prose()}`, () => `Note: ${prose()}\n${prose()}`, () => `  ${pick(library).id}\n`, () => null])();
    case "downloads":
      return chance(0.15)
        ? null
        : times(int(4), () => (chance(0.8) ? { file: mediaValue(), caption: chance(0.4) ? prose() : "file" } : { caption: prose() }));
    default:
      throw new Error(slug);
  }
}

function someFields() {
  const data = {};
  for (const slug of EDITABLE) if (chance(0.35)) data[slug] = fieldValue(slug);
  if (Object.keys(data).length === 0) {
    const slug = pick(EDITABLE);
    data[slug] = fieldValue(slug);
  }
  return data;
}

function fullData() {
  const data = {};
  for (const slug of EDITABLE) if (chance(0.75)) data[slug] = fieldValue(slug);
  return data;
}

// ---------------------------------------------------------------------------------------------
// The worker's side, and the comparison.

const collections = [];
const entries = new Map(); // `${collection}/${id}` → {collection, id}
const protectedEntries = new Set(); // entries the random edits leave alone
const badTicks = [];

async function createEntry(c, data, status = pick(["published", "published", "draft"])) {
  const d = ok(await w.post(`/content/${c}`, { slug: `e-${hex(10)}`, status, data }), 201);
  entries.set(`${c}/${d.item.id}`, { collection: c, id: d.item.id });
  return d.item.id;
}

async function registerMedia(key) {
  const d = ok(await w.post("/media", { filename: key.split("/").pop(), mimeType: mimeOf(key), storageKey: key }), 201);
  const m = { id: d.item.id, key, mimeType: mimeOf(key) };
  library.push(m);
  return m;
}

async function status() {
  return ok(await w.get("/admin/media-usage/status"));
}

/**
 * Runs cron ticks until one is idle and coverage is complete (a repair run waiting at its barrier
 * is brought forward, as the seconds it waits would). Records ticks that ended in an error.
 */
async function tickUntilIdle(max = 300) {
  let last = (await rows(w, "SELECT coalesce(max(id), 0) AS id FROM _emdash_media_usage_ticks"))[0].id;
  for (let i = 1; i <= max; i++) {
    await w.scheduled();
    const ticks = await rows(w, "SELECT id, outcome, statements, details FROM _emdash_media_usage_ticks WHERE id > ?1 ORDER BY id", last);
    for (const t of ticks) {
      last = t.id;
      if (t.outcome === "error" || t.statements > 40) badTicks.push(t);
    }
    if (ticks.at(-1)?.outcome !== "idle") continue;
    if ((await status()).status === "complete") return i;
    const waiting = await rows(w, "SELECT 1 FROM _emdash_media_usage_reconciliations LIMIT 1");
    if (waiting.length === 0) return i;
    await w.db.prepare("UPDATE _emdash_media_usage_reconciliations SET next_attempt_at = '2000-01-01T00:00:00.000Z'").run();
  }
  throw new Error(say(`the ticks did not become idle in ${max} ticks`));
}

/** Every tracked entry as the API answers it now, with its draft data when it has a draft. */
async function readEntries() {
  const out = [];
  for (const [k, e] of entries) {
    const res = await w.get(`/content/${e.collection}/${e.id}`);
    if (res.status === 404) {
      entries.delete(k);
      continue;
    }
    out.push({ ...e, item: ok(res).item });
  }
  const draftIds = out.map((e) => e.item.draftRevisionId).filter(Boolean);
  const revisions = new Map();
  for (let i = 0; i < draftIds.length; i += 200) {
    const page = await rows(w, "SELECT id, data FROM revisions WHERE id IN (SELECT value FROM json_each(?1))", JSON.stringify(draftIds.slice(i, i + 200)));
    for (const r of page) revisions.set(r.id, JSON.parse(r.data));
  }
  for (const e of out) {
    const rev = e.item.draftRevisionId;
    if (rev) {
      assert.ok(revisions.has(rev), say(`draft revision ${rev} of ${e.collection}/${e.id} is readable`));
      e.draft = overlay(e.item.data, revisions.get(rev));
    }
  }
  return out;
}

/** For each media id, the entries the rules list for it ("collection/id"). */
function oracle(current) {
  const expected = new Map(library.map((m) => [m.id, new Set()]));
  for (const e of current) {
    const live = used(e.item.data, library);
    const draft = e.draft ? used(e.draft, library) : null;
    for (const m of library) {
      const listed = draft ? draft.has(m.id) || (live.has(m.id) && e.item.status === "published") : live.has(m.id);
      if (listed) expected.get(m.id).add(`${e.collection}/${e.id}`);
    }
  }
  return expected;
}

/** Every entry of "Used in" for `mediaId`, following the pages. */
async function usedIn(mediaId) {
  const items = [];
  let cursor = null;
  let coverage;
  do {
    const page = ok(await w.get(`/media/${mediaId}/usage?limit=${pick([7, 50, 100])}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`));
    items.push(...page.items);
    coverage = page.coverage.status;
    cursor = page.nextCursor;
  } while (cursor);
  return { items, coverage };
}

function describe(e) {
  return JSON.stringify({ status: e.item.status, deletedAt: e.item.deletedAt, live: e.item.data, draft: e.draft ?? null });
}

/** Settles the index, then compares "Used in" of every media item with the oracle. */
async function compare(label) {
  const ticks = await tickUntilIdle();
  const s = await status();
  assert.equal(s.status, "complete", say(`${label}: coverage after ${ticks} ticks: ${JSON.stringify(s)}`));
  assert.deepEqual(badTicks, [], say(`${label}: ticks that failed or overran their budget`));
  const current = await readEntries();
  const byKey = new Map(current.map((e) => [`${e.collection}/${e.id}`, e]));
  const expected = oracle(current);
  const problems = [];
  const typeProblems = [];
  let listings = 0;
  for (const m of library) {
    const { items, coverage } = await usedIn(m.id);
    if (coverage !== "complete") problems.push(`${m.id}: coverage ${coverage}`);
    const got = new Set();
    for (const item of items) {
      const k = `${item.collection}/${item.contentId}`;
      if (got.has(k)) problems.push(`${m.id}: ${k} listed twice`);
      got.add(k);
      const e = byKey.get(k);
      if (!e) {
        problems.push(`${m.id} (${m.key}): lists ${k}, which is gone or unknown`);
        continue;
      }
      if (item.deletedAt !== e.item.deletedAt) problems.push(`${m.id}: ${k} deletedAt ${item.deletedAt}, the entry's is ${e.item.deletedAt}`);
      if (item.status !== e.item.status) problems.push(`${m.id}: ${k} status ${item.status}, the entry's is ${e.item.status}`);
      if (item.occurrences.length === 0) problems.push(`${m.id}: ${k} has no occurrences`);
      for (const o of item.occurrences) {
        if (!REFERENCE_TYPES.includes(o.referenceType)) typeProblems.push(`${m.id}: ${k} ${o.fieldPath}: referenceType ${o.referenceType}`);
        if (!EDITABLE.includes(o.fieldSlug) || !o.fieldPath.startsWith(o.fieldSlug)) problems.push(`${m.id}: ${k}: occurrence ${JSON.stringify(o)}`);
      }
    }
    const want = expected.get(m.id);
    listings += want.size;
    for (const k of want) if (!got.has(k)) problems.push(`${m.id} (${m.key}): ${k} is not listed, the rules list it: ${describe(byKey.get(k))}`);
    for (const k of got) if (!want.has(k) && byKey.has(k)) problems.push(`${m.id} (${m.key}): ${k} is listed, the rules do not list it: ${describe(byKey.get(k))} occurrences ${JSON.stringify(items.find((i) => `${i.collection}/${i.contentId}` === k).occurrences)}`);
  }
  assert.deepEqual(problems.slice(0, 8), [], say(`${label}: ${problems.length} differences (first 8 shown)`));
  assert.deepEqual(typeProblems.slice(0, 4), [], say(`${label}: ${typeProblems.length} occurrences of undocumented types (first 4 shown)`));
  return { entries: current.length, listings, ticks };
}

// ---------------------------------------------------------------------------------------------
// The runs.

const KNOWN = {};

test("setup: 3 collections, 24 media registered by JSON, 300+ seeded entries and a known entry", async (t) => {
  t.diagnostic(`seed ${SEED}`);
  for (let i = 0; i < 3; i++) collections.push((await newCollection(w, FIELDS)).slug);
  for (let n = 0; n < 24; n++) await registerMedia(keyFor(n));
  // A stored key that extends another: a URL of the longer names only the longer.
  await registerMedia(`${library[0].key}.v2`);
  for (let n = 0; n < 4; n++) unregistered.push({ key: n === 1 ? `dir/late${n}-${hex(6)}.pdf` : `late${n}-${hex(6)}.png` });
  for (const u of unregistered) u.mimeType = mimeOf(u.key);

  const m = library;
  KNOWN.collection = collections[0];
  KNOWN.media = m;
  KNOWN.id = await createEntry(
    collections[0],
    {
      title: "Known entry",
      hero: { id: m[0].id, mimeType: "image/png" },
      doc: { id: m[12].id },
      body: [
        { _type: "block", _key: "b0", children: [{ _type: "span", _key: "s0", text: "see", marks: ["l0"] }], markDefs: [{ _key: "l0", _type: "link", href: `${FILE_ROUTE}${encodeURIComponent(m[1].key)}` }] },
        { _type: "block", _key: "b1", children: [{ _type: "span", _key: "s1", text: "x" }, { _type: "image", _key: "i1", asset: { _ref: m[2].id } }], markDefs: [] },
        { _type: "gallery", _key: "g", images: [{ _key: "g0", asset: { _ref: m[3].id } }, { _key: "g1", asset: { id: m[4].id } }] },
        { _type: "image", _key: "i3", asset: { _ref: m[5].id } },
      ],
      extra: { ogImage: m[6].id, "og:image": `${PUBLIC_URL}/${encodeURI(m[7].key)}`, nested: { list: [0, { asset: { _ref: m[8].id } }] } },
      notes: `Files: https://other.test${FILE_ROUTE}${encodeURIComponent(m[9].key)}, and ${PUBLIC_URL}/${encodeURI(m[10].key)}.`,
      downloads: [{ caption: "a" }, { caption: "b" }, { file: m[11].id, caption: "c" }],
    },
    "published",
  );
  protectedEntries.add(`${collections[0]}/${KNOWN.id}`);

  for (let i = 0; i < 320; i++) {
    const c = collections[i % 3];
    const id = await createEntry(c, fullData());
    if (chance(0.25)) ok(await w.put(`/content/${c}/${id}`, { data: someFields(), draft: true }));
  }
  assert.ok(entries.size >= 300);
});

test("Used in equals the rules for every media item after the initial content", async (t) => {
  const r = await compare("initial content");
  t.diagnostic(`seed ${SEED}: ${r.entries} entries, ${r.listings} listings, ${r.ticks} ticks`);
});

test("a known entry's occurrences have their exact paths and types", async () => {
  const m = KNOWN.media;
  const expect = [
    [0, "hero", "hero", "image_field"],
    [12, "doc", "doc", "file_field"],
    [1, "body", "body[0].markDefs[0].href", "embedded_url"],
    [2, "body", "body[1].children[1].asset._ref", "portable_text_image"],
    [3, "body", "body[2].images[0].asset._ref", "embedded_asset"],
    [4, "body", "body[2].images[1].asset.id", "embedded_asset"],
    [5, "body", "body[3].asset._ref", "portable_text_image"],
    [6, "extra", "extra.ogImage", "embedded_id"],
    [7, "extra", 'extra["og:image"]', "embedded_url"],
    [8, "extra", "extra.nested.list[1].asset._ref", "embedded_asset"],
    [9, "notes", "notes", "embedded_url"],
    [10, "notes", "notes", "embedded_url"],
    [11, "downloads", "downloads[2].file", "file_field"],
  ];
  // Two media named by one string: occurrence indexes 0 and 1, in media id order.
  const notesFirst = m[9].id < m[10].id ? 9 : 10;
  for (const [n, fieldSlug, fieldPath, referenceType] of expect) {
    const { items } = await usedIn(m[n].id);
    const item = items.find((i) => i.collection === KNOWN.collection && i.contentId === KNOWN.id);
    assert.ok(item, say(`media ${n} lists the known entry`));
    const occurrenceIndex = fieldSlug === "notes" ? (n === notesFirst ? 0 : 1) : 0;
    // A file URL's occurrence names the key it links (the item's current one here); others none.
    const linkedKey = referenceType === "embedded_url" ? m[n].key : null;
    assert.deepEqual(item.occurrences, [{ fieldSlug, fieldPath, occurrenceIndex, referenceType, linkedKey }], say(`media ${n} (${m[n].key})`));
  }
});

test("Used in equals the rules after 150 random edits", async (t) => {
  const counts = {};
  const inTrash = new Set();
  for (let i = 0; i < 150; i++) {
    // One edit in five goes to an entry in the trash (when there is one).
    const pool = chance(0.2) && inTrash.size > 0 ? [...inTrash] : [...entries.keys()].filter((k) => !protectedEntries.has(k));
    const e = entries.get(pick(pool));
    const path = `/content/${e.collection}/${e.id}`;
    const trashed = ok(await w.get(path)).item.deletedAt !== null;
    const op = trashed
      ? pick(["restore", "restore", "trash", "delete", "update", "draft", "publish"])
      : pick(["update", "update", "update", "draft", "draft", "draft", "publish", "publish", "unpublish", "trash", "trash", "delete", "create"]);
    let res;
    switch (op) {
      case "update":
        res = await w.put(path, { data: someFields() });
        break;
      case "draft":
        res = await w.put(path, { data: someFields(), draft: true });
        break;
      case "publish":
        res = await w.post(`${path}/publish`, {});
        break;
      case "unpublish":
        res = await w.post(`${path}/unpublish`, {});
        break;
      case "trash":
        res = await w.del(path);
        break;
      case "restore":
        res = await w.post(`${path}/restore`, {});
        break;
      case "delete":
        res = await w.del(`${path}?permanent=true`);
        break;
      case "create":
        await createEntry(pick(collections), fullData());
        res = { status: 201 };
        break;
    }
    // A publish over a stale draft is a conflict; everything else succeeds.
    const allowed = op === "publish" ? [200, 409] : op === "create" ? [201] : [200];
    assert.ok(allowed.includes(res.status), say(`${op} ${path}: ${res.status} ${res.text}`));
    const tag = `${op}${trashed ? " (trashed)" : ""} ${res.status}`;
    counts[tag] = (counts[tag] ?? 0) + 1;
    const k = `${e.collection}/${e.id}`;
    if (op === "delete") entries.delete(k);
    if (op === "delete" || op === "restore") inTrash.delete(k);
    if (op === "trash") inTrash.add(k);
  }
  const r = await compare("after random edits");
  t.diagnostic(`seed ${SEED}: ${JSON.stringify(counts)}; ${r.entries} entries, ${r.listings} listings, ${r.ticks} ticks`);
});

test("media registered after content linked their keys are listed once the ticks have run", async (t) => {
  // Some entries link the keys (their URLs, in any variant) before the media exist.
  const before = await readEntries();
  const linked = unregistered.some((u) =>
    before.some((e) => [e.item.data, e.draft].some((d) => d && strings(d).some((s) => names(s, { id: "\u0000", key: u.key })))),
  );
  assert.ok(linked, say("the content links some of the keys before their registration"));
  for (const u of unregistered) await registerMedia(u.key);
  unregistered.length = 0;
  assert.equal((await status()).status, "stale", say("the linking entries are queued again, so coverage is stale"));
  const r = await compare("after late registrations");
  t.diagnostic(`seed ${SEED}: ${r.entries} entries, ${r.listings} listings, ${r.ticks} ticks`);
});

test("Used in equals the rules after a repair of every collection", async (t) => {
  const started = ok(await w.post("/admin/media-usage/repair", { scope: "all" }));
  assert.equal(started.started, collections.length, JSON.stringify(started));
  const r = await compare("after repair");
  t.diagnostic(`seed ${SEED}: ${r.entries} entries, ${r.listings} listings, ${r.ticks} ticks`);
});
