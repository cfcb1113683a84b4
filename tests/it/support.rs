//! Shared fixtures: an in-memory migrated database and an API client over the pure handlers.

use futures::executor::block_on;
use media_usage_worker::api::{self, Config, Request, Response};
use media_usage_worker::clock::Clock;
use media_usage_worker::clock::FnClock;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor};
use media_usage_worker::model::state::TickOutcome;
use media_usage_worker::settings::Settings;
use media_usage_worker::storage::memory::MemoryStorage;
use media_usage_worker::storage::Storage;
use media_usage_worker::tick::report::TickReport;
use media_usage_worker::tick::{self, budget::Budget, lanes::BackgroundPolicy, Continuation, TickTime};
use media_usage_worker::usage::extract::Rules;
use serde_json::Value as Json;

/// The bootstrap secret (`EMDASH_ADMIN_TOKEN`) of the native tests: at least 32 characters, as
/// the edge requires.
pub const ADMIN: &str = "native-admin-token-0123456789abcdef";

pub fn db() -> SqliteExecutor {
    SqliteExecutor::open_in_memory().expect("in-memory database")
}

/// The media origin of the native tests (`MEDIA_PUBLIC_URL`).
pub const MEDIA_PUBLIC_URL: &str = "https://cdn.example/media/";

/// The reference rules of the native tests' deployment (with their `MEDIA_PUBLIC_URL`).
pub fn rules() -> Rules {
    Rules::current(Some(MEDIA_PUBLIC_URL))
}

/// The environment of the native tests' deployment: the admin token, a site and a media origin;
/// everything else at its default.
pub fn settings() -> Settings {
    settings_with(&[])
}

/// [`settings`] with `vars` set too (each accepted without a warning).
pub fn settings_with(vars: &[(&str, &str)]) -> Settings {
    let deployment =
        [("EMDASH_ADMIN_TOKEN", ADMIN), ("SITE_URL", "https://site.example"), ("MEDIA_PUBLIC_URL", MEDIA_PUBLIC_URL)];
    let (settings, warnings) =
        Settings::parse(|name| vars.iter().chain(&deployment).find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()));
    assert_eq!(warnings, vec![]);
    settings
}

/// The deployment settings the handlers take: [`settings`], and a clock that never advances
/// (budgets count statements only).
pub fn config() -> Config {
    settings().config(|| 0.0)
}

/// The default tick budget.
pub fn budget() -> Budget {
    settings().budget()
}

/// The default background policy, under the deployment's reference rules ([`rules`]).
pub fn policy() -> BackgroundPolicy {
    settings().background()
}

/// One tick set up in one call: under `budget` and `policy`, with no object store, no
/// continuation queue and the database's day and time unless said ([`TickRun::storage`],
/// [`TickRun::continuation`], [`TickRun::when`]), recorded like a cron tick.
pub struct TickRun<'a> {
    budget: Budget,
    policy: &'a BackgroundPolicy,
    storage: Option<&'a dyn Storage>,
    continuation: Continuation<'a>,
    when: TickTime,
}

