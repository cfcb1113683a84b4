// The operator console: a client of the documented JSON API only. The token lives in this tab's
// sessionStorage, is sent only as a bearer token to the API, and no API call is made before one
// is entered. Everything shown is built with DOM text nodes (never HTML from data).
"use strict";

const API = "/_emdash/api";
const TOKEN_KEY = "emdash.mediaUsage.token";
const VIEWS = ["coverage", "work", "deletions", "ticks", "media"];

const $ = (id) => document.getElementById(id);

/** An element with attributes (`on…` are listeners) and children (strings become text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const svg = (tag, attrs = {}, ...children) => {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
};

/** Replaces an element's children; absent ones (null, undefined, false) are left out. */
const put = (el, ...children) => el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));

const badge = (value) => h("span", { class: `badge ${value ?? "unknown"}` }, value ?? "none");
const when = (t) => (t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "—");
const orDash = (v) => (v === null || v === undefined || v === "" ? "—" : v);

/** A table inside its own horizontally scrolling, focusable region. */
function table(label, headers, rows) {
  return h(
    "div",
    { class: "scroll", role: "region", "aria-label": label, tabindex: "0" },
    h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))), h("tbody", {}, rows)),
  );
}

// ---------------------------------------------------------------------------------------------
// The token and the API.

class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details ?? null;
  }
}

let token = sessionStorage.getItem(TOKEN_KEY);

async function api(method, path, body) {
  if (!token) throw new ApiError(401, "UNAUTHORIZED", "No API token");
  const headers = { authorization: `Bearer ${token}`, accept: "application/json" };
  // A form (a file) is sent as multipart, its boundary chosen by the browser; anything else as JSON.
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers["content-type"] = "application/json";
  let res;
  try {
    res = await fetch(API + path, {
      method,
      headers,
      body: body === undefined ? undefined : form ? body : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new ApiError(0, "NETWORK_ERROR", "The worker could not be reached");
  }
  let json = null;
  try {
    json = await res.json();
  } catch {
    json = null;
  }
  if (res.ok && json && json.success === true) return json.data;
  const e = (json && json.error) || {};
  const err = new ApiError(res.status, e.code || `HTTP_${res.status}`, e.message || res.statusText || "Request failed", e.details);
  if (res.status === 401) signOut(`The token was refused: ${err.message} (${err.code}). Paste a valid API token.`);
  throw err;
}

/** What went wrong, in words, with its code. */
function describe(e) {
  if (!(e instanceof ApiError)) return `Something went wrong in the page: ${e && e.message ? e.message : e}`;
  const words = {
    FORBIDDEN: "This token's role may not do that.",
    INSUFFICIENT_SCOPE: "This token lacks the scope for that.",
    WORK_LEASE_ACTIVE: `It is being processed right now${e.details && e.details.leaseExpiresAt ? ` (until ${when(e.details.leaseExpiresAt)})` : ""}; try again after that.`,
    WORK_CHANGED: "It changed meanwhile (reload to see its current state).",
    COLLECTION_NOT_FOUND: "That collection is not actively indexed (it may be being deleted).",
    MEDIA_USAGE_COVERAGE_INCOMPLETE:
      "The usage index is not complete, so it cannot prove this media is unused. Run a repair from the Coverage tab, then try again.",
    NETWORK_ERROR: "The worker could not be reached.",
    INTERNAL_ERROR: "The worker failed to answer (see its log).",
  };
  const text = words[e.code] || `${e.message}.`;
  return `${text} (${e.code}${e.status ? `, HTTP ${e.status}` : ""})`;
}

function showError(e) {
  if (e instanceof ApiError && e.status === 401) return; // the token prompt says it
  const box = $("error");
  put(box, describe(e));
  box.hidden = false;
}

function notice(text) {
  $("notice").textContent = text;
}

function clearMessages() {
  $("error").hidden = true;
  put($("error"), );
  notice("");
}

function signOut(message) {
  token = null;
  forgetStatus();
  sessionStorage.removeItem(TOKEN_KEY);
  $("app").hidden = true;
  $("forget").hidden = true;
  $("login").hidden = false;
  const m = $("login-message");
  if (message) {
    m.textContent = message;
    m.classList.add("problem");
    m.setAttribute("role", "alert");
  }
  $("token").value = "";
  $("token").focus();
}

function signIn(value) {
  token = value;
  forgetStatus();
  sessionStorage.setItem(TOKEN_KEY, value);
  $("login").hidden = true;
  $("app").hidden = false;
  $("forget").hidden = false;
  $("login-message").classList.remove("problem");
  $("login-message").removeAttribute("role");
  select(current, false);
}

// ---------------------------------------------------------------------------------------------
// Tabs.

let current = "coverage";

function select(view, focus) {
  current = view;
  for (const v of VIEWS) {
    const tab = $(`tab-${v}`);
    const on = v === view;
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    $(`panel-${v}`).hidden = !on;
    if (on && focus) tab.focus();
  }
  clearMessages();
  load(view);
}

async function load(view) {
  const loaders = { coverage: showCoverage, work: showWork, deletions: showDeletions, ticks: showTicks, media: showLibrary };
  try {
    await loaders[view]();
  } catch (e) {
    showError(e);
  }
}

/** Runs an action, then reloads the view (and the status); errors are shown in words. */
async function act(button, action) {
  button.disabled = true;
  clearMessages();
  try {
    notice(await action());
  } catch (e) {
    showError(e);
  }
  forgetStatus();
  try {
    await reloadKeepingMessages();
  } catch (e) {
    showError(e);
  }
  button.disabled = false;
}

async function reloadKeepingMessages() {
  const loaders = { coverage: showCoverage, work: showWork, deletions: showDeletions, ticks: showTicks, media: showLibrary };
  await loaders[current]();
}

// ---------------------------------------------------------------------------------------------
// Coverage.

// The status is read once for the session and read again only on an explicit Reload or after an
// action: changing views reuses it (each read costs D1 statements and rows).
let statusRead = null;
const status = () => {
  statusRead ??= api("GET", "/admin/media-usage/status").catch((e) => {
    statusRead = null;
    throw e;
  });
  return statusRead;
};
function forgetStatus() {
  statusRead = null;
}

async function repair(body, what) {
  const r = await api("POST", "/admin/media-usage/repair", body);
  const rest = r.status === "complete" ? "coverage is complete" : `coverage is ${r.status}; cron ticks continue it`;
  return `Repair of ${what}: ${r.started} run(s) started, ${rest}.`;
}

async function showCoverage() {
  const s = await status();
  const rows = s.collections.map((c) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, c.collection),
      h("td", {}, badge(c.status)),
      h("td", {}, badge(c.captureState)),
      h("td", {}, String(c.changeEpoch)),
      h("td", {}, c.reconciliationRequired ? "yes" : "no"),
      h("td", {}, orDash(c.lastErrorCode)),
      h(
        "td",
        {},
        h(
          "button",
          {
            type: "button",
            class: "small",
            "aria-label": `Repair ${c.collection}`,
            disabled: c.captureState !== "active",
            title: c.captureState !== "active" ? "Only an actively indexed collection can be repaired" : undefined,
            onclick: (ev) => act(ev.currentTarget, () => repair({ scope: "collection", collection: c.collection }, c.collection)),
          },
          "Repair",
        ),
      ),
    ),
  );
  const repairs = s.repairs.map((r) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, r.collection),
      h("td", {}, r.phase),
      h("td", {}, badge(r.state)),
      h("td", {}, String(r.entriesLeft)),
      h("td", {}, String(r.queuedLeft)),
      h("td", {}, estimateText(r.estimate)),
    ),
  );
  put($("coverage-view"), 
    h("p", {}, "Overall coverage: ", badge(s.status)),
    h(
      "p",
      { class: "muted" },
      `Tick budget: ${s.tickBudget.maxStatements} statements, ${s.tickBudget.maxMs} ms, ${count(s.tickBudget.maxRowsWritten)} rows written, ${count(s.tickBudget.maxRowsRead)} rows read. Collections being deleted: ${s.deletions.length}.`,
    ),
    h("p", { class: "muted" }, dailyText(s.daily)),
    rows.length
      ? table("Coverage per collection", ["Collection", "Status", "Capture", "Epoch", "Reconciliation required", "Last error", "Repair"], rows)
      : h("p", {}, "No collections yet."),
    repairs.length
      ? table("Repairs in progress", ["Collection", "Phase", "State", "Entries to scan", "Queued", "Estimate"], repairs)
      : null,
  );
}

