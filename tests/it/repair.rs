//! Index repair: resumable runs that re-queue every entry and orphaned source, then finalise
//! coverage under the run token once the queue has drained.

use futures::executor::block_on;
use media_usage_worker::clock::MonotonicClock;
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::tick::{self, budget::Budget};
use media_usage_worker::usage::repair::{self, StepOutcome as RepairStep};
use serde_json::{json, Value as Json};

use crate::support::{
    code, collection_id, data, exec_sql, expire_leases, forge_lease, scalar, steal_leases, tick_once, Api, ADMIN,
    FAR_AHEAD, LONG_AGO,
};

/// Runs ticks until the queue and every repair run are done; a waiting run's barrier is made
/// due at once instead of after its poll delay.
fn drain(db: &SqliteExecutor) {
    drain_with(db, Budget::new(40, 60_000.0));
}

fn drain_with(db: &SqliteExecutor, budget: Budget) {
    for _ in 0..100 {
        block_on(crate::support::drain(db, &MonotonicClock::default(), budget, &crate::support::policy(), 500))
            .unwrap();
        if scalar(db, "SELECT count(*) FROM _emdash_media_usage_reconciliations") == 0 {
            return;
        }
        exec_sql(db, &format!("UPDATE _emdash_media_usage_reconciliations SET next_attempt_at = '{LONG_AGO}'"));
        expire_leases(db, "_emdash_media_usage_reconciliations", "state = 'leased'");
        expire_leases(db, "_emdash_media_usage_work", "state = 'leased'");
    }
    panic!("repair runs did not finish");
}

fn status(api: &Api) -> Json {
    data(&api.get("/admin/media-usage/status"))
}

/// A collection with `n` entries, each with a `gallery` image, then an image field added.
fn stale_collection(api: &Api, n: usize) {
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "P", "fields": [{"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}]}),
    ));
    for i in 0..n {
        data(&api.post(
            "/content/posts",
            &json!({"slug": format!("e{i}"), "status": "published", "data": {"gallery": [{"image": format!("g{i}")}]}}),
        ));
    }
    data(&api.post("/schema/collections/posts/fields", &json!({"slug": "hero", "type": "image"})));
    // Values written into the new column whose capture was lost (as an import would leave them).
    lost_write(api, "UPDATE ec_posts SET hero = 'h' || slug");
}

/// Runs `sql` on the content table and then loses the work it queued.
fn lost_write(api: &Api, sql: &str) {
    api.db.connection().execute_batch(sql).unwrap();
    api.db.connection().execute_batch("DELETE FROM _emdash_media_usage_work").unwrap();
}

#[test]
fn repair_clears_a_schema_change_and_indexes_the_new_field() {
    let api = Api::new();
    stale_collection(&api, 7);
    assert_eq!(status(&api)["status"], "stale");
    let r = data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"})));
    assert_eq!(r["started"], 1);
    assert!(r["statements"].as_u64().unwrap() <= 40, "a repair request stays within one tick budget: {r}");
    drain(&api.db);
    let st = status(&api);
    assert_eq!(st["status"], "complete", "{st}");
    assert_eq!(st["collections"][0]["reconciliationRequired"], false);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'he%'"), 7);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
}

#[test]
fn repair_requests_are_validated() {
    let api = Api::new();
    for body in [
        json!({}),
        json!({"scope": "all", "x": 1}),
        json!({"scope": "collection", "collection": "Bad-Slug"}),
        json!({"scope": "collection"}),
        json!({"scope": "some"}),
        json!({"scope": "all", "collection": "posts"}),
    ] {
        assert_eq!(code(&api.post("/admin/media-usage/repair", &body)), "VALIDATION_ERROR", "{body}");
    }
    assert_eq!(code(&api.call("POST", "/admin/media-usage/repair", Some(ADMIN), None)), "INVALID_JSON");
    assert_eq!(
        code(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "nope"}))),
        "COLLECTION_NOT_FOUND"
    );
    let r = data(&api.post("/admin/media-usage/repair", &json!({"scope": "all"})));
    assert_eq!((r["status"].as_str(), r["started"].as_i64()), (Some("complete"), Some(0)));
}

