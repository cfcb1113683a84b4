//! The executor layer against real SQLite: D1 limits, guarded batches, fault injection,
//! metering, error classification and the self-check.

use futures::executor::block_on;
use media_usage_worker::clock::MonotonicClock;
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::guard::{guarded_batch, Guard};
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::{selfcheck, Error, Executor, Statement};
use serde::Deserialize;

use crate::support::db;

const GUARD_IF: &str = "INSERT INTO _emdash_batch_guard (id) SELECT CASE WHEN ?2 = 1 THEN ?1 END";

#[derive(Deserialize)]
struct Count {
    n: i64,
}

fn media_count(exec: &impl Executor) -> i64 {
    block_on(exec.query_first::<Count>(Statement::new("SELECT count(*) AS n FROM media"))).unwrap().unwrap().n
}

fn insert_media(id: &str) -> Statement {
    Statement::new("INSERT INTO media (id, filename, mime_type, storage_key) VALUES (?1, 'f', 'image/png', ?1)")
        .bind(id)
}

#[test]
fn statements_over_d1_limits_are_refused_before_sqlite_sees_them() {
    let exec = db();
    let placeholders: Vec<String> = (1..=101).map(|i| format!("?{i}")).collect();
    let mut stmt = Statement::new(format!("SELECT {}", placeholders.join(", ")));
    for i in 0..101 {
        stmt = stmt.bind(i as i64);
    }
    assert!(matches!(block_on(exec.run(stmt)), Err(Error::LimitExceeded(_))));
    let long = Statement::new(format!("SELECT '{}'", "x".repeat(100_000)));
    assert!(matches!(block_on(exec.run(long)), Err(Error::LimitExceeded(_))));
    // A batch with one oversized statement runs none of them.
    let batch = vec![insert_media("a"), Statement::new(format!("SELECT '{}'", "x".repeat(100_000)))];
    assert!(matches!(block_on(exec.batch(batch)), Err(Error::LimitExceeded(_))));
    assert_eq!(media_count(&exec), 0);
}

#[test]
fn foreign_keys_are_enforced_like_d1() {
    let exec = db();
    let orphan = Statement::new(
        "INSERT INTO _emdash_fields (id, collection_id, slug, label, type, column_type) VALUES ('f', 'missing', 's', 'S', 'string', 'TEXT')",
    );
    assert!(matches!(block_on(exec.run(orphan)), Err(Error::Constraint(_))));
}

#[test]
fn a_failed_guard_rolls_back_the_whole_batch_and_reports_stale() {
    let exec = db();
    let res =
        block_on(guarded_batch(&exec, Guard::new(GUARD_IF).bind(0i64), vec![insert_media("a"), insert_media("b")]));
    assert!(matches!(res, Err(Error::Stale)), "{res:?}");
    assert_eq!(media_count(&exec), 0);
    // A statement failing after earlier ones applied undoes them too.
    let res = block_on(exec.batch(vec![insert_media("a"), insert_media("a")]));
    assert!(matches!(res, Err(Error::Unique(_))));
    assert_eq!(media_count(&exec), 0);
}

#[test]
fn a_passing_guard_commits_and_leaves_no_guard_row() {
    let exec = db();
    let outcomes = block_on(guarded_batch(&exec, Guard::new(GUARD_IF).bind(1i64), vec![insert_media("a")])).unwrap();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].changes, 1);
    assert_eq!(media_count(&exec), 1);
    let guards: Count =
        block_on(exec.query_first(Statement::new("SELECT count(*) AS n FROM _emdash_batch_guard"))).unwrap().unwrap();
    assert_eq!(guards.n, 0);
}

#[test]
fn faults_fail_the_nth_statement_and_every_later_one() {
    let exec = Faulty::new(db(), Some(3));
    assert!(block_on(exec.run(insert_media("a"))).is_ok());
    assert!(block_on(exec.run(insert_media("b"))).is_ok());
    assert!(matches!(block_on(exec.run(insert_media("c"))), Err(Error::Fault(3))));
    assert!(matches!(block_on(exec.run(insert_media("d"))), Err(Error::Fault(_))));
    assert_eq!(media_count(exec.inner()), 2);
}

