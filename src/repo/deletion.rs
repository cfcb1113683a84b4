//! Collection deletion tombstones: the slug reservation, the lease, the guarded front phases
//! (fence, registry, table), the bounded cleanup statements and the operator queries.
//!
//! D1 has no transactions, so every statement that changes data carries its own preconditions:
//! the cleanup deletes carry the live-lease guard (`lease_guard.sql`), so a holder whose lease
//! expired changes nothing; every phase change is a checkpoint that only the live holder's
//! statement can make, and one that changes no row means the lease was lost.

use serde::Deserialize;

use super::lease::{self, Failure, LeaseState, LeaseView, DELETION};
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Statement};
use crate::model::ident::Ident;
use crate::model::source::source_key_range;
use crate::model::state::{DeletionPhase, QueueState};
use crate::sql::{render, Fragment};

const LEASE_GUARD: &str = include_str!("../sql/deletion/lease_guard.sql");
const TARGET: &str = include_str!("../sql/deletion/target.sql");
const INSERT_LEASED: &str = include_str!("../sql/deletion/insert_leased.sql");
const CLAIM_FRONT: &str = include_str!("../sql/deletion/claim_front.sql");
const CLAIM_NEXT: &str = include_str!("../sql/deletion/claim_next.sql");
const FENCE: &str = include_str!("../sql/deletion/fence.sql");
const CANCEL_FENCE: &str = include_str!("../sql/deletion/cancel_fence.sql");
const CHECKPOINT: &str = include_str!("../sql/deletion/checkpoint.sql");
const DELETE_REGISTRY: &str = include_str!("../sql/deletion/delete_registry.sql");
const GUARD_DROP_TABLE: &str = include_str!("../sql/deletion/guard_drop_table.sql");
const DROP_CONTENT_TABLE: &str = include_str!("../sql/schema/drop_content_table.sql");
const DELETE_WORK: &str = include_str!("../sql/deletion/delete_work.sql");
const DELETE_REVISIONS: &str = include_str!("../sql/deletion/delete_revisions.sql");
const DELETE_OCCURRENCES: &str = include_str!("../sql/deletion/delete_occurrences.sql");
const DELETE_SOURCES: &str = include_str!("../sql/deletion/delete_sources.sql");
const LEFTOVERS: &str = include_str!("../sql/deletion/leftovers.sql");
const DELETE_RUNS: &str = include_str!("../sql/deletion/delete_runs.sql");
const DELETE_STATUS: &str = include_str!("../sql/deletion/delete_status.sql");
const FINALIZE: &str = include_str!("../sql/deletion/finalize.sql");
const RECORD_FAILURE: &str = include_str!("../sql/deletion/record_failure.sql");
const LIST: &str = include_str!("../sql/deletion/list.sql");
const LIST_IN_PROGRESS: &str = include_str!("../sql/deletion/list_in_progress.sql");
const GET: &str = include_str!("../sql/deletion/get.sql");
const RETRY: &str = include_str!("../sql/deletion/retry.sql");
const COUNT_WORK: &str = include_str!("../sql/deletion/count_work.sql");
const COUNT_REVISIONS: &str = include_str!("../sql/deletion/count_revisions.sql");
const COUNT_OCCURRENCES: &str = include_str!("../sql/deletion/count_occurrences.sql");
const COUNT_SOURCES: &str = include_str!("../sql/deletion/count_sources.sql");
const COUNT_DELETED: &str = include_str!("../sql/deletion/count_deleted.sql");

/// A tombstone row.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Tombstone {
    pub collection_id: String,
    pub collection_slug: String,
    pub force_delete: i64,
    /// Its lease and attempt columns.
    #[serde(flatten)]
    pub lease: LeaseState,
    pub phase: DeletionPhase,
    pub cleanup_batch_rows: i64,
    /// Which kind of row of its phase the batch size was learned on (an index into the phase's
    /// kinds).
    pub cleanup_rows_kind: i64,
    pub created_at: String,
    /// Rows of each kind counted and not yet deleted ([`Tombstone::left`]).
    pub left_work: i64,
    pub left_revisions: i64,
    pub left_occurrences: i64,
    pub left_sources: i64,
    /// The kind of row being counted ([`Rows::index`]); [`COUNTED`] once every kind is.
    pub count_kind: i64,
}

/// A tombstone's `count_kind` once every kind of row it deletes has been counted.
pub const COUNTED: u32 = 4;

