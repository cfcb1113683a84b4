//! Relinking a media item: on an editor's request ([`start`]), the tick's `relink` lane rewrites
//! every file URL that names one of the item's earlier storage keys (its versions) to name its
//! current key, in entries' live data and drafts, trashed entries included.
//!
//! The lane holds one relink under its lease for the tick and walks, from a cursor kept on the
//! relink, the entries whose file URL occurrences in the index name an earlier key, a batch a
//! step: the next entries (one statement), each collection's entries with their drafts (one
//! statement a collection), rewritten in order ([`crate::usage::extract::Rules::relink`]) while
//! they fit the step's statements, the tick's rows and the modelled CPU its projections and
//! relinks share; then one batch writes what changed as ordinary content writes (the live
//! columns as an update writes them, the draft as a draft save writes it, by the editor who
//! asked) with the cursor's advance past them, and holds only while every entry written is as
//! loaded, the relink holds its lease and the item's current key is the one written. An author's
//! edit racing it loses nothing: the batch writes nothing, the conflict is counted and the next
//! step takes one entry at a time until one is written; after [`MAX_CONFLICTS`] lost writes in
//! a row the entry at the cursor is passed over unsettled, never overwritten. An entry that no
//! longer links an earlier key is passed over without a write.
//!
//! What the relink has left is a counter it keeps (`repo::relink`), so a status read costs one
//! row whatever its size. A relink ends `done` when the walk ends, `failed` when its item is gone
//! or its holders kept dying.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value as Json;

use crate::exec::{Error, Executor, Row, Value};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::model::collection::Collection;
use crate::model::ident::Ident;
use crate::repo::encode::live_data;
use crate::repo::projection::{load_group, LoadedEntry};
use crate::repo::relink::{
    self as repo, DraftBase, EntryToWrite, EntryWrite, Keys, Loaded, NextEntry, Passed, Relink, Writer,
};
use crate::repo::schema;
use crate::usage::backoff::Attempts;
use crate::usage::cost::{fitting_bytes, CpuWork};
use crate::usage::extract::{KeyChange, Rules};
use crate::usage::project::CPU_MODEL_US;

/// A relink counts the entries it has left up to this many (beyond: at least that many).
pub const COUNT_CAP: u32 = 1_000;
/// The most earlier keys of an item a relink rewrites (its newest).
pub const MAX_EARLIER_KEYS: u32 = 100;
/// Writes of one entry that may lose to concurrent edits in a row before it is passed over.
pub const MAX_CONFLICTS: i64 = 5;
/// The most entries a step walks to.
pub const MAX_BATCH: u32 = 50;
/// The statements a step issues besides its entries' and its collections': the keys read again
/// after a lost write, the next entries, the drafts' and the write's guard for the relink, the
/// advance, and the conflict's count after a lost write.
pub const STEP_FIXED_STATEMENTS: u64 = 5;
/// The statements a collection adds to a step: its schema (once a tick), its entries' load, and
/// its guard and its entries' pruning in the write.
pub const COLLECTION_STATEMENTS: u64 = 4;
/// The statements a collection adds to a step's write: its guard and its entries' pruning.
const WRITE_COLLECTION_STATEMENTS: u64 = 2;
/// The statements a step's write takes besides its entries' and collections': the relink's
/// guard, the advance, and the conflict's count after a lost write.
const WRITE_FIXED_STATEMENTS: u64 = 3;
/// The most statements an entry's write takes: its live data's revision and update, and its
/// draft's revision and pointer.
pub const ENTRY_STATEMENTS: u64 = 4;
/// The most statements a step issues when it writes one entry: what [`Lane::reserve`] holds.
pub const STEP_MAX_STATEMENTS: u64 = STEP_FIXED_STATEMENTS + COLLECTION_STATEMENTS + ENTRY_STATEMENTS;
/// The most statements a step that claims a relink issues, with what it commits the tick to: the
/// claim, the read of its item's keys, and the failure of the relink when the item is gone or the
/// release of the relink it took when the tick ends.
pub const CLAIM_STATEMENTS: u64 = 3;
/// The most rows an entry's write writes and reads: its row and indexes, the capture's work
/// row, the draft's revision and the pruning of one, and its share of the relink's row.
pub const ENTRY_ROWS: RowCount = RowCount::new(40, 60);
/// The rows a step reads and writes besides its entries': the walk (two sources a key and entry
/// asked for, at most), the relink's row, and a count of what is left from the cursor.
pub const STEP_FIXED_ROWS: RowCount = RowCount::new(4, 2 * MAX_BATCH as u64 * 4 + 2 * COUNT_CAP as u64 + 20);
/// The rows an entry's relink writes (its write with its live revision, then its projection), for
/// a relink's ETA: 35.8 measured for a page linking the file twice (`npm run bench`), rounded up.
pub const ENTRY_ROWS_WRITTEN: u64 = 36;
/// The code of a relink whose item is gone.
pub const MEDIA_GONE: &str = "MEDIA_USAGE_RELINK_MEDIA_GONE";
/// The code of a relink whose holders kept dying.
pub const RELINK_FAILED: &str = "MEDIA_USAGE_RELINK_FAILED";

