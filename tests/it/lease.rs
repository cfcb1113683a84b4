//! The leased-queue idiom (`repo::lease`) on SQLite, queue by queue: a claim holds its row for
//! the queue's own lease length by the database clock and counts the attempt; a failure ends the
//! lease and backs off; a row queued again starts afresh.

use futures::executor::block_on;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::model::ident::Ident;
use media_usage_worker::repo::lease::{self, Failure};
use media_usage_worker::repo::{capture, continuation, deletion, repair, work};
use serde_json::json;

use crate::support::{exec_sql, expire_leases, scalar, text, Api, LONG_AGO};

/// Whole seconds from `from` to `to` (two timestamp columns) in the one row of `table`.
fn seconds(db: &SqliteExecutor, table: &str, from: &str, to: &str) -> i64 {
    scalar(db, &format!("SELECT CAST(round((julianday({to}) - julianday({from})) * 86400) AS INTEGER) FROM {table}"))
}

/// A collection `posts` with one entry `e1` written behind the API, so its capture trigger has
/// queued it and no job has run: (collection id, entry id).
fn posts(api: &Api) -> (String, String) {
    let r = api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"}));
    assert_eq!(r.status, 201, "{}", r.body);
    api.db
        .connection()
        .execute_batch("INSERT INTO ec_posts (id, slug, status) VALUES ('e1', 'e1', 'published')")
        .unwrap();
    let id = text(&api.db, "SELECT id FROM _emdash_collections WHERE slug = 'posts'").unwrap();
    assert_eq!(scalar(&api.db, &format!("SELECT count(*) FROM {WORK} WHERE state = 'pending'")), 1);
    (id, "e1".into())
}

const WORK: &str = "_emdash_media_usage_work";
const RUNS: &str = "_emdash_media_usage_reconciliations";
const TOMBSTONES: &str = "_emdash_media_usage_collection_deletions";

/// Lets the work row's lease (or backoff) run out.
fn expire(db: &SqliteExecutor, table: &str) {
    exec_sql(db, &format!("UPDATE {table} SET next_attempt_at = '{LONG_AGO}'"));
    expire_leases(db, table, "state = 'leased'");
}

#[test]
fn a_work_claim_holds_the_row_for_60_seconds_and_counts_the_attempt() {
    let api = Api::new();
    let (cid, entry) = posts(&api);
    let claimed = block_on(work::claim(&api.db, Some((&cid, &entry)))).unwrap().expect("due");
    assert_eq!((claimed.lease.attempt_count, claimed.lease.state.as_str()), (1, "leased"));
    assert_eq!(claimed.last_attempted_at.as_deref(), Some(claimed.lease.updated_at.as_str()));
    assert_eq!(seconds(&api.db, WORK, "updated_at", "lease_expires_at"), 60);
    assert_eq!(lease::WORK.lease_seconds, 60);
    // Held: no claim takes it until the lease runs out.
    assert!(block_on(work::claim(&api.db, Some((&cid, &entry)))).unwrap().is_none());
    assert!(block_on(work::claim_group(&api.db, "g", 10)).unwrap().is_empty());
    expire(&api.db, WORK);
    // The group claim (a row leased once whose lease expired is a group row).
    let group = block_on(work::claim_group(&api.db, "g", 10)).unwrap();
    assert_eq!(
        group.iter().map(|w| (w.lease.attempt_count, w.lease.lease_token.as_deref())).collect::<Vec<_>>(),
        [(2, Some("g"))]
    );
    assert_eq!(seconds(&api.db, WORK, "updated_at", "lease_expires_at"), 60);
    expire(&api.db, WORK);
    // The single job's claim (a group of one).
    let single = block_on(work::claim(&api.db, None)).unwrap().expect("expired");
    assert_eq!(single.lease.attempt_count, 3);
    assert_eq!(seconds(&api.db, WORK, "updated_at", "lease_expires_at"), 60);
}