impl Tombstone {
    /// Its lease and attempt columns.
    pub fn lease_view(&self) -> LeaseView<'_> {
        self.lease.view()
    }

    /// What the deletion has left of each kind of row, as its counters say: exact once
    /// [`Tombstone::counted`], a lower bound before (the kinds not yet counted show 0).
    pub fn left(&self) -> Vec<(Rows, u64)> {
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        vec![
            (Rows::Work, n(self.left_work)),
            (Rows::Revisions, n(self.left_revisions)),
            (Rows::Occurrences, n(self.left_occurrences)),
            (Rows::Sources, n(self.left_sources)),
        ]
    }

    /// Whether every kind of row the deletion deletes has been counted.
    pub fn counted(&self) -> bool {
        self.count_kind >= i64::from(COUNTED)
    }
}

/// A tombstone with whether its lease is live by the database clock.
#[derive(Debug, Clone, Deserialize)]
pub struct TombstoneWithLease {
    #[serde(flatten)]
    pub row: Tombstone,
    pub lease_live: Option<i64>,
}

impl TombstoneWithLease {
    pub fn lease_is_live(&self) -> bool {
        self.row.lease.state == QueueState::Leased && self.lease_live == Some(1)
    }
}

/// What a DELETE of a slug finds: the registered collection's id and the slug's tombstone.
#[derive(Debug, Clone)]
pub struct Target {
    pub registry_id: Option<String>,
    pub tombstone: Option<TombstoneWithLease>,
}

/// The registry id and tombstone of a slug, in one statement.
pub async fn target<E: Executor>(exec: &E, slug: &Ident) -> Result<Target, Error> {
    #[derive(Deserialize)]
    struct Row {
        registry_id: Option<String>,
        collection_id: Option<String>,
    }
    let outcome = exec.run(Statement::new(TARGET).bind(slug.as_str())).await?;
    let row: Row = outcome.first()?.ok_or_else(|| Error::Decode("the target query returned no row".into()))?;
    let tombstone = match row.collection_id {
        Some(_) => outcome.first::<TombstoneWithLease>()?,
        None => None,
    };
    Ok(Target { registry_id: row.registry_id, tombstone })
}

/// A deletion held by its lease: everything the guarded statements need.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub collection_id: String,
    pub slug: Ident,
    pub token: String,
    pub force: bool,
    /// The phase the tombstone is at (the lease guard matches it).
    pub phase: DeletionPhase,
}

impl Lease {
    /// The lease a claimed row carries; `None` when the row holds no lease or its stored slug is
    /// not an identifier (then nothing may be built from it).
    pub fn of(row: &Tombstone) -> Option<Lease> {
        Some(Lease {
            collection_id: row.collection_id.clone(),
            slug: Ident::parse(&row.collection_slug).ok()?,
            token: row.lease.lease_token.clone()?,
            force: row.force_delete != 0,
            phase: row.phase,
        })
    }

    fn table(&self) -> Fragment {
        Fragment::content_table(&self.slug)
    }

    /// The collection's source-key range (its occurrences are found by it).
    fn key_range(&self) -> (String, String) {
        source_key_range(&self.collection_id)
    }

    /// A statement whose `{lease}` (and `{table}`) placeholders are filled, bound with the lease
    /// guard's parameters `?1` (collection id), `?2` (token) and `?3` (phase).
    fn guarded(&self, template: &'static str) -> Statement {
        let sql = render(template, &[("lease", &Fragment::static_sql(LEASE_GUARD)), ("table", &self.table())]);
        Statement::new(sql).bind(self.collection_id.as_str()).bind(self.token.as_str()).bind(self.phase)
    }
}

/// Inserts a new tombstone already leased at `fence` by `token` (for [`DELETION`]'s lease
/// length, its first attempt counted), only while the collection is registered with this exact
/// identity and actively captured with its exact trigger set. `None` when those preconditions
/// fail or a tombstone for the id or slug exists.
pub async fn insert_leased<E: Executor>(
    exec: &E,
    collection_id: &str,
    slug: &Ident,
    force: bool,
    token: &str,
    batch_rows: u32,
    trigger_names: &[String; 3],
) -> Result<Option<Tombstone>, Error> {
    let [ai, au, ad] = trigger_names;
    let stmt = DELETION
        .claim(INSERT_LEASED, token)
        .bind(collection_id)
        .bind(slug.as_str())
        .bind(force)
        .bind(batch_rows)
        .bind(ai.as_str())
        .bind(au.as_str())
        .bind(ad.as_str());
    exec.query_first(stmt).await
}

