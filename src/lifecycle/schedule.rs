//! The `schedule` lane: publishes the entries whose scheduled time has come, one per step, the
//! earliest first, found by one search of the schedule index (`repo::schedule`), so a tick with
//! nothing due costs one statement however many entries are scheduled for later.
//!
//! A step publishes as the publish request does ([`super::publish`]: the draft revision's values
//! go live once found current, valid and admitted), by one statement that fires only while the
//! entry is still at the version read, outside the trash and scheduled for exactly the time it was
//! found due. That statement's capture trigger queues the entry's projection, and the index row
//! goes in the same batch: a crash or an unseen commit leaves the entry either unpublished with
//! its schedule (the next tick publishes it) or published with its projection queued (the work
//! lane projects it; the step wakes it). So "Used in" and the sitemaps change when the schedule
//! fires, not before. An index row whose entry no longer has its schedule (published or
//! unscheduled by hand, trashed, deleted, its collection gone) is dropped when it comes due; a
//! publish the entry's state refuses (a stale or invalid draft, one the index could not take, a
//! taken slug) drops the row too and is the tick's error: the entry keeps its status and its
//! `scheduledAt` in the past, which an editor sees, until it is scheduled again or published by
//! hand.

use serde_json::Value as Json;

use super::publish;
use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::model::ident::Ident;
use crate::repo::content;
use crate::repo::schedule::{self as repo, Due};
use crate::repo::schema;
use crate::usage::admission::OCCURRENCE_ROWS;
use crate::usage::project::Policy;

/// Entries the lane published.
pub const SCHEDULED_PUBLISHED: Counter = Counter::new("scheduledPublished");
/// Rows of the schedule index dropped because their entry no longer had that schedule.
pub const SCHEDULES_DROPPED: Counter = Counter::new("schedulesDropped");
/// Due publishes the entry's state refused (their rows are dropped).
pub const SCHEDULE_FAILURES: Counter = Counter::new("scheduleFailures");

/// The most statements one step issues: the due search, the collection, the entry, its draft
/// revision, the draft's media lookup (admission), the batch of the publish and the index row,
/// and the drop of that row when the database refuses the publish.
pub const STEP_MAX_STATEMENTS: u64 = 8;
/// The most rows a step reads and writes without the draft's media lookup: the entry published
/// (its row and index entries), its queued projection and coverage row (the capture trigger), the
/// index row dropped; the registry and the collection's fields, the entry and its draft read.
pub const STEP_ROWS: RowCount = RowCount::new(40, 200);

/// The schedule lane in a tick: each due schedule at most once per tick, earliest first.
#[derive(Debug, Clone)]
pub struct ScheduleLane<'a> {
    policy: &'a Policy,
    /// The tick's time (`None`: the database clock's).
    now: Option<String>,
    /// The last schedule a step took in this tick.
    after: Option<Due>,
    done: bool,
}

/// Whether a refusal by the database is the entry's state, not the moment's (the same publish
/// would be refused again): a constraint (a taken slug), a value or row too big, a statement over
/// D1's limits.
fn refused_for_good(e: &Error) -> bool {
    matches!(e, Error::Unique(_) | Error::Constraint(_) | Error::TooBig(_) | Error::LimitExceeded(_))
}

/// A step that dropped an index row (or found it gone already).
fn dropped_row<E, K>(ctx: &mut Ctx<'_, E, K>, dropped: bool) -> LaneStep {
    ctx.count(SCHEDULES_DROPPED, u64::from(dropped));
    if dropped {
        LaneStep::progress()
    } else {
        LaneStep::looked()
    }
}

impl<'a> ScheduleLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "schedule";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[SCHEDULED_PUBLISHED, SCHEDULES_DROPPED, SCHEDULE_FAILURES];

    /// The lane at the start of a tick whose time is `now` (`None`: the database clock's; a time
    /// before the database clock's counts as the database clock's), publishing under `policy`.
    pub fn new(policy: &'a Policy, now: Option<String>) -> ScheduleLane<'a> {
        ScheduleLane { policy, now, after: None, done: false }
    }
}

impl<E: Executor, K> Lane<E, K> for ScheduleLane<'_> {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// Not stopped by the daily budget: its publishes are editors' content writes at the time
    /// they chose.
    fn daily(&self) -> bool {
        false
    }

    /// The most statements one step issues.
    fn reserve(&self) -> u64 {
        STEP_MAX_STATEMENTS
    }

    /// The most rows one step reads and writes: [`STEP_ROWS`], and the media lookup of a draft at
    /// the admission limit.
    fn reserve_rows(&self) -> RowCount {
        STEP_ROWS.plus(RowCount::new(0, self.policy.admission.max_occurrences as u64 * OCCURRENCE_ROWS.read))
    }

    /// Publishes the next due entry (or drops its index row); `None` once nothing more is due in
    /// this tick.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.done {
            return Ok(None);
        }
        let Some(due) = repo::next_due(ctx.exec, self.now.as_deref(), self.after.as_ref()).await? else {
            self.done = true;
            return Ok(None);
        };
        self.after = Some(due.clone());
        // The collection as registered now: gone (or another one under its slug), its rows go.
        let collection = match Ident::parse(&due.collection_slug) {
            Ok(slug) => schema::find(ctx.exec, &slug).await?.filter(|c| c.id == due.collection_id),
            Err(_) => None,
        };
        let Some(c) = collection else {
            let dropped = repo::forget(ctx.exec, &due).await?;
            return Ok(Some(dropped_row(ctx, dropped)));
        };
        let row = content::get(ctx.exec, &c, &due.content_id).await?.filter(|row| {
            row.get("scheduled_at").and_then(Json::as_str) == Some(due.scheduled_at.as_str())
                && row.get("deleted_at").is_none_or(Json::is_null)
        });
        let Some(row) = row else {
            let dropped = repo::settle_due(ctx.exec, &c, &due).await?;
            return Ok(Some(dropped_row(ctx, dropped)));
        };
        let publication = match publish::prepare(ctx.exec, &c, &row, self.policy).await? {
            Ok(p) => p,
            Err(refusal) => return refused(ctx, &due, &refusal.message()).await,
        };
        let version = publish::row_version(&row);
        match repo::publish_due(ctx.exec, &c, &due, version, self.now.as_deref(), publication).await {
            Ok(Some(_)) => {
                ctx.count(SCHEDULED_PUBLISHED, 1);
                Ok(Some(LaneStep { wakes_work: true, ..LaneStep::progress() }))
            }
            // The entry moved on since it was read: the next tick looks at it again.
            Ok(None) => Ok(Some(LaneStep::looked())),
            Err(e) if refused_for_good(&e) => refused(ctx, &due, &e.to_string()).await,
            Err(e) => Err(e),
        }
    }
}

/// A due publish the entry's state refuses: its index row goes (the same publish would be
/// refused again at every tick), and the refusal is the tick's error.
async fn refused<E: Executor, K>(ctx: &mut Ctx<'_, E, K>, due: &Due, why: &str) -> Result<Option<LaneStep>, Error> {
    repo::forget(ctx.exec, due).await?;
    ctx.count(SCHEDULE_FAILURES, 1);
    let failure = format!(
        "{}/{} was not published at its scheduled time {}: {why}",
        due.collection_slug, due.content_id, due.scheduled_at
    );
    Ok(Some(LaneStep { failure: Some(failure), ..LaneStep::progress() }))
}
