//! Group jobs: a backlog drains in default ticks, groups index like single jobs, lose races
//! cleanly, need every precondition, and resume after a crash at any statement.

use super::*;
use crate::support::{expire_leases, forge_lease, FAR_AHEAD, LONG_AGO};

fn default_ticks_until_drained(api: &Api) -> u32 {
    let budget = Budget::new(40, 600_000.0);
    let mut ticks = 0;
    while scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state <> 'failed'") > 0 {
        // A clock that stands still: the count depends on statements, not on how busy the
        // machine is (the group size also adapts to measured statement time; that rule has its
        // own tests).
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&api.db, &clock);
        // The CPU budget lifted too: this counts what the statement budget allows (the CPU
        // budget's own tests are in `usage::cpu`).
        let policy = crate::support::policy().with_cpu_ms(f64::INFINITY);
        let report = block_on(tick::run(&metered, &clock, budget, &policy, tick::Continuation::Off, None));
        assert!(report.statements <= 40, "{report:?}");
        assert!(metered.usage().max_binds <= 100 && metered.usage().max_sql_bytes < 100_000);
        ticks += 1;
        assert!(ticks < 1_000, "the backlog does not drain");
    }
    ticks
}

#[test]
fn a_backlog_of_10000_entries_drains_in_at_most_40_default_ticks() {
    let api = setup();
    queued(&api, 10_000, 2);
    let ticks = default_ticks_until_drained(&api);
    assert!(ticks <= 40, "{ticks} ticks");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 20_000);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 10_000);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn a_group_indexes_like_single_jobs_and_hands_failures_back_to_them() {
    // The same entries indexed by groups and by single jobs give the same index.
    let build = |grouped: bool| {
        let api = setup();
        queued(&api, 30, 3);
        // A draft, a trashed entry, an entry too large to admit, an entry that vanished.
        let draft_rev = "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r1', 'posts', 'q1', '{\"gallery\":[{\"image\":\"d1\"}]}');
             UPDATE ec_posts SET draft_revision_id = 'r1' WHERE id = 'q1';
             UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z' WHERE id = 'q2';
             DELETE FROM ec_posts WHERE id = 'q3';";
        api.db.connection().execute_batch(draft_rev).unwrap();
        let big: Vec<Json> = (0..1_001).map(|k| json!({"image": format!("big{k}")})).collect();
        api.db
            .connection()
            .execute("UPDATE ec_posts SET gallery = ?1 WHERE id = 'q4'", [Json::Array(big).to_string()])
            .unwrap();
        if !grouped {
            api.db.connection().execute_batch("UPDATE _emdash_media_usage_work SET attempt_count = 1").unwrap();
        }
        default_ticks_until_drained(&api);
        let dump = api
            .db
            .connection()
            .prepare(
                "SELECT s.content_id || ':' || s.source_variant || ':' || coalesce(s.source_completeness, '') || ':' || coalesce(group_concat(u.field_path || '=' || u.media_id, ','), '')
                 FROM _emdash_media_usage_sources s LEFT JOIN _emdash_media_usage u ON u.source_key = s.source_key AND u.generation = s.current_generation
                 GROUP BY s.source_key ORDER BY s.source_key",
            )
            .unwrap()
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let failed = text(&api.db, "SELECT group_concat(content_id || ':' || last_error_code) FROM _emdash_media_usage_work WHERE state = 'failed'");
        (dump, failed, coverage(&api))
    };
    let grouped = build(true);
    assert_eq!(grouped, build(false));
    assert_eq!(grouped.1.as_deref(), Some("q4:MEDIA_USAGE_RESOURCE_LIMIT"), "the failure is recorded by a single job");
    assert_eq!(grouped.2, "complete", "the entry too large to index names its media");
    assert_eq!(grouped.0.len(), 28 + 1, "28 indexed entries (one vanished, one too large) and one draft overlay");
}

