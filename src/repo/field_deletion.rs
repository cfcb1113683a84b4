//! Field deletions: the statements of the DELETE request (registry row, column renamed out of
//! reach, the deletion row, coverage, the jobs under way), and those of the ticks' `fields` lane
//! (the lease, the walk that removes the field's occurrences, the column drop, failures), plus
//! the update of a field (`PUT`).
//!
//! D1 has no transactions, so every statement that changes data carries its own preconditions:
//! the request is one guarded batch; each lane statement carries the live-lease predicate
//! (`fields/lease_guard.sql`), so a holder whose lease expired changes nothing.

use serde::Deserialize;

use super::lease::{self, Failure, LeaseState, FIELD_DELETION};
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Statement};
use crate::model::collection::Collection;
use crate::model::field::Field;
use crate::model::ident::Ident;
use crate::model::source::source_key_range;
use crate::model::state::FieldDeletionPhase;
use crate::sql::{render, Fragment};

const GUARD_DELETE: &str = include_str!("../sql/fields/guard_delete.sql");
const DELETE_FIELD: &str = include_str!("../sql/fields/delete_field.sql");
const RENAME_COLUMN: &str = include_str!("../sql/fields/rename_column.sql");
const INSERT_DELETION: &str = include_str!("../sql/fields/insert_deletion.sql");
const INVALIDATE: &str = include_str!("../sql/usage/invalidate_for_field_change.sql");
const REQUEUE_LEASED_WORK: &str = include_str!("../sql/fields/requeue_leased_work.sql");
const REQUEUE_UNINDEXED_WORK: &str = include_str!("../sql/fields/requeue_unindexed_work.sql");
const TOUCH_COLLECTION: &str = include_str!("../sql/schema/touch_collection.sql");
const BUMP_FIELD_EPOCH: &str = include_str!("../sql/fields/bump_field_epoch.sql");
const CLAIM_NEXT: &str = include_str!("../sql/fields/claim_next.sql");
const LEASE_GUARD: &str = include_str!("../sql/fields/lease_guard.sql");
const WINDOW_END: &str = include_str!("../sql/fields/window_end.sql");
const DELETE_OCCURRENCES: &str = include_str!("../sql/fields/delete_occurrences.sql");
const CHECKPOINT: &str = include_str!("../sql/fields/checkpoint.sql");
const COMPLETE_COVERAGE: &str = include_str!("../sql/fields/complete_coverage.sql");
const RECORD_FAILURE: &str = include_str!("../sql/fields/record_failure.sql");
const COLUMN_STATE: &str = include_str!("../sql/fields/column_state.sql");
const GUARD_COLUMN: &str = include_str!("../sql/fields/guard_column.sql");
const DROP_INDEX: &str = include_str!("../sql/fields/drop_index.sql");
const DROP_COLUMN: &str = include_str!("../sql/fields/drop_column.sql");
const FINALIZE: &str = include_str!("../sql/fields/finalize.sql");
const REOPEN: &str = include_str!("../sql/fields/reopen.sql");
const FIND: &str = include_str!("../sql/fields/find.sql");
const LIST_IN_PROGRESS: &str = include_str!("../sql/fields/list_in_progress.sql");
const GUARD_UPDATE: &str = include_str!("../sql/fields/guard_update.sql");
const UPDATE_FIELD: &str = include_str!("../sql/fields/update_field.sql");

// ---------------------------------------------------------------------------------------------
// The DELETE and PUT requests.

/// The statements of a field's deletion, after its guard ([`delete_guard`]): the registry row
/// goes, the column is renamed to `deleted_column` (so no statement naming the field can write
/// it), the deletion row is written (due now, walking `batch_rows` occurrences per statement at
/// first), coverage is marked (`reproject`: every entry must be projected again), the
/// collection's jobs under way and its entries too large to index are queued afresh, and the
/// collection's field epoch moves on. One atomic batch with the guard.
pub fn delete_statements(
    collection: &Collection,
    field: &Field,
    deleted_column: &Fragment,
    deleted_name: &str,
    batch_rows: u32,
    reproject: bool,
) -> Vec<Statement> {
    let table = Fragment::content_table(&collection.slug);
    let column = Fragment::ident(&field.slug);
    let id = collection.id.as_str();
    vec![
        Statement::new(DELETE_FIELD).bind(field.id.as_str()).bind(id),
        Statement::new(render(
            RENAME_COLUMN,
            &[("table", &table), ("field_column", &column), ("deleted", deleted_column)],
        )),
        Statement::new(INSERT_DELETION)
            .bind(field.id.as_str())
            .bind(id)
            .bind(collection.slug.as_str())
            .bind(field.slug.as_str())
            .bind(deleted_name)
            .bind(batch_rows),
        invalidate(collection, reproject),
        Statement::new(lease::render(REQUEUE_LEASED_WORK, &[])).bind(id),
        Statement::new(lease::render(REQUEUE_UNINDEXED_WORK, &[])).bind(id),
        Statement::new(BUMP_FIELD_EPOCH).bind(id),
    ]
}

