// Shared setup for the workerd suite: a Miniflare instance running the real wasm worker
// (build/worker/shim.mjs) with an in-memory D1 migrated from migrations/*.sql.
import { Miniflare } from "miniflare";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const ADMIN_TOKEN = "test-admin-token-0123456789";
export const BASE = "http://localhost/_emdash/api";

/** Every statement of every migration, in order (statements end with `;` at a line end). */
export function migrationStatements() {
  const dir = path.join(ROOT, "migrations");
  return readdirSync(dir)
    .filter((f) => /^\d{4}_.*\.sql$/.test(f))
    .sort()
    .flatMap((f) =>
      readFileSync(path.join(dir, f), "utf8")
        .split("\n")
        .filter((l) => !l.trimStart().startsWith("--"))
        .join("\n")
        .split(/;\s*$/m)
        .map((s) => s.trim())
        .filter(Boolean),
    );
}

/** Starts a worker with a fresh database. `vars` adds or overrides bindings. */
export async function startWorker(vars = {}) {
  const mf = new Miniflare({
    scriptPath: path.join(ROOT, "build/worker/shim.mjs"),
    modules: true,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"], fallthrough: true },
      { type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true },
    ],
    compatibilityDate: "2026-04-01",
    d1Databases: { DB: "media-usage-test" },
    bindings: { EMDASH_ADMIN_TOKEN: ADMIN_TOKEN, MEDIA_USAGE_TICK_MAX_QUERIES: "40", MEDIA_USAGE_TICK_MAX_MS: "2500", ...vars },
  });
  const db = await mf.getD1Database("DB");
  for (const sql of migrationStatements()) {
    await db.prepare(sql).run();
  }
  return new Worker(mf, db);
}

export class Worker {
  constructor(mf, db) {
    this.mf = mf;
    this.db = db;
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
    const res = await this.mf.dispatchFetch(url, { method, headers: h, body: payload });
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
    const w = await this.mf.getWorker();
    return w.scheduled({ cron, scheduledTime: new Date() });
  }

  async dispose() {
    await this.mf.dispose();
  }
}
