//! `npm run bench`'s native half: the CPU the worker's own code (validation, extraction,
//! fingerprints, planning, JSON) spends per request kind and per tick kind, without the database.
//!
//! Each request and tick runs through the real handlers and the real tick on in-memory SQLite
//! (`SqliteExecutor`), metered by a clock that reads this thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`: what the thread ran, not how long it waited). The meter
//! adds up the CPU spent inside the executor (SQLite's share, which D1 does not charge to the
//! worker); the rest of the invocation's CPU is the core's. The sizes follow `tests/bench/run.mjs`
//! and scale with `BENCH_SCALE` (default 1). Prints one `CORE_JSON {…}` line. Run:
//! `cargo run --release --example core_cpu` (`CORE_CPU=extraction`: the extraction bench of
//! 1 MiB bodies alone, `shared/extraction.rs`, which the wasm build also runs).

use futures::executor::block_on;
use media_usage_worker::api::input::MAX_BODY_BYTES;
use media_usage_worker::api::{self, Config, Request, Response};
use media_usage_worker::clock::Clock;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::model::state::TickOutcome;
use media_usage_worker::settings::Settings;
use media_usage_worker::tick::{self, budget::Budget, lanes::BackgroundPolicy};
use media_usage_worker::usage::cost::{self, CpuWork};
use serde_json::{json, Value as Json};

#[path = "shared/extraction.rs"]
mod extraction;

const ADMIN: &str = "core-bench-admin-token-0123456789abcdef";

/// This thread's CPU time in milliseconds (`CLOCK_THREAD_CPUTIME_ID`).
#[derive(Debug)]
struct CpuClock;

impl Clock for CpuClock {
    fn now_ms(&self) -> f64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
    }
}

/// Median and largest (p100) of a list of milliseconds.
fn summary(mut ms: Vec<f64>) -> Json {
    ms.sort_by(f64::total_cmp);
    let p50 = ms.get(ms.len() / 2).copied().unwrap_or(0.0);
    json!({"n": ms.len(), "p50Ms": p50, "maxMs": ms.last().copied().unwrap_or(0.0)})
}

/// The largest of a summary.
fn p100(s: &Json) -> f64 {
    s["maxMs"].as_f64().unwrap_or(0.0)
}

struct Bench {
    db: SqliteExecutor,
    config: Config,
    budget: Budget,
    policy: BackgroundPolicy,
    clock: CpuClock,
    /// The largest modelled CPU (`cpuModelUs`) of a tick since [`Bench::take_model_max`].
    model_max_us: std::cell::Cell<u64>,
}

impl Bench {
    /// Sends a request; returns the answer and the core's CPU (total minus the database's).
    fn call(&self, method: &str, path: &str, body: Option<Json>) -> (Response, f64) {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let query = query.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect();
        let req = Request {
            method: method.into(),
            path: format!("{}{path}", api::BASE_PATH),
            query,
            authorization: Some(format!("Bearer {ADMIN}")),
            body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
            ..Request::default()
        };
        let metered = Metered::new(&self.db, &self.clock);
        let started = self.clock.now_ms();
        let r = block_on(api::handle(&metered, &self.config, &req));
        let total = self.clock.now_ms() - started;
        assert!(r.status < 300, "{method} {path}: {} {}", r.status, r.body);
        (r, (total - metered.usage().duration_ms).max(0.0))
    }

    /// Runs one default tick; returns whether it found work and the core's CPU.
    fn tick(&self) -> (bool, f64) {
        let metered = Metered::new(&self.db, &self.clock);
        let started = self.clock.now_ms();
        let report =
            block_on(tick::run(&metered, &self.clock, self.budget, &self.policy, tick::Continuation::Off, None));
        let total = self.clock.now_ms() - started;
        assert!(report.error.is_none(), "{:?}", report.error);
        self.model_max_us.set(self.model_max_us.get().max(report.count("cpuModelUs")));
        (report.outcome != TickOutcome::Idle, (total - metered.usage().duration_ms).max(0.0))
    }