/// The guard of a field's deletion: the field is still this field of the collection, and the
/// collection's capture is active under its slug.
pub fn delete_guard(collection: &Collection, field: &Field) -> Guard {
    Guard::new(GUARD_DELETE)
        .bind(field.id.as_str())
        .bind(collection.id.as_str())
        .bind(field.slug.as_str())
        .bind(collection.slug.as_str())
}

/// Marks a collection's coverage after a field was deleted or changed (`reproject`: what counts
/// as a use changed, so every entry is projected again by a repair run the repair lane starts).
pub fn invalidate(collection: &Collection, reproject: bool) -> Statement {
    Statement::new(INVALIDATE).bind(collection.id.as_str()).bind(collection.slug.as_str()).bind(reproject)
}

/// Whether the collection has an unfinished deletion of a field with this slug (one index read).
pub async fn deleting<E: Executor>(exec: &E, collection_id: &str, field_slug: &Ident) -> Result<bool, Error> {
    #[derive(Deserialize)]
    struct Row {
        #[allow(dead_code)] // Found is the answer.
        field_id: String,
    }
    let found: Option<Row> =
        exec.query_first(Statement::new(FIND).bind(collection_id).bind(field_slug.as_str())).await?;
    Ok(found.is_some())
}

/// The guard of a field's update: the field is exactly as `read` (any concurrent change is a
/// conflict), and the collection's capture is active under its slug.
pub fn update_guard(collection: &Collection, read: &Field) -> Guard {
    Guard::new(GUARD_UPDATE)
        .bind(read.id.as_str())
        .bind(collection.id.as_str())
        .bind(read.slug.as_str())
        .bind(read.label.as_str())
        .bind(read.field_type.as_str())
        .bind(i64::from(read.required))
        .bind(read.meta.validation.clone())
        .bind(read.meta.options.clone())
        .bind(read.sort_order)
        .bind(collection.slug.as_str())
}

/// The statement that stores `field` (its id's row) as it now is, its validation and options as
/// their JSON text in `field.meta`.
pub fn update_statement(field: &Field) -> Statement {
    Statement::new(UPDATE_FIELD)
        .bind(field.id.as_str())
        .bind(field.label.as_str())
        .bind(field.field_type.as_str())
        .bind(field.field_type.column_type())
        .bind(i64::from(field.required))
        .bind(field.meta.validation.clone())
        .bind(field.meta.options.clone())
        .bind(field.sort_order)
}

/// The touch of the collection a schema change makes.
pub fn touch(collection: &Collection) -> Statement {
    Statement::new(TOUCH_COLLECTION).bind(collection.id.as_str())
}

// ---------------------------------------------------------------------------------------------
// The lane.

/// A field deletion row.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct FieldDeletion {
    pub field_id: String,
    pub collection_id: String,
    pub collection_slug: String,
    pub field_slug: String,
    pub column_name: String,
    /// Its lease and attempt columns.
    #[serde(flatten)]
    pub lease: LeaseState,
    pub phase: FieldDeletionPhase,
    pub cursor_key: Option<String>,
    pub cursor_id: Option<String>,
    pub batch_rows: i64,
    pub created_at: String,
}

/// A position of the walk: an occurrence's source key and id (the occurrences' key order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct Cursor {
    pub source_key: String,
    pub id: String,
}

/// A field deletion held by its lease: everything its guarded statements need.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub field_id: String,
    pub collection_id: String,
    pub slug: Ident,
    pub field_slug: String,
    /// The deleted column's name, and the fragment naming it.
    pub column_name: String,
    column: Fragment,
    pub token: String,
    /// The phase the row is at (the lease guard matches it).
    pub phase: FieldDeletionPhase,
    /// When the field was deleted: occurrences written later are not the field's.
    pub deleted_at: String,
}

impl Lease {
    /// The lease a claimed row carries; `None` when the row holds no lease, or its stored slug
    /// or column name is not what this code writes (then nothing may be built from it).
    pub fn of(row: &FieldDeletion) -> Option<Lease> {
        Some(Lease {
            field_id: row.field_id.clone(),
            collection_id: row.collection_id.clone(),
            slug: Ident::parse(&row.collection_slug).ok()?,
            field_slug: row.field_slug.clone(),
            column: Fragment::deleted_column(&row.column_name)?,
            column_name: row.column_name.clone(),
            token: row.lease.lease_token.clone()?,
            phase: row.phase,
            deleted_at: row.created_at.clone(),
        })
    }

