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
  if (body !== undefined) headers["content-type"] = "application/json";
  let res;
  try {
    res = await fetch(API + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
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
  const loaders = { coverage: showCoverage, work: showWork, deletions: showDeletions, ticks: showTicks, media: showMediaIntro };
  try {
    await loaders[view]();
  } catch (e) {
    showError(e);
  }
}

/** Runs an action, then reloads the view; errors are shown in words. */
async function act(button, action) {
  button.disabled = true;
  clearMessages();
  try {
    notice(await action());
  } catch (e) {
    showError(e);
  }
  try {
    await reloadKeepingMessages();
  } catch (e) {
    showError(e);
  }
  button.disabled = false;
}

async function reloadKeepingMessages() {
  const loaders = { coverage: showCoverage, work: showWork, deletions: showDeletions, ticks: showTicks, media: refreshMedia };
  await loaders[current]();
}

// ---------------------------------------------------------------------------------------------
// Coverage.

const status = () => api("GET", "/admin/media-usage/status");

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
      h("td", {}, progress.has(d.collectionId) ? `${count(progress.get(d.collectionId).rowsLeft)} rows left; ${estimateText(progress.get(d.collectionId).estimate)}` : "—"),
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
// Media.

let media = { id: null, cursors: [null] };

function showMediaIntro() {
  if (media.id) return refreshMedia();
  put($("media-view"), h("p", { class: "muted" }, "Enter a media ID to see where it is used."));
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
  const page = await api("GET", `${path}/usage?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
  const count = item.usage ? item.usage.count : null;
  const counted =
    count === null || count === undefined
      ? "Usage count: unknown until coverage is complete."
      : `Used by ${count} entr${count === 1 ? "y" : "ies"}.`;
  const rows = page.items.map((u) =>
    h(
      "tr",
      {},
      h("td", {}, u.collection),
      h("th", { scope: "row" }, u.title || u.slug || u.contentId),
      h("td", {}, orDash(u.slug)),
      h("td", {}, orDash(u.status)),
      h("td", {}, u.deletedAt ? `in the trash since ${when(u.deletedAt)}` : "live"),
      h("td", { class: "wrap" }, u.occurrences.map((o) => `${o.fieldPath} (${o.referenceType})`).join(", ")),
    ),
  );
  const pager = h(
    "div",
    { class: "pager" },
    media.cursors.length > 1
      ? h("button", { type: "button", class: "secondary", onclick: () => pageTo(media.cursors.slice(0, -1)) }, "Previous page")
      : null,
    page.nextCursor ? h("button", { type: "button", class: "secondary", onclick: () => pageTo([...media.cursors, page.nextCursor]) }, "Next page") : null,
  );
  put($("media-view"), 
    h("h2", {}, `${item.filename} `, h("span", { class: "muted" }, `(${item.mimeType})`)),
    item.url ? h("p", {}, h("a", { href: item.url, target: "_blank", rel: "noopener noreferrer" }, "Open the file")) : null,
    h("p", {}, `${counted} Coverage: `, badge(page.coverage.status)),
    rows.length
      ? table("Used in", ["Collection", "Entry", "Slug", "Status", "Where", "Occurrences"], rows)
      : h("p", {}, media.cursors.length > 1 || page.unindexed.length ? "No more indexed entries." : "Not used in any entry."),
    page.unindexed.length
      ? h(
          "p",
          { class: "refusal", id: "unindexed" },
          `Also used by ${page.unindexed.length} entr${page.unindexed.length === 1 ? "y" : "ies"} too large to index (see Work): `,
          page.unindexed.map((u) => `${u.collection}/${u.contentId}`).join(", "),
        )
      : null,
    pager,
    h("div", { id: "delete-result" }),
    h(
      "button",
      {
        type: "button",
        id: "delete-media",
        "aria-label": `Move media ${item.filename} to the trash`,
        onclick: (ev) => deleteMedia(ev.currentTarget, item),
      },
      "Move to trash",
    ),
  );
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
    b.addEventListener("click", () => select(b.dataset.reload, false));
  }
  $("repair-all").addEventListener("click", (ev) => act(ev.currentTarget, () => repair({ scope: "all" }, "all collections")));
  $("media-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const id = $("media-id").value.trim();
    if (!id) return;
    media = { id, cursors: [null] };
    clearMessages();
    refreshMedia().catch(showError);
  });
  if (token) signIn(token);
  else $("token").focus();
});