    /// Ticks until one finds nothing to do; the core's CPU of each tick that worked.
    fn ticks(&self) -> Vec<f64> {
        let mut out = Vec::new();
        loop {
            let (worked, ms) = self.tick();
            if !worked {
                return out;
            }
            out.push(ms);
            assert!(out.len() < 1_000_000, "the ticks do not finish");
        }
    }

    /// The largest modelled CPU of the ticks run since the last call, in µs.
    fn take_model_max(&self) -> u64 {
        self.model_max_us.replace(0)
    }

    fn sql(&self, sql: &str) {
        self.db.connection().execute_batch(sql).unwrap();
    }

    fn collection_id(&self, slug: &str) -> String {
        self.db
            .connection()
            .query_row("SELECT id FROM _emdash_collections WHERE slug = ?1", [slug], |r| r.get(0))
            .unwrap()
    }

    fn collection(&self, slug: &str, fields: Json) {
        self.call("POST", "/schema/collections", Some(json!({"slug": slug, "label": slug, "fields": fields})));
    }
}

fn main() {
    // `CORE_CPU=extraction`: the extraction bench alone (what `tests/bench/wasm_extraction.mjs`
    // compares the wasm build's with).
    if std::env::var("CORE_CPU").as_deref() == Ok("extraction") {
        let clock = CpuClock;
        println!("CORE_JSON {}", json!({"extraction": extraction::measure(|| clock.now_ms())}));
        return;
    }
    let scale: f64 = std::env::var("BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let n = |full: f64, min: usize| ((full * scale).round() as usize).max(min);
    let (settings, _) = Settings::parse(|name| (name == "EMDASH_ADMIN_TOKEN").then(|| ADMIN.to_owned()));
    // The bench's tick: the default statement budget, the wall-time budget lifted (as run.mjs).
    let budget = Budget::new(settings.budget().max_statements, 600_000.0);
    let b = Bench {
        db: SqliteExecutor::open_in_memory().unwrap(),
        config: settings.config(|| 0.0),
        budget,
        policy: settings.background(),
        clock: CpuClock,
        model_max_us: std::cell::Cell::new(0),
    };
    let mut out = serde_json::Map::new();

    // Content writes: a 1-image and a 50-image entry, and a rich one (every rule).
    let gallery = json!([{"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}]);
    b.collection("bench_posts", gallery);
    for images in [1usize, 50] {
        let ms = (0..n(40.0, 5))
            .map(|i| {
                let g: Vec<Json> = (0..images).map(|k| json!({"image": format!("w{images}-{i}-{k}")})).collect();
                let body = json!({"slug": format!("w{images}-{i}"), "status": "published", "data": {"gallery": g}});
                b.call("POST", "/content/bench_posts", Some(body)).1
            })
            .collect();
        out.insert(format!("write{images}"), summary(ms));
    }
    b.collection(
        "bench_rich",
        json!([{"slug": "body", "type": "portableText"}, {"slug": "extra", "type": "json"}, {"slug": "notes", "type": "text"}]),
    );
    let media: Vec<(String, String)> = (0..3)
        .map(|k| {
            let key = format!("rich-{k}.png");
            let body = json!({"filename": format!("rich{k}.png"), "mimeType": "image/png", "storageKey": key});
            let item = b.call("POST", "/media", Some(body)).0.body_json()["data"]["item"].clone();
            (item["id"].as_str().unwrap().to_owned(), key)
        })
        .collect();
    let rich = |i: usize| {
        let blocks: Vec<Json> = (0..20)
            .map(|p| {
                let mut children = vec![json!({"_type": "span", "text": format!("paragraph {p} of entry {i}")})];
                if p % 10 == 5 {
                    children.push(json!({"_type": "image", "asset": {"_ref": media[0].0}}));
                }
                let marks = if p == 3 {
                    json!([{"_type": "link", "_key": "l", "href": format!("/_emdash/api/media/file/{}", media[2].1)}])
                } else {
                    json!([])
                };
                json!({"_type": "block", "_key": format!("b{p}"), "markDefs": marks, "children": children})
            })
            .chain([json!({"_type": "gallery", "images": media.iter().map(|m| json!({"asset": {"_ref": m.0}})).collect::<Vec<_>>()})])
            .collect();
        json!({
            "body": blocks,
            "extra": {"ogImage": media[1].0, "unknown": "0123456789abcdef0123456789abcdef"},
            "notes": format!("<p><img src=\"/_emdash/api/media/file/{}\"> and /_emdash/api/media/file/missing-{i}.png</p>", media[2].1),
        })
    };
    let ms = (0..n(40.0, 5))
        .map(|i| {
            let body = json!({"slug": format!("rich-{i}"), "status": "published", "data": rich(i)});
            b.call("POST", "/content/bench_rich", Some(body)).1
        })
        .collect();
    out.insert("writeRich".into(), summary(ms));

    // "Used in": the first page for an item used by many entries.
    let ms = (0..15).map(|_| b.call("GET", &format!("/media/{}/usage", media[0].0), None).1).collect();
    out.insert("usedIn".into(), summary(ms));

    // Repair ticks: N image-field entries, then N rich entries (group projection and lookups).
    b.collection("bench_repair", json!([{"slug": "hero", "type": "image"}]));
    let entries = n(100_000.0, 100);
    b.sql(&format!(
        "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < {entries})
         INSERT INTO ec_bench_repair (id, slug, status, hero) SELECT 'r' || i, 'r' || i, 'published', 'h' || i FROM c;
         DELETE FROM _emdash_media_usage_work;"
    ));
    b.call("POST", "/admin/media-usage/repair", Some(json!({"scope": "collection", "collection": "bench_repair"})));
    out.insert(
        "repairTick".into(),
        json!({"entries": entries, "ticks": summary(b.ticks()), "modelMaxUs": b.take_model_max()}),
    );
    b.collection(
        "bench_rich_repair",
        json!([{"slug": "body", "type": "portableText"}, {"slug": "extra", "type": "json"}, {"slug": "notes", "type": "text"}]),
    );
    let entries = n(20_000.0, 50);
    let d = rich(0);
    b.db.connection()
        .execute(
            &format!(
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < {entries})
                 INSERT INTO ec_bench_rich_repair (id, slug, status, body, extra, notes)
                 SELECT 'q' || i, 'q' || i, 'published', ?1, ?2, ?3 FROM c"
            ),
            [d["body"].to_string(), d["extra"].to_string(), d["notes"].as_str().unwrap().to_owned()],
        )
        .unwrap();
    b.sql("DELETE FROM _emdash_media_usage_work");
    b.call(
        "POST",
        "/admin/media-usage/repair",
        Some(json!({"scope": "collection", "collection": "bench_rich_repair"})),
    );
    out.insert(
        "richRepairTick".into(),
        json!({"entries": entries, "ticks": summary(b.ticks()), "modelMaxUs": b.take_model_max()}),
    );

    // The largest entry the API accepts: a body of MAX_BODY_BYTES, one text field of plain text
    // naming one file URL, written through the API (its projection runs after the write), then
    // projected again by a repair tick on its own.
    b.collection("bench_large", json!([{"slug": "notes", "type": "text"}]));
    let envelope = json!({"slug": "large-0", "status": "published", "data": {"notes": ""}}).to_string().len();
    let text =
        format!("/_emdash/api/media/file/{} {}", media[2].1, "lorem ipsum dolor sit amet ".repeat(MAX_BODY_BYTES));
    let text = &text[..MAX_BODY_BYTES - envelope];
    let large = |i: usize| json!({"slug": format!("large-{i}"), "status": "published", "data": {"notes": text}});
    assert!(large(0).to_string().len() <= MAX_BODY_BYTES);
    let ms = (0..3).map(|i| b.call("POST", "/content/bench_large", Some(large(i))).1).collect();
    out.insert("writeLargest".into(), summary(ms));
    b.sql("DELETE FROM _emdash_media_usage_work");
    b.call("POST", "/admin/media-usage/repair", Some(json!({"scope": "collection", "collection": "bench_large"})));
    // Each entry: its bytes, one candidate, one occurrence and one source row.
    let largest = CpuWork::entry(text.len() as u64, 1, 2);
    out.insert(
        "largestTick".into(),
        json!({"bytes": text.len(), "modelMs": largest.ms(), "ticks": summary(b.ticks())}),
    );

    // The largest entry with a draft of the same size: too heavy for the budget with both
    // variants, so each is projected by a job of its own (the live columns, then the draft
    // overlay), one a tick; every tick models within the budget.
    b.take_model_max();
    b.collection("bench_drafted", json!([{"slug": "notes", "type": "text"}]));
    for i in 0..3 {
        let (r, _) = b.call("POST", "/content/bench_drafted", Some(large(i)));
        let id = r.body_json()["data"]["item"]["id"].as_str().unwrap().to_owned();
        let draft = json!({"draft": true, "data": {"notes": text}});
        assert!(draft.to_string().len() <= MAX_BODY_BYTES);
        b.call("PUT", &format!("/content/bench_drafted/{id}"), Some(draft));
    }
    b.sql("DELETE FROM _emdash_media_usage_work");
    b.call("POST", "/admin/media-usage/repair", Some(json!({"scope": "collection", "collection": "bench_drafted"})));
    let drafted_ticks = b.ticks();
    let drafted_max_us = b.take_model_max();
    out.insert(
        "largestDraftedTick".into(),
        json!({"bytes": 2 * text.len(), "modelMs": largest.ms(), "modelMaxUs": drafted_max_us,
               "ticks": summary(drafted_ticks)}),
    );

    // The same size in the slowest spelling an admitted body has in the wasm build (encoded
    // query values: each read, decoded and read again; see docs/bench.md), written and projected
    // alone the same way.
    b.collection("bench_worst", json!([{"slug": "notes", "type": "text"}]));
    let unit = "/_image?url=%2F";
    let worst = unit.repeat(MAX_BODY_BYTES / unit.len() + 1);
    let worst = &worst[..MAX_BODY_BYTES - envelope];
    let worst_entry = |i: usize| json!({"slug": format!("large-{i}"), "status": "published", "data": {"notes": worst}});
    assert!(worst_entry(0).to_string().len() <= MAX_BODY_BYTES);
    let ms = (0..3).map(|i| b.call("POST", "/content/bench_worst", Some(worst_entry(i))).1).collect();
    out.insert("writeLargestWorst".into(), summary(ms));
    b.sql("DELETE FROM _emdash_media_usage_work");
    b.call("POST", "/admin/media-usage/repair", Some(json!({"scope": "collection", "collection": "bench_worst"})));
    // Each entry: its bytes and its source row (it names nothing).
    let worst_model = CpuWork::entry(worst.len() as u64, 0, 1);
    out.insert(
        "largestWorstTick".into(),
        json!({"bytes": worst.len(), "modelMs": worst_model.ms(), "ticks": summary(b.ticks())}),
    );

    // The largest entries run alone: not repair ticks of many entries.
    b.take_model_max();

    // Deletion ticks: N entries and 3N occurrences.
    let entries = n(100_000.0, 100);
    b.collection("bench_gone", json!([{"slug": "hero", "type": "image"}]));
    let cid = b.collection_id("bench_gone");
    b.sql(&format!(
        "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < {entries})
         INSERT INTO ec_bench_gone (id, slug, status, deleted_at) SELECT 'd' || i, 'd' || i, 'draft', '2026-01-01T00:00:00.000Z' FROM c;
         INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, current_generation, source_completeness)
           SELECT 'content:{cid}:' || id || ':columns', '{cid}', 'bench_gone', id, 'columns', 'g', 'complete' FROM ec_bench_gone;
         WITH k(n) AS (VALUES (0), (1), (2))
         INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id)
           SELECT s.content_id || '-' || k.n, s.source_key, 'g', 'hero', 'hero[' || k.n || ']', 'image_field', 'x', 'x'
           FROM _emdash_media_usage_sources AS s, k WHERE s.collection_id = '{cid}';"
    ));
    let (_, request) = b.call("DELETE", "/schema/collections/bench_gone?force=true", None);
    out.insert(
        "deletionTick".into(),
        json!({"entries": entries, "request": summary(vec![request]), "ticks": summary(b.ticks())}),
    );

    let extraction = extraction::measure(|| b.clock.now_ms());
    let plain_mb_per_s = extraction[0]["mbPerS"].as_f64().unwrap_or(0.0);
    out.insert("extraction".into(), extraction);

    // The CPU budget, by the cost model: every tick kind's measured p100 within the tick's CPU
    // budget and its fixed part, and the largest accepted entry projects within it on its own.
    let budget_ms = b.policy.cpu_ms;
    let limit = budget_ms + cost::TICK_FIXED_MS;
    let mut p100s = serde_json::Map::new();
    for kind in ["write1", "write50", "writeRich", "usedIn"] {
        p100s.insert(kind.into(), json!(p100(&out[kind])));
    }
    for kind in
        ["repairTick", "richRepairTick", "largestTick", "largestDraftedTick", "largestWorstTick", "deletionTick"]
    {
        p100s.insert(kind.into(), json!(p100(&out[kind]["ticks"])));
    }
    p100s.insert("writeLargest".into(), json!(p100(&out["writeLargest"])));
    p100s.insert("writeLargestWorst".into(), json!(p100(&out["writeLargestWorst"])));
    eprintln!("core CPU p100 (ms): {}", Json::Object(p100s.clone()));
    eprintln!(
        "extraction of plain text: {plain_mb_per_s:.0} MB/s; CPU budget {budget_ms} ms + {} ms fixed",
        cost::TICK_FIXED_MS
    );
    eprintln!(
        "the largest accepted entry ({} bytes) models at {:.2} ms; entries up to {} bytes fit the budget alone",
        text.len(),
        largest.ms(),
        cost::fitting_bytes(budget_ms)
    );
    // By the cost model (the tick's own `cpuModelUs`): a repair tick stays within the budget but
    // for the one entry it learns the cost of only once loaded; these benches' entries each model
    // well under 1 ms. The measured figures above are printed, not asserted: they depend on the
    // machine and its load.
    let allowed_us = (budget_ms * 1000.0) as u64 + 1_000;
    let over: Vec<String> = ["repairTick", "richRepairTick"]
        .iter()
        .filter(|k| out[**k]["modelMaxUs"].as_u64().unwrap_or(u64::MAX) > allowed_us)
        .map(|k| format!("{k}: {} µs modelled", out[*k]["modelMaxUs"]))
        .collect();
    if ["repairTick", "richRepairTick", "deletionTick"].iter().any(|k| p100s[*k].as_f64().unwrap_or(0.0) > limit) {
        eprintln!("note: a measured p100 above is over {limit} ms on this machine (see docs/cost-and-quotas.md)");
    }
    out.insert("cpuBudgetMs".into(), json!(budget_ms));
    out.insert("p100".into(), Json::Object(p100s));
    out.insert("fittingBytes".into(), json!(cost::fitting_bytes(budget_ms)));
    out.insert("scale".into(), json!(scale));
    // The one line run.mjs reads.
    println!("CORE_JSON {}", Json::Object(out));
    assert!(over.is_empty(), "ticks over the CPU budget of {budget_ms} ms by more than one entry: {over:?}");
    // The largest entry the API accepts projects within the budget on its own, by the model,
    // whatever its spelling; so does its write's admission (one extraction of it).
    for (kind, model) in [("largest", largest), ("slowest-spelled largest", worst_model)] {
        assert!(model.ms() <= budget_ms, "the {kind} entry models at {:.2} ms, over {budget_ms} ms", model.ms());
    }
    // The largest entry with a draft of the same size: one variant a tick, each within it.
    assert!(
        drafted_max_us <= (budget_ms * 1000.0) as u64,
        "the largest entry with a draft of its size: a tick modelled {drafted_max_us} µs, over {budget_ms} ms"
    );
}