/// Entries a relink wrote.
pub const ENTRIES_RELINKED: Counter = Counter::new("entriesRelinked");
/// Relink writes that lost to a concurrent edit.
pub const RELINK_CONFLICTS: Counter = Counter::new("relinkConflicts");

/// How a request to relink an item ended.
#[derive(Debug)]
pub enum StartOutcome {
    /// A relink started.
    Started(Relink),
    /// A relink of the item is in progress already (a retry of the request finds its own).
    InProgress(Relink),
    /// No such item.
    NotFound,
    /// The item is in the trash.
    Trashed,
}

/// Starts a relink of `media_id` on behalf of `requested_by`, unless one is in progress.
pub async fn start<E: Executor>(exec: &E, media_id: &str, requested_by: Option<&str>) -> Result<StartOutcome, Error> {
    if let Some(r) = repo::start(exec, media_id, requested_by, COUNT_CAP).await? {
        return Ok(StartOutcome::Started(r));
    }
    let keys = repo::keys(exec, media_id, 0).await?;
    if keys.current.is_none() {
        return Ok(StartOutcome::NotFound);
    }
    if keys.trashed {
        return Ok(StartOutcome::Trashed);
    }
    Ok(match repo::latest(exec, media_id).await? {
        Some(r) if r.finished_at.is_none() => StartOutcome::InProgress(r),
        // It ended between the two reads: the request is answered with the relink it raced.
        Some(r) => StartOutcome::InProgress(r),
        None => StartOutcome::NotFound,
    })
}

/// The relink's state as the API shows it.
pub fn state_word(r: &Relink) -> &'static str {
    use crate::model::state::QueueState;
    match (r.lease.state, &r.finished_at) {
        (QueueState::Failed, _) => "failed",
        (_, Some(_)) => "done",
        (QueueState::Leased, None) => "running",
        _ if r.entries_done > 0 => "running",
        _ => "queued",
    }
}

/// The relink held for the tick, and its item's keys.
#[derive(Debug, Clone)]
struct Held {
    relink: Relink,
    earlier: BTreeSet<String>,
    current: String,
    /// The keys must be read again (a write found the current key changed, perhaps).
    stale_keys: bool,
}

/// An entry walked to, loaded and rewritten: written, or passed over without a write.
struct Planned<'c> {
    cursor: String,
    write: Option<EntryToWrite<'c>>,
}

/// The relink lane in a tick: one relink held, a batch of entries walked, loaded, rewritten and
/// written a step.
#[derive(Debug)]
pub struct RelinkLane<'a> {
    rules: &'a Rules,
    max_revisions: u32,
    cpu_ms: f64,
    /// What the lane parsed this tick, by the CPU model.
    cpu: CpuWork,
    /// Nothing was due: the lane is idle this tick.
    idle: bool,
    held: Option<Held>,
    collections: HashMap<String, Collection>,
}

