//! The reference model, written apart from the product's SQL: which entries use which media
//! item, found by brute force in the stored content itself.
//!
//! An entry uses an item when its row (every column: live data) or its draft revision names the
//! item's id, its storage key or one of its earlier keys (its versions) anywhere. The simulator writes references only in spellings the
//! documented rules count (an image field's id, the item's public URL, its file-route URL), and
//! ids and keys are long random strings no other text contains, so "names" is a substring test.
//! Every entry of every registered collection counts, in the trash or not.

use std::collections::{BTreeMap, BTreeSet};

use media_usage_worker::exec::sqlite::SqliteExecutor;
use rusqlite::types::ValueRef;

/// Rows of `sql` as text (NULL as empty).
pub fn rows(db: &SqliteExecutor, sql: &str) -> Vec<Vec<String>> {
    let conn = db.connection();
    let mut stmt = conn.prepare(sql).expect("a model query");
    let columns = stmt.column_count();
    let mut out = Vec::new();
    let mut rows = stmt.query([]).expect("a model query");
    while let Some(row) = rows.next().expect("a model row") {
        out.push(
            (0..columns)
                .map(|i| match row.get_ref(i).expect("a column") {
                    ValueRef::Null => String::new(),
                    ValueRef::Integer(v) => v.to_string(),
                    ValueRef::Real(v) => v.to_string(),
                    ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
                })
                .collect(),
        );
    }
    out
}

/// An entry: its collection's slug and its id.
pub type Entry = (String, String);

/// What an entry holds: its row (every column: the live data) and its draft revision's data.
struct Stored {
    entry: Entry,
    columns: String,
    draft: Option<String>,
    published: bool,
}

impl Stored {
    /// Whether deleting the item would break this entry (the wide rule: live data or draft, in
    /// the trash or not).
    fn uses(&self, id: &str, keys: &[String]) -> bool {
        names(&self.columns, id, keys) || self.draft.as_deref().is_some_and(|d| names(d, id, keys))
    }

    /// Whether "Used in" lists this entry (EmDash's reader rule): its draft always, its live
    /// data when it is published or has no draft.
    fn shows(&self, id: &str, keys: &[String]) -> bool {
        let live = self.published || self.draft.is_none();
        (live && names(&self.columns, id, keys)) || self.draft.as_deref().is_some_and(|d| names(d, id, keys))
    }
}

fn names(text: &str, id: &str, keys: &[String]) -> bool {
    text.contains(id) || keys.iter().any(|k| text.contains(k.as_str()))
}

/// The item `id`'s keys: `key` (its current one) and its earlier ones.
fn keys_of(db: &SqliteExecutor, id: &str, key: &str) -> Vec<String> {
    let mut keys = vec![key.to_owned()];
    keys.extend(
        rows(db, &format!("SELECT storage_key FROM media_versions WHERE media_id = '{id}'"))
            .into_iter()
            .map(|r| r[0].clone()),
    );
    keys
}

/// Every entry of every registered collection.
fn entries(db: &SqliteExecutor) -> Vec<Stored> {
    let mut out = Vec::new();
    for slug in rows(db, "SELECT slug FROM _emdash_collections ORDER BY slug").into_iter().map(|r| r[0].clone()) {
        let table = format!("ec_{slug}");
        let exists =
            !rows(db, &format!("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{table}'")).is_empty();
        if !exists {
            continue;
        }
        let sql = format!(
            "SELECT e.id, e.status, e.draft_revision_id IS NOT NULL, coalesce(r.data, ''), e.* \
             FROM {table} AS e LEFT JOIN revisions AS r ON r.id = e.draft_revision_id"
        );
        for row in rows(db, &sql) {
            out.push(Stored {
                entry: (slug.clone(), row[0].clone()),
                published: row[1] == "published",
                draft: (row[2] == "1").then(|| row[3].clone()),
                columns: row[4..].join("\u{1}"),
            });
        }
    }
    out
}

/// The entries that use the item `id` (storage key `key`): deleting it would break them.
pub fn users_of(db: &SqliteExecutor, id: &str, key: &str) -> Vec<Entry> {
    let keys = keys_of(db, id, key);
    entries(db).into_iter().filter(|e| e.uses(id, &keys)).map(|e| e.entry).collect()
}

/// The entries whose text names the key `key` (of any item): a page that shows that file.
pub fn linking(db: &SqliteExecutor, key: &str) -> Vec<Entry> {
    let keys = [key.to_owned()];
    entries(db).into_iter().filter(|e| e.uses("\u{0}no id\u{0}", &keys)).map(|e| e.entry).collect()
}

/// The entries "Used in" lists for the item `id` (storage key `key`).
pub fn shown_in(db: &SqliteExecutor, id: &str, key: &str) -> Vec<Entry> {
    let keys = keys_of(db, id, key);
    entries(db).into_iter().filter(|e| e.shows(id, &keys)).map(|e| e.entry).collect()
}

/// For every media row, the entries "Used in" lists.
pub fn usage(db: &SqliteExecutor) -> BTreeMap<String, BTreeSet<Entry>> {
    let media = rows(db, "SELECT id, storage_key FROM media ORDER BY id");
    let entries = entries(db);
    media
        .into_iter()
        .map(|m| {
            let keys = keys_of(db, &m[0], &m[1]);
            let users = entries.iter().filter(|e| e.shows(&m[0], &keys)).map(|e| e.entry.clone());
            (m[0].clone(), users.collect())
        })
        .collect()
}
