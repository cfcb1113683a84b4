//! The media usage index end to end on SQLite: capture, projection, eligibility, admission,
//! CAS losses, crash resumption at every statement, coverage and the operator endpoints.

use std::cell::Cell;

use futures::executor::block_on;
use media_usage_worker::api::{self, Request, Response};
use media_usage_worker::clock::{FnClock, MonotonicClock};
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use media_usage_worker::tick::{self, budget::Budget};
use media_usage_worker::usage::project::{self, Admission, JobOutcome};
use serde_json::{json, Value as Json};

use crate::support::{code, data, Api, ADMIN};

fn scalar(db: &SqliteExecutor, sql: &str) -> i64 {
    db.connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

fn text(db: &SqliteExecutor, sql: &str) -> Option<String> {
    db.connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

/// A collection `posts` with a title, an image, a file, Portable Text and a repeater.
fn setup() -> Api {
    let api = Api::new();
    let r = api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [
            {"slug": "title", "type": "string"},
            {"slug": "hero", "type": "image"},
            {"slug": "attachment", "type": "file"},
            {"slug": "body", "type": "portableText"},
            {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}, {"slug": "caption", "type": "string"}]}
        ]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    api
}

fn create(api: &Api, slug: &str, status: &str, data_: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": status, "data": data_}));
    assert_eq!(r.status, 201, "{}", r.body);
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn used_in(api: &Api, media: &str) -> Json {
    data(&api.get(&format!("/media/{media}/usage")))
}

fn coverage(api: &Api) -> String {
    data(&api.get("/admin/media-usage/status"))["status"].as_str().unwrap().to_owned()
}

fn gallery(n: usize, prefix: &str) -> Json {
    Json::Array((0..n).map(|i| json!({"image": format!("{prefix}{i}")})).collect())
}

/// Saves an entry with a gallery behind the API (as an earlier version, or a higher limit, let
/// it be saved: the API refuses what passes the admission limit), captured like any write, and
/// runs the ticks with the API's policy. Returns its id.
fn create_past_api(api: &Api, slug: &str, gallery: &Json) -> String {
    api.db
        .connection()
        .execute(
            "INSERT INTO ec_posts (id, slug, status, gallery) VALUES (?1, ?1, 'published', ?2)",
            [slug, &gallery.to_string()],
        )
        .unwrap();
    block_on(crate::support::drain(
        &api.db,
        &MonotonicClock::default(),
        api.config.tick_budget,
        &api.config.background,
        100,
    ))
    .unwrap();
    slug.to_owned()
}

#[test]
fn a_content_write_is_listed_in_used_in_with_its_paths() {
    let api = setup();
    let m1 = register_media(&api, "m1.jpg");
    let m2 = register_media(&api, "m2.jpg");
    let id = create(
        &api,
        "hello",
        "published",
        json!({"title": "Hello", "hero": {"id": m1, "mimeType": "image/jpeg"}, "gallery": [{"image": m1}, {"image": m2}],
               "body": [{"_type": "block"}, {"_type": "image", "asset": {"_ref": m1}}]}),
    );
    let u = used_in(&api, &m1);
    assert_eq!(u["coverage"]["status"], "complete");
    let items = u["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["contentId"], id.as_str());
    assert_eq!(items[0]["collection"], "posts");
    assert_eq!(items[0]["title"], "Hello");
    assert_eq!(items[0]["slug"], "hello");
    assert_eq!(items[0]["status"], "published");
    let paths: Vec<&str> =
        items[0]["occurrences"].as_array().unwrap().iter().map(|o| o["fieldPath"].as_str().unwrap()).collect();
    assert_eq!(paths, ["body[1].asset._ref", "gallery[0].image", "hero"]);
    assert_eq!(items[0]["occurrences"][0]["referenceType"], "portable_text_image");
    assert_eq!(used_in(&api, &m2)["items"][0]["occurrences"][0]["fieldPath"], "gallery[1].image");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "the write's job completed");
    // Unknown media: 404 before any usage query.
    assert_eq!(code(&api.get("/media/nope/usage")), "NOT_FOUND");
    assert_eq!(code(&api.get(&format!("/media/{m1}/usage?cursor=%25%25%25"))), "INVALID_CURSOR");
}

#[test]
fn used_in_pages_never_split_an_entry() {
    let api = setup();
    let m = register_media(&api, "shared.jpg");
    for i in 0..5 {
        create(&api, &format!("e{i}"), "published", json!({"hero": m, "gallery": [{"image": m}]}));
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let path = match &cursor {
            Some(c) => format!("/media/{m}/usage?limit=2&cursor={c}"),
            None => format!("/media/{m}/usage?limit=2"),
        };
        let page = data(&api.get(&path));
        for item in page["items"].as_array().unwrap() {
            assert_eq!(item["occurrences"].as_array().unwrap().len(), 2, "an entry arrives whole");
            seen.push(item["contentId"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (5, 5));
}

fn register_media(api: &Api, key: &str) -> String {
    let r = api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

#[test]
fn usage_counts_follow_eligibility_and_coverage() {
    let api = setup();
    let live = register_media(&api, "live.png");
    let draft_only = register_media(&api, "draft.png");
    let superseded = register_media(&api, "old.png");
    let unused = register_media(&api, "unused.png");
    // Published entry whose draft uses another image: both count once.
    let a = create(&api, "a", "published", json!({"hero": live}));
    data(&api.put(&format!("/content/posts/{a}"), &json!({"draft": true, "data": {"hero": draft_only}})));
    // Draft entry with a draft revision: the superseded live image does not count.
    let b = create(&api, "b", "draft", json!({"hero": superseded}));
    data(&api.put(&format!("/content/posts/{b}"), &json!({"draft": true, "data": {"hero": draft_only}})));
    let count = |m: &str| data(&api.get(&format!("/media/{m}?includeUsage=1")))["item"]["usage"]["count"].clone();
    assert_eq!(count(&live), 1);
    assert_eq!(count(&draft_only), 2);
    assert_eq!(count(&superseded), 0);
    assert_eq!(count(&unused), 0);
    assert!(used_in(&api, &unused)["items"].as_array().unwrap().is_empty());
    // A trashed entry no longer counts but is still listed with deletedAt.
    data(&api.delete(&format!("/content/posts/{a}")));
    assert_eq!(count(&live), 0);
    let listed = used_in(&api, &live);
    assert!(listed["items"][0]["deletedAt"].is_string());
    // Counts need a role that may read drafts.
    let author = api.token("author", &["media:read"]);
    let r = api.call("GET", &format!("/media/{live}?includeUsage=1"), Some(&author), None);
    assert_eq!(r.body_json()["data"]["item"]["usage"]["count"], Json::Null);
}

#[test]
fn publishing_moves_the_draft_projection_to_live() {
    let api = setup();
    let (m_old, m_new) = (register_media(&api, "old.jpg"), register_media(&api, "new.jpg"));
    let id = create(&api, "p", "published", json!({"hero": m_old}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": m_new}})));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 2);
    data(&api.post(&format!("/content/posts/{id}/publish"), &json!({})));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 1, "the draft source is gone");
    assert!(used_in(&api, &m_old)["items"].as_array().unwrap().is_empty());
    assert_eq!(used_in(&api, &m_new)["items"].as_array().unwrap().len(), 1);
    // Permanent delete removes the entry's sources and occurrences.
    api.call("DELETE", &format!("/content/posts/{id}?permanent=true"), Some(ADMIN), None);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    assert_eq!(coverage(&api), "complete");
}

/// `posts` with projection jobs admitting at most `max` occurrences per variant.
fn setup_admitting(max: usize) -> Api {
    let mut api = setup();
    api.config.background = api.config.background.with_admission(Admission { max_occurrences: max });
    api
}

fn occurrences_of(api: &Api, id: &str, variant: &str) -> i64 {
    scalar(
        &api.db,
        &format!(
            "SELECT count(*) FROM _emdash_media_usage u JOIN _emdash_media_usage_sources s
             ON s.source_key = u.source_key AND s.current_generation = u.generation
             WHERE s.content_id = '{id}' AND s.source_variant = '{variant}'"
        ),
    )
}

#[test]
fn a_thousand_occurrences_per_variant_are_indexed_in_one_job_through_every_transition() {
    let api = setup();
    let metered_write = |method: &str, path: &str, body: Option<Json>| {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let req = Request {
            method: method.into(),
            path: format!("{}{path}", api::BASE_PATH),
            query: query.split_once('=').map(|(k, v)| vec![(k.to_owned(), v.to_owned())]).unwrap_or_default(),
            authorization: Some(format!("Bearer {ADMIN}")),
            body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
            ..Request::default()
        };
        let r = block_on(api::handle(&metered, &api.config, &req));
        assert!(r.status < 300, "{method} {path}: {}", r.body);
        assert_eq!(
            text(
                &api.db,
                "SELECT group_concat(state || ':' || coalesce(last_error_code, '')) FROM _emdash_media_usage_work"
            ),
            None,
            "{method} {path}: indexed by its own request"
        );
        assert_eq!(coverage(&api), "complete", "{method} {path}");
        (r, metered.usage().statements)
    };
    let (r, _) = metered_write(
        "POST",
        "/content/posts",
        Some(json!({"slug": "g", "status": "published", "data": {"gallery": gallery(1_000, "a")}})),
    );
    let id = r.body_json()["data"]["item"]["id"].as_str().unwrap().to_owned();
    assert_eq!(occurrences_of(&api, &id, "columns"), 1_000);
    // A draft replacing every image: 1,000 live and 1,000 draft occurrences.
    metered_write(
        "PUT",
        &format!("/content/posts/{id}"),
        Some(json!({"draft": true, "data": {"gallery": gallery(1_000, "b")}})),
    );
    assert_eq!((occurrences_of(&api, &id, "columns"), occurrences_of(&api, &id, "draft_overlay")), (1_000, 1_000));
    // Publishing writes 1,000 new live occurrences and removes 2,000 (old live and the draft).
    metered_write("POST", &format!("/content/posts/{id}/publish"), Some(json!({})));
    assert_eq!((occurrences_of(&api, &id, "columns"), occurrences_of(&api, &id, "draft_overlay")), (1_000, 0));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'a%'"), 0);
    for (method, path) in [
        ("POST", format!("/content/posts/{id}/unpublish")),
        ("DELETE", format!("/content/posts/{id}")),
        ("POST", format!("/content/posts/{id}/restore")),
        ("DELETE", format!("/content/posts/{id}?permanent=true")),
    ] {
        let body = (method == "POST").then(|| json!({}));
        let (_, statements) = metered_write(method, &path, body);
        assert!(statements <= 3 + project::JOB_MAX_STATEMENTS, "{method} {path}: {statements} statements");
    }
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
}

#[test]
fn status_reports_the_configured_tick_budget() {
    let api = setup();
    let st = data(&api.get("/admin/media-usage/status"));
    assert_eq!(
        st["tickBudget"],
        json!({"maxStatements": 40, "maxMs": 2500.0, "maxRowsWritten": 20_000, "maxRowsRead": 200_000})
    );
    let mut small = setup();
    small.config.tick_budget = Budget::new(12, 900.0);
    let st = data(&small.get("/admin/media-usage/status"));
    let unlimited = u64::MAX;
    assert_eq!(
        st["tickBudget"],
        json!({"maxStatements": 12, "maxMs": 900.0, "maxRowsWritten": unlimited, "maxRowsRead": unlimited}),
        "the configured one"
    );
}

#[test]
fn one_occurrence_over_the_limit_fails_terminally_and_names_the_entry() {
    let api = setup();
    create(&api, "fine", "published", json!({"gallery": gallery(3, "f")}));
    // The API refuses it up front, with nothing written.
    let r = api.post("/content/posts", &json!({"slug": "too-big", "data": {"gallery": gallery(1_001, "x")}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
    let issue = r.body_json()["error"]["details"]["issues"][0].clone();
    assert_eq!(issue["path"], "data");
    let message = issue["message"].as_str().unwrap();
    assert!(message.contains("1001") && message.contains("1000"), "names the count and the limit: {message}");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM ec_posts WHERE slug = 'too-big'"), 0);
    assert_eq!(coverage(&api), "complete");
    // Saved behind the API, it is not indexed and the operator sees it.
    let id = create_past_api(&api, "too-big", &gallery(1_001, "x"));
    let work: (String, i64, String) = api
        .db
        .connection()
        .query_row("SELECT state, attempt_count, last_error_code FROM _emdash_media_usage_work", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(work, ("failed".into(), 1, "MEDIA_USAGE_RESOURCE_LIMIT".into()));
    assert_eq!(
        scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_sources WHERE content_id = '{id}'")),
        0,
        "nothing was written"
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'x%'"), 0);
    let listed = data(&api.get("/admin/media-usage/work?collection=posts&state=failed"));
    assert_eq!(listed["items"][0]["contentId"], id.as_str());
    assert_eq!(listed["items"][0]["contentSlug"], "too-big", "the operator sees which entry");
    // Its media are known, so coverage stays complete: only those media are held (see
    // tests/it/admission.rs).
    assert_eq!(scalar(&api.db, "SELECT json_array_length(unindexed_media) FROM _emdash_media_usage_work"), 1_001);
    assert_eq!(coverage(&api), "complete");
    // The limit is per variant: 1,000 live plus a 1,000-image draft is fine, a 1,001-image
    // draft is refused.
    let api = setup();
    let id = create(&api, "ok", "published", json!({"gallery": gallery(1_000, "l")}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"gallery": gallery(1_000, "d")}})));
    let r = api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"gallery": gallery(1_001, "d")}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
    assert_eq!(occurrences_of(&api, &id, "columns"), 1_000);
    assert_eq!(occurrences_of(&api, &id, "draft_overlay"), 1_000, "the saved draft stays as it was");
}

#[test]
fn the_limit_is_configurable() {
    let api = setup_admitting(12);
    create(&api, "twelve", "published", json!({"gallery": gallery(12, "a")}));
    let r = api.post("/content/posts", &json!({"slug": "thirteen", "data": {"gallery": gallery(13, "b")}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
    create_past_api(&api, "thirteen", &gallery(13, "b"));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 12);
    assert_eq!(
        text(&api.db, "SELECT group_concat(last_error_code) FROM _emdash_media_usage_work").as_deref(),
        Some("MEDIA_USAGE_RESOURCE_LIMIT")
    );
}

#[test]
fn a_change_whose_bound_json_passes_the_byte_bound_fails_without_a_source_row() {
    // Written past the API (whose bodies stop at 1 MiB) but captured like any write: `n` images
    // with 200 KB asset ids.
    let write = |api: &Api, n: usize| {
        let items: Vec<Json> = (0..n).map(|i| json!({"image": format!("{i}{}", "m".repeat(200_000))})).collect();
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, gallery) VALUES ('big', 'big', 'published', ?1)",
                [Json::Array(items).to_string()],
            )
            .unwrap();
        block_on(crate::support::drain(
            &api.db,
            &MonotonicClock::default(),
            crate::support::budget(),
            &crate::support::policy(),
            5,
        ))
        .unwrap();
    };
    // Eight: 1.6 MB of occurrences in one bound value.
    let api = setup();
    write(&api, 8);
    assert_eq!(
        text(&api.db, "SELECT last_error_code FROM _emdash_media_usage_work").as_deref(),
        Some("MEDIA_USAGE_RESOURCE_LIMIT")
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
    // Seven fit (1.4 MB).
    let api = setup();
    write(&api, 7);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 7);
    assert_eq!(coverage(&api), "complete")
}

#[test]
fn a_500_kb_title_is_indexed_with_a_bounded_display_title() {
    let api = setup();
    let m = register_media(&api, "hero.png");
    let title = "T".repeat(500_000);
    create(&api, "long", "published", json!({"title": title, "hero": m}));
    assert_eq!(coverage(&api), "complete");
    let used = used_in(&api, &m);
    assert_eq!(used["items"][0]["title"].as_str().map(str::len), Some(200), "{}", &used.to_string()[..300]);
    assert_eq!(scalar(&api.db, "SELECT max(length(content_title)) FROM _emdash_media_usage_sources"), 200);
}

#[test]
fn an_unchanged_projection_is_a_no_op() {
    let api = setup();
    let id = create(&api, "same", "published", json!({"hero": "m1", "title": "T"}));
    let before = text(&api.db, "SELECT current_generation || '|' || updated_at FROM _emdash_media_usage_sources");
    // A write that does not change the projection (a non-extraction, non-title field is absent
    // here, so rewrite the same values).
    data(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"hero": "m1"}})));
    assert_eq!(
        text(&api.db, "SELECT current_generation || '|' || updated_at FROM _emdash_media_usage_sources"),
        before
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn draft_revision_errors_index_the_columns_and_mark_coverage_partial() {
    let api = setup();
    let (m1, m2) = (register_media(&api, "1.jpg"), register_media(&api, "2.jpg"));
    let id = create(&api, "d", "published", json!({"hero": m1}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": m2}})));
    // Corrupt the draft revision behind the API's back, then re-capture the entry.
    api.db.connection().execute_batch("UPDATE revisions SET data = '[1]'").unwrap();
    let r = api.post("/admin/media-usage/work/retry", &json!({"collectionId": collection_id(&api), "contentId": id}));
    assert_eq!(data(&r)["changed"], true);
    drain(&api.db);
    let (completeness, err): (String, String) = api
        .db
        .connection()
        .query_row(
            "SELECT source_completeness, last_error_code FROM _emdash_media_usage_sources WHERE source_variant = 'draft_overlay'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((completeness.as_str(), err.as_str()), ("failed", "DRAFT_REVISION_INVALID"));
    assert_eq!(used_in(&api, &m1)["items"].as_array().unwrap().len(), 1, "columns stay indexed");
    assert_eq!(coverage(&api), "partial");
    // A different failure of the same draft replaces the recorded code.
    api.db.connection().execute_batch("UPDATE revisions SET entry_id = 'other'").unwrap();
    data(&api.post("/admin/media-usage/work/retry", &json!({"collectionId": collection_id(&api), "contentId": id})));
    drain(&api.db);
    assert_eq!(
        text(&api.db, "SELECT last_error_code FROM _emdash_media_usage_sources WHERE source_variant = 'draft_overlay'")
            .as_deref(),
        Some("DRAFT_REVISION_MISMATCH")
    );
}

fn collection_id(api: &Api) -> String {
    text(&api.db, "SELECT id FROM _emdash_collections WHERE slug = 'posts'").unwrap()
}

fn drain(db: &SqliteExecutor) -> u32 {
    let budget = Budget::new(40, 60_000.0);
    block_on(crate::support::drain(db, &MonotonicClock::default(), budget, &crate::support::policy(), 100)).unwrap()
}

#[test]
fn the_capture_fence_refuses_writes_and_queues_nothing() {
    let api = setup();
    let id = create(&api, "x", "draft", json!({}));
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting'")
        .unwrap();
    let r = api.post("/content/posts", &json!({"slug": "y", "data": {}}));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()));
    let r = api.put(&format!("/content/posts/{id}"), &json!({"data": {"hero": "m1"}}));
    assert_eq!(code(&r), "MEDIA_USAGE_CAPTURE_INACTIVE");
    let r = api.call("DELETE", &format!("/content/posts/{id}?permanent=true"), Some(ADMIN), None);
    assert_eq!(code(&r), "MEDIA_USAGE_CAPTURE_INACTIVE");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM ec_posts"), 1);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    // No status row at all fails closed too.
    api.db.connection().execute_batch("DELETE FROM _emdash_media_usage_index_status").unwrap();
    assert_eq!(code(&api.post("/content/posts", &json!({"slug": "z", "data": {}}))), "MEDIA_USAGE_CAPTURE_INACTIVE");
}

#[test]
fn adding_an_extraction_field_invalidates_coverage_only_when_entries_exist() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "empty", "label": "E"})));
    data(&api.post("/schema/collections/empty/fields", &json!({"slug": "hero", "type": "image"})));
    assert_eq!(coverage(&api), "complete");
    data(&api.post("/schema/collections", &json!({"slug": "full", "label": "F"})));
    data(&api.post("/content/full", &json!({"slug": "one", "data": {}})));
    data(&api.post("/schema/collections/full/fields", &json!({"slug": "note", "type": "string"})));
    assert_eq!(coverage(&api), "complete", "a plain field does not matter");
    data(&api.post("/schema/collections/full/fields", &json!({"slug": "hero", "type": "image"})));
    let st = data(&api.get("/admin/media-usage/status"));
    assert_eq!(st["status"], "stale");
    let full = st["collections"].as_array().unwrap().iter().find(|c| c["collection"] == "full").unwrap().clone();
    assert_eq!(full["reconciliationRequired"], true);
    assert_eq!(full["lastErrorCode"], "CONTENT_USAGE_STALE");
}

/// Runs one projection job, running `mutate` on the raw connection right after the job's
/// load statement (its second statement), to lose a race on purpose.
struct RaceAfterLoad<'a> {
    inner: &'a SqliteExecutor,
    seen: Cell<u32>,
    mutate: &'a str,
}

