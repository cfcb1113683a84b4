//! The cleanup lane of the cron tick, one step at a time: front phases, work rows, revisions,
//! occurrences by key range, retries and finalize.

use super::*;

#[test]
fn the_lane_runs_a_fresh_tombstone_through_one_front_phase_per_step() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!("INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug) VALUES ('{id}', 'posts')"),
    );
    let mut held = None;
    let batch = CleanupBatch::Fixed(50);
    assert_eq!(step(&api.db, batch, &mut held), Some(StepOutcome::Advanced { to: DeletionPhase::Registry }));
    assert_eq!(phase(&api.db, "posts"), "registry");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 1, "still registered");
    assert_eq!(step(&api.db, batch, &mut held), Some(StepOutcome::Advanced { to: DeletionPhase::Table }));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 0, "gone from the registry");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1, "table kept");
    assert_eq!(step(&api.db, batch, &mut held), Some(StepOutcome::Advanced { to: DeletionPhase::Work }));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    assert_eq!(phase(&api.db, "posts"), "work");
    // The lane held it throughout; releasing it makes it pending and due again.
    assert!(block_on(deletion::release(&api.db, held.as_ref().unwrap())).unwrap());
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    let _ = id;
}

#[test]
fn work_rows_go_in_batches_then_revisions_then_the_phase_moves_on() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 55);
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    assert_eq!(step(&api.db, b, &mut held), Some(deleted(&[(Rows::Work, 50)], None)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 5);
    assert_eq!(phase(&api.db, "posts"), "work");
    // The last 5, then the (absent) revisions, and the phase moves on in the same step.
    assert_eq!(
        step(&api.db, b, &mut held),
        Some(deleted(&[(Rows::Work, 5), (Rows::Revisions, 0)], Some(DeletionPhase::Sources)))
    );
    assert_eq!(phase(&api.db, "posts"), "sources");

    // 51 rows: after the first step exactly the 51st (in id order) remains.
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 51);
    let mut held = None;
    step(&api.db, b, &mut held);
    assert_eq!(
        text_if_any(&api.db, "SELECT group_concat(content_id) FROM _emdash_media_usage_work").as_deref(),
        Some("entry-050")
    );
}

#[test]
fn occurrences_go_by_key_range_across_generations_then_sources_then_status_then_the_tombstone() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let key = format!("content:{id}:e:columns");
    source(&api.db, &key, Some(&id), "posts");
    occurrences(&api.db, &key, 55);
    // Never touched: a legacy source of the same slug and another collection's source.
    source(&api.db, "content:posts:e:columns", None, "posts");
    occurrences(&api.db, "content:posts:e:columns", 2);
    source(&api.db, "content:other:e:columns", Some("other"), "posts");
    // Not the deletion's business either: a source of another type and coverage rows of another
    // adapter or scope that name the same collection id.
    exec_sql(
        &api.db,
        &format!(
            "INSERT INTO _emdash_media_usage_sources (source_key, source_type, collection_id, collection_slug, content_id, source_variant)
               VALUES ('menu:{id}', 'menu', '{id}', 'posts', 'm', 'columns');
             INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id) VALUES ('other-adapter', 'collection', 'posts', '{id}');
             INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id) VALUES ('content-media', 'site', 'posts', '{id}');"
        ),
    );
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    let outcomes = steps_to_end(&api.db, b, &mut held);
    assert_eq!(
        outcomes,
        [
            deleted(&[(Rows::Work, 0), (Rows::Revisions, 0)], Some(DeletionPhase::Sources)),
            deleted(&[(Rows::Occurrences, 50)], None),
            deleted(&[(Rows::Occurrences, 5), (Rows::Sources, 1)], Some(DeletionPhase::Status)),
            StepOutcome::Advanced { to: DeletionPhase::Finalize },
            StepOutcome::Finalized,
        ]
    );
    assert_eq!(tombstone(&api.db, "posts"), None);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 3, "legacy, other and menu kept");
    assert_eq!(
        scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'")),
        2
    );
    exec_sql(&api.db, &format!("DELETE FROM _emdash_media_usage_sources WHERE source_type = 'menu'; DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'"));
    assert_gone(&api.db, &id, "posts");
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE source_key = 'content:posts:e:columns'"),
        2
    );
}

