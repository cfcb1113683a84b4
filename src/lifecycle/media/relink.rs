//! Relinking a media item: on an editor's request ([`start`]), the tick's `relink` lane rewrites
//! every file URL that names one of the item's earlier storage keys (its versions) to name its
//! current key, in entries' live data and drafts, trashed entries included.
//!
//! The lane holds one relink under its lease for the tick and walks the item's file URL
//! occurrences in the index, an entry per two steps from a cursor kept on the relink: one step
//! loads the entry (its row and its draft revision) and rewrites its stored text
//! ([`crate::usage::extract::Rules::relink`]); the next writes what changed as ordinary content
//! writes (the live columns as an update writes them, the draft as a draft save writes it, by
//! the editor who asked), in one batch with the cursor's advance that holds only while the entry
//! is as loaded. An author's edit between the two loses nothing: the batch writes nothing, the
//! conflict is counted and the entry is loaded again at the next step; after
//! [`MAX_CONFLICTS`] in a row it is passed over unsettled, never overwritten. An entry that no
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
use crate::repo::content;
use crate::repo::relink::{self as repo, DraftBase, EntryWrite, Keys, Loaded, NextEntry, Relink, Writer};
use crate::repo::schema;
use crate::usage::backoff::Attempts;
use crate::usage::cost::CpuWork;
use crate::usage::extract::{KeyChange, Rules};
use crate::usage::project::GROUP_ENTRY_ROWS;

/// A relink counts the entries it has left up to this many (beyond: at least that many).
pub const COUNT_CAP: u32 = 1_000;
/// The most earlier keys of an item a relink rewrites (its newest).
pub const MAX_EARLIER_KEYS: u32 = 100;
/// Writes of one entry that may lose to concurrent edits in a row before it is passed over.
pub const MAX_CONFLICTS: i64 = 5;
/// The most statements a step issues: the write's batch (guard, live update, the draft's
/// revision, pointer and pruning, the advance) and the conflict's count after it lost.
pub const STEP_MAX_STATEMENTS: u64 = 7;
/// The most statements a step that claims a relink issues: the claim, and the read of its
/// item's keys (or its failure).
pub const CLAIM_STATEMENTS: u64 = 2;
/// The most statements a step that loads an entry issues: the keys read again after a lost
/// write, the next entry, its collection, its row, its draft, and the pass over it (or the end of
/// the walk).
pub const LOAD_STATEMENTS: u64 = 6;
/// The most rows a step reads and writes: an entry's write (its row and indexes, the capture's
/// work row, the draft revision and the pruning of one, the relink's row) or its load, and a
/// count of what is left from the cursor.
pub const STEP_MAX_ROWS: RowCount = RowCount::new(64, 200 + 2 * COUNT_CAP as u64);
/// The most statements an entry's relink takes: its load (the next entry, its row, its draft
/// revision) and its write (guard, live update, the draft's three, the advance).
pub const ENTRY_STATEMENTS: u64 = 9;
/// The rows an entry's relink writes (its write, then its projection).
pub const ENTRY_ROWS_WRITTEN: u64 = 40 + GROUP_ENTRY_ROWS.written;
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

/// An entry loaded and rewritten, to be written at the next step.
#[derive(Debug, Clone)]
struct Pending {
    collection: Collection,
    loaded: Loaded,
    write: EntryWrite,
    cursor: String,
}

/// The relink lane in a tick: one relink held, an entry loaded per step and written at the next.
#[derive(Debug)]
pub struct RelinkLane<'a> {
    rules: &'a Rules,
    max_revisions: u32,
    cpu_ms: f64,
    cpu: CpuWork,
    /// Nothing was due: the lane is idle this tick.
    idle: bool,
    held: Option<Held>,
    pending: Option<Pending>,
    collections: HashMap<String, Collection>,
}

