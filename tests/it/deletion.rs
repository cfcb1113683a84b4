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
use serde_json::{json, Value as Json};

use crate::support::{code, config, data, now, time_passes, Api, ADMIN};

// ---------------------------------------------------------------------------------------------
// Fixtures.

fn scalar(db: &SqliteExecutor, sql: &str) -> i64 {
    db.connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

fn text(db: &SqliteExecutor, sql: &str) -> Option<String> {
    db.connection().query_row(sql, [], |r| r.get(0)).unwrap_or(None)
}

fn exec_sql(db: &SqliteExecutor, sql: &str) {
    db.connection().execute_batch(sql).unwrap();
}

fn register_media(api: &Api, key: &str) -> String {
    let r = api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn collection_id(db: &SqliteExecutor, slug: &str) -> String {
    text(db, &format!("SELECT id FROM _emdash_collections WHERE slug = '{slug}'")).unwrap()
}

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
    let media: Vec<String> = (0..3).map(|i| register_media(api, &format!("m{i}.png"))).collect();
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

// ---------------------------------------------------------------------------------------------
// The DELETE request: front phases.

#[test]
fn deleting_an_empty_collection_runs_the_front_phases_and_leaves_cleanup_to_ticks() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(data(&r), json!({"deleted": true, "slug": "posts", "collectionId": id}));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    assert_eq!(
        text(&api.db, "SELECT capture_state FROM _emdash_media_usage_index_status").as_deref(),
        Some("deleting")
    );
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    // The collection is gone from the API at once; the slug stays reserved until cleanup ends.
    assert_eq!(code(&api.get("/schema/collections/posts")), "COLLECTION_NOT_FOUND");
    let again = api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"}));
    assert_eq!((again.status, code(&again)), (409, "COLLECTION_EXISTS".into()));
    // A repeated DELETE past the front phases changes nothing.
    let before = dump(&api.db, &id, "posts");
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(dump(&api.db, &id, "posts"), before);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    // Cleanup by ticks; then the slug is free and a new collection gets a new id.
    tick_until_gone(&api.db, "posts", budget());
    assert_gone(&api.db, &id, "posts");
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"})));
    assert_ne!(collection_id(&api.db, "posts"), id);
}

#[test]
fn live_content_refuses_without_force_trashed_content_does_not_and_force_deletes() {
    let api = Api::new();
    site(&api, 2);
    let id = collection_id(&api.db, "posts");
    let before = dump(&api.db, &id, "posts");
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (400, "COLLECTION_HAS_CONTENT".into()), "{}", r.body);
    assert_eq!(dump(&api.db, &id, "posts"), before, "nothing changed");
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(
        text(&api.db, "SELECT capture_state FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'")
            .as_deref(),
        Some("active")
    );
    // Trash every entry: no force needed.
    let ids: Vec<String> = {
        let mut stmt = api.db.connection().prepare("SELECT id FROM ec_posts").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    for e in &ids {
        data(&api.delete(&format!("/content/posts/{e}")));
    }
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(scalar(&api.db, "SELECT force_delete FROM _emdash_media_usage_collection_deletions"), 0);

    // With force, live content goes too, and the tombstone says it was forced.
    let id = collection_id(&api.db, "pages");
    let r = api.call("DELETE", "/schema/collections/pages?force=true", Some(ADMIN), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        scalar(
            &api.db,
            &format!("SELECT force_delete FROM _emdash_media_usage_collection_deletions WHERE collection_id = '{id}'")
        ),
        1
    );
}

#[test]
fn unknown_and_invalid_slugs_are_refused_before_any_deletion_sql() {
    let api = Api::new();
    let r = delete(&api, "nope");
    assert_eq!((r.status, code(&r)), (404, "COLLECTION_NOT_FOUND".into()));
    for bad in ["Bad-Slug", "posts%22%3Bdrop_table", "_x", &"a".repeat(64)] {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let req = Request {
            method: "DELETE".into(),
            path: format!("{}/schema/collections/{bad}", api::BASE_PATH),
            authorization: Some(format!("Bearer {ADMIN}")),
            ..Request::default()
        };
        let r = block_on(api::handle(&metered, &config(), &req));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{bad}: {}", r.body);
        assert_eq!(metered.usage().statements, 0, "{bad}: no SQL for an invalid slug");
    }
}

#[test]
fn a_collection_whose_capture_is_not_active_or_lacks_a_trigger_is_not_deleted() {
    for sabotage in [
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'ready' WHERE scope_key = 'posts'",
        "DROP TRIGGER (SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_posts' LIMIT 1)",
    ] {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        if sabotage.starts_with("DROP TRIGGER") {
            let name = text(
                &api.db,
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_posts' LIMIT 1",
            )
            .unwrap();
            exec_sql(&api.db, &format!("DROP TRIGGER \"{name}\""));
        } else {
            exec_sql(&api.db, sabotage);
        }
        let id = collection_id(&api.db, "posts");
        let before = dump(&api.db, &id, "posts");
        let r = delete(&api, "posts");
        assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()), "{sabotage}: {}", r.body);
        assert!(tombstone(&api.db, "posts").is_none(), "{sabotage}: no tombstone");
        assert_eq!(dump(&api.db, &id, "posts"), before, "{sabotage}: collection intact");
    }
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

/// Calls the API on any executor (a hooked, faulty or metered one), as the admin.
fn call_on_body<E: Executor>(exec: &E, method: &str, path: &str, body: Option<&Json>) -> Response {
    let body = body.map(|b| b.to_string().into_bytes());
    let req = crate::support::request(method, path, Some(ADMIN), body.as_deref());
    now(api::handle(exec, &config(), &req))
}

#[test]
fn an_entry_written_between_the_pre_check_and_the_fence_cancels_the_deletion() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    let hooked = Hooked::new(&api.db).before("SET capture_state = 'deleting'", |db| {
        exec_sql(db, "INSERT INTO ec_posts (id, slug) VALUES ('late', 'late')");
    });
    let r = call_on(&hooked, "DELETE", "/schema/collections/posts");
    hooked.done();
    assert_eq!((r.status, code(&r)), (400, "COLLECTION_HAS_CONTENT".into()), "{}", r.body);
    assert!(tombstone(&api.db, "posts").is_none(), "the tombstone was cancelled");
    assert_eq!(collection_id(&api.db, "posts"), id, "the collection is intact");
    assert_eq!(
        text(&api.db, "SELECT capture_state FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'")
            .as_deref(),
        Some("active")
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM ec_posts"), 1);
}

#[test]
fn a_deletion_held_by_someone_else_is_a_conflict_and_an_expired_one_is_taken_over() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    // Someone holds the fence with a live lease.
    exec_sql(
        &api.db,
        &format!(
            "INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
             VALUES ('{id}', 'posts', 'leased', 'fence', 'other', '2999-01-01T00:00:00.000Z')"
        ),
    );
    let before = dump(&api.db, &id, "posts");
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["phase"], "fence");
    assert_eq!(dump(&api.db, &id, "posts"), before);
    assert_eq!(tombstone(&api.db, "posts").unwrap().3.as_deref(), Some("other"));
    // Its holder died: once the lease expires, the next DELETE takes over and finishes.
    time_passes(&api.db);
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
}

#[test]
fn a_request_that_loses_a_front_phase_leaves_it_leased_for_a_tick_to_resume() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    // The lease expires and is taken by someone else between the fence and the registry phase.
    let hooked = Hooked::new(&api.db).before("DELETE FROM _emdash_collections", |db| {
        exec_sql(db, "UPDATE _emdash_media_usage_collection_deletions SET lease_token = 'thief'");
    });
    let r = call_on(&hooked, "DELETE", "/schema/collections/posts");
    hooked.done();
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["phase"], "registry");
    let (state, phase, _, token) = tombstone(&api.db, "posts").unwrap();
    assert_eq!((state.as_str(), phase.as_str(), token.as_deref()), ("leased", "registry", Some("thief")));
    assert_eq!(collection_id(&api.db, "posts"), id, "the registry row is still there");
    // A second DELETE while the lease is live: 409, nothing changes.
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()));
    // After the lease expires, a tick takes over at the same phase and finishes the deletion.
    time_passes(&api.db);
    tick_until_gone(&api.db, "posts", budget());
    assert_gone(&api.db, &id, "posts");
}