#[test]
fn a_group_that_loses_a_race_on_one_entry_writes_nothing_and_hands_every_row_back() {
    use crate::deletion::Hooked;
    let api = setup();
    queued(&api, 5, 1);
    let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", |db| {
        db.connection()
            .execute_batch("UPDATE ec_posts SET gallery = '[{\"image\":\"late\"}]' WHERE id = 'q2'")
            .unwrap();
    });
    let outcome = block_on(project::process_group(&hooked, &project::Policy::default(), 50)).unwrap();
    hooked.done();
    assert_eq!(outcome, project::GroupOutcome::HandedBack { released: 5 });
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0, "nothing written");
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'pending' AND lease_token IS NULL AND attempt_count = 1"),
        4,
        "every other row back to single jobs, the attempt counted"
    );
    assert_eq!(
        text(&api.db, "SELECT state || ':' || attempt_count FROM _emdash_media_usage_work WHERE content_id = 'q2'")
            .as_deref(),
        Some("pending:0"),
        "the raced entry was queued again by its write"
    );
    default_ticks_until_drained(&api);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'late'"), 1);
    assert_eq!(coverage(&api), "complete");
}

/// Runs `sql` against entry `id` while keeping its claimed work row exactly as the group left it
/// (a content write would otherwise re-queue it through the capture trigger).
fn behind_the_lease(id: &str, sql: &str) -> String {
    format!(
        "DROP TABLE IF EXISTS temp.saved; CREATE TEMP TABLE saved AS SELECT * FROM _emdash_media_usage_work WHERE content_id = '{id}';
         {sql};
         DELETE FROM _emdash_media_usage_work WHERE content_id = '{id}';
         INSERT INTO _emdash_media_usage_work SELECT * FROM temp.saved;"
    )
}

#[test]
fn a_group_publish_needs_every_precondition_for_every_entry() {
    use crate::deletion::Hooked;
    let cases: Vec<(&str, String)> = vec![
        ("the collection identity", "UPDATE _emdash_collections SET slug = 'renamed' WHERE slug = 'posts'".into()),
        ("the lease token", "UPDATE _emdash_media_usage_work SET lease_token = 'thief' WHERE content_id = 'q2'".into()),
        ("the work version", "UPDATE _emdash_media_usage_work SET work_version = work_version + 1 WHERE content_id = 'q2'".into()),
        (
            "a live lease",
            "UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE content_id = 'q2'".into(),
        ),
        ("the entry version", behind_the_lease("q2", "UPDATE ec_posts SET version = version + 1 WHERE id = 'q2'")),
        (
            "the entry update time",
            behind_the_lease("q2", "UPDATE ec_posts SET updated_at = '2999-01-01T00:00:00.000Z' WHERE id = 'q2'"),
        ),
        (
            "the draft revision",
            behind_the_lease(
                "q2",
                "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r9', 'posts', 'q2', '{}');
                 UPDATE ec_posts SET draft_revision_id = 'r9' WHERE id = 'q2'",
            ),
        ),
        (
            "the live revision",
            behind_the_lease(
                "q2",
                "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r8', 'posts', 'q2', '{}');
                 UPDATE ec_posts SET live_revision_id = 'r8' WHERE id = 'q2'",
            ),
        ),
        ("an entry that was absent", behind_the_lease("q3", "INSERT INTO ec_posts (id, slug, status) VALUES ('q3', 'q3', 'draft')")),
        (
            "the stored sources",
            "INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant)
             SELECT 'content:' || id || ':q2:columns', id, 'posts', 'q2', 'columns' FROM _emdash_collections".into(),
        ),
    ];
    for (what, sabotage) in cases {
        let api = setup();
        queued(&api, 5, 1);
        // q3's entry is gone before the group reads it (its work row stays).
        api.db.connection().execute_batch(&behind_the_lease("q3", "DELETE FROM ec_posts WHERE id = 'q3'")).unwrap();
        let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", move |db| {
            db.connection().execute_batch(&sabotage).unwrap();
        });
        let outcome = block_on(project::process_group(&hooked, &project::Policy::default(), 50)).unwrap();
        hooked.done();
        assert!(matches!(outcome, project::GroupOutcome::HandedBack { .. }), "{what}: {outcome:?}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0, "{what}: nothing written");
        if what == "the lease token" {
            assert_eq!(
                text(&api.db, "SELECT lease_token FROM _emdash_media_usage_work WHERE content_id = 'q2'").as_deref(),
                Some("thief"),
                "the hand-back leaves another holder's row alone"
            );
        }
    }
}

