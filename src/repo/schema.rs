//! Collections and fields: the content model registry and the `ec_<slug>` tables.

use serde::Deserialize;

use crate::exec::guard::Guard;
use crate::exec::{Error, Executor, Outcome, Statement};
use crate::model::collection::Collection;
use crate::model::field::{Field, FieldMeta, FieldType, MAX_FIELDS};
use crate::model::ident::Ident;
use crate::sql::{render, Fragment};

const SELECT_COLLECTIONS: &str = include_str!("../sql/schema/select_collections.sql");
const GUARD_COLLECTION_ABSENT: &str = include_str!("../sql/schema/guard_collection_absent.sql");
const INSERT_COLLECTION: &str = include_str!("../sql/schema/insert_collection.sql");
const INSERT_FIELD: &str = include_str!("../sql/schema/insert_field.sql");
const CREATE_CONTENT_TABLE: &str = include_str!("../sql/schema/create_content_table.sql");
const CREATE_CONTENT_LIST_INDEX: &str = include_str!("../sql/schema/create_content_list_index.sql");
const GUARD_FIELD_ADDABLE: &str = include_str!("../sql/schema/guard_field_addable.sql");
const ADD_CONTENT_COLUMN: &str = include_str!("../sql/schema/add_content_column.sql");
const TOUCH_COLLECTION: &str = include_str!("../sql/schema/touch_collection.sql");
const CONTENT_EXISTS: &str = include_str!("../sql/schema/content_exists.sql");
const CREATE_LIVE_REVISION_INDEX: &str = include_str!("../sql/schema/create_live_revision_index.sql");
const CREATE_DRAFT_REVISION_INDEX: &str = include_str!("../sql/schema/create_draft_revision_index.sql");
const CREATE_PUBLISHED_INDEX: &str = include_str!("../sql/schema/create_published_index.sql");
const CREATE_TRANSLATIONS_INDEX: &str = include_str!("../sql/schema/create_translations_index.sql");
const TABLE_ROWS_BOUND: &str = include_str!("../sql/schema/table_rows_bound.sql");
const OUTDATED_TABLE: &str = include_str!("../sql/schema/outdated_table.sql");
const SET_TABLE_REVISION: &str = include_str!("../sql/schema/set_table_revision.sql");

/// The revision of the content tables this code creates: 1 has the indexes on the revision
/// columns that a revision delete's foreign-key check searches and the index of published
/// entries the sitemaps page through (0: without them); 2 adds the index of translation groups
/// an entry's translations are read from.
pub const TABLE_REVISION: i64 = 2;

#[derive(Debug, Deserialize)]
struct CollectionFieldRow {
    collection_id: String,
    collection_slug: String,
    collection_label: String,
    collection_created_at: String,
    collection_updated_at: String,
    field_id: Option<String>,
    field_slug: Option<String>,
    field_label: Option<String>,
    field_type: Option<String>,
    field_required: Option<i64>,
    field_validation: Option<String>,
    field_sort_order: Option<i64>,
    field_options: Option<String>,
    field_created_at: Option<String>,
    field_updated_at: Option<String>,
}

/// Every collection (or only `slug`), with fields, in one statement.
pub async fn load<E: Executor>(exec: &E, slug: Option<&Ident>) -> Result<Vec<Collection>, Error> {
    collections(exec.query(select_statement(slug)).await?)
}

/// The statement [`load`] runs, for a batch that reads what it has just written
/// ([`collections_of`] decodes its outcome).
pub fn select_statement(slug: Option<&Ident>) -> Statement {
    Statement::new(SELECT_COLLECTIONS).bind(slug.map(|s| s.as_str()))
}

/// The collections the outcome of a [`select_statement`] holds.
pub fn collections_of(outcome: &Outcome) -> Result<Vec<Collection>, Error> {
    collections(outcome.decode()?)
}

