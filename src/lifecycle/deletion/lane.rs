//! The deletion lane: collection deletions past their front phases, advanced by the tick
//! several bounded steps at a time ([`super::step_within`]), the deletion being worked on held
//! between steps and released when the tick ends.

use super::batch::CleanupBatch;
use super::declared_row_cost;
use super::{
    release, step_within, Held, Rows, StepOutcome, COUNTER_ROWS, COUNT_ROW_COST, COUNT_STATEMENT_ROWS,
    MAX_DECLARED_ROW_COST, RELEASE_ROWS, RELEASE_STATEMENTS, STEP_FIXED_ROWS, STEP_MAX_STATEMENTS,
};
use crate::clock::Clock;
use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};

/// Deletion steps run (claims that found a deletion included).
pub const DELETION_STEPS: Counter = Counter::new("deletionSteps");
/// Rows the cleanup statements deleted.
pub const DELETED_ROWS: Counter = Counter::new("deletedRows");
/// Deletions finished (tombstone gone, slug free).
pub const DELETIONS_FINALIZED: Counter = Counter::new("deletionsFinalized");
/// Steps that failed and were recorded for retry.
pub const DELETION_FAILURES: Counter = Counter::new("deletionFailures");

/// The deletion lane in a tick: collection deletions past their front phases, several bounded
/// steps per tick. The deletion being worked on is held between steps and released when the
/// tick ends ([`DeletionLane::finish`]).
#[derive(Debug, Clone)]
pub struct DeletionLane {
    batch: CleanupBatch,
    held: Option<Held>,
}

impl DeletionLane {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "deletion";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[DELETION_STEPS, DELETED_ROWS, DELETIONS_FINALIZED, DELETION_FAILURES];

    /// The lane at the start of a tick, holding nothing, cleaning up in `batch`es.
    pub fn new(batch: CleanupBatch) -> DeletionLane {
        DeletionLane { batch, held: None }
    }

    /// The rows a deletion with `left` rows of each kind still writes, at each kind's declared
    /// cost: what its estimate counts.
    pub fn rows_to_write(left: &[(Rows, u64)]) -> u64 {
        left.iter().map(|(kind, n)| n * declared_row_cost(*kind).written).sum()
    }
}

impl<E: Executor, K: Clock> Lane<E, K> for DeletionLane {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// The most statements one step issues.
    fn reserve(&self) -> u64 {
        STEP_MAX_STATEMENTS
    }

    /// The most rows one step reads and writes at its smallest: its fixed statements and one
    /// row of the kind being deleted (its cleanup statements are sized to the rows it is given).
    fn reserve_rows(&self) -> RowCount {
        let counting = COUNT_STATEMENT_ROWS.plus(COUNT_ROW_COST);
        let deleting = COUNTER_ROWS.plus(self.held.as_ref().map_or(MAX_DECLARED_ROW_COST, |h| h.row_cost));
        let step = match &self.held {
            Some(h) if h.counting() => counting,
            Some(_) => deleting,
            // The next due deletion may be counting or deleting.
            None => RowCount::new(counting.written.max(deleting.written), counting.read.max(deleting.read)),
        };
        STEP_FIXED_ROWS.plus(step)
    }

    /// Rows [`DeletionLane::finish`] will cost.
    fn release_rows(&self) -> RowCount {
        if self.held.is_some() {
            RELEASE_ROWS
        } else {
            RowCount::default()
        }
    }

    /// Statements [`DeletionLane::finish`] will cost: releasing the deletion it holds.
    fn release_cost(&self) -> u64 {
        if self.held.is_some() {
            RELEASE_STATEMENTS
        } else {
            0
        }
    }

    /// Advances the held deletion, or the next due one, by one step ([`step`]); `None` when
    /// nothing is held and nothing is due. A failure recorded on the tombstone is the step's
    /// `failure`.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        let Some(outcome) =
            step_within(ctx.exec, ctx.clock, self.batch, &mut self.held, (ctx.room, ctx.rows), ctx.spent).await?
        else {
            return Ok(None);
        };
        if matches!(&outcome, StepOutcome::Deleted { deleted, advanced_to: None } if deleted.is_empty())
            || matches!(outcome, StepOutcome::Counted { statements: 0 })
        {
            return Ok(Some(LaneStep::out_of_room()));
        }
        ctx.count(DELETION_STEPS, 1);
        let mut failure = None;
        match outcome {
            StepOutcome::Deleted { deleted, .. } => ctx.count(DELETED_ROWS, deleted.iter().map(|(_, n)| n).sum()),
            StepOutcome::Finalized => ctx.count(DELETIONS_FINALIZED, 1),
            StepOutcome::Failed { reason, .. } => {
                ctx.count(DELETION_FAILURES, 1);
                failure = Some(reason);
            }
            StepOutcome::Advanced { .. }
            | StepOutcome::Counted { .. }
            | StepOutcome::Cancelled
            | StepOutcome::LeaseLost => {}
        }
        Ok(Some(LaneStep { failure, ..LaneStep::progress() }))
    }

    /// Releases the deletion it holds (the tick is over).
    async fn finish(&mut self, exec: &E) -> Result<(), Error> {
        if let Some(h) = self.held.take() {
            release(exec, &h).await?;
        }
        Ok(())
    }
}
