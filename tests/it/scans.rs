//! No statement the product issues scans a table that grows with content: every `.sql` file's
//! query plan, on a database with a large second collection, searches by index (or scans only
//! what is bounded, each with its reason); and what the query plan does not show — the
//! foreign-key checks of a revision delete — is measured from SQLite's full-scan step count.

use futures::executor::block_on;
use media_usage_worker::clock::MonotonicClock;
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::{Metered, Usage};
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::repo::schema::TABLE_REVISION;
use media_usage_worker::tick::report::TickReport;
use serde_json::json;

use crate::sql_files::product_statements;
use crate::support::{budget, data, exec_sql, policy, query_plan, scalar, tick_once, Api, ADMIN};

/// Entries in the large second collection.
const BIG: u32 = 20_000;

/// `posts` (with the `title` column the SQL files' templates name) and `big`, holding [`BIG`]
/// entries, each with a live revision.
fn site() -> Api {
    let api = Api::new();
    for slug in ["posts", "big"] {
        data(&api.post(
            "/schema/collections",
            &json!({"slug": slug, "label": slug, "fields": [{"slug": "title", "type": "string"}]}),
        ));
    }
    api.db
        .connection()
        .execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {BIG})
             INSERT INTO revisions (id, collection, entry_id, data) SELECT 'r' || i, 'big', 'e' || i, '{{}}' FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {BIG})
             INSERT INTO ec_big (id, slug, status, live_revision_id, title)
             SELECT 'e' || i, 's' || i, 'published', 'r' || i, 't' FROM n;
             -- Their projection is not what these tests look at (and a tick that writes rows
             -- leaves a table too large for its rows budget for a quieter tick).
             DELETE FROM _emdash_media_usage_work;"
        ))
        .unwrap();
    api
}

/// What one API call cost.
fn metered_call(api: &Api, method: &str, path: &str, body: &serde_json::Value) -> (u16, Usage) {
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let req = crate::support::request(method, path, Some(ADMIN), Some(body.to_string().as_bytes()));
    (api.request_on(&metered, &req).status, metered.usage())
}

/// An entry of `posts` with `saves` draft saves behind it (pruning keeps 20 revisions).
fn entry_with_revisions(api: &Api, saves: u32) -> String {
    let id = data(&api.post("/content/posts", &json!({"slug": "a", "data": {"title": "A"}})))["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..saves {
        data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"title": format!("v{i}")}})));
    }
    id
}

#[test]
fn a_draft_save_that_prunes_revisions_reads_a_bounded_number_of_rows_beside_a_large_collection() {
    let api = site();
    let id = entry_with_revisions(&api, 25);
    let save = |api: &Api| {
        let (status, usage) =
            metered_call(api, "PUT", &format!("/content/posts/{id}"), &json!({"draft": true, "data": {"title": "x"}}));
        assert_eq!(status, 200);
        usage
    };
    let usage = save(&api);
    assert!(usage.rows_written > 0, "the save pruned a revision: {usage:?}");
    assert!(usage.rows_read < 500, "a draft save read {} rows beside {BIG} entries", usage.rows_read);
    // Without the revision indexes each pruned revision's foreign-key check scans `ec_big`.
    api.db
        .connection()
        .execute_batch("DROP INDEX idx_ec_big_live_revision; DROP INDEX idx_ec_big_draft_revision")
        .unwrap();
    let usage = save(&api);
    assert!(usage.rows_read > u64::from(BIG), "the scan shows: {} rows", usage.rows_read);
}

fn tick_on<E: media_usage_worker::exec::Executor>(exec: &E) -> TickReport {
    tick_once(exec, budget(), &policy())
}

/// Queues projection work for every entry of `posts`, as a write whose projection was deferred.
fn queue_posts(db: &SqliteExecutor) {
    exec_sql(
        db,
        "INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug)
         SELECT c.id, e.id, 'posts' FROM ec_posts AS e, _emdash_collections AS c WHERE c.slug = 'posts'",
    );
}

