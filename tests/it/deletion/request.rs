//! The DELETE request: its front phases, takeovers of a held or expired deletion, a crash
//! between phases, and a repeated delete.

use super::*;
use crate::support::steal_leases;

#[test]
fn deleting_an_empty_collection_runs_the_front_phases_and_leaves_cleanup_to_ticks() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(data(&r), json!({"deleted": true, "slug": "posts", "collectionId": id}));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    assert_eq!(
        text_if_any(&api.db, "SELECT capture_state FROM _emdash_media_usage_index_status").as_deref(),
        Some("deleting")
    );
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    // The collection is gone from the API at once; the slug stays reserved until cleanup ends.
    assert_eq!(code(&api.get("/schema/collections/posts")), "COLLECTION_NOT_FOUND");
    let again = api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"}));
    assert_eq!((again.status, code(&again)), (409, "COLLECTION_EXISTS".into()));
    // A repeated DELETE past the front phases changes nothing.
    let before = dump(&api.db, &id, "posts");
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(dump(&api.db, &id, "posts"), before);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    // Cleanup by ticks; then the slug is free and a new collection gets a new id.
    tick_until_gone(&api.db, "posts", budget());
    assert_gone(&api.db, &id, "posts");
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"})));
    assert_ne!(collection_id(&api.db, "posts"), id);
}

#[test]
fn live_content_refuses_without_force_trashed_content_does_not_and_force_deletes() {
    let api = Api::new();
    site(&api, 2);
    let id = collection_id(&api.db, "posts");
    let before = dump(&api.db, &id, "posts");
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (400, "COLLECTION_HAS_CONTENT".into()), "{}", r.body);
    assert_eq!(dump(&api.db, &id, "posts"), before, "nothing changed");
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(
        text_if_any(&api.db, "SELECT capture_state FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'")
            .as_deref(),
        Some("active")
    );
    // Trash every entry: no force needed.
    let ids: Vec<String> = {
        let mut stmt = api.db.connection().prepare("SELECT id FROM ec_posts").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    for e in &ids {
        data(&api.delete(&format!("/content/posts/{e}")));
    }
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(scalar(&api.db, "SELECT force_delete FROM _emdash_media_usage_collection_deletions"), 0);

    // With force, live content goes too, and the tombstone says it was forced.
    let id = collection_id(&api.db, "pages");
    let r = api.call("DELETE", "/schema/collections/pages?force=true", Some(ADMIN), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        scalar(
            &api.db,
            &format!("SELECT force_delete FROM _emdash_media_usage_collection_deletions WHERE collection_id = '{id}'")
        ),
        1
    );
}

#[test]
fn unknown_and_invalid_slugs_are_refused_before_any_deletion_sql() {
    let api = Api::new();
    let r = delete(&api, "nope");
    assert_eq!((r.status, code(&r)), (404, "COLLECTION_NOT_FOUND".into()));
    for bad in ["Bad-Slug", "posts%22%3Bdrop_table", "_x", &"a".repeat(64)] {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let req = Request {
            method: "DELETE".into(),
            path: format!("{}/schema/collections/{bad}", api::BASE_PATH),
            authorization: Some(format!("Bearer {ADMIN}")),
            ..Request::default()
        };
        let r = block_on(api::handle(&metered, &config(), &req));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{bad}: {}", r.body);
        assert_eq!(metered.usage().statements, 0, "{bad}: no SQL for an invalid slug");
    }
}

#[test]
fn a_collection_whose_capture_is_not_active_or_lacks_a_trigger_is_not_deleted() {
    for sabotage in [
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'ready' WHERE scope_key = 'posts'",
        "DROP TRIGGER (SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_posts' LIMIT 1)",
    ] {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        if sabotage.starts_with("DROP TRIGGER") {
            let name = text_if_any(
                &api.db,
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_posts' LIMIT 1",
            )
            .unwrap();
            exec_sql(&api.db, &format!("DROP TRIGGER \"{name}\""));
        } else {
            exec_sql(&api.db, sabotage);
        }
        let id = collection_id(&api.db, "posts");
        let before = dump(&api.db, &id, "posts");
        let r = delete(&api, "posts");
        assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()), "{sabotage}: {}", r.body);
        assert!(tombstone(&api.db, "posts").is_none(), "{sabotage}: no tombstone");
        assert_eq!(dump(&api.db, &id, "posts"), before, "{sabotage}: collection intact");
    }
}

#[test]
fn an_entry_written_between_the_pre_check_and_the_fence_cancels_the_deletion() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    let hooked = Hooked::new(&api.db).before("SET capture_state = 'deleting'", |db| {
        exec_sql(db, "INSERT INTO ec_posts (id, slug) VALUES ('late', 'late')");
    });
    let r = call_on(&hooked, "DELETE", "/schema/collections/posts");
    hooked.done();
    assert_eq!((r.status, code(&r)), (400, "COLLECTION_HAS_CONTENT".into()), "{}", r.body);
    assert!(tombstone(&api.db, "posts").is_none(), "the tombstone was cancelled");
    assert_eq!(collection_id(&api.db, "posts"), id, "the collection is intact");
    assert_eq!(
        text_if_any(&api.db, "SELECT capture_state FROM _emdash_media_usage_index_status WHERE scope_key = 'posts'")
            .as_deref(),
        Some("active")
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM ec_posts"), 1);
}

