//! The scheduled tick: runs the lanes of the lane list ([`Lane`]) in rotation while the tick's
//! statement, row and time budgets allow, decides whether to ask for a continuation, and records
//! the tick. Each lane's step lives with its work ([`crate::lane`]); the tick only dispatches, and
//! keeps the rules between lanes (`Rotation`). Budgets are configuration (D1 plans differ),
//! checked before each step against the metered count, so a tick never issues more statements
//! than configured, and a lane steps only while the most rows its step reads and writes fit what
//! is left. Background work shares a daily budget of rows written per UTC day: once the day's
//! ticks have written it, every lane but the work lane (the projection of content writes) and the
//! schedule lane (scheduled publishes, content writes at the time editors chose) rests until the
//! next day.

use serde_json::{json, Map, Value as Json};

use super::extract::Rules;
use super::project::{Admission, Policy, WorkLane, JOB_MAX_STATEMENTS};
use super::repair::RepairLane;
use crate::clock::Clock;
use crate::exec::meter::{Metered, Usage};
use crate::exec::{Error, Executor};
use crate::ids;
use crate::lane::adaptive::AdaptiveBatch;
use crate::lane::{Counter, Counts, Ctx, LaneStep, RowCount};
use crate::lifecycle::deletion::{CleanupBatch, DeletionLane};
use crate::lifecycle::fields::FieldLane;
use crate::lifecycle::media::purge::PurgeLane;
use crate::lifecycle::schedule::ScheduleLane;
use crate::lifecycle::tables::TablesLane;
use crate::model::state::TickOutcome;
use crate::model::time;
use crate::repo::continuation as continuation_repo;
use crate::repo::daily;
use crate::repo::ticks::{self as repo, TickLog};
use crate::storage::sweep::StorageLane;
use crate::storage::Storage;

/// The smallest statement budget a tick accepts: one job (its media lookup included), the
/// continuation's baton and the tick's own log write. Every lane's step fits it (a test checks).
pub const MIN_TICK_STATEMENTS: u64 = JOB_MAX_STATEMENTS + CONTINUATION_STATEMENTS + LOG_STATEMENTS;
/// Statements the tick's own log write costs.
pub const LOG_STATEMENTS: u64 = 1;
/// The most rows the tick's log write costs: its row, the pruning of the oldest and, through a
/// trigger, the day's row of [`daily`] and its pruning.
pub const LOG_ROWS: RowCount = RowCount::new(6, 6);
/// Statements reading the day's use of the daily budget (once per tick, before the first step of
/// a lane the daily budget stops).
pub const DAILY_STATEMENTS: u64 = 1;
/// An upper bound on steps per tick, whatever the budget.
pub const MAX_STEPS_PER_TICK: u32 = 10_000;

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
}

/// How background work is done, whoever does it (a tick, a repair request, the DELETE of a
/// collection, the after-write projection): the cleanup batch of the deletion lane, the policy
/// (reference rules, admission) of projection jobs and the size of their groups, and the storage
/// sweep's grace period. Built from the deployment's settings
/// ([`crate::settings::Settings::background`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BackgroundPolicy {
    /// Rows per cleanup statement of a collection deletion (the DELETE request records its start
    /// on the tombstone; the deletion lane adapts it).
    pub cleanup: CleanupBatch,
    /// What counts as a use and what one projection job may publish.
    pub projection: Policy,
    /// How the work lane sizes its group jobs within a tick ([`super::project::group_sizer`]).
    pub groups: AdaptiveBatch,
    /// How old an unreferenced stored object must be before the storage lane deletes it.
    pub storage_grace_ms: f64,
    /// How many days a media item stays in the trash before the purge lane deletes it.
    pub trash_days: f64,
}

impl BackgroundPolicy {
    /// This policy with another cleanup batch.
    pub fn with_cleanup(self, cleanup: CleanupBatch) -> BackgroundPolicy {
        BackgroundPolicy { cleanup, ..self }
    }

    /// This policy with another projection admission.
    pub fn with_admission(self, admission: Admission) -> BackgroundPolicy {
        BackgroundPolicy { projection: Policy { admission, ..self.projection }, ..self }
    }