impl<'a> RelinkLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "relink";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[ENTRIES_RELINKED, RELINK_CONFLICTS];

    /// The lane at the start of a tick: URLs read under `rules`, drafts pruned to
    /// `max_revisions`, the entries it parses within the modelled CPU `cpu_ms` the tick's
    /// projections and relinks share.
    pub fn new(rules: &'a Rules, max_revisions: u32, cpu_ms: f64) -> RelinkLane<'a> {
        RelinkLane {
            rules,
            max_revisions,
            cpu_ms,
            cpu: CpuWork::default(),
            idle: false,
            held: None,
            collections: HashMap::new(),
        }
    }

    /// The rows a relink with `entries_left` entries left still writes.
    pub fn rows_to_write(entries_left: u64) -> u64 {
        entries_left * ENTRY_ROWS_WRITTEN
    }

    fn writer<'h>(&self, held: &'h Held, cursor: &'h str) -> Writer<'h> {
        Writer {
            relink: &held.relink,
            current_key: &held.current,
            max_revisions: self.max_revisions,
            cursor,
            count_cap: COUNT_CAP,
        }
    }

    /// Claims the next due relink and reads its item's keys; `None` when none is due.
    async fn claim<E: Executor>(&mut self, exec: &E) -> Result<Option<LaneStep>, Error> {
        let Some(relink) = repo::claim(exec).await? else {
            self.idle = true;
            return Ok(None);
        };
        if Attempts::new(relink.lease.attempt_count).over_claimed() {
            repo::fail(exec, &relink, RELINK_FAILED).await?;
            return Ok(Some(LaneStep::progress()));
        }
        let mut held = Held { relink, earlier: BTreeSet::new(), current: String::new(), stale_keys: true };
        if !self.read_keys(exec, &mut held).await? {
            return Ok(Some(LaneStep::progress()));
        }
        self.held = Some(held);
        // Taking a relink changes nothing that shows: a tick that only claims stays idle.
        Ok(Some(LaneStep::looked()))
    }

    /// Reads the held relink's keys; false (the relink failed) when its item is gone.
    async fn read_keys<E: Executor>(&self, exec: &E, held: &mut Held) -> Result<bool, Error> {
        let Keys { current, earlier, .. } = repo::keys(exec, &held.relink.media_id, MAX_EARLIER_KEYS).await?;
        let Some(current) = current else {
            repo::fail(exec, &held.relink, MEDIA_GONE).await?;
            return Ok(false);
        };
        held.current = current;
        held.earlier = earlier.into_iter().collect();
        held.stale_keys = false;
        Ok(true)
    }

    /// The modelled CPU the tick's projections and relinks have left, in milliseconds, and
    /// whether they have spent any.
    fn cpu_left<E, K>(&self, ctx: &Ctx<'_, E, K>) -> (f64, bool) {
        let spent_us = ctx.counts.get(CPU_MODEL_US.name);
        (self.cpu_ms - spent_us as f64 / 1000.0, spent_us > 0 || self.cpu.entries > 0)
    }

    /// One step of the held relink: the next batch of entries walked, loaded, rewritten and
    /// written (or passed over); the relink is done when the walk ends.
    async fn relink<E: Executor, K>(&mut self, ctx: &mut Ctx<'_, E, K>, mut held: Held) -> Result<LaneStep, Error> {
        let exec = ctx.exec;
        let (cpu_left, spent_any) = self.cpu_left(ctx);
        if spent_any && cpu_left <= 0.0 {
            self.held = Some(held);
            return Ok(LaneStep::out_of_room());
        }
        let mut used = 0;
        if held.stale_keys {
            used += 1;
            if !self.read_keys(exec, &mut held).await? {
                return Ok(LaneStep::progress());
            }
        }
        let earlier: Vec<String> = held.earlier.iter().cloned().collect();
        // After a lost write, one entry at a time until one is written: the entry at the cursor
        // is the one retried, and passed over once it has lost too often.
        let unsettled = held.relink.conflict_attempts >= MAX_CONFLICTS;
        let limit = if held.relink.conflict_attempts > 0 {
            1
        } else {
            let room = ctx.room.saturating_sub(STEP_FIXED_STATEMENTS + COLLECTION_STATEMENTS);
            let by_rows = ctx.rows.minus(STEP_FIXED_ROWS).items(ENTRY_ROWS, MAX_BATCH);
            u32::try_from(room).unwrap_or(MAX_BATCH).clamp(1, MAX_BATCH).min(by_rows.max(1))
        };
        used += 1;
        let next = repo::next_entries(exec, &earlier, &held.relink.cursor, limit).await?;
        let Some(first) = next.first() else {
            repo::finish(exec, &held.relink).await?;
            return Ok(LaneStep::progress());
        };
        if unsettled {
            let cursor = first.cursor_past();
            let passed = Passed { done: 1, changed: 0, unsettled: 1 };
            if repo::pass(exec, &self.writer(&held, &cursor), passed).await? {
                held.relink.cursor = cursor;
                held.relink.conflict_attempts = 0;
                self.held = Some(held);
            }
            return Ok(LaneStep::progress());
        }
        let loaded = self.load(exec, &next, &mut used, ctx.room, cpu_left).await?;
        let change = KeyChange { earlier: &held.earlier, current: &held.current };
        let budget = Budget {
            room: ctx.room.saturating_sub(used + WRITE_FIXED_STATEMENTS),
            writes: ctx.rows.minus(STEP_FIXED_ROWS).items(ENTRY_ROWS, MAX_BATCH).max(1),
            cpu_left,
            first_always: !spent_any,
        };
        let (planned, cpu) = plan(self.rules, &self.collections, &next, &loaded, change, budget);
        if planned.is_empty() {
            self.held = Some(held);
            return Ok(LaneStep::out_of_room());
        }
        self.cpu = self.cpu.plus(cpu);
        ctx.count(CPU_MODEL_US, (cpu.ms() * 1000.0).round() as u64);
        let cursor = planned.last().map(|p| p.cursor.clone()).unwrap_or_default();
        let done = u32::try_from(planned.len()).unwrap_or(u32::MAX);
        let writes: Vec<EntryToWrite<'_>> = planned.into_iter().filter_map(|p| p.write).collect();
        let passed = Passed { done, changed: u32::try_from(writes.len()).unwrap_or(u32::MAX), unsettled: 0 };
        let writer = self.writer(&held, &cursor);
        let outcome = if writes.is_empty() {
            repo::pass(exec, &writer, passed).await.map(|held| if held { Ok(()) } else { Err(()) })
        } else {
            match repo::write_entries(exec, writes, &writer, passed).await {
                Ok(()) => Ok(Ok(())),
                Err(Error::Stale) => {
                    ctx.count(RELINK_CONFLICTS, 1);
                    if let Some(n) = repo::conflict(exec, &held.relink).await? {
                        held.relink.conflict_attempts = n;
                        // The item may have been replaced meanwhile.
                        held.stale_keys = true;
                        self.held = Some(held);
                    }
                    return Ok(LaneStep::progress());
                }
                Err(e) => Err(e),
            }
        };
        if outcome?.is_ok() {
            ctx.count(ENTRIES_RELINKED, u64::from(passed.changed));
            held.relink.cursor = cursor;
            held.relink.conflict_attempts = 0;
            held.relink.entries_done += i64::from(passed.done);
            self.held = Some(held);
        }
        Ok(LaneStep::progress())
    }

    /// Loads the entries `next` names, a statement per collection (its schema first, once a
    /// tick), as many bytes as `cpu_left` parses (the first entry always); by content id, `None`
    /// for an entry that is gone (or its collection). A collection whose load and one entry's
    /// write would pass `room` (the first always fits the lane's reserve) is not loaded: its
    /// entries, and those after them, wait for the next step.
    async fn load<E: Executor>(
        &mut self,
        exec: &E,
        next: &[NextEntry],
        used: &mut u64,
        room: u64,
        cpu_left: f64,
    ) -> Result<HashMap<String, Option<LoadedEntry>>, Error> {
        let mut order: Vec<&str> = Vec::new();
        for n in next {
            if !order.contains(&n.collection_id.as_str()) {
                order.push(&n.collection_id);
            }
        }
        let max_bytes = i64::try_from(fitting_bytes(cpu_left.max(0.0))).unwrap_or(i64::MAX);
        let mut loaded = HashMap::new();
        for (i, collection_id) in order.into_iter().enumerate() {
            let needs = *used + 2 + WRITE_FIXED_STATEMENTS + WRITE_COLLECTION_STATEMENTS + ENTRY_STATEMENTS;
            if i > 0 && needs > room {
                break;
            }
            let ids: Vec<String> =
                next.iter().filter(|n| n.collection_id == collection_id).map(|n| n.content_id.clone()).collect();
            let Some(first) = next.iter().find(|n| n.collection_id == collection_id) else { continue };
            if !self.collections.contains_key(collection_id) {
                *used += 1;
                let found = match Ident::parse(&first.collection_slug) {
                    Ok(slug) => schema::find(exec, &slug).await?.filter(|c| c.id == collection_id),
                    Err(_) => None,
                };
                let Some(c) = found else {
                    loaded.extend(ids.into_iter().map(|id| (key(collection_id, &id), None)));
                    continue;
                };
                self.collections.insert(c.id.clone(), c);
            }
            let c = &self.collections[collection_id];
            let slugs: Vec<Ident> = c.fields.iter().map(|f| f.slug.clone()).collect();
            *used += 1;
            let group = match load_group(exec, &c.slug, &c.id, &ids, &slugs, max_bytes).await {
                Ok(group) => group.entries,
                Err(e) if e.is_missing_content_table() => ids.iter().map(|id| (id.clone(), gone())).collect(),
                Err(e) => return Err(e),
            };
            for (id, entry) in group {
                loaded.insert(key(collection_id, &id), entry.row.is_some().then_some(entry));
            }
        }
        Ok(loaded)
    }
}

