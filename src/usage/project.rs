//! The projection job: claim work rows, load their entries, build their snapshots, admit the
//! changes under the per-claim limits, and publish them in one guarded batch. A single job is a
//! group of one: both load and publish through the same path (`load_and_plan`, `Job::publish`)
//! and differ only in what they do with an entry they cannot publish (a single job records the
//! failure, a group hands the row back to a single job). Every outcome leaves the index either as
//! it was or fully at the new projection.

mod group;
mod plan;

use std::collections::BTreeSet;

use serde_json::Value as Json;

pub use super::admission::Admission;
use super::admission::{Lookup, MAX_BOUND_BYTES};
use super::backoff::Attempts;
use super::cost::CpuWork;
use super::extract::Rules;
use super::snapshot::Variants;
use crate::clock::Clock;
use crate::exec::{Error, Executor};
use crate::lane::adaptive::AdaptiveBatch;
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::model::ident::Ident;
use crate::repo::projection::{self, BoundRows, LoadedEntry, ObservedEntry, Publish};
use crate::repo::work::{self, WorkRow};
pub use group::{
    group_sizer, process_group, process_group_within, GroupOutcome, GROUP_LOAD_BYTES, GROUP_MAX, GROUP_MAX_STATEMENTS,
    GROUP_MIN, GROUP_START,
};
use plan::{column_bytes, plan, prepare, single_variants, source_bytes, Plan, Prepared, Reading, Writes};

/// What a projection needs besides the data: what counts as a use, and what it may publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub rules: Rules,
    pub admission: Admission,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy { rules: Rules::default(), admission: Admission::DEFAULT }
    }
}

/// The bound values a publish splits occurrences (and sources) into: one per variant fits.
pub const PUBLISH_VALUES: usize = projection::PUBLISH_VALUES;
/// The most statements one job can issue: claim, load, the media lookup of its candidate
/// strings (only when it has any), and a publish batch of at most six (guard, occurrences,
/// sources, deletions, work, coverage).
pub const JOB_MAX_STATEMENTS: u64 = 9;

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// The index now holds the entry's new projection.
    Published,
    /// The entry was too heavy for the CPU left with both variants: its live columns' projection
    /// was published alone and its work row went back queued, marked, for the next job to
    /// project the draft overlay.
    PublishedLive,
    /// The stored projection was already current.
    Unchanged,
    /// The collection no longer exists with this identity; the work row was dropped.
    Obsolete,
    /// The attempt failed and was recorded (`retry`, or `failed` when terminal).
    Failed { code: &'static str, terminal: bool },
    /// Something observed changed before publishing (a newer write, a lost lease); nothing was
    /// written and the work row is retried.
    Conflict,
}

/// Records a failed attempt; terminal once the attempts are used up ([`Attempts`]) or when
/// `always_terminal`.
async fn record_failure<E: Executor>(
    exec: &E,
    work: &WorkRow,
    code: &'static str,
    always_terminal: bool,
) -> Result<JobOutcome, Error> {
    let mut failure = Attempts::new(work.lease.attempt_count).failure();
    failure.terminal |= always_terminal;
    work::fail(exec, work, failure, code).await?;
    Ok(JobOutcome::Failed { code, terminal: failure.terminal })
}

/// Refuses an entry too large to index for good. When the media it references fit one bound
/// value, they are kept on its failed work row and its collection's coverage stays as a success
/// leaves it: the safe delete then refuses exactly those media (see the README, "Admission").
/// Otherwise the failure makes coverage `partial`, as any other.
async fn over_limit<E: Executor>(exec: &E, work: &WorkRow, referenced: &BTreeSet<String>) -> Result<JobOutcome, Error> {
    const CODE: &str = "MEDIA_USAGE_RESOURCE_LIMIT";
    let ids = Json::from(referenced.iter().map(String::as_str).collect::<Vec<_>>()).to_string();
    if ids.len() > MAX_BOUND_BYTES {
        return record_failure(exec, work, CODE, true).await;
    }
    work::fail_over_limit(exec, work, CODE, &ids).await?;
    Ok(JobOutcome::Failed { code: CODE, terminal: true })
}

/// Drops the work row of a collection that no longer exists with this identity (`Conflict` when
/// the collection is still registered, or the row changed hands).
async fn obsolete<E: Executor>(exec: &E, work: &WorkRow) -> Result<JobOutcome, Error> {
    Ok(if work::delete_obsolete(exec, work).await? { JobOutcome::Obsolete } else { JobOutcome::Conflict })
}