#[test]
fn a_crash_after_a_front_phase_is_resumed_by_the_next_delete() {
    // Fenced but not checkpointed (as a crash between the two would leave it).
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/content/posts", &json!({"slug": "a"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!(
            "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';
             INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, force_delete, state, phase, lease_token, lease_expires_at)
             VALUES ('{id}', 'posts', 1, 'leased', 'fence', 'dead', '2000-01-01T00:00:00.000Z')"
        ),
    );
    let r = api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);

    // Registry already gone (crash after the registry phase), lease expired: DELETE twice.
    for phase in ["registry", "table"] {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        let id = collection_id(&api.db, "posts");
        let drop_table = if phase == "table" { "DROP TABLE ec_posts;" } else { "" };
        exec_sql(
            &api.db,
            &format!(
                "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';
                 DELETE FROM _emdash_collections WHERE id = '{id}'; {drop_table}
                 INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
                 VALUES ('{id}', 'posts', 'leased', '{phase}', 'dead', '2000-01-01T00:00:00.000Z')"
            ),
        );
        for _ in 0..2 {
            let r = delete(&api, "posts");
            assert_eq!(r.status, 200, "{phase}: {}", r.body);
            assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)), "{phase}");
        }
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    }
}

#[test]
fn a_registry_row_that_is_not_the_one_being_deleted_is_left_alone() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    data(&delete(&api, "posts"));
    // A replacement that bypassed the slug reservation (not possible through the API).
    exec_sql(&api.db, "INSERT INTO _emdash_collections (id, slug, label) VALUES ('intruder', 'posts', 'X')");
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(
        text(&api.db, "SELECT collection_id FROM _emdash_media_usage_collection_deletions").as_deref(),
        Some(id.as_str())
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections WHERE id = 'intruder'"), 1);

    // The same at a due front phase: the intruder's slug match does not make the tombstone ours
    // to take over.
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!(
            "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';
             DELETE FROM _emdash_collections WHERE id = '{id}';
             INSERT INTO _emdash_collections (id, slug, label) VALUES ('intruder', 'posts', 'X');
             INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
             VALUES ('{id}', 'posts', 'leased', 'table', 'dead', '2000-01-01T00:00:00.000Z')"
        ),
    );
    let before = tombstone_row(&api.db);
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(tombstone_row(&api.db), before, "not taken over");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
}

#[test]
fn a_repeated_delete_past_the_front_phases_answers_from_one_read() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&delete(&api, "posts"));
    let before = tombstone_row(&api.db);
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let r = call_on(&metered, "DELETE", "/schema/collections/posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(metered.usage().statements, 1, "one read, no claim attempt");
    assert_eq!(tombstone_row(&api.db), before);
}

// ---------------------------------------------------------------------------------------------
// The cron lane, one step at a time.

fn step(db: &SqliteExecutor, batch: CleanupBatch, held: &mut Option<Held>) -> Option<StepOutcome> {
    block_on(deletion::step(db, &MonotonicClock::default(), batch, held)).unwrap()
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

#[test]
fn the_lane_runs_a_fresh_tombstone_through_one_front_phase_per_step() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!("INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug) VALUES ('{id}', 'posts')"),
    );
    let mut held = None;
    let batch = CleanupBatch::Fixed(50);
    assert_eq!(step(&api.db, batch, &mut held), Some(StepOutcome::Advanced { to: DeletionPhase::Registry }));
    assert_eq!(phase(&api.db, "posts"), "registry");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 1, "still registered");
    assert_eq!(step(&api.db, batch, &mut held), Some(StepOutcome::Advanced { to: DeletionPhase::Table }));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 0, "gone from the registry");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1, "table kept");
    assert_eq!(step(&api.db, batch, &mut held), Some(StepOutcome::Advanced { to: DeletionPhase::Work }));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    assert_eq!(phase(&api.db, "posts"), "work");
    // The lane held it throughout; releasing it makes it pending and due again.
    assert!(block_on(deletion::release(&api.db, held.as_ref().unwrap())).unwrap());
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    let _ = id;
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

#[test]
fn work_rows_go_in_batches_then_revisions_then_the_phase_moves_on() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 55);
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    assert_eq!(step(&api.db, b, &mut held), Some(deleted(&[(Rows::Work, 50)], None)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 5);
    assert_eq!(phase(&api.db, "posts"), "work");
    // The last 5, then the (absent) revisions, and the phase moves on in the same step.
    assert_eq!(
        step(&api.db, b, &mut held),
        Some(deleted(&[(Rows::Work, 5), (Rows::Revisions, 0)], Some(DeletionPhase::Sources)))
    );
    assert_eq!(phase(&api.db, "posts"), "sources");

    // 51 rows: after the first step exactly the 51st (in id order) remains.
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 51);
    let mut held = None;
    step(&api.db, b, &mut held);
    assert_eq!(
        text(&api.db, "SELECT group_concat(content_id) FROM _emdash_media_usage_work").as_deref(),
        Some("entry-050")
    );
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

#[test]
fn occurrences_go_by_key_range_across_generations_then_sources_then_status_then_the_tombstone() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let key = format!("content:{id}:e:columns");
    source(&api.db, &key, Some(&id), "posts");
    occurrences(&api.db, &key, 55);
    // Never touched: a legacy source of the same slug and another collection's source.
    source(&api.db, "content:posts:e:columns", None, "posts");
    occurrences(&api.db, "content:posts:e:columns", 2);
    source(&api.db, "content:other:e:columns", Some("other"), "posts");
    // Not the deletion's business either: a source of another type and coverage rows of another
    // adapter or scope that name the same collection id.
    exec_sql(
        &api.db,
        &format!(
            "INSERT INTO _emdash_media_usage_sources (source_key, source_type, collection_id, collection_slug, content_id, source_variant)
               VALUES ('menu:{id}', 'menu', '{id}', 'posts', 'm', 'columns');
             INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id) VALUES ('other-adapter', 'collection', 'posts', '{id}');
             INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id) VALUES ('content-media', 'site', 'posts', '{id}');"
        ),
    );
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    let outcomes = steps_to_end(&api.db, b, &mut held);
    assert_eq!(
        outcomes,
        [
            deleted(&[(Rows::Work, 0), (Rows::Revisions, 0)], Some(DeletionPhase::Sources)),
            deleted(&[(Rows::Occurrences, 50)], None),
            deleted(&[(Rows::Occurrences, 5), (Rows::Sources, 1)], Some(DeletionPhase::Status)),
            StepOutcome::Advanced { to: DeletionPhase::Finalize },
            StepOutcome::Finalized,
        ]
    );
    assert_eq!(tombstone(&api.db, "posts"), None);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 3, "legacy, other and menu kept");
    assert_eq!(
        scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'")),
        2
    );
    exec_sql(&api.db, &format!("DELETE FROM _emdash_media_usage_sources WHERE source_type = 'menu'; DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'"));
    assert_gone(&api.db, &id, "posts");
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE source_key = 'content:posts:e:columns'"),
        2
    );
}

#[test]
fn occurrences_whose_source_row_vanished_are_still_cleaned() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let key = format!("content:{id}:e:columns");
    source(&api.db, &key, Some(&id), "posts");
    occurrences(&api.db, &key, 55);
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step(&api.db, b, &mut held); // work and revisions → sources
    step(&api.db, b, &mut held); // 50 occurrences
                                 // Someone deletes the source row mid-drain, with its trigger disabled (as an old writer might).
    exec_sql(&api.db, "DROP TRIGGER _emdash_media_usage_sources_deleted; DELETE FROM _emdash_media_usage_sources;");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 5, "orphaned occurrences");
    steps_to_end(&api.db, b, &mut held);
    assert_gone(&api.db, &id, "posts");
}

fn seconds_until_due(db: &SqliteExecutor) -> i64 {
    scalar(
        db,
        "SELECT CAST(round((julianday(next_attempt_at) - julianday('now')) * 86400) AS INTEGER) FROM _emdash_media_usage_collection_deletions",
    )
}

