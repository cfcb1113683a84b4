//! Repair (reconciliation) runs: begin, claim, scan pages, enqueue, advance, finalise.

use serde::Deserialize;
use serde_json::json;

use super::lease::{self, LeaseState, REPAIR};
use super::work;
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Statement};
use crate::ids;
use crate::model::ident::Ident;
use crate::model::state::RepairPhase;
use crate::sql::{render, Fragment};

const UPSERT_RUNS: &str = include_str!("../sql/repair/upsert_runs.sql");
const BEGIN_STATUS: &str = include_str!("../sql/repair/begin_status.sql");
const CLAIM_RUN: &str = include_str!("../sql/repair/claim_run.sql");
const SCAN_PAGE: &str = include_str!("../sql/repair/scan_page.sql");
const ORPHAN_PAGE: &str = include_str!("../sql/repair/orphan_page.sql");
const GUARD_STEP: &str = include_str!("../sql/repair/guard_step.sql");
const ADVANCE_RUN: &str = include_str!("../sql/repair/advance_run.sql");
const FINALIZE_STATUS: &str = include_str!("../sql/repair/finalize_status.sql");
const END_RUN: &str = include_str!("../sql/repair/end_run.sql");
const FAIL_RUN: &str = include_str!("../sql/repair/fail_run.sql");
const BARRIER_WAIT: &str = include_str!("../sql/repair/barrier_wait.sql");
const NEEDS_RULES: &str = include_str!("../sql/repair/needs_rules.sql");
const LIST_RUNS: &str = include_str!("../sql/repair/list_runs.sql");
const REMAINING: &str = include_str!("../sql/repair/remaining.sql");

/// Starts (or restarts) a run for each of `collection_ids` whose capture is active, in one
/// atomic batch of two statements whatever their number: coverage `running` under a new run
/// token, reconciliation required, re-projecting under the reference rules `rules_id`. Returns
/// how many runs started.
pub async fn begin<E: Executor>(exec: &E, collection_ids: &[&str], rules_id: &str) -> Result<u64, Error> {
    let ids = json!(collection_ids).to_string();
    let outcomes = exec
        .batch(vec![
            Statement::new(lease::render(UPSERT_RUNS, &[])).bind(ids.as_str()).bind(rules_id),
            Statement::new(BEGIN_STATUS).bind(ids.as_str()),
        ])
        .await?;
    Ok(outcomes.get(1).map_or(0, |o| o.changes))
}

/// The collections whose coverage was not proven under the reference rules `rules_id` and that
/// no run under them is re-projecting (failed and never-indexed coverage excepted: those wait
/// for an operator). One read of the coverage rows.
pub async fn needing_rules<E: Executor>(exec: &E, rules_id: &str) -> Result<Vec<String>, Error> {
    #[derive(Deserialize)]
    struct Row {
        collection_id: String,
    }
    let rows: Vec<Row> = exec.query(Statement::new(NEEDS_RULES).bind(rules_id)).await?;
    Ok(rows.into_iter().map(|r| r.collection_id).collect())
}

/// A claimed run.
#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    pub collection_id: String,
    pub collection_slug: String,
    pub run_token: String,
    pub phase: RepairPhase,
    pub scan_cursor: Option<String>,
    pub source_cursor: Option<String>,
    /// Its lease and attempt columns (`attempt_count`: claims since the run last made progress;
    /// a run records no error code of its own).
    #[serde(flatten)]
    pub lease: LeaseState,
}

/// Claims the next due run (or `only` that collection's, if due) with a fresh lease of
/// [`REPAIR`]'s length.
pub async fn claim<E: Executor>(exec: &E, only: Option<&str>) -> Result<Option<Run>, Error> {
    exec.query_first(REPAIR.claim(CLAIM_RUN, &ids::new_id()).bind(only)).await
}

#[derive(Debug, Deserialize)]
struct Id {
    id: String,
}

/// The next page of entry ids after `cursor`.
pub async fn scan_page<E: Executor>(
    exec: &E,
    slug: &Ident,
    cursor: Option<&str>,
    limit: u32,
) -> Result<Vec<String>, Error> {
    let sql = render(SCAN_PAGE, &[("table", &Fragment::content_table(slug))]);
    let rows: Vec<Id> = exec.query(Statement::new(sql).bind(cursor).bind(i64::from(limit))).await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// The next page of content ids that have sources, after `cursor`: every id read (to move the
/// cursor) with whether its entry is gone.
pub async fn orphan_page<E: Executor>(
    exec: &E,
    run: &Run,
    slug: &Ident,
    cursor: Option<&str>,
    limit: u32,
) -> Result<Vec<(String, bool)>, Error> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        orphan: i64,
    }
    let sql = render(ORPHAN_PAGE, &[("table", &Fragment::content_table(slug))]);
    let stmt = Statement::new(sql).bind(run.collection_id.as_str()).bind(cursor).bind(i64::from(limit));
    let rows: Vec<Row> = exec.query(stmt).await?;
    Ok(rows.into_iter().map(|r| (r.id, r.orphan != 0)).collect())
}

/// Where a run goes next.
#[derive(Debug, Clone)]
pub struct Advance<'a> {
    pub phase: RepairPhase,
    pub scan_cursor: Option<&'a str>,
    pub source_cursor: Option<&'a str>,
    pub delay_seconds: i64,
    /// The step made progress: the attempt count starts over.
    pub progressed: bool,
}

