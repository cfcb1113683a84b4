//! Every `.sql` file prepares against the migrated schema, and the embedded migration list
//! matches the `migrations/` directory.

use std::fs;
use std::path::Path;

use media_usage_worker::migrations;

use crate::support::{db, files_with_extension};

/// Fills template placeholders with a real collection's names so the statement can prepare.
fn instantiate(sql: &str) -> String {
    sql.replace("{table}", "\"ec_posts\"")
        .replace("{index}", "\"idx_ec_probe\"")
        .replace("{columns}", ", \"title\"")
        .replace("{placeholders}", ", ?6")
        .replace("{set}", ", \"title\" = ?9")
        .replace("{column}", "\"probe\" TEXT")
        .replace("{field_column}", "\"title\"")
        .replace("{deleted}", "\"_deleted_probe\"")
        .replace("{trigger}", "\"emdash_mu_probe_ai\"")
        .replace("{event}", "INSERT")
        .replace("{row}", "NEW")
        .replace("{slug}", "'posts'")
        .replace("{name}", "'posts'")
        .replace("{collection_id}", "'c1'")
        .replace("{lease}", LEASE_GUARD)
        .replace("{entries_after}", RELINK_ENTRIES_AFTER)
        // The lease fragments (`repo::lease`); `{requeue_work}` holds `{reset_pending}`.
        .replace("{requeue_work}", REQUEUE_WORK)
        .replace("{set_leased}", SET_LEASED)
        .replace("{fail}", FAIL)
        .replace("{reset_pending}", RESET_PENDING)
        // `{release}` holds `{released}`: a checkpoint's parameter, or 1.
        .replace("{release}", RELEASE)
        .replace("{released}", "1")
        .replace("{source_signature}", SOURCE_SIGNATURE)
        .replace("{entry_source_keys}", ENTRY_SOURCE_KEYS)
        .replace("{row_bytes}", "0 + coalesce(length(CAST(e.\"title\" AS BLOB)), 0)")
}

/// The shared live-lease predicate that deletion statements embed as `{lease}`.
const LEASE_GUARD: &str = include_str!("../../src/sql/deletion/lease_guard.sql");
/// The one field deletions' statements embed.
const FIELDS_LEASE_GUARD: &str = include_str!("../../src/sql/fields/lease_guard.sql");
const SET_LEASED: &str = include_str!("../../src/sql/lease/set_leased.sql");
const FAIL: &str = include_str!("../../src/sql/lease/fail.sql");
const RESET_PENDING: &str = include_str!("../../src/sql/lease/reset_pending.sql");
const RELEASE: &str = include_str!("../../src/sql/lease/release.sql");
/// A relink's count of the entries it has left, which its start and its advance embed.
const RELINK_ENTRIES_AFTER: &str = include_str!("../../src/sql/relink/entries_after.sql");
const REQUEUE_WORK: &str = include_str!("../../src/sql/usage/requeue_work.sql");
/// The projection's fragments: an entry's source signature (which embeds its source keys) and
/// its source keys, both over the enclosing statement's `entry` row.
const SOURCE_SIGNATURE: &str = include_str!("../../src/sql/usage/source_signature.sql");
const ENTRY_SOURCE_KEYS: &str = include_str!("../../src/sql/usage/entry_source_keys.sql");
/// The safe delete's rule, a predicate over a media item (`{media_id}`) under the rules bound at
/// `{rules}`, and the statements that embed it as `{unused_and_proven}` with what each fills in
/// (as their `repo` code renders them).
const UNUSED_AND_PROVEN: &str = include_str!("../../src/sql/media/unused_and_proven.sql");
const UNUSED_AND_PROVEN_IN: &[(&str, &str, &str)] = &[
    ("usage/guard_media_unused.sql", "?2", "?3"),
    ("media/bulk_trash.sql", "media.id", "?2"),
    ("media/delete_unused.sql", "?1", "?2"),
    ("media/purge.sql", "media.id", "?3"),
];

