//! What a deletion has left, kept by its lane: every kind counted from a cursor before anything
//! is deleted, each cleanup statement taking off what it deleted in the same batch, exact after
//! every tick, across a crash or a commit-unknown at any statement, and 0 when the deletion ends.

use super::*;
use crate::support::expire_leases;
use media_usage_worker::exec::fault::Fault;

/// The site of the crash tests with more rows sharing a key: three revisions of one entry (a
/// revision page's cursor passes over an entry's revisions by rowid) beside the sources' two
/// occurrences each (an occurrence page's by id).
fn fixture() -> Api {
    let api = Api::new();
    site(&api, 4);
    let entry: String =
        api.db.connection().query_row("SELECT id FROM ec_posts ORDER BY id LIMIT 1", [], |r| r.get(0)).unwrap();
    for i in 0..3 {
        exec_sql(
            &api.db,
            &format!("INSERT INTO revisions (id, collection, entry_id, data) VALUES ('extra{i}', 'posts', '{entry}', '{{}}')"),
        );
    }
    api
}

/// Pages of two rows and a tick of 11 statements: counting and cleanup each take several
/// statements and ticks.
fn small_ticks() -> Tick {
    (Budget::new(11, 60_000.0), crate::support::policy().with_cleanup(CleanupBatch::Fixed(2)))
}

/// The rows of `posts` the deletion will delete: work rows, revisions, occurrences, sources.
fn rows_of_posts(db: &SqliteExecutor, id: &str) -> i64 {
    let (lo, hi) = media_usage_worker::model::source::source_key_range(id);
    scalar(db, &format!("SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = '{id}'"))
        + scalar(db, "SELECT count(*) FROM revisions WHERE collection = 'posts'")
        + scalar(
            db,
            &format!("SELECT count(*) FROM _emdash_media_usage WHERE source_key >= '{lo}' AND source_key < '{hi}'"),
        )
        + scalar(db, &format!("SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = '{id}'"))
}

#[test]
fn a_deletion_counts_everything_before_deleting_then_its_counters_fall_to_0_exactly() {
    let api = fixture();
    let total = rows_of_posts(&api.db, &collection_id(&api.db, "posts"));
    assert!(total > 20, "{total} rows");
    assert_eq!(delete(&api, "posts?force=true").status, 200);
    // Nothing is counted at the request: the figure is 0, flagged.
    assert_eq!(assert_counters_exact(&api.db, "after the request"), vec![([0; 4], false)]);
    let mut seen = Vec::new();
    let mut n = 0;
    while tombstone(&api.db, "posts").is_some() {
        let report = tick_with(&api.db, small_ticks());
        assert!(report.error.is_none(), "{:?}", report.error);
        if let Some((left, counted)) = assert_counters_exact(&api.db, &format!("tick {n}")).pop() {
            seen.push((left.iter().sum::<i64>(), counted));
        }
        time_passes(&api.db);
        n += 1;
        assert!(n < 100, "{seen:?}");
    }
    // Counting took ticks of its own; the first counted figure is every row, and it only falls.
    let first = seen.iter().position(|(_, counted)| *counted).expect("counted");
    assert!(first >= 1, "counting spans ticks: {seen:?}");
    assert!(seen[..first].iter().all(|(left, _)| *left <= total), "{seen:?}");
    let counted: Vec<i64> = seen[first..].iter().map(|(left, _)| *left).collect();
    assert!(counted[0] <= total && counted[0] > 0, "{seen:?}");
    assert!(counted.windows(2).all(|w| w[1] <= w[0]), "{seen:?}");
    assert!(counted.len() >= 3, "the cleanup spans ticks: {seen:?}");
}