impl Executor for RaceAfterLoad<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        let out = self.inner.run(stmt).await;
        self.seen.set(self.seen.get() + 1);
        if self.seen.get() == 2 {
            self.inner.connection().execute_batch(self.mutate).unwrap();
        }
        out
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.seen.set(self.seen.get() + 1);
        self.inner.batch(stmts).await
    }
}

#[test]
fn a_lost_cas_publishes_nothing_and_leaves_no_rows() {
    let races = [
        "UPDATE _emdash_media_usage_sources SET updated_at = '2000-01-01T00:00:00.000Z'",
        "UPDATE _emdash_media_usage_sources SET source_fingerprint = 'media-usage-projection:v1:sha256:00'",
        "UPDATE _emdash_media_usage_sources SET last_error_code = 'X'",
        "UPDATE _emdash_media_usage_sources SET revision_id = 'r-other'",
        "UPDATE _emdash_media_usage_sources SET source_version = 99",
        "UPDATE ec_posts SET version = version + 100",
        "UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z'",
    ];
    for race in races {
        let api = setup();
        let id = create(&api, "r", "published", json!({"hero": "m1"}));
        // Queue a change without processing it, then race the job.
        api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = 'm2' WHERE id = '{id}'")).unwrap();
        let generation = text(&api.db, "SELECT current_generation FROM _emdash_media_usage_sources");
        let occurrences = scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage");
        let exec = RaceAfterLoad { inner: &api.db, seen: Cell::new(0), mutate: race };
        let outcome = block_on(project::process_next(&exec, None, &project::Policy::default())).unwrap();
        assert_eq!(outcome, Some(JobOutcome::Conflict), "{race}");
        assert_eq!(text(&api.db, "SELECT current_generation FROM _emdash_media_usage_sources"), generation, "{race}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), occurrences, "{race}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'm2'"), 0, "{race}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_batch_guard"), 0);
    }
}

/// The media ids the index currently shows for the entry, per source variant.
fn projection(db: &SqliteExecutor) -> Vec<(String, String)> {
    let conn = db.connection();
    let mut stmt = conn
        .prepare(
            "SELECT s.source_variant, u.media_id FROM _emdash_media_usage u
             JOIN _emdash_media_usage_sources s ON s.source_key = u.source_key AND s.current_generation = u.generation
             ORDER BY 1, 2",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn a_crash_at_every_statement_leaves_old_or_new_and_the_next_tick_completes() {
    let old: Vec<(String, String)> = (0..3).map(|i| ("columns".to_owned(), format!("old{i}"))).collect();
    let new: Vec<(String, String)> = (0..4)
        .map(|i| ("columns".to_owned(), format!("new{i}")))
        .chain(
            [("draft_overlay".to_owned(), "d0".to_owned())]
                .into_iter()
                .chain((0..4).map(|i| ("draft_overlay".to_owned(), format!("new{i}")))),
        )
        .collect::<Vec<_>>();
    let mut new_sorted = new.clone();
    new_sorted.sort();
    let mut crashed_somewhere = false;
    for fail_at in 1..=30u64 {
        let api = setup();
        let id = create(&api, "c", "published", json!({"gallery": gallery(3, "old")}));
        assert_eq!(projection(&api.db), old);
        // The write: live columns change, then a draft on top, all under one faulty invocation.
        let faulty = Faulty::new(&api.db, Some(fail_at));
        let call = |method: &str, path: &str, body: Json| -> Response {
            let req = Request {
                method: method.into(),
                path: format!("{}{path}", api::BASE_PATH),
                authorization: Some(format!("Bearer {ADMIN}")),
                body: body.to_string().into_bytes(),
                ..Request::default()
            };
            block_on(api::handle(&faulty, &crate::support::config(), &req))
        };
        let r1 = call("PUT", &format!("/content/posts/{id}"), json!({"data": {"gallery": gallery(4, "new")}}));
        let r2 = call("PUT", &format!("/content/posts/{id}"), json!({"draft": true, "data": {"hero": "d0"}}));
        let seen = projection(&api.db);
        let mut seen_sorted = seen.clone();
        seen_sorted.sort();
        let only_live_new: Vec<(String, String)> = (0..4).map(|i| ("columns".to_owned(), format!("new{i}"))).collect();
        assert!(
            seen == old || seen_sorted == new_sorted || seen == only_live_new,
            "fail_at {fail_at}: a mixed projection is visible: {seen:?}"
        );
        if r1.status >= 500 || r2.status >= 500 || seen_sorted != new_sorted {
            crashed_somewhere = true;
        }
        // The isolate "died": its lease expires, and ticks finish the job.
        api.db
            .connection()
            .execute_batch("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE state = 'leased'")
            .unwrap();
        drain(&api.db);
        let after = projection(&api.db);
        let mut after_sorted = after.clone();
        after_sorted.sort();
        if r2.status == 200 {
            assert_eq!(after_sorted, new_sorted, "fail_at {fail_at}: not converged");
        } else if r1.status == 200 {
            assert_eq!(after, only_live_new, "fail_at {fail_at}: not converged");
        } else {
            assert_eq!(after, old, "fail_at {fail_at}: a failed write changed the index");
        }
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "fail_at {fail_at}");
        assert_eq!(coverage(&api), "complete", "fail_at {fail_at}");
        assert_eq!(
            scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage u WHERE NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources s WHERE s.source_key = u.source_key AND s.current_generation = u.generation)"),
            0,
            "fail_at {fail_at}: superseded or orphaned occurrences remain"
        );
    }
    assert!(crashed_somewhere);
}