#[test]
fn a_failing_entry_finalises_partial_and_orphans_are_removed() {
    let api = Api::new();
    stale_collection(&api, 2);
    // An entry too big to index whose media do not even fit one bound value (1.6 MB of ids),
    // and a source whose entry vanished, both without capture.
    let big: Vec<Json> = (0..8).map(|i| json!({"image": format!("{i}{}", "b".repeat(200_000))})).collect();
    lost_write(
        &api,
        &format!("INSERT INTO ec_posts (id, slug, status, gallery) VALUES ('big', 'big', 'published', '{}'); DELETE FROM ec_posts WHERE slug = 'e0';", Json::Array(big)),
    );
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "all"})));
    drain(&api.db);
    let st = status(&api);
    assert_eq!(st["status"], "partial", "{st}");
    assert_eq!(st["collections"][0]["lastErrorCode"], "MEDIA_USAGE_RESOURCE_LIMIT");
    assert_eq!(st["collections"][0]["reconciliationRequired"], false);
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'g0'"),
        0,
        "the orphan's occurrences are gone"
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'g1'"), 1);
}

#[test]
fn writes_during_a_run_are_covered_and_a_newer_run_supersedes_an_older_one() {
    let api = Api::new();
    // Too many entries for the request to finish the run.
    stale_collection(&api, 300);
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"})));
    data(&api.post("/content/posts", &json!({"slug": "late", "status": "published", "data": {"hero": "late-hero"}})));
    assert_eq!(status(&api)["collections"][0]["status"], "running");
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"})));
    drain(&api.db);
    assert_eq!(status(&api)["status"], "complete");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'late-hero'"), 1);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
}

#[test]
fn a_crash_at_any_statement_of_a_repair_tick_is_resumed() {
    for fail_at in 1..=12u64 {
        let api = Api::new();
        stale_collection(&api, 4);
        // A bare run, so the crashed tick below does the run's steps itself.
        let cid = collection_id(&api, "posts");
        assert_eq!(
            block_on(media_usage_worker::repo::repair::begin(&api.db, &[cid.as_str()], crate::support::rules().id()))
                .unwrap(),
            1
        );
        let faulty = Faulty::new(&api.db, Some(fail_at));
        tick_once(&faulty, Budget::new(40, 60_000.0), &crate::support::policy());
        // The crashed isolate's leases run out; later ticks finish the run.
        drain(&api.db);
        assert_eq!(status(&api)["status"], "complete", "fail_at {fail_at}");
        assert_eq!(
            scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'he%'"),
            4,
            "fail_at {fail_at}"
        );
    }
}

#[test]
fn a_run_whose_collection_is_deleted_ends() {
    let api = Api::new();
    stale_collection(&api, 3);
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"})));
    let r = api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None);
    assert_eq!(r.status, 200, "{}", r.body);
    drain(&api.db);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
}

#[test]
fn scans_and_orphan_passes_page_past_their_page_size() {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "P", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    // 1,001 entries and 501 orphaned sources, all written without capture.
    let mut sql = String::new();
    for i in 0..1001 {
        sql.push_str(&format!("INSERT INTO ec_posts (id, slug, hero) VALUES ('e{i:04}', 's{i}', 'm{i}');"));
    }
    lost_write(&api, &sql);
    let cid = collection_id(&api, "posts");
    let mut orphans = String::new();
    for i in 0..501 {
        orphans.push_str(&format!(
            "INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, current_generation, identity_version, source_completeness)
             VALUES ('content:{cid}:gone{i:04}:columns', '{cid}', 'posts', 'gone{i:04}', 'columns', 'g', 1, 'complete');
             INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id)
             VALUES ('o{i}', 'content:{cid}:gone{i:04}:columns', 'g', 'hero', 'hero', 'image_field', 'orphan', 'orphan');"
        ));
    }
    api.db.connection().execute_batch(&orphans).unwrap();
    let budget = Budget::new(1000, 60_000.0);
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "all"})));
    drain_with(&api.db, budget);
    assert_eq!(status(&api)["status"], "complete");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'm%'"), 1001);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'orphan'"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources WHERE content_id LIKE 'gone%'"), 0);
}

