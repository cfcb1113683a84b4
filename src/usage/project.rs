//! The projection job: claim work rows, load their entries, build their snapshots, admit the
//! changes under the per-claim limits, and publish them in one guarded batch. A single job is a
//! group of one: both load and publish through the same path (`load_and_plan`, `Job::publish`)
//! and differ only in what they do with an entry they cannot publish (a single job records the
//! failure, a group hands the row back to a single job). Every outcome leaves the index either as
//! it was or fully at the new projection.

use std::collections::BTreeSet;

use serde_json::Value as Json;

pub use super::admission::Admission;
use super::admission::{check_occurrences, occurrence_rows, Lookup, MAX_BOUND_BYTES};
use super::backoff::Attempts;
use super::extract::{extraction_fields, ExtractionField, Library, Rules};
use super::fingerprint::is_v1;
use super::snapshot::{prepare_entry, DraftSnapshot, PreparedEntry, RevisionRow, Snapshot};
use crate::clock::Clock;
use crate::exec::{Error, Executor};
use crate::ids;
use crate::lane::adaptive::AdaptiveBatch;
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::model::field::{Field, FieldMeta, FieldType};
use crate::model::ident::Ident;
use crate::repo::projection::{
    self, BoundRows, LoadedEntry, ObservedEntry, ObservedSource, OccurrenceRow, Publish, SourceRow,
};
use crate::repo::schema;
use crate::repo::work::{self, WorkRow};

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

/// The collection's fields as loaded with the entry. Any field the extractor cannot read makes
/// the whole job fail (closed): skipping it could drop references from the index.
fn fields_of(loaded: &LoadedEntry) -> Result<Vec<Field>, &'static str> {
    loaded
        .fields
        .iter()
        .map(|f| {
            let slug = Ident::parse(&f.slug).map_err(|_| "MEDIA_USAGE_SNAPSHOT_FAILED")?;
            let field_type = FieldType::parse(&f.field_type).ok_or("MEDIA_USAGE_SNAPSHOT_FAILED")?;
            let sub_fields = if field_type == FieldType::Repeater {
                Field::parse_sub_fields_strict(f.validation.as_deref())?
            } else {
                Vec::new()
            };
            Ok(Field {
                id: f.id.clone(),
                slug,
                label: f.label.clone(),
                field_type,
                required: f.required != 0,
                sub_fields,
                sort_order: f.sort_order,
                meta: FieldMeta::default(),
            })
        })
        .collect()
}

/// The stored row already holds exactly this projection.
fn is_noop(s: &Snapshot, observed: Option<&ObservedSource>) -> bool {
    observed.is_some_and(|o| {
        o.current_generation.is_some()
            && o.source_fingerprint.as_deref().is_some_and(|fp| is_v1(fp) && fp == s.fingerprint)
            && o.source_completeness == "complete"
            && o.last_error_code.is_none()
    })
}

/// The writes an entry's new projection needs, before they are bound to statements.
#[derive(Debug, Default)]
struct Writes {
    occurrences: Vec<OccurrenceRow>,
    sources: Vec<SourceRow>,
    delete_keys: Vec<String>,
    draft_error: Option<&'static str>,
    /// The local media the entry references (both variants): what an entry refused for its size
    /// keeps on its failed work row.
    referenced: BTreeSet<String>,
}

impl Writes {
    /// Adds another entry's writes (a group publishes many entries in one batch).
    fn append(&mut self, other: Writes) {
        self.occurrences.extend(other.occurrences);
        self.sources.extend(other.sources);
        self.delete_keys.extend(other.delete_keys);
        self.draft_error = self.draft_error.or(other.draft_error);
        self.referenced.extend(other.referenced);
    }
}

/// What a job will write, or why it may not.
#[derive(Debug)]
enum Plan {
    Write(Writes),
    Unchanged,
    /// A variant passes the admission limit; the local media the entry references.
    ResourceLimit(BTreeSet<String>),
    /// The entry's candidate strings do not fit one lookup: the media they name cannot be told
    /// (only data written behind the API; it fails closed).
    TooLarge,
}