/// Makes `big`'s table look like one created before the revision and translations indexes.
fn outdate(db: &SqliteExecutor) {
    db.connection()
        .execute_batch(
            "DROP INDEX idx_ec_big_live_revision; DROP INDEX idx_ec_big_draft_revision;
             DROP INDEX idx_ec_big_translations;
             UPDATE _emdash_collections SET table_revision = 0 WHERE slug = 'big'",
        )
        .unwrap();
}

/// The indexes of `big` that [`outdate`] drops and the tables lane brings back.
fn revision_indexes(db: &SqliteExecutor) -> Vec<String> {
    let conn = db.connection();
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ec_big'
               AND (name LIKE '%revision' OR name LIKE '%translations') ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn the_tables_lane_brings_a_table_created_before_the_revision_indexes_up_to_date() {
    let api = site();
    let fresh = tick_on(&api.db);
    assert_eq!(fresh.count("tablesUpgraded"), 0, "tables created now are current");
    outdate(&api.db);
    let report = tick_on(&api.db);
    assert_eq!((report.count("tablesUpgraded"), report.error.as_deref()), (1, None));
    assert_eq!(
        revision_indexes(&api.db),
        ["idx_ec_big_draft_revision", "idx_ec_big_live_revision", "idx_ec_big_translations"]
    );
    assert_eq!(tick_on(&api.db).count("tablesUpgraded"), 0, "once");
    // And the draft save beside it no longer scans.
    let id = entry_with_revisions(&api, 21);
    let (_, usage) =
        metered_call(&api, "PUT", &format!("/content/posts/{id}"), &json!({"draft": true, "data": {"title": "x"}}));
    assert!(usage.rows_read < 500, "{usage:?}");
}

#[test]
fn a_table_too_large_for_the_rows_budget_is_upgraded_by_a_tick_that_writes_nothing_else() {
    let api = site();
    outdate(&api.db);
    // Its upgrade writes an index entry per row, three indexes: more than a tick's budget.
    let budget = budget();
    assert!(u64::from(BIG) * 3 > budget.max_rows.written);
    // A tick that projects a content write first leaves the upgrade for a quieter tick.
    data(&api.post("/content/posts", &json!({"slug": "a", "data": {"title": "A"}})));
    queue_posts(&api.db);
    let busy = tick_on(&api.db);
    assert!(busy.count("jobs") >= 1 && busy.rows.written > 0, "{busy:?}");
    assert_eq!(busy.count("tablesUpgraded"), 0, "{busy:?}");
    assert!(busy.rows.fits(budget.max_rows), "{busy:?}");
    assert!(revision_indexes(&api.db).is_empty());
    // The next tick has nothing else to write: the upgrade runs, the one step past the budget.
    let quiet = tick_on(&api.db);
    assert_eq!((quiet.count("jobs"), quiet.count("tablesUpgraded")), (0, 1), "{quiet:?}");
    assert_eq!(revision_indexes(&api.db).len(), 3);
}

#[test]
fn a_table_whose_upgrade_fits_the_rows_left_is_upgraded_in_a_busy_tick() {
    let api = site();
    // A small table: `posts`, with a few entries.
    for i in 0..3 {
        data(&api.post("/content/posts", &json!({"slug": format!("p{i}"), "data": {"title": "A"}})));
    }
    exec_sql(
        &api.db,
        "DROP INDEX idx_ec_posts_live_revision; DROP INDEX idx_ec_posts_draft_revision;
         DROP INDEX idx_ec_posts_translations;
         UPDATE _emdash_collections SET table_revision = 0 WHERE slug = 'posts';",
    );
    queue_posts(&api.db);
    let report = tick_on(&api.db);
    assert!(report.count("jobs") >= 1 && report.rows.written > 0, "{report:?}");
    assert_eq!(report.count("tablesUpgraded"), 1, "{report:?}");
}

#[test]
fn a_crash_or_a_commit_reported_as_failed_at_any_statement_of_a_table_upgrade_is_finished_by_the_next_tick() {
    let api = site();
    for kind in ["crash", "commit-unknown"] {
        let mut n = 1;
        loop {
            outdate(&api.db);
            let faulty = match kind {
                "crash" => Faulty::new(&api.db, Some(n)),
                _ => Faulty::commit_unknown(&api.db, n),
            };
            let faulted = tick_on(&faulty);
            let revision = || scalar(&api.db, "SELECT table_revision FROM _emdash_collections WHERE slug = 'big'");
            let upgraded = revision() == TABLE_REVISION;
            // The upgrade is one atomic batch: all of it or none of it.
            assert_eq!(revision_indexes(&api.db).len(), if upgraded { 3 } else { 0 }, "{kind} at {n}");
            let report = tick_on(&api.db);
            assert_eq!(report.error, None, "{kind} at {n}");
            assert_eq!(revision_indexes(&api.db).len(), 3, "{kind} at {n}");
            assert_eq!(revision(), TABLE_REVISION);
            if faulted.error.is_none() {
                break;
            }
            n += 1;
        }
        assert!(n > 2, "the {kind} reached the upgrade");
    }
}

/// The scans some statements do, each bounded by something other than content, with the reason.
/// A scan of a subquery's or a CTE's own rows (`CO-ROUTINE x` … `SCAN x`) is not listed: it is
/// bounded by what the subquery read.
const BOUNDED_SCANS: &[(&str, &str, &str)] = &[
    ("schema/guard_collection_absent.sql", "SCAN sqlite_master", "the schema: a few rows per collection"),
    ("deletion/insert_leased.sql", "SCAN sqlite_master", "the schema: a few rows per collection"),
    ("deletion/checkpoint.sql", "SCAN sqlite_master", "the schema: a few rows per collection"),
    ("deletion/finalize.sql", "SCAN sqlite_master", "the schema: a few rows per collection"),
    (
        "schema/outdated_table.sql",
        "SCAN _emdash_collections USING INDEX sqlite_autoindex__emdash_collections_1",
        "the registry: a row per collection",
    ),
    (
        "schema/select_collections.sql",
        "SCAN c USING INDEX sqlite_autoindex__emdash_collections_2",
        "the registry: a row per collection",
    ),
    (
        "usage/claim_group.sql",
        "SCAN _emdash_collections USING COVERING INDEX sqlite_autoindex__emdash_collections_1",
        "the registry: a row per collection (each collection's earliest due work is found by index)",
    ),
    ("usage/claim_group.sql", "SCAN l", "the registered collections (above)"),
    ("media/list.sql", "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed", "as the guard's (below)"),
    ("media/bulk_trash.sql", "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed", "as the guard's (below)"),
    ("media/bulk_status.sql", "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed", "as the guard's (below)"),
    ("media/purge.sql", "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed", "as the guard's (below)"),
    ("media/purge.sql", "SCAN c", "the registry: a row per collection (the guard's coverage check)"),
    ("media/purge_state.sql", "SCAN c", "the registry: a row per collection (the purge's look at coverage)"),
    ("media/delete_unused.sql", "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed", "as the guard's (below)"),
    ("media/delete_unused.sql", "SCAN c", "the registry: a row per collection (the guard's coverage check)"),
    ("media/bulk_trash.sql", "SCAN c", "the registry: a row per collection (the guard's coverage check)"),
    ("versions/purge.sql", "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed", "as the guard's (below)"),
    ("versions/purge.sql", "SCAN c", "the registry: a row per collection (the coverage check)"),
    ("usage/coverage_rows.sql", "SCAN c USING INDEX sqlite_autoindex__emdash_collections_2", "a row per collection"),
    ("usage/guard_media_unused.sql", "SCAN c", "the registry: a row per collection"),
    ("continuation/release.sql", "SCAN _emdash_media_usage_continuation", "one row at most"),
    ("selfcheck/count_guard_rows.sql", "SCAN _emdash_batch_guard", "a guard row lives only inside its batch"),
    (
        "repair/list_runs.sql",
        "SCAN _emdash_media_usage_reconciliations",
        "a row per collection with a repair run in progress (finishing deletes it)",
    ),
    (
        "deletion/list_in_progress.sql",
        "SCAN _emdash_media_usage_collection_deletions",
        "a row per collection deletion not yet finished (finalizing deletes it)",
    ),
    (
        "usage/media_usage_entries.sql",
        "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed",
        "the partial index holds only the entries too large to index",
    ),
    (
        "usage/guard_media_unused.sql",
        "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed",
        "the partial index holds only the entries too large to index",
    ),
    (
        "usage/count_entries.sql",
        "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed",
        "the partial index holds only the entries too large to index",
    ),
    (
        "usage/unindexed_users.sql",
        "SCAN uw USING INDEX idx__emdash_media_usage_work_unindexed",
        "the partial index holds only the entries too large to index",
    ),
    (
        "media/enqueue_linking.sql",
        "SCAN s USING INDEX idx__emdash_media_usage_sources_pending",
        "the partial index holds only the entries whose file URLs name no media item",
    ),
    (
        "usage/invalidate_for_schema_change.sql",
        "SCAN ec_posts USING COVERING INDEX sqlite_autoindex_ec_posts_1",
        "a schema change queues every entry of its own collection once, by design",
    ),
    ("repair/orphan_page.sql", "SCAN p", "the CTE `page`: one page of source rows"),
    ("fields/column_state.sql", "SCAN sqlite_master", "the schema: a few rows per collection"),
    ("fields/finalize.sql", "SCAN sqlite_master", "the schema: a few rows per collection"),
    (
        "fields/list_in_progress.sql",
        "SCAN _emdash_media_usage_field_deletions",
        "a row per field deletion not yet finished (finalizing deletes it)",
    ),
    (
        "relink/next_entries.sql",
        "SCAN w",
        "the recursive walk: at most twice the entries asked for a key, each step a seek by the linked-key index",
    ),
    (
        "relink/in_progress.sql",
        "SCAN _emdash_media_relinks USING INDEX idx__emdash_media_relinks_progress",
        "the partial index holds only the relinks in progress, at most one per media item (ended ones leave it)",
    ),
];

/// Files that are pieces of statements, not statements: their plans are those of the statements
/// that embed them.
fn fragment(label: &str) -> bool {
    label.starts_with("lease/")
        || [
            "usage/source_signature.sql",
            "usage/entry_source_keys.sql",
            "deletion/lease_guard.sql",
            "fields/lease_guard.sql",
            "media/unused_and_proven.sql",
            "media/coverage_proven.sql",
            "uses/blocks_delete.sql",
            "uses/counts_as_use.sql",
            "uses/unindexed.sql",
            "relink/entries_after.sql",
        ]
        .contains(&label)
}

#[test]
fn no_statement_scans_a_table_that_grows_with_content() {
    let api = site();
    let mut unbounded = Vec::new();
    let mut seen = Vec::new();
    for (label, sql) in product_statements() {
        let head = sql.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("--")).unwrap_or_default();
        if fragment(&label) || ["CREATE", "ALTER", "DROP"].iter().any(|ddl| head.to_ascii_uppercase().starts_with(ddl))
        {
            continue;
        }
        let plan = query_plan(&api.db, &sql);
        let subquery =
            |name: &str| plan.iter().any(|d| d == &format!("CO-ROUTINE {name}") || d == &format!("MATERIALIZE {name}"));
        for d in &plan {
            let Some(scanned) = d.strip_prefix("SCAN ") else { continue };
            let name = scanned.split(' ').next().unwrap_or_default();
            if scanned == "CONSTANT ROW"
                || name.starts_with("(subquery-")
                || scanned.contains("VIRTUAL TABLE")
                || subquery(name)
            {
                continue;
            }
            match BOUNDED_SCANS.iter().find(|(file, detail, _)| *file == label && detail == d) {
                Some(entry) => seen.push(entry.0.to_owned() + entry.1),
                None => unbounded.push(format!("{label}: {d}")),
            }
        }
    }
    assert!(unbounded.is_empty(), "scans of tables that grow with content:\n{}", unbounded.join("\n"));
    for (file, detail, _) in BOUNDED_SCANS {
        assert!(
            seen.contains(&(file.to_string() + detail)),
            "{file}: {detail} is no longer a scan; drop it from the list"
        );
    }
}