#[test]
fn a_run_that_keeps_failing_ends_failed_instead_of_retrying_forever() {
    let api = Api::new();
    stale_collection(&api, 2);
    let cid = collection_id(&api, "posts");
    assert_eq!(
        block_on(media_usage_worker::repo::repair::begin(&api.db, &[cid.as_str()], crate::support::rules().id()))
            .unwrap(),
        1
    );
    // Every claim of the run dies before it makes progress.
    for _ in 0..7 {
        api.db
            .connection()
            .execute_batch(
                "UPDATE _emdash_media_usage_reconciliations SET state = 'leased', attempt_count = attempt_count + 1,
                   lease_expires_at = '2000-01-01T00:00:00.000Z', next_attempt_at = '2000-01-01T00:00:00.000Z'",
            )
            .unwrap();
    }
    let outcome =
        block_on(media_usage_worker::usage::repair::step_next(&api.db, None, &crate::support::rules())).unwrap();
    assert_eq!(outcome, Some(media_usage_worker::usage::repair::StepOutcome::Finished));
    let st = status(&api);
    assert_eq!(st["status"], "failed");
    assert_eq!(st["collections"][0]["lastErrorCode"], "MEDIA_USAGE_REPAIR_FAILED");
    assert_eq!(st["collections"][0]["reconciliationRequired"], true);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
}

#[test]
fn the_fifth_claim_in_a_row_still_steps_and_the_sixth_gives_up() {
    for (earlier, gives_up) in [(4, false), (5, true)] {
        let api = Api::new();
        stale_collection(&api, 2);
        let cid = collection_id(&api, "posts");
        block_on(media_usage_worker::repo::repair::begin(&api.db, &[cid.as_str()], crate::support::rules().id()))
            .unwrap();
        api.db
            .connection()
            .execute_batch(&format!("UPDATE _emdash_media_usage_reconciliations SET attempt_count = {earlier}"))
            .unwrap();
        let outcome =
            block_on(media_usage_worker::usage::repair::step_next(&api.db, None, &crate::support::rules())).unwrap();
        let finished = outcome == Some(media_usage_worker::usage::repair::StepOutcome::Finished);
        assert_eq!(finished, gives_up, "after {earlier} claims: {outcome:?}");
        assert_eq!(status(&api)["status"] == "failed", gives_up);
    }
}

#[test]
fn a_schema_change_mid_run_ends_the_run_and_leaves_coverage_stale() {
    let api = Api::new();
    stale_collection(&api, 2);
    let cid = collection_id(&api, "posts");
    assert_eq!(
        block_on(media_usage_worker::repo::repair::begin(&api.db, &[cid.as_str()], crate::support::rules().id()))
            .unwrap(),
        1
    );
    data(&api.post("/schema/collections/posts/fields", &json!({"slug": "cover", "type": "image"})));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 1, "the run is mid-way");
    drain(&api.db);
    let st = status(&api);
    assert_eq!(st["status"], "stale");
    assert_eq!(st["collections"][0]["reconciliationRequired"], true);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
}

#[test]
fn a_small_repair_finishes_in_its_request() {
    let api = Api::new();
    stale_collection(&api, 3);
    let r = data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"})));
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(r["collections"][0]["indexedSourceCount"], 3, "{r}");
    assert_eq!(r["collections"][0]["reconciliationRequired"], false);
    assert!(r["statements"].as_u64().unwrap() <= 40, "{r}");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0, "the run ended");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'he1'"), 1);
    assert_eq!(status(&api)["status"], "complete");
}

/// A run at the barrier, due now, with a run token matching its collection's running status,
/// and `n` entries queued for it.
fn run_at_barrier(api: &Api, n: usize) {
    stale_collection(api, n);
    let id = collection_id(api, "posts");
    let rules = crate::support::rules();
    let rules = rules.id();
    api.db
        .connection()
        .execute_batch(&format!(
            "INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token, phase, state, next_attempt_at, rules_version)
             VALUES ('{id}', 'posts', 'run', 'barrier', 'pending', '2000-01-01T00:00:00.000Z', '{rules}');
             UPDATE _emdash_media_usage_index_status SET status = 'running', cursor = 'run', reconciliation_required = 1;
             INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) SELECT '{id}', id, 'posts' FROM ec_posts;"
        ))
        .unwrap();
}

/// One repair step at the barrier: what it did, and in how many seconds the run is due again
/// (-1 once it ended).
fn barrier_step(api: &Api) -> (&'static str, i64) {
    let step = match block_on(repair::step_next(&api.db, None, &crate::support::rules())).unwrap() {
        Some(RepairStep::Waiting { work_due: true, .. }) => "waiting, work due",
        Some(RepairStep::Waiting { work_due: false, .. }) => "waiting",
        Some(RepairStep::Finished) => "finished",
        other => panic!("{other:?}"),
    };
    let wait = scalar(
        &api.db,
        "SELECT coalesce((SELECT CAST(round((julianday(next_attempt_at) - julianday(updated_at)) * 86400) AS INTEGER)
         FROM _emdash_media_usage_reconciliations), -1)",
    );
    (step, wait)
}