/// Takes over a tombstone at a front phase that is due (or whose lease expired), raising its
/// force flag if this request asks for force.
pub async fn claim_front<E: Executor>(
    exec: &E,
    collection_id: &str,
    force: bool,
    token: &str,
) -> Result<Option<Tombstone>, Error> {
    let stmt = DELETION.claim(CLAIM_FRONT, token).bind(collection_id).bind(force);
    exec.query_first(stmt).await
}

/// Claims the next due tombstone (pending or retry and due, or leased with an expired lease),
/// in due order, at whatever phase it is.
pub async fn claim_next<E: Executor>(exec: &E, token: &str) -> Result<Option<Tombstone>, Error> {
    exec.query_first(DELETION.claim(CLAIM_NEXT, token)).await
}

/// How a fence attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    /// The collection is fenced (now, or by an earlier attempt that crashed) and the deletion
    /// moved on to `registry`.
    Fenced,
    /// Not forced, and the collection has entries outside the trash: the tombstone was
    /// cancelled and the collection is untouched.
    HasContent,
    /// A precondition failed (lease lost, collection changed); nothing changed.
    Stale,
}

/// Fences content writes (capture `active` → `deleting`) and checkpoints to `registry`, in one
/// atomic batch. Every precondition is in the fence's `WHERE`; without force the batch also
/// cancels the tombstone when entries outside the trash are the reason it did not fence. A
/// forced fence never reports `HasContent`.
pub async fn fence<E: Executor>(exec: &E, lease: &Lease, batch_rows: u32) -> Result<Fence, Error> {
    let mut stmts = vec![
        lease.guarded(FENCE).bind(lease.slug.as_str()).bind(lease.force),
        checkpoint_statement(lease, DeletionPhase::Registry, Batch { rows: batch_rows, kind: 0 }, false),
    ];
    if !lease.force {
        stmts.push(lease.guarded(CANCEL_FENCE).bind(lease.slug.as_str()));
    }
    let outcomes = exec.batch(stmts).await?;
    let changed = |i: usize| outcomes.get(i).is_some_and(|o| o.changes > 0);
    Ok(if changed(1) {
        Fence::Fenced
    } else if changed(2) {
        Fence::HasContent
    } else {
        Fence::Stale
    })
}

/// Deletes the registry row (fields cascade) and checkpoints to `table`, atomically. True when
/// the checkpoint was made (the row may already have been gone: idempotent).
pub async fn delete_registry<E: Executor>(exec: &E, lease: &Lease, batch_rows: u32) -> Result<bool, Error> {
    let outcomes = exec
        .batch(vec![
            lease.guarded(DELETE_REGISTRY).bind(lease.slug.as_str()),
            checkpoint_statement(lease, DeletionPhase::Table, Batch { rows: batch_rows, kind: 0 }, false),
        ])
        .await?;
    Ok(outcomes.get(1).is_some_and(|o| o.changes == 1))
}

/// Drops the content table and checkpoints to `work` (releasing the lease when `release`), in
/// one guarded batch that aborts unless the tombstone is leased at `table` by this lease and no
/// collection is registered under the slug. `Err(Stale)` when the guard failed.
pub async fn drop_table<E: Executor>(exec: &E, lease: &Lease, batch_rows: u32, release: bool) -> Result<(), Error> {
    let guard = Guard::new(GUARD_DROP_TABLE)
        .bind(lease.collection_id.as_str())
        .bind(lease.token.as_str())
        .bind(lease.slug.as_str());
    let stmts = vec![
        Statement::new(render(DROP_CONTENT_TABLE, &[("table", &lease.table())])),
        checkpoint_statement(lease, DeletionPhase::Work, Batch { rows: batch_rows, kind: 0 }, release),
    ];
    let outcomes = guarded_batch(exec, guard, stmts).await?;
    if outcomes.get(1).is_some_and(|o| o.changes == 1) {
        Ok(())
    } else {
        Err(Error::Stale)
    }
}

/// The rows the background phases delete, in the order they delete them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Queued projection work of the collection id (phase `work`).
    Work,
    /// Revisions of the collection's entries, by slug (phase `work`).
    Revisions,
    /// Occurrences in the collection's source-key range, whatever their source (phase `sources`).
    Occurrences,
    /// Source rows of the collection id (phase `sources`).
    Sources,
}