/// Queues `n` pending work rows of the collection `id` (`slug`), as writes whose projection was
/// deferred.
fn queue_rows(db: &SqliteExecutor, id: &str, slug: &str, n: u32) {
    exec_sql(
        db,
        &format!(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n})
             INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug)
             SELECT '{id}', printf('{slug}-%06d', i), '{slug}' FROM k"
        ),
    );
}

/// Which rows a claim takes beside a large queue of a collection being deleted. (What the claim
/// reads there is asserted on D1, `tests/workerd/scans.test.mjs`: SQLite's counters do not show
/// an index walk.)
#[test]
fn a_work_claim_takes_the_oldest_live_collections_rows_beside_a_collection_being_deleted() {
    let api = site();
    let id_of = |slug: &str| {
        api.db
            .connection()
            .query_row("SELECT id FROM _emdash_collections WHERE slug = ?1", [slug], |r| r.get::<_, String>(0))
            .unwrap()
    };
    let (big, posts) = (id_of("big"), id_of("posts"));
    // A collection being deleted with a large queue: its rows come first in due order.
    data(&api.post("/schema/collections", &json!({"slug": "gone", "label": "gone"})));
    let gone = id_of("gone");
    queue_rows(&api.db, &gone, "gone", BIG);
    assert_eq!(api.call("DELETE", "/schema/collections/gone?force=true", Some(ADMIN), None).status, 200);
    // Then a large backlog of `big`, then one row of `posts`.
    queue_rows(&api.db, &big, "big", BIG);
    queue_rows(&api.db, &posts, "posts", 1);
    exec_sql(&api.db, "UPDATE _emdash_media_usage_work SET next_attempt_at = '2000-01-01T00:00:00.000Z'");
    let claim = |limit: u32| {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let rows = block_on(media_usage_worker::repo::work::claim_group(&metered, "t", limit)).unwrap();
        (rows, metered.usage())
    };
    let (rows, usage) = claim(50);
    assert_eq!(rows.len(), 50);
    assert!(rows.iter().all(|r| r.collection_id == big), "the oldest live collection's rows");
    assert!(usage.rows_read < 1_000, "a claim of 50 read {} rows", usage.rows_read);
    // The rows of the collection being deleted are never claimed, nor walked.
    exec_sql(&api.db, &format!("DELETE FROM _emdash_media_usage_work WHERE collection_id = '{big}'"));
    let (rows, usage) = claim(50);
    assert_eq!(rows.iter().map(|r| r.collection_id.as_str()).collect::<Vec<_>>(), [posts.as_str()]);
    assert!(usage.rows_read < 1_000, "a claim of 1 read {} rows", usage.rows_read);
    let (rows, usage) = claim(50);
    assert!(rows.is_empty());
    assert!(usage.rows_read < 1_000, "a claim of nothing read {} rows", usage.rows_read);
}