impl<'a> RelinkLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "relink";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[ENTRIES_RELINKED, RELINK_CONFLICTS];

    /// The lane at the start of a tick: URLs read under `rules`, drafts pruned to
    /// `max_revisions`, the entries it parses within the modelled CPU `cpu_ms`.
    pub fn new(rules: &'a Rules, max_revisions: u32, cpu_ms: f64) -> RelinkLane<'a> {
        RelinkLane {
            rules,
            max_revisions,
            cpu_ms,
            cpu: CpuWork::default(),
            idle: false,
            held: None,
            pending: None,
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

    /// Loads the next entry and rewrites it: held to be written at the next step, or passed over
    /// when nothing in it changes (or it is gone); the relink is done when there is none.
    async fn load<E: Executor, K>(&mut self, ctx: &mut Ctx<'_, E, K>, mut held: Held) -> Result<LaneStep, Error> {
        let exec = ctx.exec;
        if held.stale_keys && !self.read_keys(exec, &mut held).await? {
            return Ok(LaneStep::progress());
        }
        let Some(next) = repo::next_entry(exec, &held.relink.media_id, &held.relink.cursor).await? else {
            repo::finish(exec, &held.relink).await?;
            return Ok(LaneStep::progress());
        };
        let cursor = next.cursor_past();
        let unsettled = held.relink.conflict_attempts >= MAX_CONFLICTS;
        let loaded = if unsettled { None } else { self.load_entry(exec, &next, &held).await? };
        let Some((collection, loaded, write, bytes)) = loaded else {
            if repo::pass(exec, &self.writer(&held, &cursor), unsettled).await? {
                held.relink.cursor = cursor;
                held.relink.conflict_attempts = 0;
                self.held = Some(held);
            }
            return Ok(LaneStep::progress());
        };
        self.cpu = self.cpu.plus(CpuWork::entry(bytes, 0, 0));
        self.pending = Some(Pending { collection, loaded, write, cursor });
        self.held = Some(held);
        // Loaded, not yet written: a tick that ends here changed nothing.
        Ok(LaneStep::looked())
    }

    /// The entry `next` names, loaded and rewritten: `None` when it is gone or nothing in it
    /// changes.
    async fn load_entry<E: Executor>(
        &mut self,
        exec: &E,
        next: &NextEntry,
        held: &Held,
    ) -> Result<Option<(Collection, Loaded, EntryWrite, u64)>, Error> {
        let collection = match self.collections.get(&next.collection_id) {
            Some(c) => c.clone(),
            None => {
                let Ok(slug) = Ident::parse(&next.collection_slug) else { return Ok(None) };
                match schema::find(exec, &slug).await? {
                    Some(c) if c.id == next.collection_id => {
                        self.collections.insert(c.id.clone(), c.clone());
                        c
                    }
                    _ => return Ok(None),
                }
            }
        };
        let row = match content::get(exec, &collection, &next.content_id).await {
            Ok(Some(row)) => row,
            Ok(None) => return Ok(None),
            Err(e) if e.is_missing_content_table() => return Ok(None),
            Err(e) => return Err(e),
        };
        let loaded = Loaded {
            id: next.content_id.clone(),
            version: row.get("version").and_then(Json::as_i64).unwrap_or_default(),
            updated_at: text(&row, "updated_at").unwrap_or_default().to_owned(),
            draft_revision_id: text(&row, "draft_revision_id").map(str::to_owned),
            live_revision_id: text(&row, "live_revision_id").map(str::to_owned),
        };
        let draft = match &loaded.draft_revision_id {
            Some(id) => content::get_revision(exec, id).await?,
            None => None,
        };
        let change = KeyChange { earlier: &held.earlier, current: &held.current };
        let mut bytes = 0u64;
        let mut columns = Vec::new();
        for f in &collection.fields {
            if let Some(stored) = text(&row, f.slug.as_str()) {
                bytes += stored.len() as u64;
                if let Some(new) = self.rules.relink(stored, change) {
                    columns.push((f.slug.clone(), Value::from(new)));
                }
            }
        }
        let draft = draft.map(|rev| {
            bytes += rev.data.len() as u64;
            let base = match rev.base_version {
                Some(_) if !rev.is_stale(loaded.version) => DraftBase::Current,
                base => DraftBase::Kept(base),
            };
            (self.rules.relink(&rev.data, change), rev.data, base)
        });
        // A current draft stays current when the live columns are written: it is written too.
        let draft = match draft {
            Some((Some(new), _, base)) => Some((new, base)),
            Some((None, old, DraftBase::Current)) if !columns.is_empty() => Some((old, DraftBase::Current)),
            _ => None,
        };
        if columns.is_empty() && draft.is_none() {
            return Ok(None);
        }
        Ok(Some((collection, loaded, EntryWrite { columns, draft }, bytes)))
    }

    /// Writes the entry loaded at the last step; a lost write is counted, to be loaded again.
    async fn write<E: Executor, K>(
        &mut self,
        ctx: &mut Ctx<'_, E, K>,
        mut held: Held,
        p: Pending,
    ) -> Result<LaneStep, Error> {
        let writer = self.writer(&held, &p.cursor);
        match repo::write_entry(ctx.exec, &p.collection, &p.loaded, p.write, &writer).await {
            Ok(()) => {
                ctx.count(ENTRIES_RELINKED, 1);
                held.relink.cursor = p.cursor;
                held.relink.conflict_attempts = 0;
                self.held = Some(held);
                Ok(LaneStep::progress())
            }
            Err(Error::Stale) => {
                ctx.count(RELINK_CONFLICTS, 1);
                if let Some(n) = repo::conflict(ctx.exec, &held.relink).await? {
                    held.relink.conflict_attempts = n;
                    // The item may have been replaced meanwhile.
                    held.stale_keys = true;
                    self.held = Some(held);
                }
                Ok(LaneStep::progress())
            }
            Err(e) => Err(e),
        }
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
    /// no relink (so that its look fits beside the other lanes' in a small budget); a load
    /// (keys, next entry, collection, row, draft, and the pass over an entry) or a write.
    fn reserve(&self) -> u64 {
        match (&self.held, &self.pending) {
            (None, _) => CLAIM_STATEMENTS,
            (Some(_), None) => LOAD_STATEMENTS,
            (Some(_), Some(_)) => STEP_MAX_STATEMENTS,
        }
    }

    fn reserve_rows(&self) -> RowCount {
        STEP_MAX_ROWS
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
    /// loads an entry per step and writes it at the next, until the modelled CPU of what it
    /// parsed reaches the tick's.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.idle {
            return Ok(None);
        }
        let Some(held) = self.held.take() else { return self.claim(ctx.exec).await };
        if let Some(p) = self.pending.take() {
            return self.write(ctx, held, p).await.map(Some);
        }
        if self.cpu.entries > 0 && self.cpu.ms() >= self.cpu_ms {
            self.held = Some(held);
            return Ok(Some(LaneStep::out_of_room()));
        }
        self.load(ctx, held).await.map(Some)
    }

    /// Hands the relink held back (what was loaded and not written is loaded again next time).
    async fn finish(&mut self, exec: &E) -> Result<(), Error> {
        self.pending = None;
        match self.held.take() {
            Some(held) => repo::release(exec, &held.relink).await,
            None => Ok(()),
        }
    }
}
