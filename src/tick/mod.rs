//! The scheduled tick: runs the lane list ([`lanes`]) in rotation while the tick's statement,
//! row and time budgets allow, decides whether to ask for a continuation, and records the tick.
//! Each lane's step lives with its work ([`crate::lane::Lane`]); the tick only runs them, keeps
//! the rules between lanes ([`rotation`]) and the account of its budget ([`budget::Ledger`]),
//! and reports what it did ([`report`]). Budgets are configuration (D1 plans differ), checked
//! before each step against the metered count, so a tick never issues more statements than
//! configured, and a lane steps only while the most rows its step reads and writes fit what is
//! left. Background work shares a daily budget of rows written per UTC day: once the day's ticks
//! have written it, every lane but the work lane (the projection of content writes) and the
//! schedule lane (scheduled publishes, content writes at the time editors chose) rests until the
//! next day.

pub mod budget;
pub mod lanes;
pub mod report;
mod rotation;

use budget::{Ask, Budget, Ledger, Spent, LOG_ROWS, LOG_STATEMENTS};
use lanes::{BackgroundPolicy, Listed};
use report::{details, TickReport};
use rotation::Rotation;

use crate::clock::Clock;
use crate::exec::meter::Metered;
use crate::exec::Executor;
use crate::ids;
use crate::lane::{Ctx, RowCount};
use crate::model::state::TickOutcome;
use crate::model::time;
use crate::repo::continuation as continuation_repo;
use crate::repo::daily;
use crate::repo::ticks::{self as repo, TickLog};
use crate::storage::Storage;
use crate::usage::project::WorkLane;

/// An upper bound on steps per tick, whatever the budget.
pub const MAX_STEPS_PER_TICK: u32 = 10_000;

/// Whether a tick may ask for a continuation (another tick at once, through a queue) when it
/// ends with due work left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuation<'a> {
    /// No continuation queue: cron alone drives the work.
    Off,
    /// A continuation queue is bound; `handing_on` is the token of the continuation message this
    /// tick runs for (`None` for a cron tick).
    On { handing_on: Option<&'a str> },
}

/// When a tick runs, for what depends on the time: the time up to which the schedule lane
/// publishes. A cron tick's is its scheduled time (the database clock when that is later); a
/// continuation tick's and a repair request's, the database clock's. Nothing stored comes from
/// it: the UTC day a tick's rows count against (the daily budget) and every stored time are the
/// database clock's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickTime {
    /// A time in the database clock's form; `None`: the database clock's now (a time before the
    /// database clock counts as the database clock).
    pub now: Option<String>,
}

impl TickTime {
    /// The database clock.
    pub fn database() -> TickTime {
        TickTime::default()
    }

    /// A tick scheduled at `epoch_ms` (milliseconds since the Unix epoch): that time (the
    /// database's, for a time no date can hold).
    pub fn scheduled(epoch_ms: f64) -> TickTime {
        TickTime { now: time::format_ms(epoch_ms.floor() as i64).filter(|_| epoch_ms.is_finite()) }
    }
}

/// Runs one tick against a metered executor and records it in `_emdash_media_usage_ticks`. With
/// an object store (`storage`), its sweep is one more lane. With a continuation queue, a tick
/// that ends with due work left (stopped by its budget) takes the continuation baton and reports
/// the token to send in `continue_with`, and one that ends with nothing due drops the baton it
/// was handed. At most one continuation is in flight; the decision counts against the tick's
/// statement budget.
pub async fn run<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: Budget,
    policy: &BackgroundPolicy,
    continuation: Continuation<'_>,
    storage: Option<&dyn Storage>,
) -> TickReport {
    run_on(exec, clock, budget, policy, continuation, storage, &TickTime::database()).await
}

/// [`run`] at `when`: the schedule lane publishes what is due by its time. Its rows count against
/// the daily budget of the database's day.
pub async fn run_on<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: Budget,
    policy: &BackgroundPolicy,
    continuation: Continuation<'_>,
    storage: Option<&dyn Storage>,
    when: &TickTime,
) -> TickReport {
    let started = clock.now_ms();
    let lanes_budget = match continuation {
        Continuation::Off => budget,
        Continuation::On { .. } => budget.less_continuation(),
    };
    let mut report = run_lanes(exec, clock, lanes_budget, policy, storage, when).await;
    if let Continuation::On { handing_on } = continuation {
        let decided = if report.outcome == TickOutcome::Budget {
            let token = ids::new_id();
            continuation_repo::claim(exec, &token, handing_on).await.map(|taken| taken.then_some(token))
        } else if let Some(held) = handing_on {
            continuation_repo::release(exec, held).await.map(|()| None)
        } else {
            Ok(None)
        };
        match decided {
            Ok(token) => report.continue_with = token,
            Err(e) => report.note_error("continuation", e),
        }
    }
    let usage = exec.usage();
    report.statements = usage.statements + LOG_STATEMENTS;
    report.rows = RowCount::new(usage.rows_written, usage.rows_read).plus(LOG_ROWS);
    let log = TickLog {
        lane: report.lanes.join(","),
        outcome: report.outcome,
        statements: report.statements,
        rows_written: report.rows.written,
        rows_read: report.rows.read,
        duration_ms: (clock.now_ms() - started).max(0.0).round() as u64,
        details: Some(details(&report, &usage)),
    };
    if let Err(e) = repo::insert_tick(exec, &log).await {
        report.note_error("tick log", format!("write failed: {e}"));
    }
    report
}