#[test]
fn leftovers_at_status_are_retried_with_backoff_and_fail_after_five_attempts() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step_until(&api.db, b, &mut held, "status");
    // A leftover work row at `status` (none can appear through the API once fenced).
    work_rows(&api.db, &id, 1);
    let mut delays = Vec::new();
    for attempt in 1..=5 {
        let outcome = step(&api.db, b, &mut held).expect("due");
        let terminal = attempt == 5;
        assert!(
            matches!(&outcome, StepOutcome::Failed { terminal: t, .. } if *t == terminal),
            "{attempt}: {outcome:?}"
        );
        assert!(held.is_none(), "a failure releases the deletion");
        let (state, ph, attempts, token) = tombstone(&api.db, "posts").unwrap();
        assert_eq!((ph.as_str(), attempts, token), ("status", attempt, None));
        assert_eq!(state, if terminal { "failed" } else { "retry" });
        assert_eq!(
            text(&api.db, "SELECT last_error_code FROM _emdash_media_usage_collection_deletions").as_deref(),
            Some("MEDIA_USAGE_COLLECTION_DELETION_FAILED")
        );
        if !terminal {
            delays.push(seconds_until_due(&api.db));
            // Not due yet: the lane finds nothing to claim.
            assert_eq!(step(&api.db, b, &mut held), None, "claimed before its backoff is due");
            time_passes(&api.db);
        }
    }
    assert_eq!(delays, [30, 60, 120, 240]);
    // Failed is never claimed, whatever the time.
    time_passes(&api.db);
    assert_eq!(step(&api.db, b, &mut held), None);
    // The operator retry reopens it at the same phase; with the leftover gone it finishes.
    exec_sql(&api.db, "DELETE FROM _emdash_media_usage_work");
    let r = api.post("/admin/media-usage/collection-deletions/retry", &json!({"collectionId": id}));
    let item = data(&r)["item"].clone();
    assert_eq!(
        (item["state"].as_str(), item["phase"].as_str(), item["attemptCount"].as_i64()),
        (Some("pending"), Some("status"), Some(0))
    );
    assert_eq!(seconds_until_due(&api.db), 0, "due now");
    steps_to_end(&api.db, b, &mut held);
    assert_gone(&api.db, &id, "posts");
}

#[test]
fn finalize_refuses_while_anything_of_the_collection_remains() {
    type Leave = fn(&SqliteExecutor, &str);
    let leftovers: [(&str, Leave); 6] = [
        ("table", |db, _| exec_sql(db, "CREATE TABLE ec_posts (id TEXT)")),
        ("registry", |db, id| {
            exec_sql(
                db,
                &format!("INSERT INTO _emdash_collections (id, slug, label) VALUES ('{id}', 'posts_again', 'X')"),
            )
        }),
        ("work", |db, id| work_rows(db, id, 1)),
        ("source", |db, id| source(db, &format!("content:{id}:x:columns"), Some(id), "posts")),
        ("status", |db, id| {
            exec_sql(
                db,
                &format!(
                    "INSERT INTO _emdash_media_usage_index_status (scope_key, collection_id) VALUES ('zz', '{id}')"
                ),
            )
        }),
        ("revision", |db, _| {
            exec_sql(db, "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r', 'posts', 'e', '{}')")
        }),
    ];
    for (what, leave) in leftovers {
        let api = Api::new();
        let id = deleted_collection(&api, "posts");
        let mut held = None;
        let b = CleanupBatch::Fixed(50);
        step_until(&api.db, b, &mut held, "finalize");
        leave(&api.db, &id);
        let outcome = step(&api.db, b, &mut held).unwrap();
        assert!(matches!(outcome, StepOutcome::Failed { terminal: false, .. }), "{what}: {outcome:?}");
        assert_eq!(
            tombstone(&api.db, "posts").map(|t| (t.0, t.1)),
            Some(("retry".into(), "finalize".into())),
            "{what}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Guards, leases and races.

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
    text(db, "SELECT capture_state FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'").unwrap()
}

#[test]
fn the_fence_tells_content_from_a_lost_race_and_a_forced_fence_never_reports_content() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/content/posts", &json!({"slug": "live"})));
    let id = collection_id(&api.db, "posts");
    // Not forced, a live entry: has content, the tombstone is cancelled, the collection kept.
    leased_tombstone(&api.db, &id, "fence", "t", false);
    let fence = |l: &Lease| block_on(repo::fence(&api.db, l, 50)).unwrap();
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::HasContent);
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(capture_state(&api.db), "active");
    // Forced, but the registry row is gone: stale, never "has content"; nothing changes.
    leased_tombstone(&api.db, &id, "fence", "t", true);
    exec_sql(&api.db, &format!("DELETE FROM _emdash_collections WHERE id = '{id}'"));
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, true)), Fence::Stale);
    assert_eq!(capture_state(&api.db), "active");
    assert_eq!(tombstone(&api.db, "posts").unwrap().1, "fence", "a forced fence never cancels");
    // Not forced with the registry row gone: stale too (cancelling would orphan the table).
    leased_tombstone(&api.db, &id, "fence", "t", false);
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::Stale);
    assert!(tombstone(&api.db, "posts").is_some());
    // Registry back, entries trashed, but a wrong token: stale.
    exec_sql(&api.db, &format!("INSERT INTO _emdash_collections (id, slug, label) VALUES ('{id}', 'posts', 'Posts')"));
    exec_sql(&api.db, "UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z'");
    assert_eq!(fence(&lease(&id, "wrong", DeletionPhase::Fence, false)), Fence::Stale);
    assert_eq!(capture_state(&api.db), "active");
    // An expired lease: stale.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z'",
    );
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::Stale);
    // The live holder: fenced, checkpointed to `registry`; every content write is refused now.
    leased_tombstone(&api.db, &id, "fence", "t", false);
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::Fenced);
    assert_eq!(capture_state(&api.db), "deleting");
    assert_eq!(tombstone(&api.db, "posts").unwrap().1, "registry");
    let r = api.post("/content/posts", &json!({"slug": "late"}));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()));
    assert_eq!(
        scalar(
            &api.db,
            "SELECT count(*) FROM _emdash_media_usage_work WHERE content_id NOT IN (SELECT id FROM ec_posts)"
        ),
        0
    );
}

#[test]
fn the_registry_goes_only_while_fenced_and_the_table_only_under_a_live_lease_at_table() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    // Registry phase without a fence (status still active): nothing happens.
    leased_tombstone(&api.db, &id, "registry", "t", false);
    assert!(!block_on(repo::delete_registry(&api.db, &lease(&id, "t", DeletionPhase::Registry, false), 50)).unwrap());
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 1);
    // Table phase while the collection is still registered: the guard refuses the drop.
    leased_tombstone(&api.db, &id, "table", "t", false);
    let drop =
        |token: &str| block_on(repo::drop_table(&api.db, &lease(&id, token, DeletionPhase::Table, false), 50, true));
    assert!(matches!(drop("t"), Err(Error::Stale)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
    exec_sql(&api.db, &format!("DELETE FROM _emdash_collections WHERE id = '{id}'"));
    // A wrong token, or an expired lease: stale, the table stays, no guard row is left behind.
    assert!(matches!(drop("wrong"), Err(Error::Stale)));
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z'",
    );
    assert!(matches!(drop("t"), Err(Error::Stale)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_batch_guard"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_collection_deletions"), 1);
    // The live holder drops it and is released at `work`.
    leased_tombstone(&api.db, &id, "table", "t", false);
    drop("t").unwrap();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
}

#[test]
fn a_holder_whose_lease_expired_changes_nothing_once_another_took_over() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 120);
    let b = CleanupBatch::Fixed(50);
    let mut a = None;
    assert_eq!(step(&api.db, b, &mut a), Some(deleted(&[(Rows::Work, 50)], None)));
    // A stalls; its lease expires and B takes over.
    time_passes(&api.db);
    let mut b_held = None;
    assert_eq!(step(&api.db, b, &mut b_held), Some(deleted(&[(Rows::Work, 50)], None)));
    let b_token = tombstone(&api.db, "posts").unwrap().3;
    // A wakes up: its guarded deletes and its checkpoint change nothing, and it notices.
    assert_eq!(step(&api.db, b, &mut a), Some(StepOutcome::LeaseLost));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 20, "A deleted nothing");
    assert!(a.is_none());
    // B's claim counted a second attempt: A's never finished.
    assert_eq!(tombstone(&api.db, "posts").unwrap(), ("leased".into(), "work".into(), 2, b_token));
    // B finishes normally.
    steps_to_end(&api.db, b, &mut b_held);
    assert_gone(&api.db, &id, "posts");
}

#[test]
fn a_projection_racing_the_front_phases_writes_nothing() {
    use media_usage_worker::usage::project::{process_next, JobOutcome, Policy};
    // The race ends after the registry phase (table still there), or after the table phase: the
    // publish fails either way, and the work row is left to the deletion.
    for (race_to, expected) in [("registry", JobOutcome::Conflict), ("table", JobOutcome::Conflict)] {
        let api = Api::new();
        data(&api.post(
            "/schema/collections",
            &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}]}),
        ));
        let id = collection_id(&api.db, "posts");
        // An entry whose work is queued but not yet projected.
        exec_sql(&api.db, "INSERT INTO ec_posts (id, slug, hero) VALUES ('e1', 'e1', 'm1')");
        // Between the job's load and its publish, the deletion gets as far as `race_to`.
        let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", |db| {
            let until = if race_to == "registry" { "DROP TABLE" } else { "\u{0}never" };
            let r = call_on(
                &CutAt { inner: db, needle: until, cut: Cell::new(false) },
                "DELETE",
                "/schema/collections/posts?force=true",
            );
            assert_eq!(r.status, if race_to == "table" { 200 } else { 500 }, "{}", r.body);
        });
        let outcome = now(process_next(&hooked, None, &Policy::default())).unwrap();
        hooked.done();
        assert_eq!(outcome, Some(expected.clone()), "{race_to}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0, "{race_to}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0, "{race_to}");
        time_passes(&api.db);
        tick_until_gone(&api.db, "posts", budget());
        assert_gone(&api.db, &id, "posts");
    }
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