const count = (n) => Number(n).toLocaleString("en-US");

/** The daily budget of background work in words: the day's use, and whether lanes rest. */
function dailyText(d) {
  const used = `Background work on ${d.day} (UTC): ${count(d.rowsWritten)} rows written, ${count(d.rowsRead)} read in ${d.ticks} tick(s)`;
  if (!d.budget) return `${used}; no daily budget.`;
  return d.spent
    ? `${used} of a daily budget of ${count(d.budget)}: spent, so deletions, repairs and the storage sweep rest until the next UTC day (content is still indexed).`
    : `${used} of a daily budget of ${count(d.budget)} (${count(d.remaining)} left).`;
}

/** What a deletion has left, from the status: while its lane is still counting, a lower bound. */
function rowsLeftText(p) {
  const left = p.counting ? `at least ${count(p.rowsLeft)} rows left (counting)` : `${count(p.rowsLeft)} rows left`;
  return `${left}; ${estimateText(p.estimate)}`;
}

/** When background work is expected to finish, in words. */
function estimateText(e) {
  const days = e.days ? `, on ${e.days} more day(s) of the daily budget` : "";
  return `${count(e.rowsToWrite)} rows to write: at least ${e.ticks} tick(s)${days}, done ${e.days ? "by" : "on"} ${e.finishDay} (UTC)`;
}

// ---------------------------------------------------------------------------------------------
// Work: failed and retrying jobs of every collection (the API lists one collection per call).