/// An entry read and its references extracted, before the media lookup.
#[derive(Debug)]
struct Prepared {
    schema: Vec<ExtractionField>,
    /// `None` when the entry no longer exists.
    entry: Option<PreparedEntry>,
}

/// Reads the collection's fields and extracts the entry's references (pure); the code says why
/// the fields cannot be read.
fn prepare(
    collection_id: &str,
    collection_slug: &str,
    loaded: &LoadedEntry,
    rules: &Rules,
) -> Result<Prepared, &'static str> {
    let fields = fields_of(loaded)?;
    let schema = extraction_fields(&fields);
    let entry = loaded.row.as_ref().map(|row| {
        let revision = RevisionRow {
            id: loaded.revision_id.clone(),
            collection: loaded.revision_collection.clone(),
            entry_id: loaded.revision_entry_id.clone(),
            data: loaded.revision_data.clone(),
        };
        prepare_entry(collection_id, collection_slug, &fields, &schema, row, &revision, rules)
    });
    Ok(Prepared { schema, entry })
}

/// Decides the writes for an entry (pure): which snapshots changed, which stored sources no
/// longer exist, and whether the change is admitted (each written variant within
/// `admission.max_occurrences`, each bound value within [`MAX_BOUND_BYTES`]). Candidate strings
/// count only when `library` holds what they name.
fn plan(loaded: &LoadedEntry, prepared: &Prepared, policy: &Policy, library: &Library) -> Plan {
    let observed = |key: &str| loaded.observed.iter().find(|o| o.source_key == key);
    let (mut occurrences, mut sources, mut delete_keys) = (Vec::new(), Vec::new(), Vec::new());
    let mut draft_error = None;
    let mut wanted: Vec<String> = Vec::new();
    let mut referenced = BTreeSet::new();
    if let Some(entry) = &prepared.entry {
        let snaps = entry.snapshots(&prepared.schema, &policy.rules, loaded.field_epoch, library);
        let indexed_draft = match &snaps.draft {
            Some(DraftSnapshot::Indexed(d)) => Some(d),
            _ => None,
        };
        referenced = std::iter::once(&snaps.columns)
            .chain(indexed_draft)
            .flat_map(|s| s.occurrences.iter().filter_map(|o| o.media_id.clone()))
            .collect();
        let mut changed: Vec<&Snapshot> = Vec::new();
        wanted.push(snaps.columns.meta.source_key.clone());
        if !is_noop(&snaps.columns, observed(&snaps.columns.meta.source_key)) {
            changed.push(&snaps.columns);
        }
        match &snaps.draft {
            Some(DraftSnapshot::Indexed(d)) => {
                wanted.push(d.meta.source_key.clone());
                if !is_noop(d, observed(&d.meta.source_key)) {
                    changed.push(d);
                }
            }
            Some(DraftSnapshot::Failed(failure)) => {
                wanted.push(failure.meta.source_key.clone());
                let prior = observed(&failure.meta.source_key);
                let already = prior.is_some_and(|o| {
                    o.source_completeness == "failed" && o.last_error_code.as_deref() == Some(failure.code)
                });
                if !already {
                    sources.push(SourceRow::failed(&failure.meta, failure.code));
                }
                draft_error = Some(failure.code);
            }
            None => {}
        }
        for s in changed {
            if check_occurrences(policy.admission, &s.meta.collection_id, &s.occurrences).is_err() {
                return Plan::ResourceLimit(referenced);
            }
            let generation = ids::new_id();
            let source = SourceRow::complete(&s.meta, &generation, &s.fingerprint, &s.pending_keys);
            if BoundRows::new(std::slice::from_ref(&source)).bytes() > MAX_BOUND_BYTES {
                return Plan::ResourceLimit(referenced);
            }
            occurrences.extend(occurrence_rows(&s.meta.source_key, &generation, &s.occurrences));
            sources.push(source);
        }
    }
    // Removing a source is always admitted: its occurrences go with it (a trigger), however many.
    for o in &loaded.observed {
        if !wanted.contains(&o.source_key) {
            delete_keys.push(o.source_key.clone());
        }
    }
    if occurrences.is_empty() && sources.is_empty() && delete_keys.is_empty() && draft_error.is_none() {
        return Plan::Unchanged;
    }
    Plan::Write(Writes { occurrences, sources, delete_keys, draft_error, referenced })
}

