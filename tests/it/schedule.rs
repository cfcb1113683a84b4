//! Scheduled publishing: the schedule routes (EmDash's rules and shapes, validation, ownership,
//! each precondition of their batches), the tick's `schedule` lane under a tick time the test
//! sets (an entry is published by the first tick at or after its time, not before, and what counts
//! as a use and the sitemap change then), what an idle tick costs beside many later schedules,
//! and a crash or an unseen commit at every statement of each write and of the lane's step.

use std::cell::Cell;

use futures::executor::block_on;
use media_usage_worker::clock::FnClock;
use media_usage_worker::exec::fault::{Fault, Faulty};
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use media_usage_worker::lane::{Lane, RowCount};
use media_usage_worker::lifecycle::schedule::ScheduleLane;
use media_usage_worker::model::state::TickOutcome;
use media_usage_worker::repo::content::Publication;
use media_usage_worker::repo::schedule::{self as repo, Due};
use media_usage_worker::repo::schema;
use media_usage_worker::tick::{self, budget::Budget, report::TickReport, TickTime};
use serde_json::{json, Value as Json};

use crate::support::{code, data, exec_sql, request, scalar, Api, TickRun, ADMIN};

/// The time the tests schedule for: far ahead of the database clock.
const LATER: &str = "2099-01-01T00:00:00.000Z";
/// A millisecond before it.
const JUST_BEFORE: &str = "2098-12-31T23:59:59.999Z";

fn setup() -> Api {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [
            {"slug": "title", "type": "string"},
            {"slug": "hero", "type": "image"}
        ]}),
    ));
    api
}

fn media(api: &Api, key: &str) -> String {
    let r = api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn entry(api: &Api, slug: &str, status: &str, d: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": status, "data": d}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn schedule_as(api: &Api, token: &str, id: &str, at: &str) -> media_usage_worker::api::Response {
    let body = json!({"scheduledAt": at}).to_string();
    api.call("POST", &format!("/content/posts/{id}/schedule"), Some(token), Some(body.as_bytes()))
}

fn schedule(api: &Api, id: &str, at: &str) -> Json {
    data(&schedule_as(api, ADMIN, id, at))["item"].clone()
}

fn unschedule(api: &Api, id: &str) -> Json {
    data(&api.delete(&format!("/content/posts/{id}/schedule")))["item"].clone()
}

fn item(api: &Api, id: &str) -> Json {
    data(&api.get(&format!("/content/posts/{id}")))["item"].clone()
}

/// The schedule index: `(content id, time)` rows in due order.
fn index(api: &Api) -> Vec<(String, String)> {
    let conn = api.db.connection();
    let mut stmt = conn
        .prepare("SELECT content_id, scheduled_at FROM _emdash_content_schedule ORDER BY scheduled_at, content_id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

/// One recorded tick through `exec` whose time is `now` (`None`: the database clock's), on a
/// clock that stands still.
fn tick_on<E: Executor>(exec: &E, now: Option<&str>) -> TickReport {
    tick_with(exec, now, crate::support::budget())
}

/// [`tick_on`] under `budget`, which the tick keeps.
fn tick_with<E: Executor>(exec: &E, now: Option<&str>, budget: Budget) -> TickReport {
    let when = TickTime { now: now.map(str::to_owned) };
    let report = TickRun::new(budget, &crate::support::policy()).when(when).run(exec);
    assert!(report.statements <= budget.max_statements, "{report:?}");
    report
}

fn tick_at(api: &Api, now: &str) -> TickReport {
    tick_on(&api.db, Some(now))
}

/// Ticks at `now` until one is idle, time passing for the queues before each (leases of holders
/// that died expire): what they published, dropped and refused, and their errors.
fn ticks_at(api: &Api, now: &str) -> ((u64, u64, u64), Vec<String>) {
    let mut counts = (0, 0, 0);
    let mut errors = Vec::new();
    for _ in 0..20 {
        crate::support::time_passes(&api.db);
        let r = tick_at(api, now);
        counts.0 += r.count("scheduledPublished");
        counts.1 += r.count("schedulesDropped");
        counts.2 += r.count("scheduleFailures");
        errors.extend(r.error.clone());
        if r.outcome == TickOutcome::Idle {
            return (counts, errors);
        }
    }
    panic!("the ticks never went idle");
}

/// Entries using media `m` by what counts as a use (`GET /media/{id}?includeUsage=1`).
fn uses(api: &Api, m: &str) -> i64 {
    data(&api.get(&format!("/media/{m}?includeUsage=1")))["item"]["usage"]["count"].as_i64().unwrap()
}

fn sitemap(api: &Api) -> String {
    let r = api.call("GET", "/sitemap-posts.xml", None, None);
    if r.status == 404 {
        return String::new();
    }
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

fn issue_path(r: &media_usage_worker::api::Response) -> String {
    r.body_json()["error"]["details"]["issues"][0]["path"].as_str().unwrap_or_default().to_owned()
}

// ---------------------------------------------------------------------------------------------
// The routes.

#[test]
fn a_schedule_makes_a_draft_scheduled_for_a_time_kept_in_utc_and_its_cancel_makes_it_a_draft_again() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({"title": "A"}));
    let scheduled = schedule(&api, &id, "2099-01-01T02:00:00+02:00");
    assert_eq!(scheduled["status"], "scheduled");
    assert_eq!(scheduled["scheduledAt"], LATER, "the instant, in UTC as the database clock writes times");
    assert_eq!((scheduled["version"].as_i64(), &scheduled["type"]), (Some(2), &json!("posts")));
    assert_eq!(scheduled["publishedAt"], Json::Null);
    let r = schedule_as(&api, ADMIN, &id, "2099-01-01T02:00:00+02:00");
    assert!(data(&r)["_rev"].is_string(), "EmDash's response: the item and its _rev");
    assert_eq!(item(&api, &id)["scheduledAt"], LATER);
    assert_eq!(index(&api), [(id.clone(), LATER.to_owned())]);
    // Scheduled again: the time is replaced, in the entry and in the index.
    let again = schedule(&api, &id, "2099-06-01");
    assert_eq!(
        (again["status"].as_str(), again["scheduledAt"].as_str()),
        (Some("scheduled"), Some("2099-06-01T00:00:00.000Z"))
    );
    assert_eq!(index(&api), [(id.clone(), "2099-06-01T00:00:00.000Z".to_owned())]);
    // Cancelled: a draft again, nothing in the index.
    let cancelled = unschedule(&api, &id);
    assert_eq!((cancelled["status"].as_str(), &cancelled["scheduledAt"]), (Some("draft"), &Json::Null));
    assert!(index(&api).is_empty());
    // Cancelled again: answered as it is, nothing written.
    let version = cancelled["version"].clone();
    assert_eq!(unschedule(&api, &id)["version"], version);
    // The list filters by status as EmDash's does.
    schedule(&api, &id, LATER);
    let listed = data(&api.get("/content/posts?status=scheduled"));
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
}

#[test]
fn a_published_entry_stays_published_while_its_schedule_waits_and_its_draft_stays_current() {
    let api = setup();
    let id = entry(&api, "p", "published", json!({"title": "Live"}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"title": "Draft"}})));
    let scheduled = schedule(&api, &id, LATER);
    assert_eq!((scheduled["status"].as_str(), scheduled["scheduledAt"].as_str()), (Some("published"), Some(LATER)));
    assert!(scheduled["draftRevisionId"].is_string(), "the draft waits");
    // The schedule wrote no data: the draft is still current, so a cancel keeps it, and a publish
    // by hand takes it (and ends the schedule).
    let cancelled = unschedule(&api, &id);
    assert_eq!(
        (cancelled["status"].as_str(), &cancelled["draftRevisionId"]),
        (Some("published"), &scheduled["draftRevisionId"])
    );
    schedule(&api, &id, LATER);
    let published = data(&api.post(&format!("/content/posts/{id}/publish"), &json!({})))["item"].clone();
    assert_eq!((published["data"]["title"].as_str(), &published["scheduledAt"]), (Some("Draft"), &Json::Null));
    // Its index row no longer matches the entry: dropped when it comes due, nothing published.
    let report = tick_at(&api, LATER);
    assert_eq!((report.count("schedulesDropped"), report.count("scheduledPublished")), (1, 0), "{report:?}");
    assert_eq!(item(&api, &id)["version"], published["version"]);
    assert!(index(&api).is_empty());
}

