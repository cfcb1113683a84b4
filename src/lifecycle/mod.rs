//! The collection lifecycle: creating a collection together with its capture (coverage row and
//! capture triggers), adding a field together with the coverage invalidation it causes, deleting
//! and updating a field ([`fields`]: the DELETE request's guarded batch, and the walk and column
//! drop the tick's fields lane runs), deleting a collection through its tombstone ([`deletion`]:
//! the DELETE request's front phases, and the cleanup the tick's deletion lane runs); and an
//! entry's publication ([`publish`]: what the publish request and a scheduled publish write) with
//! the tick's lane that fires schedules ([`schedule`]).
//!
//! These compose the registry statements of [`crate::repo::schema`] with the capture statements
//! of [`crate::repo::capture`] into single atomic batches, one layer above both, so neither
//! repository module needs the other.

use crate::exec::guard::guarded_batch;
use crate::exec::{Error, Executor};
use crate::ids;
use crate::model::collection::Collection;
use crate::model::field::Field;
use crate::repo::{capture, schema};
use crate::usage::extract::is_extraction_field;

pub mod deletion;
pub mod fields;
pub mod media;
pub mod publish;
pub mod schedule;
pub mod tables;

/// Why a collection could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The slug is taken: by a registered collection, an existing table, or a deletion of a
    /// collection with this slug that has not finished.
    #[error("a collection, table or unfinished deletion with this slug exists")]
    Exists,
    #[error(transparent)]
    Db(#[from] Error),
}

/// Creates a collection atomically: registry row, fields, table and index, plus its coverage
/// row (`complete`, capture `active`) and its three capture triggers; or nothing. The guard
/// inside the batch refuses a taken slug, including one reserved by a deletion in progress.
/// `rules_id` names the deployed reference rules its (empty) coverage is proven under.
pub async fn create<E: Executor>(
    exec: &E,
    new: &schema::NewCollection,
    rules_id: &str,
) -> Result<Collection, CreateError> {
    let id = ids::new_id();
    let mut stmts = schema::create_statements(&id, new);
    stmts.extend(capture::capture_statements(&id, &new.slug, rules_id)?);
    // The batch reads back what it created: a later read could find it deleted already by a
    // request racing this one, and a 500 would invite a retry of a create that happened.
    stmts.push(schema::select_statement(Some(&new.slug)));
    let outcomes = match guarded_batch(exec, schema::creation_guard(&new.slug), stmts).await {
        Ok(outcomes) => outcomes,
        Err(Error::Stale | Error::Unique(_)) => return Err(CreateError::Exists),
        Err(e) => return Err(e.into()),
    };
    let created = outcomes.last().map(schema::collections_of).transpose()?.and_then(|c| c.into_iter().next());
    created.ok_or_else(|| CreateError::Db(Error::Backend("the created collection was not read back".into())))
}

/// Why a field could not be added.
#[derive(Debug, thiserror::Error)]
pub enum AddFieldError {
    #[error("the collection changed or the field already exists")]
    Conflict,
    #[error(transparent)]
    Db(#[from] Error),
}

/// Adds a field: registry row and table column together, plus (for a field that can hold
/// media references) the coverage invalidation it causes; or nothing.
pub async fn add_field<E: Executor>(exec: &E, collection: &Collection, field: &Field) -> Result<(), AddFieldError> {
    let mut stmts = schema::add_field_statements(collection, field);
    if is_extraction_field(field) {
        stmts.push(capture::invalidate_for_schema_change(collection));
    }
    match guarded_batch(exec, schema::add_field_guard(collection, field), stmts).await {
        Ok(_) => Ok(()),
        Err(Error::Stale | Error::Unique(_)) => Err(AddFieldError::Conflict),
        Err(e) => Err(e.into()),
    }
}
