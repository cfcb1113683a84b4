//! Budgets: a large collection within its ticks, every tick within the smallest budget, and
//! leases that guard only their own collection.

use super::*;
use crate::support::{expire_leases, forge_lease, large_collection, LargeCollection, FAR_AHEAD};

#[test]
fn a_collection_of_100000_entries_and_300000_occurrences_is_deleted_in_at_most_30_default_ticks_without_a_daily_budget()
{
    let api = Api::new();
    let id = large_collection(&api, "posts", LargeCollection::new(100_000, 3));
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
        let id = large_collection(&api, "posts", LargeCollection::new(300, 3));
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
    expire_leases(&api, "_emdash_media_usage_collection_deletions", "TRUE");
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
    forge_lease(&api, "_emdash_media_usage_collection_deletions", &format!("collection_id = '{a}'"), "t", FAR_AHEAD);
    let confused = lease(&b, "t", DeletionPhase::Work, false);
    assert_eq!(block_on(repo::delete_rows(&api.db, &confused, Rows::Work, 50)).unwrap().rows, 0);
    assert!(!block_on(repo::checkpoint(&api.db, &confused, DeletionPhase::Sources, BATCH, false)).unwrap());
    let retry = Failure { terminal: false, delay_seconds: 30 };
    assert!(!block_on(repo::record_failure(&api.db, (&b, "t", DeletionPhase::Work), (retry, 1), BATCH, "X")).unwrap());
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 3);
    assert_eq!(tombstone(&api.db, "pages"), Some(("pending".into(), "work".into(), 0, None)));
}