impl Rows {
    /// Every kind, in the order the deletion counts and deletes them.
    pub const ALL: [Rows; 4] = [Rows::Work, Rows::Revisions, Rows::Occurrences, Rows::Sources];

    /// Its place in [`Rows::ALL`]: its number in `count_kind` and in the counting statements.
    pub fn index(self) -> u32 {
        match self {
            Rows::Work => 0,
            Rows::Revisions => 1,
            Rows::Occurrences => 2,
            Rows::Sources => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Rows::Work => "work",
            Rows::Revisions => "revisions",
            Rows::Occurrences => "occurrences",
            Rows::Sources => "sources",
        }
    }
}

/// What a cleanup statement did: how many rows it deleted, and what it alone read and wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    pub rows: u64,
    pub read: u64,
    pub written: u64,
}

/// Deletes up to `limit` rows of one kind, guarded by the live lease, and takes them off the
/// kind's counter in the same atomic batch (to 0 when fewer than `limit` went: the kind is
/// exhausted).
pub async fn delete_rows<E: Executor>(exec: &E, lease: &Lease, rows: Rows, limit: u32) -> Result<Deleted, Error> {
    let key_range = lease.key_range();
    let stmt = match rows {
        Rows::Work => lease.guarded(DELETE_WORK).bind(limit),
        Rows::Revisions => lease.guarded(DELETE_REVISIONS).bind(limit).bind(lease.slug.as_str()),
        Rows::Occurrences => {
            lease.guarded(DELETE_OCCURRENCES).bind(limit).bind(key_range.0.as_str()).bind(key_range.1.as_str())
        }
        Rows::Sources => lease.guarded(DELETE_SOURCES).bind(limit),
    };
    let counter = lease.guarded(COUNT_DELETED).bind(rows.index()).bind(limit);
    let outcomes = exec.batch(vec![stmt, counter]).await?;
    let deleted = outcomes.first().ok_or_else(|| Error::Decode("a cleanup batch returned no outcome".into()))?;
    Ok(Deleted { rows: deleted.changes, read: deleted.rows_read, written: deleted.rows_written })
}

/// Counts the next page of up to `limit` rows of the kind the deletion is counting (`rows`),
/// from its stored cursor, under the live lease; the tombstone as it now is, or `None` when the
/// lease was lost or another kind is being counted. One statement: a repeat counts the next
/// page.
pub async fn count_rows<E: Executor>(
    exec: &E,
    lease: &Lease,
    rows: Rows,
    limit: u32,
) -> Result<Option<Tombstone>, Error> {
    let (lo, hi) = lease.key_range();
    let stmt = match rows {
        Rows::Work => lease.guarded(COUNT_WORK).bind(limit),
        Rows::Revisions => lease.guarded(COUNT_REVISIONS).bind(limit).bind(lease.slug.as_str()),
        Rows::Occurrences => lease.guarded(COUNT_OCCURRENCES).bind(limit).bind(lo).bind(hi),
        Rows::Sources => lease.guarded(COUNT_SOURCES).bind(limit),
    };
    exec.query_first(stmt).await
}

/// What is left of a collection's index rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Leftovers {
    pub work: i64,
    pub sources: i64,
    pub occurrences: i64,
    pub revisions: i64,
}

impl Leftovers {
    pub fn any(&self) -> bool {
        self.work + self.sources + self.occurrences + self.revisions > 0
    }
}

/// Whether any work, source, occurrence or revision row of the collection remains: one SELECT.
pub async fn leftovers<E: Executor>(exec: &E, lease: &Lease) -> Result<Leftovers, Error> {
    let (lo, hi) = lease.key_range();
    let stmt = Statement::new(LEFTOVERS).bind(lease.collection_id.as_str()).bind(lo).bind(hi).bind(lease.slug.as_str());
    Ok(exec.query_first(stmt).await?.unwrap_or_default())
}

/// Deletes the collection's repair runs and coverage row and checkpoints to `finalize`,
/// atomically and under the live lease. True when the checkpoint was made.
pub async fn clear_status<E: Executor>(exec: &E, lease: &Lease, batch_rows: u32) -> Result<bool, Error> {
    let outcomes = exec
        .batch(vec![
            lease.guarded(DELETE_RUNS),
            lease.guarded(DELETE_STATUS),
            checkpoint_statement(lease, DeletionPhase::Finalize, Batch { rows: batch_rows, kind: 0 }, false),
        ])
        .await?;
    Ok(outcomes.get(2).is_some_and(|o| o.changes == 1))
}