    fn table(&self) -> Fragment {
        Fragment::content_table(&self.slug)
    }

    fn table_name(&self) -> String {
        format!("{}{}", crate::sql::CONTENT_TABLE_PREFIX, self.slug.as_str())
    }

    /// A statement whose `{lease}` placeholder is filled, bound with the lease guard's
    /// parameters `?1` (field id), `?2` (token) and `?3` (phase).
    fn guarded(&self, template: &'static str) -> Statement {
        let sql = render(template, &[("lease", &Fragment::static_sql(LEASE_GUARD))]);
        Statement::new(sql).bind(self.field_id.as_str()).bind(self.token.as_str()).bind(self.phase)
    }

    /// The checkpoint to `to` with `cursor` and `batch_rows`, releasing the lease when `release`.
    fn checkpoint(&self, to: FieldDeletionPhase, cursor: Option<&Cursor>, batch_rows: u32, release: bool) -> Statement {
        Statement::new(lease::render_releasing_on(CHECKPOINT, 8))
            .bind(self.field_id.as_str())
            .bind(self.token.as_str())
            .bind(self.phase)
            .bind(to)
            .bind(cursor.map(|c| c.source_key.as_str()))
            .bind(cursor.map(|c| c.id.as_str()))
            .bind(batch_rows)
            .bind(release)
    }
}

/// Claims the next due field deletion (pending or retry and due, or leased with an expired
/// lease) for [`FIELD_DELETION`]'s lease length, its attempt counted.
pub async fn claim_next<E: Executor>(exec: &E, token: &str) -> Result<Option<FieldDeletion>, Error> {
    exec.query_first(FIELD_DELETION.claim(CLAIM_NEXT, token)).await
}

/// Where the walk's window of `n` occurrences after `after` ends; `None` when fewer than `n`
/// of the collection's occurrences are left after it (one index read of the window).
pub async fn window_end<E: Executor>(exec: &E, lease: &Lease, after: &Cursor, n: u32) -> Result<Option<Cursor>, Error> {
    let (_, hi) = source_key_range(&lease.collection_id);
    let stmt =
        Statement::new(WINDOW_END).bind(after.source_key.as_str()).bind(after.id.as_str()).bind(hi).bind(n.max(1));
    exec.query_first(stmt).await
}

/// Where the walk starts: before the collection's first occurrence.
pub fn walk_start(collection_id: &str) -> Cursor {
    Cursor { source_key: source_key_range(collection_id).0, id: String::new() }
}

/// Where the walk ends: past the collection's last occurrence (no occurrence has this key).
pub fn walk_end(collection_id: &str) -> Cursor {
    Cursor { source_key: source_key_range(collection_id).1, id: String::new() }
}

/// What one window of the walk did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walked {
    /// The field's occurrences it deleted.
    pub deleted: u64,
    /// The lease still held (the checkpoint was made).
    pub held: bool,
}

/// Deletes the field's occurrences in the window (`from`, `to`] and moves the cursor to `to`, in
/// one atomic batch under the live lease. With `last` (the window reaches the end of the
/// collection's range) the deletion moves on to `column` instead, and the collection's coverage
/// is completed if nothing else keeps it from being so.
pub async fn walk<E: Executor>(
    exec: &E,
    lease: &Lease,
    (from, to): (&Cursor, &Cursor),
    last: bool,
    batch_rows: u32,
) -> Result<Walked, Error> {
    let delete = lease
        .guarded(DELETE_OCCURRENCES)
        .bind(from.source_key.as_str())
        .bind(from.id.as_str())
        .bind(to.source_key.as_str())
        .bind(to.id.as_str())
        .bind(lease.field_slug.as_str())
        .bind(lease.deleted_at.as_str());
    let mut stmts = vec![delete];
    if last {
        stmts.push(lease.checkpoint(FieldDeletionPhase::Column, None, batch_rows, false));
        stmts.push(Statement::new(COMPLETE_COVERAGE).bind(lease.collection_id.as_str()));
    } else {
        stmts.push(lease.checkpoint(lease.phase, Some(to), batch_rows, false));
    }
    let outcomes = exec.batch(stmts).await?;
    Ok(Walked {
        deleted: outcomes.first().map_or(0, |o| o.changes),
        held: outcomes.get(1).is_some_and(|o| o.changes == 1),
    })
}

/// Where a deleted column stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnState {
    /// The content table is gone, or no longer has the column.
    Gone,
    /// The table still has it; `indexes` name it (each must go first), and the table holds at
    /// most `rows_bound` rows.
    Present { indexes: Vec<String>, rows_bound: u64 },
}