impl<'a> TickRun<'a> {
    pub fn new(budget: Budget, policy: &'a BackgroundPolicy) -> TickRun<'a> {
        TickRun { budget, policy, storage: None, continuation: Continuation::Off, when: TickTime::database() }
    }

    /// With the object store `storage` (its sweep is one more lane).
    pub fn storage(self, storage: Option<&'a dyn Storage>) -> TickRun<'a> {
        TickRun { storage, ..self }
    }

    /// With a continuation queue, or not.
    pub fn continuation(self, continuation: Continuation<'a>) -> TickRun<'a> {
        TickRun { continuation, ..self }
    }

    /// At `when` (its day for the daily budget, its time for the schedule lane).
    pub fn when(self, when: TickTime) -> TickRun<'a> {
        TickRun { when, ..self }
    }

    /// Runs it over `exec` on a clock that stands still: what it does depends on statements and
    /// rows, not on how busy the machine is.
    pub fn run<E: Executor>(self, exec: &E) -> TickReport {
        self.run_with(exec, &FnClock(|| 0.0))
    }

    /// Runs it over `exec` on `clock`.
    pub fn run_with<E: Executor, C: Clock>(self, exec: &E, clock: &C) -> TickReport {
        block_on(self.run_async(exec, clock))
    }

    /// [`TickRun::run_with`], awaited by the caller.
    pub async fn run_async<E: Executor, C: Clock>(self, exec: &E, clock: &C) -> TickReport {
        let metered = Metered::new(exec, clock);
        tick::run_on(&metered, clock, self.budget, self.policy, self.continuation, self.storage, &self.when).await
    }
}

/// One tick over `exec` under `budget` and `policy`, on a clock that stands still, with no
/// object store and no continuation queue ([`TickRun`] for the rest).
pub fn tick_once<E: Executor>(exec: &E, budget: Budget, policy: &BackgroundPolicy) -> TickReport {
    TickRun::new(budget, policy).run(exec)
}

/// Runs ticks (no continuation queue, no object store) until one finds nothing due; at most
/// `max_ticks`. Returns the number of ticks run; a tick's error is the error.
pub async fn drain<E: Executor, C: Clock>(
    exec: &E,
    clock: &C,
    budget: Budget,
    policy: &BackgroundPolicy,
    max_ticks: u32,
) -> Result<u32, Error> {
    for n in 0..max_ticks {
        let report = TickRun::new(budget, policy).run_async(exec, clock).await;
        if let Some(e) = report.error {
            return Err(Error::Backend(e));
        }
        if report.outcome == TickOutcome::Idle {
            return Ok(n + 1);
        }
    }
    Ok(max_ticks)
}

/// Time passes for the queues: dead holders' leases (work, deletions of collections and fields,
/// repair runs, relinks) expire and back-offs end.
pub fn time_passes(db: &SqliteExecutor) {
    for table in [
        "_emdash_media_usage_work",
        "_emdash_media_usage_collection_deletions",
        "_emdash_media_usage_reconciliations",
        "_emdash_media_usage_field_deletions",
        "_emdash_media_relinks",
    ] {
        exec_sql(db, &format!("UPDATE {table} SET next_attempt_at = '{LONG_AGO}'"));
        expire_leases(db, table, "state = 'leased'");
    }
    purge_rest_over(db);
}

/// Ends the media purge's rest between passes (as a day passing would).
pub fn purge_rest_over(db: &SqliteExecutor) {
    exec_sql(db, &format!("UPDATE _emdash_media_purge SET next_pass_at = '{LONG_AGO}' WHERE next_pass_at IS NOT NULL"));
    exec_sql(
        db,
        &format!(
            "UPDATE _emdash_media_purge SET version_next_pass_at = '{LONG_AGO}' WHERE version_next_pass_at IS NOT NULL"
        ),
    );
}

/// What the query helpers below read and write: a database, or an API's database.
pub trait Db {
    fn sqlite(&self) -> &SqliteExecutor;
}

impl Db for SqliteExecutor {
    fn sqlite(&self) -> &SqliteExecutor {
        self
    }
}

impl Db for Api {
    fn sqlite(&self) -> &SqliteExecutor {
        &self.db
    }
}

impl<T: Db + ?Sized> Db for &T {
    fn sqlite(&self) -> &SqliteExecutor {
        (**self).sqlite()
    }
}

/// The one integer that `sql` selects (a count, a sum, a flag).
pub fn scalar(db: &impl Db, sql: &str) -> i64 {
    db.sqlite().connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

/// The one text that `sql` selects: `None` when it is NULL (a row must exist).
pub fn text(db: &impl Db, sql: &str) -> Option<String> {
    db.sqlite().connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

/// The text in the first row `sql` selects: `None` when it is NULL or there is no row.
pub fn text_if_any(db: &impl Db, sql: &str) -> Option<String> {
    match db.sqlite().connection().query_row(sql, [], |r| r.get(0)) {
        Err(rusqlite::Error::QueryReturnedNoRows) => None,
        row => row.unwrap(),
    }
}

/// Runs `sql` (one or more statements, no parameters) behind the API, as an operator or an
/// import would.
pub fn exec_sql(db: &impl Db, sql: &str) {
    db.sqlite().connection().execute_batch(sql).unwrap();
}

/// A time long past: a forged lease that has run out, a back-off that has ended.
pub const LONG_AGO: &str = "2000-01-01T00:00:00.000Z";

/// A time far ahead: a forged lease that is live.
pub const FAR_AHEAD: &str = "2999-01-01T00:00:00.000Z";

/// Forges a lease, as a holder's claim leaves it: the rows of queue `table` that `rows` selects
/// (an SQL condition; `TRUE` for every row) are leased under `token` until `expires`
/// ([`LONG_AGO`] for a holder that died, [`FAR_AHEAD`] for a live one).
pub fn forge_lease(db: &impl Db, table: &str, rows: &str, token: &str, expires: &str) {
    exec_sql(
        db,
        &format!(
            "UPDATE {table} SET state = 'leased', lease_token = '{token}', lease_expires_at = '{expires}' WHERE {rows}"
        ),
    );
}

/// The leases on the rows of queue `table` that `rows` selects run out, as when their holders
/// die and time passes: state and token stay.
pub fn expire_leases(db: &impl Db, table: &str, rows: &str) {
    exec_sql(db, &format!("UPDATE {table} SET lease_expires_at = '{LONG_AGO}' WHERE {rows}"));
}

/// Someone else takes the leases on the rows of queue `table` that `rows` selects: their token
/// becomes `thief`'s; state and expiry stay.
pub fn steal_leases(db: &impl Db, table: &str, rows: &str, thief: &str) {
    exec_sql(db, &format!("UPDATE {table} SET lease_token = '{thief}' WHERE {rows}"));
}

/// The id of collection `slug`.
pub fn collection_id(db: &impl Db, slug: &str) -> String {
    db.sqlite()
        .connection()
        .query_row("SELECT id FROM _emdash_collections WHERE slug = ?1", [slug], |r| r.get(0))
        .unwrap()
}

/// Calls the API on any executor (a hooked, faulty or metered one) as the admin, with the
/// native tests' configuration.
pub fn call_on_body<E: Executor>(exec: &E, method: &str, path: &str, body: Option<&Json>) -> Response {
    let body = body.map(|b| b.to_string().into_bytes());
    let req = request(method, path, Some(ADMIN), body.as_deref());
    now(api::handle(exec, &config(), &req))
}

/// Calls the API handlers directly, as the edge would.
pub struct Api {
    pub db: SqliteExecutor,
    pub config: Config,
    /// The media file store, when the test binds one.
    pub storage: Option<MemoryStorage>,
}

impl Api {
    pub fn new() -> Api {
        Api { db: db(), config: config(), storage: None }
    }

    /// An API with an (in-memory) media bucket whose clock starts at `now_ms`.
    pub fn with_storage(now_ms: f64) -> Api {
        Api { storage: Some(MemoryStorage::new(now_ms)), ..Api::new() }
    }

    pub fn call(&self, method: &str, path_and_query: &str, token: Option<&str>, body: Option<&[u8]>) -> Response {
        self.request(method, path_and_query, token, body, |_| {})
    }

    /// Calls the API with the request adjusted by `adjust` (headers, flags).
    pub fn request(
        &self,
        method: &str,
        path_and_query: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
        adjust: impl FnOnce(&mut Request),
    ) -> Response {
        let mut req = request(method, path_and_query, token, body);
        adjust(&mut req);
        self.request_on(&self.db, &req)
    }

    /// Sends `req` through `exec` (a faulty or metered view of [`Api::db`]) with this API's
    /// configuration and store.
    pub fn request_on<E: Executor>(&self, exec: &E, req: &Request) -> Response {
        let storage = self.storage.as_ref().map(|s| s as &dyn Storage);
        block_on(api::handle_with(exec, &self.config, storage, req))
    }

    /// A copy of this API's database and store, with the same configuration: a fixture built
    /// once and copied for each run of a matrix.
    pub fn snapshot(&self) -> Api {
        Api {
            db: self.db.snapshot().expect("copy of the database"),
            config: self.config.clone(),
            storage: self.storage.as_ref().map(MemoryStorage::snapshot),
        }
    }

    /// `POST /media` with a multipart body of `content_type` arriving as `body`, as the edge
    /// streams it.
    pub fn upload_stream(&self, content_type: &str, body: api::BodyStream<'_>) -> Response {
        let req = Request {
            method: "POST".into(),
            path: format!("{}/media", api::BASE_PATH),
            authorization: Some(format!("Bearer {ADMIN}")),
            content_type: Some(content_type.to_owned()),
            ..Default::default()
        };
        let storage = self.storage.as_ref().map(|s| s as &dyn Storage);
        block_on(api::handle_streaming(&self.db, &self.config, storage, &req, body))
    }

    pub fn get(&self, path: &str) -> Response {
        self.call("GET", path, Some(ADMIN), None)
    }

    pub fn send(&self, method: &str, path: &str, body: &Json) -> Response {
        self.call(method, path, Some(ADMIN), Some(body.to_string().as_bytes()))
    }

    pub fn post(&self, path: &str, body: &Json) -> Response {
        self.send("POST", path, body)
    }

    pub fn put(&self, path: &str, body: &Json) -> Response {
        self.send("PUT", path, body)
    }

    pub fn delete(&self, path: &str) -> Response {
        self.call("DELETE", path, Some(ADMIN), None)
    }

    /// Registers an image stored under `key` (by JSON, no upload); returns its id.
    pub fn register_media(&self, key: &str) -> String {
        let r = self.post("/media", &serde_json::json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
        data(&r)["item"]["id"].as_str().unwrap().to_owned()
    }

    /// Mints a token with a role and scopes; returns the secret.
    pub fn token(&self, role: &str, scopes: &[&str]) -> String {
        let r = self.post("/admin/tokens", &serde_json::json!({"name": role, "role": role, "scopes": scopes}));
        assert_eq!(r.status, 201, "{}", r.body);
        r.body_json()["data"]["token"].as_str().unwrap().to_owned()
    }

    /// One tick under this API's budget and policy, with its store ([`TickRun`]).
    pub fn tick(&self) -> TickReport {
        let storage = self.storage.as_ref().map(|s| s as &dyn Storage);
        TickRun::new(self.config.tick_budget, &self.config.background).storage(storage).run(&self.db)
    }

    /// Runs ticks under this API's budget and policy until one finds nothing due (at most 200).
    pub fn drain(&self) {
        let clock = media_usage_worker::clock::MonotonicClock::default();
        block_on(drain(&self.db, &clock, self.config.tick_budget, &self.config.background, 200)).unwrap();
    }

    /// Records an entry `big` of collection `posts` too large to index that uses `media_ids`:
    /// its failed work row lists them, as a projection refused for its size leaves it (and
    /// waits for an operator, so ticks leave it).
    pub fn entry_too_large_using<S: serde::Serialize>(&self, media_ids: &[S]) {
        self.db
            .connection()
            .execute(
                "INSERT INTO _emdash_media_usage_work
                   (collection_id, content_id, collection_slug, state, last_error_code, unindexed_media)
                 SELECT id, 'big', 'posts', 'failed', 'MEDIA_USAGE_RESOURCE_LIMIT', ?1 FROM _emdash_collections
                 WHERE slug = 'posts'",
                [serde_json::json!(media_ids).to_string()],
            )
            .unwrap();
    }
}

/// An entry "Used in" lists: its content id and its `(fieldPath, referenceType)` pairs.
pub type Listed = (String, Vec<(String, String)>);

/// The entries "Used in" lists for media `m` (its first 100), and the coverage it reports.
pub fn used_in(api: &Api, m: &str) -> (Vec<Listed>, String) {
    let d = data(&api.get(&format!("/media/{m}/usage?limit=100")));
    let items = d["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let occ = i["occurrences"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| (o["fieldPath"].as_str().unwrap().to_owned(), o["referenceType"].as_str().unwrap().to_owned()))
                .collect();
            (i["contentId"].as_str().unwrap().to_owned(), occ)
        })
        .collect();
    (items, d["coverage"]["status"].as_str().unwrap().to_owned())
}

/// A request as the edge would hand it over: the path under the API base path (sitemaps at the
/// site root), its query decoded into pairs, and the bearer `token`, if any.
pub fn request(method: &str, path_and_query: &str, token: Option<&str>, body: Option<&[u8]>) -> Request {
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    let query = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    Request {
        method: method.to_owned(),
        path: if path.starts_with("/sitemap") { path.to_owned() } else { format!("{}{path}", api::BASE_PATH) },
        query,
        authorization: token.map(|t| format!("Bearer {t}")),
        body: body.map(<[u8]>::to_vec).unwrap_or_default(),
        ..Default::default()
    }
}

/// The query plan of `sql` with every parameter NULL: its detail lines.
pub fn query_plan(db: &SqliteExecutor, sql: &str) -> Vec<String> {
    let conn = db.connection();
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let params: Vec<rusqlite::types::Value> =
        (0..stmt.parameter_count()).map(|_| rusqlite::types::Value::Null).collect();
    stmt.query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3)).unwrap().map(Result::unwrap).collect()
}

/// Runs a future that never waits (everything on the native executor completes at once) to
/// its end. Unlike `block_on`, it may be used inside another future, e.g. by a hook that
/// interleaves a second writer between the statements of a first.
///
/// # Panics
/// When the future is not ready after one poll.
pub fn now<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("a native future waited"),
    }
}