/// The plan of the product statement in `file`, on [`site`].
fn plan_of(api: &Api, file: &str) -> Vec<String> {
    let (_, sql) = product_statements().into_iter().find(|(label, _)| label == file).unwrap();
    query_plan(&api.db, &sql)
}

/// A deletion's counting statements enter their index at the cursor (never at the start of the
/// collection's range, which would read every row counted so far again: quadratic in D1's rows
/// read).
#[test]
fn the_counting_statements_enter_their_index_at_their_cursor() {
    let api = site();
    for (file, seek) in [
        ("deletion/count_work.sql", "SEARCH _emdash_media_usage_work USING COVERING INDEX sqlite_autoindex__emdash_media_usage_work_1 (collection_id=? AND content_id>?)"),
        ("deletion/count_revisions.sql", "SEARCH revisions USING COVERING INDEX idx_revisions_entry (collection=? AND entry_id>?)"),
        ("deletion/count_occurrences.sql", "SEARCH _emdash_media_usage USING COVERING INDEX idx__emdash_media_usage_source_cursor ((source_key,id)>(?,?) AND source_key<?)"),
        ("deletion/count_sources.sql", "SEARCH _emdash_media_usage_sources USING COVERING INDEX idx__emdash_media_usage_sources_collection_cursor (source_type=? AND collection_id=? AND source_key>?)"),
    ] {
        let plan = plan_of(&api, file);
        assert!(plan.iter().any(|d| d == seek), "{file}: {plan:#?}");
    }
}