#[test]
fn a_deletion_held_by_someone_else_is_a_conflict_and_an_expired_one_is_taken_over() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    // Someone holds the fence with a live lease.
    exec_sql(
        &api.db,
        &format!(
            "INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
             VALUES ('{id}', 'posts', 'leased', 'fence', 'other', '2999-01-01T00:00:00.000Z')"
        ),
    );
    let before = dump(&api.db, &id, "posts");
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["phase"], "fence");
    assert_eq!(dump(&api.db, &id, "posts"), before);
    assert_eq!(tombstone(&api.db, "posts").unwrap().3.as_deref(), Some("other"));
    // Its holder died: once the lease expires, the next DELETE takes over and finishes.
    time_passes(&api.db);
    let r = delete(&api, "posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
}

#[test]
fn a_request_that_loses_a_front_phase_leaves_it_leased_for_a_tick_to_resume() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    // The lease expires and is taken by someone else between the fence and the registry phase.
    let hooked = Hooked::new(&api.db).before("DELETE FROM _emdash_collections", |db| {
        steal_leases(db, "_emdash_media_usage_collection_deletions", "TRUE", "thief");
    });
    let r = call_on(&hooked, "DELETE", "/schema/collections/posts");
    hooked.done();
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["phase"], "registry");
    let (state, phase, _, token) = tombstone(&api.db, "posts").unwrap();
    assert_eq!((state.as_str(), phase.as_str(), token.as_deref()), ("leased", "registry", Some("thief")));
    assert_eq!(collection_id(&api.db, "posts"), id, "the registry row is still there");
    // A second DELETE while the lease is live: 409, nothing changes.
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()));
    // After the lease expires, a tick takes over at the same phase and finishes the deletion.
    time_passes(&api.db);
    tick_until_gone(&api.db, "posts", budget());
    assert_gone(&api.db, &id, "posts");
}

#[test]
fn a_crash_after_a_front_phase_is_resumed_by_the_next_delete() {
    // Fenced but not checkpointed (as a crash between the two would leave it).
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/content/posts", &json!({"slug": "a"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!(
            "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';
             INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, force_delete, state, phase, lease_token, lease_expires_at)
             VALUES ('{id}', 'posts', 1, 'leased', 'fence', 'dead', '2000-01-01T00:00:00.000Z')"
        ),
    );
    let r = api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);

    // Registry already gone (crash after the registry phase), lease expired: DELETE twice.
    for phase in ["registry", "table"] {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        let id = collection_id(&api.db, "posts");
        let drop_table = if phase == "table" { "DROP TABLE ec_posts;" } else { "" };
        exec_sql(
            &api.db,
            &format!(
                "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';
                 DELETE FROM _emdash_collections WHERE id = '{id}'; {drop_table}
                 INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
                 VALUES ('{id}', 'posts', 'leased', '{phase}', 'dead', '2000-01-01T00:00:00.000Z')"
            ),
        );
        for _ in 0..2 {
            let r = delete(&api, "posts");
            assert_eq!(r.status, 200, "{phase}: {}", r.body);
            assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)), "{phase}");
        }
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    }
}

#[test]
fn a_registry_row_that_is_not_the_one_being_deleted_is_left_alone() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    data(&delete(&api, "posts"));
    // A replacement that bypassed the slug reservation (not possible through the API).
    exec_sql(&api.db, "INSERT INTO _emdash_collections (id, slug, label) VALUES ('intruder', 'posts', 'X')");
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(
        text_if_any(&api.db, "SELECT collection_id FROM _emdash_media_usage_collection_deletions").as_deref(),
        Some(id.as_str())
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections WHERE id = 'intruder'"), 1);

    // The same at a due front phase: the intruder's slug match does not make the tombstone ours
    // to take over.
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!(
            "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';
             DELETE FROM _emdash_collections WHERE id = '{id}';
             INSERT INTO _emdash_collections (id, slug, label) VALUES ('intruder', 'posts', 'X');
             INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
             VALUES ('{id}', 'posts', 'leased', 'table', 'dead', '2000-01-01T00:00:00.000Z')"
        ),
    );
    let before = tombstone_row(&api.db);
    let r = delete(&api, "posts");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(tombstone_row(&api.db), before, "not taken over");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
}

#[test]
fn a_repeated_delete_past_the_front_phases_answers_from_one_read() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&delete(&api, "posts"));
    let before = tombstone_row(&api.db);
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let r = call_on(&metered, "DELETE", "/schema/collections/posts");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(metered.usage().statements, 1, "one read, no claim attempt");
    assert_eq!(tombstone_row(&api.db), before);
}
