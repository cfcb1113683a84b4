//! The tick log: one row per scheduled tick, newest 1,000 kept.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};
use crate::model::state::TickOutcome;

const INSERT_TICK: &str = include_str!("../sql/usage/insert_tick.sql");
const LIST_TICKS: &str = include_str!("../sql/usage/list_ticks.sql");

/// One tick log row.
#[derive(Debug, Clone, Deserialize)]
pub struct TickRow {
    pub id: i64,
    pub started_at: String,
    pub lane: String,
    pub outcome: TickOutcome,
    pub statements: i64,
    pub rows_written: i64,
    pub rows_read: i64,
    pub duration_ms: i64,
    pub details: Option<String>,
    /// The UTC day whose daily budget it counted against (NULL for ticks logged before).
    pub budget_day: Option<String>,
}

/// What a tick reports about itself.
#[derive(Debug, Clone)]
pub struct TickLog {
    pub lane: String,
    pub outcome: TickOutcome,
    pub statements: u64,
    pub rows_written: u64,
    pub rows_read: u64,
    pub duration_ms: u64,
    pub details: Option<String>,
}

/// Writes a tick row (and, through its trigger, adds its rows to its day's use); `started_at` is
/// the database clock minus the tick's duration.
pub async fn insert_tick<E: Executor>(exec: &E, log: &TickLog) -> Result<(), Error> {
    let offset = format!("-{:.3} seconds", log.duration_ms as f64 / 1000.0);
    let stmt = Statement::new(INSERT_TICK)
        .bind(offset)
        .bind(log.lane.as_str())
        .bind(log.outcome)
        .bind(log.statements as i64)
        .bind(log.rows_written as i64)
        .bind(log.duration_ms as i64)
        .bind(log.details.clone())
        .bind(log.rows_read as i64);
    exec.execute(stmt).await.map(drop)
}

/// Tick rows, newest first, before id `before`.
pub async fn list_ticks<E: Executor>(exec: &E, before: Option<i64>, limit: u32) -> Result<Vec<TickRow>, Error> {
    exec.query(Statement::new(LIST_TICKS).bind(before).bind(i64::from(limit) + 1)).await
}