/// Reads where the held deletion's column stands (one statement, reading the schema and one row).
pub async fn column_state<E: Executor>(exec: &E, lease: &Lease) -> Result<ColumnState, Error> {
    #[derive(Deserialize)]
    struct Row {
        present: Option<i64>,
        indexes: Option<String>,
        rows_bound: Option<u64>,
    }
    let stmt = Statement::new(render(COLUMN_STATE, &[("table", &lease.table())]))
        .bind(lease.column_name.as_str())
        .bind(lease.table_name());
    let row: Option<Row> = match exec.query_first(stmt).await {
        Ok(row) => row,
        Err(e) if e.is_missing_content_table() => return Ok(ColumnState::Gone),
        Err(e) => return Err(e),
    };
    let Some(row) = row.filter(|r| r.present == Some(1)) else { return Ok(ColumnState::Gone) };
    let indexes: Vec<String> = match row.indexes.as_deref() {
        Some(list) => serde_json::from_str(list).map_err(|e| Error::Decode(format!("indexes: {e}")))?,
        None => Vec::new(),
    };
    Ok(ColumnState::Present { indexes, rows_bound: row.rows_bound.unwrap_or(0) })
}

/// Drops the held deletion's column and ends the deletion, in one guarded batch (the lease live
/// at `column`), after dropping `index` first when one still names the column. `Ok(true)` when
/// the column was dropped and the row deleted, `Ok(false)` when only the index went;
/// `Err(Stale)` when the lease was lost. An index whose name is not an identifier cannot be
/// named here: the drop then fails, and the failure is recorded.
pub async fn drop_column<E: Executor>(
    exec: &E,
    lease: &Lease,
    index: Option<&str>,
    column_too: bool,
) -> Result<bool, Error> {
    let guard = Guard::new(GUARD_COLUMN).bind(lease.field_id.as_str()).bind(lease.token.as_str());
    let mut stmts = Vec::new();
    if let Some(name) = index {
        let ident = Ident::parse_max(name, 128)
            .map_err(|e| Error::Backend(format!("index {name:?} on a deleted column cannot be dropped: {e}")))?;
        stmts.push(Statement::new(render(DROP_INDEX, &[("index", &Fragment::ident(&ident))])));
    }
    if column_too {
        stmts.push(Statement::new(render(DROP_COLUMN, &[("table", &lease.table()), ("deleted", &lease.column)])));
        stmts.push(finalize_statement(lease));
    }
    let outcomes = guarded_batch(exec, guard, stmts).await?;
    if !column_too {
        return Ok(false);
    }
    if outcomes.last().is_some_and(|o| o.changes == 1) {
        Ok(true)
    } else {
        Err(Error::Stale)
    }
}

fn finalize_statement(lease: &Lease) -> Statement {
    Statement::new(FINALIZE).bind(lease.field_id.as_str()).bind(lease.token.as_str()).bind(lease.table_name())
}

/// Ends the held deletion whose column is already gone (its table dropped, or the column no
/// longer in it). False when the lease was lost or the column is still there.
pub async fn finalize<E: Executor>(exec: &E, lease: &Lease) -> Result<bool, Error> {
    Ok(exec.execute(finalize_statement(lease)).await? == 1)
}

/// Releases the held deletion at its phase with its cursor and batch (pending, due now). False
/// when the lease was lost meanwhile.
pub async fn release<E: Executor>(
    exec: &E,
    lease: &Lease,
    cursor: Option<&Cursor>,
    batch_rows: u32,
) -> Result<bool, Error> {
    Ok(exec.execute(lease.checkpoint(lease.phase, cursor, batch_rows, true)).await? == 1)
}

/// Records a failed attempt under the lease: `failure`, the attempts counted (`attempts`), and
/// the batch the next holder starts from. False when the lease was lost (nothing recorded).
pub async fn record_failure<E: Executor>(
    exec: &E,
    (field_id, token, phase): (&str, &str, FieldDeletionPhase),
    (failure, attempts): (Failure, i64),
    batch_rows: u32,
    code: &str,
) -> Result<bool, Error> {
    let stmt =
        failure.statement(RECORD_FAILURE, code).bind(field_id).bind(token).bind(attempts).bind(batch_rows).bind(phase);
    Ok(exec.execute(stmt).await? == 1)
}

/// Reopens the failed field deletions of `collection_ids` (an operator's repair), their batch
/// back at `batch_rows`; returns how many.
pub fn reopen_statement(collection_ids: &[&str], batch_rows: u32) -> Statement {
    Statement::new(lease::render(REOPEN, &[])).bind(serde_json::json!(collection_ids).to_string()).bind(batch_rows)
}

/// Field deletions that have not finished, oldest first (at most `limit`).
pub async fn in_progress<E: Executor>(exec: &E, limit: u32) -> Result<Vec<FieldDeletion>, Error> {
    exec.query(Statement::new(LIST_IN_PROGRESS).bind(i64::from(limit))).await
}