async function pages(path, max = 10) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < max; i++) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api("GET", `${path}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (!cursor) return { items, more: false };
  }
  return { items, more: true };
}

async function showWork() {
  const s = await status();
  const rows = [];
  let more = false;
  for (const c of s.collections) {
    for (const state of ["failed", "retry"]) {
      const got = await pages(`/admin/media-usage/work?collection=${encodeURIComponent(c.collection)}&state=${state}&limit=100`);
      more ||= got.more;
      for (const w of got.items) {
        rows.push(
          h(
            "tr",
            {},
            h("td", {}, w.collectionSlug),
            h("th", { scope: "row" }, w.contentId),
            h("td", {}, badge(w.state)),
            h("td", {}, String(w.attemptCount)),
            h("td", {}, orDash(w.lastErrorCode)),
            h("td", {}, when(w.nextAttemptAt)),
            h("td", {}, when(w.lastAttemptedAt)),
            h(
              "td",
              {},
              h(
                "button",
                {
                  type: "button",
                  class: "small",
                  "aria-label": `Retry ${w.collectionSlug} ${w.contentId}`,
                  onclick: (ev) =>
                    act(ev.currentTarget, async () => {
                      const r = await api("POST", "/admin/media-usage/work/retry", { collectionId: w.collectionId, contentId: w.contentId });
                      return `Job for ${w.collectionSlug} ${w.contentId} is ${r.item ? r.item.state : "queued"} again.`;
                    }),
                },
                "Retry",
              ),
            ),
          ),
        );
      }
    }
  }
  put($("work-view"), 
    h("p", {}, `${rows.length} failed or retrying job(s) across ${s.collections.length} collection(s).`),
    more ? h("p", { class: "muted" }, "Only the first 1,000 per collection and state are shown.") : null,
    rows.length
      ? table("Failed and retrying jobs", ["Collection", "Entry", "State", "Attempts", "Error", "Next attempt", "Last attempt", "Retry"], rows)
      : h("p", {}, "No failed or retrying jobs."),
  );
}

// ---------------------------------------------------------------------------------------------
// Deletions.

async function showDeletions() {
  const s = await status();
  const progress = new Map(s.deletions.map((d) => [d.collectionId, d]));
  const items = [];
  let more = false;
  for (const state of ["pending", "leased", "retry", "failed"]) {
    const got = await pages(`/admin/media-usage/collection-deletions?state=${state}&limit=100`, 5);
    items.push(...got.items);
    more ||= got.more;
  }
  const rows = items.map((d) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, d.collectionSlug),
      h("td", {}, d.phase),
      h("td", {}, badge(d.state)),
      h("td", {}, String(d.attemptCount)),
      h("td", {}, orDash(d.lastErrorCode)),
      h("td", {}, when(d.nextAttemptAt)),
      h("td", {}, when(d.leaseExpiresAt)),
      h("td", {}, progress.has(d.collectionId) ? rowsLeftText(progress.get(d.collectionId)) : "—"),
      h(
        "td",
        {},
        h(
          "button",
          {
            type: "button",
            class: "small",
            "aria-label": `Retry deletion of ${d.collectionSlug}`,
            disabled: d.state === "pending",
            onclick: (ev) =>
              act(ev.currentTarget, async () => {
                const r = await api("POST", "/admin/media-usage/collection-deletions/retry", { collectionId: d.collectionId });
                return `Deletion of ${d.collectionSlug} is ${r.item ? r.item.state : "pending"} again at phase ${r.item ? r.item.phase : d.phase}.`;
              }),
          },
          "Retry",
        ),
      ),
    ),
  );
  put($("deletions-view"), 
    h("p", {}, `${rows.length} collection deletion(s) in progress or failed.`),
    h("p", { class: "muted" }, dailyText(s.daily)),
    more ? h("p", { class: "muted" }, "Only the first 500 per state are shown.") : null,
    rows.length
      ? table("Collection deletions", ["Collection", "Phase", "State", "Attempts", "Error", "Next attempt", "Lease expires", "Estimate", "Retry"], rows)
      : h("p", {}, "No collection deletions."),
  );
}

// ---------------------------------------------------------------------------------------------
// Ticks.

function tickChart(ticks, budget) {
  const W = 720;
  const H = 220;
  const pad = { l: 36, r: 8, t: 12, b: 24 };
  const top = Math.max(budget, ...ticks.map((t) => t.statements), 1);
  const y = (v) => pad.t + (H - pad.t - pad.b) * (1 - v / top);
  const slot = (W - pad.l - pad.r) / Math.max(ticks.length, 1);
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "ticks-chart-title" });
  chart.append(svg("title", { id: "ticks-chart-title" }, `Statements per tick for the last ${ticks.length} ticks, against the budget of ${budget}`));
  chart.append(svg("line", { class: "axis", x1: pad.l, x2: W - pad.r, y1: y(0), y2: y(0) }));
  ticks.forEach((t, i) => {
    const bar = svg("rect", {
      class: `bar ${t.outcome}`,
      x: pad.l + i * slot + slot * 0.15,
      width: Math.max(slot * 0.7, 1),
      y: y(t.statements),
      height: Math.max(y(0) - y(t.statements), 0),
      "data-tick": t.id,
    });
    bar.append(
      svg("title", {}, `Tick ${t.id} at ${when(t.startedAt)}: ${t.statements} statements, lanes ${t.lane || "none"}, ${t.outcome}, ${t.rowsWritten} rows written, ${t.rowsRead ?? 0} read${t.details && t.details.dailyBudgetSpent ? ", daily budget spent" : ""}, ${t.durationMs} ms`),
    );
    chart.append(bar);
  });
  chart.append(svg("line", { class: "limit", x1: pad.l, x2: W - pad.r, y1: y(budget), y2: y(budget) }));
  chart.append(svg("text", { x: 2, y: y(budget) + 4 }, String(budget)));
  chart.append(svg("text", { x: 2, y: y(0) + 4 }, "0"));
  chart.append(svg("text", { x: pad.l, y: H - 6 }, "oldest"));
  chart.append(svg("text", { x: W - pad.r - 40, y: H - 6 }, "newest"));
  return chart;
}

async function showTicks() {
  const [s, page] = await Promise.all([status(), api("GET", "/admin/media-usage/ticks?limit=60")]);
  const budget = s.tickBudget.maxStatements;
  const ticks = [...page.items].reverse();
  const rows = page.items.map((t) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, String(t.id)),
      h("td", {}, when(t.startedAt)),
      h("td", {}, t.lane || "—"),
      h("td", {}, badge(t.outcome)),
      h("td", {}, `${t.statements} / ${budget}`),
      h("td", {}, `${count(t.rowsWritten)} / ${count(s.tickBudget.maxRowsWritten)}`),
      h("td", {}, `${count(t.rowsRead ?? 0)} / ${count(s.tickBudget.maxRowsRead)}`),
      h("td", {}, `${t.durationMs} ms`),
      h("td", {}, t.details ? String(t.details.jobs ?? 0) : "—"),
      h("td", {}, t.details && t.details.error ? t.details.error : "—"),
    ),
  );
  put($("ticks-view"), 
    ticks.length ? tickChart(ticks, budget) : null,
    ticks.length
      ? h(
          "p",
          { class: "legend" },
          `Bars: statements per tick (blue progress, amber stopped by the budget, grey idle, red error); dashed line: the budget of ${budget} statements and ${s.tickBudget.maxMs} ms per tick.`,
        )
      : null,
    rows.length
      ? table("Recent ticks", ["Tick", "Started", "Lanes", "Outcome", "Statements", "Rows written", "Rows read", "Duration", "Jobs", "Error"], rows)
      : h("p", {}, "No ticks recorded yet."),
  );
}

// ---------------------------------------------------------------------------------------------
// Media: the library (a grid with filters, search, paging, selection and the trash), and where
// one item is used.

/** Items a "Load more" adds (a filtered page may hold fewer: it examines a bounded window). */
const PAGE = 24;
/** The most requests one load makes while filtered pages come back short. */
const PAGE_REQUESTS = 10;
/** The most ids one bulk delete takes (the API's limit). */
const BULK_MAX = 100;

// `usageHidden`: the token's role is below editor, so the API shows no usage (no counts, no
// Used/Unused filter); learnt from its answers.
const library = { filter: "all", search: "", items: [], cursor: null, selected: new Set(), coverage: null, usageHidden: false };
let media = { id: null, cursors: [null] };

const plural = (n, one, many) => `${count(n)} ${n === 1 ? one : many}`;
const complete = () => library.coverage === "complete";

function libraryPath(cursor) {
  const q = new URLSearchParams({ limit: String(PAGE), include: "usage" });
  if (library.filter === "used" || library.filter === "unused") q.set("usage", library.filter);
  if (library.filter === "trash") q.set("trashed", "true");
  if (library.search) q.set("search", library.search);
  if (cursor) q.set("cursor", cursor);
  return `/media?${q}`;
}

/** Up to a page of items after `cursor`, going on while filtered pages come back short. */
async function fetchLibrary(cursor) {
  const items = [];
  let next = cursor;
  for (let i = 0; i < PAGE_REQUESTS; i++) {
    const page = await api("GET", libraryPath(next));
    items.push(...page.items);
    next = page.nextCursor;
    if (!next || items.length >= PAGE) break;
  }
  return { items, cursor: next };
}

const refused = (e) => e instanceof ApiError && (e.code === "FORBIDDEN" || e.code === "INSUFFICIENT_SCOPE");

/** The Media view: coverage (which decides whether "Unused" can be offered), the first page of
 * the library as filtered, and the item whose "Used in" is open. A token below admin may not
 * read coverage; one below editor sees no usage at all: the view shows what it may. */
async function showLibrary() {
  let s = null;
  try {
    s = await status();
  } catch (e) {
    if (!refused(e)) throw e;
  }
  library.coverage = s ? s.status : null;
  let got;
  for (;;) {
    if (library.usageHidden && (library.filter === "used" || library.filter === "unused")) library.filter = "all";
    if (!complete() && library.filter === "unused") library.filter = "all";
    try {
      got = await fetchLibrary(null);
      break;
    } catch (e) {
      // A usage filter refused: this token's role is below editor.
      if (!(refused(e) && (library.filter === "used" || library.filter === "unused"))) throw e;
      library.usageHidden = true;
    }
  }
  if (library.filter !== "trash" && got.items.some((m) => !("usageCount" in m))) library.usageHidden = true;
  syncFilters(s);
  library.items = got.items;
  library.cursor = got.cursor;
  const shown = new Set(got.items.map((m) => m.id));
  library.selected = new Set([...library.selected].filter((id) => shown.has(id)));
  renderLibrary();
  if (media.id) await refreshMedia();
}

/** The filter buttons as the token and the coverage allow, with the reason when one is off. */
function syncFilters(s) {
  const used = document.querySelector('[data-filter="used"]');
  const unused = document.querySelector('[data-filter="unused"]');
  used.disabled = library.usageHidden;
  unused.disabled = library.usageHidden || !complete();
  const reason = $("unused-reason");
  reason.textContent = library.usageHidden
    ? "“Used” and “Unused” are for editors and admins: this token's role may not see what uses an item."
    : complete()
      ? ""
      : s
        ? `“Unused” is unavailable: coverage is ${s.status}, so the index cannot prove that nothing uses an item. Run a repair from the Coverage tab.`
        : "“Unused” is unavailable: this token may not read the coverage that would prove an item unused (admins only).";
  reason.hidden = !reason.textContent;
  for (const b of document.querySelectorAll("#media-filters [data-filter]")) {
    b.setAttribute("aria-pressed", String(b.dataset.filter === library.filter));
  }
}

function renderLibrary() {
  const trash = library.filter === "trash";
  put($("media-grid"), library.items.map(card));
  $("media-selection").hidden = trash;
  $("load-more").hidden = !library.cursor;
  const what = {
    all: "in the library",
    used: "used by at least one entry",
    unused: "used by no entry",
    trash: "in the trash",
  }[library.filter];
  const matching = library.search ? ` whose file name contains “${library.search}”` : "";
  $("library-summary").textContent = library.items.length
    ? `${plural(library.items.length, "item", "items")} ${what}${matching}${library.cursor ? " shown (Load more for the rest)" : ""}.`
    : `No media ${what}${matching}${library.cursor ? " yet (Load more to look further)" : ""}.`;
  syncSelection();
}

const size = (n) => (n === null || n === undefined ? null : n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`);

