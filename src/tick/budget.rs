//! What a tick may spend and how it keeps account: the [`Budget`] (statements, rows, wall time,
//! and the daily budget of background rows), the fixed costs of the tick itself (its log write,
//! the continuation decision, the daily read), the [`Ledger`] that weighs each lane's next step
//! against what the tick has committed, the [`Estimate`] of how long work left takes, and the
//! calendar math the daily budget needs. Pure: the driver tells the ledger what the executor
//! reported.

use crate::lane::RowCount;
use crate::model::time;
use crate::usage::project::JOB_MAX_STATEMENTS;

/// The smallest statement budget a tick accepts: one job (its media lookup included), the
/// continuation's baton and the tick's own log write. Every lane's step fits it (a test checks).
pub const MIN_TICK_STATEMENTS: u64 = JOB_MAX_STATEMENTS + CONTINUATION_STATEMENTS + LOG_STATEMENTS;
/// Statements the tick's own log write costs.
pub const LOG_STATEMENTS: u64 = 1;
/// The most rows the tick's log write costs: its row, the pruning of the oldest and, through a
/// trigger, the day's row of the daily ledger (`repo::daily`) and its pruning.
pub const LOG_ROWS: RowCount = RowCount::new(6, 6);
/// Statements reading the day's use of the daily budget (once per tick, before the first step of
/// a lane the daily budget stops).
pub const DAILY_STATEMENTS: u64 = 1;
/// Statements the continuation decision costs (taking or dropping the baton).
pub const CONTINUATION_STATEMENTS: u64 = 1;
/// The most rows the continuation decision costs.
pub const CONTINUATION_ROWS: RowCount = RowCount::new(4, 4);

/// What a tick (or a repair request running the lanes) may spend: statements, rows and wall
/// time; and what background work may write per UTC day.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Statements (and object-store operations) it may issue, its log write included.
    pub max_statements: u64,
    /// Wall time it may take, in milliseconds: no lane steps once it has passed.
    pub max_ms: f64,
    /// Rows it may read and write, as D1 reports them, its log write included.
    pub max_rows: RowCount,
    /// Rows the ticks of one UTC day may write before every lane but the work and schedule lanes
    /// rests until the next day; 0: unlimited.
    pub daily_rows_written: u64,
}

impl Budget {
    /// A budget of `max_statements` (at least [`MIN_TICK_STATEMENTS`]) and `max_ms`, rows
    /// unlimited.
    pub fn new(max_statements: u64, max_ms: f64) -> Budget {
        Budget {
            max_statements: max_statements.max(MIN_TICK_STATEMENTS),
            max_ms,
            max_rows: RowCount::new(u64::MAX, u64::MAX),
            daily_rows_written: 0,
        }
    }

    /// This budget with at most `max_rows` rows read and written per tick.
    pub fn with_rows(self, max_rows: RowCount) -> Budget {
        Budget { max_rows, ..self }
    }

    /// This budget with a daily budget of `rows_written` for background work (0: unlimited).
    pub fn with_daily_rows_written(self, rows_written: u64) -> Budget {
        Budget { daily_rows_written: rows_written, ..self }
    }

    /// This budget less what the continuation decision costs: what the lanes of a tick that
    /// may ask for a continuation may spend.
    pub fn less_continuation(self) -> Budget {
        Budget {
            max_statements: self.max_statements - CONTINUATION_STATEMENTS,
            max_rows: self.max_rows.minus(CONTINUATION_ROWS),
            ..self
        }
    }

    /// The estimate for work writing `rows_to_write` rows, `today` (`YYYY-MM-DD`) having written
    /// `written_today` rows of its daily budget. A lower bound: ticks also stop at their
    /// statements and wall time, and other lanes share them.
    pub fn estimate(&self, rows_to_write: u64, today: &str, written_today: u64) -> Estimate {
        let mut per_tick = self.max_rows.written.saturating_sub(LOG_ROWS.written + CONTINUATION_ROWS.written).max(1);
        if self.daily_rows_written > 0 {
            per_tick = per_tick.min(self.daily_rows_written);
        }
        let days = match self.daily_rows_written {
            0 => 0,
            daily => rows_to_write.saturating_sub(daily.saturating_sub(written_today)).div_ceil(daily),
        };
        Estimate {
            rows_to_write,
            ticks: rows_to_write.div_ceil(per_tick),
            days,
            finish_day: add_days(today, days).unwrap_or_else(|| today.to_owned()),
        }
    }
}