/// Runs the lanes in rotation while the budget allows another step of one of them, without
/// recording a tick; with an object store (`storage`), its sweep is one more lane, whose
/// operations count against the statement budget. The daily budget is kept for the database's day,
/// and the schedule lane publishes what is due by `when`'s time.
pub async fn run_lanes<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: Budget,
    policy: &BackgroundPolicy,
    storage: Option<&dyn Storage>,
    when: &TickTime,
) -> TickReport {
    let started = clock.now_ms();
    let mut report = TickReport::new();
    let mut lanes = lanes::lanes::<Metered<E, C>, K>(policy, storage, when);
    let mut rotation = Rotation::new(lanes.len(), lanes.iter().position(|l| l.name() == WorkLane::NAME));
    let mut ledger = Ledger::new(budget);
    let rows_spent = || {
        let u = exec.usage();
        RowCount::new(u.rows_written, u.rows_read)
    };

    let mut stopped_by_budget = false;
    for turn in 0..MAX_STEPS_PER_TICK as usize {
        if let Some(by_budget) = rotation.over() {
            stopped_by_budget = by_budget;
            break;
        }
        if ledger.out_of_time(clock.now_ms() - started) {
            stopped_by_budget = true;
            break;
        }
        let k = turn % lanes.len();
        if !rotation.ready(k) {
            continue;
        }
        let ask = Ask { statements: lanes[k].reserve(), rows: lanes[k].reserve_rows(), daily: lanes[k].daily() };
        let Some(allowance) = ledger.allow(spent(exec, &report, &lanes), ask) else {
            rotation.out_of_budget(k);
            continue;
        };
        let mut rows = allowance.rows;
        if ask.daily {
            if allowance.reads_day {
                match daily::usage(exec, None).await {
                    Ok(used) => ledger.day_read(Some(used.rows_written)),
                    // Unknown: nothing the daily budget stops runs in this tick.
                    Err(e) => {
                        report.note_error("daily budget", e);
                        ledger.day_read(None);
                    }
                }
            }
            match ledger.within_day(rows, spent(exec, &report, &lanes), ask) {
                Some(within) => rows = within,
                None => {
                    report.daily_spent = true;
                    rotation.rest_for_the_day(k);
                    continue;
                }
            }
        }
        let lane = &mut lanes[k];
        let mut ctx = Ctx { exec, clock, room: allowance.room, rows, spent: &rows_spent, counts: &mut report.counts };
        match lane.step(&mut ctx).await {
            Ok(None) => rotation.nothing_due(k),
            Ok(Some(step)) if step.out_of_room => rotation.out_of_budget(k),
            Ok(Some(step)) => {
                report.stepped(lane.name(), &step);
                rotation.stepped(k, &step);
            }
            // One lane's failure must not starve the others: note it, rest that lane, go on.
            Err(e) => {
                report.note_error(lane.name(), &e);
                rotation.failed(k);
            }
        }
    }
    for lane in &mut lanes {
        if let Err(e) = lane.finish(exec).await {
            report.note_error(lane.name(), &e);
        }
    }
    report.rotation_ended(stopped_by_budget);
    report.statements = exec.usage().statements;
    report.rows = rows_spent();
    report
}

/// What the tick has spent so far (object-store operations count like statements), and what
/// releasing the lanes' holds will cost.
fn spent<E: Executor, C: Clock, K>(
    exec: &Metered<E, C>,
    report: &TickReport,
    lanes: &[Box<dyn Listed<Metered<E, C>, K> + '_>],
) -> Spent {
    let usage = exec.usage();
    Spent {
        statements: usage.statements + report.counts.spending_budget(),
        rows: RowCount::new(usage.rows_written, usage.rows_read),
        held: lanes.iter().map(|l| l.release_cost()).sum(),
        held_rows: lanes.iter().map(|l| l.release_rows()).fold(RowCount::default(), RowCount::plus),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cron_tick_publishes_up_to_its_scheduled_time_and_keeps_no_day_of_it() {
        let t = TickTime::scheduled(4_070_908_800_000.0);
        assert_eq!(t.now.as_deref(), Some("2099-01-01T00:00:00.000Z"));
        let t = TickTime::scheduled(4_070_908_799_999.9);
        assert_eq!(t.now.as_deref(), Some("2098-12-31T23:59:59.999Z"));
        assert_eq!(TickTime::scheduled(1e300), TickTime::database(), "beyond what a time can hold: the database's");
        assert_eq!(TickTime::scheduled(f64::NAN), TickTime::database());
        assert_eq!(TickTime::database(), TickTime { now: None });
    }
}