#[test]
fn a_repair_claim_holds_the_run_for_60_seconds() {
    let api = Api::new();
    let (cid, _) = posts(&api);
    assert_eq!(block_on(repair::begin(&api.db, &[&cid], "rules")).unwrap(), 1);
    let run = block_on(repair::claim(&api.db, Some(&cid))).unwrap().expect("due");
    assert_eq!(run.lease.attempt_count, 1);
    assert_eq!(text(&api.db, &format!("SELECT state FROM {RUNS}")).as_deref(), Some("leased"));
    assert_eq!(seconds(&api.db, RUNS, "updated_at", "lease_expires_at"), 60);
    assert_eq!(lease::REPAIR.lease_seconds, 60);
    assert!(block_on(repair::claim(&api.db, None)).unwrap().is_none(), "held");
    expire(&api.db, RUNS);
    assert_eq!(block_on(repair::claim(&api.db, None)).unwrap().expect("expired").lease.attempt_count, 2);
    // Beginning again queues the run afresh: pending, due now, unleased, no attempts.
    assert_eq!(block_on(repair::begin(&api.db, &[&cid], "rules")).unwrap(), 1);
    assert_eq!(
        text(&api.db, &format!("SELECT state || ':' || attempt_count || ':' || (lease_token IS NULL) || ':' || (lease_expires_at IS NULL) || ':' || (next_attempt_at = updated_at) FROM {RUNS}")).as_deref(),
        Some("pending:0:1:1:1")
    );
}

#[test]
fn every_deletion_claim_holds_the_tombstone_for_300_seconds() {
    let api = Api::new();
    let (cid, _) = posts(&api);
    api.db.connection().execute_batch("UPDATE ec_posts SET deleted_at = '2000-01-01T00:00:00.000Z'").unwrap();
    let slug = Ident::parse("posts").unwrap();
    let names = capture::trigger_names(&cid, &slug);
    let born = block_on(deletion::insert_leased(&api.db, &cid, &slug, false, "t1", 50, &names)).unwrap().expect("new");
    assert_eq!(
        (born.lease.attempt_count, born.lease.lease_token.as_deref(), born.phase.as_str()),
        (1, Some("t1"), "fence")
    );
    assert_eq!(seconds(&api.db, TOMBSTONES, "updated_at", "lease_expires_at"), 300);
    assert_eq!(lease::DELETION.lease_seconds, 300);
    assert!(block_on(deletion::claim_front(&api.db, &cid, true, "t2")).unwrap().is_none(), "held");
    expire(&api.db, TOMBSTONES);
    let front = block_on(deletion::claim_front(&api.db, &cid, true, "t2")).unwrap().expect("expired");
    assert_eq!((front.lease.attempt_count, front.lease.lease_token.as_deref(), front.force_delete), (2, Some("t2"), 1));
    assert_eq!(seconds(&api.db, TOMBSTONES, "updated_at", "lease_expires_at"), 300);
    assert!(block_on(deletion::claim_next(&api.db, "t3")).unwrap().is_none(), "held");
    expire(&api.db, TOMBSTONES);
    let next = block_on(deletion::claim_next(&api.db, "t3")).unwrap().expect("expired");
    assert_eq!((next.lease.attempt_count, next.lease.lease_token.as_deref()), (3, Some("t3")));
    assert_eq!(seconds(&api.db, TOMBSTONES, "updated_at", "lease_expires_at"), 300);
}

#[test]
fn the_continuation_baton_is_held_for_60_seconds() {
    let api = Api::new();
    assert!(block_on(continuation::claim(&api.db, "c1", None)).unwrap());
    let table = "_emdash_media_usage_continuation";
    assert_eq!(seconds(&api.db, table, "sent_at", "expires_at"), 60);
    assert_eq!(lease::CONTINUATION.lease_seconds, 60);
    assert!(!block_on(continuation::claim(&api.db, "c2", None)).unwrap(), "held by c1");
    // The holder hands it on.
    assert!(block_on(continuation::claim(&api.db, "c2", Some("c1"))).unwrap());
    assert_eq!(text(&api.db, &format!("SELECT token FROM {table}")).as_deref(), Some("c2"));
}