/// `sql` with the safe delete's rule filled in for the item `media_id` and the rules `rules`.
fn unused_and_proven(sql: &str, media_id: &str, rules: &str) -> String {
    uses(&sql.replace("{unused_and_proven}", UNUSED_AND_PROVEN).replace("{coverage_proven}", COVERAGE_PROVEN), media_id)
        .replace("{rules}", rules)
}

/// The coverage predicate both the safe delete's rule and the versions' purge embed.
const COVERAGE_PROVEN: &str = include_str!("../../src/sql/media/coverage_proven.sql");

/// The two relations of "who uses media M" (`repo::uses`), over the item `{media_id}`, and the
/// arm they share; and the statements that embed them, with the item each names (as their `repo`
/// code renders them).
const BLOCKS_DELETE: &str = include_str!("../../src/sql/uses/blocks_delete.sql");
const COUNTS_AS_USE: &str = include_str!("../../src/sql/uses/counts_as_use.sql");
const UNINDEXED_USES: &str = include_str!("../../src/sql/uses/unindexed.sql");
const USES_IN: &[(&str, &str)] = &[
    ("media/list.sql", "e.id"),
    ("media/bulk_status.sql", "j.value"),
    ("usage/count_entries.sql", "j.value"),
    ("usage/media_usage_entries.sql", "?1"),
    ("usage/unindexed_users.sql", "?1"),
];

/// `sql` with the relations filled in for the item `media_id`.
fn uses(sql: &str, media_id: &str) -> String {
    sql.replace("{blocks_delete}", BLOCKS_DELETE)
        .replace("{counts_as_use}", COUNTS_AS_USE)
        .replace("{unindexed_uses}", UNINDEXED_USES)
        .replace("{media_id}", media_id)
}