/// Deletes the tombstone, only under the live lease at `finalize` and only if nothing of the
/// collection is left. True when it was deleted.
pub async fn finalize<E: Executor>(exec: &E, lease: &Lease) -> Result<bool, Error> {
    let (lo, hi) = lease.key_range();
    let stmt = Statement::new(FINALIZE).bind(lease.collection_id.as_str()).bind(lease.token.as_str()).bind(lo).bind(hi);
    Ok(exec.execute(stmt).await? == 1)
}

/// The checkpoint statement: only the live holder moves the deletion, and a phase is left only
/// once what it removes is gone (see `checkpoint.sql`).
fn checkpoint_statement(lease: &Lease, to: DeletionPhase, batch: Batch, release: bool) -> Statement {
    let (lo, hi) = lease.key_range();
    Statement::new(lease::render_releasing_on(CHECKPOINT, 6))
        .bind(lease.collection_id.as_str())
        .bind(lease.token.as_str())
        .bind(lease.phase)
        .bind(to)
        .bind(batch.rows)
        .bind(release)
        .bind(lo)
        .bind(hi)
        .bind(batch.kind)
}

/// The cleanup batch a deletion stores for its next holder: rows per statement, and the kind of
/// row of its phase they were learned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    pub rows: u32,
    /// An index into the phase's kinds of row.
    pub kind: u32,
}

/// Moves the deletion to phase `to` (the same phase to only record the batch size), releasing
/// the lease (`pending`, due now) when `release`. Resets the attempt count. False when the
/// lease was lost.
pub async fn checkpoint<E: Executor>(
    exec: &E,
    lease: &Lease,
    to: DeletionPhase,
    batch: Batch,
    release: bool,
) -> Result<bool, Error> {
    Ok(exec.execute(checkpoint_statement(lease, to, batch, release)).await? == 1)
}

/// Records a failed attempt under the live lease: `retry` after the failure's delay, or
/// `failed` when terminal, with `attempts` counted and, if the row is still at the holder's
/// `phase`, `batch` for the next holder. The phase is kept. False when the lease was already
/// lost.
pub async fn record_failure<E: Executor>(
    exec: &E,
    (collection_id, token, phase): (&str, &str, DeletionPhase),
    (failure, attempts): (Failure, i64),
    batch: Batch,
    code: &str,
) -> Result<bool, Error> {
    let stmt = failure
        .statement(RECORD_FAILURE, code)
        .bind(collection_id)
        .bind(token)
        .bind(attempts)
        .bind(batch.rows)
        .bind(batch.kind)
        .bind(phase);
    Ok(exec.execute(stmt).await? == 1)
}

/// Tombstones in `state`, newest first, after `(updated_at, collection_id)`; `limit + 1` rows.
pub async fn list<E: Executor>(
    exec: &E,
    state: QueueState,
    after: Option<(String, String)>,
    limit: u32,
) -> Result<Vec<Tombstone>, Error> {
    let (at, id) = after.unzip();
    exec.query(Statement::new(LIST).bind(state).bind(at).bind(id).bind(i64::from(limit) + 1)).await
}

/// Every tombstone (up to `limit`), oldest first.
pub async fn in_progress<E: Executor>(exec: &E, limit: u32) -> Result<Vec<Tombstone>, Error> {
    exec.query(Statement::new(LIST_IN_PROGRESS).bind(i64::from(limit))).await
}

/// One tombstone by collection id.
pub async fn get<E: Executor>(exec: &E, collection_id: &str) -> Result<Option<TombstoneWithLease>, Error> {
    exec.query_first(Statement::new(GET).bind(collection_id)).await
}

/// Reopens a failed, retrying or expired tombstone as `pending`, due now, attempts reset, phase
/// kept, its cleanup batch back at `batch_rows`. `None` when it is in none of those states
/// (already pending, or leased live).
pub async fn retry<E: Executor>(exec: &E, collection_id: &str, batch_rows: u32) -> Result<Option<Tombstone>, Error> {
    exec.query_first(Statement::new(lease::render(RETRY, &[])).bind(collection_id).bind(batch_rows)).await
}