#[test]
fn the_barrier_waits_only_as_long_as_the_earliest_unfinished_work() {
    let set_work = |api: &Api, sql: &str| api.db.connection().execute_batch(sql).unwrap();
    // Work due now: the run is due again at once and says so.
    let api = Api::new();
    run_at_barrier(&api, 1);
    assert_eq!(barrier_step(&api), ("waiting, work due", 0));
    // Work in backoff for 4 s: the run looks again when it is due.
    let api = Api::new();
    run_at_barrier(&api, 1);
    set_work(&api, "UPDATE _emdash_media_usage_work SET state = 'retry', next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+4 seconds')");
    assert_eq!(barrier_step(&api), ("waiting", 4));
    // Another owner's live lease for 6 s: the run looks again when it expires.
    let api = Api::new();
    run_at_barrier(&api, 1);
    set_work(&api, "UPDATE _emdash_media_usage_work SET state = 'leased', lease_token = 'other', lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+6 seconds'), next_attempt_at = '2000-01-01T00:00:00.000Z'");
    assert_eq!(barrier_step(&api), ("waiting", 6));
    // Work far in the future (a long backoff): at most the poll interval.
    let api = Api::new();
    run_at_barrier(&api, 1);
    set_work(&api, "UPDATE _emdash_media_usage_work SET state = 'retry', next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+200 seconds')");
    assert_eq!(barrier_step(&api), ("waiting", repair::BARRIER_POLL_SECONDS));
    // Another collection's due work neither holds this run nor sets its pace.
    let api = Api::new();
    run_at_barrier(&api, 2);
    set_work(
        &api,
        "UPDATE _emdash_media_usage_work SET collection_id = 'other', next_attempt_at = '2000-01-01T00:00:00.000Z'
         WHERE content_id = (SELECT min(content_id) FROM _emdash_media_usage_work);
         UPDATE _emdash_media_usage_work SET state = 'retry', next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+4 seconds')
         WHERE collection_id <> 'other'",
    );
    assert_eq!(barrier_step(&api), ("waiting", 4));
    // Another collection's due work does not hold this run.
    let api = Api::new();
    run_at_barrier(&api, 1);
    set_work(&api, "UPDATE _emdash_media_usage_work SET collection_id = 'other', state = 'retry', next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+4 seconds')");
    assert_eq!(barrier_step(&api), ("finished", -1));
    // Nothing queued but something else keeps the run from finalising (capture paused by a
    // collection deletion): the poll interval, never a busy loop.
    let api = Api::new();
    run_at_barrier(&api, 1);
    set_work(
        &api,
        "DELETE FROM _emdash_media_usage_work; UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting'",
    );
    assert_eq!(barrier_step(&api), ("waiting", repair::BARRIER_POLL_SECONDS));
    // Failed work neither holds the barrier nor sets its pace: only the job in backoff does.
    let api = Api::new();
    run_at_barrier(&api, 2);
    set_work(
        &api,
        "UPDATE _emdash_media_usage_work SET state = 'failed', next_attempt_at = '2000-01-01T00:00:00.000Z'
         WHERE content_id = (SELECT min(content_id) FROM _emdash_media_usage_work);
         UPDATE _emdash_media_usage_work SET state = 'retry', next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+4 seconds')
         WHERE state <> 'failed'",
    );
    assert_eq!(barrier_step(&api), ("waiting", 4));
    // Failed work does not hold the barrier: coverage is finalised partial.
    let api = Api::new();
    run_at_barrier(&api, 1);
    set_work(
        &api,
        "UPDATE _emdash_media_usage_work SET state = 'failed', last_error_code = 'MEDIA_USAGE_RESOURCE_LIMIT'",
    );
    assert_eq!(barrier_step(&api), ("finished", -1));
    assert_eq!(status(&api)["status"], "partial");
}

fn one_tick(api: &Api, budget: Budget) -> tick::report::TickReport {
    tick_once(&api.db, budget, &crate::support::policy())
}

#[test]
fn a_run_waiting_for_due_work_sleeps_until_the_work_lane_has_run_it() {
    // Two queued entries: the work lane runs one, the run looks and finds the other due, sleeps
    // while the work lane runs it, then finalises: two repair steps, not a poll per rotation.
    let api = Api::new();
    run_at_barrier(&api, 2);
    // Attempted before: single jobs, one per step (fresh rows would go in one group).
    api.db.connection().execute_batch("UPDATE _emdash_media_usage_work SET attempt_count = 1").unwrap();
    let report = one_tick(&api, crate::support::budget());
    assert_eq!((report.count("jobs"), report.count("repairSteps")), (2, 2), "{report:?}");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
    assert_eq!(status(&api)["status"], "complete");
}