/// A job's entries after the shared load: one per loaded work row, in the order claimed.
#[derive(Debug)]
struct Planned<'w> {
    work: &'w WorkRow,
    loaded: LoadedEntry,
    /// What to write, or the code saying why the entry's fields cannot be read.
    plan: Result<Plan, &'static str>,
    /// The variants it projects.
    variants: Variants,
}

/// Why a job cannot go on with any of its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The collection is gone or is another one now (its content table is gone, or the registry
    /// names another slug for its id).
    Obsolete,
    /// The load could not be decoded.
    Unreadable,
}

/// Loads, reads and plans a job's work rows (all of one collection, whose content table is
/// `slug`'s): one statement ([`projection::load_group`], bounded by the bytes of `field_slugs`
/// and draft data), then one media lookup when the entries have candidate strings, holding the
/// candidates of as many entries (in order) as it can: the rest are not planned (a group hands
/// them back). The same for a single job (a group of one, which measures no columns: its entry is
/// always loaded) and a group. A first entry whose candidates do not fit one lookup (written
/// behind the API: admission refuses it) is planned as too large: what it names cannot be told.
/// Entries are read in order while their modelled CPU ([`CpuWork`]) fits `cpu_ms`, the first
/// always when `first_always` (a single job, or the tick's first: so no entry waits for ever for
/// room): the rest are not planned either. A single job's heavy entry is read one variant at a
/// time ([`Reading`]). Returns the modelled CPU of what it read and planned: of the variants read.
#[allow(clippy::too_many_arguments)]
async fn load_and_plan<'w, E: Executor>(
    exec: &E,
    slug: &Ident,
    rows: &'w [WorkRow],
    field_slugs: &[Ident],
    policy: &Policy,
    cpu_ms: f64,
    first_always: bool,
    reading: Reading,
) -> Result<Result<(Vec<Planned<'w>>, CpuWork), Stop>, Error> {
    let Some(first) = rows.first() else { return Ok(Ok((Vec::new(), CpuWork::default()))) };
    let (cid, cslug) = (first.collection_id.as_str(), first.collection_slug.as_str());
    let ids: Vec<String> = rows.iter().map(|w| w.content_id.clone()).collect();
    let group = match projection::load_group(exec, slug, cid, &ids, field_slugs, GROUP_LOAD_BYTES).await {
        Ok(g) => g,
        // The content table is gone: the collection was deleted (or is being deleted). Or it
        // lacks a column of the fields read before the load: a field was deleted since, or the
        // collection was deleted and another created under its slug (the claim's rows are then
        // its deletion's, and the guard of `obsolete` keeps what a live collection still needs).
        Err(e) if e.is_missing_content_table() || e.missing_column().is_some() => return Ok(Err(Stop::Obsolete)),
        Err(Error::Decode(_)) => return Ok(Err(Stop::Unreadable)),
        Err(e) => return Err(e),
    };
    if group.registry_slug.as_deref() != Some(cslug) {
        return Ok(Err(Stop::Obsolete));
    }
    let mut cpu = CpuWork::default();
    // Per loaded entry in order: `None` for one handed back unread (a group's), else its variants
    // and what reading them gave.
    type Read = Option<(Variants, Result<Prepared, &'static str>)>;
    let mut prepared: Vec<Read> = Vec::with_capacity(group.entries.len());
    for (content_id, loaded) in &group.entries {
        let work = rows.iter().find(|w| w.content_id == *content_id);
        let both = CpuWork::entry(source_bytes(loaded), 0, 0);
        let variants = match (reading, work) {
            (Reading::Single, Some(w)) => single_variants(w, loaded, cpu_ms),
            _ => Variants::Both,
        };
        if reading == Reading::Group {
            let half_done = work.is_some_and(WorkRow::live_published);
            let heavy = cpu.entries == 0 && loaded.revision_data.is_some() && both.ms() > cpu_ms;
            if half_done || heavy {
                prepared.push(None);
                continue;
            }
        }
        let estimate = match variants {
            Variants::Live => CpuWork::entry(column_bytes(loaded), 0, 0),
            _ => both,
        };
        if (cpu.entries > 0 || !first_always) && cpu.plus(estimate).ms() > cpu_ms {
            break;
        }
        let read = prepare(cid, cslug, loaded, &policy.rules, variants);
        let (bytes, candidates) = match &read {
            Ok(Prepared { entry: Some(e), .. }) => {
                let bytes = if variants == Variants::Draft { e.bytes } else { estimate.bytes };
                (bytes, e.extracted().map(|x| x.candidates().len() as u64).sum())
            }
            _ => (estimate.bytes, 0),
        };
        cpu = cpu.plus(CpuWork::entry(bytes, candidates, 0));
        prepared.push(Some((variants, read)));
    }
    let mut lookup = Lookup::default();
    let covered = prepared
        .iter()
        .take_while(|p| match p {
            Some((_, Ok(Prepared { entry: Some(e), .. }))) => lookup.try_add(e.extracted()),
            _ => true,
        })
        .count();
    let library = lookup.run(exec).await?;
    let mut planned = Vec::with_capacity(group.entries.len());
    for (n, ((content_id, loaded), read)) in group.entries.into_iter().zip(prepared).enumerate() {
        let Some(work) = rows.iter().find(|w| w.content_id == content_id) else { continue };
        let Some((variants, prepared)) = read else { continue };
        let plan = match prepared {
            Ok(p) if n < covered => {
                let planned = plan(&loaded, &p, policy, &library);
                if let Plan::Write(w) = &planned {
                    cpu = cpu
                        .plus(CpuWork { rows: (w.occurrences.len() + w.sources.len()) as u64, ..CpuWork::default() });
                }
                Ok(planned)
            }
            Ok(Prepared { entry: Some(_), .. }) if n == 0 => Ok(Plan::TooLarge),
            Ok(_) => break,
            Err(code) => Err(code),
        };
        planned.push(Planned { work, loaded, plan, variants });
    }
    Ok(Ok((planned, cpu)))
}

/// What a job is: the collection its work rows belong to and the lease token they are held under.
#[derive(Debug, Clone, Copy)]
struct Job<'a> {
    collection_id: &'a str,
    collection_slug: &'a str,
    slug: &'a Ident,
    token: &'a str,
}