fn advance_statement(run: &Run, a: &Advance<'_>) -> Statement {
    Statement::new(lease::render(ADVANCE_RUN, &[]))
        .bind(run.collection_id.as_str())
        .bind(run.lease.lease_token.clone())
        .bind(a.phase)
        .bind(a.scan_cursor)
        .bind(a.source_cursor)
        .bind(a.delay_seconds)
        .bind(a.progressed)
}

/// Queues `content_ids` for projection and advances the run, atomically and only while the run
/// holds its lease and the collection still exists.
pub async fn enqueue_and_advance<E: Executor>(
    exec: &E,
    run: &Run,
    content_ids: &[String],
    a: &Advance<'_>,
) -> Result<(), Error> {
    let guard = Guard::new(GUARD_STEP)
        .bind(run.collection_id.as_str())
        .bind(run.run_token.as_str())
        .bind(run.lease.lease_token.clone())
        .bind(run.collection_slug.as_str());
    let mut stmts = Vec::new();
    if !content_ids.is_empty() {
        stmts.push(work::enqueue(&run.collection_id, &run.collection_slug, content_ids));
    }
    stmts.push(advance_statement(run, a));
    guarded_batch(exec, guard, stmts).await.map(drop)
}

/// What the barrier found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Barrier {
    /// Coverage was finalised, or the run was superseded: the run ended.
    Ended,
    /// The queue has not drained; the run waits. `work_due`: some of the collection's queue work
    /// is due now (whoever runs the queue next can let the run finalise).
    Waiting { work_due: bool },
    /// The run's lease was lost; nothing changed.
    Lost,
}

/// At the barrier, in one atomic batch: finalises coverage if the collection's queue has
/// drained, ends the run if it is finalised or superseded, and otherwise puts it back to wait
/// until its earliest unfinished work is due (at most `max_wait_seconds`).
pub async fn barrier<E: Executor>(
    exec: &E,
    run: &Run,
    max_wait_seconds: i64,
    count_cap: u32,
) -> Result<Barrier, Error> {
    #[derive(Deserialize)]
    struct Wait {
        work_due: i64,
    }
    let outcomes = exec
        .batch(vec![
            Statement::new(FINALIZE_STATUS)
                .bind(run.collection_id.as_str())
                .bind(run.run_token.as_str())
                .bind(i64::from(count_cap)),
            Statement::new(END_RUN)
                .bind(run.collection_id.as_str())
                .bind(run.lease.lease_token.clone())
                .bind(run.run_token.as_str()),
            Statement::new(lease::render(BARRIER_WAIT, &[]))
                .bind(run.collection_id.as_str())
                .bind(run.lease.lease_token.clone())
                .bind(max_wait_seconds),
        ])
        .await?;
    if outcomes.get(1).is_some_and(|o| o.changes > 0) {
        return Ok(Barrier::Ended);
    }
    let wait: Option<Wait> = outcomes.get(2).map(|o| o.first()).transpose()?.flatten();
    Ok(wait.map_or(Barrier::Lost, |w| Barrier::Waiting { work_due: w.work_due != 0 }))
}

/// Gives up on a run that keeps failing: coverage `failed` (`MEDIA_USAGE_REPAIR_FAILED`, still
/// requiring reconciliation), and the run ends.
pub async fn fail<E: Executor>(exec: &E, run: &Run) -> Result<(), Error> {
    exec.batch(vec![
        Statement::new(FAIL_RUN).bind(run.collection_id.as_str()).bind(run.run_token.as_str()),
        Statement::new(END_RUN)
            .bind(run.collection_id.as_str())
            .bind(run.lease.lease_token.clone())
            .bind(run.run_token.as_str()),
    ])
    .await
    .map(drop)
}

/// Ends a run whose collection is gone (or whose status no longer carries its token).
pub async fn end<E: Executor>(exec: &E, run: &Run) -> Result<bool, Error> {
    let stmt = Statement::new(END_RUN)
        .bind(run.collection_id.as_str())
        .bind(run.lease.lease_token.clone())
        .bind(run.run_token.as_str());
    Ok(exec.execute(stmt).await? > 0)
}

/// A repair run in progress, as operators see it.
#[derive(Debug, Clone, Deserialize)]
pub struct RunView {
    pub collection_id: String,
    pub collection_slug: String,
    pub phase: RepairPhase,
    pub scan_cursor: Option<String>,
    pub state: crate::model::state::QueueState,
    pub attempt_count: i64,
    pub next_attempt_at: String,
}

/// Repair runs in progress, oldest first (at most `limit`).
pub async fn list_runs<E: Executor>(exec: &E, limit: u32) -> Result<Vec<RunView>, Error> {
    exec.query(Statement::new(LIST_RUNS).bind(i64::from(limit))).await
}

/// What a run has left, each count at most `cap`: entries still to scan, and queued work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Remaining {
    pub entries: u64,
    pub queued: u64,
}

/// What `run` has left (a collection whose table is gone has nothing left to scan).
pub async fn remaining<E: Executor>(exec: &E, run: &RunView, cap: u32) -> Result<Remaining, Error> {
    let Ok(slug) = Ident::parse(&run.collection_slug) else { return Ok(Remaining::default()) };
    let sql = render(REMAINING, &[("table", &Fragment::content_table(&slug))]);
    let stmt = Statement::new(sql)
        .bind(run.scan_cursor.as_deref())
        .bind(run.collection_id.as_str())
        .bind(i64::from(cap))
        .bind(run.phase);
    match exec.query_first(stmt).await {
        Ok(found) => Ok(found.unwrap_or_default()),
        Err(e) if e.is_missing_content_table() => Ok(Remaining::default()),
        Err(e) => Err(e),
    }
}
