//! The daily budget's ledger: what the ticks of each UTC day read and wrote. A tick's log write
//! adds to it (a trigger of the tick log, `0015_rows_budgets.sql`); this module reads it.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};

const USAGE: &str = include_str!("../sql/daily/usage.sql");

/// What one UTC day's ticks used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct DayUsage {
    /// The day, `YYYY-MM-DD`.
    pub day: String,
    pub rows_written: u64,
    pub rows_read: u64,
    pub ticks: u64,
}

/// The use of `day` (`YYYY-MM-DD`; `None`: the database's day), 0 when no tick ran that day.
pub async fn usage<E: Executor>(exec: &E, day: Option<&str>) -> Result<DayUsage, Error> {
    Ok(exec.query_first(Statement::new(USAGE).bind(day)).await?.unwrap_or_default())
}
