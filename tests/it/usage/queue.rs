//! The work queue: ticks drain it within their budget, failures back off and turn terminal,
//! operators list and retry, and leases are claimed once.

use super::*;
use crate::support::{expire_leases, forge_lease, FAR_AHEAD};

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
    let cid = collection_id(&api, "posts");
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
    forge_lease(&api, "_emdash_media_usage_work", "TRUE", "t", FAR_AHEAD);
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
fn a_write_to_a_deleted_collections_queue_is_dropped_as_obsolete() {
    let api = setup();
    let id = create(&api, "o", "published", json!({"hero": "m"}));
    let cid = collection_id(&api, "posts");
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
        assert_eq!(work.lease.attempt_count, attempt);
        // The holder dies without recording anything; its lease runs out.
        expire_leases(&api, "_emdash_media_usage_work", "TRUE");
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
    let cid = collection_id(&api, "posts");
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
    let cid = collection_id(&api, "posts");
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