#[test]
fn the_tick_drains_pending_work_within_its_budget_and_logs_itself() {
    let api = setup();
    for i in 0..5 {
        create(&api, &format!("e{i}"), "published", json!({"hero": format!("m{i}")}));
    }
    // Re-capture everything behind the API (no after-write processing).
    api.db.connection().execute_batch("UPDATE ec_posts SET hero = 'x' || hero").unwrap();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 5);
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let report = block_on(tick::run(
        &metered,
        &clock,
        Budget::new(11, 60_000.0),
        &crate::support::policy(),
        tick::Continuation::Off,
        None,
    ));
    assert_eq!(report.count("jobs"), 1, "the smallest budget, 11, admits exactly one job");
    assert!(metered.usage().statements <= 11, "{:?}", metered.usage());
    assert_eq!(report.statements, metered.usage().statements);
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let report = block_on(tick::run(
        &metered,
        &clock,
        Budget::new(40, 60_000.0),
        &crate::support::policy(),
        tick::Continuation::Off,
        None,
    ));
    assert!(report.count("jobs") >= 3, "{report:?}");
    assert!(metered.usage().statements <= 40);
    drain(&api.db);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'xm%'"), 5);
    let ticks = data(&api.get("/admin/media-usage/ticks"));
    let items = ticks["items"].as_array().unwrap();
    assert!(items.len() >= 3);
    assert_eq!(items[0]["outcome"], "idle");
    assert_eq!(items.last().unwrap()["lane"], "work");
    assert!(items.last().unwrap()["statements"].as_i64().unwrap() <= 10);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn failures_back_off_and_turn_terminal_after_five_attempts() {
    let api = setup();
    let id = create(&api, "f", "published", json!({"hero": "m1"}));
    // Corrupt the stored fields so the load cannot be decoded: a snapshot failure.
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = 'm2' WHERE id = '{id}'")).unwrap();
    api.db.connection().execute_batch("UPDATE _emdash_fields SET required = 'x' WHERE slug = 'hero'").unwrap();
    let mut delays = Vec::new();
    for attempt in 1..=5 {
        api.db
            .connection()
            .execute_batch("UPDATE _emdash_media_usage_work SET next_attempt_at = '2000-01-01T00:00:00.000Z'")
            .unwrap();
        let outcome = block_on(project::process_next(&api.db, None, &project::Policy::default())).unwrap().unwrap();
        let terminal = attempt == 5;
        assert_eq!(outcome, JobOutcome::Failed { code: "MEDIA_USAGE_SNAPSHOT_FAILED", terminal }, "attempt {attempt}");
        delays.push(scalar(
            &api.db,
            "SELECT CAST(round((julianday(next_attempt_at) - julianday(updated_at)) * 86400) AS INTEGER) FROM _emdash_media_usage_work",
        ));
    }
    assert_eq!(&delays[..4], &[30, 60, 120, 240]);
    assert_eq!(text(&api.db, "SELECT state FROM _emdash_media_usage_work").as_deref(), Some("failed"));
    assert_eq!(coverage(&api), "partial");
}