#[test]
fn content_writes_racing_the_delete_at_any_statement_leave_no_orphans() {
    let probe = Api::new();
    site(&probe, 3);
    let metered = Metered::new(&probe.db, MonotonicClock::default());
    assert_eq!(call_on(&metered, "DELETE", "/schema/collections/posts?force=true").status, 200);
    let n = metered.usage().statements;
    assert!(n >= 6, "the request issued {n} statements");
    for k in 1..=n + 1 {
        let api = Api::new();
        let media = site(&api, 3);
        let id = collection_id(&api.db, "posts");
        let write = |db: &SqliteExecutor| {
            let body = json!({"slug": "racer", "status": "published", "data": {"hero": media[0]}});
            let r = call_on_body(db, "POST", "/content/posts", Some(&body));
            assert!(matches!(r.status, 201 | 404 | 409), "a racing write answers {}: {}", r.status, r.body);
        };
        let hooked = Hooked::new(&api.db).before_nth(k, write);
        let r = call_on(&hooked, "DELETE", "/schema/collections/posts?force=true");
        assert_eq!(r.status, 200, "k={k}: {}", r.body);
        tick_until_gone(&api.db, "posts", budget());
        assert_gone(&api.db, &id, "posts");
        assert_eq!(orphans(&api.db), 0, "k={k}");
    }
}

// ---------------------------------------------------------------------------------------------
// A crash at every statement boundary.

/// What an uninterrupted deletion leaves: the deleted collection gone, the other one as before,
/// the media library intact.
struct Expected {
    posts_id: String,
    pages_id: String,
    pages: String,
    media: i64,
}

fn fixture() -> (Api, Expected) {
    let api = Api::new();
    site(&api, 4);
    let posts_id = collection_id(&api.db, "posts");
    let pages_id = collection_id(&api.db, "pages");
    let pages = dump(&api.db, &pages_id, "pages");
    let media = scalar(&api.db, "SELECT count(*) FROM media");
    (api, Expected { posts_id, pages_id, pages, media })
}

fn assert_end_state(api: &Api, e: &Expected, what: &str) {
    assert_gone(&api.db, &e.posts_id, "posts");
    assert_eq!(dump(&api.db, &e.pages_id, "pages"), e.pages, "{what}: the other collection changed");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM media"), e.media, "{what}: media rows are never deleted");
    assert_eq!(orphans(&api.db), 0, "{what}");
}

/// Small batches so every cleanup phase takes several statements, and a small tick budget so
/// the cleanup spans several ticks.
fn crash_budget() -> Tick {
    (Budget::new(11, 60_000.0), crate::support::policy().with_cleanup(CleanupBatch::Fixed(2)))
}

#[test]
fn a_crash_at_any_statement_of_the_delete_request_is_resumed_to_the_same_end_state() {
    let (probe, _) = fixture();
    let metered = Metered::new(&probe.db, MonotonicClock::default());
    assert_eq!(call_on(&metered, "DELETE", "/schema/collections/posts?force=true").status, 200);
    let n = metered.usage().statements;
    for k in 1..=n {
        let (api, expected) = fixture();
        let r = call_on(&Faulty::new(&api.db, Some(k)), "DELETE", "/schema/collections/posts?force=true");
        assert_eq!(r.status, 500, "k={k}: {}", r.body);
        assert!(!r.body.contains("injected"), "k={k}: a 500 never carries its cause");
        time_passes(&api.db);
        if tombstone(&api.db, "posts").is_none() {
            // The crash came before the tombstone: nothing happened; the operator repeats it.
            assert_eq!(collection_id(&api.db, "posts"), expected.posts_id);
            assert_eq!(call_on(&api.db, "DELETE", "/schema/collections/posts?force=true").status, 200);
        }
        tick_until_gone(&api.db, "posts", crash_budget());
        assert_end_state(&api, &expected, &format!("request k={k}"));
    }
}

#[test]
fn a_crash_at_any_statement_of_any_cleanup_tick_is_resumed_to_the_same_end_state() {
    // The uninterrupted run: statements per tick.
    let (probe, expected) = fixture();
    assert_eq!(call_on(&probe.db, "DELETE", "/schema/collections/posts?force=true").status, 200);
    let mut per_tick = Vec::new();
    while tombstone(&probe.db, "posts").is_some() {
        per_tick.push(tick_with(&probe.db, crash_budget()).statements);
        time_passes(&probe.db);
        assert!(per_tick.len() < 100);
    }
    assert_end_state(&probe, &expected, "uninterrupted");
    assert!(per_tick.len() >= 3, "the cleanup spans several ticks: {per_tick:?}");
    let mut crashes = 0;
    for (i, n) in per_tick.iter().enumerate() {
        for k in 1..=*n {
            let (api, expected) = fixture();
            assert_eq!(call_on(&api.db, "DELETE", "/schema/collections/posts?force=true").status, 200);
            for _ in 0..i {
                tick_with(&api.db, crash_budget());
                time_passes(&api.db);
            }
            let report = tick_with(&Faulty::new(&api.db, Some(k)), crash_budget());
            assert_ne!(report.outcome, media_usage_worker::model::state::TickOutcome::Idle, "tick {i} k={k}");
            crashes += 1;
            time_passes(&api.db);
            tick_until_gone(&api.db, "posts", crash_budget());
            assert_end_state(&api, &expected, &format!("tick {i} k={k}"));
        }
    }
    assert!(crashes >= 20, "{crashes} crash points");
}

// ---------------------------------------------------------------------------------------------
// Budgets.

/// A collection of `n` entries, each with a live source of three occurrences and a queued work
/// row (as an import would leave them), written in a few set-based statements.
fn big_collection(api: &Api, n: usize) -> String {
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!(
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {n})
             INSERT INTO ec_posts (id, slug, hero) SELECT printf('e%07d', i), printf('s%07d', i), 'm' FROM seq;
             INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, current_generation, identity_version, source_completeness)
               SELECT 'content:{id}:' || id || ':columns', '{id}', 'posts', id, 'columns', 'g', 1, 'complete' FROM ec_posts;
             WITH k(n) AS (VALUES (0), (1), (2))
             INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id)
               SELECT s.content_id || '-' || k.n, s.source_key, 'g', 'hero', 'hero' || k.n, 'image_field', 'm', 'm'
               FROM _emdash_media_usage_sources AS s, k;"
        ),
    );
    id
}

#[test]
fn a_collection_of_100000_entries_and_300000_occurrences_is_deleted_in_at_most_30_default_ticks_without_a_daily_budget()
{
    let api = Api::new();
    let id = big_collection(&api, 100_000);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 300_000);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 100_000);
    let r = api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None);
    assert_eq!(r.status, 200, "{}", r.body);
    let mut ticks = Vec::new();
    // 500,000 rows deleted, each one row written, at 20,000 rows written per tick (the default);
    // the default daily budget (50,000) would spread them over ten days.
    let budget = crate::support::budget().with_daily_rows_written(0);
    while tombstone(&api.db, "posts").is_some() {
        let report = tick_counting_statements(&api.db, (budget, crate::support::policy()));
        assert!(report.error.is_none(), "{:?}", report.error);
        // The work lane takes its turns too: it drops work rows of the vanished collection.
        ticks.push((report.statements, report.count("deletedRows") + report.count("jobs")));
        assert!(ticks.len() <= 30, "more than 30 ticks: {ticks:?}");
    }
    assert_gone(&api.db, &id, "posts");
    assert_eq!(ticks.iter().map(|t| t.1).sum::<u64>(), 500_000, "work, sources and occurrences: {ticks:?}");
}