#[test]
fn the_content_operations_search_by_index() {
    let api = site();
    let insert = plan_of(&api, "content/insert.sql");
    // A made slug: the base by the slug index, its numbered siblings by a range of it.
    let unique = |search: &str| {
        insert.iter().any(|d| d.contains("USING COVERING INDEX sqlite_autoindex_ec_posts_") && d.ends_with(search))
    };
    assert!(unique("(slug=? AND locale=?)") && unique("(slug>? AND slug<?)"), "{insert:?}");
    let revisions = plan_of(&api, "content/list_revisions.sql");
    assert!(
        revisions
            .iter()
            .any(|d| d == "SEARCH r USING INDEX idx_revisions_entry (collection=? AND entry_id=? AND rowid<?)"),
        "{revisions:?}"
    );
    let translations = plan_of(&api, "content/list_translations.sql");
    assert!(
        translations.iter().any(|d| d.contains("USING INDEX idx_ec_posts_translations (translation_group=?")),
        "{translations:?}"
    );
    assert!(!translations.iter().any(|d| d.contains("TEMP B-TREE")), "{translations:?}");
}

/// A field's deletion: the request renames a column of a large table and reads and writes a few
/// rows, and the walk's statements read one window of the occurrences' `(source_key, id)` index
/// (from the cursor, within the collection's key range), whatever the table holds.
#[test]
fn a_field_deletion_reads_a_bounded_number_of_rows_and_its_walk_one_window_of_the_index() {
    let api = site();
    let (status, usage) = metered_call(&api, "DELETE", "/schema/collections/big/fields/title", &json!({}));
    assert_eq!(status, 200);
    assert!(usage.rows_read < 1_000 && usage.rows_written < 100, "beside {BIG} entries: {usage:?}");
    let range = "USING COVERING INDEX idx__emdash_media_usage_source_cursor ((source_key,id)>(?,?) AND source_key<?)";
    assert_eq!(
        query_plan(&api.db, &crate::sql_files::product_statement("fields/window_end.sql")),
        [format!("SEARCH _emdash_media_usage {range}")]
    );
    let plan = query_plan(&api.db, &crate::sql_files::product_statement("fields/delete_occurrences.sql"));
    assert_eq!(
        plan.first().map(String::as_str),
        Some("SEARCH _emdash_media_usage USING INDEX idx__emdash_media_usage_source_cursor ((source_key,id)>(?,?) AND (source_key,id)<(?,?))"),
        "{plan:#?}"
    );
}

