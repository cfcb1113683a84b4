//! Group jobs: many fresh entries of one collection loaded together and published in one guarded
//! batch, sized within a tick by how long they take; whatever a group cannot publish goes back to
//! single jobs.

use super::super::admission::MAX_BOUND_BYTES;
use super::super::cost::CpuWork;
use super::plan::{Plan, Writes};
use super::{load_and_plan, process_costed, Job, JobOutcome, Planned, Policy, Reading};
use crate::exec::{Error, Executor};
use crate::ids;
use crate::lane::adaptive::AdaptiveBatch;
use crate::model::ident::Ident;
use crate::repo::projection::{self, BoundRows, ObservedEntry};
use crate::repo::{schema, work};

/// Entries a tick's first group job claims.
pub const GROUP_START: u32 = 50;
/// The group size never shrinks below this.
pub const GROUP_MIN: u32 = 10;
/// Nor grows beyond this.
pub const GROUP_MAX: u32 = 400;

/// How group jobs are sized within a tick: from [`GROUP_START`] entries, within
/// [`GROUP_MIN`]..=[`GROUP_MAX`], a group counting as full when it published as many entries as
/// it asked for, aiming at `target_ms` for its load and publish.
pub fn group_sizer(target_ms: f64) -> AdaptiveBatch {
    AdaptiveBatch { start: GROUP_START, min: GROUP_MIN, max: GROUP_MAX, target_ms }
}
/// Field and draft bytes a group load reads at most (plus the entry that crosses it).
pub const GROUP_LOAD_BYTES: i64 = 4_000_000;
/// The most statements a group job issues: claim, collection, load, the media lookup of its
/// entries' candidate strings (only when they have any), a publish batch of at most seven
/// (guard, occurrences, sources, removed sources, work rows, hand-back, coverage), and the
/// hand-back of its rows after a lost guard.
pub const GROUP_MAX_STATEMENTS: u64 = 12;

/// How a group job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupOutcome {
    /// No work was due.
    Nothing,
    /// One row was claimed (a lone fresh row, a retry, an expired lease): it ran as a single job.
    Single(JobOutcome),
    /// `published` entries were indexed by one batch; `released` rows went back to single jobs
    /// (failures, entries past the byte bounds).
    Published { published: usize, released: usize },
    /// The group could not be published (a lost race, a collection that changed); all its rows
    /// went back to single jobs and nothing was written.
    HandedBack { released: usize },
}

/// Claims up to `limit` fresh due rows of one collection and publishes their projections in one
/// guarded batch (or, when only one row is claimed, runs it as a single job). The load and the
/// publish are the single job's; whatever the group cannot publish goes back to single jobs
/// ([`process`]), which record failures; a lost race on any entry writes nothing.
pub async fn process_group<E: Executor>(exec: &E, policy: &Policy, limit: u32) -> Result<GroupOutcome, Error> {
    let mut cpu = CpuWork::default();
    process_group_within(exec, policy, limit, f64::INFINITY, &mut cpu).await
}

/// [`process_group`], reading entries while their modelled CPU fits `cpu_ms` (the first always
/// when `cpu`, what the tick's projections spent so far, is nothing; the rest go back to single
/// jobs), and adding the modelled CPU of what it read to `cpu`.
pub async fn process_group_within<E: Executor>(
    exec: &E,
    policy: &Policy,
    limit: u32,
    cpu_ms: f64,
    cpu: &mut CpuWork,
) -> Result<GroupOutcome, Error> {
    let token = ids::new_id();
    let rows = work::claim_group(exec, &token, limit).await?;
    let Some(first) = rows.first() else { return Ok(GroupOutcome::Nothing) };
    if rows.len() == 1 {
        let (outcome, spent) = process_costed(exec, first, policy, cpu_ms).await?;
        *cpu = cpu.plus(spent);
        return Ok(GroupOutcome::Single(outcome));
    }
    let (cid, cslug) = (first.collection_id.as_str(), first.collection_slug.as_str());
    let ids: Vec<String> = rows.iter().map(|w| w.content_id.clone()).collect();
    let hand_back = || async {
        projection::release_group(exec, cid, &token, &ids).await?;
        Ok(GroupOutcome::HandedBack { released: ids.len() })
    };
    let Ok(slug) = Ident::parse(cslug) else { return hand_back().await };
    let collection = match schema::find(exec, &slug).await? {
        Some(c) if c.id == cid => c,
        _ => return hand_back().await,
    };
    let field_slugs: Vec<Ident> = collection.fields.iter().map(|f| f.slug.clone()).collect();
    let Ok((planned, spent)) =
        load_and_plan(exec, &slug, &rows, &field_slugs, policy, cpu_ms, cpu.entries == 0, Reading::Group).await?
    else {
        return hand_back().await;
    };
    *cpu = cpu.plus(spent);
    let mut writes = Writes::default();
    let (mut occurrence_bytes, mut source_bytes) = (0usize, 0usize);
    let mut observed = Vec::new();
    for Planned { work, loaded, plan, .. } in planned {
        let entry_writes = match plan {
            Ok(Plan::Write(w)) => w,
            Ok(Plan::Unchanged) => Writes::default(),
            // Failures (fields that cannot be read, an entry over the limit) are recorded by the
            // single job that takes the row back.
            Ok(Plan::ResourceLimit(_) | Plan::TooLarge) | Err(_) => continue,
        };
        let occ = BoundRows::new(&entry_writes.occurrences).bytes();
        let src = BoundRows::new(&entry_writes.sources).bytes();
        if occurrence_bytes + occ > MAX_BOUND_BYTES || source_bytes + src > MAX_BOUND_BYTES {
            // The batch is full; the rest goes to single jobs (or the next group).
            break;
        }
        occurrence_bytes += occ;
        source_bytes += src;
        writes.append(entry_writes);
        observed.push(ObservedEntry::of(work, &loaded));
    }
    if observed.is_empty() {
        return hand_back().await;
    }
    let released: Vec<String> = ids.iter().filter(|id| !observed.iter().any(|o| o.id == **id)).cloned().collect();
    let job = Job { collection_id: cid, collection_slug: cslug, slug: &slug, token: &token };
    let Some(publish) = job.publish(observed, writes, released, false) else { return hand_back().await };
    match projection::publish(exec, &publish).await {
        Ok(()) => {
            Ok(GroupOutcome::Published { published: publish.observed.len(), released: publish.released_ids.len() })
        }
        Err(Error::Stale) => hand_back().await,
        Err(e) if e.is_missing_content_table() => hand_back().await,
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_grows_when_full_and_fast_and_shrinks_when_slow() {
        let groups = group_sizer(200.0);
        assert_eq!(groups.start, GROUP_START);
        assert_eq!(groups.next(50, 10.0, 50), 100, "full and fast: doubles");
        assert_eq!(groups.next(50, 10.0, 49), 50, "not full: says nothing about bigger groups");
        assert_eq!(groups.next(100, 100.0, 100), 100, "exactly half the target: kept");
        assert_eq!(groups.next(100, 99.9, 100), 200);
        assert_eq!(groups.next(100, 200.0, 100), 100, "exactly the target: kept");
        assert_eq!(groups.next(100, 200.1, 100), 50, "over the target: halves");
        assert_eq!(groups.next(12, 900.0, 12), GROUP_MIN);
        assert_eq!(groups.next(300, 1.0, 300), GROUP_MAX);
    }
}