#[test]
fn occurrences_whose_source_row_vanished_are_still_cleaned() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let key = format!("content:{id}:e:columns");
    source(&api.db, &key, Some(&id), "posts");
    occurrences(&api.db, &key, 55);
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step(&api.db, b, &mut held); // work and revisions → sources
    step(&api.db, b, &mut held); // 50 occurrences
                                 // Someone deletes the source row mid-drain, with its trigger disabled (as an old writer might).
    exec_sql(&api.db, "DROP TRIGGER _emdash_media_usage_sources_deleted; DELETE FROM _emdash_media_usage_sources;");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 5, "orphaned occurrences");
    steps_to_end(&api.db, b, &mut held);
    assert_gone(&api.db, &id, "posts");
}

#[test]
fn leftovers_at_status_are_retried_with_backoff_and_fail_after_five_attempts() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step_until(&api.db, b, &mut held, "status");
    // A leftover work row at `status` (none can appear through the API once fenced).
    work_rows(&api.db, &id, 1);
    let mut delays = Vec::new();
    for attempt in 1..=5 {
        let outcome = step(&api.db, b, &mut held).expect("due");
        let terminal = attempt == 5;
        assert!(
            matches!(&outcome, StepOutcome::Failed { terminal: t, .. } if *t == terminal),
            "{attempt}: {outcome:?}"
        );
        assert!(held.is_none(), "a failure releases the deletion");
        let (state, ph, attempts, token) = tombstone(&api.db, "posts").unwrap();
        assert_eq!((ph.as_str(), attempts, token), ("status", attempt, None));
        assert_eq!(state, if terminal { "failed" } else { "retry" });
        assert_eq!(
            text_if_any(&api.db, "SELECT last_error_code FROM _emdash_media_usage_collection_deletions").as_deref(),
            Some("MEDIA_USAGE_COLLECTION_DELETION_FAILED")
        );
        if !terminal {
            delays.push(seconds_until_due(&api.db));
            // Not due yet: the lane finds nothing to claim.
            assert_eq!(step(&api.db, b, &mut held), None, "claimed before its backoff is due");
            time_passes(&api.db);
        }
    }
    assert_eq!(delays, [30, 60, 120, 240]);
    // Failed is never claimed, whatever the time.
    time_passes(&api.db);
    assert_eq!(step(&api.db, b, &mut held), None);
    // The operator retry reopens it at the same phase; with the leftover gone it finishes.
    exec_sql(&api.db, "DELETE FROM _emdash_media_usage_work");
    let r = api.post("/admin/media-usage/collection-deletions/retry", &json!({"collectionId": id}));
    let item = data(&r)["item"].clone();
    assert_eq!(
        (item["state"].as_str(), item["phase"].as_str(), item["attemptCount"].as_i64()),
        (Some("pending"), Some("status"), Some(0))
    );
    assert_eq!(seconds_until_due(&api.db), 0, "due now");
    steps_to_end(&api.db, b, &mut held);
    assert_gone(&api.db, &id, "posts");
}

#[test]
fn finalize_refuses_while_anything_of_the_collection_remains() {
    type Leave = fn(&SqliteExecutor, &str);
    let leftovers: [(&str, Leave); 6] = [
        ("table", |db, _| exec_sql(db, "CREATE TABLE ec_posts (id TEXT)")),
        ("registry", |db, id| {
            exec_sql(
                db,
                &format!("INSERT INTO _emdash_collections (id, slug, label) VALUES ('{id}', 'posts_again', 'X')"),
            )
        }),
        ("work", |db, id| work_rows(db, id, 1)),
        ("source", |db, id| source(db, &format!("content:{id}:x:columns"), Some(id), "posts")),
        ("status", |db, id| {
            exec_sql(
                db,
                &format!(
                    "INSERT INTO _emdash_media_usage_index_status (scope_key, collection_id) VALUES ('zz', '{id}')"
                ),
            )
        }),
        ("revision", |db, _| {
            exec_sql(db, "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r', 'posts', 'e', '{}')")
        }),
    ];
    for (what, leave) in leftovers {
        let api = Api::new();
        let id = deleted_collection(&api, "posts");
        let mut held = None;
        let b = CleanupBatch::Fixed(50);
        step_until(&api.db, b, &mut held, "finalize");
        leave(&api.db, &id);
        let outcome = step(&api.db, b, &mut held).unwrap();
        assert!(matches!(outcome, StepOutcome::Failed { terminal: false, .. }), "{what}: {outcome:?}");
        assert_eq!(
            tombstone(&api.db, "posts").map(|t| (t.0, t.1)),
            Some(("retry".into(), "finalize".into())),
            "{what}"
        );
    }
}