#[test]
fn bad_schedules_are_refused_with_the_reason_and_write_nothing() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({"title": "A"}));
    let path = format!("/content/posts/{id}/schedule");
    let cases: &[(&str, &str, &str)] = &[
        ("{}", "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": null}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": 4102444800000}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": ""}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": "tomorrow"}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": "2099-02-29T09:00:00Z"}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": "2099-01-01T09:00:00"}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": "2099-01-01T24:00:00Z"}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": "9999-12-31T23:00:00-02:00"}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": "2099-01-01T00:00:00Z", "status": "published"}"#, "VALIDATION_ERROR", "status"),
        (r#"{"at": "2099-01-01T00:00:00Z"}"#, "VALIDATION_ERROR", "at"),
        ("[]", "VALIDATION_ERROR", ""),
        ("not json", "INVALID_JSON", ""),
        ("", "INVALID_JSON", ""),
        // EmDash's rule: the time must lie in the future (by the database clock).
        (r#"{"scheduledAt": "2000-01-01T00:00:00Z"}"#, "VALIDATION_ERROR", "scheduledAt"),
        (r#"{"scheduledAt": "2000-01-01"}"#, "VALIDATION_ERROR", "scheduledAt"),
    ];
    for (body, want, at) in cases {
        let r = api.call("POST", &path, Some(ADMIN), Some(body.as_bytes()));
        assert_eq!((r.status, code(&r)), (400, (*want).to_owned()), "{body}: {}", r.body);
        assert_eq!(issue_path(&r), *at, "{body}: {}", r.body);
    }
    let r = api.post(&path, &json!({"scheduledAt": "2000-01-01T00:00:00Z"}));
    assert_eq!(r.body_json()["error"]["details"]["issues"][0]["message"], "Must lie in the future");
    let a = item(&api, &id);
    assert_eq!((a["version"].as_i64(), a["status"].as_str(), &a["scheduledAt"]), (Some(1), Some("draft"), &Json::Null));
    assert!(index(&api).is_empty());
}

#[test]
fn missing_and_trashed_entries_are_not_found_and_only_owners_below_editor_may_schedule() {
    let api = setup();
    let at = json!({"scheduledAt": LATER});
    for method in ["POST", "DELETE"] {
        let call = |path: &str, token: &str| {
            let body = at.to_string();
            api.call(method, path, Some(token), (method == "POST").then_some(body.as_bytes()))
        };
        let r = call("/content/posts/nope/schedule", ADMIN);
        assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()), "{method}");
        let r = call("/content/nothing/x/schedule", ADMIN);
        assert_eq!((r.status, code(&r)), (404, "COLLECTION_NOT_FOUND".into()), "{method}");
        let r = call("/content/Bad!/x/schedule", ADMIN);
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{method}");
    }
    // A trashed entry is not found (EmDash's schedule routes find no trashed entry), scheduled or not.
    let trashed = entry(&api, "t", "draft", json!({}));
    schedule(&api, &trashed, LATER);
    data(&api.delete(&format!("/content/posts/{trashed}")));
    let r = api.post(&format!("/content/posts/{trashed}/schedule"), &at);
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()));
    let r = api.delete(&format!("/content/posts/{trashed}/schedule"));
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()));
    // Below editor, only one's own entries.
    let author = api.token("author", &["content:read", "content:write"]);
    let other = api.token("author", &["content:read", "content:write"]);
    let editor = api.token("editor", &["content:read", "content:write"]);
    let body = json!({"slug": "mine", "data": {}}).to_string();
    let mine = data(&api.call("POST", "/content/posts", Some(&author), Some(body.as_bytes())))["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = schedule_as(&api, &other, &mine, LATER);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()));
    assert_eq!(item(&api, &mine)["version"], 1, "nothing written");
    assert_eq!(schedule_as(&api, &author, &mine, LATER).status, 200);
    let r = api.call("DELETE", &format!("/content/posts/{mine}/schedule"), Some(&other), None);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()));
    assert_eq!(item(&api, &mine)["scheduledAt"], LATER, "nothing written");
    assert_eq!(api.call("DELETE", &format!("/content/posts/{mine}/schedule"), Some(&editor), None).status, 200);
    assert_eq!(schedule_as(&api, &editor, &mine, LATER).status, 200, "an editor schedules anyone's entry");
    // An entry without an author is nobody's own.
    let admins = entry(&api, "admins", "draft", json!({}));
    exec_sql(&api, &format!("UPDATE ec_posts SET author_id = NULL WHERE id = '{admins}'"));
    assert_eq!(schedule_as(&api, &author, &admins, LATER).status, 403);
    // The role floor and the scope.
    let contributor = api.token("contributor", &["content:read", "content:write"]);
    let r = schedule_as(&api, &contributor, &mine, LATER);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()));
    let reader = api.token("editor", &["content:read"]);
    let r = schedule_as(&api, &reader, &mine, LATER);
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".into()));
    let r = api.call("POST", &format!("/content/posts/{mine}/schedule"), None, Some(b"{}"));
    assert_eq!((r.status, code(&r)), (401, "UNAUTHORIZED".into()));
    let r = api.call("PUT", &format!("/content/posts/{mine}/schedule"), Some(ADMIN), Some(b"{}"));
    assert_eq!(r.status, 405);
}

