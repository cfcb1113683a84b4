//! The tick's lane list: every kind of [`Lane`], in rotation order, built from the
//! [`BackgroundPolicy`] that says how background work is done. A lane is added here once (its
//! constructor in [`lanes`], its counters in [`COUNTERS`]); the driver handles every lane alike
//! through [`Listed`].

use std::future::Future;
use std::pin::Pin;

use super::TickTime;
use crate::clock::Clock;
use crate::exec::{Error, Executor};
use crate::lane::adaptive::AdaptiveBatch;
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::lifecycle::deletion::batch::CleanupBatch;
use crate::lifecycle::deletion::lane::DeletionLane;
use crate::lifecycle::fields::FieldLane;
use crate::lifecycle::media::purge::PurgeLane;
use crate::lifecycle::media::relink::RelinkLane;
use crate::lifecycle::schedule::ScheduleLane;
use crate::lifecycle::tables::TablesLane;
use crate::storage::sweep::StorageLane;
use crate::storage::Storage;
use crate::usage::extract::Rules;
use crate::usage::project::{Admission, Policy, WorkLane};
use crate::usage::repair::RepairLane;

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
    /// How the work lane sizes its group jobs within a tick ([`crate::usage::project::group_sizer`]).
    pub groups: AdaptiveBatch,
    /// The modelled CPU a tick's projections may spend, in milliseconds
    /// (`MEDIA_USAGE_TICK_MAX_CPU_MS`, [`crate::usage::cost`]).
    pub cpu_ms: f64,
    /// How old an unreferenced stored object must be before the storage lane deletes it.
    pub storage_grace_ms: f64,
    /// How many days a media item stays in the trash before the purge lane deletes it.
    pub trash_days: f64,
    /// How many revisions an entry keeps when a relink saves its draft
    /// (`MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY`, as a draft save keeps them).
    pub max_revisions: u32,
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

    /// This policy with another CPU budget for a tick's projections.
    pub fn with_cpu_ms(self, cpu_ms: f64) -> BackgroundPolicy {
        BackgroundPolicy { cpu_ms, ..self }
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

/// Every kind of lane's tick-log counters, in rotation order: each is in every tick's log, the
/// storage lane's too when there is no object store.
pub const COUNTERS: &[&[Counter]] = &[
    WorkLane::COUNTERS,
    ScheduleLane::COUNTERS,
    DeletionLane::COUNTERS,
    FieldLane::COUNTERS,
    RepairLane::COUNTERS,
    PurgeLane::COUNTERS,
    StorageLane::COUNTERS,
    TablesLane::COUNTERS,
    RelinkLane::COUNTERS,
];

/// The lanes of a tick at `when` under `policy`, in rotation order (the storage lane only with
/// an object store): projection jobs from the work queue; entries whose scheduled time has come
/// (after the work lane: a tick of the smallest budget has room for one job before anything else
/// looks); collection deletions past their front phases; field deletions; repair runs; the
/// media trash's purge; the storage sweep; content tables brought up to the current table
/// revision; media items' relinks (last: their steps are the largest, and their look must not
/// keep the others' from a small budget).
pub fn lanes<'a, E: Executor + 'a, K: Clock + 'a>(
    policy: &'a BackgroundPolicy,
    storage: Option<&'a dyn Storage>,
    when: &TickTime,
) -> Vec<Box<dyn Listed<E, K> + 'a>> {
    let mut lanes: Vec<Box<dyn Listed<E, K> + 'a>> = vec![
        Box::new(WorkLane::new(&policy.projection, policy.groups, policy.cpu_ms)),
        Box::new(ScheduleLane::new(&policy.projection, when.now.clone())),
        Box::new(DeletionLane::new(policy.cleanup)),
        Box::new(FieldLane::new(policy.cleanup)),
        Box::new(RepairLane::new(&policy.projection.rules)),
        Box::new(PurgeLane::new(storage, policy.trash_days, policy.projection.rules.id())),
    ];
    if let Some(store) = storage {
        lanes.push(Box::new(StorageLane::new(store, policy.storage_grace_ms)));
    }
    lanes.push(Box::new(TablesLane::new()));
    lanes.push(Box::new(RelinkLane::new(&policy.projection.rules, policy.max_revisions, policy.cpu_ms)));
    lanes
}