#[test]
fn every_tick_of_a_deletion_stays_within_the_smallest_budget_and_the_batch_stays_bounded() {
    for budget in [Budget::new(11, 60_000.0), crate::support::budget()] {
        let api = Api::new();
        let id = big_collection(&api, 300);
        assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
        let mut n = 0;
        while tombstone(&api.db, "posts").is_some() {
            let clock = MonotonicClock::default();
            let metered = Metered::new(&api.db, &clock);
            let report =
                block_on(tick::run(&metered, &clock, budget, &crate::support::policy(), tick::Continuation::Off, None));
            let usage = metered.usage();
            assert_eq!(report.statements, usage.statements, "the log write is counted");
            assert!(usage.statements <= budget.max_statements, "{} > {}", usage.statements, budget.max_statements);
            assert!(usage.max_binds <= 100 && usage.max_sql_bytes < 100_000);
            assert!(report.count("deletionSteps") > 0, "every tick advances the deletion");
            let logged: i64 =
                scalar(&api.db, "SELECT statements FROM _emdash_media_usage_ticks ORDER BY id DESC LIMIT 1");
            assert_eq!(logged as u64, report.statements);
            let rows = scalar(
                &api.db,
                "SELECT coalesce(max(cleanup_batch_rows), 50) FROM _emdash_media_usage_collection_deletions",
            );
            assert!((50..=10_000).contains(&rows), "batch of {rows} rows");
            n += 1;
            assert!(n < 100);
        }
        assert_gone(&api.db, &id, "posts");
    }
}

#[test]
fn a_holder_whose_lease_ran_out_deletes_nothing_even_before_anyone_takes_over() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 120);
    let b = CleanupBatch::Fixed(50);
    let mut held = None;
    assert_eq!(step(&api.db, b, &mut held), Some(deleted(&[(Rows::Work, 50)], None)));
    // The lease runs out; nobody has claimed the deletion since.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z'",
    );
    assert_eq!(step(&api.db, b, &mut held), Some(StepOutcome::LeaseLost));
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"),
        70,
        "nothing deleted under an expired lease"
    );
    assert_eq!(tombstone(&api.db, "posts").unwrap().1, "work");
}

#[test]
fn a_lease_guards_only_its_own_collection() {
    let api = Api::new();
    let a = deleted_collection(&api, "posts");
    let b = deleted_collection(&api, "pages");
    work_rows(&api.db, &b, 3);
    // A holds its deletion under token `t`; a statement built for B with A's token is a no-op.
    exec_sql(
        &api.db,
        &format!(
            "UPDATE _emdash_media_usage_collection_deletions SET state = 'leased', lease_token = 't', lease_expires_at = '2999-01-01T00:00:00.000Z' WHERE collection_id = '{a}'"
        ),
    );
    let confused = lease(&b, "t", DeletionPhase::Work, false);
    assert_eq!(block_on(repo::delete_rows(&api.db, &confused, Rows::Work, 50)).unwrap(), 0);
    assert!(!block_on(repo::checkpoint(&api.db, &confused, DeletionPhase::Sources, BATCH, false)).unwrap());
    let retry = Failure { terminal: false, delay_seconds: 30 };
    assert!(!block_on(repo::record_failure(&api.db, (&b, "t", DeletionPhase::Work), (retry, 1), BATCH, "X")).unwrap());
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 3);
    assert_eq!(tombstone(&api.db, "pages"), Some(("pending".into(), "work".into(), 0, None)));
}

// ---------------------------------------------------------------------------------------------
// Every precondition of the claims, the tombstone insert and the fence.

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

#[test]
fn the_fence_and_its_cancel_need_every_precondition() {
    // Each case breaks one precondition. It runs three ways, so that no other precondition
    // hides it: with a live entry and no force (an unguarded cancel would cancel), with the
    // entries trashed (an unguarded fence would fence), and forced (likewise). The fence must
    // change nothing in any of them.
    let cases: [(&str, &str, &str); 11] = [
        ("another token", "", "u"),
        (
            "an expired lease",
            "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z'",
            "t",
        ),
        ("another phase", "UPDATE _emdash_media_usage_collection_deletions SET phase = 'registry'", "t"),
        (
            "another tombstone slug (and a tombstone of another id holds this one)",
            "UPDATE _emdash_media_usage_collection_deletions SET collection_slug = 'other';
             INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug) VALUES ('someone', 'posts')",
            "t",
        ),
        ("a renamed registry row", "UPDATE _emdash_collections SET slug = 'renamed'", "t"),
        ("a replaced registry row", "UPDATE _emdash_collections SET id = 'other'", "t"),
        ("capture not active", "UPDATE _emdash_media_usage_index_status SET capture_state = 'ready'", "t"),
        ("a status row of another id", "UPDATE _emdash_media_usage_index_status SET collection_id = 'other'", "t"),
        ("a status row of another slug", "UPDATE _emdash_media_usage_index_status SET scope_key = 'other'", "t"),
        ("a status row of another adapter", "UPDATE _emdash_media_usage_index_status SET adapter_id = 'other'", "t"),
        ("a status row of another scope", "UPDATE _emdash_media_usage_index_status SET scope_type = 'other'", "t"),
    ];
    for (what, sabotage, token) in cases {
        for mode in ["live entry", "trashed entries", "forced"] {
            let api = Api::new();
            data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
            data(&api.post("/content/posts", &json!({"slug": "entry"})));
            let id = collection_id(&api.db, "posts");
            if mode == "trashed entries" {
                exec_sql(&api.db, "UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z'");
            }
            let force = mode == "forced";
            leased_tombstone(&api.db, &id, "fence", "t", force);
            // Every sabotage leaves the registry row's id usable by the foreign keys.
            exec_sql(&api.db, "PRAGMA foreign_keys = OFF");
            if !sabotage.is_empty() {
                exec_sql(&api.db, sabotage);
            }
            exec_sql(&api.db, "PRAGMA foreign_keys = ON");
            let state =
                || (tombstone_row(&api.db), dump_query(&api.db, "SELECT * FROM _emdash_media_usage_index_status"));
            let before = state();
            let out = block_on(repo::fence(&api.db, &lease(&id, token, DeletionPhase::Fence, force), 50)).unwrap();
            assert_eq!(out, Fence::Stale, "{what} ({mode})");
            assert_eq!(state(), before, "{what} ({mode}): nothing changed");
        }
    }
    // The controls: with every precondition in place the same setups cancel or fence.
    for (mode, expected) in
        [("live entry", Fence::HasContent), ("trashed entries", Fence::Fenced), ("forced", Fence::Fenced)]
    {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        data(&api.post("/content/posts", &json!({"slug": "entry"})));
        if mode == "trashed entries" {
            exec_sql(&api.db, "UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z'");
        }
        let id = collection_id(&api.db, "posts");
        let force = mode == "forced";
        leased_tombstone(&api.db, &id, "fence", "t", force);
        assert_eq!(
            block_on(repo::fence(&api.db, &lease(&id, "t", DeletionPhase::Fence, force), 50)).unwrap(),
            expected,
            "{mode}"
        );
    }
}

#[test]
fn the_tombstone_is_created_only_for_the_exact_actively_captured_collection() {
    let sabotages = [
        "UPDATE _emdash_media_usage_index_status SET collection_id = 'other'",
        "UPDATE _emdash_media_usage_index_status SET scope_key = 'other'",
        "UPDATE _emdash_media_usage_index_status SET adapter_id = 'other'",
        "UPDATE _emdash_media_usage_index_status SET scope_type = 'other'",
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting'",
    ];
    for sabotage in sabotages {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        exec_sql(&api.db, sabotage);
        let r = delete(&api, "posts?force=true");
        assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()), "{sabotage}: {}", r.body);
        assert!(tombstone(&api.db, "posts").is_none(), "{sabotage}");
    }
    // The registry row renamed, replaced or gone between the request's read and its insert: no
    // tombstone.
    for (change, status, want) in [
        ("UPDATE _emdash_collections SET slug = 'renamed'", 404, "COLLECTION_NOT_FOUND"),
        ("DELETE FROM _emdash_collections", 404, "COLLECTION_NOT_FOUND"),
        (
            "PRAGMA foreign_keys = OFF; UPDATE _emdash_collections SET id = 'replacement'; PRAGMA foreign_keys = ON",
            409,
            "CONFLICT",
        ),
    ] {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        let hooked = Hooked::new(&api.db)
            .before("INSERT INTO _emdash_media_usage_collection_deletions", move |db| exec_sql(db, change));
        let r = call_on(&hooked, "DELETE", "/schema/collections/posts?force=true");
        hooked.done();
        assert_eq!((r.status, code(&r)), (status, want.into()), "{change}: {}", r.body);
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_collection_deletions"), 0, "{change}");
    }
}