function usageText(m) {
  if (!("usageCount" in m)) return "Usage is shown to editors and admins";
  const n = m.usageCount;
  if (n === undefined || n === null) return "Usage unknown";
  if (n > 0) return `Used in ${m.usageCountCapped ? `${count(n)} or more entries` : plural(n, "entry", "entries")}`;
  // Entries in the trash do not count, though they still block a delete (409 explains it).
  if (complete()) return "Not used by entries outside the trash";
  return library.coverage ? `No indexed use (coverage is ${library.coverage})` : "No indexed use";
}

/** What stands in for a thumbnail: the file's type. */
const placeholder = (m) => h("span", { class: "placeholder", "aria-hidden": "true" }, (m.mimeType.split("/")[1] || "file").slice(0, 12).toUpperCase());

function card(m) {
  const trash = library.filter === "trash";
  // An item in the trash is not served (its file route answers 404): its type stands in.
  const thumb = m.mimeType.startsWith("image/") && !trash
    ? h("img", {
        src: m.url,
        alt: "",
        loading: "lazy",
        decoding: "async",
        width: m.width || undefined,
        height: m.height || undefined,
        onerror: (ev) => ev.currentTarget.replaceWith(placeholder(m)),
      })
    : placeholder(m);
  const details = [m.mimeType, size(m.size), m.width && m.height ? `${m.width}\u00a0×\u00a0${m.height}` : null].filter(Boolean).join(" · ");
  return h(
    "li",
    { class: "card", "data-id": m.id },
    trash
      ? null
      : h("input", {
          type: "checkbox",
          class: "pick",
          "aria-label": `Select ${m.filename}`,
          onchange: (ev) => pick([m.id], ev.currentTarget.checked),
        }),
    // The thumbnail opens the item too (by mouse); the button with the file name is the one
    // control for it by keyboard and to assistive technology.
    h("div", { class: "frame", onclick: () => openItem(m.id) }, thumb),
    h("button", { type: "button", class: "open", "aria-label": `Show where ${m.filename} is used`, onclick: () => openItem(m.id) }, m.filename),
    h("p", { class: "meta" }, details),
    h("p", { class: "meta usage" }, trash ? `In the trash since ${when(m.deletedAt)}` : usageText(m)),
    trash
      ? h(
          "button",
          { type: "button", class: "secondary small", "aria-label": `Restore media ${m.filename}`, onclick: (ev) => restoreFromTrash(ev.currentTarget, m) },
          "Restore",
        )
      : null,
  );
}

function pick(ids, on) {
  for (const id of ids) on ? library.selected.add(id) : library.selected.delete(id);
  syncSelection();
}