/// How long background work that writes `rows_to_write` rows takes under a [`Budget`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    /// The rows it will write (what is left times what a row of its kind costs).
    pub rows_to_write: u64,
    /// Ticks it needs at least, at the tick's rows written (less the tick's own costs).
    pub ticks: u64,
    /// UTC days after today the daily budget spreads it over (0: it fits what today has left).
    pub days: u64,
    /// The UTC day it is expected to finish on, at the earliest.
    pub finish_day: String,
}

/// Where a tick stands with the daily budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Daily {
    /// No daily budget.
    Unlimited,
    /// The day's use is read before the first step a daily budget can stop.
    Unread,
    /// The budget less what the day's ticks wrote before this one.
    Left(u64),
}

/// What a tick has spent, and what the lanes hold, when a lane asks to step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Statements issued and operations outside the database made (they count alike).
    pub statements: u64,
    /// Rows read and written, as the database reported them.
    pub rows: RowCount,
    /// Statements releasing what the lanes hold will cost when the tick ends.
    pub held: u64,
    /// Rows releasing what the lanes hold will cost.
    pub held_rows: RowCount,
}

/// What a lane's next step needs at its smallest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// Its statement reserve.
    pub statements: u64,
    /// Its row reserve.
    pub rows: RowCount,
    /// The daily budget stops its lane.
    pub daily: bool,
}

/// What a lane's step may use: at least what it asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    /// Statements it may issue.
    pub room: u64,
    /// Rows it may read and write (before the daily budget has its say).
    pub rows: RowCount,
    /// The day's use must be read first ([`Ledger::day_read`]); its statement is counted.
    pub reads_day: bool,
}

/// The tick's account against its [`Budget`]: every step is weighed against what the tick has
/// committed (spent, held by the lanes, and its own log write) and, for lanes the daily budget
/// stops, against what the day has left once read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ledger {
    budget: Budget,
    daily: Daily,
}

impl Ledger {
    /// A tick's account at its start: nothing read of the day yet.
    pub fn new(budget: Budget) -> Ledger {
        Ledger { budget, daily: if budget.daily_rows_written == 0 { Daily::Unlimited } else { Daily::Unread } }
    }

    /// Whether `elapsed_ms` is past the tick's wall time.
    pub fn out_of_time(&self, elapsed_ms: f64) -> bool {
        elapsed_ms >= self.budget.max_ms
    }

    /// What the step `ask` may use, having `spent`; `None` when it does not fit the budget.
    pub fn allow(&self, spent: Spent, ask: Ask) -> Option<Allowance> {
        let reads_day = ask.daily && self.daily == Daily::Unread;
        let committed = spent.statements + spent.held + LOG_STATEMENTS + if reads_day { DAILY_STATEMENTS } else { 0 };
        let committed_rows = spent.rows.plus(spent.held_rows).plus(LOG_ROWS);
        if committed + ask.statements > self.budget.max_statements
            || !committed_rows.plus(ask.rows).fits(self.budget.max_rows)
        {
            return None;
        }
        Some(Allowance {
            room: self.budget.max_statements.saturating_sub(committed),
            rows: self.budget.max_rows.minus(committed_rows),
            reads_day,
        })
    }

    /// The day's use has been read: the day's earlier ticks wrote `written` rows (`None`:
    /// unknown, and nothing the daily budget stops runs in this tick).
    pub fn day_read(&mut self, written: Option<u64>) {
        self.daily = Daily::Left(written.map_or(0, |w| self.budget.daily_rows_written.saturating_sub(w)));
    }

    /// The rows a step of a lane the daily budget stops may use out of `rows`, having `spent`
    /// (everything the tick writes counts against the day, its log write included); `None` when
    /// the day has no room for `ask`: the lane rests until the next day.
    pub fn within_day(&self, rows: RowCount, spent: Spent, ask: Ask) -> Option<RowCount> {
        let Daily::Left(left) = self.daily else { return Some(rows) };
        let left = left.saturating_sub(spent.rows.written + spent.held_rows.written + LOG_ROWS.written);
        if left < ask.rows.written {
            return None;
        }
        Some(RowCount { written: rows.written.min(left), ..rows })
    }
}

