//! An idle tick costs what an empty site's does: the purge walks the trash from a cursor kept
//! across ticks, rests between passes and while coverage is not complete, and the storage sweep
//! rests a grace period between passes, whatever the size of the trash and of the bucket.

use media_usage_worker::storage::Storage;
use media_usage_worker::tick::budget::Budget;
use media_usage_worker::tick::report::TickReport;
use serde_json::json;

use crate::support::{data, exec_sql, scalar, Api, TickRun, ADMIN};

const T0: f64 = 1_800_000_000_000.0;

/// A site with a `posts` collection (an image field) and an object store.
fn site() -> Api {
    let api = Api::with_storage(T0);
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "P", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    api
}

/// A media item registered by JSON under `key`; its id.
fn register(api: &Api, key: &str) -> String {
    let r = api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

/// `n` items, each used by an entry, forced into the trash long ago (due for the purge, which
/// passes them over: they are in use).
fn trash_in_use(api: &Api, n: u32) {
    for i in 0..n {
        let id = register(api, &format!("used{i:04}.png"));
        data(&api.post("/content/posts", &json!({"slug": format!("e{i}"), "data": {"hero": id}})));
        assert_eq!(api.call("DELETE", &format!("/media/{id}?force=true"), Some(ADMIN), None).status, 200);
    }
    api.drain();
    exec_sql(api, "UPDATE media SET deleted_at = '2001-01-01T00:00:00.000Z' WHERE deleted_at IS NOT NULL");
    // The drain's ticks ended a pass (nothing was due then): the time of the next has come.
    crate::support::purge_rest_over(&api.db);
}

/// `n` unused items in the trash, trashed at `at`.
fn trash_unused(api: &Api, n: u32, at: &str) {
    exec_sql(
        api,
        &format!(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n})
             INSERT INTO media (id, filename, mime_type, storage_key, deleted_at)
             SELECT printf('unused%05d', i), 'u.png', 'image/png', printf('unused%05d.png', i), '{at}' FROM k"
        ),
    );
}

/// `n` objects of another application (no marker) in the bucket.
fn foreign_objects(api: &Api, n: u32) {
    let store = api.storage.as_ref().unwrap();
    for i in 0..n {
        store.put_foreign(&format!("other/{i:05}.jpg"), vec![1, 2, 3], "image/jpeg", &[("owner", "another-app")]);
    }
}

fn tick(api: &Api, budget: Budget) -> TickReport {
    let storage = api.storage.as_ref().map(|s| s as &dyn Storage);
    TickRun::new(budget, &crate::support::policy()).storage(storage).run(&api.db)
}

/// What the 10th of ten default ticks costs (statements, rows written, rows read).
fn idle_cost(api: &Api) -> (u64, u64, u64) {
    let mut last = None;
    for _ in 0..10 {
        let r = tick(api, crate::support::budget());
        assert!(r.error.is_none(), "{r:?}");
        last = Some(r);
    }
    let r = last.unwrap();
    assert_eq!(r.outcome, media_usage_worker::model::state::TickOutcome::Idle, "{r:?}");
    (r.statements, r.rows.written, r.rows.read)
}

#[test]
fn an_unused_item_behind_items_in_use_is_purged_within_a_few_ticks_of_the_smallest_budget() {
    let api = site();
    trash_in_use(&api, 130);
    let unused = register(&api, "behind.png");
    data(&api.delete(&format!("/media/{unused}")));
    exec_sql(&api, &format!("UPDATE media SET deleted_at = '2001-01-02T00:00:00.000Z' WHERE id = '{unused}'"));
    // A tick of 14 statements has room for one batch of the purge: the walk goes on from where
    // the last tick left it, past the 130 items in use, instead of starting at the oldest again.
    let small = Budget::new(14, 60_000.0);
    let mut ticks = 0;
    while scalar(&api, &format!("SELECT count(*) FROM media WHERE id = '{unused}'")) == 1 {
        let r = tick(&api, small);
        assert!(r.error.is_none(), "{r:?}");
        assert!(r.count("mediaPurged") <= 1);
        ticks += 1;
        assert!(ticks <= 6, "the item behind 130 in use was not purged in {ticks} ticks");
    }
    assert!(ticks >= 2, "one tick of the smallest budget walked the whole trash: the test proves nothing");
    assert_eq!(scalar(&api, "SELECT count(*) FROM media WHERE deleted_at IS NOT NULL"), 130, "the items in use stay");
    // The pass ended: the purge rests, and its cursor is back at the start.
    assert_eq!(
        scalar(&api, "SELECT count(*) FROM _emdash_media_purge WHERE cursor_id IS NULL AND next_pass_at IS NOT NULL"),
        1
    );
}