/** The selection as the page shows it: each checkbox, "Select all shown", the count, the button. */
function syncSelection() {
  const shown = library.items.map((m) => m.id);
  const picked = shown.filter((id) => library.selected.has(id)).length;
  const all = $("select-all");
  all.checked = shown.length > 0 && picked === shown.length;
  all.indeterminate = picked > 0 && picked < shown.length;
  all.disabled = shown.length === 0;
  $("trash-selected").disabled = library.selected.size === 0;
  $("selection-count").textContent = `${count(library.selected.size)} selected`;
  for (const li of $("media-grid").children) {
    const on = library.selected.has(li.dataset.id);
    li.classList.toggle("selected", on);
    const box = li.querySelector(".pick");
    if (box) box.checked = on;
  }
}

/** A bulk delete's answer for one item, in words. */
function bulkWords(r) {
  switch (r.status) {
    case "trashed":
      return "moved to the trash";
    case "in_use":
      return `kept: still used in ${r.entries.map((e) => `${e.collection} / ${e.slug || e.contentId}`).join(", ") || "an entry too large to index"}`;
    case "coverage_incomplete":
      return "kept: the usage index is not complete, so it cannot prove the item unused (run a repair from the Coverage tab)";
    default:
      return "not found (deleted meanwhile)";
  }
}

async function trashSelected(button) {
  const ids = [...library.selected];
  if (!ids.length) return;
  button.disabled = true;
  clearMessages();
  const names = new Map(library.items.map((m) => [m.id, m.filename]));
  const results = [];
  try {
    for (let i = 0; i < ids.length; i += BULK_MAX) {
      results.push(...(await api("POST", "/media/bulk-delete", { ids: ids.slice(i, i + BULK_MAX) })).items);
    }
  } catch (e) {
    showError(e);
  }
  if (results.length) {
    const moved = results.filter((r) => r.status === "trashed").length;
    const kept = results.length - moved;
    put(
      $("bulk-result"),
      h(
        "div",
        { class: kept ? "report refusal" : "report", role: kept ? "alert" : "status" },
        h("p", {}, `Moved ${plural(moved, "item", "items")} to the trash${kept ? `; kept ${count(kept)}` : ""}.`),
        h(
          "ul",
          { class: "entries", "aria-label": "What happened to each selected item" },
          results.map((r) => h("li", { "data-status": r.status }, `${names.get(r.id) || r.id}: ${bulkWords(r)}`)),
        ),
      ),
    );
    const answered = new Set(results.map((r) => r.id));
    library.selected = new Set(ids.filter((id) => !answered.has(id)));
  }
  try {
    await showLibrary();
  } catch (e) {
    showError(e);
  }
}

async function restoreFromTrash(button, m) {
  button.disabled = true;
  clearMessages();
  try {
    await api("POST", `/media/${encodeURIComponent(m.id)}/restore`);
    put($("bulk-result"), h("p", { class: "report", role: "status" }, `Restored “${m.filename}”: its file is served again at the same URL.`));
    await showLibrary();
  } catch (e) {
    button.disabled = false;
    showError(e);
  }
}

async function loadMore(button) {
  button.disabled = true;
  try {
    const first = library.items.length;
    const got = await fetchLibrary(library.cursor);
    const known = new Set(library.items.map((m) => m.id));
    library.items.push(...got.items.filter((m) => !known.has(m.id)));
    library.cursor = got.cursor;
    renderLibrary();
    // Keyboard users go on from the first item added.
    const added = $("media-grid").children[first];
    if (added) added.querySelector("button.open").focus();
  } catch (e) {
    showError(e);
  }
  button.disabled = false;
}

/** Arrow keys (and Home, End) move between the items of the grid, row by row. */
function gridKeys(ev) {
  if (!ev.target.classList || !ev.target.classList.contains("open")) return;
  const opens = [...$("media-grid").querySelectorAll("button.open")];
  const i = opens.indexOf(ev.target);
  const top = (b) => Math.round(b.getBoundingClientRect().top);
  const columns = Math.max(1, opens.filter((b) => top(b) === top(opens[0])).length);
  const j = { ArrowRight: i + 1, ArrowLeft: i - 1, ArrowDown: i + columns, ArrowUp: i - columns, Home: 0, End: opens.length - 1 }[ev.key];
  if (j === undefined) return;
  ev.preventDefault();
  if (j >= 0 && j < opens.length) opens[j].focus();
}

async function filterBy(filter) {
  if (filter === library.filter) return;
  library.filter = filter;
  library.selected.clear();
  clearMessages();
  put($("bulk-result"));
  try {
    await showLibrary();
  } catch (e) {
    showError(e);
  }
}

async function openItem(id) {
  media = { id, cursors: [null] };
  clearMessages();
  try {
    await refreshMedia();
    $("media-view").focus();
  } catch (e) {
    showError(e);
  }
}