#[test]
fn a_delete_takes_over_only_its_own_due_front_phase() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
    let (posts, pages) = (collection_id(&api.db, "posts"), collection_id(&api.db, "pages"));
    // Both have an expired front phase; deleting posts leaves pages' tombstone alone.
    for (id, slug) in [(&posts, "posts"), (&pages, "pages")] {
        exec_sql(
            &api.db,
            &format!(
                "INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
                 VALUES ('{id}', '{slug}', 'leased', 'fence', 'dead', '2000-01-01T00:00:00.000Z')"
            ),
        );
    }
    data(&delete(&api, "posts"));
    assert_eq!(tombstone(&api.db, "pages").unwrap().3.as_deref(), Some("dead"), "untouched");
    // Backing off after a failure (not due yet): not taken over.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET state = 'retry', lease_token = NULL, lease_expires_at = NULL,
           next_attempt_at = '2999-01-01T00:00:00.000Z' WHERE collection_slug = 'pages'",
    );
    let r = delete(&api, "pages");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["state"], "retry");
    assert_eq!(tombstone(&api.db, "pages").unwrap().0, "retry");
    // Pending but not due (a future next attempt): not taken over either.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET state = 'pending' WHERE collection_slug = 'pages'",
    );
    assert_eq!(delete(&api, "pages").status, 409);
    // A tick moved it past the front phases between the request's read and its claim: 200, and
    // the request does not touch it.
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET next_attempt_at = '2000-01-01T00:00:00.000Z' WHERE collection_slug = 'pages'");
    let hooked = Hooked::new(&api.db).before("force_delete = max(force_delete", |db| {
        exec_sql(
            db,
            "UPDATE _emdash_media_usage_collection_deletions SET phase = 'work' WHERE collection_slug = 'pages'",
        );
    });
    let r = call_on(&hooked, "DELETE", "/schema/collections/pages");
    hooked.done();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(tombstone(&api.db, "pages"), Some(("pending".into(), "work".into(), 0, None)));
}

#[test]
fn the_lane_claims_only_due_deletions() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let b = CleanupBatch::Fixed(50);
    let set = |sql: &str| {
        exec_sql(
            &api.db,
            &format!("UPDATE _emdash_media_usage_collection_deletions SET {sql} WHERE collection_id = '{id}'"),
        )
    };
    for (what, sql) in [
        ("pending, not due yet", "state = 'pending', next_attempt_at = '2999-01-01T00:00:00.000Z'"),
        ("retrying, not due yet", "state = 'retry', next_attempt_at = '2999-01-01T00:00:00.000Z'"),
        ("leased, lease live", "state = 'leased', lease_token = 'x', lease_expires_at = '2999-01-01T00:00:00.000Z', next_attempt_at = '2000-01-01T00:00:00.000Z'"),
        ("failed", "state = 'failed', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = '2000-01-01T00:00:00.000Z'"),
    ] {
        set(sql);
        let mut held = None;
        assert_eq!(step(&api.db, b, &mut held), None, "{what}");
    }
    // An expired lease is due, whatever next_attempt_at says.
    set("state = 'leased', lease_token = 'x', lease_expires_at = '2000-01-01T00:00:00.000Z', next_attempt_at = '2999-01-01T00:00:00.000Z'");
    let mut held = None;
    assert!(step(&api.db, b, &mut held).is_some());
}

#[test]
fn a_checkpoint_needs_the_live_lease_of_its_own_deletion_at_its_phase() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let other = deleted_collection(&api, "pages");
    // `posts` is held at `work` by `t`, with nothing left to delete (its exit holds).
    exec_sql(
        &api.db,
        &format!(
            "UPDATE _emdash_media_usage_collection_deletions SET state = 'leased', lease_token = 't', lease_expires_at = '2999-01-01T00:00:00.000Z' WHERE collection_id = '{id}'"
        ),
    );
    let before = tombstone_row(&api.db);
    for (what, l) in [
        ("another token", lease(&id, "u", DeletionPhase::Work, false)),
        ("another phase", lease(&id, "t", DeletionPhase::Sources, false)),
        ("another deletion", lease(&other, "t", DeletionPhase::Work, false)),
    ] {
        assert!(!block_on(repo::checkpoint(&api.db, &l, DeletionPhase::Sources, BATCH, false)).unwrap(), "{what}");
        assert!(!block_on(repo::checkpoint(&api.db, &l, l.phase, BATCH, true)).unwrap(), "{what}: release");
        assert_eq!(tombstone_row(&api.db), before, "{what}");
    }
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE lease_token = 't'");
    let mine = lease(&id, "t", DeletionPhase::Work, false);
    assert!(
        !block_on(repo::checkpoint(&api.db, &mine, DeletionPhase::Sources, BATCH, false)).unwrap(),
        "an expired lease"
    );
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2999-01-01T00:00:00.000Z' WHERE lease_token = 't'");
    assert!(block_on(repo::checkpoint(&api.db, &mine, DeletionPhase::Sources, BATCH, false)).unwrap(), "the holder");
}

#[test]
fn a_phase_is_left_only_once_what_it_removes_is_gone() {
    const FENCED: &str =
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';";
    const UNREGISTERED: &str = "DELETE FROM _emdash_collections WHERE id = '{id}';";
    const DROPPED: &str = "DROP TABLE ec_posts;";
    const NO_STATUS: &str = "DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}';";
    // (phase, the state earlier phases left, what this phase must remove)
    let cases: Vec<(&str, String, &str)> = vec![
        ("fence", String::new(), FENCED),
        ("registry", FENCED.to_owned(), UNREGISTERED),
        ("table", format!("{FENCED}{UNREGISTERED}"), DROPPED),
        (
            "work",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{{id}}', 'e', 'posts');"),
            "DELETE FROM _emdash_media_usage_work;",
        ),
        (
            "work",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r', 'posts', 'e', '{{}}');"),
            "DELETE FROM revisions;",
        ),
        (
            "sources",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant) VALUES ('content:{{id}}:e:columns', '{{id}}', 'posts', 'e', 'columns');"),
            "DELETE FROM _emdash_media_usage_sources;",
        ),
        (
            "sources",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id) VALUES ('u', 'content:{{id}}:e:columns', 'g', 'h', 'h', 'image_field', 'm');"),
            "DELETE FROM _emdash_media_usage;",
        ),
        ("status", format!("{FENCED}{UNREGISTERED}{DROPPED}"), NO_STATUS),
        (
            "status",
            format!("{FENCED}{UNREGISTERED}{DROPPED}{NO_STATUS} INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token) VALUES ('{{id}}', 'posts', 'r');"),
            "DELETE FROM _emdash_media_usage_reconciliations;",
        ),
    ];
    for (phase, state, remove) in cases {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        let id = collection_id(&api.db, "posts");
        // A bystander collection that has everything a phase removes, fenced, and coverage rows
        // of another adapter and scope for `posts`, fenced too: none of it may hold up `posts`.
        data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
        let pages = collection_id(&api.db, "pages");
        exec_sql(
            &api.db,
            &format!(
                "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{pages}';
                 INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) VALUES ('other', 'collection', 'posts', '{id}', 'deleting');
                 INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) VALUES ('content-media', 'other', 'posts', '{id}', 'deleting');
                 INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{pages}', 'e', 'pages');
                 INSERT INTO revisions (id, collection, entry_id, data) VALUES ('rp', 'pages', 'e', '{{}}');
                 INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant) VALUES ('content:{pages}:e:columns', '{pages}', 'pages', 'e', 'columns');
                 INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id) VALUES ('up', 'content:{pages}:e:columns', 'g', 'h', 'h', 'image_field', 'm');
                 INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token) VALUES ('{pages}', 'pages', 'r');"
            ),
        );
        leased_tombstone(&api.db, &id, phase, "t", false);
        exec_sql(&api.db, &state.replace("{id}", &id));
        let l = lease(&id, "t", phase_of(phase), false);
        let next = l.phase.next().unwrap();
        assert!(!block_on(repo::checkpoint(&api.db, &l, next, BATCH, false)).unwrap(), "{phase} left before {remove}");
        // Staying at the phase (a release) does not need its exit.
        assert!(block_on(repo::checkpoint(&api.db, &l, l.phase, BATCH, false)).unwrap(), "{phase}: staying");
        exec_sql(
            &api.db,
            &remove
                .replace("{id}", &id)
                .replace(
                    "DELETE FROM _emdash_media_usage_work;",
                    &format!("DELETE FROM _emdash_media_usage_work WHERE collection_id = '{id}';"),
                )
                .replace("DELETE FROM revisions;", "DELETE FROM revisions WHERE collection = 'posts';")
                .replace(
                    "DELETE FROM _emdash_media_usage_sources;",
                    &format!("DELETE FROM _emdash_media_usage_sources WHERE collection_id = '{id}';"),
                )
                .replace(
                    "DELETE FROM _emdash_media_usage;",
                    &format!("DELETE FROM _emdash_media_usage WHERE source_key LIKE 'content:{id}:%';"),
                )
                .replace(
                    "DELETE FROM _emdash_media_usage_reconciliations;",
                    &format!("DELETE FROM _emdash_media_usage_reconciliations WHERE collection_id = '{id}';"),
                ),
        );
        assert!(block_on(repo::checkpoint(&api.db, &l, next, BATCH, false)).unwrap(), "{phase} once {remove}");
    }
}