#[test]
fn the_media_apis_statements_search_media_by_their_indexes() {
    let api = site();
    // EmDash's list: each shelf's window from its partial index, filters on the window's rows.
    let list = plan_of(&api, "media/list.sql");
    for index in ["idx_media_library", "idx_media_trash"] {
        assert!(list.iter().any(|d| d.starts_with("SEARCH media USING INDEX") && d.contains(index)), "{list:#?}");
    }
    assert!(!list.iter().any(|d| d.starts_with("SCAN media")), "{list:#?}");
    // The update and the move to the trash: one row by its key.
    for label in ["media/update_metadata.sql", "media/trash.sql"] {
        let plan = plan_of(&api, label);
        assert_eq!(plan, ["SEARCH media USING INDEX sqlite_autoindex_media_1 (id=?)"], "{label}");
    }
    // The page's usage counts: each id from the occurrences' media index.
    let counts = plan_of(&api, "usage/count_entries.sql");
    assert!(
        counts.iter().any(|d| d.contains("idx__emdash_media_usage_media_source_generation (media_id=?)")),
        "{counts:#?}"
    );
}

#[test]
fn the_statements_that_ask_who_uses_an_item_read_each_use_from_an_index_by_its_id() {
    // The two relations of `repo::uses`, wherever they are embedded: the occurrences by the media
    // index, the entries too large to index by their partial index (its rows hold a list).
    let api = site();
    let by_media = "idx__emdash_media_usage_media_source_generation (media_id=?)";
    for label in [
        "media/list.sql",
        "media/bulk_status.sql",
        "media/bulk_trash.sql",
        "media/delete_unused.sql",
        "media/purge.sql",
        "usage/guard_media_unused.sql",
        "usage/count_entries.sql",
        "usage/media_usage_entries.sql",
    ] {
        let plan = plan_of(&api, label);
        assert!(plan.iter().any(|d| d.contains(by_media)), "{label}: {plan:#?}");
        assert!(
            plan.iter().any(|d| d.contains("USING INDEX idx__emdash_media_usage_work_unindexed")),
            "{label}: {plan:#?}"
        );
    }
    let plan = plan_of(&api, "usage/unindexed_users.sql");
    assert!(plan.iter().any(|d| d.contains("USING INDEX idx__emdash_media_usage_work_unindexed")), "{plan:#?}");
}

