//! Collection deletion end to end on SQLite: the tombstone and slug reservation, the fenced
//! front phases of the DELETE request, the cleanup lane of the cron tick, leases and takeovers,
//! recorded failures, operator endpoints, a crash at every statement boundary, and budgets.

use std::cell::{Cell, RefCell};

use futures::executor::block_on;
use media_usage_worker::api::{self, Request, Response};
use media_usage_worker::clock::{FnClock, MonotonicClock};
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use media_usage_worker::lifecycle::deletion::{self, batch::CleanupBatch, Held, StepOutcome};
use media_usage_worker::model::ident::Ident;
use media_usage_worker::model::state::DeletionPhase;
use media_usage_worker::repo::deletion::{self as repo, Batch, Fence, Lease, Rows};

/// A stored cleanup batch: 50 rows of the first kind.
const BATCH: Batch = Batch { rows: 50, kind: 0 };
use media_usage_worker::repo::lease::Failure;
use media_usage_worker::tick::{self, budget::Budget, lanes::BackgroundPolicy, report::TickReport};
use serde_json::json;

use crate::support::{
    call_on_body, code, collection_id, config, data, exec_sql, now, scalar, text_if_any, time_passes, Api, ADMIN,
};

mod budgets;
mod counting;
mod crash;
mod lane;
mod preconditions;
mod races;
mod request;

/// Two collections, `posts` (to delete) and `pages` (to keep), each with published entries,
/// drafts (revisions) and media references, all indexed. Returns the media ids.
fn site(api: &Api, n_posts: usize) -> Vec<String> {
    for slug in ["posts", "pages"] {
        data(&api.post(
            "/schema/collections",
            &json!({"slug": slug, "label": slug, "fields": [
                {"slug": "title", "type": "string"},
                {"slug": "hero", "type": "image"},
                {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}
            ]}),
        ));
    }
    let media: Vec<String> = (0..3).map(|i| api.register_media(&format!("m{i}.png"))).collect();
    for i in 0..n_posts {
        let r = api.post(
            "/content/posts",
            &json!({"slug": format!("p{i}"), "status": "published",
                    "data": {"title": format!("Post {i}"), "hero": media[0], "gallery": [{"image": media[1]}]}}),
        );
        let id = data(&r)["item"]["id"].as_str().unwrap().to_owned();
        if i % 2 == 0 {
            data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": media[2]}})));
        }
    }
    for i in 0..2 {
        let r = api.post(
            "/content/pages",
            &json!({"slug": format!("g{i}"), "status": "published", "data": {"title": "Page", "hero": media[0]}}),
        );
        let id = data(&r)["item"]["id"].as_str().unwrap().to_owned();
        data(&api.put(&format!("/content/pages/{id}"), &json!({"draft": true, "data": {"title": "Draft"}})));
    }
    media
}

/// Everything stored about a collection id (and its slug), as one comparable text.
fn dump(db: &SqliteExecutor, id: &str, slug: &str) -> String {
    let q = |sql: &str| -> Vec<String> {
        let mut stmt = db.connection().prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join("|")))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let table = if scalar(db, &format!("SELECT count(*) FROM sqlite_master WHERE name = 'ec_{slug}'")) == 1 {
        q(&format!("SELECT * FROM ec_{slug} ORDER BY id"))
    } else {
        vec!["<no table>".into()]
    };
    let (lo, hi) = (format!("content:{id}:"), format!("content:{id};"));
    [
        q(&format!("SELECT * FROM _emdash_collections WHERE id = '{id}'")),
        q(&format!("SELECT * FROM _emdash_fields WHERE collection_id = '{id}' ORDER BY slug")),
        table,
        q(&format!("SELECT collection_id, content_id, state FROM _emdash_media_usage_work WHERE collection_id = '{id}' ORDER BY content_id")),
        q(&format!("SELECT source_key, current_generation, content_title FROM _emdash_media_usage_sources WHERE collection_id = '{id}' ORDER BY source_key")),
        q(&format!("SELECT source_key, generation, field_path, media_id FROM _emdash_media_usage WHERE source_key >= '{lo}' AND source_key < '{hi}' ORDER BY source_key, field_path")),
        q(&format!("SELECT scope_key, status, capture_state, change_epoch FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'")),
        q(&format!("SELECT * FROM _emdash_media_usage_reconciliations WHERE collection_id = '{id}'")),
        q(&format!("SELECT id, entry_id, data FROM revisions WHERE collection = '{slug}' ORDER BY id")),
    ]
    .iter()
    .map(|rows| rows.join("\n"))
    .collect::<Vec<_>>()
    .join("\n--\n")
}

