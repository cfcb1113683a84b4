//! Deleting and updating a collection's field with the usage index kept exact: the DELETE
//! request (one guarded batch: registry row, column renamed out of reach, deletion row,
//! coverage, the jobs under way), the `fields` lane (the walk that removes the field's
//! occurrences, the column drop), coverage and the safe delete meanwhile, every precondition of
//! their guards, crashes and commits reported as failed at every statement, budgets on a large
//! collection; and the PUT of a field.

use futures::executor::block_on;
use media_usage_worker::api::Response;
use media_usage_worker::clock::{FnClock, MonotonicClock};
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::Executor;
use media_usage_worker::lifecycle::deletion::batch::CleanupBatch;
use media_usage_worker::lifecycle::fields::{self, DeleteOutcome, StepOutcome, UpdateOutcome};
use media_usage_worker::model::ident::Ident;
use media_usage_worker::model::state::TickOutcome;
use media_usage_worker::tick::{budget::Budget, lanes::BackgroundPolicy, report::TickReport};
use serde_json::{json, Value as Json};

use crate::deletion::Hooked;
use crate::support::{
    call_on_body, code, data, exec_sql, forge_lease, now, scalar, steal_leases, text_if_any, tick_once, time_passes,
    used_in, Api, ADMIN, FAR_AHEAD,
};

// ---------------------------------------------------------------------------------------------
// Fixtures.

fn media(api: &Api, key: &str) -> String {
    let r = api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn entry(api: &Api, slug: &str, d: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": d}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

/// The fixture's media: `a` is used only through `hero` (live, and by a trashed entry), `b`
/// through `hero` of one entry and the `gallery` of another, `c` only through a draft's `hero`,
/// `d` only through `body` (its id in text).
struct Site {
    a: String,
    b: String,
    c: String,
    d: String,
}

/// `posts` (title, hero, gallery of images, body), its entries indexed, coverage complete.
fn site(api: &Api) -> Site {
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [
            {"slug": "title", "type": "string"},
            {"slug": "hero", "type": "image"},
            {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]},
            {"slug": "body", "type": "text"}
        ]}),
    ));
    let (a, b, c, d) = (media(api, "a.png"), media(api, "b.png"), media(api, "c.png"), media(api, "d.png"));
    entry(api, "one", json!({"title": "One", "hero": a, "gallery": [{"image": b}], "body": format!("see {d}")}));
    entry(api, "two", json!({"title": "Two", "hero": b}));
    let three = entry(api, "three", json!({"title": "Three", "hero": a}));
    data(&api.put(&format!("/content/posts/{three}"), &json!({"draft": true, "data": {"hero": c}})));
    let gone = entry(api, "gone", json!({"hero": a}));
    data(&api.delete(&format!("/content/posts/{gone}")));
    api.drain();
    assert_eq!(coverage(api), "complete");
    Site { a, b, c, d }
}