impl<'a> Job<'a> {
    /// The publish of the entries `observed` with their `writes`, handing the job's other rows
    /// `released_ids` back to single jobs; `None` when the occurrences or the sources do not fit
    /// their [`PUBLISH_VALUES`] bound values of [`MAX_BOUND_BYTES`] (one variant's always fit one:
    /// admission).
    fn publish(
        &self,
        observed: Vec<ObservedEntry>,
        writes: Writes,
        released_ids: Vec<String>,
        live_only: bool,
    ) -> Option<Publish<'a>> {
        let occurrences = BoundRows::split(&writes.occurrences, MAX_BOUND_BYTES, PUBLISH_VALUES)?;
        let sources = BoundRows::split(&writes.sources, MAX_BOUND_BYTES, PUBLISH_VALUES)?;
        Some(Publish {
            collection_id: self.collection_id,
            collection_slug: self.collection_slug,
            table_slug: self.slug,
            token: self.token,
            observed,
            released_ids,
            occurrences,
            sources,
            delete_keys: writes.delete_keys,
            draft_error: writes.draft_error,
            live_only,
        })
    }
}

/// Processes one claimed work row: a group of one that records what it cannot publish.
pub async fn process<E: Executor>(exec: &E, work: &WorkRow, policy: &Policy) -> Result<JobOutcome, Error> {
    process_costed(exec, work, policy, f64::INFINITY).await.map(|(outcome, _)| outcome)
}

/// [`process`] within `cpu_ms` of modelled CPU (an entry with a draft that does not fit it with
/// both variants is projected one variant a job), with the modelled CPU of what it read and
/// planned.
async fn process_costed<E: Executor>(
    exec: &E,
    work: &WorkRow,
    policy: &Policy,
    cpu_ms: f64,
) -> Result<(JobOutcome, CpuWork), Error> {
    let mut cpu = CpuWork::default();
    let outcome = process_inner(exec, work, policy, cpu_ms, &mut cpu).await?;
    Ok((outcome, cpu))
}