    /// This policy under other reference rules.
    pub fn with_rules(self, rules: Rules) -> BackgroundPolicy {
        BackgroundPolicy { projection: Policy { rules, ..self.projection }, ..self }
    }

    /// This policy with another trash period.
    pub fn with_trash_days(self, trash_days: f64) -> BackgroundPolicy {
        BackgroundPolicy { trash_days, ..self }
    }

    /// This policy with another storage grace period.
    pub fn with_storage_grace_ms(self, storage_grace_ms: f64) -> BackgroundPolicy {
        BackgroundPolicy { storage_grace_ms, ..self }
    }
}

/// What a tick did.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    /// Lanes that made progress, in the order they first did (`work` when none did).
    pub lanes: Vec<&'static str>,
    /// Idle (nothing changed), progress, budget (progress, and stopped with due work left) or
    /// error.
    pub outcome: TickOutcome,
    /// What the lanes did, by tick-log counter: every counter of every kind of lane
    /// ([`Lane::COUNTERS`]), 0 when unused. Read one with [`TickReport::count`].
    pub counts: Counts,
    /// Statements issued, the log write included when the tick is recorded ([`run`]).
    pub statements: u64,
    /// Rows read and written, as the database reported them (the log write's [`LOG_ROWS`]
    /// included when the tick is recorded).
    pub rows: RowCount,
    /// The daily budget stopped a lane that had work due: it rests until the next UTC day.
    pub daily_spent: bool,
    /// The first error, prefixed with the lane (or step) it came from; the tick log says only
    /// that there was one.
    pub error: Option<String>,
    /// The continuation token to send: this tick took the continuation baton.
    pub continue_with: Option<String>,
}

impl TickReport {
    fn new() -> TickReport {
        TickReport {
            lanes: Vec::new(),
            outcome: TickOutcome::Idle,
            counts: Counts::declare(Lane::COUNTERS),
            statements: 0,
            rows: RowCount::default(),
            daily_spent: false,
            error: None,
            continue_with: None,
        }
    }

    /// The count of the tick-log counter `name` (`"jobs"`, `"deletedRows"`, …).
    pub fn count(&self, name: &str) -> u64 {
        debug_assert!(self.counts.has(name), "no lane counts {name:?}");
        self.counts.get(name)
    }

    fn note_error(&mut self, lane: &str, e: impl std::fmt::Display) {
        self.outcome = TickOutcome::Error;
        self.error.get_or_insert_with(|| format!("{lane} lane: {e}"));
    }

    /// Takes in a step of `lane`: progress, unless it only looked, and the failure it recorded.
    fn stepped(&mut self, lane: &'static str, step: &LaneStep) {
        if step.progressed {
            if self.outcome == TickOutcome::Idle {
                self.outcome = TickOutcome::Progress;
            }
            if !self.lanes.contains(&lane) {
                self.lanes.push(lane);
            }
        }
        if let Some(failure) = &step.failure {
            self.note_error(lane, failure);
        }
    }