/// An item's versions, what links to each, and the file route's and the sweep's look at a key:
/// each from its index, whatever the versions and occurrences hold.
#[test]
fn the_versions_statements_search_by_their_indexes() {
    let api = site();
    let list = plan_of(&api, "versions/list.sql");
    assert!(
        list.iter().any(|d| d.starts_with("SEARCH v USING INDEX idx_media_versions_item (media_id=?)")),
        "{list:#?}"
    );
    assert!(
        list.iter().any(|d| d.starts_with("SEARCH u USING INDEX idx__emdash_media_usage_linked_source (linked_key=?)")),
        "{list:#?}"
    );
    for label in
        ["media/key_served.sql", "media/referenced_keys.sql", "media/id_by_storage_key.sql", "versions/select_one.sql"]
    {
        let plan = plan_of(&api, label);
        assert!(
            plan.iter()
                .any(|d| d.starts_with("SEARCH") && d.contains("sqlite_autoindex_media_versions_1 (storage_key=?)")),
            "{label}: {plan:#?}"
        );
    }
    let forget = plan_of(&api, "media/forget_versions.sql");
    assert!(forget.iter().any(|d| d.contains("idx_media_versions_item (media_id=?)")), "{forget:#?}");
}

/// A relink walks and counts the entries linking an item's earlier keys by the linked-key index,
/// entering each key's range at its cursor: what it reads grows with the entries it walks to,
/// never with the item's other occurrences (its id references, the links to its current key).
#[test]
fn a_relink_walks_and_counts_by_the_linked_key_index_from_its_cursor() {
    let api = site();
    let seek = "USING COVERING INDEX idx__emdash_media_usage_linked_source (linked_key=? AND source_key>?)";
    for file in ["relink/next_entries.sql", "relink/start.sql", "relink/advance.sql"] {
        let plan = plan_of(&api, file);
        assert!(plan.iter().any(|d| d.starts_with("SEARCH u") && d.ends_with(seek)), "{file}: {plan:#?}");
        assert!(
            !plan.iter().any(|d| d.contains("idx__emdash_media_usage_media_source_generation")),
            "{file}: {plan:#?}"
        );
    }
}