fn collections(rows: Vec<CollectionFieldRow>) -> Result<Vec<Collection>, Error> {
    let mut out: Vec<Collection> = Vec::new();
    for row in rows {
        if out.last().is_none_or(|c| c.id != row.collection_id) {
            let slug = Ident::parse(&row.collection_slug)
                .map_err(|e| Error::Decode(format!("stored collection slug {:?}: {e}", row.collection_slug)))?;
            out.push(Collection {
                id: row.collection_id.clone(),
                slug,
                label: row.collection_label.clone(),
                created_at: row.collection_created_at.clone(),
                updated_at: row.collection_updated_at.clone(),
                fields: Vec::new(),
            });
        }
        let (Some(id), Some(slug), Some(ty)) = (row.field_id, row.field_slug, row.field_type) else {
            continue;
        };
        let slug = Ident::parse(&slug).map_err(|e| Error::Decode(format!("stored field slug {slug:?}: {e}")))?;
        let field_type = FieldType::parse(&ty).ok_or_else(|| Error::Decode(format!("stored field type {ty:?}")))?;
        let sub_fields = Field::parse_sub_fields(row.field_validation.as_deref());
        if let Some(c) = out.last_mut() {
            c.fields.push(Field {
                id,
                slug,
                label: row.field_label.unwrap_or_default(),
                field_type,
                required: row.field_required.unwrap_or(0) != 0,
                sub_fields,
                sort_order: row.field_sort_order.unwrap_or(0),
                meta: FieldMeta {
                    validation: row.field_validation,
                    options: row.field_options,
                    created_at: row.field_created_at,
                    updated_at: row.field_updated_at,
                },
            });
        }
    }
    Ok(out)
}

/// One collection by slug.
pub async fn find<E: Executor>(exec: &E, slug: &Ident) -> Result<Option<Collection>, Error> {
    Ok(load(exec, Some(slug)).await?.into_iter().next())
}

/// What a new collection is made of.
#[derive(Debug, Clone)]
pub struct NewCollection {
    pub slug: Ident,
    pub label: String,
    pub fields: Vec<Field>,
}

/// Inserts field rows from one JSON array, so any number of fields is one statement.
fn insert_fields<'a>(collection_id: &str, fields: impl IntoIterator<Item = &'a Field>) -> Statement {
    let rows: Vec<serde_json::Value> = fields
        .into_iter()
        .map(|f| {
            serde_json::json!({
                "id": f.id,
                "slug": f.slug.as_str(),
                "label": f.label,
                "type": f.field_type.as_str(),
                "columnType": f.field_type.column_type(),
                "required": i64::from(f.required),
                "validation": f.validation_json(),
                "sortOrder": f.sort_order,
            })
        })
        .collect();
    Statement::new(INSERT_FIELD).bind(collection_id).bind(serde_json::Value::Array(rows).to_string())
}

/// The statements that create a collection: registry row, fields, table and index. Exposed so
/// callers can add statements (e.g. coverage rows) to the same atomic batch.
pub fn create_statements(id: &str, new: &NewCollection) -> Vec<Statement> {
    let table = Fragment::content_table(&new.slug);
    let columns = Fragment::trailing_column_defs(new.fields.iter().map(|f| (&f.slug, f.field_type.column_type())));
    let index = Fragment::name("idx_ec_", &new.slug, "_list");
    let mut stmts = vec![Statement::new(INSERT_COLLECTION)
        .bind(id)
        .bind(new.slug.as_str())
        .bind(new.label.as_str())
        .bind(TABLE_REVISION)];
    if !new.fields.is_empty() {
        stmts.push(insert_fields(id, &new.fields));
    }
    stmts.push(Statement::new(render(CREATE_CONTENT_TABLE, &[("table", &table), ("columns", &columns)])));
    stmts.push(Statement::new(render(CREATE_CONTENT_LIST_INDEX, &[("table", &table), ("index", &index)])));
    stmts.extend(table_indexes(&new.slug));
    stmts
}

/// The indexes of [`TABLE_REVISION`] on a content table (idempotent): its revision columns, its
/// published entries, and its translation groups.
fn table_indexes(slug: &Ident) -> [Statement; 4] {
    let table = Fragment::content_table(slug);
    let live = Fragment::name("idx_ec_", slug, "_live_revision");
    let draft = Fragment::name("idx_ec_", slug, "_draft_revision");
    let published = Fragment::name("idx_ec_", slug, "_published");
    let translations = Fragment::name("idx_ec_", slug, "_translations");
    [
        Statement::new(render(CREATE_LIVE_REVISION_INDEX, &[("table", &table), ("index", &live)])),
        Statement::new(render(CREATE_DRAFT_REVISION_INDEX, &[("table", &table), ("index", &draft)])),
        Statement::new(render(CREATE_PUBLISHED_INDEX, &[("table", &table), ("index", &published)])),
        Statement::new(render(CREATE_TRANSLATIONS_INDEX, &[("table", &table), ("index", &translations)])),
    ]
}

