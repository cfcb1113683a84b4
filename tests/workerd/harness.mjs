// Shared setup for the workerd suite: a Miniflare instance running the real wasm worker
// (build/worker/shim.mjs) with an in-memory D1 migrated from migrations/*.sql.
//
// Tests reach workers, cron ticks, the database and the bucket only by plain HTTP through
// `dispatchFetch` (a worker picked by the `MF-Route-Override` header, ticks through Miniflare's
// `/cdn-cgi/handler/scheduled`, SQL and objects through the small probe worker below), never
// through Miniflare's binding proxies, whose synchronous calls were seen answered with the reply
// to another call under load.
import { Miniflare } from "miniflare";
import { readFileSync, readdirSync } from "node:fs";
import { deflateSync, crc32 } from "node:zlib";
import { fileURLToPath } from "node:url";
import path from "node:path";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// The bootstrap secret: at least 32 characters (a shorter one is ignored by the worker).
export const ADMIN_TOKEN = "test-admin-token-0123456789abcdef0123";
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

/** The probe worker's name: it runs tests' SQL on the shared D1 and reads the shared bucket. */
export const PROBE = "test-probe";

/**
 * Miniflare options for the probe worker, bound to the same D1 database (and bucket, if any) as
 * the workers under test. `POST /sql` `{sql, params, method}` answers `{ok, result}` or
 * `{ok: false, error}`; `GET /r2` lists keys; `GET /r2/<key>` is the object (404 when missing),
 * its custom metadata in `x-custom-metadata` (JSON); `PUT /r2/<key>` stores the body as an
 * object of the request's `Content-Type`, with the custom metadata `x-custom-metadata` (JSON) or
 * none: not as the worker stores objects (without its marker, unless given), like another
 * application sharing the bucket.
 */
export function probeWorker(extra = {}) {
  const script = `export default {
    async fetch(request, env) {
      const url = new URL(request.url);
      if (url.pathname === "/sql") {
        const { sql, params, method, batch } = await request.json();
        try {
          const result = batch
            ? await env.DB.batch(batch.map((s) => env.DB.prepare(s.sql).bind(...s.params)))
            : await env.DB.prepare(sql).bind(...params)[method]();
          return Response.json({ ok: true, result });
        } catch (e) {
          return Response.json({ ok: false, error: String(e?.message ?? e) });
        }
      }
      if (url.pathname === "/r2") {
        const keys = [];
        let cursor;
        do {
          const page = await env.MEDIA_BUCKET.list({ cursor });
          keys.push(...page.objects.map((o) => o.key));
          cursor = page.truncated ? page.cursor : undefined;
        } while (cursor);
        return Response.json(keys);
      }
      if (url.pathname.startsWith("/r2/") && request.method === "PUT") {
        const customMetadata = JSON.parse(request.headers.get("x-custom-metadata") ?? "{}");
        const httpMetadata = { contentType: request.headers.get("content-type") ?? undefined };
        await env.MEDIA_BUCKET.put(decodeURIComponent(url.pathname.slice(4)), await request.arrayBuffer(), { httpMetadata, customMetadata });
        return new Response(null, { status: 201 });
      }
      if (url.pathname.startsWith("/r2/")) {
        const object = await env.MEDIA_BUCKET.get(decodeURIComponent(url.pathname.slice(4)));
        if (!object) return new Response("no such object", { status: 404 });
        return new Response(object.body, {
          headers: {
            "content-type": object.httpMetadata?.contentType ?? "",
            "x-size": String(object.size),
            "x-custom-metadata": JSON.stringify(object.customMetadata ?? {}),
          },
        });
      }
      return new Response("unknown probe", { status: 404 });
    },
  };`;
  return { name: PROBE, modules: true, script, compatibilityDate: "2026-04-01", d1Databases: { DB: "media-usage-test" }, ...extra };
}

/**
 * A D1-like client over the probe worker: `prepare(sql).bind(...).all() / .run() / .first()`, and
 * `batch([statements])` (atomic, as D1's).
 */