async function refreshMedia() {
  if (!media.id) return;
  const id = media.id;
  const cursor = media.cursors[media.cursors.length - 1];
  const path = `/media/${encodeURIComponent(id)}`;
  let item;
  try {
    item = (await api("GET", `${path}?includeUsage=true`)).item;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      put($("media-view"), h("p", { class: "refusal" }, `No media has the ID “${id}”. (${e.code}, HTTP 404)`));
      return;
    }
    throw e;
  }
  // "Used in" is for editors and admins: below editor the item is shown without it (its alt
  // text and caption can still be edited, on the token's own uploads).
  let page = null;
  try {
    page = await api("GET", `${path}/usage?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
  } catch (e) {
    if (!refused(e)) throw e;
  }
  const count = item.usage ? item.usage.count : null;
  const counted = !page
    ? "Where it is used is shown to editors and admins: this token's role may not see it."
    : count === null || count === undefined
      ? "Usage count: unknown until coverage is complete."
      : `Used by ${count} entr${count === 1 ? "y" : "ies"} outside the trash.`;
  const coverage = page ? page.coverage.status : item.usage ? item.usage.coverage.status : null;
  const rows = (page ? page.items : []).map((u) =>
    h(
      "tr",
      {},
      h("td", {}, u.collection),
      h("th", { scope: "row" }, u.title || u.slug || u.contentId),
      h("td", {}, orDash(u.slug)),
      h("td", {}, orDash(u.status)),
      h("td", {}, u.deletedAt ? `in the trash since ${when(u.deletedAt)}` : "live"),
      h("td", { class: "wrap" }, u.occurrences.map((o) => `${o.fieldPath} (${o.referenceType})`).join(", ")),
      h("td", { class: "wrap" }, linksTo(u, item)),
    ),
  );
  const pager = h(
    "div",
    { class: "pager" },
    media.cursors.length > 1
      ? h("button", { type: "button", class: "secondary", onclick: () => pageTo(media.cursors.slice(0, -1)) }, "Previous page")
      : null,
    page && page.nextCursor ? h("button", { type: "button", class: "secondary", onclick: () => pageTo([...media.cursors, page.nextCursor]) }, "Next page") : null,
  );
  put($("media-view"), 
    h("h2", {}, `${item.filename} `, h("span", { class: "muted" }, `(${item.mimeType})`)),
    item.url ? h("p", {}, h("a", { href: item.url, target: "_blank", rel: "noopener noreferrer" }, "Open the file")) : null,
    h("p", {}, `${counted} Coverage: `, badge(coverage)),
    !page
      ? null
      : rows.length
        ? table("Used in", ["Collection", "Entry", "Slug", "Status", "Where", "Occurrences", "Links to"], rows)
        : h("p", {}, media.cursors.length > 1 || page.unindexed.length ? "No more indexed entries." : "Not used in any entry."),
    page && page.unindexed.length
      ? h(
          "p",
          { class: "refusal", id: "unindexed" },
          `Also used by ${page.unindexed.length} entr${page.unindexed.length === 1 ? "y" : "ies"} too large to index (see Work): `,
          page.unindexed.map((u) => `${u.collection}/${u.contentId}`).join(", "),
        )
      : null,
    pager,
    item.deletedAt
      ? h("p", {}, `In the trash since ${when(item.deletedAt)}: its file is not served until it is restored.`)
      : null,
    metadataForm(item),
    fileSection(item, page),
    h("div", { id: "delete-result" }),
    h("div", { id: "restore-result" }),
    h(
      "div",
      { class: "toolbar" },
      item.deletedAt
        ? h(
            "button",
            { type: "button", class: "secondary", "aria-label": `Restore media ${item.filename}`, onclick: (ev) => restoreMedia(ev.currentTarget, item) },
            "Restore",
          )
        : h(
            "button",
            { type: "button", id: "delete-media", onclick: (ev) => deleteMedia(ev.currentTarget, item) },
            `Move ${item.filename} to the trash`,
          ),
      h("button", { type: "button", class: "secondary", "aria-label": `Close where ${item.filename} is used`, onclick: () => closeItem(item.id) }, "Close"),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// The item's file: replace it, its earlier versions, revert, update links.

/** The earlier files an entry of "Used in" links to by URL (its `versions`: the keys of the
 * item's versions its file URLs name): "current file" when none. */
function linksTo(u, item) {
  const earlier = u.versions || [];
  if (!earlier.length) return "current file";
  const names = new Map((item.versions || []).map((v) => [v.storageKey, `the version replaced ${when(v.replacedAt)}`]));
  return earlier.map((k) => names.get(k) || `an earlier version (${k})`).join(", ");
}

const sizeText = (n) => (n === null || n === undefined ? "—" : n < 1024 ? `${n} bytes` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);
const isImage = (type) => typeof type === "string" && type.startsWith("image/") && type !== "image/svg+xml";

/** The file section of an item's view: its current file, "Replace file" (with a preview of the
 * chosen file), the earlier versions with the entries still linking to each, "Revert" and
 * "Update links" with its progress. */
function fileSection(item, page) {
  const versions = item.versions || [];
  const linked = versions.reduce((n, v) => n + (v.linked || 0), 0);
  const rows = versions.map((v) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, when(v.replacedAt)),
      h("td", {}, orDash(v.replacedBy)),
      h("td", { class: "wrap" }, v.url ? h("a", { href: v.url, target: "_blank", rel: "noopener noreferrer" }, v.filename) : v.filename),
      h("td", {}, `${v.mimeType}, ${sizeText(v.size)}`),
      h("td", {}, v.linked ? `${v.linked} entr${v.linked === 1 ? "y" : "ies"}` : "none"),
      h(
        "td",
        {},
        item.deletedAt
          ? "—"
          : h(
              "button",
              { type: "button", class: "secondary", "aria-label": `Revert to the version replaced ${when(v.replacedAt)}`, onclick: (ev) => revertTo(ev.currentTarget, item, v) },
              "Revert",
            ),
      ),
    ),
  );
  return h(
    "section",
    { id: "file-section", "aria-labelledby": "file-title" },
    h("h3", { id: "file-title" }, "File"),
    h(
      "div",
      { class: "current-file" },
      item.url && isImage(item.mimeType) ? h("img", { src: item.url, alt: item.alt || "", class: "preview", loading: "lazy" }) : null,
      h("p", {}, `Current file: ${item.filename} (${item.mimeType}, ${sizeText(item.size)}${item.width && item.height ? `, ${item.width}×${item.height}` : ""}).`),
    ),
    item.deletedAt ? h("p", { class: "muted" }, "Restore the item to replace its file.") : replaceForm(item),
    versions.length
      ? table("Earlier versions", ["Replaced", "By", "File", "Type and size", "Linked by", "Action"], rows)
      : h("p", { class: "muted" }, "No earlier versions."),
    item.versionsMore ? h("p", { class: "muted" }, "Only the newest versions are shown.") : null,
    h(
      "p",
      { id: "links-summary" },
      linked
        ? `${linked} entr${linked === 1 ? "y links" : "ies link"} to an earlier version by URL: those pages still show the earlier file until their links are updated.`
        : versions.length
          ? "No entry links to an earlier version: earlier versions are purged once the trash period has passed since they were replaced."
          : null,
    ),
    page && !item.deletedAt && versions.length
      ? h(
          "div",
          { class: "toolbar" },
          h("button", { type: "button", id: "update-links", onclick: (ev) => updateLinks(ev.currentTarget, item) }, "Update links"),
          h("button", { type: "button", class: "secondary", id: "relink-progress", onclick: (ev) => showRelink(ev.currentTarget, item) }, "Check progress"),
        )
      : null,
    h("div", { id: "relink-result", "aria-live": "polite" }),
    h("div", { id: "version-result" }),
  );
}

function replaceForm(item) {
  const preview = h("div", { id: "replace-preview", "aria-live": "polite" });
  let shown = null;
  const chosen = (ev) => {
    if (shown) URL.revokeObjectURL(shown);
    shown = null;
    const f = ev.currentTarget.files[0];
    if (!f) return put(preview);
    const words = h("p", { class: "muted" }, `New file: ${f.name} (${f.type || "unknown type"}, ${sizeText(f.size)}).`);
    if (!isImage(f.type)) return put(preview, words);
    shown = URL.createObjectURL(f);
    put(preview, h("img", { src: shown, alt: `Preview of ${f.name}`, class: "preview" }), words);
  };
  return h(
    "form",
    { id: "replace-form", method: "post", action: "#", "aria-label": `Replace the file of ${item.filename}`, onsubmit: (ev) => replaceFile(ev, item) },
    h("div", { class: "field" }, h("label", { for: "replace-file" }, "New file"), h("input", { id: "replace-file", name: "file", type: "file", required: true, onchange: chosen })),
    preview,
    h(
      "p",
      { class: "muted", id: "replace-help" },
      "The new file gets a new URL; the item keeps its ID, alt text and caption. Pages that use the item by ID show the new file at once; pages that link the old URL keep showing the old file until you update their links.",
    ),
    h("div", { class: "toolbar" }, h("button", { type: "submit", id: "replace-submit", "aria-describedby": "replace-help" }, "Replace file")),
    h("div", { id: "replace-result" }),
  );
}

async function replaceFile(ev, item) {
  ev.preventDefault();
  const form = ev.currentTarget;
  const button = form.querySelector("button[type=submit]");
  const file = form.elements.file.files[0];
  if (!file) return;
  button.disabled = true;
  clearMessages();
  const body = new FormData();
  body.append("file", file, file.name);
  try {
    const saved = (await api("POST", `/media/${encodeURIComponent(item.id)}/replace`, body)).item;
    notice(`Replaced the file of “${saved.filename}” (${saved.id}): it is now ${saved.mimeType}, ${sizeText(saved.size)}.`);
    await refreshMedia();
    await refreshLibrary();
  } catch (e) {
    button.disabled = false;
    if (e instanceof ApiError && ["INVALID_TYPE", "PAYLOAD_TOO_LARGE", "CONFLICT", "FORBIDDEN", "VALIDATION_ERROR"].includes(e.code)) {
      put($("replace-result"), h("p", { class: "refusal", role: "alert" }, `Not replaced: ${e.message}. (${e.code}, HTTP ${e.status})`));
    } else {
      showError(e);
    }
  }
}

async function revertTo(button, item, v) {
  button.disabled = true;
  clearMessages();
  try {
    const saved = (await api("POST", `/media/${encodeURIComponent(item.id)}/revert`, { version: v.storageKey })).item;
    notice(`Reverted “${saved.filename}” (${saved.id}) to the file replaced ${when(v.replacedAt)}; the file it had is now an earlier version.`);
    await refreshMedia();
    await refreshLibrary();
  } catch (e) {
    button.disabled = false;
    if (e instanceof ApiError && ["NOT_FOUND", "CONFLICT", "FORBIDDEN"].includes(e.code)) {
      put($("version-result"), h("p", { class: "refusal", role: "alert" }, `Not reverted: ${e.message}. (${e.code}, HTTP ${e.status})`));
    } else {
      showError(e);
    }
  }
}

/** A relink's progress in words. */
function relinkText(r) {
  const left = r.entriesLeft === null || r.entriesLeft === undefined || r.state === "done" ? "" : `, ${r.entriesLeftCapped ? "at least " : ""}${r.entriesLeft} left`;
  const eta = r.eta && r.state !== "done" && r.eta.ticks ? `; about ${r.eta.ticks} more tick${r.eta.ticks === 1 ? "" : "s"}${r.eta.finishDay ? `, by ${r.eta.finishDay}` : ""}` : "";
  const state = { queued: "Queued", pending: "Queued", leased: "Updating links", running: "Updating links", done: "Links updated", failed: "Failed" }[r.state] || r.state;
  const unsettled = r.entriesUnsettled ? `, ${r.entriesUnsettled} left as they were (edited during every try: update links again later)` : "";
  const error = r.lastErrorCode ? ` (${r.lastErrorCode})` : "";
  return `${state}: ${r.entriesDone} entr${r.entriesDone === 1 ? "y" : "ies"} checked, ${r.entriesChanged} rewritten${left}${r.conflicts ? `, ${r.conflicts} retried after an edit` : ""}${unsettled}${eta}.${error}`;
}

async function updateLinks(button, item) {
  button.disabled = true;
  clearMessages();
  try {
    const r = await api("POST", `/media/${encodeURIComponent(item.id)}/relink`);
    put($("relink-result"), h("p", { role: "status" }, relinkText(r.item || r)));
    forgetStatus();
  } catch (e) {
    showError(e);
  }
  button.disabled = false;
}

async function showRelink(button, item) {
  button.disabled = true;
  try {
    const r = await api("GET", `/media/${encodeURIComponent(item.id)}/relink`);
    put($("relink-result"), h("p", { role: "status" }, relinkText(r.item || r)));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) put($("relink-result"), h("p", { role: "status" }, "No link update was started for this item."));
    else showError(e);
  }
  button.disabled = false;
}

/** The item's alt text and caption, editable (`PUT /media/{id}`): below editor the API takes
 * only the token's own uploads, and the refusal is shown in words. */
function metadataForm(item) {
  const field = (name, label, value) =>
    h(
      "div",
      { class: "field" },
      h("label", { for: `media-${name}` }, label),
      h("input", { id: `media-${name}`, name, type: "text", maxlength: "1000", spellcheck: "true", value: value ?? "" }),
    );
  const author = item.authorId === null || item.authorId === undefined ? "unknown (only editors and admins may change it)" : item.authorId;
  return h(
    "form",
    { id: "metadata-form", method: "post", action: "#", autocomplete: "off", "aria-label": `Alt text and caption of ${item.filename}`, onsubmit: (ev) => saveMetadata(ev, item) },
    h("h3", {}, "Alt text and caption"),
    field("alt", "Alt text", item.alt),
    field("caption", "Caption", item.caption),
    h("p", { class: "muted" }, `Uploaded or registered by token: ${author}`),
    h("div", { class: "toolbar" }, h("button", { type: "submit", id: "save-metadata" }, "Save alt text and caption")),
    h("div", { id: "metadata-result" }),
  );
}

async function saveMetadata(ev, item) {
  ev.preventDefault();
  const form = ev.currentTarget;
  const button = form.querySelector("button[type=submit]");
  const out = $("metadata-result");
  button.disabled = true;
  clearMessages();
  try {
    const saved = (await api("PUT", `/media/${encodeURIComponent(item.id)}`, { alt: form.elements.alt.value, caption: form.elements.caption.value })).item;
    item.alt = saved.alt;
    item.caption = saved.caption;
    put(out, h("p", { role: "status" }, `Saved the alt text and caption of “${item.filename}”.`));
  } catch (e) {
    if (e instanceof ApiError && e.code === "FORBIDDEN") {
      put(out, h("p", { class: "refusal", role: "alert" }, `Not saved: ${e.message}. (${e.code}, HTTP ${e.status})`));
    } else if (e instanceof ApiError && e.code === "VALIDATION_ERROR") {
      const issues = (e.details && e.details.issues) || [];
      put(out, h("p", { class: "refusal", role: "alert" }, `Not saved: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ") || e.message} (${e.code})`));
    } else {
      showError(e);
    }
  }
  button.disabled = false;
}