/// The collection's coverage as the status reports it.
fn coverage(api: &Api) -> String {
    let s = data(&api.get("/admin/media-usage/status"));
    s["collections"].as_array().unwrap().iter().find(|c| c["collection"] == "posts").unwrap()["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The field deletion rows: (field slug, phase, state).
fn deletions(db: &SqliteExecutor) -> Vec<(String, String, String)> {
    let conn = db.connection();
    let mut stmt = conn
        .prepare(
            "SELECT field_slug, phase, state FROM _emdash_media_usage_field_deletions ORDER BY created_at, field_id",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

/// The content table's columns.
fn columns(db: &SqliteExecutor, table: &str) -> Vec<String> {
    let conn = db.connection();
    let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid")).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

fn deleted_columns(db: &SqliteExecutor) -> Vec<String> {
    columns(db, "ec_posts").into_iter().filter(|c| c.starts_with("_deleted_")).collect()
}

/// The occurrences of `posts` through a field: (field slug, count).
fn occurrences_of(db: &SqliteExecutor, field: &str) -> i64 {
    scalar(
        db,
        &format!(
            "SELECT count(*) FROM _emdash_media_usage u JOIN _emdash_media_usage_sources s ON s.source_key = u.source_key
             WHERE s.collection_slug = 'posts' AND u.field_slug = '{field}'"
        ),
    )
}

fn delete_field(api: &Api, field: &str) -> Response {
    api.call("DELETE", &format!("/schema/collections/posts/fields/{field}"), Some(ADMIN), None)
}

fn put_field(api: &Api, field: &str, body: &Json) -> Response {
    api.put(&format!("/schema/collections/posts/fields/{field}"), body)
}

/// Calls the API on any executor (hooked, faulty, metered), as the admin.
/// What a tick may spend, and how it does the work.
type Tick = (Budget, BackgroundPolicy);

fn default_tick() -> Tick {
    (crate::support::budget(), crate::support::policy())
}

/// A tick of a small budget that walks two occurrences per statement: the walk spans ticks.
fn small_tick() -> Tick {
    (Budget::new(11, 60_000.0), crate::support::policy().with_cleanup(CleanupBatch::Fixed(2)))
}

/// One recorded tick on a clock that stands still, within its budget.
fn tick_with<E: Executor>(exec: &E, (budget, policy): &Tick) -> TickReport {
    let report = tick_once(exec, *budget, policy);
    assert!(report.statements <= budget.max_statements, "a tick issued {} statements", report.statements);
    assert!(report.rows.fits(budget.max_rows), "a tick read and wrote {:?} rows", report.rows);
    report
}

/// Ticks (time passing in between) until no field deletion is left; returns the ticks.
fn tick_until_done(db: &SqliteExecutor, t: &Tick) -> u32 {
    for n in 1..=200 {
        let report = tick_with(db, t);
        assert!(report.error.is_none() || report.count("fieldDeletionFailures") > 0, "{:?}", report.error);
        if deletions(db).is_empty() && report.outcome == TickOutcome::Idle {
            return n;
        }
        time_passes(db);
    }
    panic!("the field deletions did not finish: {:?}", deletions(db));
}

/// The index, as comparable text: each source's key (collection slug, entry slug, variant) and
/// its current occurrences (field path = media key).
fn index(db: &SqliteExecutor) -> Vec<String> {
    let conn = db.connection();
    let mut stmt = conn
        .prepare(
            "SELECT s.collection_slug || '/' || coalesce(s.content_slug, s.content_id) || ':' || s.source_variant || ':' ||
                    s.source_completeness || ':' || coalesce(s.content_title, '') || ':' ||
                    coalesce((SELECT group_concat(x, ',') FROM
                        (SELECT u.field_path || '=' || coalesce(m.storage_key, u.media_id) AS x
                         FROM _emdash_media_usage u LEFT JOIN media m ON m.id = u.media_id
                         WHERE u.source_key = s.source_key AND u.generation = s.current_generation ORDER BY x)), '')
             FROM _emdash_media_usage_sources s ORDER BY 1",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// Asserts the index equals a projection of the content from scratch (every source and
/// occurrence dropped, every collection repaired).
fn assert_index_is_a_projection_from_scratch(api: &Api, what: &str) {
    let before = index(&api.db);
    exec_sql(&api.db, "DELETE FROM _emdash_media_usage; DELETE FROM _emdash_media_usage_sources;");
    let r = api.post("/admin/media-usage/repair", &json!({"scope": "all"}));
    assert_eq!(r.status, 200, "{}", r.body);
    api.drain();
    assert_eq!(index(&api.db), before, "{what}: the index differs from a projection from scratch");
}

// ---------------------------------------------------------------------------------------------
// Deleting a field, end to end.

#[test]
fn deleting_a_field_removes_its_uses_once_the_ticks_have_run_and_keeps_every_other_use() {
    let api = Api::new();
    let m = site(&api);
    let before_hero = occurrences_of(&api.db, "hero");
    assert!(before_hero >= 4, "hero is used live, in a draft and in the trash: {before_hero}");

    let r = delete_field(&api, "hero");
    assert_eq!((r.status, r.body_json()["data"].clone()), (200, json!({"success": true})), "{}", r.body);

    // The field is gone from the API at once; its column is out of reach until a tick drops it.
    let fields: Vec<String> = data(&api.get("/schema/collections/posts"))["item"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fields, ["title", "gallery", "body"]);
    assert!(!columns(&api.db, "ec_posts").contains(&"hero".to_owned()));
    assert_eq!(deleted_columns(&api.db).len(), 1);
    assert_eq!(deletions(&api.db), [("hero".into(), "occurrences".into(), "pending".into())]);
    // Content can no longer name it.
    let r = api.post("/content/posts", &json!({"slug": "late", "data": {"hero": m.a}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);

    // Until the ticks have run: the index still lists the uses, coverage is stale, and the
    // safe delete refuses the media used only through the field.
    assert_eq!(coverage(&api), "stale");
    let (listed, cov) = used_in(&api, &m.a);
    assert_eq!((listed.len(), cov.as_str()), (3, "stale"), "{listed:?}");
    let r = api.delete(&format!("/media/{}", m.a));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()), "{}", r.body);
    let r = api.delete(&format!("/media/{}", m.c));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()), "{}", r.body);

    let ticks = tick_until_done(&api.db, &default_tick());
    assert!(ticks <= 3, "{ticks} ticks");

    // Every use through the field is gone; every other use stays.
    assert_eq!(occurrences_of(&api.db, "hero"), 0);
    assert_eq!(deleted_columns(&api.db), Vec::<String>::new(), "the column is dropped");
    assert_eq!(coverage(&api), "complete");
    for unused in [&m.a, &m.c] {
        assert_eq!(used_in(&api, unused), (vec![], "complete".to_owned()));
    }
    let (listed, _) = used_in(&api, &m.b);
    assert_eq!(listed.len(), 1, "b is still in one's gallery: {listed:?}");
    assert_eq!(listed[0].1, [("gallery[0].image".to_owned(), "image_field".to_owned())]);
    assert_eq!(used_in(&api, &m.d).0.len(), 1, "d is still named by one's body");
    // The safe delete now takes what only the field used, and still refuses what else uses.
    assert_eq!(api.delete(&format!("/media/{}", m.a)).status, 200);
    assert_eq!(api.delete(&format!("/media/{}", m.c)).status, 200);
    let r = api.delete(&format!("/media/{}", m.b));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()), "{}", r.body);
    assert_index_is_a_projection_from_scratch(&api, "after the deletion");
}

#[test]
fn the_safe_delete_refuses_and_coverage_reads_stale_until_the_walk_has_passed_every_entry() {
    let api = Api::new();
    let m = site(&api);
    // Entries after every other in key order (their ids sort last), not using a: the walk goes
    // on after a's last use for more windows than one tick walks.
    for i in 0..12 {
        exec_sql(
            &api.db,
            &format!(
                "INSERT INTO ec_posts (id, slug, gallery) VALUES ('zz{i:02}', 'zz{i:02}', '[{{\"image\":\"{}\"}}]')",
                m.b
            ),
        );
    }
    api.drain();
    assert_eq!(delete_field(&api, "hero").status, 200);
    let mut ticks = 0;
    let mut saw_incomplete = false;
    while !deletions(&api.db).is_empty() {
        let walking = deletions(&api.db)[0].1 == "occurrences";
        if walking {
            assert_eq!(coverage(&api), "stale");
            let r = api.delete(&format!("/media/{}", m.a));
            let refusal = (r.status, code(&r));
            assert!(
                refusal == (409, "MEDIA_IN_USE".into()) || refusal == (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".into()),
                "{}",
                r.body
            );
            saw_incomplete |= refusal.1 == "MEDIA_USAGE_COVERAGE_INCOMPLETE";
        }
        tick_with(&api.db, &small_tick());
        time_passes(&api.db);
        ticks += 1;
        assert!(ticks < 100);
    }
    assert!(ticks >= 3, "the walk spans ticks: {ticks}");
    assert!(saw_incomplete, "a's last use went before the walk had passed every entry");
    assert_eq!(coverage(&api), "complete");
    assert_eq!(api.delete(&format!("/media/{}", m.a)).status, 200);
}

#[test]
fn content_written_while_the_walk_runs_does_not_make_coverage_complete_before_it_ends() {
    let api = Api::new();
    let m = site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    // A content write, projected by its own request: its job succeeds, but a deletion walks.
    entry(&api, "during", json!({"gallery": [{"image": m.d}]}));
    assert_eq!(coverage(&api), "stale");
    assert!(occurrences_of(&api.db, "hero") > 0);
    tick_until_done(&api.db, &default_tick());
    assert_eq!(coverage(&api), "complete");
    assert_eq!(occurrences_of(&api.db, "hero"), 0);
    assert_eq!(used_in(&api, &m.d).0.len(), 2, "one's body and the new entry's gallery");
}

#[test]
fn neither_a_jobs_success_nor_a_repairs_finalisation_completes_coverage_while_a_field_walks() {
    let api = Api::new();
    let m = site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    // No tick runs the fields lane here: the deletion waits (its next attempt far away).
    exec_sql(&api.db, "UPDATE _emdash_media_usage_field_deletions SET next_attempt_at = '2999-01-01T00:00:00.000Z'");
    entry(&api, "during", json!({"gallery": [{"image": m.d}]}));
    api.drain();
    assert_eq!(coverage(&api), "stale", "the work lane's success waits for the walk");
    let r = api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"}));
    assert_eq!(data(&r)["status"], "running", "the run waits at its barrier for the walk");
    api.drain();
    assert_eq!(coverage(&api), "running");
    // Once the deletion is due, the walk ends and the run finalises.
    exec_sql(&api.db, "UPDATE _emdash_media_usage_field_deletions SET next_attempt_at = '2000-01-01T00:00:00.000Z'");
    time_passes(&api.db);
    tick_until_done(&api.db, &default_tick());
    api.drain();
    assert_eq!(coverage(&api), "complete");
    assert_eq!(occurrences_of(&api.db, "hero"), 0);
}

#[test]
fn deleting_a_title_field_has_every_entry_projected_again_for_its_display_title() {
    let api = Api::new();
    site(&api);
    let titles = || {
        text_if_any(&api.db, "SELECT group_concat(content_title, ',') FROM (SELECT content_title FROM _emdash_media_usage_sources WHERE collection_slug = 'posts' AND source_variant = 'columns' ORDER BY content_title)")
    };
    assert_eq!(titles().as_deref(), Some("One,Three,Two,gone"));
    assert_eq!(delete_field(&api, "title").status, 200);
    assert_eq!(
        text_if_any(&api.db, "SELECT rules_version FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'")
            .as_deref(),
        Some("")
    );
    tick_until_done(&api.db, &default_tick());
    api.drain();
    assert_eq!(titles().as_deref(), Some("gone,one,three,two"), "the titles are the slugs now");
    assert_eq!(coverage(&api), "complete");
    assert_index_is_a_projection_from_scratch(&api, "a title field deleted");
}

// ---------------------------------------------------------------------------------------------
// The request's answers.

#[test]
fn an_unknown_field_is_404_a_malformed_one_400_and_only_admins_with_schema_write_may_delete() {
    let api = Api::new();
    site(&api);
    let r = delete_field(&api, "nope");
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()), "{}", r.body);
    let r = delete_field(&api, "Bad-Slug");
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
    let r = api.call("DELETE", "/schema/collections/nope/fields/hero", Some(ADMIN), None);
    assert_eq!((r.status, code(&r)), (404, "COLLECTION_NOT_FOUND".into()), "{}", r.body);
    let editor = api.token("editor", &["schema:read", "schema:write"]);
    let r = api.call("DELETE", "/schema/collections/posts/fields/hero", Some(&editor), None);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()));
    let admin = api.token("admin", &["schema:read"]);
    let r = api.call("DELETE", "/schema/collections/posts/fields/hero", Some(&admin), None);
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".into()));
    assert_eq!(api.call("DELETE", "/schema/collections/posts/fields/hero", None, None).status, 401);
    assert!(deletions(&api.db).is_empty(), "nothing was deleted");
}