export class ProbeDb {
  constructor(mf) {
    this.mf = mf;
  }

  async #send(request) {
    const res = await this.mf.dispatchFetch("http://localhost/sql", {
      method: "POST",
      headers: { "MF-Route-Override": PROBE, "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    const body = await res.json();
    if (!body.ok) throw new Error(body.error);
    return body.result;
  }

  prepare(sql) {
    const statement = (params) => ({
      sql,
      params,
      bind: (...p) => statement(p),
      all: () => this.#send({ sql, params, method: "all" }),
      run: () => this.#send({ sql, params, method: "run" }),
      first: () => this.#send({ sql, params, method: "first" }),
    });
    return statement([]);
  }

  batch(statements) {
    return this.#send({ batch: statements.map(({ sql, params }) => ({ sql, params })) });
  }
}

/** The probe's view of the shared bucket: its keys, and an object's bytes and type. */
export class ProbeBucket {
  constructor(mf) {
    this.mf = mf;
  }

  async keys() {
    return (await this.mf.dispatchFetch("http://localhost/r2", { headers: { "MF-Route-Override": PROBE } })).json();
  }

  /** `null` when missing, else `{bytes, contentType, size, customMetadata}`. */
  async get(key) {
    const res = await this.mf.dispatchFetch(`http://localhost/r2/${encodeURIComponent(key)}`, { headers: { "MF-Route-Override": PROBE } });
    if (res.status === 404) return null;
    return {
      bytes: new Uint8Array(await res.arrayBuffer()),
      contentType: res.headers.get("content-type"),
      size: Number(res.headers.get("x-size")),
      customMetadata: JSON.parse(res.headers.get("x-custom-metadata")),
    };
  }

  /** Stores `bytes` under `key` as another application would: no marker unless `customMetadata` has it. */
  async put(key, bytes, { contentType = "application/octet-stream", customMetadata = {} } = {}) {
    const res = await this.mf.dispatchFetch(`http://localhost/r2/${encodeURIComponent(key)}`, {
      method: "PUT",
      headers: { "MF-Route-Override": PROBE, "content-type": contentType, "x-custom-metadata": JSON.stringify(customMetadata) },
      body: bytes,
    });
    if (res.status !== 201) throw new Error(`probe put of ${key} failed: ${res.status} ${await res.text()}`);
  }
}

/** Calls worker `name` by HTTP. */
export function dispatchTo(mf, name, url, init = {}) {
  return mf.dispatchFetch(url, { ...init, headers: { ...(init.headers ?? {}), "MF-Route-Override": name } });
}

/**
 * Runs one cron tick of worker `name` by HTTP, scheduled at `time` (ms since the epoch: the
 * schedule lane publishes what is due by then; the daily budget's day is the database's);
 * resolves with `{outcome}`.
 */
export async function scheduledOn(mf, name, cron = "*/2 * * * *", time = Date.now()) {
  const res = await dispatchTo(mf, name, `http://localhost/cdn-cgi/handler/scheduled?cron=${encodeURIComponent(cron)}&time=${time}`);
  return { outcome: await res.text() };
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
  const mf = new Miniflare({ workers: [...workers, probeWorker()], unsafeTriggerHandlers: true });
  const db = new ProbeDb(mf);
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
    const res = await dispatchTo(this.mf, this.name, url, { method, headers: h, body: payload });
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

  scheduled(cron = "*/2 * * * *", time = Date.now()) {
    return scheduledOn(this.mf, this.name, cron, time);
  }

  async dispose() {
    await this.mf.dispose();
  }
}

/** A real PNG (RGBA, filtered scanlines, zlib-compressed IDAT, CRCs) of w×h with a colour seed. */
export function png(w, h, seed = 0) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td) >>> 0);
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const raw = Buffer.alloc(h * (1 + 4 * w));
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) raw.set([x * 7 + seed, y * 5, seed, 255], y * (1 + 4 * w) + 1 + 4 * x);
  return new Uint8Array(
    Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]),
  );
}