/// The UTC day (`YYYY-MM-DD`) of a time in milliseconds since the Unix epoch: the day a
/// scheduled tick's rows count against, from its scheduled time.
pub fn utc_day(epoch_ms: f64) -> String {
    let (y, m, d) = time::civil_from_days((epoch_ms / 86_400_000.0).floor() as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The day `n` days after `day` (`YYYY-MM-DD`); `None` when `day` is not such a date.
pub fn add_days(day: &str, n: u64) -> Option<String> {
    let mut parts = day.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || day.len() != 10 {
        return None;
    }
    let days = time::days_from_civil(y, m, d) + i64::try_from(n).ok()?;
    Some(utc_day(days as f64 * 86_400_000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_raised_to_the_smallest_tick() {
        assert_eq!(MIN_TICK_STATEMENTS, 11);
        assert_eq!(Budget::new(3, 100.0).max_statements, MIN_TICK_STATEMENTS);
        assert_eq!(Budget::new(1000, 100.0).max_statements, 1000);
        let unlimited = Budget::new(1000, 100.0);
        assert_eq!((unlimited.max_rows, unlimited.daily_rows_written), (RowCount::new(u64::MAX, u64::MAX), 0));
    }

    #[test]
    fn a_scheduled_time_falls_on_its_utc_day() {
        assert_eq!(utc_day(0.0), "1970-01-01");
        assert_eq!(utc_day(86_399_999.0), "1970-01-01");
        assert_eq!(utc_day(86_400_000.0), "1970-01-02");
        assert_eq!(utc_day(951_782_400_000.0), "2000-02-29");
        assert_eq!(utc_day(1_798_761_599_999.0), "2026-12-31");
        assert_eq!(utc_day(1_798_761_600_000.0), "2027-01-01");
        assert_eq!(utc_day(-1.0), "1969-12-31");
    }

    #[test]
    fn days_are_added_across_months_years_and_leap_days() {
        assert_eq!(add_days("2030-01-01", 0).as_deref(), Some("2030-01-01"));
        assert_eq!(add_days("2030-01-31", 1).as_deref(), Some("2030-02-01"));
        assert_eq!(add_days("2028-02-28", 1).as_deref(), Some("2028-02-29"));
        assert_eq!(add_days("2030-12-31", 1).as_deref(), Some("2031-01-01"));
        assert_eq!(add_days("2030-01-01", 365).as_deref(), Some("2031-01-01"));
        assert_eq!(add_days("not a day", 1), None);
        assert_eq!(add_days("2030-13-01", 1), None);
    }

    #[test]
    fn an_estimate_counts_ticks_at_the_tick_rows_and_days_at_the_daily_budget() {
        let budget = Budget::new(40, 2500.0).with_rows(RowCount::new(20_000, 200_000)).with_daily_rows_written(50_000);
        let per_tick = 20_000 - LOG_ROWS.written - CONTINUATION_ROWS.written;
        let e = budget.estimate(100_000, "2030-01-01", 10_000);
        assert_eq!(e.ticks, 100_000u64.div_ceil(per_tick));
        // 40,000 left today, then 60,000 more: two more days.
        assert_eq!((e.days, e.finish_day.as_str()), (2, "2030-01-03"));
        let e = budget.estimate(30_000, "2030-01-01", 10_000);
        assert_eq!((e.days, e.finish_day.as_str()), (0, "2030-01-01"), "fits what today has left");
        let e = budget.with_daily_rows_written(0).estimate(100_000, "2030-01-01", 99_999_999);
        assert_eq!((e.days, e.finish_day.as_str()), (0, "2030-01-01"), "no daily budget");
        assert_eq!(budget.estimate(0, "2030-01-01", 60_000).ticks, 0);
    }

    #[test]
    fn a_continuing_tick_leaves_the_decision_its_statement_and_rows() {
        let budget = Budget::new(40, 100.0).with_rows(RowCount::new(1_000, 2_000)).less_continuation();
        assert_eq!(budget.max_statements, 40 - CONTINUATION_STATEMENTS);
        assert_eq!(budget.max_rows, RowCount::new(1_000, 2_000).minus(CONTINUATION_ROWS));
    }

    const ASK: Ask = Ask { statements: 5, rows: RowCount::new(100, 100), daily: false };

    fn ledger(statements: u64, rows: RowCount) -> Ledger {
        Ledger::new(Budget::new(statements, 100.0).with_rows(rows))
    }

    #[test]
    fn a_step_fits_what_is_left_after_the_spent_the_held_and_the_log_write() {
        let rows = RowCount::new(1_000, 1_000);
        let spent = Spent { statements: 10, rows: RowCount::new(200, 300), held: 2, held_rows: RowCount::new(4, 4) };
        let a = ledger(40, rows).allow(spent, ASK).unwrap();
        assert_eq!(a.room, 40 - 10 - 2 - LOG_STATEMENTS);
        assert_eq!(a.rows, rows.minus(RowCount::new(204, 304)).minus(LOG_ROWS));
        assert!(!a.reads_day, "no daily budget");
        // One statement short: out of budget.
        let tight = 10 + 2 + LOG_STATEMENTS + ASK.statements;
        assert!(ledger(tight, rows).allow(spent, ASK).is_some());
        assert!(ledger(tight - 1, rows).allow(spent, ASK).is_none(), "statements");
        // One row short, read or written.
        let need = RowCount::new(204, 304).plus(LOG_ROWS).plus(ASK.rows);
        assert!(ledger(40, need).allow(spent, ASK).is_some());
        assert!(ledger(40, need.minus(RowCount::new(1, 0))).allow(spent, ASK).is_none(), "rows written");
        assert!(ledger(40, need.minus(RowCount::new(0, 1))).allow(spent, ASK).is_none(), "rows read");
        // Released holds and operations outside the database count like statements.
        let more_held = Spent { held: 3, ..spent };
        assert!(ledger(tight, rows).allow(more_held, ASK).is_none(), "held");
        let more_held_rows = Spent { held_rows: RowCount::new(5, 4), ..spent };
        assert!(ledger(40, need).allow(more_held_rows, ASK).is_none(), "held rows");
    }

    #[test]
    fn a_tick_runs_out_of_time_at_its_wall_time() {
        let l = ledger(40, RowCount::new(1, 1));
        assert!(!l.out_of_time(99.9) && l.out_of_time(100.0));
    }

    #[test]
    fn the_first_step_the_daily_budget_stops_reads_the_day_and_pays_for_it() {
        let budget = Budget::new(40, 100.0).with_daily_rows_written(1_000);
        let mut l = Ledger::new(budget);
        let daily = Ask { daily: true, ..ASK };
        let spent = Spent { statements: 10, ..Spent::default() };
        assert!(!l.allow(spent, ASK).unwrap().reads_day, "a lane the daily budget does not stop");
        let a = l.allow(spent, daily).unwrap();
        assert!(a.reads_day);
        assert_eq!(a.room, 40 - 10 - LOG_STATEMENTS - DAILY_STATEMENTS);
        let tight = Ledger::new(Budget { max_statements: 10 + LOG_STATEMENTS + ASK.statements, ..budget });
        assert!(tight.allow(spent, ASK).is_some() && tight.allow(spent, daily).is_none(), "the read must fit");
        l.day_read(Some(400));
        let a = l.allow(spent, daily).unwrap();
        assert!(!a.reads_day, "read once");
        assert_eq!(a.room, 40 - 10 - LOG_STATEMENTS);
    }

    #[test]
    fn the_day_bounds_the_rows_a_step_writes_and_rests_a_lane_without_room() {
        let mut l = Ledger::new(Budget::new(40, 100.0).with_daily_rows_written(1_000));
        let daily = Ask { daily: true, ..ASK };
        let rows = RowCount::new(5_000, 5_000);
        let spent = Spent { rows: RowCount::new(150, 10), held_rows: RowCount::new(4, 4), ..Spent::default() };
        assert_eq!(l.within_day(rows, spent, daily), Some(rows), "not read yet: no bound");
        l.day_read(Some(600));
        // 400 left, less what this tick wrote, holds and its log write.
        let left = 400 - 150 - 4 - LOG_ROWS.written;
        assert_eq!(l.within_day(rows, spent, daily), Some(RowCount::new(left, 5_000)));
        let fits = Ask { rows: RowCount::new(left, 0), ..daily };
        assert!(l.within_day(rows, spent, fits).is_some());
        let short = Ask { rows: RowCount::new(left + 1, 0), ..daily };
        assert_eq!(l.within_day(rows, spent, short), None, "rests for the day");
        l.day_read(None);
        assert_eq!(l.within_day(rows, Spent::default(), daily), None, "unknown: nothing runs");
        let unlimited = Ledger::new(Budget::new(40, 100.0));
        assert_eq!(unlimited.within_day(rows, spent, daily), Some(rows));
    }
}