/// Runs `meanwhile` (SQL, as another writer) right before every statement or batch whose SQL
/// contains `needle`; counts how often it did.
struct Meanwhile<'a> {
    db: &'a SqliteExecutor,
    needle: &'static str,
    meanwhile: String,
    /// At most this many times.
    times: u32,
    fired: Cell<u32>,
}

impl<'a> Meanwhile<'a> {
    fn new(db: &'a SqliteExecutor, needle: &'static str, meanwhile: &str, times: u32) -> Self {
        Meanwhile { db, needle, meanwhile: meanwhile.to_owned(), times, fired: Cell::new(0) }
    }

    fn fire(&self, stmts: &[Statement]) {
        if self.fired.get() < self.times && stmts.iter().any(|s| s.sql().contains(self.needle)) {
            self.fired.set(self.fired.get() + 1);
            self.db.connection().execute_batch(&self.meanwhile).unwrap();
        }
    }
}

impl Executor for Meanwhile<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.fire(std::slice::from_ref(&stmt));
        self.db.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.fire(&stmts);
        self.db.batch(stmts).await
    }
}

/// Sends `method path` with `body` as the admin through `exec`.
fn send_on<E: Executor>(
    api: &Api,
    exec: &E,
    method: &str,
    path: &str,
    body: Option<&Json>,
) -> media_usage_worker::api::Response {
    let body = body.map(|b| b.to_string().into_bytes());
    api.request_on(exec, &request(method, path, Some(ADMIN), body.as_deref()))
}

#[test]
fn a_schedule_or_a_cancel_checks_the_entry_again_in_its_batch() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({"title": "A"}));
    let path = format!("/content/posts/{id}/schedule");
    let at = json!({"scheduledAt": LATER});
    // Written meanwhile (its version moved): 409, only the other write happened.
    let race = Meanwhile::new(
        &api.db,
        "_emdash_batch_guard",
        &format!("UPDATE ec_posts SET title = 'B', version = version + 1 WHERE id = '{id}'"),
        1,
    );
    let r = send_on(&api, &race, "POST", &path, Some(&at));
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    let a = item(&api, &id);
    assert_eq!(
        (a["version"].as_i64(), &a["scheduledAt"], a["data"]["title"].as_str()),
        (Some(2), &Json::Null, Some("B"))
    );
    assert!(index(&api).is_empty());
    // Trashed meanwhile: not found, nothing scheduled.
    let race = Meanwhile::new(
        &api.db,
        "_emdash_batch_guard",
        &format!("UPDATE ec_posts SET deleted_at = '2030-01-01T00:00:00.000Z' WHERE id = '{id}'"),
        1,
    );
    let r = send_on(&api, &race, "POST", &path, Some(&at));
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()), "{}", r.body);
    assert_eq!(
        scalar(&api, &format!("SELECT count(*) FROM ec_posts WHERE id = '{id}' AND scheduled_at IS NOT NULL")),
        0
    );
    assert!(index(&api).is_empty());
    data(&api.post(&format!("/content/posts/{id}/restore"), &json!({})));
    // Cancelled by another request meanwhile: answered as it is, written once.
    schedule(&api, &id, LATER);
    let version = item(&api, &id)["version"].as_i64().unwrap();
    let race = Meanwhile::new(
        &api.db,
        "_emdash_batch_guard",
        &format!("UPDATE ec_posts SET scheduled_at = NULL, status = 'draft', version = version + 1 WHERE id = '{id}'"),
        1,
    );
    let r = send_on(&api, &race, "DELETE", &path, None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (data(&r)["item"]["version"].as_i64(), &data(&r)["item"]["scheduledAt"]),
        (Some(version + 1), &Json::Null)
    );
    // Trashed meanwhile: not found, its schedule kept.
    let race = Meanwhile::new(
        &api.db,
        "_emdash_batch_guard",
        &format!("UPDATE ec_posts SET deleted_at = '2030-01-01T00:00:00.000Z' WHERE id = '{id}'"),
        1,
    );
    schedule(&api, &id, LATER);
    let r = send_on(&api, &race, "DELETE", &path, None);
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()), "{}", r.body);
    assert_eq!(
        scalar(&api, &format!("SELECT count(*) FROM ec_posts WHERE id = '{id}' AND scheduled_at IS NOT NULL")),
        1
    );
    data(&api.post(&format!("/content/posts/{id}/restore"), &json!({})));
    // Edited meanwhile but still scheduled: 409, still scheduled.
    schedule(&api, &id, LATER);
    let race = Meanwhile::new(
        &api.db,
        "_emdash_batch_guard",
        &format!("UPDATE ec_posts SET title = 'C', version = version + 1 WHERE id = '{id}'"),
        1,
    );
    let r = send_on(&api, &race, "DELETE", &path, None);
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(item(&api, &id)["scheduledAt"], LATER);
    assert_eq!(index(&api), [(id.clone(), LATER.to_owned())]);
}

