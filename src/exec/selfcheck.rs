//! A self-check of the database semantics the crate relies on, runnable against the live D1
//! (`POST /_emdash/api/admin/self-check`) and natively: guarded batches roll back, the guard
//! failure is classified as `Stale`, integers beyond 32 bits round-trip, `RETURNING` returns
//! rows, and statements over the bind limit are refused before the database sees them.
//! It writes only probe rows into `_emdash_selfcheck_probes` and removes them.

use serde::{Deserialize, Serialize};

use super::guard::{guarded_batch, Guard};
use super::{Error, Executor, Statement, MAX_BINDS, MAX_SAFE_INTEGER};
use crate::ids;

const INSERT_PROBE: &str = include_str!("../sql/selfcheck/insert_probe.sql");
const GUARD_NEVER: &str = include_str!("../sql/selfcheck/guard_never.sql");
const COUNT_PROBE: &str = include_str!("../sql/selfcheck/count_probe.sql");
const DELETE_PROBE: &str = include_str!("../sql/selfcheck/delete_probe.sql");
const ECHO_INTEGERS: &str = include_str!("../sql/selfcheck/echo_integers.sql");
const COUNT_GUARD_ROWS: &str = include_str!("../sql/selfcheck/count_guard_rows.sql");

/// What each check found; all `true` on a healthy backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// A failed guard assertion rolled back a write made earlier in the same batch.
    pub guarded_batch_rolls_back: bool,
    /// That failure surfaced as `Stale`, not as a generic error.
    pub guard_failure_is_stale: bool,
    /// A guard whose preconditions hold lets its batch commit, and its guard row is consumed.
    pub guarded_batch_commits: bool,
    /// 2^31 + 1, −(2^40) and 2^53 − 1 came back exactly, as integers.
    pub integers_round_trip: bool,
    /// `INSERT … RETURNING` returned the inserted row.
    pub returning_works: bool,
    /// A statement with more than 100 binds was refused by the executor itself.
    pub bind_limit_enforced: bool,
}

impl Report {
    pub fn all_passed(&self) -> bool {
        self.guarded_batch_rolls_back
            && self.guard_failure_is_stale
            && self.guarded_batch_commits
            && self.integers_round_trip
            && self.returning_works
            && self.bind_limit_enforced
    }
}

#[derive(Deserialize)]
struct N {
    n: i64,
}

async fn probe_count<E: Executor>(exec: &E, probe: &str) -> Result<i64, Error> {
    let row: Option<N> = exec.query_first(Statement::new(COUNT_PROBE).bind(probe)).await?;
    Ok(row.map_or(0, |r| r.n))
}

/// Runs every check. Database errors other than the expected ones are returned.
pub async fn run<E: Executor>(exec: &E) -> Result<Report, Error> {
    let probe = format!("selfcheck:{}", ids::new_id());

    // A batch whose second statement is a failing guard must undo its first statement.
    let failing = exec
        .batch(vec![
            Statement::new(INSERT_PROBE).bind(probe.as_str()),
            Statement::new(GUARD_NEVER).bind(format!("{probe}:guard")).bind(0i64),
        ])
        .await;
    let guard_failure_is_stale = matches!(failing, Err(Error::Stale));
    let guarded_batch_rolls_back = failing.is_err() && probe_count(exec, &probe).await? == 0;

    let committed = guarded_batch(
        exec,
        Guard::new(GUARD_NEVER).bind(1i64),
        vec![Statement::new(INSERT_PROBE).bind(probe.as_str())],
    )
    .await;
    let guard_rows: Option<N> = exec.query_first(Statement::new(COUNT_GUARD_ROWS)).await?;
    let guarded_batch_commits =
        committed.is_ok() && probe_count(exec, &probe).await? == 1 && guard_rows.is_some_and(|r| r.n == 0);

    #[derive(Deserialize)]
    struct Echo {
        a: i64,
        b: i64,
        c: i64,
        t: String,
    }
    let (a, b, c) = ((1i64 << 31) + 1, -(1i64 << 40), MAX_SAFE_INTEGER);
    let echo: Option<Echo> = exec.query_first(Statement::new(ECHO_INTEGERS).bind(a).bind(b).bind(c)).await?;
    let integers_round_trip = echo.is_some_and(|e| e.a == a && e.b == b && e.c == c && e.t == "integer");

    #[derive(Deserialize)]
    struct Id {
        id: String,
    }
    let returned_probe = format!("{probe}:returning");
    let returned: Vec<Id> = exec.query(Statement::new(INSERT_PROBE).bind(returned_probe.as_str())).await?;
    let returning_works = returned.len() == 1 && returned[0].id == returned_probe;
    exec.execute(Statement::new(DELETE_PROBE).bind(probe.as_str()).bind(returned_probe.as_str())).await?;

    let mut too_many = Statement::new(ECHO_INTEGERS);
    for i in 0..=MAX_BINDS {
        too_many = too_many.bind(i as i64);
    }
    let bind_limit_enforced = matches!(exec.run(too_many).await, Err(Error::LimitExceeded(_)));

    Ok(Report {
        guarded_batch_rolls_back,
        guard_failure_is_stale,
        guarded_batch_commits,
        integers_round_trip,
        returning_works,
        bind_limit_enforced,
    })
}