#[test]
fn operators_list_and_retry_work() {
    let api = setup_admitting(12);
    let id = create_past_api(&api, "w", &gallery(13, "z"));
    let cid = collection_id(&api);
    let list = data(&api.get("/admin/media-usage/work?collection=posts&state=failed"));
    assert_eq!(list["items"][0]["contentId"], id.as_str());
    assert!(list["items"][0].get("leaseToken").is_none());
    assert_eq!(code(&api.get("/admin/media-usage/work?collection=nope")), "COLLECTION_NOT_FOUND");
    assert_eq!(code(&api.get("/admin/media-usage/work")), "VALIDATION_ERROR");
    assert_eq!(code(&api.get("/admin/media-usage/work?collection=posts&state=done")), "VALIDATION_ERROR");
    assert_eq!(code(&api.get("/admin/media-usage/work?collection=posts&cursor=%25%25")), "INVALID_CURSOR");
    // Retry a failed item: pending, attempts reset, epoch bumped.
    let r = data(&api.post("/admin/media-usage/work/retry", &json!({"collectionId": cid, "contentId": id})));
    assert_eq!(r["changed"], true);
    assert_eq!(r["item"]["state"], "pending");
    assert_eq!(r["item"]["attemptCount"], 0);
    let again = data(&api.post("/admin/media-usage/work/retry", &json!({"collectionId": cid, "contentId": id})));
    assert_eq!(again["changed"], false);
    // A live lease refuses with its expiry.
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 't', lease_expires_at = '2999-01-01T00:00:00.000Z'")
        .unwrap();
    let r = api.post("/admin/media-usage/work/retry", &json!({"collectionId": cid, "contentId": id}));
    assert_eq!((r.status, code(&r)), (409, "WORK_LEASE_ACTIVE".into()));
    assert_eq!(r.body_json()["error"]["details"]["leaseExpiresAt"], "2999-01-01T00:00:00.000Z");
    // Bad bodies and unknown ids.
    assert_eq!(code(&api.post("/admin/media-usage/work/retry", &json!({"collectionId": ""}))), "VALIDATION_ERROR");
    assert_eq!(
        code(&api.post("/admin/media-usage/work/retry", &json!({"collectionId": cid, "contentId": id, "x": 1}))),
        "VALIDATION_ERROR"
    );
    assert_eq!(
        code(&api.post("/admin/media-usage/work/retry", &json!({"collectionId": "zzz", "contentId": id}))),
        "COLLECTION_NOT_FOUND"
    );
    assert_eq!(
        code(&api.post("/admin/media-usage/work/retry", &json!({"collectionId": cid, "contentId": "nope"}))),
        "NOT_FOUND"
    );
    assert_eq!(code(&api.call("POST", "/admin/media-usage/work/retry", Some(ADMIN), Some(b"nope"))), "INVALID_JSON");
}