/// Records a failed attempt; terminal once the attempts are used up ([`Attempts`]) or when
/// `always_terminal`.
async fn record_failure<E: Executor>(
    exec: &E,
    work: &WorkRow,
    code: &'static str,
    always_terminal: bool,
) -> Result<JobOutcome, Error> {
    let mut failure = Attempts::new(work.attempt_count).failure();
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
async fn load_and_plan<'w, E: Executor>(
    exec: &E,
    slug: &Ident,
    rows: &'w [WorkRow],
    field_slugs: &[Ident],
    policy: &Policy,
) -> Result<Result<Vec<Planned<'w>>, Stop>, Error> {
    let Some(first) = rows.first() else { return Ok(Ok(Vec::new())) };
    let (cid, cslug) = (first.collection_id.as_str(), first.collection_slug.as_str());
    let ids: Vec<String> = rows.iter().map(|w| w.content_id.clone()).collect();
    let group = match projection::load_group(exec, slug, cid, &ids, field_slugs, GROUP_LOAD_BYTES).await {
        Ok(g) => g,
        // The content table is gone: the collection was deleted (or is being deleted).
        Err(e) if e.is_missing_content_table() => return Ok(Err(Stop::Obsolete)),
        Err(Error::Decode(_)) => return Ok(Err(Stop::Unreadable)),
        Err(e) => return Err(e),
    };
    if group.registry_slug.as_deref() != Some(cslug) {
        return Ok(Err(Stop::Obsolete));
    }
    let prepared: Vec<Result<Prepared, &'static str>> =
        group.entries.iter().map(|(_, loaded)| prepare(cid, cslug, loaded, &policy.rules)).collect();
    let mut lookup = Lookup::default();
    let covered = prepared
        .iter()
        .take_while(|p| match p {
            Ok(Prepared { entry: Some(e), .. }) => lookup.try_add(e.extracted()),
            _ => true,
        })
        .count();
    let library = lookup.run(exec).await?;
    let mut planned = Vec::with_capacity(group.entries.len());
    for (n, ((content_id, loaded), prepared)) in group.entries.into_iter().zip(prepared).enumerate() {
        let Some(work) = rows.iter().find(|w| w.content_id == content_id) else { continue };
        let plan = match prepared {
            Ok(p) if n < covered => Ok(plan(&loaded, &p, policy, &library)),
            Ok(Prepared { entry: Some(_), .. }) if n == 0 => Ok(Plan::TooLarge),
            Ok(_) => break,
            Err(code) => Err(code),
        };
        planned.push(Planned { work, loaded, plan });
    }
    Ok(Ok(planned))
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
    fn publish(&self, observed: Vec<ObservedEntry>, writes: Writes, released_ids: Vec<String>) -> Option<Publish<'a>> {
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
        })
    }
}