#[test]
fn the_batches_of_a_schedule_and_its_cancel_hold_every_precondition() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({}));
    let c = block_on(schema::find(&api.db, &media_usage_worker::model::ident::Ident::parse("posts").unwrap()))
        .unwrap()
        .unwrap();
    let author = scalar(&api, &format!("SELECT count(*) FROM ec_posts WHERE id = '{id}' AND author_id = 'bootstrap'"));
    assert_eq!(author, 1);
    // Another principal's entry (below editor): nothing.
    assert_eq!(block_on(repo::schedule(&api.db, &c, &id, 1, Some("someone"), LATER)).unwrap(), None);
    // A stale version: nothing.
    assert_eq!(block_on(repo::schedule(&api.db, &c, &id, 7, None, LATER)).unwrap(), None);
    // A time in the past: nothing.
    assert_eq!(block_on(repo::schedule(&api.db, &c, &id, 1, None, "2000-01-01T00:00:00.000Z")).unwrap(), None);
    assert_eq!(item(&api, &id)["version"], 1);
    assert!(index(&api).is_empty());
    // Its own author: scheduled.
    assert!(block_on(repo::schedule(&api.db, &c, &id, 1, Some("bootstrap"), LATER)).unwrap().is_some());
    // A cancel of another principal's entry, at a stale version, or of an unscheduled entry: nothing.
    assert_eq!(block_on(repo::unschedule(&api.db, &c, &id, 2, Some("someone"))).unwrap(), None);
    assert_eq!(block_on(repo::unschedule(&api.db, &c, &id, 1, None)).unwrap(), None);
    assert!(block_on(repo::unschedule(&api.db, &c, &id, 2, None)).unwrap().is_some());
    assert_eq!(block_on(repo::unschedule(&api.db, &c, &id, 3, None)).unwrap(), None, "not scheduled");
    assert_eq!(item(&api, &id)["version"], 3);
    // Trashed: nothing, neither a schedule nor a cancel.
    assert!(block_on(repo::schedule(&api.db, &c, &id, 3, None, LATER)).unwrap().is_some());
    data(&api.delete(&format!("/content/posts/{id}")));
    assert_eq!(block_on(repo::schedule(&api.db, &c, &id, 5, None, "2099-02-01T00:00:00.000Z")).unwrap(), None);
    assert_eq!(block_on(repo::unschedule(&api.db, &c, &id, 5, None)).unwrap(), None);
    let trashed = rows(&api, &format!("SELECT version, scheduled_at FROM ec_posts WHERE id = '{id}'"));
    assert_eq!(trashed, [[json!(5), json!(LATER)]]);
    assert_eq!(index(&api), [(id.clone(), LATER.to_owned())]);
}

#[test]
fn a_draft_made_stale_by_a_later_write_stays_stale_when_scheduled_and_its_due_publish_is_refused() {
    let api = setup();
    let id = entry(&api, "p", "published", json!({"title": "Live"}));
    let other = entry(&api, "q", "published", json!({"title": "Other"}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"title": "Draft"}})));
    data(&api.put(&format!("/content/posts/{other}"), &json!({"draft": true, "data": {"title": "Other draft"}})));
    // A live edit after the draft: the draft is older than the live row.
    data(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"title": "Edited live"}})));
    schedule(&api, &id, LATER);
    schedule(&api, &other, LATER);
    let r = api.post(&format!("/content/posts/{id}/publish"), &json!({}));
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "the schedule did not make the stale draft current");
    // The other entry's draft was current and stays so: only the entry's own draft is rebased.
    let other_draft = item(&api, &other)["draftRevisionId"].as_str().unwrap().to_owned();
    let base = scalar(&api, &format!("SELECT base_version FROM revisions WHERE id = '{other_draft}'"));
    assert_eq!(base, item(&api, &other)["version"].as_i64().unwrap());
    // When the time comes: the stale one is refused (the tick's error; it keeps its schedule and
    // live data, and leaves the index), the other is published.
    let report = tick_at(&api, LATER);
    assert_eq!((report.count("scheduleFailures"), report.count("scheduledPublished")), (1, 1), "{report:?}");
    assert!(report.error.as_deref().is_some_and(|e| e.contains("save the draft again")), "{:?}", report.error);
    let stale = item(&api, &id);
    assert_eq!((stale["data"]["title"].as_str(), stale["scheduledAt"].as_str()), (Some("Edited live"), Some(LATER)));
    assert_eq!(item(&api, &other)["data"]["title"], "Other draft");
    assert!(index(&api).is_empty());
    let report = tick_at(&api, LATER);
    assert_eq!((report.count("scheduleFailures"), report.error), (0, None), "refused once");
}

#[test]
fn a_due_publish_the_database_refuses_drops_its_schedule_and_is_the_ticks_error() {
    let api = setup();
    let id = entry(&api, "p", "draft", json!({}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "slug": "wanted", "data": {}})));
    schedule(&api, &id, LATER);
    entry(&api, "wanted", "draft", json!({}));
    let report = tick_at(&api, LATER);
    assert_eq!((report.count("scheduleFailures"), report.count("scheduledPublished")), (1, 0), "{report:?}");
    assert!(report.error.is_some());
    let a = item(&api, &id);
    assert_eq!(
        (a["status"].as_str(), a["slug"].as_str(), a["scheduledAt"].as_str()),
        (Some("scheduled"), Some("p"), Some(LATER))
    );
    assert!(index(&api).is_empty());
    // Scheduled again (the slug freed), it is published.
    data(&api.delete(&format!(
        "/content/posts/{}?permanent=true",
        data(&api.get("/content/posts?status=draft"))["items"][0]["id"].as_str().unwrap()
    )));
    schedule(&api, &id, "2099-02-01T00:00:00Z");
    let report = tick_at(&api, "2099-02-01T00:00:00.000Z");
    assert_eq!(report.count("scheduledPublished"), 1, "{report:?}");
    assert_eq!(item(&api, &id)["slug"], "wanted");
}

// ---------------------------------------------------------------------------------------------
// The lane.