/// The entries of `next` to write or pass over this step, in order while they fit `budget`:
/// each rewritten (`None`: nothing in it changes, or it is gone). The first entry not loaded
/// ends them. With what they cost by the CPU model.
fn plan<'c>(
    rules: &Rules,
    collections: &'c HashMap<String, Collection>,
    next: &[NextEntry],
    loaded: &HashMap<String, Option<LoadedEntry>>,
    change: KeyChange<'_>,
    budget: Budget,
) -> (Vec<Planned<'c>>, CpuWork) {
    let mut planned = Vec::new();
    let mut cpu = CpuWork::default();
    let mut statements = 0;
    let mut guarded: Vec<&str> = Vec::new();
    let mut writes = 0;
    for n in next {
        let Some(entry) = loaded.get(&key(&n.collection_id, &n.content_id)) else { break };
        let cursor = n.cursor_past();
        let Some(entry) = entry else {
            planned.push(Planned { cursor, write: None });
            continue;
        };
        let Some(c) = collections.get(&n.collection_id) else { break };
        let (write, bytes) = rewrite(rules, c, n, entry, change);
        let cost = cpu.plus(CpuWork::entry(bytes, 0, 0));
        let first = planned.is_empty() && budget.first_always;
        if !first && cost.ms() > budget.cpu_left {
            break;
        }
        if let Some(w) = &write {
            let first_of_collection = !guarded.contains(&n.collection_id.as_str());
            let shared = if first_of_collection { WRITE_COLLECTION_STATEMENTS } else { 0 };
            if statements + shared + w.statements() > budget.room || writes >= budget.writes {
                break;
            }
            statements += shared + w.statements();
            writes += 1;
            if first_of_collection {
                guarded.push(&n.collection_id);
            }
        }
        cpu = cost;
        planned.push(Planned { cursor, write });
    }
    (planned, cpu)
}