/// What a lane's step or finish returns, boxed so lanes of every kind share one list.
pub type Boxed<'s, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + 's>>;

/// A [`Lane`] in the tick's list, whatever its kind: the lane's own answers, its step and its
/// finish boxed. Every lane is one, through the blanket implementation.
pub trait Listed<E, K> {
    /// [`Lane::name`].
    fn name(&self) -> &'static str;
    /// [`Lane::reserve`].
    fn reserve(&self) -> u64;
    /// [`Lane::reserve_rows`].
    fn reserve_rows(&self) -> RowCount;
    /// [`Lane::daily`].
    fn daily(&self) -> bool;
    /// [`Lane::release_cost`].
    fn release_cost(&self) -> u64;
    /// [`Lane::release_rows`].
    fn release_rows(&self) -> RowCount;
    /// [`Lane::step`].
    fn step<'s>(&'s mut self, ctx: &'s mut Ctx<'_, E, K>) -> Boxed<'s, Option<LaneStep>>;
    /// [`Lane::finish`].
    fn finish<'s>(&'s mut self, exec: &'s E) -> Boxed<'s, ()>
    where
        K: 's;
}

impl<E, K, L: Lane<E, K, Error = Error>> Listed<E, K> for L {
    fn name(&self) -> &'static str {
        Lane::name(self)
    }

    fn reserve(&self) -> u64 {
        Lane::reserve(self)
    }

    fn reserve_rows(&self) -> RowCount {
        Lane::reserve_rows(self)
    }

    fn daily(&self) -> bool {
        Lane::daily(self)
    }

    fn release_cost(&self) -> u64 {
        Lane::release_cost(self)
    }

    fn release_rows(&self) -> RowCount {
        Lane::release_rows(self)
    }

    fn step<'s>(&'s mut self, ctx: &'s mut Ctx<'_, E, K>) -> Boxed<'s, Option<LaneStep>> {
        Box::pin(Lane::step(self, ctx))
    }

    fn finish<'s>(&'s mut self, exec: &'s E) -> Boxed<'s, ()>
    where
        K: 's,
    {
        Box::pin(Lane::finish(self, exec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::sqlite::SqliteExecutor;
    use crate::tick::budget::{
        CONTINUATION_ROWS, CONTINUATION_STATEMENTS, DAILY_STATEMENTS, LOG_ROWS, LOG_STATEMENTS, MIN_TICK_STATEMENTS,
    };

    #[test]
    fn only_the_work_and_schedule_lanes_run_past_the_daily_budget() {
        let policy = crate::settings::Settings::defaults().background();
        let lanes = lanes::<SqliteExecutor, crate::clock::FnClock>(&policy, None, &TickTime::database());
        let free: Vec<&str> = lanes.iter().filter(|l| !l.daily()).map(|l| l.name()).collect();
        assert_eq!(free, ["work", "schedule"]);
        let names: Vec<&str> = lanes.iter().map(|l| l.name()).collect();
        assert_eq!(
            names,
            ["work", "schedule", "deletion", "fields", "repair", "purge", "tables", "relink"],
            "no store: no sweep"
        );
        assert!(lanes.iter().all(|l| l.release_cost() == 0 && l.release_rows() == RowCount::default()), "nothing held");
    }

    #[test]
    fn every_lane_can_step_in_a_tick_of_the_smallest_budget() {
        let policy = crate::settings::Settings::defaults().background();
        let store = crate::storage::memory::MemoryStorage::new(0.0);
        let lanes = lanes::<SqliteExecutor, crate::clock::FnClock>(&policy, Some(&store), &TickTime::database());
        assert_eq!(lanes.len(), COUNTERS.len(), "the lane list and its counters name the same lanes");
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
}