#[test]
fn a_schedule_fires_in_the_first_tick_at_or_after_its_time_and_what_counts_as_a_use_changes_then() {
    let api = setup();
    let (a, b, c) = (media(&api, "a.png"), media(&api, "b.png"), media(&api, "c.png"));
    // A published entry using A, with a draft using B; a draft using C (no draft revision).
    let live = entry(&api, "live", "published", json!({"title": "Live", "hero": a}));
    data(&api.put(&format!("/content/posts/{live}"), &json!({"draft": true, "data": {"hero": b}})));
    let draft = entry(&api, "draft", "draft", json!({"title": "Draft", "hero": c}));
    let published_at = item(&api, &live)["publishedAt"].clone();
    schedule(&api, &live, LATER);
    schedule(&api, &draft, LATER);
    let before = (uses(&api, &a), uses(&api, &b), uses(&api, &c), sitemap(&api));
    assert_eq!((before.0, before.1, before.2), (1, 1, 1), "the live entry's media, its draft's, the draft's");
    assert!(
        before.3.contains("/posts/live<") && before.3.contains("a.png") && !before.3.contains("/posts/draft<"),
        "{}",
        before.3
    );
    // A millisecond before the time: nothing fires, nothing changes.
    let report = tick_at(&api, JUST_BEFORE);
    assert_eq!(report.count("scheduledPublished"), 0, "{report:?}");
    assert_eq!((uses(&api, &a), uses(&api, &b), uses(&api, &c), sitemap(&api)), before);
    assert_eq!(item(&api, &draft)["status"], "scheduled");
    // At the time: both are published, and their projections run in the same tick.
    let report = tick_at(&api, LATER);
    assert_eq!((report.count("scheduledPublished"), report.error.as_deref()), (2, None), "{report:?}");
    assert!(report.lanes.contains(&"schedule") && report.count("jobs") >= 2, "{report:?}");
    let l = item(&api, &live);
    assert_eq!(
        (l["status"].as_str(), &l["data"]["hero"], &l["scheduledAt"]),
        (Some("published"), &json!(b), &Json::Null)
    );
    assert_eq!(
        (&l["draftRevisionId"], &l["publishedAt"]),
        (&Json::Null, &published_at),
        "its first publication stands"
    );
    let d = item(&api, &draft);
    assert_eq!(
        (d["status"].as_str(), d["publishedAt"].as_str()),
        (Some("published"), Some(LATER)),
        "published as of its scheduled time"
    );
    assert_eq!((uses(&api, &a), uses(&api, &b), uses(&api, &c)), (0, 1, 1), "A left with the old live data");
    let after = sitemap(&api);
    assert!(
        after.contains("/posts/draft<")
            && after.contains("c.png")
            && after.contains("b.png")
            && !after.contains("a.png"),
        "{after}"
    );
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
    assert!(index(&api).is_empty());
    assert_eq!(tick_at(&api, LATER).count("scheduledPublished"), 0, "once");
}

#[test]
fn the_database_clock_fires_what_a_late_tick_time_would_not() {
    // A tick whose time lags the database clock publishes what the database clock says is due.
    let api = setup();
    let id = entry(&api, "a", "draft", json!({}));
    schedule(&api, &id, LATER);
    // Time passes for the entry: its time is now in the past.
    exec_sql(
        &api,
        "UPDATE ec_posts SET scheduled_at = '2001-01-01T00:00:00.000Z';
         UPDATE _emdash_content_schedule SET scheduled_at = '2001-01-01T00:00:00.000Z';",
    );
    let report = tick_at(&api, "2000-01-01T00:00:00.000Z");
    assert_eq!(report.count("scheduledPublished"), 1, "{report:?}");
    assert_eq!(item(&api, &id)["status"], "published");
}

#[test]
fn schedules_their_entries_no_longer_have_are_dropped_when_they_come_due() {
    let api = setup();
    let by_hand = entry(&api, "by-hand", "draft", json!({}));
    let trashed = entry(&api, "trashed", "draft", json!({}));
    let deleted = entry(&api, "deleted", "draft", json!({}));
    let restored = entry(&api, "restored", "draft", json!({}));
    let later = entry(&api, "later", "draft", json!({}));
    for id in [&by_hand, &trashed, &deleted, &restored, &later] {
        schedule(&api, id, LATER);
    }
    schedule(&api, &later, "2099-03-01T00:00:00Z");
    data(&api.post(&format!("/content/posts/{by_hand}/publish"), &json!({})));
    data(&api.delete(&format!("/content/posts/{trashed}")));
    data(&api.delete(&format!("/content/posts/{deleted}?permanent=true")));
    // Trashed and restored before its time: it fires.
    data(&api.delete(&format!("/content/posts/{restored}")));
    data(&api.post(&format!("/content/posts/{restored}/restore"), &json!({})));
    // Another collection's scheduled entry, then the collection deleted.
    data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
    let page =
        data(&api.post("/content/pages", &json!({"slug": "p", "data": {}})))["item"]["id"].as_str().unwrap().to_owned();
    data(&api.post(&format!("/content/pages/{page}/schedule"), &json!({"scheduledAt": LATER})));
    data(&api.delete("/schema/collections/pages?force=true"));
    // A new collection under its slug is another collection: the old row is not its entry's.
    tick_at(&api, JUST_BEFORE);
    data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages again"})));
    assert_eq!(index(&api).len(), 6);
    assert_eq!(ticks_at(&api, LATER), ((1, 4, 0), vec![]), "published, dropped, refused; errors");
    assert_eq!(item(&api, &restored)["status"], "published");
    assert_eq!(index(&api), [(later.clone(), "2099-03-01T00:00:00.000Z".to_owned())], "the later one waits");
    // The trashed entry keeps its schedule (EmDash's trash does not end it): restored after its
    // time, its row is back and the next tick publishes it.
    assert_eq!(item(&api, &trashed)["scheduledAt"], LATER);
    data(&api.post(&format!("/content/posts/{trashed}/restore"), &json!({})));
    assert_eq!(index(&api).len(), 2);
    let report = tick_at(&api, LATER);
    assert_eq!(report.count("scheduledPublished"), 1, "{report:?}");
    assert_eq!(item(&api, &trashed)["status"], "published");
    // A restore of an entry without a schedule puts nothing in the index.
    data(&api.delete(&format!("/content/posts/{by_hand}")));
    data(&api.post(&format!("/content/posts/{by_hand}/restore"), &json!({})));
    assert_eq!(index(&api).len(), 1);
}

#[test]
fn a_publish_fires_only_for_the_schedule_it_was_found_due_for() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({}));
    schedule(&api, &id, LATER);
    let c = block_on(schema::find(&api.db, &media_usage_worker::model::ident::Ident::parse("posts").unwrap()))
        .unwrap()
        .unwrap();
    let due = |at: &str| Due {
        collection_id: c.id.clone(),
        collection_slug: "posts".into(),
        content_id: id.clone(),
        scheduled_at: at.to_owned(),
    };
    let fire = |d: &Due, version: i64, now: &str| {
        block_on(repo::publish_due(&api.db, &c, d, version, Some(now), Publication::default())).unwrap().is_some()
    };
    // Not yet due by the tick's time: nothing, and its row stays.
    assert!(!fire(&due(LATER), 2, JUST_BEFORE));
    // Another time than the entry's: nothing (its row, the entry's time, stays).
    assert!(!fire(&due("2098-01-01T00:00:00.000Z"), 2, LATER));
    // Another version than the entry's: nothing.
    assert!(!fire(&due(LATER), 1, LATER));
    assert_eq!(index(&api), [(id.clone(), LATER.to_owned())]);
    assert_eq!(item(&api, &id)["status"], "scheduled");
    // In the trash: nothing, and its row goes.
    data(&api.delete(&format!("/content/posts/{id}")));
    assert!(!fire(&due(LATER), 3, LATER));
    assert!(index(&api).is_empty());
    assert_eq!(item(&api, &id)["status"], "scheduled");
    // Restored (its row back): published, its row gone.
    data(&api.post(&format!("/content/posts/{id}/restore"), &json!({})));
    assert!(fire(&due(LATER), 4, LATER));
    assert!(index(&api).is_empty());
    // A forgotten row goes only while it holds the time it was found with.
    schedule(&api, &id, "2099-05-01T00:00:00Z");
    assert!(!block_on(repo::forget(&api.db, &due(LATER))).unwrap());
    assert!(block_on(repo::forget(&api.db, &due("2099-05-01T00:00:00.000Z"))).unwrap());
    assert!(index(&api).is_empty());
}