#[test]
fn a_retry_answers_200_while_the_deletion_runs_and_404_once_it_is_done() {
    let api = Api::new();
    site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    let r = delete_field(&api, "hero");
    assert_eq!((r.status, r.body_json()["data"].clone()), (200, json!({"success": true})));
    tick_until_done(&api.db, &default_tick());
    assert_eq!(delete_field(&api, "hero").status, 404);
}

#[test]
fn a_field_of_the_same_slug_added_while_the_walk_runs_keeps_its_own_uses() {
    let api = Api::new();
    let m = site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    // Added again at once, and used before any tick ran.
    data(&api.post("/schema/collections/posts/fields", &json!({"slug": "hero", "type": "image"})));
    // (Two writes in the same millisecond as the deletion would be the same instant to it.)
    exec_sql(&api.db, "UPDATE _emdash_media_usage_field_deletions SET created_at = '2000-01-01T00:00:00.000Z'");
    exec_sql(&api.db, "UPDATE _emdash_media_usage SET created_at = '2000-01-01T00:00:00.000Z'");
    let id = entry(&api, "again", json!({"hero": m.d}));
    tick_until_done(&api.db, &default_tick());
    api.drain();
    let (listed, cov) = used_in(&api, &m.d);
    let again = vec![("hero".to_owned(), "image_field".to_owned())];
    assert!(listed.iter().any(|(c, occ)| *c == id && *occ == again), "the new field's use is kept: {listed:?}");
    // The old field's uses are gone; coverage waits for the repair the added field asks for.
    assert_eq!(used_in(&api, &m.a).0, vec![]);
    assert_eq!(cov, "stale");
    assert_eq!(columns(&api.db, "ec_posts").iter().filter(|c| c.as_str() == "hero").count(), 1);
    // That repair finds three's draft naming c through `hero` again (publishing it would).
    let r = api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"}));
    assert_eq!(data(&r)["status"], "complete");
    assert_eq!(used_in(&api, &m.c).0.len(), 1);
    assert_index_is_a_projection_from_scratch(&api, "a field added again");
}

#[test]
fn a_content_write_that_read_the_field_before_its_deletion_stores_nothing_in_it() {
    let api = Api::new();
    let m = site(&api);
    let one = text_if_any(&api.db, "SELECT id FROM ec_posts WHERE slug = 'one'").unwrap();
    // The field goes between the write's read of the collection and its statement.
    let hooked = Hooked::new(&api.db).before("UPDATE \"ec_posts\"", |db| {
        let r = call_on_body(db, "DELETE", "/schema/collections/posts/fields/hero", None);
        assert_eq!(r.status, 200, "{}", r.body);
    });
    let r = call_on_body(&hooked, "PUT", &format!("/content/posts/{one}"), Some(&json!({"data": {"hero": m.d}})));
    hooked.done();
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    let column = deleted_columns(&api.db).pop().unwrap();
    assert_eq!(
        text_if_any(&api.db, &format!("SELECT \"{column}\" FROM ec_posts WHERE id = '{one}'")),
        Some(m.a.clone()),
        "the column still holds what it held"
    );
    tick_until_done(&api.db, &default_tick());
    assert_eq!(used_in(&api, &m.d).0.len(), 1, "only the body names d");
}

#[test]
fn a_projection_that_read_the_field_before_its_deletion_cannot_publish_it() {
    use media_usage_worker::usage::project::{process_next, JobOutcome};
    let api = Api::new();
    let m = site(&api);
    // An entry written behind the API (its job queued, not yet run) using d through the field.
    exec_sql(&api.db, &format!("UPDATE ec_posts SET hero = '{}' WHERE slug = 'two'", m.d));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'pending'"), 1);
    // The field goes between the job's load and its publish.
    let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", |db| {
        let r = call_on_body(db, "DELETE", "/schema/collections/posts/fields/hero", None);
        assert_eq!(r.status, 200, "{}", r.body);
    });
    let outcome = now(process_next(&hooked, None, &api.config.background.projection)).unwrap();
    hooked.done();
    assert_eq!(outcome, Some(JobOutcome::Conflict));
    assert_eq!(used_in(&api, &m.d).0.len(), 1, "only one's body: the job published nothing");
    tick_until_done(&api.db, &default_tick());
    api.drain();
    assert_eq!(used_in(&api, &m.d).0.len(), 1);
    assert_eq!(used_in(&api, &m.b).0.len(), 1, "two's use of b went with the field");
    assert_index_is_a_projection_from_scratch(&api, "a job raced");
}

#[test]
fn an_entry_too_large_to_index_is_queued_again_and_its_media_free_once_the_field_is_gone() {
    let api = Api::new();
    let m = site(&api);
    // (Its data, behind the API: its only reference is through the field.)
    exec_sql(&api.db, &format!("INSERT INTO ec_posts (id, slug, hero) VALUES ('big', 'big', '{}')", m.c));
    exec_sql(&api.db, "DELETE FROM _emdash_media_usage_work WHERE content_id = 'big'");
    api.entry_too_large_using(&[&m.c]);
    let r = api.delete(&format!("/media/{}", m.c));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()));
    assert_eq!(delete_field(&api, "hero").status, 200);
    assert_eq!(
        text_if_any(&api.db, "SELECT state FROM _emdash_media_usage_work WHERE content_id = 'big'").as_deref(),
        Some("pending")
    );
    tick_until_done(&api.db, &default_tick());
    api.drain();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(api.delete(&format!("/media/{}", m.c)).status, 200);
}

// ---------------------------------------------------------------------------------------------
// The column.