#[test]
fn a_group_claims_only_fresh_rows_of_one_collection() {
    let api = setup();
    queued(&api, 3, 1);
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_work SET attempt_count = 1 WHERE content_id = 'q0'")
        .unwrap();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "pages", "label": "Pages", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    api.db
        .connection()
        .execute_batch("INSERT INTO ec_pages (id, slug, status, hero) VALUES ('p0', 'p0', 'published', 'x')")
        .unwrap();
    let rows = block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", 50)).unwrap();
    let mut ids: Vec<&str> = rows.iter().map(|r| r.content_id.as_str()).collect();
    ids.sort_unstable();
    assert!(ids == ["q1", "q2"] || ids == ["p0"], "{ids:?}");
    // Once no fresh row is due, the one due row a single job would take.
    let api = setup();
    queued(&api, 2, 1);
    api.db.connection().execute_batch("UPDATE _emdash_media_usage_work SET attempt_count = 1").unwrap();
    assert_eq!(block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", 50)).unwrap().len(), 1);
}

#[test]
fn a_group_takes_back_rows_whose_first_attempt_died_and_nothing_else_leased() {
    let api = setup();
    queued(&api, 6, 1);
    let set = |sql: &str| api.db.connection().execute_batch(sql).unwrap();
    // q0: its first attempt died (lease expired) — a group row. q1: a second attempt died — single
    // jobs only. q2: first attempt, lease live — nobody's. q3: fresh. q4: a retry — single jobs
    // only. q5: never attempted but leased and expired cannot exist; treat as a dead first attempt
    // only when attempt_count says so (0 here: not a group row, a single job's expired lease).
    for (entry, token, attempts, expires) in [
        ("q0", "dead", 1, LONG_AGO),
        ("q1", "dead", 2, LONG_AGO),
        ("q2", "live", 1, FAR_AHEAD),
        ("q5", "dead", 0, LONG_AGO),
    ] {
        let row = format!("content_id = '{entry}'");
        forge_lease(&api, "_emdash_media_usage_work", &row, token, expires);
        set(&format!("UPDATE _emdash_media_usage_work SET attempt_count = {attempts} WHERE {row}"));
    }
    set("UPDATE _emdash_media_usage_work SET state = 'retry', attempt_count = 1 WHERE content_id = 'q4'");
    let claim = || {
        let rows = block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", 50)).unwrap();
        let mut ids: Vec<String> = rows.iter().map(|r| r.content_id.clone()).collect();
        ids.sort_unstable();
        (ids, rows.iter().map(|r| r.lease.attempt_count).max())
    };
    assert_eq!(claim(), (vec!["q0".to_owned(), "q3".to_owned()], Some(2)));
    // Only dead first attempts left as group rows: they alone make the group (and its head).
    set("UPDATE _emdash_media_usage_work SET state = 'pending', attempt_count = 0, lease_token = NULL,
             lease_expires_at = NULL WHERE content_id = 'q0';
         DELETE FROM _emdash_media_usage_work WHERE content_id = 'q3';
         UPDATE _emdash_media_usage_work SET attempt_count = 1 WHERE content_id = 'q0';");
    forge_lease(&api, "_emdash_media_usage_work", "content_id = 'q0'", "dead", LONG_AGO);
    assert_eq!(claim().0, ["q0"]);
    // No group row left: the single job's claim takes one row that was attempted before.
    let (ids, _) = claim();
    assert_eq!(ids.len(), 1);
    assert!(["q1", "q4", "q5"].contains(&ids[0].as_str()), "{ids:?}");
}

#[test]
fn no_claim_takes_a_row_of_a_collection_being_deleted() {
    let api = setup();
    queued(&api, 4, 1);
    let set = |sql: &str| api.db.connection().execute_batch(sql).unwrap();
    // Every kind of claimable row: fresh (q0), a dead first attempt (q1), a dead later attempt
    // (q2), a due retry (q3).
    forge_lease(&api, "_emdash_media_usage_work", "content_id IN ('q1', 'q2')", "dead", LONG_AGO);
    set("UPDATE _emdash_media_usage_work SET attempt_count = 1 WHERE content_id = 'q1';
         UPDATE _emdash_media_usage_work SET attempt_count = 2 WHERE content_id = 'q2';
         UPDATE _emdash_media_usage_work SET state = 'retry', attempt_count = 1 WHERE content_id = 'q3';
         INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, phase)
             SELECT id, slug, 'work' FROM _emdash_collections WHERE slug = 'posts';");
    let claim = |limit| block_on(media_usage_worker::repo::work::claim_group(&api.db, "t", limit)).unwrap().len();
    assert_eq!(claim(50), 0, "the deletion deletes them");
    set("DELETE FROM _emdash_media_usage_work WHERE content_id IN ('q0', 'q1')");
    assert_eq!(claim(50), 0, "nor a single job");
    // Once the deletion is gone (cancelled), the rows are work again.
    set("DELETE FROM _emdash_media_usage_collection_deletions");
    assert_eq!(claim(50), 1);
}

/// The whole index as text, for comparing end states.
fn index_dump(api: &Api) -> String {
    api.db
        .connection()
        .prepare(
            "SELECT s.content_id || ':' || s.source_variant || ':' || s.source_completeness || ':' ||
                    coalesce((SELECT group_concat(u.field_path || '=' || u.media_id, ',') FROM
                              (SELECT * FROM _emdash_media_usage u WHERE u.source_key = s.source_key
                               AND u.generation = s.current_generation ORDER BY u.field_path) AS u), '')
             FROM _emdash_media_usage_sources s ORDER BY s.source_key",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
        .join("\n")
}

#[test]
fn a_crash_at_any_statement_of_a_group_tick_is_resumed_to_the_same_index() {
    let reference = {
        let api = setup();
        queued(&api, 120, 2);
        default_ticks_until_drained(&api);
        index_dump(&api)
    };
    let reference_ticks = {
        let api = setup();
        queued(&api, 120, 2);
        default_ticks_until_drained(&api)
    };
    let probe = setup();
    queued(&probe, 120, 2);
    let clock = MonotonicClock::default();
    let metered = Metered::new(&probe.db, &clock);
    block_on(tick::run(
        &metered,
        &clock,
        Budget::new(40, 600_000.0),
        &crate::support::policy(),
        tick::Continuation::Off,
        None,
    ));
    let n = metered.usage().statements;
    for k in 1..=n {
        let api = setup();
        queued(&api, 120, 2);
        let faulty = Faulty::new(&api.db, Some(k));
        let clock = MonotonicClock::default();
        block_on(tick::run(
            &Metered::new(&faulty, &clock),
            &clock,
            Budget::new(40, 600_000.0),
            &crate::support::policy(),
            tick::Continuation::Off,
            None,
        ));
        // Leases held by the dead tick expire; later ticks finish the work.
        expire_leases(&api, "_emdash_media_usage_work", "state = 'leased'");
        // The dead tick's groups are claimed again as groups, not row by row.
        let ticks = default_ticks_until_drained(&api);
        assert!(ticks <= reference_ticks + 1, "crash at statement {k}: {ticks} ticks after it");
        assert_eq!(index_dump(&api), reference, "crash at statement {k}");
        assert_eq!(coverage(&api), "complete", "crash at statement {k}");
    }
}