/** Closes the open item's "Used in" and goes back to it in the grid. */
function closeItem(id) {
  media = { id: null, cursors: [null] };
  put($("media-view"));
  const li = [...$("media-grid").children].find((x) => x.dataset.id === id);
  (li ? li.querySelector("button.open") : $("media-grid")).focus();
}

/** Reloads the library after a change made from the item's view, keeping what that view says. */
async function refreshLibrary() {
  try {
    const keep = media;
    media = { id: null, cursors: [null] };
    await showLibrary();
    media = keep;
  } catch (e) {
    showError(e);
  }
}

async function pageTo(cursors) {
  media.cursors = cursors;
  clearMessages();
  try {
    await refreshMedia();
  } catch (e) {
    showError(e);
  }
}

async function deleteMedia(button, item) {
  button.disabled = true;
  clearMessages();
  const out = $("delete-result");
  try {
    await api("DELETE", `/media/${encodeURIComponent(item.id)}`);
    media = { id: null, cursors: [null] };
    put(
      $("media-view"),
      h("p", {}, `Moved “${item.filename}” (${item.id}) to the trash: no entry used it. Its file is no longer served; it can be restored until the trash is purged.`),
      h("div", { id: "restore-result" }),
      h(
        "button",
        { type: "button", class: "secondary", "aria-label": `Restore media ${item.filename}`, onclick: (ev) => restoreMedia(ev.currentTarget, item) },
        "Restore",
      ),
    );
    notice(`Moved media ${item.id} to the trash.`);
    await refreshLibrary();
    return;
  } catch (e) {
    if (e instanceof ApiError && e.code === "MEDIA_IN_USE") {
      const d = e.details || { count: 0, entries: [] };
      put(out, 
        h(
          "div",
          { class: "refusal", role: "alert" },
          h("p", {}, `Not deleted: “${item.filename}” is still used in ${d.count} entr${d.count === 1 ? "y" : "ies"} (${e.code}, HTTP ${e.status}).`),
          h(
            "ul",
            { class: "entries" },
            d.entries.map((x) => h("li", {}, `${x.collection} / ${x.slug || x.contentId}`, h("span", { class: "muted" }, ` (${x.contentId})`))),
          ),
          d.count > d.entries.length ? h("p", { class: "muted" }, `…and ${d.count - d.entries.length} more.`) : null,
        ),
      );
    } else if (e instanceof ApiError && e.code === "MEDIA_USAGE_COVERAGE_INCOMPLETE") {
      const cov = e.details && e.details.coverage ? e.details.coverage.status : "not complete";
      // (Refused: nothing was moved.)
      put(out, 
        h(
          "div",
          { class: "refusal", role: "alert" },
          `Not deleted: the usage index is ${cov}, so it cannot prove “${item.filename}” is unused. Run a repair from the Coverage tab, then try again. (${e.code}, HTTP ${e.status})`,
        ),
      );
    } else {
      showError(e);
    }
  }
  button.disabled = false;
}