/// Asserts that nothing of the deleted collection is left and its tombstone is gone.
fn assert_gone(db: &SqliteExecutor, id: &str, slug: &str) {
    let (lo, hi) = (format!("content:{id}:"), format!("content:{id};"));
    let counts = [
        ("table", format!("SELECT count(*) FROM sqlite_master WHERE name = 'ec_{slug}'")),
        ("registry", format!("SELECT count(*) FROM _emdash_collections WHERE id = '{id}'")),
        ("fields", format!("SELECT count(*) FROM _emdash_fields WHERE collection_id = '{id}'")),
        ("work", format!("SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = '{id}'")),
        ("sources", format!("SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = '{id}'")),
        (
            "occurrences",
            format!("SELECT count(*) FROM _emdash_media_usage WHERE source_key >= '{lo}' AND source_key < '{hi}'"),
        ),
        ("status", format!("SELECT count(*) FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'")),
        ("runs", format!("SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE collection_id = '{id}'")),
        ("revisions", format!("SELECT count(*) FROM revisions WHERE collection = '{slug}'")),
        (
            "tombstone",
            format!("SELECT count(*) FROM _emdash_media_usage_collection_deletions WHERE collection_id = '{id}'"),
        ),
        ("triggers", format!("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_{slug}'")),
    ];
    for (what, sql) in counts {
        assert_eq!(scalar(db, &sql), 0, "{what} of {slug} left behind");
    }
    assert_eq!(scalar(db, "SELECT count(*) FROM _emdash_batch_guard"), 0, "no guard rows");
}