/// The entry `n` of `c`, as loaded, rewritten: what its write changes (`None`: nothing), and
/// the bytes parsed.
fn rewrite<'c>(
    rules: &Rules,
    c: &'c Collection,
    n: &NextEntry,
    entry: &LoadedEntry,
    change: KeyChange<'_>,
) -> (Option<EntryToWrite<'c>>, u64) {
    let Some(row) = &entry.row else { return (None, 0) };
    let loaded = Loaded {
        id: n.content_id.clone(),
        version: row.get("version").and_then(Json::as_i64).unwrap_or_default(),
        updated_at: text(row, "updated_at").unwrap_or_default().to_owned(),
        draft_revision_id: text(row, "draft_revision_id").map(str::to_owned),
        live_revision_id: text(row, "live_revision_id").map(str::to_owned),
    };
    let mut bytes = 0u64;
    let mut columns = Vec::new();
    for f in &c.fields {
        if let Some(stored) = text(row, f.slug.as_str()) {
            bytes += stored.len() as u64;
            if let Some(new) = rules.relink(stored, change) {
                columns.push((f.slug.clone(), Value::from(new)));
            }
        }
    }
    // A draft of another entry (or collection) is not this entry's to rewrite.
    let own = entry.revision_collection.as_deref() == Some(c.slug.as_str())
        && entry.revision_entry_id.as_deref() == Some(n.content_id.as_str());
    let draft = entry.revision_data.as_ref().filter(|_| own).map(|data| {
        bytes += data.len() as u64;
        let base = match entry.revision_base_version {
            Some(base) if base >= loaded.version => DraftBase::Current,
            base => DraftBase::Kept(base),
        };
        (rules.relink(data, change), data.clone(), base)
    });
    // A current draft stays current when the live columns are written: it is written too.
    let draft = match draft {
        Some((Some(new), _, base)) => Some((new, base)),
        Some((None, old, DraftBase::Current)) if !columns.is_empty() => Some((old, DraftBase::Current)),
        _ => None,
    };
    if columns.is_empty() && draft.is_none() {
        return (None, bytes);
    }
    // The live data as written, for its revision.
    let mut written = row.clone();
    for (slug, value) in &columns {
        if let Value::Text(text) = value {
            written.insert(slug.as_str().to_owned(), Json::String(text.clone()));
        }
    }
    let live = Json::Object(live_data(&written, &c.fields)).to_string();
    (Some(EntryToWrite { collection: c, loaded, write: EntryWrite { columns, live, draft } }), bytes)
}