async fn process_inner<E: Executor>(
    exec: &E,
    work: &WorkRow,
    policy: &Policy,
    cpu_ms: f64,
    cpu: &mut CpuWork,
) -> Result<JobOutcome, Error> {
    // Claimed more often than it may be attempted: earlier holders died or lost the row without
    // recording anything (a crash, a backend error, a lost lease). Stop here, visibly.
    if Attempts::new(work.lease.attempt_count).over_claimed() {
        return record_failure(exec, work, "MEDIA_USAGE_PROCESSING_FAILED", true).await;
    }
    let Ok(slug) = Ident::parse(&work.collection_slug) else {
        return obsolete(exec, work).await;
    };
    let rows = std::slice::from_ref(work);
    let entry = match load_and_plan(exec, &slug, rows, &[], policy, cpu_ms, true, Reading::Single).await? {
        Ok((planned, work)) => {
            *cpu = work;
            planned.into_iter().next()
        }
        Err(Stop::Obsolete) => return obsolete(exec, work).await,
        Err(Stop::Unreadable) => None,
    };
    let Some(Planned { loaded, plan, variants, .. }) = entry else {
        return record_failure(exec, work, "MEDIA_USAGE_SNAPSHOT_FAILED", false).await;
    };
    // A half that passes a limit knows the media of one variant only: it fails without keeping
    // them (coverage turns `partial`, so the safe delete refuses every item meanwhile).
    const LIMIT: &str = "MEDIA_USAGE_RESOURCE_LIMIT";
    let live_only = variants == Variants::Live;
    let writes = match plan {
        Err(code) => return record_failure(exec, work, code, false).await,
        Ok(Plan::ResourceLimit(_) | Plan::TooLarge) if variants != Variants::Both => {
            return record_failure(exec, work, LIMIT, true).await
        }
        Ok(Plan::ResourceLimit(referenced)) => return over_limit(exec, work, &referenced).await,
        Ok(Plan::TooLarge) => return record_failure(exec, work, LIMIT, true).await,
        // The first half publishes even when its variant is unchanged: its publish leaves the mark.
        Ok(Plan::Unchanged) if live_only => Writes::default(),
        Ok(Plan::Unchanged) => {
            work::complete_unchanged(exec, work).await?;
            return Ok(JobOutcome::Unchanged);
        }
        Ok(Plan::Write(writes)) => writes,
    };
    let job = Job {
        collection_id: &work.collection_id,
        collection_slug: &work.collection_slug,
        slug: &slug,
        token: work.lease.lease_token.as_deref().unwrap_or_default(),
    };
    let referenced = writes.referenced.clone();
    let Some(publish) = job.publish(vec![ObservedEntry::of(work, &loaded)], writes, Vec::new(), live_only) else {
        if variants != Variants::Both {
            return record_failure(exec, work, LIMIT, true).await;
        }
        return over_limit(exec, work, &referenced).await;
    };
    match projection::publish(exec, &publish).await {
        Ok(()) if live_only => Ok(JobOutcome::PublishedLive),
        Ok(()) => Ok(JobOutcome::Published),
        Err(Error::Stale) => Ok(JobOutcome::Conflict),
        // The collection's table was dropped after the load (its deletion got past `table`):
        // nothing was written. Its work row is left to that deletion, which deletes it (a claim
        // never takes it again meanwhile); a table dropped outside a deletion is found gone by
        // the next claim's load once the lease expires. Deleting it here would be a tenth
        // statement, past `JOB_MAX_STATEMENTS`.
        Err(e) if e.is_missing_content_table() => Ok(JobOutcome::Conflict),
        Err(e) => Err(e),
    }
}

/// Claims and processes the next due job (or the given entry's); `None` when nothing is due.
pub async fn process_next<E: Executor>(
    exec: &E,
    key: Option<(&str, &str)>,
    policy: &Policy,
) -> Result<Option<JobOutcome>, Error> {
    let Some(work) = work::claim(exec, key).await? else { return Ok(None) };
    process(exec, &work, policy).await.map(Some)
}

/// [`process_next`] of the next due job within `cpu_ms`, with the modelled CPU of what it read
/// and planned.
async fn process_next_costed<E: Executor>(
    exec: &E,
    policy: &Policy,
    cpu_ms: f64,
) -> Result<Option<(JobOutcome, CpuWork)>, Error> {
    let Some(work) = work::claim(exec, None).await? else { return Ok(None) };
    process_costed(exec, &work, policy, cpu_ms).await.map(Some)
}