#[test]
fn a_column_with_an_index_on_it_is_deleted_with_its_index() {
    let api = Api::new();
    let m = site(&api);
    exec_sql(
        &api.db,
        "CREATE INDEX idx_posts_hero ON ec_posts (hero); CREATE INDEX idx_posts_hero_title ON ec_posts (title, hero)",
    );
    assert_eq!(delete_field(&api, "hero").status, 200);
    let named = |db: &SqliteExecutor| {
        scalar(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('idx_posts_hero', 'idx_posts_hero_title')")
    };
    assert_eq!(named(&api.db), 2, "renamed with the column, still there");
    tick_until_done(&api.db, &default_tick());
    assert_eq!(named(&api.db), 0);
    assert_eq!(deleted_columns(&api.db), Vec::<String>::new());
    assert_eq!(used_in(&api, &m.a).0, vec![]);
    // The other indexes of the table are left alone.
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ec_posts' AND name LIKE 'idx_ec_posts_%'"), 5);
}

#[test]
fn a_column_that_cannot_be_dropped_is_retried_then_failed_and_an_operators_repair_finishes_it() {
    let api = Api::new();
    site(&api);
    // An index on the column whose name is no identifier: the lane does not name it, so the
    // column cannot be dropped while it stands.
    exec_sql(&api.db, "CREATE INDEX \"Posts By Hero\" ON ec_posts (hero)");
    assert_eq!(delete_field(&api, "hero").status, 200);
    // The occurrences go; the column's drop fails and is retried, then fails for good, visibly;
    // coverage is complete meanwhile (the index is exact).
    for _ in 0..10 {
        tick_with(&api.db, &default_tick());
        time_passes(&api.db);
    }
    assert_eq!(deletions(&api.db), [("hero".into(), "column".into(), "failed".into())]);
    assert_eq!(
        text_if_any(&api.db, "SELECT last_error_code FROM _emdash_media_usage_field_deletions").as_deref(),
        Some("MEDIA_USAGE_FIELD_DELETION_FAILED")
    );
    assert_eq!(coverage(&api), "complete");
    let status = data(&api.get("/admin/media-usage/status"));
    assert_eq!(status["fieldDeletions"][0]["state"], "failed");
    assert_eq!(status["fieldDeletions"][0]["field"], "hero");
    assert_eq!(deleted_columns(&api.db).len(), 1);
    // The operator removes the index and repairs the collection: the drop runs again.
    exec_sql(&api.db, "DROP INDEX \"Posts By Hero\"");
    let r = api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"}));
    assert_eq!(r.status, 200, "{}", r.body);
    tick_until_done(&api.db, &default_tick());
    assert_eq!(deleted_columns(&api.db), Vec::<String>::new());
    assert!(data(&api.get("/admin/media-usage/status"))["fieldDeletions"].as_array().unwrap().is_empty());
}

#[test]
fn a_collection_deleted_while_a_field_deletion_waits_ends_it() {
    let api = Api::new();
    site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
    tick_until_done(&api.db, &default_tick());
    for _ in 0..20 {
        tick_with(&api.db, &default_tick());
        time_passes(&api.db);
    }
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_collection_deletions"), 0);
}

// ---------------------------------------------------------------------------------------------
// Every precondition of the request's guard.

/// Deletes `posts`'s `hero` with the collection as read now, after `behind` changed the
/// database behind the request's back (as a concurrent writer would between its read and its
/// batch).
fn delete_after(api: &Api, behind: &str) -> DeleteOutcome {
    let c =
        block_on(media_usage_worker::repo::schema::find(&api.db, &Ident::parse("posts").unwrap())).unwrap().unwrap();
    exec_sql(&api.db, behind);
    let hero = Ident::parse("hero").unwrap();
    block_on(fields::delete(&api.db, &c, &hero, CleanupBatch::Fixed(50))).unwrap()
}

#[test]
fn the_delete_guard_refuses_a_field_or_a_capture_that_changed_since_the_read() {
    let cases: &[(&str, &str, DeleteOutcome)] = &[
        // Deleted and added again (a new id): the new field is not the one read.
        ("field id", "UPDATE _emdash_fields SET id = 'new-id' WHERE slug = 'hero'", DeleteOutcome::Conflict),
        // (Behind the API) another slug, or another collection's, under the id read.
        ("field slug", "UPDATE _emdash_fields SET slug = 'heroine' WHERE slug = 'hero'", DeleteOutcome::NotFound),
        (
            "field collection",
            "UPDATE _emdash_fields SET collection_id = (SELECT id FROM _emdash_collections WHERE slug = 'pages') WHERE slug = 'hero'",
            DeleteOutcome::NotFound,
        ),
        // Not actively captured (a collection deletion fenced it), or not under this slug.
        ("capture state", "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'", DeleteOutcome::CaptureInactive),
        ("capture slug", "UPDATE _emdash_media_usage_index_status SET scope_key = 'elsewhere' WHERE scope_key = 'posts'", DeleteOutcome::CaptureInactive),
        (
            "capture collection",
            "UPDATE _emdash_media_usage_index_status SET collection_id = 'other' WHERE scope_key = 'posts'",
            DeleteOutcome::CaptureInactive,
        ),
    ];
    for (what, behind, expected) in cases {
        let api = Api::new();
        site(&api);
        data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
        let before = columns(&api.db, "ec_posts");
        assert_eq!(&delete_after(&api, behind), expected, "{what}");
        assert!(deletions(&api.db).is_empty(), "{what}: nothing changed");
        assert_eq!(columns(&api.db, "ec_posts"), before, "{what}: the column is where it was");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_fields"), 4, "{what}: no field row went");
    }
    // And with nothing changed, it goes.
    let api = Api::new();
    site(&api);
    assert_eq!(delete_after(&api, "SELECT 1"), DeleteOutcome::Deleted);
}

// ---------------------------------------------------------------------------------------------
// The lane's statements: each under the live lease, each precondition tested.

/// The lane's single step on `db` without a rows budget (a clock that stands still).
fn lane_step(db: &SqliteExecutor, batch: u32, held: &mut Option<fields::Held>) -> Option<StepOutcome> {
    block_on(fields::step(db, &FnClock(|| 0.0), CleanupBatch::Fixed(batch), held)).unwrap()
}

/// Occurrences of `field` under keys outside the collection `posts`'s range, on both sides
/// (a collection whose id sorts before it, and one after), written behind the API.
fn foreign_occurrences(db: &SqliteExecutor, field: &str) {
    exec_sql(
        db,
        &format!(
            "INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id)
             VALUES ('f1', 'content:0:e:columns', 'g', '{field}', '{field}', 'image_field', 'm', 'm'),
                    ('f2', 'content:~:e:columns', 'g', '{field}', '{field}', 'image_field', 'm', 'm')"
        ),
    );
}

#[test]
fn the_walk_deletes_the_fields_occurrences_of_its_collection_only() {
    let api = Api::new();
    site(&api);
    foreign_occurrences(&api.db, "hero");
    assert_eq!(delete_field(&api, "hero").status, 200);
    let mut held = None;
    // One occurrence per window: the windows' bounds are what keeps the rest.
    let mut walked = 0;
    while deletions(&api.db).first().is_some_and(|d| d.1 == "occurrences") {
        assert!(walked < 100, "the walk does not end");
        match lane_step(&api.db, 1, &mut held) {
            Some(StepOutcome::Walked { .. }) => walked += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(walked >= 5, "{walked} windows");
    assert_eq!(occurrences_of(&api.db, "hero"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE id IN ('f1', 'f2')"), 2);
    assert!(occurrences_of(&api.db, "gallery") > 0 && occurrences_of(&api.db, "body") > 0);
}

/// Claims the field deletion (a first step that walks nothing: a window of one occurrence).
fn claimed(api: &Api) -> Option<fields::Held> {
    let mut held = None;
    assert!(matches!(lane_step(&api.db, 1, &mut held), Some(StepOutcome::Walked { .. })));
    assert!(held.is_some());
    held
}

#[test]
fn a_holder_whose_lease_is_lost_changes_nothing() {
    let ways: &[(&str, &str)] = &[
        ("expired", "UPDATE _emdash_media_usage_field_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z'"),
        ("taken over", "UPDATE _emdash_media_usage_field_deletions SET lease_token = 'someone-else'"),
        (
            "moved on",
            "UPDATE _emdash_media_usage_field_deletions SET phase = 'column', cursor_key = NULL, cursor_id = NULL",
        ),
    ];
    for (what, lose) in ways {
        let api = Api::new();
        site(&api);
        assert_eq!(delete_field(&api, "hero").status, 200);
        // Only the field's occurrences are left (behind the API), so every window holds one.
        exec_sql(&api.db, "DELETE FROM _emdash_media_usage WHERE field_slug <> 'hero'");
        let mut held = claimed(&api);
        let left = occurrences_of(&api.db, "hero");
        let fingerprints =
            scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources WHERE source_fingerprint IS NULL");
        let row = text_if_any(&api.db, "SELECT cursor_key || cursor_id FROM _emdash_media_usage_field_deletions");
        exec_sql(&api.db, lose);
        let outcome = lane_step(&api.db, 100, &mut held);
        // (Moved on under its own token, as a checkpoint that committed unseen leaves it: the
        // holder records a failed attempt, which backs off.)
        let lost = matches!(outcome, Some(StepOutcome::LeaseLost))
            || (*what == "moved on" && matches!(outcome, Some(StepOutcome::Failed { terminal: false, .. })));
        assert!(lost, "{what}: {outcome:?}");
        assert!(held.is_none(), "{what}");
        assert_eq!(occurrences_of(&api.db, "hero"), left, "{what}: no occurrence went");
        assert_eq!(
            scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources WHERE source_fingerprint IS NULL"),
            fingerprints,
            "{what}: no fingerprint was cleared"
        );
        if *what != "moved on" {
            assert_eq!(
                text_if_any(&api.db, "SELECT cursor_key || cursor_id FROM _emdash_media_usage_field_deletions"),
                row,
                "{what}"
            );
        }
        assert_eq!(coverage(&api), "stale", "{what}");
    }
}

#[test]
fn the_column_goes_only_under_a_live_lease_at_column_and_the_row_only_once_the_column_is_gone() {
    let api = Api::new();
    site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    let mut held = None;
    for _ in 0..100 {
        if deletions(&api.db)[0].1 != "occurrences" {
            break;
        }
        lane_step(&api.db, 100, &mut held);
    }
    assert_eq!(deletions(&api.db)[0].1, "column", "the walk ended");
    assert!(held.is_some(), "held at column");
    // Another holder took it over: the drop changes nothing.
    steal_leases(&api, "_emdash_media_usage_field_deletions", "TRUE", "someone-else");
    assert!(matches!(lane_step(&api.db, 100, &mut held), Some(StepOutcome::LeaseLost)));
    assert_eq!(deleted_columns(&api.db).len(), 1);
    // The finalisation requires the column gone: with it still there it changes nothing.
    time_passes(&api.db);
    let mut held = None;
    let token = "probe";
    forge_lease(&api, "_emdash_media_usage_field_deletions", "TRUE", token, FAR_AHEAD);
    let row: media_usage_worker::repo::field_deletion::FieldDeletion = block_on(
        api.db
            .query_first(media_usage_worker::exec::Statement::new("SELECT * FROM _emdash_media_usage_field_deletions")),
    )
    .unwrap()
    .unwrap();
    let lease = media_usage_worker::repo::field_deletion::Lease::of(&row).unwrap();
    assert!(!block_on(media_usage_worker::repo::field_deletion::finalize(&api.db, &lease)).unwrap());
    assert_eq!(deletions(&api.db).len(), 1);
    // Its holder goes on: the column and then the row go.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_field_deletions SET state = 'pending', lease_token = NULL, lease_expires_at = NULL",
    );
    assert_eq!(lane_step(&api.db, 100, &mut held), Some(StepOutcome::Finalized));
    assert!(deletions(&api.db).is_empty() && deleted_columns(&api.db).is_empty());
}

#[test]
fn the_end_of_the_walk_completes_coverage_only_when_nothing_else_keeps_it_stale() {
    // What keeps it from complete, each set up behind the API before the walk's last window.
    let cases: &[(&str, &str, &str)] = &[
        ("queued work", "UPDATE ec_posts SET title = 'edited' WHERE slug = 'one'", "stale"),
        (
            "a failed source",
            "UPDATE _emdash_media_usage_sources SET source_completeness = 'failed' WHERE content_slug = 'two'",
            "stale",
        ),
        (
            "a reconciliation pending",
            "UPDATE _emdash_media_usage_index_status SET reconciliation_required = 1",
            "stale",
        ),
        ("another field walking", "", "stale"),
        ("failed coverage", "UPDATE _emdash_media_usage_index_status SET status = 'failed'", "failed"),
        ("capture not active", "UPDATE _emdash_media_usage_index_status SET capture_state = 'ready'", "stale"),
        ("nothing", "SELECT 1", "complete"),
    ];
    for (what, setup, expected) in cases {
        let api = Api::new();
        site(&api);
        assert_eq!(delete_field(&api, "hero").status, 200);
        if setup.is_empty() {
            assert_eq!(delete_field(&api, "body").status, 200);
            // Only hero's deletion is due.
            exec_sql(&api.db, "UPDATE _emdash_media_usage_field_deletions SET next_attempt_at = '2999-01-01T00:00:00.000Z' WHERE field_slug = 'body'");
        } else {
            exec_sql(&api.db, setup);
        }
        let mut held = None;
        for _ in 0..100 {
            if !deletions(&api.db).iter().any(|d| d.0 == "hero" && d.1 == "occurrences") {
                break;
            }
            lane_step(&api.db, 100, &mut held);
        }
        assert!(!deletions(&api.db).iter().any(|d| d.0 == "hero" && d.1 == "occurrences"), "{what}: the walk ended");
        let stored =
            text_if_any(&api.db, "SELECT status FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'")
                .unwrap();
        assert_eq!(stored, *expected, "{what}");
    }
}

// ---------------------------------------------------------------------------------------------
// Crashes, and commits reported as failed, at every statement.

/// Everything the deletion may change, as text: the schema, the content table's columns (a
/// deleted column by its kind, its name being random) and rows, the index, coverage, queues.
fn end_state(api: &Api) -> String {
    let rows = |sql: &str| -> Vec<String> {
        let conn = api.db.connection();
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join("|")))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let cols: Vec<String> = columns(&api.db, "ec_posts")
        .into_iter()
        .map(|c| if c.starts_with("_deleted_") { "<deleted>".into() } else { c })
        .collect();
    let named: Vec<String> = columns(&api.db, "ec_posts").into_iter().filter(|c| !c.starts_with("_deleted_")).collect();
    let content = rows(&format!(
        "SELECT {} FROM ec_posts ORDER BY slug",
        named
            .iter()
            .filter(|c| !["version", "updated_at", "created_at", "published_at"].contains(&c.as_str()))
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    ));
    json!({
        "fields": rows("SELECT slug, type FROM _emdash_fields ORDER BY sort_order"),
        "columns": cols,
        "content": content,
        "index": index(&api.db),
        "coverage": rows("SELECT scope_key, status, reconciliation_required, rules_version FROM _emdash_media_usage_index_status ORDER BY 1"),
        "queues": rows("SELECT (SELECT count(*) FROM _emdash_media_usage_work), (SELECT count(*) FROM _emdash_media_usage_field_deletions), (SELECT count(*) FROM _emdash_batch_guard)"),
        "indexes": rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ec_posts' ORDER BY name"),
    })
    .to_string()
}

/// Right after a request, whatever it met: the field is fully there (registered, its column
/// named by it, no deletion row) or fully deleted (not registered, its column renamed, its
/// deletion row due) — never half.
fn assert_not_half_deleted(api: &Api, what: &str) {
    let registered = scalar(&api.db, "SELECT count(*) FROM _emdash_fields WHERE slug = 'hero'");
    let named = columns(&api.db, "ec_posts").contains(&"hero".to_owned());
    let renamed = deleted_columns(&api.db).len();
    let rows = deletions(&api.db).len();
    assert!(
        (registered, named, renamed, rows) == (1, true, 0, 0) || (registered, named, renamed, rows) == (0, false, 1, 1),
        "{what}: registered {registered}, named {named}, renamed {renamed}, deletion rows {rows}"
    );
}

/// The fixture of the crash tests, built once and copied for every run.
fn crash_fixture() -> Api {
    let api = Api::new();
    site(&api);
    // Enough occurrences after every entry that the walk spans several windows and ticks.
    for i in 0..6 {
        entry(&api, &format!("more{i}"), json!({"hero": "nothing", "gallery": [{"image": "nothing"}]}));
    }
    api.drain();
    api
}

#[test]
fn a_crash_or_a_commit_reported_as_failed_at_any_statement_of_the_request_converges_after_the_retry() {
    let fixture = crash_fixture();
    let probe = fixture.snapshot();
    let metered = Metered::new(&probe.db, MonotonicClock::default());
    assert_eq!(call_on_body(&metered, "DELETE", "/schema/collections/posts/fields/hero", None).status, 200);
    let n = metered.usage().statements;
    assert!(n >= 8, "the request issued {n} statements");
    tick_until_done(&probe.db, &default_tick());
    let expected = end_state(&probe);
    let mut retried = 0;
    for commit_unknown in [false, true] {
        for k in 1..=n {
            let what = format!("statement {k} of {n} {}", if commit_unknown { "commit-unknown" } else { "crashed" });
            let api = fixture.snapshot();
            let r = if commit_unknown {
                call_on_body(
                    &Faulty::commit_unknown(&api.db, k),
                    "DELETE",
                    "/schema/collections/posts/fields/hero",
                    None,
                )
            } else {
                call_on_body(&Faulty::new(&api.db, Some(k)), "DELETE", "/schema/collections/posts/fields/hero", None)
            };
            assert_not_half_deleted(&api, &what);
            if r.status >= 500 {
                assert!(!r.body.contains("injected"), "{what}: a 500 never carries its cause");
                // The client retries: the first try's deletion, or a new one.
                let retry = delete_field(&api, "hero");
                assert_eq!(retry.status, 200, "{what}: {}", retry.body);
                retried += 1;
            } else {
                assert_eq!(r.status, 200, "{what}: {}", r.body);
            }
            assert_not_half_deleted(&api, &what);
            time_passes(&api.db);
            tick_until_done(&api.db, &default_tick());
            assert_eq!(end_state(&api), expected, "{what}");
        }
    }
    assert!(retried >= 4, "{retried} retried");
}

#[test]
fn a_crash_or_a_commit_reported_as_failed_at_any_statement_of_any_tick_converges_in_the_next_ticks() {
    let fixture = crash_fixture();
    // The uninterrupted run, on a small tick: statements per tick.
    let probe = fixture.snapshot();
    assert_eq!(delete_field(&probe, "hero").status, 200);
    let mut per_tick = Vec::new();
    while !deletions(&probe.db).is_empty() {
        let metered = Metered::new(&probe.db, FnClock(|| 0.0));
        tick_with(&metered, &small_tick());
        per_tick.push(metered.usage().statements);
        time_passes(&probe.db);
        assert!(per_tick.len() < 60);
    }
    tick_until_done(&probe.db, &default_tick());
    let expected = end_state(&probe);
    assert!(per_tick.len() >= 3, "the deletion spans ticks: {per_tick:?}");
    let mut runs = 0;
    for (i, n) in per_tick.iter().enumerate() {
        for k in 1..=*n {
            for commit_unknown in [false, true] {
                let what = format!(
                    "tick {i}, statement {k} of {n} {}",
                    if commit_unknown { "commit-unknown" } else { "crashed" }
                );
                let api = fixture.snapshot();
                assert_eq!(delete_field(&api, "hero").status, 200);
                for _ in 0..i {
                    tick_with(&api.db, &small_tick());
                    time_passes(&api.db);
                }
                if commit_unknown {
                    tick_with(&Faulty::commit_unknown(&api.db, k), &small_tick());
                } else {
                    tick_with(&Faulty::new(&api.db, Some(k)), &small_tick());
                }
                // While the occurrences are not all gone, coverage is never complete.
                if deletions(&api.db).iter().any(|d| d.1 == "occurrences") {
                    assert_eq!(coverage(&api), "stale", "{what}");
                }
                time_passes(&api.db);
                tick_until_done(&api.db, &default_tick());
                assert_eq!(end_state(&api), expected, "{what}");
                runs += 1;
            }
        }
    }
    assert!(runs >= 40, "{runs} runs over {per_tick:?}");
}

// ---------------------------------------------------------------------------------------------
// Budgets.

/// A collection `posts` (hero, gallery) of `n` entries, each with a live source of three
/// occurrences (one through hero, two through gallery), as an import would leave them, written
/// in a few set-based statements; coverage complete.
fn big_collection(api: &Api, n: usize) -> String {
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [
            {"slug": "hero", "type": "image"},
            {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}
        ]}),
    ));
    let id = text_if_any(&api.db, "SELECT id FROM _emdash_collections WHERE slug = 'posts'").unwrap();
    exec_sql(
        &api.db,
        &format!(
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {n})
             INSERT INTO ec_posts (id, slug, hero, gallery) SELECT printf('e%07d', i), printf('s%07d', i), 'm', '[]' FROM seq;
             DELETE FROM _emdash_media_usage_work;
             INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, current_generation, identity_version, source_completeness, source_fingerprint)
               SELECT 'content:{id}:' || id || ':columns', '{id}', 'posts', id, 'columns', 'g', 1, 'complete', 'f' FROM ec_posts;
             WITH k(n, f) AS (VALUES (0, 'hero'), (1, 'gallery'), (2, 'gallery'))
             INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id, created_at)
               SELECT s.content_id || '-' || k.n, s.source_key, 'g', k.f, k.f || k.n, 'image_field', 'm', 'm', '2000-01-01T00:00:00.000Z'
               FROM _emdash_media_usage_sources AS s, k;
             UPDATE _emdash_media_usage_index_status SET status = 'complete' WHERE scope_key = 'posts';"
        ),
    );
    id
}