/// What a step's entries may use: statements for their writes and guards, entries written, the
/// modelled CPU left, and whether the first runs whatever it costs (the tick parsed nothing yet).
#[derive(Debug, Clone, Copy)]
struct Budget {
    room: u64,
    writes: u32,
    cpu_left: f64,
    first_always: bool,
}

fn key(collection_id: &str, content_id: &str) -> String {
    format!("{collection_id}\u{0}{content_id}")
}

fn gone() -> LoadedEntry {
    LoadedEntry {
        row: None,
        revision_id: None,
        revision_collection: None,
        revision_entry_id: None,
        revision_data: None,
        revision_base_version: None,
        registry_slug: None,
        field_epoch: 0,
        fields: Vec::new(),
        observed: Vec::new(),
        sources_signature: String::new(),
    }
}

fn text<'r>(row: &'r Row, column: &str) -> Option<&'r str> {
    row.get(column).and_then(Json::as_str)
}

impl<E: Executor, K> Lane<E, K> for RelinkLane<'_> {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// The most statements its next step issues: the claim and the keys' read while it holds
    /// no relink (so that its look fits beside the other lanes' in a small budget); a batch
    /// with one entry's write. A step given more room walks more entries.
    fn reserve(&self) -> u64 {
        if self.held.is_some() {
            STEP_MAX_STATEMENTS
        } else {
            CLAIM_STATEMENTS
        }
    }

    fn reserve_rows(&self) -> RowCount {
        STEP_FIXED_ROWS.plus(ENTRY_ROWS)
    }

    fn release_cost(&self) -> u64 {
        u64::from(self.held.is_some())
    }

    fn release_rows(&self) -> RowCount {
        if self.held.is_some() {
            RowCount::new(4, 4)
        } else {
            RowCount::default()
        }
    }

    /// Claims a due relink (one read when none is due: the lane then rests for the tick), then
    /// a batch of entries a step while the modelled CPU the tick's projections and relinks
    /// share has room.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.idle {
            return Ok(None);
        }
        let Some(held) = self.held.take() else { return self.claim(ctx.exec).await };
        self.relink(ctx, held).await.map(Some)
    }

    /// Hands the relink held back.
    async fn finish(&mut self, exec: &E) -> Result<(), Error> {
        match self.held.take() {
            Some(held) => repo::release(exec, &held.relink).await,
            None => Ok(()),
        }
    }
}