// ---------------------------------------------------------------------------------------------
// The tick's work lane.

/// Projection jobs run (single jobs, and each entry a group published).
pub const JOBS: Counter = Counter::new("jobs");
/// Single jobs whose failure was recorded.
pub const FAILED_JOBS: Counter = Counter::new("failedJobs");
/// Single jobs that lost a race, and groups handed back whole.
pub const CONFLICTS: Counter = Counter::new("conflicts");
/// Jobs that published their entry's live columns alone, leaving its draft overlay to the next.
pub const SPLIT_JOBS: Counter = Counter::new("splitJobs");
/// The modelled CPU of the tick's projections and relinks ([`CpuWork`]), in microseconds.
pub const CPU_MODEL_US: Counter = Counter::new("cpuModelUs");

/// What a group job's entry is assumed to cost until the tick has measured one: an entry with a
/// few references (its claim, load, occurrences, source rows and work row).
pub const GROUP_ENTRY_ROWS: RowCount = RowCount::new(60, 150);
/// The rows of a group job that do not grow with its entries.
pub const GROUP_FIXED_ROWS: RowCount = RowCount::new(50, 200);

/// What a group job's entry is assumed to cost in modelled CPU until the tick has projected one:
/// a few KB of data, a few candidates and a few rows.
pub const GROUP_ENTRY_CPU: CpuWork = CpuWork { entries: 1, bytes: 4_096, candidates: 4, rows: 8 };

/// The work lane in a tick: projection jobs from the work queue, in groups while a group fits
/// the budget, the group's size adapting within the tick (to the time its groups take, to the
/// rows left, at what its groups' entries cost so far, and to the modelled CPU left, at what its
/// entries cost so far by [`CpuWork`]).
#[derive(Debug, Clone)]
pub struct WorkLane<'a> {
    policy: &'a Policy,
    groups: AdaptiveBatch,
    /// The size of the next group job.
    group: u32,
    /// What one entry of a group cost, measured from the last group ([`GROUP_ENTRY_ROWS`]
    /// before the first).
    entry_rows: RowCount,
    /// The modelled CPU the tick's projections may spend, in milliseconds.
    cpu_ms: f64,
    /// The modelled CPU they spent so far.
    cpu: CpuWork,
    /// What the tick's other lanes (relinks) spent of the same budget, in milliseconds.
    others_ms: f64,
}

impl<'a> WorkLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "work";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[JOBS, FAILED_JOBS, CONFLICTS, SPLIT_JOBS, CPU_MODEL_US];

    /// The lane at the start of a tick: jobs under `policy`, groups sized by `groups`, the
    /// projections' modelled CPU within `cpu_ms`.
    pub fn new(policy: &'a Policy, groups: AdaptiveBatch, cpu_ms: f64) -> WorkLane<'a> {
        WorkLane {
            policy,
            groups,
            group: groups.start,
            entry_rows: GROUP_ENTRY_ROWS,
            cpu_ms,
            cpu: CpuWork::default(),
            others_ms: 0.0,
        }
    }

    /// The modelled CPU left for this tick's projections, in milliseconds (what relinks spent
    /// counts against it too).
    fn cpu_left(&self) -> f64 {
        self.cpu_ms - self.others_ms - self.cpu.ms()
    }

    /// What one entry costs in modelled CPU: the mean of the tick's entries so far, or
    /// [`GROUP_ENTRY_CPU`]'s before the first.
    fn entry_cpu_ms(&self) -> f64 {
        match self.cpu.entries {
            0 => GROUP_ENTRY_CPU.ms(),
            n => self.cpu.ms() / n as f64,
        }
    }
}

/// How many entries of `entry_ms` each fit `left_ms` (at most `cap`).
fn entries_within(left_ms: f64, entry_ms: f64, cap: u32) -> u32 {
    if left_ms <= 0.0 {
        return 0;
    }
    let n = (left_ms / entry_ms.max(1e-6)).floor();
    if n >= f64::from(cap) {
        cap
    } else {
        n as u32
    }
}