fn phase_of(p: &str) -> DeletionPhase {
    DeletionPhase::parse(p).unwrap()
}

#[test]
fn the_registry_table_and_finalize_steps_need_every_precondition() {
    // Each case: a step that must change nothing, then the same step by the rightful holder.
    struct Case {
        what: &'static str,
        phase: &'static str,
        setup: &'static str,
        token: &'static str,
        other_id: bool,
    }
    const FENCED: &str =
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts';";
    let cases = [
        Case { what: "registry: another collection is fenced", phase: "registry", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'pages';", token: "t", other_id: false },
        Case { what: "registry: another adapter's row is fenced", phase: "registry", setup: "INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) SELECT 'other', 'collection', 'posts', collection_id, 'deleting' FROM _emdash_media_usage_index_status WHERE scope_key = 'posts';", token: "t", other_id: false },
        Case { what: "registry: another scope's row is fenced", phase: "registry", setup: "INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) SELECT 'content-media', 'other', 'posts', collection_id, 'deleting' FROM _emdash_media_usage_index_status WHERE scope_key = 'posts';", token: "t", other_id: false },
        Case { what: "registry: the lease of another deletion", phase: "registry", setup: FENCED, token: "t", other_id: true },

        Case { what: "registry: an expired lease", phase: "registry", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "table: another token", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts';", token: "u", other_id: false },
        Case { what: "table: the tombstone is at another phase", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts'; UPDATE _emdash_media_usage_collection_deletions SET phase = 'work' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "table: the tombstone names another slug", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts'; UPDATE _emdash_media_usage_collection_deletions SET collection_slug = 'posts_old' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "table: the lease of another deletion", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts';", token: "t", other_id: true },
        Case { what: "finalize: another token", phase: "finalize", setup: "", token: "u", other_id: false },
        Case { what: "finalize: at another phase", phase: "finalize", setup: "UPDATE _emdash_media_usage_collection_deletions SET phase = 'status' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "finalize: an expired lease", phase: "finalize", setup: "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "finalize: the lease of another deletion", phase: "finalize", setup: "", token: "t", other_id: true },
    ];
    for c in cases {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
        let id = collection_id(&api.db, "posts");
        let pages = collection_id(&api.db, "pages");
        if c.phase == "finalize" {
            // Everything of `posts` is gone but its tombstone.
            data(&delete(&api, "posts"));
            exec_sql(&api.db, &format!("DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'"));
        }
        leased_tombstone(&api.db, &id, c.phase, "t", false);
        // `pages` has a deletion held under the same token (only a confused holder could mix them).
        exec_sql(
            &api.db,
            &format!(
                "INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
                 VALUES ('{pages}', 'pages', 'leased', '{}', 't', '2999-01-01T00:00:00.000Z')",
                c.phase
            ),
        );
        exec_sql(&api.db, c.setup);
        let l = Lease {
            collection_id: if c.other_id { pages.clone() } else { id.clone() },
            slug: Ident::parse("posts").unwrap(),
            token: c.token.into(),
            force: false,
            phase: phase_of(c.phase),
        };
        let before = dump(&api.db, &id, "posts") + &tombstone_row(&api.db);
        let changed = match c.phase {
            "registry" => block_on(repo::delete_registry(&api.db, &l, 50)).unwrap(),
            "table" => block_on(repo::drop_table(&api.db, &l, 50, false)).is_ok(),
            _ => block_on(repo::finalize(&api.db, &l)).unwrap(),
        };
        assert!(!changed, "{}", c.what);
        assert_eq!(dump(&api.db, &id, "posts") + &tombstone_row(&api.db), before, "{}: nothing changed", c.what);
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_batch_guard"), 0);
    }
    // A collection registered under the slug with another id (it bypassed the reservation): the
    // registry step deletes only the exact id, and the table step will not drop its table.
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts';
         PRAGMA foreign_keys = OFF; UPDATE _emdash_collections SET id = 'replacement' WHERE slug = 'posts'; PRAGMA foreign_keys = ON;",
    );
    leased_tombstone(&api.db, &id, "registry", "t", false);
    block_on(repo::delete_registry(&api.db, &lease(&id, "t", DeletionPhase::Registry, false), 50)).unwrap();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections WHERE id = 'replacement'"), 1);
    leased_tombstone(&api.db, &id, "table", "t", false);
    assert!(matches!(
        block_on(repo::drop_table(&api.db, &lease(&id, "t", DeletionPhase::Table, false), 50, false)),
        Err(Error::Stale)
    ));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
}

#[test]
fn of_several_due_deletions_one_step_claims_and_advances_exactly_one() {
    let api = Api::new();
    let ids: Vec<String> = (0..5).map(|i| deleted_collection(&api, &format!("c{i}"))).collect();
    let before = tombstone_row(&api.db);
    let mut held = None;
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let outcome =
        block_on(deletion::step(&metered, &MonotonicClock::default(), CleanupBatch::Fixed(50), &mut held)).unwrap();
    assert!(
        matches!(outcome, Some(StepOutcome::Deleted { advanced_to: Some(DeletionPhase::Sources), .. })),
        "{outcome:?}"
    );
    // One claim, two deletes (work rows, revisions) and a checkpoint.
    assert_eq!(metered.usage().statements, 4);
    let changed: Vec<&String> = ids
        .iter()
        .filter(|id| scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_collection_deletions WHERE collection_id = '{id}' AND phase = 'sources'")) == 1)
        .collect();
    assert_eq!(changed.len(), 1, "exactly one advanced");
    let still = tombstone_row(&api.db).lines().filter(|l| before.contains(*l)).count();
    assert_eq!(still, 4, "the other four are untouched");
}

#[test]
fn the_status_step_reads_what_is_left_in_one_statement() {
    let api = Api::new();
    deleted_collection(&api, "posts");
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step_until(&api.db, b, &mut held, "status");
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let outcome = block_on(deletion::step(&metered, &MonotonicClock::default(), b, &mut held)).unwrap();
    assert_eq!(outcome, Some(StepOutcome::Advanced { to: DeletionPhase::Finalize }));
    // One SELECT for every leftover (work, sources, occurrences, revisions), one batch of three.
    let u = metered.usage();
    assert_eq!((u.statements, u.results), (4, 4));
}

#[test]
fn a_deletion_whose_holders_keep_dying_fails_visibly_instead_of_looping() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 3);
    // Five holders claimed it and died without recording anything; the sixth claim gives up.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET state = 'leased', lease_token = 'dead', attempt_count = 5,
           lease_expires_at = '2000-01-01T00:00:00.000Z'",
    );
    let mut held = None;
    let outcome = step(&api.db, CleanupBatch::Fixed(50), &mut held).unwrap();
    assert!(matches!(outcome, StepOutcome::Failed { terminal: true, .. }), "{outcome:?}");
    assert_eq!(tombstone(&api.db, "posts").map(|t| (t.0, t.2)), Some(("failed".into(), 6)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 3, "the step did not run");
    // With one attempt left it still runs.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET state = 'leased', lease_token = 'dead', attempt_count = 4,
           lease_expires_at = '2000-01-01T00:00:00.000Z'",
    );
    assert!(matches!(step(&api.db, CleanupBatch::Fixed(50), &mut held), Some(StepOutcome::Deleted { .. })));
}

#[test]
fn finalize_ignores_other_collections_and_refuses_leftover_occurrences_and_runs() {
    // Another collection's rows of every kind do not hold up `posts`.
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
    let pages = collection_id(&api.db, "pages");
    exec_sql(
        &api.db,
        &format!(
            "INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, state) VALUES ('{pages}', 'e', 'pages', 'failed');
             INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant) VALUES ('content:{pages}:e:columns', '{pages}', 'pages', 'e', 'columns');
             INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token, state, lease_token, lease_expires_at) VALUES ('{pages}', 'pages', 'r', 'leased', 'x', '2999-01-01T00:00:00.000Z');"
        ),
    );
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step_until(&api.db, b, &mut held, "finalize");
    assert_eq!(step(&api.db, b, &mut held), Some(StepOutcome::Finalized));
    assert_gone(&api.db, &id, "posts");
    for table in ["_emdash_media_usage_work", "_emdash_media_usage_sources", "_emdash_media_usage_reconciliations"] {
        assert_eq!(
            scalar(&api.db, &format!("SELECT count(*) FROM {table} WHERE collection_id = '{pages}'")),
            1,
            "{table} of pages kept"
        );
    }

    // Its own leftover occurrences or repair runs do.
    for leftover in [
        "INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id) VALUES ('u', 'content:{id}:e:columns', 'g', 'h', 'h', 'image_field', 'm')",
        "INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token) VALUES ('{id}', 'posts', 'r')",
    ] {
        let api = Api::new();
        let id = deleted_collection(&api, "posts");
        let mut held = None;
        step_until(&api.db, b, &mut held, "finalize");
        exec_sql(&api.db, &leftover.replace("{id}", &id));
        let outcome = step(&api.db, b, &mut held).unwrap();
        assert!(matches!(outcome, StepOutcome::Failed { terminal: false, .. }), "{leftover}: {outcome:?}");
        assert!(tombstone(&api.db, "posts").is_some());
    }
}