#[test]
fn an_idle_tick_costs_the_same_however_large_the_trash_and_the_bucket() {
    let empty = site();
    let big = site();
    trash_in_use(&big, 130);
    // Trashed yesterday: not due for 29 days.
    trash_unused(&big, 1_000, "2099-01-01T00:00:00.000Z");
    foreign_objects(&big, 1_500);
    // The passes over the big trash and bucket end; then both sites rest alike.
    let cost = idle_cost(&empty);
    assert_eq!(idle_cost(&big), cost, "an idle tick beside 1,130 trashed items and 1,500 objects");
    // A new pass is due once the rest is over; the next idle tick after it costs the same again.
    crate::support::purge_rest_over(&big.db);
    let store = big.storage.as_ref().unwrap();
    store.now_ms.set(T0 + 25.0 * 3_600_000.0);
    let r = tick(&big, crate::support::budget());
    assert!(r.count("storageOperations") >= 1, "the sweep's next pass began: {r:?}");
    assert_eq!(idle_cost(&big), cost);
}

#[test]
fn while_coverage_is_not_complete_the_purge_reads_one_row_and_rests() {
    let empty = site();
    let big = site();
    trash_unused(&big, 1_000, "2001-01-01T00:00:00.000Z");
    for api in [&empty, &big] {
        exec_sql(api, "UPDATE _emdash_media_usage_index_status SET status = 'stale'");
    }
    let cost = idle_cost(&empty);
    assert_eq!(idle_cost(&big), cost, "1,000 due items, none walked");
    assert_eq!(scalar(&big, "SELECT count(*) FROM media"), 1_000);
    assert_eq!(
        scalar(&big, "SELECT count(*) FROM _emdash_media_purge WHERE next_pass_at IS NULL AND cursor_id IS NULL"),
        1
    );
    // Once coverage is complete, the purge walks and takes them.
    exec_sql(&big, "UPDATE _emdash_media_usage_index_status SET status = 'complete'");
    for _ in 0..30 {
        tick(&big, crate::support::budget());
    }
    assert_eq!(scalar(&big, "SELECT count(*) FROM media"), 0);
}

/// Sets the `old` collection's deletion (`sql`, a SET clause).
fn set_deletion(api: &Api, sql: &str) {
    exec_sql(api, &format!("UPDATE _emdash_media_usage_collection_deletions SET {sql} WHERE collection_slug = 'old'"));
}

#[test]
fn an_idle_tick_beside_a_large_deletion_with_nothing_due_costs_what_an_empty_sites_costs() {
    let empty = site();
    let big = site();
    // 2,000 indexed entries whose sources and occurrences the deletion has left to delete.
    let old = crate::support::large_collection(&big, "old", crate::support::LargeCollection::new(2_000, 3));
    exec_sql(&big, "DELETE FROM _emdash_media_usage_work");
    assert_eq!(big.call("DELETE", "/schema/collections/old?force=true", Some(ADMIN), None).status, 200);
    let left =
        || scalar(&big, &format!("SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = '{old}'"));
    assert_eq!(left(), 2_000);
    let cost = idle_cost(&empty);
    // Waiting to be retried (backing off after a failure).
    set_deletion(&big, "state = 'retry', attempt_count = 3, next_attempt_at = '2099-01-01T00:00:00.000Z'");
    assert_eq!(idle_cost(&big), cost, "beside a deletion waiting to be retried");
    // Held by another invocation whose lease is live.
    set_deletion(&big, "state = 'leased', lease_token = 'another', lease_expires_at = '2099-01-01T00:00:00.000Z'");
    assert_eq!(idle_cost(&big), cost, "beside a deletion another invocation holds");
    assert_eq!(left(), 2_000, "the deletion waited");
    // Once its retry is due, the tick works on it (the comparison above can tell).
    set_deletion(
        &big,
        "state = 'retry', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = '2001-01-01T00:00:00.000Z'",
    );
    let r = tick(&big, crate::support::budget());
    assert!(r.error.is_none(), "{r:?}");
    assert!(left() < 2_000 || r.statements > cost.0, "the due deletion was worked on: {r:?}");
}

/// The coverage looks an idle tick takes never visit a collection being deleted's coverage row,
/// whichever side of the registered collections' rows it falls (D1 counts every row a statement
/// steps onto, and the rows read are compared with an empty site's in
/// `tests/workerd/idle_cost.test.mjs`): the repair lane's look for coverage under other rules
/// searches a partial index of active collections' rows by two ranges, and the purge's look at
/// coverage finds each registered collection's row by every column of its primary key (a
/// one-row lookup, which never steps on to the next row).
#[test]
fn the_coverage_looks_of_an_idle_tick_search_no_row_of_a_collection_being_deleted() {
    let api = site();
    let plan = |sql: &str| crate::support::query_plan(&api.db, sql);
    let rules = plan(include_str!("../../src/sql/repair/needs_rules.sql"));
    for range in ["rules_version<?", "rules_version>?"] {
        let search = format!("USING INDEX idx__emdash_media_usage_index_status_rules ({range})");
        assert!(rules.iter().any(|d| d.starts_with("SEARCH") && d.ends_with(&search)), "{range}: {rules:#?}");
    }
    assert!(!rules.iter().any(|d| d.contains("idx__emdash_media_usage_index_status_collection")), "{rules:#?}");
    let purge = plan(include_str!("../../src/sql/media/purge_state.sql"));
    assert!(
        purge.contains(
            &"SEARCH s USING INDEX sqlite_autoindex__emdash_media_usage_index_status_1 (adapter_id=? AND scope_type=? AND scope_key=?)"
                .to_owned()
        ),
        "{purge:#?}"
    );
}