fn tombstone(db: &SqliteExecutor, slug: &str) -> Option<(String, String, i64, Option<String>)> {
    db.connection()
        .query_row(
            "SELECT state, phase, attempt_count, lease_token FROM _emdash_media_usage_collection_deletions WHERE collection_slug = ?1",
            [slug],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .ok()
}

/// The counters of every collection deletion against the rows each has left: each kind counted
/// equals what is there (nothing is deleted before every kind is counted, and each cleanup
/// statement takes off exactly what it deleted), the kind being counted is at most what is
/// there, and the kinds not yet reached are 0. Returns each deletion's counters and whether it
/// has counted everything.
fn assert_counters_exact(db: &SqliteExecutor, what: &str) -> Vec<([i64; 4], bool)> {
    let tombstones: Vec<(String, String, [i64; 4], i64)> = db
        .connection()
        .prepare(
            "SELECT collection_id, collection_slug, left_work, left_revisions, left_occurrences, left_sources, count_kind
             FROM _emdash_media_usage_collection_deletions",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, [r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?], r.get(6)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    for (id, slug, left, kind) in tombstones {
        let (lo, hi) = media_usage_worker::model::source::source_key_range(&id);
        let count = |sql: &str, params: &[&str]| -> i64 {
            db.connection().query_row(sql, rusqlite::params_from_iter(params), |r| r.get(0)).unwrap()
        };
        let there = [
            count("SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = ?1", &[&id]),
            count("SELECT count(*) FROM revisions WHERE collection = ?1", &[&slug]),
            count("SELECT count(*) FROM _emdash_media_usage WHERE source_key >= ?1 AND source_key < ?2", &[&lo, &hi]),
            count(
                "SELECT count(*) FROM _emdash_media_usage_sources WHERE source_type = 'content' AND collection_id = ?1",
                &[&id],
            ),
        ];
        for k in 0..4 {
            let ok = match (k as i64).cmp(&kind) {
                std::cmp::Ordering::Less => left[k] == there[k],
                std::cmp::Ordering::Equal => left[k] <= there[k],
                std::cmp::Ordering::Greater => left[k] == 0,
            };
            assert!(ok, "{what}: {slug}'s counters {left:?} (counting kind {kind}) against {there:?} left");
        }
        out.push((left, kind == 4));
    }
    out
}

/// What a tick may spend, and how it does the work.
type Tick = (Budget, BackgroundPolicy);

fn budget() -> Tick {
    (Budget::new(40, 60_000.0), crate::support::policy().with_cleanup(CleanupBatch::Fixed(50)))
}

/// One recorded cron tick.
fn tick_with<E: Executor>(exec: &E, (budget, policy): Tick) -> TickReport {
    let clock = MonotonicClock::default();
    let metered = Metered::new(exec, &clock);
    let report = block_on(tick::run(&metered, &clock, budget, &policy, tick::Continuation::Off, None));
    assert!(report.statements <= budget.max_statements, "a tick issued {} statements", report.statements);
    assert!(report.rows.fits(budget.max_rows), "a tick read and wrote {:?} rows", report.rows);
    report
}

/// Like [`tick_with`] on a clock that stands still: what it does depends on statements only,
/// not on how busy the machine is (the cleanup batch also adapts to measured statement time;
/// that rule has its own tests).
fn tick_counting_statements<E: Executor>(exec: &E, (budget, policy): Tick) -> TickReport {
    let clock = FnClock(|| 0.0);
    let metered = Metered::new(exec, &clock);
    let report = block_on(tick::run(&metered, &clock, budget, &policy, tick::Continuation::Off, None));
    assert!(report.statements <= budget.max_statements, "a tick issued {} statements", report.statements);
    assert!(report.rows.fits(budget.max_rows), "a tick read and wrote {:?} rows", report.rows);
    report
}

/// Ticks (letting time pass in between) until the slug's tombstone is gone; returns the ticks.
fn tick_until_gone(db: &SqliteExecutor, slug: &str, tick: Tick) -> u32 {
    for n in 1..=100 {
        let report = tick_with(db, tick.clone());
        assert!(report.error.is_none() || report.count("deletionFailures") > 0, "{:?}", report.error);
        assert_counters_exact(db, &format!("after tick {n}"));
        if tombstone(db, slug).is_none() {
            return n;
        }
        time_passes(db);
    }
    panic!("the deletion of {slug} did not finish in 100 ticks: {:?}", tombstone(db, slug));
}

fn delete(api: &Api, path: &str) -> Response {
    api.call("DELETE", &format!("/schema/collections/{path}"), Some(ADMIN), None)
}

/// When a hook runs: before the first statement (or batch) whose SQL contains a needle, or
/// before the n-th statement the executor issues (every statement of a batch counted).
enum When {
    Sql(&'static str),
    Nth(u64),
}

type Hook<'a> = Box<dyn FnOnce(&SqliteExecutor) + 'a>;

/// Runs hooks at exact points of another writer's statements, to interleave a second writer.
pub(crate) struct Hooked<'a> {
    inner: &'a SqliteExecutor,
    hooks: RefCell<Vec<(When, Hook<'a>)>>,
    seen: Cell<u64>,
}

impl<'a> Hooked<'a> {
    pub(crate) fn new(inner: &'a SqliteExecutor) -> Self {
        Hooked { inner, hooks: RefCell::new(Vec::new()), seen: Cell::new(0) }
    }

    pub(crate) fn before(self, needle: &'static str, hook: impl FnOnce(&SqliteExecutor) + 'a) -> Self {
        self.hooks.borrow_mut().push((When::Sql(needle), Box::new(hook)));
        self
    }

    pub(crate) fn before_nth(self, n: u64, hook: impl FnOnce(&SqliteExecutor) + 'a) -> Self {
        self.hooks.borrow_mut().push((When::Nth(n), Box::new(hook)));
        self
    }

    fn fire(&self, stmts: &[Statement]) {
        let first = self.seen.get() + 1;
        self.seen.set(self.seen.get() + stmts.len() as u64);
        let last = self.seen.get();
        let due: Vec<_> = {
            let mut hooks = self.hooks.borrow_mut();
            let (due, rest) = hooks.drain(..).partition(|(when, _)| match when {
                When::Sql(needle) => stmts.iter().any(|s| s.sql().contains(needle)),
                When::Nth(n) => (first..=last).contains(n),
            });
            *hooks = rest;
            due
        };
        for (_, hook) in due {
            hook(self.inner);
        }
    }

    /// Asserts every hook fired.
    pub(crate) fn done(&self) {
        assert!(self.hooks.borrow().is_empty(), "a hook never fired");
    }
}

impl Executor for Hooked<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.fire(std::slice::from_ref(&stmt));
        self.inner.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.fire(&stmts);
        self.inner.batch(stmts).await
    }
}

/// "Crashes" (every statement fails) from the first statement whose SQL contains a needle.
struct CutAt<'a> {
    inner: &'a SqliteExecutor,
    needle: &'static str,
    cut: Cell<bool>,
}

impl CutAt<'_> {
    fn check(&self, stmts: &[Statement]) -> Result<(), Error> {
        if stmts.iter().any(|s| s.sql().contains(self.needle)) {
            self.cut.set(true);
        }
        if self.cut.get() {
            Err(Error::Fault(0))
        } else {
            Ok(())
        }
    }
}

impl Executor for CutAt<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.check(std::slice::from_ref(&stmt))?;
        self.inner.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.check(&stmts)?;
        self.inner.batch(stmts).await
    }
}

fn call_on<E: Executor>(exec: &E, method: &str, path: &str) -> Response {
    call_on_body(exec, method, path, None)
}

/// One step of the lane that deletes or moves the deletion on: the steps that count what it
/// has left, which come first, are taken on the way (`counting.rs` tests them).
fn step(db: &SqliteExecutor, batch: CleanupBatch, held: &mut Option<Held>) -> Option<StepOutcome> {
    loop {
        match block_on(deletion::step(db, &MonotonicClock::default(), batch, held)).unwrap() {
            Some(StepOutcome::Counted { .. }) if held.is_some() => continue,
            other => return other,
        }
    }
}