async function restoreMedia(button, item) {
  button.disabled = true;
  clearMessages();
  try {
    await api("POST", `/media/${encodeURIComponent(item.id)}/restore`);
    put($("restore-result"), h("p", { role: "status" }, `Restored “${item.filename}” (${item.id}): its file is served again at the same URL.`));
    notice(`Restored media ${item.id}.`);
    await refreshLibrary();
  } catch (e) {
    button.disabled = false;
    showError(e);
  }
}

// ---------------------------------------------------------------------------------------------
// Wiring.

document.addEventListener("DOMContentLoaded", () => {
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const value = $("token").value.trim();
    $("token").value = "";
    if (value) signIn(value);
  });
  $("forget").addEventListener("click", () => signOut("Token forgotten. Paste an API token to continue."));
  const tabs = VIEWS.map((v) => $(`tab-${v}`));
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => select(VIEWS[i], false));
    tab.addEventListener("keydown", (ev) => {
      const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: VIEWS.length - 1 };
      if (!(ev.key in moves)) return;
      ev.preventDefault();
      select(VIEWS[(moves[ev.key] + VIEWS.length) % VIEWS.length], true);
    });
  });
  for (const b of document.querySelectorAll("[data-reload]")) {
    b.addEventListener("click", () => {
      forgetStatus();
      select(b.dataset.reload, false);
    });
  }
  $("repair-all").addEventListener("click", (ev) => act(ev.currentTarget, () => repair({ scope: "all" }, "all collections")));
  $("media-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const id = $("media-id").value.trim();
    if (id) openItem(id);
  });
  for (const b of document.querySelectorAll("#media-filters [data-filter]")) {
    b.addEventListener("click", () => filterBy(b.dataset.filter));
  }
  $("media-search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    library.search = $("media-search").value.trim();
    library.selected.clear();
    clearMessages();
    showLibrary().catch(showError);
  });
  $("select-all").addEventListener("change", (ev) => pick(library.items.map((m) => m.id), ev.currentTarget.checked));
  $("trash-selected").addEventListener("click", (ev) => trashSelected(ev.currentTarget));
  $("load-more").addEventListener("click", (ev) => loadMore(ev.currentTarget));
  $("media-grid").addEventListener("keydown", gridKeys);
  if (token) signIn(token);
  else $("token").focus();
});