/// The `error.code` of an error response.
pub fn code(r: &Response) -> String {
    r.body_json()["error"]["code"].as_str().unwrap_or_default().to_owned()
}

/// The `data` of a success response.
pub fn data(r: &Response) -> Json {
    assert!(r.status < 300, "expected success, got {}: {}", r.status, r.body);
    r.body_json()["data"].clone()
}

/// Every file under `dir` (recursively) whose extension is `ext`.
pub fn files_with_extension(dir: &std::path::Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_with_extension(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
    out
}

/// The shape of a large collection (`tests/fixtures/large_collection.sql`).
#[derive(Clone, Copy, Debug)]
pub struct LargeCollection {
    /// Entries, each queued for work and with a live source.
    pub entries: usize,
    /// Occurrences of media `m` per entry (1 to 3).
    pub occurrences: usize,
    /// Entries (from the first) with a draft revision.
    pub revisions: usize,
    /// The characters of each revision's body.
    pub revision_bytes: usize,
}

impl LargeCollection {
    /// `entries` entries of `occurrences` occurrences each, no revisions.
    pub fn new(entries: usize, occurrences: usize) -> LargeCollection {
        LargeCollection { entries, occurrences, revisions: 0, revision_bytes: 0 }
    }
}

/// Creates collection `slug` (one image field `hero`) through the API and seeds it, behind the
/// API as an import would, with the large-collection fixture of shape `shape`; returns its id.
pub fn large_collection(api: &Api, slug: &str, shape: LargeCollection) -> String {
    let r = api.post(
        "/schema/collections",
        &serde_json::json!({"slug": slug, "label": slug, "fields": [{"slug": "hero", "type": "image"}]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = collection_id(api, slug);
    let count = |n: usize| rusqlite::types::Value::Integer(i64::try_from(n).unwrap());
    let binds = [
        rusqlite::types::Value::Text(id.clone()),
        rusqlite::types::Value::Text(slug.to_owned()),
        count(1),
        count(shape.entries),
        count(shape.occurrences),
        count(shape.revisions),
        count(shape.revision_bytes),
    ];
    let conn = api.db.connection();
    for sql in fixture_statements(include_str!("../fixtures/large_collection.sql"), &format!("\"ec_{slug}\"")) {
        let mut stmt = conn.prepare(&sql).unwrap();
        let n = stmt.parameter_count();
        stmt.execute(rusqlite::params_from_iter(&binds[..n])).unwrap();
    }
    id
}

/// The statements of an SQL fixture: its comment lines dropped, `{table}` named, split where a
/// line ends in `;`.
pub fn fixture_statements(sql: &str, table: &str) -> Vec<String> {
    let body: Vec<&str> = sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect();
    body.join("\n")
        .replace("{table}", table)
        .split(";\n")
        .map(|s| s.trim().trim_end_matches(';').trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}