#[test]
fn removing_a_source_of_any_size_is_always_admitted() {
    let api = setup_admitting(12);
    let id = create(&api, "big", "published", json!({"gallery": gallery(12, "g")}));
    // Far more occurrences in the stored generation than the limit (an older, larger limit).
    api.db
        .connection()
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id)
             SELECT 'extra' || i, source_key, current_generation, 'gallery', 'gallery[' || (i + 12) || '].image', 'image_field', 'x' || i, 'x' || i
             FROM _emdash_media_usage_sources, n",
        )
        .unwrap();
    api.call("DELETE", &format!("/content/posts/{id}?permanent=true"), Some(ADMIN), None);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn a_write_to_a_deleted_collections_queue_is_dropped_as_obsolete() {
    let api = setup();
    let id = create(&api, "o", "published", json!({"hero": "m"}));
    let cid = collection_id(&api);
    // A work row that outlived its collection (or whose identity no longer matches).
    api.db
        .connection()
        .execute_batch(&format!(
            "INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{cid}', '{id}x', 'gone')"
        ))
        .unwrap();
    assert_eq!(
        block_on(project::process_next(&api.db, None, &project::Policy::default())).unwrap(),
        Some(JobOutcome::Obsolete)
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
}

#[test]
fn a_job_whose_holders_keep_dying_fails_visibly_instead_of_looping() {
    let api = setup();
    let id = create(&api, "dies", "published", json!({"hero": "m"}));
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = 'n' WHERE id = '{id}'")).unwrap();
    for attempt in 1..=5 {
        let work = block_on(media_usage_worker::repo::work::claim(&api.db, None)).unwrap().unwrap();
        assert_eq!(work.attempt_count, attempt);
        // The holder dies without recording anything; its lease runs out.
        api.db
            .connection()
            .execute_batch("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z'")
            .unwrap();
    }
    let outcome = block_on(project::process_next(&api.db, None, &project::Policy::default())).unwrap();
    assert_eq!(outcome, Some(JobOutcome::Failed { code: "MEDIA_USAGE_PROCESSING_FAILED", terminal: true }));
    assert_eq!(text(&api.db, "SELECT state FROM _emdash_media_usage_work").as_deref(), Some("failed"));
    assert_eq!(coverage(&api), "partial");
}

#[test]
fn a_live_lease_cannot_be_claimed_twice() {
    let api = setup();
    let id = create(&api, "l", "published", json!({"hero": "m"}));
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = 'n' WHERE id = '{id}'")).unwrap();
    let cid = collection_id(&api);
    let first = block_on(media_usage_worker::repo::work::claim(&api.db, Some((&cid, &id)))).unwrap();
    assert!(first.is_some());
    assert!(block_on(media_usage_worker::repo::work::claim(&api.db, Some((&cid, &id)))).unwrap().is_none());
    assert!(block_on(media_usage_worker::repo::work::claim(&api.db, None)).unwrap().is_none());
}

#[test]
fn a_work_row_is_claimed_only_once_due_and_an_expired_lease_only_once_expired() {
    use media_usage_worker::repo::work::claim;
    let api = setup();
    let id = create(&api, "w", "published", json!({"hero": "m"}));
    let cid = collection_id(&api);
    let set = |sql: &str| api.db.connection().execute_batch(&format!("{sql} WHERE content_id = '{id}'")).unwrap();
    let claimable = || {
        let any = block_on(claim(&api.db, None)).unwrap();
        let this = block_on(claim(&api.db, Some((&cid, &id)))).unwrap();
        (any.is_some(), this.is_some())
    };
    api.db.connection().execute_batch(&format!("INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{cid}', '{id}', 'posts')")).unwrap();
    for state in ["pending", "retry"] {
        // Backing off: not due until next_attempt_at, by either claim.
        set(&format!("UPDATE _emdash_media_usage_work SET state = '{state}', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = '2999-01-01T00:00:00.000Z'"));
        assert_eq!(claimable(), (false, false), "{state} before its backoff is due");
        set(&format!("UPDATE _emdash_media_usage_work SET state = '{state}', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = '2000-01-01T00:00:00.000Z'"));
        assert!(block_on(claim(&api.db, None)).unwrap().is_some(), "{state} once due");
        set(&format!("UPDATE _emdash_media_usage_work SET state = '{state}', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = '2000-01-01T00:00:00.000Z'"));
        assert!(block_on(claim(&api.db, Some((&cid, &id)))).unwrap().is_some(), "{state} once due (entry claim)");
    }
    // A leased row whose next attempt is due but whose lease is live: not claimable.
    set("UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 't', lease_expires_at = '2999-01-01T00:00:00.000Z', next_attempt_at = '2000-01-01T00:00:00.000Z'");
    assert_eq!(claimable(), (false, false), "a live lease");
    set("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z', next_attempt_at = '2999-01-01T00:00:00.000Z'");
    assert!(block_on(claim(&api.db, None)).unwrap().is_some(), "an expired lease, whatever next_attempt_at says");
    // Failed rows are never claimed, whatever stale lease fields they carry.
    set("UPDATE _emdash_media_usage_work SET state = 'failed', lease_token = 'old', lease_expires_at = '2000-01-01T00:00:00.000Z', next_attempt_at = '2000-01-01T00:00:00.000Z'");
    assert_eq!(claimable(), (false, false), "failed");
    // An entry claim takes that collection's row only, even if another collection has an entry
    // with the same id.
    set("UPDATE _emdash_media_usage_work SET state = 'pending', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = '2000-01-01T00:00:00.000Z'");
    api.db.connection().execute_batch(&format!("INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('other', '{id}', 'other')")).unwrap();
    assert!(block_on(claim(&api.db, Some((&cid, &id)))).unwrap().is_some());
    let other: String = api
        .db
        .connection()
        .query_row("SELECT state FROM _emdash_media_usage_work WHERE collection_id = 'other'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(other, "pending");
}

#[test]
fn an_unreadable_repeater_definition_fails_closed() {
    let api = setup();
    let id = create(&api, "g", "published", json!({"gallery": [{"image": "g1"}], "hero": "h1"}));
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_fields SET validation = '{not json' WHERE slug = 'gallery'")
        .unwrap();
    data(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"hero": "h2"}})));
    assert_eq!(
        text(&api.db, "SELECT last_error_code FROM _emdash_media_usage_work").as_deref(),
        Some("INVALID_REPEATER_VALIDATION")
    );
    assert_eq!(projection(&api.db), [("columns".to_owned(), "g1".to_owned()), ("columns".to_owned(), "h1".to_owned())]);
    assert_ne!(coverage(&api), "complete");
}

#[test]
fn the_fence_checks_the_exact_collection_identity() {
    let api = setup();
    create(&api, "a", "draft", json!({}));
    api.db.connection().execute_batch("UPDATE _emdash_media_usage_index_status SET collection_id = 'other'").unwrap();
    assert_eq!(code(&api.post("/content/posts", &json!({"slug": "b", "data": {}}))), "MEDIA_USAGE_CAPTURE_INACTIVE");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
}

#[test]
fn used_in_and_counts_start_from_the_media_index() {
    let api = setup();
    for sql in
        [include_str!("../../src/sql/usage/usage_page.sql"), include_str!("../../src/sql/usage/count_entries.sql")]
    {
        let conn = api.db.connection();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let n = stmt.parameter_count();
        let params: Vec<rusqlite::types::Value> = (0..n).map(|_| rusqlite::types::Value::Null).collect();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        // (The counts go through a bound list of ids first: a `json_each` of the ids asked.)
        let first_scan = plan
            .iter()
            .find(|d| (d.starts_with("SEARCH") || d.starts_with("SCAN")) && !d.contains("VIRTUAL TABLE"))
            .unwrap();
        assert!(
            first_scan.contains("idx__emdash_media_usage_media_source_generation"),
            "the plan does not start from the media index: {plan:#?}"
        );
        assert!(!plan.iter().any(|d| d.starts_with("SCAN s") || d.starts_with("SCAN u")), "{plan:#?}");
    }
}

/// A sample value of each field type, holding media id `m` where the type can.
fn sample(t: &str, m: &str) -> Json {
    match t {
        "string" | "text" => json!(m),
        "number" => json!(1),
        "boolean" => json!(true),
        "datetime" => json!("2026-01-02"),
        "image" | "file" => json!({"id": m}),
        "portableText" => json!([{"_type": "image", "asset": {"_ref": m}}]),
        "repeater" => json!([{"x": m}]),
        "json" => json!({"id": m}),
        other => panic!("no sample for {other}"),
    }
}