#[test]
fn a_targeted_look_claims_only_that_collections_due_run() {
    // Not due any more (someone took it): nothing.
    let api = Api::new();
    run_at_barrier(&api, 1);
    forge_lease(&api, "_emdash_media_usage_reconciliations", "TRUE", "other", FAR_AHEAD);
    let claimed =
        block_on(repair::step_next(&api.db, Some(&collection_id(&api, "posts")), &crate::support::rules())).unwrap();
    assert_eq!(claimed, None);
    // A targeted look never takes another collection's run, due or with an expired lease.
    let api = Api::new();
    run_at_barrier(&api, 1);
    assert_eq!(block_on(repair::step_next(&api.db, Some("other"), &crate::support::rules())).unwrap(), None);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE state = 'pending'"), 1);
    forge_lease(&api, "_emdash_media_usage_reconciliations", "TRUE", "dead", LONG_AGO);
    assert_eq!(block_on(repair::step_next(&api.db, Some("other"), &crate::support::rules())).unwrap(), None);
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE lease_token = 'dead'"),
        1
    );
    // Its own, with an expired lease, it takes over.
    let own = collection_id(&api, "posts");
    assert!(block_on(repair::step_next(&api.db, Some(&own), &crate::support::rules())).unwrap().is_some());
}

#[test]
fn a_barrier_whose_lease_was_lost_changes_nothing() {
    use media_usage_worker::repo::repair as repo;
    let api = Api::new();
    run_at_barrier(&api, 1);
    let run = block_on(repo::claim(&api.db, None)).unwrap().unwrap();
    steal_leases(&api, "_emdash_media_usage_reconciliations", "TRUE", "thief");
    let before = scalar(
        &api.db,
        "SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE state = 'leased' AND lease_token = 'thief'",
    );
    assert_eq!(block_on(repo::barrier(&api.db, &run, 10, 5_000)).unwrap(), repo::Barrier::Lost);
    assert_eq!(before, 1);
    assert_eq!(
        scalar(
            &api.db,
            "SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE state = 'leased' AND lease_token = 'thief'"
        ),
        1
    );
}

#[test]
fn a_repair_of_10000_entries_finishes_in_at_most_40_default_ticks() {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "P", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    lost_write(
        &api,
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
         INSERT INTO ec_posts (id, slug, status, hero) SELECT 'e' || i, 'e' || i, 'published', 'h' || i FROM n",
    );
    let r = data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"})));
    assert!(r["statements"].as_u64().unwrap() <= 40);
    let budget = Budget::new(40, 600_000.0);
    let mut ticks = 1; // the request did one tick's worth
    while scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations") > 0 {
        // A clock that stands still: the count depends on statements, not on how busy the
        // machine is (the group size also adapts to measured statement time; that rule has its
        // own tests).
        // The CPU budget lifted too: this counts what the statement budget allows.
        let report = tick_once(&api.db, budget, &crate::support::policy().with_cpu_ms(f64::INFINITY));
        assert!(report.statements <= 40, "{report:?}");
        ticks += 1;
        assert!(ticks <= 200, "the repair does not finish");
    }
    assert!(ticks <= 40, "{ticks} ticks");
    assert_eq!(status(&api)["status"], "complete");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 10_000);
}

#[test]
fn a_runs_finalisation_counts_sources_up_to_its_cap() {
    use media_usage_worker::usage::repair::SOURCE_COUNT_CAP;
    let api = Api::new();
    stale_collection(&api, 1);
    // More entries than the cap, imported behind the API (their capture lost).
    let n = SOURCE_COUNT_CAP + 10;
    lost_write(
        &api,
        &format!(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n})
             INSERT INTO ec_posts (id, slug, status, hero) SELECT 'x' || i, 'x' || i, 'published', 'h' || i FROM k"
        ),
    );
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "posts"})));
    drain(&api.db);
    let st = status(&api);
    assert_eq!(st["collections"][0]["status"], "complete", "{st}");
    // Every entry is indexed; the figure says "at least the cap".
    assert!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources") > i64::from(SOURCE_COUNT_CAP));
    let counted = scalar(&api.db, "SELECT indexed_source_count FROM _emdash_media_usage_index_status");
    assert_eq!(counted, i64::from(SOURCE_COUNT_CAP));
}