#[test]
fn a_batch_reaching_the_fault_point_applies_nothing() {
    let exec = Faulty::new(db(), Some(2));
    let res = block_on(exec.batch(vec![insert_media("a"), insert_media("b")]));
    assert!(matches!(res, Err(Error::Fault(2))));
    assert_eq!(media_count(exec.inner()), 0);
}

#[test]
fn a_commit_unknown_fault_commits_its_statement_reports_it_transient_and_passes_the_rest() {
    let exec = Faulty::commit_unknown(db(), 2);
    assert!(block_on(exec.run(insert_media("a"))).is_ok());
    let e = block_on(exec.run(insert_media("b"))).unwrap_err();
    assert!(matches!(e, Error::Transient(_)) && e.may_have_committed(), "{e:?}");
    assert!(block_on(exec.run(insert_media("c"))).is_ok());
    assert_eq!(media_count(exec.inner()), 3, "the faulted statement committed");
    // A batch holding the fault point commits whole, then reports the error.
    let exec = Faulty::commit_unknown(db(), 3);
    assert!(block_on(exec.run(insert_media("a"))).is_ok());
    let res = block_on(exec.batch(vec![insert_media("b"), insert_media("c")]));
    assert!(matches!(res, Err(Error::Transient(_))), "{res:?}");
    assert_eq!(media_count(exec.inner()), 3);
    // A statement the database refused committed nothing and reports its own error.
    let exec = Faulty::commit_unknown(db(), 2);
    block_on(exec.run(insert_media("a"))).unwrap();
    assert!(matches!(block_on(exec.run(insert_media("a"))), Err(Error::Unique(_))));
}

#[test]
fn the_meter_counts_statements_binds_bytes_and_rows() {
    let exec = Metered::new(db(), MonotonicClock::default());
    block_on(exec.run(insert_media("a"))).unwrap();
    block_on(exec.batch(vec![insert_media("b"), insert_media("c")])).unwrap();
    block_on(exec.run(Statement::new("SELECT * FROM media"))).unwrap();
    let u = exec.usage();
    assert_eq!(u.statements, 4);
    assert_eq!(u.binds, 3);
    assert_eq!(u.max_binds, 1);
    // Natively rows are counted as D1 counts them (`exec::sqlite`): an inserted media row writes
    // itself and an entry in each of its six indexes (primary key, unique storage key, content
    // hash, library, trash, purge order: natively every index counts, partial ones too, so at
    // least D1's figure); each insert reads what it wrote; the SELECT reads the three rows it
    // returns, and its full scan steps forward twice.
    assert_eq!(u.rows_written, 3 * 7);
    assert_eq!(u.rows_read, 3 * 7 + 3 + 2);
    assert_eq!(u.max_sql_bytes, insert_media("x").sql().len() as u64);
}

#[test]
fn the_self_check_passes_on_sqlite() {
    let exec = db();
    let report = block_on(selfcheck::run(&exec)).unwrap();
    assert!(report.all_passed(), "{report:?}");
    let guards: Count =
        block_on(exec.query_first(Statement::new("SELECT count(*) AS n FROM _emdash_batch_guard"))).unwrap().unwrap();
    assert_eq!(guards.n, 0, "the self-check cleans up its probes");
}

#[test]
fn integers_beyond_32_bits_round_trip() {
    let exec = db();
    let big = (1i64 << 40) + 3;
    block_on(
        exec.run(
            Statement::new(
                "INSERT INTO media (id, filename, mime_type, storage_key, size) VALUES ('m', 'f', 'a/b', 'k', ?1)",
            )
            .bind(big),
        ),
    )
    .unwrap();
    #[derive(Deserialize)]
    struct Size {
        size: i64,
    }
    let row: Size = block_on(exec.query_first(Statement::new("SELECT size FROM media"))).unwrap().unwrap();
    assert_eq!(row.size, big);
}