#[test]
fn every_field_and_sub_field_type_the_schema_accepts_is_extracted_or_holds_no_media() {
    use media_usage_worker::model::field::FieldType;
    // What the index records for a media id in a field (or repeater sub-field) of each type.
    let expected = |t: FieldType| match t {
        FieldType::Image => Some("image_field"),
        FieldType::File => Some("file_field"),
        FieldType::PortableText => Some("portable_text_image"),
        _ => None,
    };
    for t in FieldType::ALL {
        // As a field.
        let api = Api::new();
        let mut field = json!({"slug": "f", "type": t.as_str()});
        if *t == FieldType::Repeater {
            field["subFields"] = json!([{"slug": "x", "type": "string"}]);
        }
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "P", "fields": [field]})));
        data(&api.post(
            "/content/posts",
            &json!({"slug": "e", "status": "published", "data": {"f": sample(t.as_str(), "m1")}}),
        ));
        let found = text(&api.db, "SELECT group_concat(reference_type) FROM _emdash_media_usage WHERE media_id = 'm1'");
        assert_eq!(found.as_deref(), expected(*t), "field of type {}", t.as_str());
        assert_eq!(coverage(&api), "complete", "{}", t.as_str());

        // As a repeater sub-field: accepted and extracted, accepted and holding no media, or
        // refused by the schema.
        let api = Api::new();
        let r = api.post(
            "/schema/collections",
            &json!({"slug": "posts", "label": "P", "fields": [
                {"slug": "r", "type": "repeater", "subFields": [{"slug": "s", "type": t.as_str()}]}
            ]}),
        );
        if !t.allowed_in_repeater() {
            assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "sub-field of type {}", t.as_str());
            continue;
        }
        assert_eq!(r.status, 201, "sub-field of type {}: {}", t.as_str(), r.body);
        let value = json!([{"s": sample(t.as_str(), "m2")}]);
        data(&api.post("/content/posts", &json!({"slug": "e", "status": "published", "data": {"r": value}})));
        let found = text(
            &api.db,
            "SELECT group_concat(reference_type || ' ' || field_path) FROM _emdash_media_usage WHERE media_id = 'm2'",
        );
        let want = expected(*t).map(|k| format!("{k} r[0].s"));
        assert_eq!(found, want, "sub-field of type {}", t.as_str());
    }
}

#[test]
fn a_file_used_only_in_a_repeater_cannot_be_deleted_safely() {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "docs", "label": "Docs", "fields": [
            {"slug": "downloads", "type": "repeater", "subFields": [{"slug": "label", "type": "string"}, {"slug": "file", "type": "file"}]}
        ]}),
    ));
    let pdf = register_media(&api, "guide.pdf");
    data(&api.post(
        "/content/docs",
        &json!({"slug": "guide", "status": "published", "data": {"downloads": [{"label": "Guide", "file": {"id": pdf, "mimeType": "application/pdf"}}]}}),
    ));
    let r = api.call("DELETE", &format!("/media/{pdf}"), Some(ADMIN), None);
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()), "{}", r.body);
    let used = used_in(&api, &pdf);
    assert_eq!(used["items"][0]["occurrences"][0]["fieldPath"], "downloads[0].file");
    assert_eq!(used["items"][0]["occurrences"][0]["referenceType"], "file_field");
    assert_eq!(api.get(&format!("/media/{pdf}")).status, 200, "the file is still there");
}

#[test]
fn an_upgrade_marks_collections_with_file_repeaters_for_repair() {
    use media_usage_worker::exec::sqlite::SqliteExecutor;
    use media_usage_worker::migrations::ALL;
    // Everything before 0007, a collection with a file repeater and an indexed entry, another
    // with an image repeater only; then the rest of the migrations.
    let db = SqliteExecutor::open_in_memory_unmigrated().unwrap();
    let upto = ALL.iter().position(|m| m.name.starts_with("0007")).unwrap();
    // The reference rules' column (0012), the unindexed media column (0013), the table
    // revision (0015) and the field deletions (0022) go in early: this version's API writes and
    // reads them. (The rules' own upgrade is tested in `reference_rules`.)
    let rules = ALL.iter().find(|m| m.name.starts_with("0012")).unwrap();
    let unindexed = ALL.iter().find(|m| m.name.starts_with("0013")).unwrap();
    let tables = ALL.iter().find(|m| m.name.starts_with("0015")).unwrap();
    let fields = ALL.iter().find(|m| m.name.starts_with("0022")).unwrap();
    for m in ALL[..upto].iter().chain([rules, unindexed, tables, fields]) {
        db.connection().execute_batch(m.sql).unwrap();
    }
    let api = Api { db, config: crate::support::config(), storage: None };
    // A collection with a file repeater but no entries has nothing to repair.
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "empty", "label": "E", "fields": [{"slug": "r", "type": "repeater", "subFields": [{"slug": "s", "type": "file"}]}]}),
    ));
    for (slug, sub) in [("docs", "file"), ("pics", "image")] {
        data(&api.post(
            "/schema/collections",
            &json!({"slug": slug, "label": slug, "fields": [{"slug": "r", "type": "repeater", "subFields": [{"slug": "s", "type": sub}]}]}),
        ));
        data(&api.post(
            &format!("/content/{slug}"),
            &json!({"slug": "e", "status": "published", "data": {"r": [{"s": "m"}]}}),
        ));
    }
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_sources SET content_title = printf('%.300c', 'x')")
        .unwrap();
    for m in ALL[upto..].iter().filter(|m| ![rules.name, unindexed.name, tables.name, fields.name].contains(&m.name)) {
        api.db.connection().execute_batch(m.sql).unwrap();
    }
    let st = data(&api.get("/admin/media-usage/status"));
    let of =
        |slug: &str| st["collections"].as_array().unwrap().iter().find(|c| c["collection"] == slug).unwrap().clone();
    assert_eq!(
        (of("docs")["status"].clone(), of("docs")["reconciliationRequired"].clone()),
        (json!("stale"), json!(true))
    );
    assert_eq!(
        (of("pics")["status"].clone(), of("pics")["reconciliationRequired"].clone()),
        (json!("complete"), json!(false))
    );
    assert_eq!(scalar(&api.db, "SELECT max(length(content_title)) FROM _emdash_media_usage_sources"), 200);
    // A repair indexes the file.
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "docs"})));
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE reference_type = 'file_field'"), 1);
}

/// `n` entries written behind the API: captured (queued) but not projected.
fn backlog(api: &Api, n: usize) {
    for i in 0..n {
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, hero) VALUES (?1, ?1, 'published', ?2)",
                [format!("b{i}"), format!("m{i}")],
            )
            .unwrap();
    }
}

fn continuing_tick(api: &Api, budget: Budget, handing_on: Option<&str>) -> tick::report::TickReport {
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let report = block_on(tick::run(
        &metered,
        &clock,
        budget,
        &crate::support::policy(),
        tick::Continuation::On { handing_on },
        None,
    ));
    assert!(report.statements <= budget.max_statements, "{report:?}");
    report
}

fn baton(api: &Api) -> Option<String> {
    text(&api.db, "SELECT max(token) FROM _emdash_media_usage_continuation")
}

#[test]
fn a_tick_with_work_left_hands_on_one_continuation_and_the_chain_ends_when_nothing_is_due() {
    let api = setup();
    backlog(&api, 12);
    let small = Budget::new(11, 60_000.0);
    // A cron tick that cannot finish takes the baton.
    let first = continuing_tick(&api, small, None);
    let token = first.continue_with.clone().expect("work is left: a continuation is wanted");
    assert_eq!(baton(&api).as_deref(), Some(token.as_str()));
    // Another cron tick meanwhile sends nothing: one continuation is in flight.
    let cron = continuing_tick(&api, small, None);
    assert_eq!(cron.continue_with, None);
    // A stale message (not the holder) cannot hand on either.
    assert_eq!(continuing_tick(&api, small, Some("stale")).continue_with, None);
    // The holder's continuation hands the baton on while work is left, then drops it.
    let mut held = token;
    let mut continuations = 0;
    loop {
        let r = continuing_tick(&api, small, Some(&held));
        continuations += 1;
        assert!(continuations < 50, "the chain does not end");
        match r.continue_with {
            Some(next) => {
                assert_eq!(baton(&api).as_deref(), Some(next.as_str()));
                held = next;
            }
            None => break,
        }
    }
    assert_eq!(baton(&api), None, "the chain ended and dropped its baton");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(coverage(&api), "complete");
    // An expired baton (a lost message) lets the next cron tick send again.
    backlog_more(&api);
    let r = continuing_tick(&api, small, None);
    let lost = r.continue_with.expect("taken");
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_continuation SET expires_at = '2000-01-01T00:00:00.000Z'")
        .unwrap();
    let again = continuing_tick(&api, small, None).continue_with.expect("a lost message is replaced once it expires");
    assert_ne!(again, lost);
}