/// Processes one claimed work row: a group of one that records what it cannot publish.
pub async fn process<E: Executor>(exec: &E, work: &WorkRow, policy: &Policy) -> Result<JobOutcome, Error> {
    // Claimed more often than it may be attempted: earlier holders died or lost the row without
    // recording anything (a crash, a backend error, a lost lease). Stop here, visibly.
    if Attempts::new(work.attempt_count).over_claimed() {
        return record_failure(exec, work, "MEDIA_USAGE_PROCESSING_FAILED", true).await;
    }
    let Ok(slug) = Ident::parse(&work.collection_slug) else {
        return obsolete(exec, work).await;
    };
    let entry = match load_and_plan(exec, &slug, std::slice::from_ref(work), &[], policy).await? {
        Ok(planned) => planned.into_iter().next(),
        Err(Stop::Obsolete) => return obsolete(exec, work).await,
        Err(Stop::Unreadable) => None,
    };
    let Some(Planned { loaded, plan, .. }) = entry else {
        return record_failure(exec, work, "MEDIA_USAGE_SNAPSHOT_FAILED", false).await;
    };
    let writes = match plan {
        Err(code) => return record_failure(exec, work, code, false).await,
        Ok(Plan::ResourceLimit(referenced)) => return over_limit(exec, work, &referenced).await,
        Ok(Plan::TooLarge) => return record_failure(exec, work, "MEDIA_USAGE_RESOURCE_LIMIT", true).await,
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
        token: work.lease_token.as_deref().unwrap_or_default(),
    };
    let referenced = writes.referenced.clone();
    let Some(publish) = job.publish(vec![ObservedEntry::of(work, &loaded)], writes, Vec::new()) else {
        return over_limit(exec, work, &referenced).await;
    };
    match projection::publish(exec, &publish).await {
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
    let token = ids::new_id();
    let rows = work::claim_group(exec, &token, limit).await?;
    let Some(first) = rows.first() else { return Ok(GroupOutcome::Nothing) };
    if rows.len() == 1 {
        return process(exec, first, policy).await.map(GroupOutcome::Single);
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
    let Ok(planned) = load_and_plan(exec, &slug, &rows, &field_slugs, policy).await? else {
        return hand_back().await;
    };
    let mut writes = Writes::default();
    let (mut occurrence_bytes, mut source_bytes) = (0usize, 0usize);
    let mut observed = Vec::new();
    for Planned { work, loaded, plan } in planned {
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
    let Some(publish) = job.publish(observed, writes, released) else { return hand_back().await };
    match projection::publish(exec, &publish).await {
        Ok(()) => {
            Ok(GroupOutcome::Published { published: publish.observed.len(), released: publish.released_ids.len() })
        }
        Err(Error::Stale) => hand_back().await,
        Err(e) if e.is_missing_content_table() => hand_back().await,
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------------------------
// The tick's work lane.

/// Projection jobs run (single jobs, and each entry a group published).
pub const JOBS: Counter = Counter::new("jobs");
/// Single jobs whose failure was recorded.
pub const FAILED_JOBS: Counter = Counter::new("failedJobs");
/// Single jobs that lost a race, and groups handed back whole.
pub const CONFLICTS: Counter = Counter::new("conflicts");

/// What a group job's entry is assumed to cost until the tick has measured one: an entry with a
/// few references (its claim, load, occurrences, source rows and work row).
pub const GROUP_ENTRY_ROWS: RowCount = RowCount::new(60, 150);
/// The rows of a group job that do not grow with its entries.
pub const GROUP_FIXED_ROWS: RowCount = RowCount::new(50, 200);

/// The work lane in a tick: projection jobs from the work queue, in groups while a group fits
/// the budget, the group's size adapting within the tick (to the time its groups take, and to
/// the rows left, at what its groups' entries cost so far).
#[derive(Debug, Clone)]
pub struct WorkLane<'a> {
    policy: &'a Policy,
    groups: AdaptiveBatch,
    /// The size of the next group job.
    group: u32,
    /// What one entry of a group cost, measured from the last group ([`GROUP_ENTRY_ROWS`]
    /// before the first).
    entry_rows: RowCount,
}

impl<'a> WorkLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "work";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[JOBS, FAILED_JOBS, CONFLICTS];

    /// The lane at the start of a tick: jobs under `policy`, groups sized by `groups`.
    pub fn new(policy: &'a Policy, groups: AdaptiveBatch) -> WorkLane<'a> {
        WorkLane { policy, groups, group: groups.start, entry_rows: GROUP_ENTRY_ROWS }
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

    /// Runs the next group job, or single job once a group no longer fits `ctx.room`; `None`
    /// when no work is due.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        // Fresh work goes in groups while a group fits (the group claim takes one retry, expired
        // lease or handed-back row as a single job when nothing fresh is due); once a group no
        // longer fits, single jobs.
        let fits = ctx.rows.minus(GROUP_FIXED_ROWS).items(self.entry_rows, self.group);
        if ctx.room >= GROUP_MAX_STATEMENTS && fits >= 2 {
            let started = ctx.clock.now_ms();
            let before = ctx.spent();
            let size = fits;
            match process_group(ctx.exec, self.policy, size).await? {
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
        Ok(process_next(ctx.exec, None, self.policy).await?.map(|outcome| {
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
        _ => {}
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