impl<E: Executor, K: Clock> Lane<E, K> for WorkLane<'_> {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// Not stopped by the daily budget: it projects what content writes queued.
    fn daily(&self) -> bool {
        false
    }

    /// The most statements one step issues: a single job's (a group runs only with more room).
    fn reserve(&self) -> u64 {
        JOB_MAX_STATEMENTS
    }

    /// The most rows its smallest step reads and writes: a group of two at what its entries
    /// cost so far, or a single job's worst case under the admission limit if that is less. A
    /// step that finds room for neither does nothing and says so (`LaneStep::out_of_room`).
    fn reserve_rows(&self) -> RowCount {
        let pair = GROUP_FIXED_ROWS.plus(self.entry_rows).plus(self.entry_rows);
        let job = self.policy.admission.job_max_rows();
        if pair.fits(job) {
            pair
        } else {
            job
        }
    }

    /// Runs the next group job, or single job once a group no longer fits `ctx.room`, the rows
    /// or the modelled CPU left; `None` when no work is due. Once the tick's projections have
    /// spent more modelled CPU than a single entry is expected to cost, it steps no more.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        let before = self.cpu.ms();
        let tick_ms = ctx.counts.get(CPU_MODEL_US.name) as f64 / 1000.0;
        self.others_ms = (tick_ms - before).max(0.0);
        let step = self.step_within_cpu(ctx).await;
        ctx.count(CPU_MODEL_US, ((self.cpu.ms() - before) * 1000.0).round() as u64);
        step
    }
}

impl WorkLane<'_> {
    async fn step_within_cpu<E: Executor, K: Clock>(
        &mut self,
        ctx: &mut Ctx<'_, E, K>,
    ) -> Result<Option<LaneStep>, Error> {
        // A step runs while an entry at the tick's mean cost fits what is left. A group reads its
        // entries while they fit; a single job's entry is known only once loaded, so the
        // projections pass the budget by at most that one entry (then nothing is left).
        if self.cpu.entries > 0 && self.cpu_left() < self.entry_cpu_ms() {
            return Ok(Some(LaneStep::out_of_room()));
        }
        // Fresh work goes in groups while a group fits (the group claim takes one retry, expired
        // lease or handed-back row as a single job when nothing fresh is due); once a group no
        // longer fits, single jobs.
        let by_cpu = entries_within(self.cpu_left(), self.entry_cpu_ms(), self.group);
        let fits = ctx.rows.minus(GROUP_FIXED_ROWS).items(self.entry_rows, self.group).min(by_cpu);
        if ctx.room >= GROUP_MAX_STATEMENTS && fits >= 2 {
            let started = ctx.clock.now_ms();
            let before = ctx.spent();
            let size = fits;
            let cpu_left = self.cpu_left();
            match process_group_within(ctx.exec, self.policy, size, cpu_left, &mut self.cpu).await? {
                GroupOutcome::Nothing => return Ok(None),
                GroupOutcome::Single(outcome) => {
                    count_job(ctx, &outcome);
                    return Ok(Some(LaneStep::progress()));
                }
                GroupOutcome::Published { published, released } => {
                    let claimed = (published + released).max(1) as u64;
                    let cost = ctx.spent().minus(before);
                    self.entry_rows = RowCount::new(cost.written.div_ceil(claimed), cost.read.div_ceil(claimed));
                    let published = published as u64;
                    ctx.count(JOBS, published);
                    self.group = self.groups.next(size, ctx.clock.now_ms() - started, published);
                    return Ok(Some(LaneStep::progress()));
                }
                GroupOutcome::HandedBack { .. } => {
                    ctx.count(CONFLICTS, 1);
                    return Ok(Some(LaneStep::progress()));
                }
            }
        }
        // A single job may write what the admission limit allows: only with room for that.
        if !self.policy.admission.job_max_rows().fits(ctx.rows) {
            return Ok(Some(LaneStep::out_of_room()));
        }
        let cpu_left = self.cpu_left();
        Ok(process_next_costed(ctx.exec, self.policy, cpu_left).await?.map(|(outcome, cpu)| {
            self.cpu = self.cpu.plus(cpu);
            count_job(ctx, &outcome);
            LaneStep::progress()
        }))
    }
}

fn count_job<E, K>(ctx: &mut Ctx<'_, E, K>, outcome: &JobOutcome) {
    ctx.count(JOBS, 1);
    match outcome {
        JobOutcome::Failed { .. } => ctx.count(FAILED_JOBS, 1),
        JobOutcome::Conflict => ctx.count(CONFLICTS, 1),
        JobOutcome::PublishedLive => ctx.count(SPLIT_JOBS, 1),
        _ => {}
    }
}