/// A registered collection whose content table is older than [`TABLE_REVISION`].
#[derive(Debug, Clone, Deserialize)]
pub struct OutdatedTable {
    pub id: String,
    pub slug: String,
}

/// The next collection whose content table is older than [`TABLE_REVISION`] (one statement).
pub async fn outdated_table<E: Executor>(exec: &E) -> Result<Option<OutdatedTable>, Error> {
    exec.query_first(Statement::new(OUTDATED_TABLE).bind(TABLE_REVISION)).await
}

/// Brings a collection's content table to [`TABLE_REVISION`] in one atomic batch (creating a
/// missing index reads the table once). A collection deleted since it was read fails the batch
/// (its table is gone), changing nothing.
pub async fn upgrade_table<E: Executor>(exec: &E, id: &str, slug: &Ident) -> Result<(), Error> {
    let mut stmts = table_indexes(slug).to_vec();
    stmts.push(Statement::new(SET_TABLE_REVISION).bind(TABLE_REVISION).bind(id));
    exec.batch(stmts).await.map(|_| ())
}

/// An upper bound of the rows a content table holds (its largest rowid; one statement, reading
/// one row).
pub async fn table_rows_bound<E: Executor>(exec: &E, slug: &Ident) -> Result<u64, Error> {
    #[derive(Deserialize)]
    struct Bound {
        n: u64,
    }
    let table = Fragment::content_table(slug);
    let stmt = Statement::new(render(TABLE_ROWS_BOUND, &[("table", &table)]));
    Ok(exec.query_first::<Bound>(stmt).await?.map_or(0, |b| b.n))
}

/// How many indexes [`upgrade_table`] creates.
pub const UPGRADE_INDEXES: u64 = 4;

/// The most statements [`outdated_table`], [`table_rows_bound`] and [`upgrade_table`] issue
/// together.
pub const UPGRADE_STEP_STATEMENTS: u64 = 7;

/// The guard that makes collection creation fail cleanly when the slug or table is taken.
pub fn creation_guard(slug: &Ident) -> Guard {
    Guard::new(GUARD_COLLECTION_ABSENT).bind(slug.as_str()).bind(format!("ec_{}", slug.as_str()))
}

/// The statements that add a field (registry row, column, collection touch).
pub fn add_field_statements(collection: &Collection, field: &Field) -> Vec<Statement> {
    let table = Fragment::content_table(&collection.slug);
    let column = Fragment::column_def(&field.slug, field.field_type.column_type());
    vec![
        insert_fields(&collection.id, [field]),
        Statement::new(render(ADD_CONTENT_COLUMN, &[("table", &table), ("column", &column)])),
        Statement::new(TOUCH_COLLECTION).bind(collection.id.as_str()),
    ]
}

/// The guard for adding a field: the collection identity still exists, its capture is active
/// (so coverage can be invalidated; fail closed otherwise), the slug is free and the collection
/// has fewer than [`MAX_FIELDS`] fields at that instant.
pub fn add_field_guard(collection: &Collection, field: &Field) -> Guard {
    Guard::new(GUARD_FIELD_ADDABLE)
        .bind(collection.id.as_str())
        .bind(collection.slug.as_str())
        .bind(field.slug.as_str())
        .bind(MAX_FIELDS as i64)
}

/// Whether the collection has any entry that is not in the trash.
pub async fn has_live_content<E: Executor>(exec: &E, slug: &Ident) -> Result<bool, Error> {
    #[derive(Deserialize)]
    struct Row {
        has_content: i64,
    }
    let sql = render(CONTENT_EXISTS, &[("table", &Fragment::content_table(slug))]);
    let row: Option<Row> = exec.query_first(Statement::new(sql)).await?;
    Ok(row.is_some_and(|r| r.has_content != 0))
}