#[test]
fn a_field_of_a_collection_of_100000_entries_is_deleted_within_every_ticks_budget() {
    let api = Api::new();
    big_collection(&api, 100_000);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 300_000);
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let r = call_on_body(&metered, "DELETE", "/schema/collections/posts/fields/hero", None);
    assert_eq!(r.status, 200, "{}", r.body);
    // The request reads and writes a bounded number of rows whatever the collection holds.
    let usage = metered.usage();
    assert!(usage.rows_read < 1_000 && usage.rows_written < 200, "the request: {usage:?}");
    // 100,000 occurrences to delete (each with its source's fingerprint), 300,000 to walk past,
    // and a table of 100,000 rows to rewrite without the column, at the default budgets (the
    // daily budget lifted, so ticks measure throughput).
    let t = (crate::support::budget().with_daily_rows_written(0), crate::support::policy());
    let mut ticks = Vec::new();
    while !deletions(&api.db).is_empty() {
        let report = tick_with(&api.db, &t);
        assert!(report.error.is_none(), "{:?}", report.error);
        ticks.push((report.statements, report.rows, report.count("fieldOccurrencesDeleted")));
        assert!(ticks.len() <= 10, "more than 10 ticks: {ticks:?}");
    }
    // The walk writes one row per occurrence of the field, so its ticks are full ones (all but
    // its first, which shares the tick with the other lanes' turns, and its last).
    let walking: Vec<_> = ticks.iter().filter(|t| t.2 > 0).collect();
    assert!(walking.len() > 2 && walking[1..walking.len() - 1].iter().all(|t| t.1.written >= 7_000), "{ticks:?}");
    assert_eq!(occurrences_of(&api.db, "hero"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE field_slug = 'gallery'"), 200_000);
    assert_eq!(deleted_columns(&api.db), Vec::<String>::new());
    assert_eq!(coverage(&api), "complete");
}

// ---------------------------------------------------------------------------------------------
// Updating a field.

#[test]
fn a_label_required_sort_order_or_options_change_needs_no_projection() {
    let api = Api::new();
    site(&api);
    let epoch =
        || scalar(&api.db, "SELECT change_epoch FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'");
    let before = epoch();
    let r = put_field(
        &api,
        "hero",
        &json!({"label": "Hero image", "required": true, "sortOrder": 7, "options": {"aspect": "16:9"}}),
    );
    let item = data(&r)["item"].clone();
    assert_eq!(
        (item["label"].clone(), item["required"].clone(), item["sortOrder"].clone()),
        (json!("Hero image"), json!(true), json!(7))
    );
    assert_eq!(item["options"], json!({"aspect": "16:9"}));
    assert_eq!(item["type"], "image");
    assert!(item["updatedAt"].as_str().is_some_and(|u| u >= item["createdAt"].as_str().unwrap()));
    assert_eq!(coverage(&api), "complete");
    assert_eq!(epoch(), before, "coverage untouched");
    // As stored: the collection shows it.
    let fields = data(&api.get("/schema/collections/posts"))["item"]["fields"].clone();
    let hero = fields.as_array().unwrap().iter().find(|f| f["slug"] == "hero").unwrap().clone();
    assert_eq!(hero, item);
    // The required flag applies to new entries.
    let r = api.post("/content/posts", &json!({"slug": "new", "data": {}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
}

#[test]
fn a_type_change_within_emdashs_column_type_makes_coverage_stale_and_every_entry_is_projected_again() {
    let api = Api::new();
    let m = site(&api);
    // `body` (text) holds d's id in one entry, and names it in a sentence in another: ids in
    // text. As a `file` field, a value that is an id is the file; a sentence is no file.
    let only = entry(&api, "only", json!({"body": m.d}));
    let kinds = |api: &Api| {
        let mut k: Vec<(String, String)> = used_in(api, &m.d).0.into_iter().flat_map(|(_, occ)| occ).collect();
        k.sort();
        k
    };
    assert_eq!(
        kinds(&api),
        [("body".to_owned(), "embedded_id".to_owned()), ("body".to_owned(), "embedded_id".to_owned())]
    );
    let r = put_field(&api, "body", &json!({"type": "file"}));
    assert_eq!(data(&r)["item"]["type"], "file", "{}", r.body);
    assert_eq!(coverage(&api), "stale");
    // Until every entry is projected again, nothing is provably unused.
    let unused = media(&api, "unused.png");
    let r = api.delete(&format!("/media/{unused}"));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".into()));
    api.drain();
    assert_eq!(coverage(&api), "complete");
    assert_eq!(api.delete(&format!("/media/{unused}")).status, 200);
    assert_eq!(kinds(&api), [("body".to_owned(), "file_field".to_owned())]);
    assert_eq!(used_in(&api, &m.d).0[0].0, only);
    // A repeater gains a file sub-field: its values are read as files from then on.
    let r = put_field(
        &api,
        "gallery",
        &json!({"validation": {"subFields": [{"slug": "image", "type": "image"}, {"slug": "doc", "type": "file"}]}}),
    );
    assert_eq!(data(&r)["item"]["subFields"].as_array().unwrap().len(), 2, "{}", r.body);
    assert_eq!(data(&r)["item"]["validation"]["subFields"][1]["slug"], "doc");
    assert_eq!(coverage(&api), "stale");
    api.drain();
    assert_eq!(coverage(&api), "complete");
    assert_index_is_a_projection_from_scratch(&api, "after type changes");
}

#[test]
fn a_type_change_across_column_types_is_refused_as_emdash_refuses_it() {
    let api = Api::new();
    site(&api);
    for (field, to) in [("body", "portableText"), ("hero", "number"), ("gallery", "string"), ("title", "boolean")] {
        let r = put_field(&api, field, &json!({"type": to}));
        assert_eq!((r.status, code(&r)), (400, "FIELD_TYPE_COLUMN_CHANGE".into()), "{field} -> {to}: {}", r.body);
    }
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn an_update_body_is_strict() {
    let api = Api::new();
    site(&api);
    let bad = [
        json!({"slug": "renamed"}),
        json!({"unique": true}),
        json!({"label": ""}),
        json!({"type": "video"}),
        json!({"required": "yes"}),
        json!({"sortOrder": -1}),
        json!({"options": null}),
        json!({"options": [1]}),
        json!({"validation": {"min": 1}}),
        json!({"validation": {"subFields": [{"slug": "x", "type": "repeater"}]}}),
        json!({"validation": "x"}),
        json!([]),
    ];
    for body in bad {
        let r = put_field(&api, "gallery", &body);
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{body}: {}", r.body);
    }
    let r = put_field(&api, "hero", &json!({"validation": {"subFields": [{"slug": "x", "type": "image"}]}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "sub-fields only on repeaters: {}", r.body);
    let r = put_field(&api, "hero", &json!({"options": {"big": "x".repeat(20_000)}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
    let r = put_field(&api, "nope", &json!({"label": "x"}));
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()));
    let editor = api.token("editor", &["schema:read", "schema:write"]);
    let r = api.call("PUT", "/schema/collections/posts/fields/hero", Some(&editor), Some(br#"{"label":"x"}"#));
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()));
}

/// Updates `posts`'s `hero` to `label` with the field as read now, after `behind` changed the
/// database behind the request's back.
fn update_after(api: &Api, behind: &str) -> UpdateOutcome {
    let c =
        block_on(media_usage_worker::repo::schema::find(&api.db, &Ident::parse("posts").unwrap())).unwrap().unwrap();
    let read = c.field("hero").unwrap().clone();
    let mut updated = read.clone();
    updated.label = "New".into();
    exec_sql(&api.db, behind);
    block_on(fields::update(&api.db, &c, &read, &updated)).unwrap()
}

#[test]
fn the_update_guard_refuses_a_field_or_a_capture_that_changed_since_the_read() {
    let cases: &[(&str, &str, UpdateOutcome)] = &[
        ("id", "UPDATE _emdash_fields SET id = 'new-id' WHERE slug = 'hero'", UpdateOutcome::Conflict),
        (
            "collection",
            "UPDATE _emdash_fields SET collection_id = 'other' WHERE slug = 'hero'",
            UpdateOutcome::Conflict,
        ),
        ("slug", "UPDATE _emdash_fields SET slug = 'heroine' WHERE slug = 'hero'", UpdateOutcome::Conflict),
        ("label", "UPDATE _emdash_fields SET label = 'Theirs' WHERE slug = 'hero'", UpdateOutcome::Conflict),
        ("type", "UPDATE _emdash_fields SET type = 'file' WHERE slug = 'hero'", UpdateOutcome::Conflict),
        ("required", "UPDATE _emdash_fields SET required = 1 WHERE slug = 'hero'", UpdateOutcome::Conflict),
        ("validation", "UPDATE _emdash_fields SET validation = '{}' WHERE slug = 'hero'", UpdateOutcome::Conflict),
        ("options", "UPDATE _emdash_fields SET options = '{}' WHERE slug = 'hero'", UpdateOutcome::Conflict),
        ("sort order", "UPDATE _emdash_fields SET sort_order = 9 WHERE slug = 'hero'", UpdateOutcome::Conflict),
        (
            "capture state",
            "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting'",
            UpdateOutcome::CaptureInactive,
        ),
        (
            "capture slug",
            "UPDATE _emdash_media_usage_index_status SET scope_key = 'elsewhere'",
            UpdateOutcome::CaptureInactive,
        ),
        (
            "capture collection",
            "UPDATE _emdash_media_usage_index_status SET collection_id = 'other'",
            UpdateOutcome::CaptureInactive,
        ),
    ];
    for (what, behind, expected) in cases {
        let api = Api::new();
        site(&api);
        exec_sql(&api.db, "PRAGMA foreign_keys = OFF");
        assert_eq!(&update_after(&api, behind), expected, "{what}");
        assert_eq!(
            scalar(&api.db, "SELECT count(*) FROM _emdash_fields WHERE label = 'New'"),
            0,
            "{what}: nothing written"
        );
    }
    let api = Api::new();
    site(&api);
    assert_eq!(update_after(&api, "SELECT 1"), UpdateOutcome::Updated { reprojected: false });
}

#[test]
fn a_type_change_of_a_title_field_or_a_repeaters_media_sub_fields_asks_for_a_projection_and_a_label_does_not() {
    let api = Api::new();
    site(&api);
    let c =
        block_on(media_usage_worker::repo::schema::find(&api.db, &Ident::parse("posts").unwrap())).unwrap().unwrap();
    let field = |slug: &str| c.field(slug).unwrap().clone();
    let with = |slug: &str, f: &dyn Fn(&mut media_usage_worker::model::field::Field)| {
        let mut u = field(slug);
        f(&mut u);
        fields::changes_extraction(&field(slug), &u)
    };
    use media_usage_worker::model::field::{FieldType, SubField};
    assert!(!with("hero", &|u| u.label = "x".into()));
    assert!(!with("hero", &|u| u.required = true));
    assert!(with("hero", &|u| u.field_type = FieldType::File));
    assert!(with("body", &|u| u.field_type = FieldType::Image));
    assert!(!with("body", &|u| u.field_type = FieldType::String), "text to string reads the same");
    assert!(with("title", &|u| u.field_type = FieldType::Text), "the title is read from it");
    assert!(with("gallery", &|u| u
        .sub_fields
        .push(SubField { slug: Ident::parse("doc").unwrap(), field_type: FieldType::File })));
    assert!(!with("gallery", &|u| u
        .sub_fields
        .push(SubField { slug: Ident::parse("n").unwrap(), field_type: FieldType::Number })));
}

/// The deletion row as a lease held by `token` at `phase`, live or `expired`.
fn lease_at(api: &Api, phase: &str, token: &str, expired: bool) -> media_usage_worker::repo::field_deletion::Lease {
    let expiry = if expired { "2000-01-01T00:00:00.000Z" } else { "2999-01-01T00:00:00.000Z" };
    exec_sql(
        &api.db,
        &format!(
            "UPDATE _emdash_media_usage_field_deletions SET state = 'leased', phase = '{phase}', cursor_key = NULL, cursor_id = NULL,
                    lease_token = '{token}', lease_expires_at = '{expiry}'"
        ),
    );
    let row: media_usage_worker::repo::field_deletion::FieldDeletion = block_on(
        api.db
            .query_first(media_usage_worker::exec::Statement::new("SELECT * FROM _emdash_media_usage_field_deletions")),
    )
    .unwrap()
    .unwrap();
    media_usage_worker::repo::field_deletion::Lease::of(&row).unwrap()
}

#[test]
fn the_column_is_dropped_and_the_row_finalised_only_under_a_live_lease_at_column() {
    use media_usage_worker::exec::Error;
    use media_usage_worker::repo::field_deletion as repo;
    let api = Api::new();
    site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    // A lease at the wrong phase, expired, or someone else's: the column is not dropped.
    let cases = [("occurrences", false, "t"), ("column", true, "t"), ("column", false, "someone-else")];
    let bad_lease = |phase: &str, expired: bool, token: &str| {
        let mut lease = lease_at(&api, phase, "t", expired);
        // (A holder that believes it holds it at `column`.)
        lease.phase = media_usage_worker::model::state::FieldDeletionPhase::Column;
        lease.token = token.to_owned();
        lease
    };
    for (phase, expired, token) in cases {
        let lease = bad_lease(phase, expired, token);
        let dropped = block_on(repo::drop_column(&api.db, &lease, None, true));
        assert!(matches!(dropped, Err(Error::Stale)), "{phase} expired={expired} {token}: {dropped:?}");
        assert_eq!(deleted_columns(&api.db).len(), 1, "{phase} expired={expired} {token}");
    }
    // Even once the column is gone (dropped behind the lane's back), the row goes only under the
    // live lease at `column`.
    let column = deleted_columns(&api.db)[0].clone();
    exec_sql(&api.db, &format!("ALTER TABLE ec_posts DROP COLUMN \"{column}\""));
    for (phase, expired, token) in cases {
        let lease = bad_lease(phase, expired, token);
        assert!(!block_on(repo::finalize(&api.db, &lease)).unwrap(), "{phase} expired={expired} {token}");
        assert_eq!(deletions(&api.db).len(), 1);
    }
    let lease = lease_at(&api, "column", "t", false);
    assert!(block_on(repo::finalize(&api.db, &lease)).unwrap());
    assert!(deletions(&api.db).is_empty());
}

#[test]
fn under_a_live_lease_at_column_the_column_and_the_row_go_together() {
    use media_usage_worker::repo::field_deletion as repo;
    let api = Api::new();
    site(&api);
    assert_eq!(delete_field(&api, "hero").status, 200);
    let lease = lease_at(&api, "column", "t", false);
    assert!(block_on(repo::drop_column(&api.db, &lease, None, true)).unwrap());
    assert!(deleted_columns(&api.db).is_empty() && deletions(&api.db).is_empty());
}

#[test]
fn a_repair_run_in_progress_goes_on_through_a_fields_deletion_and_ends_at_a_type_change() {
    let api = Api::new();
    let m = site(&api);
    // A run at work, not yet finalised (its next step far away).
    exec_sql(
        &api.db,
        &format!(
            "INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token, rules_version, next_attempt_at)
             SELECT id, slug, 'run-1', '{}', '2999-01-01T00:00:00.000Z' FROM _emdash_collections WHERE slug = 'posts';
             UPDATE _emdash_media_usage_index_status SET status = 'running', cursor = 'run-1', reconciliation_required = 1
             WHERE scope_key = 'posts';",
            crate::support::rules().id()
        ),
    );
    // A deletion leaves the run to go on: its finalisation waits for the walk.
    assert_eq!(delete_field(&api, "body").status, 200);
    assert_eq!(
        text_if_any(&api.db, "SELECT status FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'")
            .as_deref(),
        Some("running")
    );
    // A type change ends it (status stale, so its next step finds it superseded) and asks for a
    // fresh one.
    data(&put_field(&api, "hero", &json!({"type": "file"})));
    let st = text_if_any(
        &api.db,
        "SELECT status || ':' || rules_version FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'",
    );
    assert_eq!(st.as_deref(), Some("stale:"));
    time_passes(&api.db);
    tick_until_done(&api.db, &default_tick());
    api.drain();
    assert_eq!(coverage(&api), "complete");
    let (listed, _) = used_in(&api, &m.a);
    assert!(listed.iter().all(|(_, occ)| occ.iter().all(|(_, kind)| kind == "file_field")), "{listed:?}");
    assert_index_is_a_projection_from_scratch(&api, "a run through both");
}

#[test]
fn a_drafts_value_of_a_deleted_field_is_neither_indexed_nor_admitted() {
    use media_usage_worker::usage::admission::{admit, Admission};
    let api = Api::new();
    let m = site(&api);
    let c =
        block_on(media_usage_worker::repo::schema::find(&api.db, &Ident::parse("posts").unwrap())).unwrap().unwrap();
    // A draft as saved before `cover` was deleted: two references through it, one through hero.
    let draft = json!({"hero": m.a, "cover": {"asset": {"_ref": m.b}, "more": {"asset": {"_ref": m.c}}}, "_slug": m.d});
    let one = Admission { max_occurrences: 1 };
    let admitted =
        block_on(admit(&api.db, &c.id, &c.fields, draft.as_object().unwrap(), &crate::support::rules(), one)).unwrap();
    assert!(admitted.is_ok(), "only hero's reference counts: {admitted:?}");
    let two = json!({"hero": m.a, "title": m.b});
    let refused =
        block_on(admit(&api.db, &c.id, &c.fields, two.as_object().unwrap(), &crate::support::rules(), one)).unwrap();
    assert!(refused.is_err(), "two references through fields pass a limit of one");
}