fn backlog_more(api: &Api) {
    for i in 0..12 {
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, hero) VALUES (?1, ?1, 'published', 'x')",
                [format!("c{i}")],
            )
            .unwrap();
    }
}

#[test]
fn without_a_queue_or_with_nothing_due_no_continuation_is_taken() {
    let api = setup();
    backlog(&api, 12);
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let r = block_on(tick::run(
        &metered,
        &clock,
        Budget::new(11, 60_000.0),
        &crate::support::policy(),
        tick::Continuation::Off,
        None,
    ));
    assert_eq!((r.continue_with, baton(&api)), (None, None));
    let api = setup();
    let r = continuing_tick(&api, crate::support::budget(), None);
    assert_eq!((r.continue_with, baton(&api)), (None, None), "an idle tick asks for nothing");
}

#[test]
fn a_stale_continuation_with_nothing_due_leaves_the_live_baton_alone() {
    let api = setup();
    api.db
        .connection()
        .execute_batch(
            "INSERT INTO _emdash_media_usage_continuation (id, token, sent_at, expires_at)
             VALUES (1, 'live', '2026-01-01T00:00:00.000Z', '2999-01-01T00:00:00.000Z')",
        )
        .unwrap();
    assert_eq!(continuing_tick(&api, crate::support::budget(), Some("stale")).continue_with, None);
    assert_eq!(baton(&api).as_deref(), Some("live"));
    assert_eq!(continuing_tick(&api, crate::support::budget(), Some("live")).continue_with, None);
    assert_eq!(baton(&api), None, "its holder drops it");
}

/// `n` fresh entries written behind the API (captured, queued), `images` images each.
fn queued(api: &Api, n: usize, images: usize) {
    let gallery = |i: usize| Json::Array((0..images).map(|k| json!({"image": format!("q{i}-{k}")})).collect());
    for i in 0..n {
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, gallery) VALUES (?1, ?1, 'published', ?2)",
                [format!("q{i}"), gallery(i).to_string()],
            )
            .unwrap();
    }
}

fn default_ticks_until_drained(api: &Api) -> u32 {
    let budget = Budget::new(40, 600_000.0);
    let mut ticks = 0;
    while scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state <> 'failed'") > 0 {
        // A clock that stands still: the count depends on statements, not on how busy the
        // machine is (the group size also adapts to measured statement time; that rule has its
        // own tests).
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&api.db, &clock);
        let report =
            block_on(tick::run(&metered, &clock, budget, &crate::support::policy(), tick::Continuation::Off, None));
        assert!(report.statements <= 40, "{report:?}");
        assert!(metered.usage().max_binds <= 100 && metered.usage().max_sql_bytes < 100_000);
        ticks += 1;
        assert!(ticks < 1_000, "the backlog does not drain");
    }
    ticks
}

#[test]
fn a_backlog_of_10000_entries_drains_in_at_most_40_default_ticks() {
    let api = setup();
    queued(&api, 10_000, 2);
    let ticks = default_ticks_until_drained(&api);
    assert!(ticks <= 40, "{ticks} ticks");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 20_000);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 10_000);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn a_group_indexes_like_single_jobs_and_hands_failures_back_to_them() {
    // The same entries indexed by groups and by single jobs give the same index.
    let build = |grouped: bool| {
        let api = setup();
        queued(&api, 30, 3);
        // A draft, a trashed entry, an entry too large to admit, an entry that vanished.
        let draft_rev = "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r1', 'posts', 'q1', '{\"gallery\":[{\"image\":\"d1\"}]}');
             UPDATE ec_posts SET draft_revision_id = 'r1' WHERE id = 'q1';
             UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z' WHERE id = 'q2';
             DELETE FROM ec_posts WHERE id = 'q3';";
        api.db.connection().execute_batch(draft_rev).unwrap();
        let big: Vec<Json> = (0..1_001).map(|k| json!({"image": format!("big{k}")})).collect();
        api.db
            .connection()
            .execute("UPDATE ec_posts SET gallery = ?1 WHERE id = 'q4'", [Json::Array(big).to_string()])
            .unwrap();
        if !grouped {
            api.db.connection().execute_batch("UPDATE _emdash_media_usage_work SET attempt_count = 1").unwrap();
        }
        default_ticks_until_drained(&api);
        let dump = api
            .db
            .connection()
            .prepare(
                "SELECT s.content_id || ':' || s.source_variant || ':' || coalesce(s.source_completeness, '') || ':' || coalesce(group_concat(u.field_path || '=' || u.media_id, ','), '')
                 FROM _emdash_media_usage_sources s LEFT JOIN _emdash_media_usage u ON u.source_key = s.source_key AND u.generation = s.current_generation
                 GROUP BY s.source_key ORDER BY s.source_key",
            )
            .unwrap()
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let failed = text(&api.db, "SELECT group_concat(content_id || ':' || last_error_code) FROM _emdash_media_usage_work WHERE state = 'failed'");
        (dump, failed, coverage(&api))
    };
    let grouped = build(true);
    assert_eq!(grouped, build(false));
    assert_eq!(grouped.1.as_deref(), Some("q4:MEDIA_USAGE_RESOURCE_LIMIT"), "the failure is recorded by a single job");
    assert_eq!(grouped.2, "complete", "the entry too large to index names its media");
    assert_eq!(grouped.0.len(), 28 + 1, "28 indexed entries (one vanished, one too large) and one draft overlay");
}

#[test]
fn a_group_that_loses_a_race_on_one_entry_writes_nothing_and_hands_every_row_back() {
    use crate::deletion::Hooked;
    let api = setup();
    queued(&api, 5, 1);
    let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", |db| {
        db.connection()
            .execute_batch("UPDATE ec_posts SET gallery = '[{\"image\":\"late\"}]' WHERE id = 'q2'")
            .unwrap();
    });
    let outcome = block_on(project::process_group(&hooked, &project::Policy::default(), 50)).unwrap();
    hooked.done();
    assert_eq!(outcome, project::GroupOutcome::HandedBack { released: 5 });
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0, "nothing written");
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'pending' AND lease_token IS NULL AND attempt_count = 1"),
        4,
        "every other row back to single jobs, the attempt counted"
    );
    assert_eq!(
        text(&api.db, "SELECT state || ':' || attempt_count FROM _emdash_media_usage_work WHERE content_id = 'q2'")
            .as_deref(),
        Some("pending:0"),
        "the raced entry was queued again by its write"
    );
    default_ticks_until_drained(&api);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'late'"), 1);
    assert_eq!(coverage(&api), "complete");
}

/// Runs `sql` against entry `id` while keeping its claimed work row exactly as the group left it
/// (a content write would otherwise re-queue it through the capture trigger).
fn behind_the_lease(id: &str, sql: &str) -> String {
    format!(
        "DROP TABLE IF EXISTS temp.saved; CREATE TEMP TABLE saved AS SELECT * FROM _emdash_media_usage_work WHERE content_id = '{id}';
         {sql};
         DELETE FROM _emdash_media_usage_work WHERE content_id = '{id}';
         INSERT INTO _emdash_media_usage_work SELECT * FROM temp.saved;"
    )
}