#[test]
fn operators_reopen_failed_retrying_or_expired_deletions_and_nothing_else() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let set = |sql: &str| exec_sql(&api.db, &format!("UPDATE _emdash_media_usage_collection_deletions SET {sql}"));
    let retry = || api.post("/admin/media-usage/collection-deletions/retry", &json!({"collectionId": id}));
    // Pending already: refused, and the repository refuses it too (the handler's read may race).
    let r = retry();
    assert_eq!((r.status, code(&r)), (409, "WORK_CHANGED".into()));
    assert!(block_on(repo::retry(&api.db, &id, 50)).unwrap().is_none());
    // Leased with a live lease: refused with its expiry; the repository refuses it as well.
    set("state = 'leased', lease_token = 'x', lease_expires_at = '2999-01-01T00:00:00.000Z'");
    let r = retry();
    assert_eq!((r.status, code(&r)), (409, "WORK_LEASE_ACTIVE".into()));
    assert_eq!(r.body_json()["error"]["details"]["leaseExpiresAt"], "2999-01-01T00:00:00.000Z");
    assert!(block_on(repo::retry(&api.db, &id, 50)).unwrap().is_none());
    for (what, sql) in [
        ("failed", "state = 'failed', lease_token = NULL, lease_expires_at = NULL"),
        ("retrying", "state = 'retry', lease_token = NULL, lease_expires_at = NULL"),
        ("expired", "state = 'leased', lease_token = 'x', lease_expires_at = '2000-01-01T00:00:00.000Z'"),
    ] {
        set(&format!("{sql}, phase = 'sources', attempt_count = 3, last_error_code = 'X', next_attempt_at = '2999-01-01T00:00:00.000Z', cleanup_batch_rows = 10000"));
        let item = data(&retry())["item"].clone();
        assert_eq!(
            scalar(&api.db, "SELECT cleanup_batch_rows FROM _emdash_media_usage_collection_deletions"),
            50,
            "{what}: the batch starts afresh"
        );
        assert_eq!(
            (
                item["state"].as_str(),
                item["phase"].as_str(),
                item["attemptCount"].as_i64(),
                item["lastErrorCode"].is_null(),
                item["leaseExpiresAt"].is_null()
            ),
            (Some("pending"), Some("sources"), Some(0), true, true),
            "{what}"
        );
        assert_eq!(seconds_until_due(&api.db), 0, "{what}: due now");
    }
    let r = api.post("/admin/media-usage/collection-deletions/retry", &json!({"collectionId": "nope"}));
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()));
}

#[test]
fn the_slug_stays_reserved_at_every_phase_until_the_tombstone_is_gone() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/content/posts", &json!({"slug": "e", "status": "published"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!("INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, force_delete) VALUES ('{id}', 'posts', 1)"),
    );
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    for _ in 0..20 {
        let Some(_) = tombstone(&api.db, "posts") else { break };
        let r = api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"}));
        assert_eq!((r.status, code(&r)), (409, "COLLECTION_EXISTS".into()), "at {}", phase(&api.db, "posts"));
        step(&api.db, b, &mut held);
    }
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"})).status, 201);
    // A table of that name that is no collection's blocks it too.
    exec_sql(&api.db, "CREATE TABLE ec_stray (id TEXT)");
    let r = api.post("/schema/collections", &json!({"slug": "stray", "label": "Stray"}));
    assert_eq!((r.status, code(&r)), (409, "COLLECTION_EXISTS".into()), "{}", r.body);
}

#[test]
fn finalizing_one_deletion_leaves_another_alone_even_under_the_same_token() {
    let api = Api::new();
    let posts = deleted_collection(&api, "posts");
    let pages = deleted_collection(&api, "pages");
    for id in [&posts, &pages] {
        exec_sql(&api.db, &format!("DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'"));
    }
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET state = 'leased', phase = 'finalize', lease_token = 't', lease_expires_at = '2999-01-01T00:00:00.000Z'",
    );
    assert!(block_on(repo::finalize(&api.db, &lease(&posts, "t", DeletionPhase::Finalize, false))).unwrap());
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(tombstone(&api.db, "pages").map(|t| t.1), Some("finalize".into()));
}

/// Fails every revision delete asked to remove more than 500 rows, as a statement that times
/// out would; everything else passes through. Remembers the largest batch of work rows asked,
/// and the batches of revisions asked, in order.
struct LargeRevisionDeletesFail<'a>(&'a SqliteExecutor, Cell<i64>, RefCell<Vec<i64>>);

impl LargeRevisionDeletesFail<'_> {
    fn admit(&self, stmt: &Statement) -> Result<(), Error> {
        let limit = stmt
            .params()
            .iter()
            .filter_map(|p| match p {
                media_usage_worker::exec::Value::Integer(n) => Some(*n),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        if stmt.sql().starts_with("DELETE FROM _emdash_media_usage_work") {
            self.1.set(self.1.get().max(limit));
        }
        if stmt.sql().starts_with("DELETE FROM revisions") {
            self.2.borrow_mut().push(limit);
        }
        if stmt.sql().starts_with("DELETE FROM revisions") && limit > 500 {
            return Err(Error::Backend("D1_ERROR: statement timed out".into()));
        }
        Ok(())
    }
}

impl Executor for LargeRevisionDeletesFail<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.admit(&stmt)?;
        self.0.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        stmts.iter().try_for_each(|s| self.admit(s))?;
        self.0.batch(stmts).await
    }
}

#[test]
fn a_batch_grown_on_work_rows_never_sticks_a_deletion_on_heavy_revisions() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    exec_sql(
        &api.db,
        &format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug)
             SELECT '{id}', printf('entry-%05d', i), 'posts' FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO revisions (id, collection, entry_id, data)
             SELECT 'r' || i, 'posts', printf('entry-%05d', i), printf('%.20000c', 'x') FROM n;"
        ),
    );
    // The adaptive batch, on a clock that stands still: every full statement doubles it, so the
    // work rows grow it to its largest size.
    let policy = crate::support::policy().with_cleanup(CleanupBatch::Adaptive { target_ms: 200.0 });
    let exec = LargeRevisionDeletesFail(&api.db, Cell::new(0), RefCell::new(Vec::new()));
    let mut failures = 0;
    for _ in 0..60 {
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&exec, &clock);
        let report =
            block_on(tick::run(&metered, &clock, Budget::new(40, 60_000.0), &policy, tick::Continuation::Off, None));
        failures += report.count("deletionFailures");
        assert_ne!(tombstone(&api.db, "posts").map(|t| t.0).as_deref(), Some("failed"), "the deletion got stuck");
        if tombstone(&api.db, "posts").is_none() {
            break;
        }
        time_passes(&api.db);
    }
    assert!(tombstone(&api.db, "posts").is_none(), "the deletion finished");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM revisions"), 0);
    assert!(exec.1.get() >= 1_600, "the work rows grew the batch: {}", exec.1.get());
    // Each time one failed, the next holder started from half of it; the failures (more than
    // the attempts a deletion gets) came after progress, which resets the attempts.
    assert!(failures > 5, "statements over 500 rows were tried, and failed: {failures}");
    // A tick's first revision statement deletes one row to measure what a row costs, and the
    // next is sized from it: the two are one batch.
    let mut asked: Vec<i64> = Vec::new();
    let mut probe = 0;
    for &n in exec.2.borrow().iter() {
        if n == 1 && probe == 0 {
            probe = 1;
        } else {
            asked.push(n + probe);
            probe = 0;
        }
    }
    assert!(asked[0] <= 50, "the revisions started small, not at the work rows' size: {asked:?}");
    // The next holder resumes at the revisions with half the batch that failed (the kind of row
    // and its batch are stored together).
    for pair in asked.windows(2).filter(|p| p[0] > 500) {
        assert_eq!(pair[1], pair[0] / 2, "{asked:?}");
    }
}