#[test]
fn a_due_entry_that_keeps_moving_on_is_looked_at_once_per_tick() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({}));
    schedule(&api, &id, LATER);
    // Another writer moves the entry on right before every publish.
    let busy = Meanwhile::new(
        &api.db,
        "scheduled_at = ?5",
        &format!("UPDATE ec_posts SET version = version + 1 WHERE id = '{id}'"),
        100,
    );
    let report = tick_on(&busy, Some(LATER));
    assert_eq!((busy.fired.get(), report.count("scheduledPublished")), (1, 0), "{report:?}");
    assert_eq!(index(&api).len(), 1, "still scheduled: its row stays");
    // The next tick publishes it.
    assert_eq!(tick_at(&api, LATER).count("scheduledPublished"), 1);
}

/// Loses the first statement or batch whose SQL contains `needle` on its way to the database: a
/// transient error, nothing written.
struct LostOnce<'a> {
    db: &'a SqliteExecutor,
    needle: &'static str,
    lost: Cell<bool>,
}

impl LostOnce<'_> {
    fn check(&self, stmts: &[Statement]) -> Result<(), Error> {
        if !self.lost.get() && stmts.iter().any(|s| s.sql().contains(self.needle)) {
            self.lost.set(true);
            return Err(Error::Transient("Network connection lost (before the write)".into()));
        }
        Ok(())
    }
}

impl Executor for LostOnce<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.check(std::slice::from_ref(&stmt))?;
        self.db.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.check(&stmts)?;
        self.db.batch(stmts).await
    }
}

#[test]
fn a_publish_lost_on_its_way_keeps_its_schedule_for_the_next_tick() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({}));
    schedule(&api, &id, LATER);
    let lost = LostOnce { db: &api.db, needle: "scheduled_at = ?5", lost: Cell::new(false) };
    let report = tick_on(&lost, Some(LATER));
    assert!(lost.lost.get());
    assert_eq!((report.count("scheduledPublished"), report.count("scheduleFailures")), (0, 0), "{report:?}");
    assert!(report.error.is_some(), "the lane's error is the tick's");
    assert_eq!(index(&api), [(id.clone(), LATER.to_owned())], "not refused: its row stays");
    assert_eq!(tick_at(&api, LATER).count("scheduledPublished"), 1);
    assert_eq!(item(&api, &id)["status"], "published");
}

#[test]
fn a_draft_revision_of_another_entry_is_never_published() {
    let api = setup();
    let a = entry(&api, "a", "published", json!({"title": "A"}));
    let draft = data(&api.put(&format!("/content/posts/{a}"), &json!({"draft": true, "data": {"title": "A draft"}})));
    let rev = draft["item"]["draftRevisionId"].as_str().unwrap().to_owned();
    let b = entry(&api, "b", "published", json!({"title": "B"}));
    // B's draft pointer names A's revision (written behind the API), which is current for B.
    exec_sql(&api, &format!("UPDATE ec_posts SET draft_revision_id = '{rev}' WHERE id = '{b}'"));
    let r = api.post(&format!("/content/posts/{b}/publish"), &json!({}));
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert!(r.body.contains("missing or invalid"), "{}", r.body);
    schedule(&api, &b, LATER);
    let report = tick_at(&api, LATER);
    assert_eq!((report.count("scheduleFailures"), report.count("scheduledPublished")), (1, 0), "{report:?}");
    assert_eq!(item(&api, &b)["data"]["title"], "B");
}

#[test]
fn a_tick_of_the_smallest_budget_publishes_one_step_at_a_time_within_it() {
    let api = setup();
    let ids: Vec<String> = (0..4)
        .map(|i| {
            let id = entry(&api, &format!("p{i}"), "published", json!({"title": "Live"}));
            data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"title": "Draft"}})));
            schedule(&api, &id, LATER);
            id
        })
        .collect();
    let smallest = Budget::new(tick::budget::MIN_TICK_STATEMENTS, 60_000.0);
    let mut published = 0;
    for _ in 0..20 {
        // `tick_with` asserts every tick kept its budget.
        let r = tick_with(&api.db, Some(LATER), smallest);
        published += r.count("scheduledPublished");
        if r.outcome == TickOutcome::Idle {
            break;
        }
    }
    assert_eq!(published, 4);
    assert!(ids.iter().all(|id| item(&api, id)["data"]["title"] == "Draft"));
}

/// The schedule lane's statement and row reserves, as a tick over the test database sees them.
fn reserves(lane: &ScheduleLane<'_>) -> (u64, RowCount) {
    type Over<'a> = Metered<&'a SqliteExecutor, &'a FnClock>;
    (Lane::<Over<'_>, FnClock>::reserve(lane), Lane::<Over<'_>, FnClock>::reserve_rows(lane))
}

#[test]
fn a_step_runs_only_while_its_rows_fit_what_the_tick_has_left() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({}));
    schedule(&api, &id, LATER);
    let policy = crate::support::policy();
    let (_, reserve) = reserves(&ScheduleLane::new(&policy.projection, None));
    assert!(reserve.fits(RowCount::new(100, 5_000)) && !reserve.fits(RowCount::new(100, 4_000)), "{reserve:?}");
    let rows = |written: u64, read: u64| Budget::new(40, 60_000.0).with_rows(RowCount::new(written, read));
    let unlimited = u64::MAX;
    let short_of_reads =
        tick_with(&api.db, Some(LATER), rows(unlimited, tick::budget::LOG_ROWS.read + reserve.read - 1));
    assert_eq!(short_of_reads.count("scheduledPublished"), 0, "{short_of_reads:?}");
    let short_of_writes =
        tick_with(&api.db, Some(LATER), rows(tick::budget::LOG_ROWS.written + reserve.written - 1, unlimited));
    assert_eq!(short_of_writes.count("scheduledPublished"), 0, "{short_of_writes:?}");
    assert_eq!(index(&api).len(), 1);
    // With room for it (and what the tick's other lanes looked at), it is published.
    let room = tick_with(
        &api.db,
        Some(LATER),
        rows(tick::budget::LOG_ROWS.written + reserve.written + 100, tick::budget::LOG_ROWS.read + reserve.read + 500),
    );
    assert_eq!(room.count("scheduledPublished"), 1, "{room:?}");
}