#[test]
fn a_failure_ends_the_lease_and_backs_off_the_same_way_in_both_queues() {
    let api = Api::new();
    let (cid, entry) = posts(&api);
    let held = block_on(work::claim(&api.db, Some((&cid, &entry)))).unwrap().expect("due");
    block_on(work::fail(&api.db, &held, Failure { terminal: false, delay_seconds: 120 }, "E1")).unwrap();
    let row = "state || ':' || coalesce(lease_token, '-') || ':' || coalesce(lease_expires_at, '-') || ':' || last_error_code";
    assert_eq!(text(&api.db, &format!("SELECT {row} FROM {WORK}")).as_deref(), Some("retry:-:-:E1"));
    assert_eq!(seconds(&api.db, WORK, "updated_at", "next_attempt_at"), 120);
    expire(&api.db, WORK);
    let held = block_on(work::claim(&api.db, Some((&cid, &entry)))).unwrap().expect("due again");
    block_on(work::fail(&api.db, &held, Failure::FINAL, "E2")).unwrap();
    assert_eq!(text(&api.db, &format!("SELECT {row} FROM {WORK}")).as_deref(), Some("failed:-:-:E2"));
    assert_eq!(seconds(&api.db, WORK, "updated_at", "next_attempt_at"), 0);

    api.db.connection().execute_batch("UPDATE ec_posts SET deleted_at = '2000-01-01T00:00:00.000Z'").unwrap();
    let slug = Ident::parse("posts").unwrap();
    let names = capture::trigger_names(&cid, &slug);
    block_on(deletion::insert_leased(&api.db, &cid, &slug, false, "t", 50, &names)).unwrap().expect("new");
    let retry = Failure { terminal: false, delay_seconds: 240 };
    assert!(
        !block_on(deletion::record_failure(
            &api.db,
            (&cid, "other", media_usage_worker::model::state::DeletionPhase::Fence),
            (retry, 1),
            deletion::Batch { rows: 50, kind: 0 },
            "D1"
        ))
        .unwrap(),
        "not the holder"
    );
    assert!(block_on(deletion::record_failure(
        &api.db,
        (&cid, "t", media_usage_worker::model::state::DeletionPhase::Fence),
        (retry, 1),
        deletion::Batch { rows: 50, kind: 0 },
        "D1"
    ))
    .unwrap());
    assert_eq!(text(&api.db, &format!("SELECT {row} FROM {TOMBSTONES}")).as_deref(), Some("retry:-:-:D1"));
    assert_eq!(seconds(&api.db, TOMBSTONES, "updated_at", "next_attempt_at"), 240);
    // Reopened by an operator: pending, due now, unleased, no attempts and no error.
    let reopened = block_on(deletion::retry(&api.db, &cid, 50)).unwrap().expect("retrying");
    assert_eq!(
        (
            reopened.lease.state.as_str(),
            reopened.lease.attempt_count,
            reopened.lease.last_error_code,
            reopened.lease.lease_token
        ),
        ("pending", 0, None, None)
    );
    assert_eq!(reopened.lease.next_attempt_at, reopened.lease.updated_at);
}

#[test]
fn a_write_queues_its_failed_work_row_afresh_under_a_new_version() {
    let api = Api::new();
    let (cid, entry) = posts(&api);
    let held = block_on(work::claim(&api.db, Some((&cid, &entry)))).unwrap().expect("due");
    block_on(work::fail(&api.db, &held, Failure::FINAL, "E")).unwrap();
    let before = block_on(work::get_work(&api.db, &cid, &entry)).unwrap().unwrap().row;
    // The capture trigger's upsert (a write behind the API, so no job runs after it).
    api.db.connection().execute_batch("UPDATE ec_posts SET slug = 'e2' WHERE id = 'e1'").unwrap();
    let after = block_on(work::get_work(&api.db, &cid, &entry)).unwrap().unwrap().row;
    assert_eq!(
        (
            after.lease.state.as_str(),
            after.lease.attempt_count,
            after.work_version,
            after.lease.last_error_code.as_deref()
        ),
        ("pending", 0, before.work_version + 1, None)
    );
    assert_eq!((after.lease.lease_token, after.lease.lease_expires_at), (None, None));
    assert_eq!(after.lease.next_attempt_at, after.lease.updated_at);
    assert!(after.change_epoch > before.change_epoch, "the write's epoch");
}