/// Steps until nothing is due (at most 100 steps); returns the outcomes.
fn steps_to_end(db: &SqliteExecutor, batch: CleanupBatch, held: &mut Option<Held>) -> Vec<StepOutcome> {
    let mut outcomes = Vec::new();
    for _ in 0..100 {
        match step(db, batch, held) {
            Some(o) => outcomes.push(o),
            None => return outcomes,
        }
    }
    panic!("still stepping after 100 steps: {outcomes:?}");
}

/// A collection deleted through the API (front phases done), with its id.
fn deleted_collection(api: &Api, slug: &str) -> String {
    data(&api.post("/schema/collections", &json!({"slug": slug, "label": slug})));
    let id = collection_id(&api.db, slug);
    assert_eq!(delete(api, slug).status, 200);
    id
}

fn deleted(kinds: &[(Rows, u64)], advanced_to: Option<DeletionPhase>) -> StepOutcome {
    StepOutcome::Deleted { deleted: kinds.to_vec(), advanced_to }
}

/// Steps until the `posts` deletion is at `target` (at most 100 steps).
fn step_until(db: &SqliteExecutor, batch: CleanupBatch, held: &mut Option<Held>, target: &str) {
    for _ in 0..100 {
        if phase(db, "posts") == target {
            return;
        }
        step(db, batch, held);
    }
    panic!("never reached {target}: at {}", phase(db, "posts"));
}

fn phase(db: &SqliteExecutor, slug: &str) -> String {
    tombstone(db, slug).map(|t| t.1).unwrap_or_else(|| "<gone>".into())
}

fn work_rows(db: &SqliteExecutor, id: &str, n: usize) {
    for i in 0..n {
        exec_sql(
            db,
            &format!(
                "INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{id}', 'entry-{i:03}', 'posts')"
            ),
        );
    }
}

fn occurrences(db: &SqliteExecutor, source_key: &str, n: usize) {
    for i in 0..n {
        exec_sql(
            db,
            &format!(
                "INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id)
                 VALUES ('{source_key}-{i:03}', '{source_key}', 'g{}', 'hero', 'hero[{i}]', 'image_field', 'm')",
                i % 3
            ),
        );
    }
}

fn source(db: &SqliteExecutor, key: &str, collection_id: Option<&str>, slug: &str) {
    let cid = collection_id.map_or("NULL".to_owned(), |c| format!("'{c}'"));
    exec_sql(
        db,
        &format!(
            "INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, current_generation, identity_version)
             VALUES ('{key}', {cid}, '{slug}', 'e', 'columns', 'g0', 1)"
        ),
    );
}

fn seconds_until_due(db: &SqliteExecutor) -> i64 {
    scalar(
        db,
        "SELECT CAST(round((julianday(next_attempt_at) - julianday('now')) * 86400) AS INTEGER) FROM _emdash_media_usage_collection_deletions",
    )
}

fn lease(id: &str, token: &str, phase: DeletionPhase, force: bool) -> Lease {
    Lease { collection_id: id.into(), slug: Ident::parse("posts").unwrap(), token: token.into(), force, phase }
}

fn leased_tombstone(db: &SqliteExecutor, id: &str, phase: &str, token: &str, force: bool) {
    exec_sql(
        db,
        &format!(
            "DELETE FROM _emdash_media_usage_collection_deletions;
             INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, force_delete, state, phase, lease_token, lease_expires_at)
             VALUES ('{id}', 'posts', {}, 'leased', '{phase}', '{token}', '2999-01-01T00:00:00.000Z')",
            i64::from(force)
        ),
    );
}

fn capture_state(db: &SqliteExecutor) -> String {
    text_if_any(db, "SELECT capture_state FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'").unwrap()
}

/// Sources or occurrences that belong to no registered collection and no deletion in progress.
fn orphans(db: &SqliteExecutor) -> i64 {
    scalar(
        db,
        "SELECT (SELECT count(*) FROM _emdash_media_usage_sources s
                 WHERE NOT EXISTS (SELECT 1 FROM _emdash_collections c WHERE c.id = s.collection_id)
                   AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_collection_deletions d WHERE d.collection_id = s.collection_id))
              + (SELECT count(*) FROM _emdash_media_usage u
                 WHERE NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources s WHERE s.source_key = u.source_key))",
    )
}

/// Every tombstone row, as text.
fn tombstone_row(db: &SqliteExecutor) -> String {
    dump_query(db, "SELECT * FROM _emdash_media_usage_collection_deletions ORDER BY collection_id")
}

fn dump_query(db: &SqliteExecutor, sql: &str) -> String {
    let mut stmt = db.connection().prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join("|")))
        .unwrap()
        .map(Result::unwrap)
        .collect::<Vec<_>>()
        .join("\n")
}