#[test]
fn a_step_reads_and_writes_no_more_rows_than_its_lane_declares() {
    let api = setup();
    let (a, b) = (media(&api, "a.png"), media(&api, "b.png"));
    let id = entry(&api, "p", "published", json!({"title": "Live", "hero": a}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": b}})));
    schedule(&api, &id, LATER);
    let policy = crate::support::policy();
    let mut lane = ScheduleLane::new(&policy.projection, Some(LATER.to_owned()));
    let clock = FnClock(|| 0.0);
    let metered = Metered::new(&api.db, &clock);
    let spent = || {
        let u = metered.usage();
        RowCount::new(u.rows_written, u.rows_read)
    };
    let mut counts = media_usage_worker::lane::Counts::default();
    let mut ctx = media_usage_worker::lane::Ctx {
        exec: &metered,
        clock: &clock,
        room: reserves(&lane).0,
        rows: reserves(&lane).1,
        spent: &spent,
        counts: &mut counts,
    };
    let step = block_on(lane.step(&mut ctx)).unwrap().unwrap();
    assert!(step.progressed && step.wakes_work, "{step:?}");
    assert_eq!(counts.get("scheduledPublished"), 1);
    let used = spent();
    let usage = metered.usage();
    assert!(usage.statements <= reserves(&lane).0, "{usage:?}");
    assert!(used.fits(media_usage_worker::lifecycle::schedule::STEP_ROWS), "{used:?}");
}

#[test]
fn the_daily_budget_does_not_stop_scheduled_publishing() {
    let api = setup();
    let id = entry(&api, "a", "draft", json!({}));
    schedule(&api, &id, LATER);
    // A day whose budget is spent: a deletion waits for the next day, the schedule fires.
    data(&api.post("/schema/collections", &json!({"slug": "old", "label": "Old"})));
    data(&api.post("/content/old", &json!({"slug": "o", "data": {}})));
    data(&api.delete("/schema/collections/old?force=true"));
    let budget = crate::support::budget().with_daily_rows_written(1);
    let on = |now: &str| {
        let when = TickTime { now: Some(now.to_owned()) };
        TickRun::new(budget, &crate::support::policy()).when(when).run(&api.db)
    };
    on(JUST_BEFORE);
    let report = on(LATER);
    assert!(report.daily_spent, "{report:?}");
    assert_eq!((report.count("deletionSteps"), report.count("scheduledPublished")), (0, 1), "{report:?}");
    assert_eq!(item(&api, &id)["status"], "published");
}

#[test]
fn an_idle_tick_costs_the_same_however_many_entries_are_scheduled_for_later() {
    let api = setup();
    let idle = |api: &Api| {
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&api.db, &clock);
        let report = tick_on(&metered, Some(JUST_BEFORE));
        assert_eq!((report.outcome, report.count("scheduledPublished")), (TickOutcome::Idle, 0), "{report:?}");
        let u = metered.usage();
        (u.statements, u.rows_read, u.rows_written)
    };
    idle(&api);
    let none = idle(&api);
    for i in 0..3 {
        schedule(&api, &entry(&api, &format!("e{i}"), "draft", json!({})), LATER);
    }
    tick_at(&api, JUST_BEFORE);
    let few = idle(&api);
    // Thousands more, written behind the API.
    exec_sql(
        &api,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
         INSERT INTO _emdash_content_schedule (collection_id, content_id, collection_slug, scheduled_at)
         SELECT (SELECT id FROM _emdash_collections WHERE slug = 'posts'), 'x' || i, 'posts', '2099-06-01T00:00:00.000Z' FROM n;",
    );
    let many = idle(&api);
    assert_eq!(few, none, "statements, rows read, rows written");
    assert_eq!(many, none);
    // Of which the schedule lane's look is one statement.
    let report = tick_at(&api, JUST_BEFORE);
    assert!(!report.lanes.contains(&"schedule"));
}

// ---------------------------------------------------------------------------------------------
// Crashes and unseen commits.

fn rows(api: &Api, sql: &str) -> Vec<Vec<Json>> {
    let conn = api.db.connection();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Json::Null,
                    rusqlite::types::ValueRef::Integer(v) => json!(v),
                    rusqlite::types::ValueRef::Real(v) => json!(v),
                    rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                    rusqlite::types::ValueRef::Blob(_) => json!("<blob>"),
                })
            })
            .collect()
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// What a client or an operator can observe of the fixture, without ids, versions and times
/// other than schedules: its entries (with their drafts), the schedule index, the usage index
/// (each current source's occurrences by storage key) and the queues.
fn state(api: &Api) -> String {
    let snapshot = json!({
        "entries": rows(api, "SELECT e.slug, e.status, e.scheduled_at, e.title, m.storage_key, e.deleted_at IS NOT NULL,
                                     e.published_at IS NOT NULL, (SELECT data FROM revisions r WHERE r.id = e.draft_revision_id)
                              FROM ec_posts e LEFT JOIN media m ON m.id = e.hero ORDER BY e.slug"),
        "schedules": rows(api, "SELECT e.slug, s.scheduled_at FROM _emdash_content_schedule s
                                LEFT JOIN ec_posts e ON e.id = s.content_id ORDER BY e.slug"),
        "index": rows(api, "SELECT e.slug, s.source_variant, s.content_status,
                                   (SELECT group_concat(k, ',') FROM (SELECT m.storage_key AS k FROM _emdash_media_usage u
                                    JOIN media m ON m.id = u.media_id
                                    WHERE u.source_key = s.source_key AND u.generation = s.current_generation ORDER BY k))
                            FROM _emdash_media_usage_sources s LEFT JOIN ec_posts e ON e.id = s.content_id
                            ORDER BY e.slug, s.source_variant"),
        "queues": rows(api, "SELECT (SELECT count(*) FROM _emdash_media_usage_work),
                                    (SELECT group_concat(status) FROM _emdash_media_usage_index_status),
                                    (SELECT count(*) FROM _emdash_batch_guard)"),
    });
    serde_json::to_string_pretty(&snapshot).unwrap()
}

/// The fixture: media `a.png` and `b.png`; `live` (published, using A, its draft using B),
/// `draft` (a draft using B), `waiting` (a draft scheduled), `published-waiting` (published,
/// using A, its draft using B, scheduled), and `trashed` (scheduled, then trashed).
fn crash_fixture() -> Api {
    let api = setup();
    let (a, b) = (media(&api, "a.png"), media(&api, "b.png"));
    let live = entry(&api, "live", "published", json!({"title": "Live", "hero": a}));
    data(&api.put(&format!("/content/posts/{live}"), &json!({"draft": true, "data": {"title": "Live 2", "hero": b}})));
    entry(&api, "draft", "draft", json!({"title": "Draft", "hero": b}));
    let waiting = entry(&api, "waiting", "draft", json!({"title": "Waiting"}));
    schedule(&api, &waiting, LATER);
    let pw = entry(&api, "published-waiting", "published", json!({"title": "PW", "hero": a}));
    data(&api.put(&format!("/content/posts/{pw}"), &json!({"draft": true, "data": {"title": "PW 2", "hero": b}})));
    schedule(&api, &pw, LATER);
    let trashed = entry(&api, "trashed", "draft", json!({"title": "Trashed"}));
    schedule(&api, &trashed, LATER);
    data(&api.delete(&format!("/content/posts/{trashed}")));
    api
}

fn id_of(api: &Api, slug: &str) -> String {
    rows(api, &format!("SELECT id FROM ec_posts WHERE slug = '{slug}'"))[0][0].as_str().unwrap().to_owned()
}

/// Runs ticks (database clock) until idle: the background work of a write settles.
fn settle(api: &Api) {
    let (_, errors) = ticks_at(api, "2000-01-01T00:00:00.000Z");
    assert_eq!(errors, Vec::<String>::new());
}

#[test]
fn a_crash_or_an_unseen_commit_at_any_statement_of_a_schedule_or_its_cancel_converges_after_the_retry() {
    let fixture = crash_fixture();
    type Send = fn(&Api) -> (&'static str, String, Option<Json>);
    let writes: &[(&str, Send)] = &[
        ("schedule a draft", |api| {
            ("POST", format!("/content/posts/{}/schedule", id_of(api, "draft")), Some(json!({"scheduledAt": LATER})))
        }),
        ("schedule a published entry", |api| {
            (
                "POST",
                format!("/content/posts/{}/schedule", id_of(api, "live")),
                Some(json!({"scheduledAt": "2099-01-01T01:00:00+01:00"})),
            )
        }),
        ("reschedule", |api| {
            (
                "POST",
                format!("/content/posts/{}/schedule", id_of(api, "waiting")),
                Some(json!({"scheduledAt": "2099-02-01"})),
            )
        }),
        ("unschedule a draft", |api| ("DELETE", format!("/content/posts/{}/schedule", id_of(api, "waiting")), None)),
        ("unschedule a published entry", |api| {
            ("DELETE", format!("/content/posts/{}/schedule", id_of(api, "published-waiting")), None)
        }),
        ("restore a scheduled entry", |api| {
            ("POST", format!("/content/posts/{}/restore", id_of(api, "trashed")), None)
        }),
    ];
    let mut runs = 0;
    for (name, send) in writes {
        let reference = fixture.snapshot();
        let (method, path, body) = send(&reference);
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&reference.db, &clock);
        let r = send_on(&reference, &metered, method, &path, body.as_ref());
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        let n = metered.usage().statements;
        settle(&reference);
        let expected = state(&reference);
        for k in 1..=n {
            for fault in [Fault::Crash(k), Fault::CommitUnknown(k)] {
                let api = fixture.snapshot();
                let what = format!("{name}, {fault:?} of {n}");
                let first = send_on(&api, &Faulty::injecting(&api.db, Some(fault)), method, &path, body.as_ref());
                if first.status >= 500 {
                    let retry = send_on(&api, &api.db, method, &path, body.as_ref());
                    assert_eq!(retry.status, 200, "{what}: the retry answered {}", retry.body);
                } else {
                    assert_eq!(first.status, 200, "{what}: {}", first.body);
                }
                settle(&api);
                assert_eq!(state(&api), expected, "{what}");
                runs += 1;
            }
        }
    }
    assert!(runs >= 60, "{runs} runs");
}

#[test]
fn a_crash_or_an_unseen_commit_at_any_statement_of_the_lanes_step_converges_in_the_next_ticks() {
    // The fault-free ticks at the time: the state before each and its statements.
    let probe = crash_fixture();
    let (mut before, mut per_tick) = (Vec::new(), Vec::new());
    let mut counts = (0, 0);
    loop {
        before.push(probe.snapshot());
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&probe.db, &clock);
        let report = tick_on(&metered, Some(LATER));
        assert_eq!(report.error, None);
        if report.outcome == TickOutcome::Idle {
            break;
        }
        counts.0 += report.count("scheduledPublished");
        counts.1 += report.count("schedulesDropped");
        per_tick.push(metered.usage().statements);
        assert!(per_tick.len() < 10);
    }
    assert_eq!(counts, (2, 1), "two published, the trashed one's row dropped");
    let expected = state(&probe);
    assert!(expected.contains("\"PW 2\"") && expected.contains("\"Waiting\""), "{expected}");
    let (mut runs, mut failed) = (0, 0);
    for (i, n) in per_tick.iter().enumerate() {
        for k in 1..=*n {
            for fault in [Fault::Crash(k), Fault::CommitUnknown(k)] {
                let api = before[i].snapshot();
                let faulted = tick_on(&Faulty::injecting(&api.db, Some(fault)), Some(LATER));
                failed += usize::from(faulted.error.is_some());
                let (_, errors) = ticks_at(&api, LATER);
                assert_eq!(errors, Vec::<String>::new(), "tick {i}, {fault:?} of {n}");
                assert_eq!(state(&api), expected, "tick {i}, {fault:?} of {n}");
                runs += 1;
            }
        }
    }
    assert!(runs >= 60 && failed * 2 >= runs, "{runs} runs, {failed} saw the error, over {per_tick:?}");
}
