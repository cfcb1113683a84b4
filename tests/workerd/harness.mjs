// Shared setup for the workerd suite: a Miniflare instance running the real wasm worker
// (build/worker/shim.mjs) with an in-memory D1 migrated from migrations/*.sql.
import { Miniflare } from "miniflare";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const ADMIN_TOKEN = "test-admin-token-0123456789";
export const BASE = "http://localhost/_emdash/api";

/**
 * Every statement of every migration, in order. Statements end with `;` at a line end, except
 * inside a `CREATE TRIGGER … BEGIN … END;` body, which is one statement.
 */
export function migrationStatements() {
  const dir = path.join(ROOT, "migrations");
  const out = [];
  for (const f of readdirSync(dir).filter((f) => /^\d{4}_.*\.sql$/.test(f)).sort()) {
    let current = [];
    let inTrigger = false;
    for (const line of readFileSync(path.join(dir, f), "utf8").split("\n")) {
      if (line.trimStart().startsWith("--") || (!line.trim() && current.length === 0)) continue;
      current.push(line);
      if (/^\s*CREATE\s+TRIGGER/i.test(current[0])) inTrigger = true;
      const ends = inTrigger ? /^\s*END;\s*$/i.test(line) : /;\s*$/.test(line);
      if (ends) {
        out.push(current.join("\n").trim().replace(/;$/, ""));
        current = [];
        inTrigger = false;
      }
    }
    if (current.join("").trim()) out.push(current.join("\n").trim());
  }
  return out;
}

/** Miniflare options for the worker; `vars` adds or overrides bindings. */
export function workerOptions(vars = {}) {
  return {
    scriptPath: path.join(ROOT, "build/worker/shim.mjs"),
    modules: true,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"], fallthrough: true },
      { type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true },
    ],
    compatibilityDate: "2026-04-01",
    d1Databases: { DB: "media-usage-test" },
    bindings: { EMDASH_ADMIN_TOKEN: ADMIN_TOKEN, MEDIA_USAGE_TICK_MAX_QUERIES: "40", MEDIA_USAGE_TICK_MAX_MS: "2500", ...vars },
  };
}

/**
 * Starts a worker with a fresh database. `vars` adds or overrides bindings. Each of `variants`
 * (`{name: vars}`) is a twin worker with those bindings on top, sharing the same database: a
 * test switches configuration (a fault point, a budget) by calling a twin (`w.as(name)`)
 * instead of restarting workerd. `options` adds Miniflare options to the main worker (queues).
 */
export async function startWorker(vars = {}, variants = {}, options = {}) {
  const workers = [
    { name: "main", ...workerOptions(vars), ...options },
    ...Object.entries(variants).map(([name, extra]) => ({ name, ...workerOptions({ ...vars, ...extra }) })),
  ];
  const mf = new Miniflare({ workers });
  const db = await mf.getD1Database("DB");
  for (const sql of migrationStatements()) {
    await db.prepare(sql).run();
  }
  return new Worker(mf, db, vars, variants);
}

/** Twin workers that fail from the k-th statement of every invocation, for each k of `ks`. */
export function faultVariants(ks, extra = {}) {
  return Object.fromEntries(ks.map((k) => [`fault${k}`, { ...extra, MEDIA_USAGE_FAULT_AFTER_STATEMENTS: String(k) }]));
}

export class Worker {
  constructor(mf, db, vars = {}, variants = {}, name = "main") {
    this.mf = mf;
    this.db = db;
    this.vars = vars;
    this.variants = variants;
    this.name = name;
  }

  /** The twin worker `name` (see `startWorker`), on the same database. */
  as(name) {
    if (!(name in this.variants)) throw new Error(`no worker variant ${name}`);
    return new Worker(this.mf, this.db, this.vars, this.variants, name);
  }

  /** Calls the API. `path` is relative to the base path unless it starts with `http`. */
  async call(method, p, { token = ADMIN_TOKEN, body, rawBody, headers = {} } = {}) {
    const h = { ...headers };
    if (token) h.authorization = `Bearer ${token}`;
    let payload = rawBody;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      h["content-type"] = "application/json";
    }
    const url = p.startsWith("http") ? p : `${BASE}${p}`;
    const res =
      this.name === "main"
        ? await this.mf.dispatchFetch(url, { method, headers: h, body: payload })
        : await (await this.mf.getWorker(this.name)).fetch(url, { method, headers: h, body: payload });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  get(p, opts) {
    return this.call("GET", p, opts);
  }
  post(p, body, opts = {}) {
    return this.call("POST", p, { ...opts, body });
  }
  put(p, body, opts = {}) {
    return this.call("PUT", p, { ...opts, body });
  }
  del(p, opts) {
    return this.call("DELETE", p, opts);
  }

  /** Mints a token through the API and returns its secret. */
  async token(role, scopes) {
    const res = await this.post("/admin/tokens", { name: `${role} test`, role, scopes });
    if (res.status !== 201) throw new Error(`token mint failed: ${res.text}`);
    return res.json.data.token;
  }

  async scheduled(cron = "*/2 * * * *") {
    const w = await this.mf.getWorker(this.name);
    return w.scheduled({ cron, scheduledTime: new Date() });
  }

  async dispose() {
    await this.mf.dispose();
  }
}