#[test]
fn a_counting_statement_repeated_counts_the_next_page_not_the_same_one() {
    let api = fixture();
    let posts = collection_id(&api.db, "posts");
    assert_eq!(delete(&api, "posts?force=true").status, 200);
    let mut held = None;
    let b = CleanupBatch::Fixed(2);
    // One step of up to three counting statements, then its statements replayed by hand: each
    // counts from the cursor the last one left.
    let first = block_on(deletion::step(&api.db, &MonotonicClock::default(), b, &mut held)).unwrap();
    assert_eq!(first, Some(StepOutcome::Counted { statements: 3 }));
    let (id, token): (String, String) = api
        .db
        .connection()
        .query_row("SELECT collection_id, lease_token FROM _emdash_media_usage_collection_deletions", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let lease = lease(&id, &token, DeletionPhase::Work, true);
    let kind = |db: &SqliteExecutor| scalar(db, "SELECT count_kind FROM _emdash_media_usage_collection_deletions");
    while kind(&api.db) < 4 {
        let k = usize::try_from(kind(&api.db)).unwrap();
        let row = block_on(repo::count_rows(&api.db, &lease, Rows::ALL[k], 2)).unwrap();
        assert!(row.is_some(), "counted under the live lease");
        assert_counters_exact(&api.db, "replayed");
    }
    let (left, counted) = assert_counters_exact(&api.db, "counted").pop().unwrap();
    assert!(counted);
    assert_eq!(left.iter().sum::<i64>(), rows_of_posts(&api.db, &posts), "every row counted once");
    // Once every kind is counted, a counting statement changes nothing.
    assert_eq!(block_on(repo::count_rows(&api.db, &lease, Rows::Sources, 2)).unwrap(), None);
    // Nor does one of the kind being counted under another holder's token.
    let stranger = super::lease(&id, "someone-else", DeletionPhase::Work, true);
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET count_kind = 0, left_work = 0");
    assert_eq!(block_on(repo::count_rows(&api.db, &stranger, Rows::Work, 2)).unwrap(), None);
}

#[test]
fn a_cleanup_statement_takes_off_exactly_what_it_deleted_and_an_exhausted_kind_is_0() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 5);
    let b = CleanupBatch::Fixed(2);
    let mut held = None;
    // Counted first: five work rows.
    step(&api.db, b, &mut held);
    let left_work = || scalar(&api.db, "SELECT left_work FROM _emdash_media_usage_collection_deletions");
    // (The helper stepped past counting and deleted the first batch.)
    assert_eq!(left_work(), 3);
    step(&api.db, b, &mut held);
    assert_eq!(left_work(), 1);
    // A counter that says more than is there (a row went some other way) is set right when the
    // kind runs out.
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET left_work = 7");
    step(&api.db, b, &mut held);
    assert_eq!(left_work(), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
}

#[test]
fn a_counter_never_goes_below_0_nor_moves_under_a_lease_that_ran_out() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 9);
    let b = CleanupBatch::Fixed(2);
    let mut held = None;
    step(&api.db, b, &mut held);
    let left_work = || scalar(&api.db, "SELECT left_work FROM _emdash_media_usage_collection_deletions");
    assert_eq!(left_work(), 7);
    // A counter that says less than is there stops at 0 (it never fails the batch).
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET left_work = 1");
    step(&api.db, b, &mut held);
    assert_eq!(left_work(), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 5);
    // Under a lease that ran out nothing is deleted, and the counter does not move (a delete that
    // deleted nothing is not taken for an exhausted kind).
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET left_work = 5");
    expire_leases(&api.db, "_emdash_media_usage_collection_deletions", "TRUE");
    assert_eq!(step(&api.db, b, &mut held), Some(StepOutcome::LeaseLost));
    assert_eq!(left_work(), 5);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 5);
}

/// A commit-unknown at every statement of every tick of the deletion, then ticks to the end:
/// after each, the counters are exact ([`assert_counters_exact`], also in `tick_until_gone`),
/// and the deletion ends with nothing left. (A crash at every statement: `crash.rs`, whose
/// ticks check the counters the same way.)
#[test]
fn the_counters_stay_exact_across_a_commit_unknown_at_any_statement_of_any_tick() {
    let probe = fixture();
    let id = collection_id(&probe.db, "posts");
    assert_eq!(delete(&probe, "posts?force=true").status, 200);
    // The state before each tick, to start each run from.
    let (mut before, mut per_tick) = (Vec::new(), Vec::new());
    while tombstone(&probe.db, "posts").is_some() {
        before.push(probe.snapshot());
        per_tick.push(tick_with(&probe.db, small_ticks()).statements);
        time_passes(&probe.db);
        assert!(per_tick.len() < 100);
    }
    let mut runs = 0;
    for (i, n) in per_tick.iter().enumerate() {
        for k in 1..=*n {
            let api = before[i].snapshot();
            tick_with(&Faulty::injecting(&api.db, Some(Fault::CommitUnknown(k))), small_ticks());
            assert_counters_exact(&api.db, &format!("tick {i}, statement {k}"));
            time_passes(&api.db);
            tick_until_gone(&api.db, "posts", small_ticks());
            assert_gone(&api.db, &id, "posts");
            runs += 1;
        }
    }
    assert!(runs >= 40, "{runs} runs over {per_tick:?}");
}