    /// The rotation is over: a tick that made progress and stopped with due work left for lack
    /// of budget ends `budget` (which asks for a continuation).
    fn rotation_ended(&mut self, stopped_by_budget: bool) {
        if stopped_by_budget && self.outcome == TickOutcome::Progress {
            self.outcome = TickOutcome::Budget;
        }
        if self.lanes.is_empty() {
            self.lanes.push(WorkLane::NAME);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The lane list.

/// A lane of the tick, with its state for this tick. The variants are the lane list, in
/// rotation order; each lane's state type (in its own module) has its step, its statement
/// reserve and, where it holds something, its release.
#[derive(Debug)]
pub enum Lane<'a> {
    /// Projection jobs from the work queue.
    Work(WorkLane<'a>),
    /// Entries whose scheduled time has come, published (after the work lane: a tick of the
    /// smallest budget has room for one job before anything else looks).
    Schedule(ScheduleLane<'a>),
    /// Collection deletions past their front phases.
    Deletion(DeletionLane),
    /// Field deletions: their occurrences, then their columns.
    Fields(FieldLane),
    /// Repair runs.
    Repair(RepairLane<'a>),
    /// The media trash's purge.
    Purge(PurgeLane<'a>),
    /// The storage sweep (only with an object store).
    Storage(StorageLane<'a>),
    /// Content tables brought up to the current table revision.
    Tables(TablesLane),
}

impl<'a> Lane<'a> {
    /// Every kind of lane's tick-log counters, in rotation order: each is in every tick's log,
    /// the storage lane's too when there is no object store.
    pub const COUNTERS: &'static [&'static [Counter]] = &[
        WorkLane::COUNTERS,
        ScheduleLane::COUNTERS,
        DeletionLane::COUNTERS,
        FieldLane::COUNTERS,
        RepairLane::COUNTERS,
        PurgeLane::COUNTERS,
        StorageLane::COUNTERS,
        TablesLane::COUNTERS,
    ];

    /// The lanes of a tick at `when` under `policy`, in rotation order (the storage lane only
    /// with an object store).
    pub fn all(policy: &'a BackgroundPolicy, storage: Option<&'a dyn Storage>, when: &TickTime) -> Vec<Lane<'a>> {
        let mut lanes = vec![
            Lane::Work(WorkLane::new(&policy.projection, policy.groups)),
            Lane::Schedule(ScheduleLane::new(&policy.projection, when.now.clone())),
            Lane::Deletion(DeletionLane::new(policy.cleanup)),
            Lane::Fields(FieldLane::new(policy.cleanup)),
            Lane::Repair(RepairLane::new(&policy.projection.rules)),
            Lane::Purge(PurgeLane::new(storage, policy.trash_days, policy.projection.rules.id())),
        ];
        if let Some(store) = storage {
            lanes.push(Lane::Storage(StorageLane::new(store, policy.storage_grace_ms)));
        }
        lanes.push(Lane::Tables(TablesLane::new()));
        lanes
    }

    /// Its name in the tick log.
    pub fn name(&self) -> &'static str {
        match self {
            Lane::Schedule(_) => ScheduleLane::NAME,
            Lane::Work(_) => WorkLane::NAME,
            Lane::Deletion(_) => DeletionLane::NAME,
            Lane::Fields(_) => FieldLane::NAME,
            Lane::Repair(_) => RepairLane::NAME,
            Lane::Purge(_) => PurgeLane::NAME,
            Lane::Storage(_) => StorageLane::NAME,
            Lane::Tables(_) => TablesLane::NAME,
        }
    }

    /// The most statements its next step issues.
    pub fn reserve(&self) -> u64 {
        match self {
            Lane::Schedule(l) => l.reserve(),
            Lane::Work(l) => l.reserve(),
            Lane::Deletion(l) => l.reserve(),
            Lane::Fields(l) => l.reserve(),
            Lane::Repair(l) => l.reserve(),
            Lane::Purge(l) => l.reserve(),
            Lane::Storage(l) => l.reserve(),
            Lane::Tables(l) => l.reserve(),
        }
    }

    /// The most rows its next step reads and writes at its smallest: a lane sizes its batches
    /// to the room it is given beyond that.
    pub fn reserve_rows(&self) -> RowCount {
        match self {
            Lane::Schedule(l) => l.reserve_rows(),
            Lane::Work(l) => l.reserve_rows(),
            Lane::Deletion(l) => l.reserve_rows(),
            Lane::Fields(l) => l.reserve_rows(),
            Lane::Repair(l) => l.reserve_rows(),
            Lane::Purge(l) => l.reserve_rows(),
            Lane::Storage(l) => l.reserve_rows(),
            Lane::Tables(l) => l.reserve_rows(),
        }
    }

    /// Whether the daily budget stops it: every lane but the work lane, which projects what
    /// content writes queued, and the schedule lane, whose publishes are editors' content writes
    /// at the time they chose.
    fn daily(&self) -> bool {
        !matches!(self, Lane::Work(_) | Lane::Schedule(_))
    }

    /// Statements finishing the lane will cost when the tick ends (releasing what it holds).
    pub fn release_cost(&self) -> u64 {
        match self {
            Lane::Deletion(l) => l.release_cost(),
            Lane::Fields(l) => l.release_cost(),
            Lane::Schedule(_)
            | Lane::Work(_)
            | Lane::Repair(_)
            | Lane::Purge(_)
            | Lane::Storage(_)
            | Lane::Tables(_) => 0,
        }
    }

    /// Rows finishing the lane will cost when the tick ends.
    pub fn release_rows(&self) -> RowCount {
        match self {
            Lane::Deletion(l) => l.release_rows(),
            Lane::Fields(l) => l.release_rows(),
            Lane::Schedule(_)
            | Lane::Work(_)
            | Lane::Repair(_)
            | Lane::Purge(_)
            | Lane::Storage(_)
            | Lane::Tables(_) => RowCount::default(),
        }
    }

    /// Runs one step; `None` when the lane has nothing due.
    async fn step<E: Executor, K: Clock>(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        match self {
            Lane::Schedule(l) => l.step(ctx).await,
            Lane::Work(l) => l.step(ctx).await,
            Lane::Deletion(l) => l.step(ctx).await,
            Lane::Fields(l) => l.step(ctx).await,
            Lane::Repair(l) => l.step(ctx).await,
            Lane::Purge(l) => l.step(ctx).await,
            Lane::Storage(l) => l.step(ctx).await,
            Lane::Tables(l) => l.step(ctx).await,
        }
    }

    /// Releases what the lane holds (the tick is over).
    async fn finish<E: Executor>(&mut self, exec: &E) -> Result<(), Error> {
        match self {
            Lane::Deletion(l) => l.finish(exec).await,
            Lane::Fields(l) => l.finish(exec).await,
            Lane::Schedule(_)
            | Lane::Work(_)
            | Lane::Repair(_)
            | Lane::Purge(_)
            | Lane::Storage(_)
            | Lane::Tables(_) => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The rotation.

/// Where the lanes stand in this tick's rotation, and the rules between them. Pure: the loop asks
/// which lane may step and says how each step ended.
#[derive(Debug)]
struct Rotation {
    slots: Vec<Slot>,
    /// The work lane's slot, whose running out of work wakes the lanes waiting for it.
    work: Option<usize>,
}

/// A lane's place in the rotation.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Nothing due (or it failed, or it sleeps): skipped until woken.
    idle: bool,
    /// Its next step does not fit the budget any more.
    out_of_budget: bool,
    /// Asleep until the work lane runs out of due work.
    waiting_for_work: bool,
}

impl Rotation {
    fn new(lanes: usize, work: Option<usize>) -> Rotation {
        Rotation { slots: vec![Slot::default(); lanes], work }
    }

    /// Whether lane `k` may step.
    fn ready(&self, k: usize) -> bool {
        let s = self.slots[k];
        !s.idle && !s.out_of_budget
    }

    /// `Some` once no lane may step, saying whether one still had due work but no budget left.
    fn over(&self) -> Option<bool> {
        let over = self.slots.iter().all(|s| s.idle || s.out_of_budget);
        over.then(|| self.slots.iter().any(|s| s.out_of_budget && !s.idle))
    }

    /// Lane `k`'s next step does not fit the budget.
    fn out_of_budget(&mut self, k: usize) {
        self.slots[k].out_of_budget = true;
        // The work lane will not run again this tick: whoever waited for it looks now.
        if self.work == Some(k) {
            self.wake_waiters();
        }
    }

    /// Lane `k` has nothing due.
    fn nothing_due(&mut self, k: usize) {
        self.slots[k].idle = true;
        // The work lane ran out of due work: whoever waited for it looks again.
        if self.work == Some(k) {
            self.wake_waiters();
        }
    }

    /// Lane `k` failed: it rests for the rest of the tick, and the others go on.
    fn failed(&mut self, k: usize) {
        self.slots[k].idle = true;
    }

    /// The daily budget has no room for lane `k`'s step: it rests until the next day, which is
    /// not a budget stop (no continuation is asked for it).
    fn rest_for_the_day(&mut self, k: usize) {
        self.slots[k].idle = true;
    }

    /// Lane `k` stepped.
    fn stepped(&mut self, k: usize, step: &LaneStep) {
        if step.wakes_work {
            if let Some(w) = self.work {
                self.slots[w].idle = false;
            }
        }
        // A run waiting for the queue sleeps until the work lane is idle or out of budget (if it
        // already is, the run's next look is its barrier step, the cheapest).
        if step.waits_for_work && self.work.is_some_and(|w| self.ready(w)) {
            self.slots[k].idle = true;
            self.slots[k].waiting_for_work = true;
        }
    }

    /// Wakes the lanes asleep until the work lane stops.
    fn wake_waiters(&mut self) {
        for s in self.slots.iter_mut().filter(|s| s.waiting_for_work) {
            s.waiting_for_work = false;
            s.idle = false;
        }
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

impl Budget {
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

/// Where a tick stands with the daily budget.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Daily {
    /// No daily budget.
    Unlimited,
    /// The day's use is read before the first step a daily budget can stop.
    Unread,
    /// The budget less what the day's ticks wrote before this one.
    Left(u64),
}

/// Runs the lanes in rotation while the budget allows another step of one of them, without
/// recording a tick; with an object store (`storage`), its sweep is one more lane, whose
/// operations count against the statement budget. The daily budget is kept for `when`'s day, and
/// the schedule lane publishes what is due by `when`'s time.
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
    let mut lanes = Lane::all(policy, storage, when);
    let mut rotation = Rotation::new(lanes.len(), lanes.iter().position(|l| matches!(l, Lane::Work(_))));
    let spent = || {
        let u = exec.usage();
        RowCount::new(u.rows_written, u.rows_read)
    };
    let mut daily = if budget.daily_rows_written == 0 { Daily::Unlimited } else { Daily::Unread };

    let mut stopped_by_budget = false;
    for turn in 0..MAX_STEPS_PER_TICK as usize {
        if let Some(by_budget) = rotation.over() {
            stopped_by_budget = by_budget;
            break;
        }
        if clock.now_ms() - started >= budget.max_ms {
            stopped_by_budget = true;
            break;
        }
        let k = turn % lanes.len();
        if !rotation.ready(k) {
            continue;
        }
        let reading_day = lanes[k].daily() && daily == Daily::Unread;
        // Spent so far (object-store operations count like statements), plus what releasing the
        // lanes' holds and the log write will cost.
        let held: u64 = lanes.iter().map(Lane::release_cost).sum();
        let held_rows = lanes.iter().map(Lane::release_rows).fold(RowCount::default(), RowCount::plus);
        let committed = exec.usage().statements
            + report.counts.spending_budget()
            + held
            + LOG_STATEMENTS
            + if reading_day { DAILY_STATEMENTS } else { 0 };
        let committed_rows = spent().plus(held_rows).plus(LOG_ROWS);
        let reserve_rows = lanes[k].reserve_rows();
        if committed + lanes[k].reserve() > budget.max_statements
            || !committed_rows.plus(reserve_rows).fits(budget.max_rows)
        {
            rotation.out_of_budget(k);
            continue;
        }
        let mut rows = budget.max_rows.minus(committed_rows);
        if lanes[k].daily() {
            if reading_day {
                daily = match daily::usage(exec, when.day.as_deref()).await {
                    Ok(used) => Daily::Left(budget.daily_rows_written.saturating_sub(used.rows_written)),
                    // Unknown: nothing the daily budget stops runs in this tick.
                    Err(e) => {
                        report.note_error("daily budget", e);
                        Daily::Left(0)
                    }
                };
            }
            if let Daily::Left(left) = daily {
                // Everything this tick writes counts against the day (its log write included).
                let left = left.saturating_sub(spent().written + held_rows.written + LOG_ROWS.written);
                if left < reserve_rows.written {
                    report.daily_spent = true;
                    rotation.rest_for_the_day(k);
                    continue;
                }
                rows.written = rows.written.min(left);
            }
        }
        let lane = &mut lanes[k];
        let room = budget.max_statements.saturating_sub(committed);
        let mut ctx = Ctx { exec, clock, room, rows, spent: &spent, counts: &mut report.counts };
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
    report.rows = spent();
    report
}

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

/// Statements the continuation decision costs (taking or dropping the baton).
pub const CONTINUATION_STATEMENTS: u64 = 1;
/// The most rows the continuation decision costs.
pub const CONTINUATION_ROWS: RowCount = RowCount::new(4, 4);

/// When a tick runs, for what depends on the date: the UTC day its rows count against (the daily
/// budget) and the time up to which the schedule lane publishes. A cron tick's are its scheduled
/// time's; a continuation tick's and a repair request's, the database's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickTime {
    /// `YYYY-MM-DD`; `None`: the database's day.
    pub day: Option<String>,
    /// A time in the database clock's form; `None`: the database clock's now (a time before the
    /// database clock counts as the database clock).
    pub now: Option<String>,
}

impl TickTime {
    /// The database's day and clock.
    pub fn database() -> TickTime {
        TickTime::default()
    }

    /// A tick scheduled at `epoch_ms` (milliseconds since the Unix epoch): that time, and its
    /// UTC day (the database's, for a time no date can hold).
    pub fn scheduled(epoch_ms: f64) -> TickTime {
        match time::format_ms(epoch_ms.floor() as i64).filter(|_| epoch_ms.is_finite()) {
            Some(now) => TickTime { day: Some(utc_day(epoch_ms)), now: Some(now) },
            None => TickTime::database(),
        }
    }

    /// The day `day` (`YYYY-MM-DD`), at the database clock's time.
    pub fn on_day(day: &str) -> TickTime {
        TickTime { day: Some(day.to_owned()), now: None }
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

/// [`run`] at `when`: its rows count against the daily budget of its day, and the schedule lane
/// publishes what is due by its time.
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
        Continuation::On { .. } => Budget {
            max_statements: budget.max_statements - CONTINUATION_STATEMENTS,
            max_rows: budget.max_rows.minus(CONTINUATION_ROWS),
            ..budget
        },
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
        day: when.day.clone(),
    };
    if let Err(e) = repo::insert_tick(exec, &log).await {
        report.note_error("tick log", format!("write failed: {e}"));
    }
    report
}

/// The tick log's `details`: every lane counter, whether the tick asked for a continuation, what
/// the database reported for the statements before the log write, and whether there was an
/// error (its cause goes to the worker log only). Keys sort (`openapi.json`, `TickDetails`).
fn details(report: &TickReport, usage: &Usage) -> String {
    let mut details: Map<String, Json> =
        report.counts.iter().map(|(name, n)| (name.to_owned(), Json::from(n))).collect();
    details.insert("continued".into(), Json::from(report.continue_with.is_some()));
    details.insert("dailyBudgetSpent".into(), Json::from(report.daily_spent));
    details.insert(
        "d1".into(),
        json!({
            "results": usage.results,
            "failed": usage.failed,
            "rowsRead": usage.rows_read,
            "rowsWritten": usage.rows_written,
            "maxBinds": usage.max_binds,
            "maxSqlBytes": usage.max_sql_bytes,
        }),
    );
    details.insert("error".into(), json!(report.error.as_ref().map(|_| "see worker logs")));
    Json::Object(details).to_string()
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
    fn a_cron_tick_runs_at_its_scheduled_time_and_on_its_day() {
        let t = TickTime::scheduled(4_070_908_800_000.0);
        assert_eq!((t.day.as_deref(), t.now.as_deref()), (Some("2099-01-01"), Some("2099-01-01T00:00:00.000Z")));
        let t = TickTime::scheduled(4_070_908_799_999.9);
        assert_eq!((t.day.as_deref(), t.now.as_deref()), (Some("2098-12-31"), Some("2098-12-31T23:59:59.999Z")));
        assert_eq!(TickTime::scheduled(1e300), TickTime::database(), "beyond what a time can hold: the database's");
        assert_eq!(TickTime::scheduled(f64::NAN), TickTime::database());
        assert_eq!(TickTime::database(), TickTime { day: None, now: None });
        assert_eq!(TickTime::on_day("2030-01-02"), TickTime { day: Some("2030-01-02".into()), now: None });
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
    fn every_lane_can_step_in_a_tick_of_the_smallest_budget() {
        let policy = crate::settings::Settings::defaults().background();
        let store = crate::storage::memory::MemoryStorage::new(0.0);
        let lanes = Lane::all(&policy, Some(&store), &TickTime::database());
        assert_eq!(lanes.len(), Lane::COUNTERS.len(), "the lane list and its counters name the same lanes");
        let rows = crate::settings::Settings::defaults().budget().max_rows;
        for lane in lanes {
            let needs = lane.reserve() + CONTINUATION_STATEMENTS + LOG_STATEMENTS;
            assert!(needs <= MIN_TICK_STATEMENTS, "{} needs {needs}", lane.name());
            // A lane the daily budget can stop reads the day's use before its first step.
            let needs = needs + if lane.daily() { DAILY_STATEMENTS } else { 0 };
            assert!(needs <= MIN_TICK_STATEMENTS, "{} needs {needs} with the daily read", lane.name());
            let needs = lane.reserve_rows().plus(CONTINUATION_ROWS).plus(LOG_ROWS);
            assert!(needs.fits(crate::settings::MIN_TICK_ROWS), "{} needs {needs:?} rows", lane.name());
            assert!(needs.fits(rows), "{} needs {needs:?} rows", lane.name());
        }
    }

    const WORK: usize = 0;
    const REPAIR: usize = 2;

    fn waits_for_work() -> LaneStep {
        LaneStep { waits_for_work: true, ..LaneStep::progress() }
    }

    #[test]
    fn a_lane_waiting_for_work_sleeps_until_the_work_lane_runs_out_of_due_work() {
        let mut r = Rotation::new(3, Some(WORK));
        r.stepped(REPAIR, &waits_for_work());
        assert!(!r.ready(REPAIR), "asleep while the work lane runs");
        r.stepped(WORK, &LaneStep::progress());
        assert!(!r.ready(REPAIR));
        assert_eq!(r.over(), None, "the work lane still runs");
        r.nothing_due(WORK);
        assert!(r.ready(REPAIR), "woken: the work lane is idle");
    }

    #[test]
    fn a_lane_waiting_for_work_wakes_when_the_work_lane_is_out_of_budget() {
        let mut r = Rotation::new(3, Some(WORK));
        r.stepped(REPAIR, &waits_for_work());
        assert!(!r.ready(REPAIR));
        r.out_of_budget(WORK);
        assert!(r.ready(REPAIR), "the work lane will not run again this tick");
    }

    #[test]
    fn a_lane_does_not_wait_for_a_work_lane_that_cannot_run() {
        let mut r = Rotation::new(3, Some(WORK));
        r.nothing_due(WORK);
        r.stepped(REPAIR, &waits_for_work());
        assert!(r.ready(REPAIR), "its next look is its barrier step");
        let mut r = Rotation::new(3, None);
        r.stepped(1, &waits_for_work());
        assert!(r.ready(1), "no work lane");
    }

    #[test]
    fn only_the_work_lane_wakes_the_waiters() {
        let mut r = Rotation::new(3, Some(WORK));
        r.stepped(REPAIR, &waits_for_work());
        r.nothing_due(1);
        r.out_of_budget(1);
        assert!(!r.ready(REPAIR));
    }

    #[test]
    fn a_step_that_queued_work_wakes_the_idle_work_lane() {
        let mut r = Rotation::new(3, Some(WORK));
        r.nothing_due(WORK);
        assert!(!r.ready(WORK));
        r.stepped(REPAIR, &LaneStep::progress());
        assert!(!r.ready(WORK), "a step that queued nothing leaves it idle");
        r.stepped(REPAIR, &LaneStep { wakes_work: true, ..LaneStep::progress() });
        assert!(r.ready(WORK));
    }

    #[test]
    fn a_failed_lane_rests_and_the_rotation_ends_when_no_lane_may_step() {
        let mut r = Rotation::new(3, Some(WORK));
        r.failed(1);
        assert!(!r.ready(1) && r.ready(WORK));
        r.nothing_due(WORK);
        assert_eq!(r.over(), None);
        r.nothing_due(REPAIR);
        assert_eq!(r.over(), Some(false), "nothing left due");
        let mut r = Rotation::new(3, Some(WORK));
        r.nothing_due(WORK);
        r.nothing_due(1);
        r.out_of_budget(REPAIR);
        assert_eq!(r.over(), Some(true), "a lane had due work but no budget");
    }

    #[test]
    fn a_step_that_only_looked_is_not_progress() {
        let mut report = TickReport::new();
        report.stepped("storage", &LaneStep::looked());
        assert_eq!((report.outcome, report.lanes.clone()), (TickOutcome::Idle, vec![]));
        report.rotation_ended(true);
        assert_eq!(report.outcome, TickOutcome::Idle, "looking only never asks for a continuation");
        assert_eq!(report.lanes, ["work"]);

        let mut report = TickReport::new();
        report.stepped("storage", &LaneStep::looked());
        report.stepped("deletion", &LaneStep::progress());
        report.stepped("deletion", &LaneStep::progress());
        assert_eq!((report.outcome, report.lanes.clone()), (TickOutcome::Progress, vec!["deletion"]));
        report.rotation_ended(true);
        assert_eq!(report.outcome, TickOutcome::Budget, "progress stopped by the budget");
    }

    #[test]
    fn a_failure_a_lane_recorded_is_the_ticks_error() {
        let mut report = TickReport::new();
        report.stepped("deletion", &LaneStep { failure: Some("posts at work: boom".into()), ..LaneStep::progress() });
        assert_eq!(report.outcome, TickOutcome::Error);
        assert_eq!(report.error.as_deref(), Some("deletion lane: posts at work: boom"));
        assert_eq!(report.lanes, ["deletion"]);
    }

    #[test]
    fn the_tick_log_details_keep_their_keys_and_shape() {
        let mut report = TickReport::new();
        report.counts.add(crate::usage::project::JOBS, 3);
        report.counts.add(crate::storage::sweep::STORAGE_OPERATIONS, 2);
        report.error = Some("x".into());
        let usage = Usage {
            results: 4,
            failed: 1,
            rows_read: 5,
            rows_written: 6,
            max_binds: 7,
            max_sql_bytes: 8,
            ..Usage::default()
        };
        // The shape the workerd tests, the console and openapi.json read.
        let expected = json!({
            "scheduledPublished": 0,
            "schedulesDropped": 0,
            "scheduleFailures": 0,
            "jobs": 3,
            "failedJobs": 0,
            "conflicts": 0,
            "repairSteps": 0,
            "deletionSteps": 0,
            "deletedRows": 0,
            "deletionsFinalized": 0,
            "deletionFailures": 0,
            "fieldDeletionSteps": 0,
            "fieldOccurrencesDeleted": 0,
            "fieldDeletionsFinalized": 0,
            "fieldDeletionFailures": 0,
            "mediaPurged": 0,
            "purgeOperations": 0,
            "objectsDeleted": 0,
            "storageOperations": 2,
            "tablesUpgraded": 0,
            "continued": false,
            "dailyBudgetSpent": false,
            "d1": { "results": 4, "failed": 1, "rowsRead": 5, "rowsWritten": 6, "maxBinds": 7, "maxSqlBytes": 8 },
            "error": "see worker logs",
        });
        assert_eq!(details(&report, &usage), expected.to_string());
        report.error = None;
        report.continue_with = Some("t".into());
        let d: Json = serde_json::from_str(&details(&report, &usage)).unwrap();
        assert_eq!((&d["continued"], &d["error"]), (&Json::Bool(true), &Json::Null));
    }
}