#[test]
fn a_group_publish_needs_every_precondition_for_every_entry() {
    use crate::deletion::Hooked;
    let cases: Vec<(&str, String)> = vec![
        ("the collection identity", "UPDATE _emdash_collections SET slug = 'renamed' WHERE slug = 'posts'".into()),
        ("the lease token", "UPDATE _emdash_media_usage_work SET lease_token = 'thief' WHERE content_id = 'q2'".into()),
        ("the work version", "UPDATE _emdash_media_usage_work SET work_version = work_version + 1 WHERE content_id = 'q2'".into()),
        (
            "a live lease",
            "UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q2'".into(),
        ),
        ("the entry version", behind_the_lease("q2", "UPDATE ec_posts SET version = version + 1 WHERE id = 'q2'")),
        (
            "the entry update time",
            behind_the_lease("q2", "UPDATE ec_posts SET updated_at = '2999-01-01T00:00:00.000Z' WHERE id = 'q2'"),
        ),
        (
            "the draft revision",
            behind_the_lease(
                "q2",
                "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r9', 'posts', 'q2', '{}');
                 UPDATE ec_posts SET draft_revision_id = 'r9' WHERE id = 'q2'",
            ),
        ),
        (
            "the live revision",
            behind_the_lease(
                "q2",
                "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r8', 'posts', 'q2', '{}');
                 UPDATE ec_posts SET live_revision_id = 'r8' WHERE id = 'q2'",
            ),
        ),
        ("an entry that was absent", behind_the_lease("q3", "INSERT INTO ec_posts (id, slug, status) VALUES ('q3', 'q3', 'draft')")),
        (
            "the stored sources",
            "INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant)
             SELECT 'content:' || id || ':q2:columns', id, 'posts', 'q2', 'columns' FROM _emdash_collections".into(),
        ),
    ];
    for (what, sabotage) in cases {
        let api = setup();
        queued(&api, 5, 1);
        // q3's entry is gone before the group reads it (its work row stays).
        api.db.connection().execute_batch(&behind_the_lease("q3", "DELETE FROM ec_posts WHERE id = 'q3'")).unwrap();
        let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", move |db| {
            db.connection().execute_batch(&sabotage).unwrap();
        });
        let outcome = block_on(project::process_group(&hooked, &project::Policy::default(), 50)).unwrap();
        hooked.done();
        assert!(matches!(outcome, project::GroupOutcome::HandedBack { .. }), "{what}: {outcome:?}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0, "{what}: nothing written");
        if what == "the lease token" {
            assert_eq!(
                text(&api.db, "SELECT lease_token FROM _emdash_media_usage_work WHERE content_id = 'q2'").as_deref(),
                Some("thief"),
                "the hand-back leaves another holder's row alone"
            );
        }
    }
}

#[test]
fn a_group_claims_only_fresh_rows_of_one_collection() {
    let api = setup();
    queued(&api, 3, 1);
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_work SET attempt_count = 1 WHERE content_id = 'q0'")
        .unwrap();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "pages", "label": "Pages", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    api.db
        .connection()
        .execute_batch("INSERT INTO ec_pages (id, slug, status, hero) VALUES ('p0', 'p0', 'published', 'x')")
        .unwrap();
    let rows = block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", 50)).unwrap();
    let mut ids: Vec<&str> = rows.iter().map(|r| r.content_id.as_str()).collect();
    ids.sort_unstable();
    assert!(ids == ["q1", "q2"] || ids == ["p0"], "{ids:?}");
    // Once no fresh row is due, the one due row a single job would take.
    let api = setup();
    queued(&api, 2, 1);
    api.db.connection().execute_batch("UPDATE _emdash_media_usage_work SET attempt_count = 1").unwrap();
    assert_eq!(block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", 50)).unwrap().len(), 1);
}

#[test]
fn a_group_takes_back_rows_whose_first_attempt_died_and_nothing_else_leased() {
    let api = setup();
    queued(&api, 6, 1);
    let set = |sql: &str| api.db.connection().execute_batch(sql).unwrap();
    // q0: its first attempt died (lease expired) — a group row. q1: a second attempt died — single
    // jobs only. q2: first attempt, lease live — nobody's. q3: fresh. q4: a retry — single jobs
    // only. q5: never attempted but leased and expired cannot exist; treat as a dead first attempt
    // only when attempt_count says so (0 here: not a group row, a single job's expired lease).
    set("UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'dead', attempt_count = 1,
             lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q0';
         UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'dead', attempt_count = 2,
             lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q1';
         UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'live', attempt_count = 1,
             lease_expires_at = '2999-01-01T00:00:00.000Z' WHERE content_id = 'q2';
         UPDATE _emdash_media_usage_work SET state = 'retry', attempt_count = 1 WHERE content_id = 'q4';
         UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'dead', attempt_count = 0,
             lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q5';");
    let claim = || {
        let rows = block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", 50)).unwrap();
        let mut ids: Vec<String> = rows.iter().map(|r| r.content_id.clone()).collect();
        ids.sort_unstable();
        (ids, rows.iter().map(|r| r.attempt_count).max())
    };
    assert_eq!(claim(), (vec!["q0".to_owned(), "q3".to_owned()], Some(2)));
    // Only dead first attempts left as group rows: they alone make the group (and its head).
    set("UPDATE _emdash_media_usage_work SET state = 'pending', attempt_count = 0, lease_token = NULL,
             lease_expires_at = NULL WHERE content_id = 'q0';
         DELETE FROM _emdash_media_usage_work WHERE content_id = 'q3';
         UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'dead', attempt_count = 1,
             lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q0';");
    assert_eq!(claim().0, ["q0"]);
    // No group row left: the single job's claim takes one row that was attempted before.
    let (ids, _) = claim();
    assert_eq!(ids.len(), 1);
    assert!(["q1", "q4", "q5"].contains(&ids[0].as_str()), "{ids:?}");
}

#[test]
fn no_claim_takes_a_row_of_a_collection_being_deleted() {
    let api = setup();
    queued(&api, 4, 1);
    let set = |sql: &str| api.db.connection().execute_batch(sql).unwrap();
    // Every kind of claimable row: fresh (q0), a dead first attempt (q1), a dead later attempt
    // (q2), a due retry (q3).
    set("UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'dead', attempt_count = 1,
             lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q1';
         UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'dead', attempt_count = 2,
             lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q2';
         UPDATE _emdash_media_usage_work SET state = 'retry', attempt_count = 1 WHERE content_id = 'q3';
         INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, phase)
             SELECT id, slug, 'work' FROM _emdash_collections WHERE slug = 'posts';");
    let claim = |limit| block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", limit)).unwrap().len();
    assert_eq!(claim(50), 0, "the deletion deletes them");
    set("DELETE FROM _emdash_media_usage_work WHERE content_id IN ('q0', 'q1')");
    assert_eq!(claim(50), 0, "nor a single job");
    // Once the deletion is gone (cancelled), the rows are work again.
    set("DELETE FROM _emdash_media_usage_collection_deletions");
    assert_eq!(claim(50), 1);
}

/// The whole index as text, for comparing end states.
fn index_dump(api: &Api) -> String {
    api.db
        .connection()
        .prepare(
            "SELECT s.content_id || ':' || s.source_variant || ':' || s.source_completeness || ':' ||
                    coalesce((SELECT group_concat(u.field_path || '=' || u.media_id, ',') FROM
                              (SELECT * FROM _emdash_media_usage u WHERE u.source_key = s.source_key
                               AND u.generation = s.current_generation ORDER BY u.field_path) AS u), '')
             FROM _emdash_media_usage_sources s ORDER BY s.source_key",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
        .join("\n")
}

#[test]
fn a_crash_at_any_statement_of_a_group_tick_is_resumed_to_the_same_index() {
    let reference = {
        let api = setup();
        queued(&api, 120, 2);
        default_ticks_until_drained(&api);
        index_dump(&api)
    };
    let reference_ticks = {
        let api = setup();
        queued(&api, 120, 2);
        default_ticks_until_drained(&api)
    };
    let probe = setup();
    queued(&probe, 120, 2);
    let clock = MonotonicClock::default();
    let metered = Metered::new(&probe.db, &clock);
    block_on(tick::run(
        &metered,
        &clock,
        Budget::new(40, 600_000.0),
        &crate::support::policy(),
        tick::Continuation::Off,
        None,
    ));
    let n = metered.usage().statements;
    for k in 1..=n {
        let api = setup();
        queued(&api, 120, 2);
        let faulty = Faulty::new(&api.db, Some(k));
        let clock = MonotonicClock::default();
        block_on(tick::run(
            &Metered::new(&faulty, &clock),
            &clock,
            Budget::new(40, 600_000.0),
            &crate::support::policy(),
            tick::Continuation::Off,
            None,
        ));
        // Leases held by the dead tick expire; later ticks finish the work.
        api.db
            .connection()
            .execute_batch("UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE state = 'leased'")
            .unwrap();
        // The dead tick's groups are claimed again as groups, not row by row.
        let ticks = default_ticks_until_drained(&api);
        assert!(ticks <= reference_ticks + 1, "crash at statement {k}: {ticks} ticks after it");
        assert_eq!(index_dump(&api), reference, "crash at statement {k}");
        assert_eq!(coverage(&api), "complete", "crash at statement {k}");
    }
}