/// Every product `.sql` file as the statements it prepares as (templates filled with a real
/// collection's names; a fragment inside a statement that has what it needs), by file.
pub fn product_statements() -> Vec<(String, String)> {
    let files = files_with_extension(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/sql")), "sql");
    assert!(files.len() > 20, "found only {} SQL files", files.len());
    let mut out = Vec::new();
    for file in files {
        let raw = fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let label = file.strip_prefix(concat!(env!("CARGO_MANIFEST_DIR"), "/src/sql/")).unwrap().display().to_string();
        // DDL that creates what already exists cannot prepare; check it against a fresh name.
        let sql = if name == "create_content_table.sql" {
            instantiate(&raw).replace("\"ec_posts\"", "\"ec_fresh\"")
        } else if label == "fields/drop_column.sql" {
            // Only a column the table has can be dropped.
            instantiate(&raw).replace("\"_deleted_probe\"", "\"title\"")
        } else if label.starts_with("fields/") && raw.contains("{lease}") {
            instantiate(&raw.replace("{lease}", FIELDS_LEASE_GUARD))
        } else if name == "lease_guard.sql" {
            // A predicate, not a statement: it must prepare inside one.
            format!("SELECT 1 WHERE {raw}")
        } else if label == "media/coverage_proven.sql" {
            format!("SELECT 1 WHERE {}", raw.replace("{rules}", "?1"))
        } else if label == "versions/purge.sql" {
            instantiate(&unused_and_proven(&raw, "media_versions.media_id", "?3"))
        } else if label == "media/unused_and_proven.sql" {
            // Likewise, over a bound media id and rules.
            format!("SELECT 1 WHERE {}", unused_and_proven(&raw, "?1", "?2"))
        } else if label.starts_with("uses/") {
            // Relations: rows of entries, over a bound media id.
            format!("SELECT count(*) FROM ({})", uses(&raw, "?1"))
        } else if let Some((_, media_id)) = USES_IN.iter().find(|(l, _)| *l == label) {
            instantiate(&uses(&raw, media_id))
        } else if let Some((_, media_id, rules)) = UNUSED_AND_PROVEN_IN.iter().find(|(l, _, _)| *l == label) {
            instantiate(&unused_and_proven(&raw, media_id, rules))
        } else if file.parent().is_some_and(|d| d.ends_with("lease")) {
            // A SET list shared by the leased queues: it must prepare against each of them.
            for table in [
                "_emdash_media_usage_work",
                "_emdash_media_usage_reconciliations",
                "_emdash_media_usage_collection_deletions",
                "_emdash_media_usage_field_deletions",
            ] {
                if name == "fail.sql" && table == "_emdash_media_usage_reconciliations" {
                    continue; // repair runs record no failures of their own
                }
                out.push((format!("{label} on {table}"), format!("UPDATE {table} SET {}", instantiate(&raw))));
            }
            continue;
        } else if name == "requeue_work.sql" {
            // The work queue's upsert clause.
            let conflict = instantiate(&raw);
            format!("INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('c', 'e', 's') {conflict}")
        } else if name == "source_signature.sql" || name == "entry_source_keys.sql" {
            // Expressions over an `entry` row: they must prepare inside a statement that has one.
            format!(
                "SELECT json_array({}) FROM (SELECT 'c1' AS collection_id, 'e1' AS content_id) AS entry",
                instantiate(&raw)
            )
        } else {
            instantiate(&raw)
        };
        assert!(!sql.contains('{'), "{}: unfilled placeholder", file.display());
        out.push((label, sql));
    }
    out
}

/// The statement `label` (`usage/guard_media_unused.sql`) prepares as (see [`product_statements`]).
pub fn product_statement(label: &str) -> String {
    product_statements().into_iter().find(|(l, _)| l == label).unwrap_or_else(|| panic!("no SQL file {label}")).1
}

/// A content table like the ones `lifecycle` creates, with a `title` column.
const EC_POSTS: &str = "CREATE TABLE \"ec_posts\" (id TEXT PRIMARY KEY, slug TEXT, status TEXT, author_id TEXT, primary_byline_id TEXT, created_at TEXT, updated_at TEXT, published_at TEXT, scheduled_at TEXT, deleted_at TEXT, version INTEGER, live_revision_id TEXT, draft_revision_id TEXT, locale TEXT, translation_group TEXT, title TEXT)";

#[test]
fn every_sql_file_prepares_against_the_migrated_schema() {
    let exec = db();
    let conn = exec.connection();
    conn.execute_batch(&format!("CREATE TABLE revisions_probe (x); {EC_POSTS}")).unwrap();
    for (label, sql) in product_statements() {
        if let Err(e) = conn.prepare(&sql) {
            panic!("{label} does not prepare: {e}\n{sql}");
        }
    }
}

#[test]
fn the_embedded_migrations_are_the_migrations_directory() {
    let mut names: Vec<String> = fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sql"))
        .collect();
    names.sort();
    let embedded: Vec<&str> = migrations::ALL.iter().map(|m| m.name).collect();
    assert_eq!(names, embedded);
    // Numbered in increasing order from 0001 (a number may be skipped; none is reused).
    let number = |name: &str| name.get(..4).and_then(|n| n.parse::<u32>().ok()).filter(|_| name.as_bytes()[4] == b'_');
    assert_eq!(migrations::ALL.first().and_then(|m| number(m.name)), Some(1));
    for pair in migrations::ALL.windows(2) {
        let (a, b) = (number(pair[0].name), number(pair[1].name));
        assert!(a.is_some() && b.is_some() && a < b, "{} is out of sequence after {}", pair[1].name, pair[0].name);
    }
    for m in migrations::ALL {
        let on_disk = fs::read_to_string(format!("{}/migrations/{}", env!("CARGO_MANIFEST_DIR"), m.name)).unwrap();
        assert_eq!(on_disk, m.sql);
    }
}

#[test]
fn every_sql_file_is_used_by_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let code: String =
        files_with_extension(&root.join("src"), "rs").iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    for file in files_with_extension(&root.join("src/sql"), "sql") {
        let rel = file.strip_prefix(root.join("src")).unwrap().to_string_lossy().replace('\\', "/");
        assert!(code.contains(&format!("\"../{rel}\"")), "{rel} is not included by any source file");
    }
}
