//! The projection contract: the source keys SQL builds are the ones Rust builds, and a job's
//! publish compares exactly the source signature its load read.

use futures::executor::block_on;
use media_usage_worker::model::source::{source_key, Variant};
use media_usage_worker::usage::project::{self, JobOutcome};
use serde_json::json;

use crate::deletion::Hooked;
use crate::support::{data, db, scalar, Api};

/// An entry's source keys as the projection statements build them (`{entry_source_keys}`).
const ENTRY_SOURCE_KEYS: &str = include_str!("../../src/sql/usage/entry_source_keys.sql");

#[test]
fn the_source_keys_sql_builds_are_the_source_keys_rust_builds() {
    let exec = db();
    let sql =
        format!("SELECT json_array({ENTRY_SOURCE_KEYS}) FROM (SELECT ?1 AS collection_id, ?2 AS content_id) AS entry");
    let ids = [("c1", "e1"), ("0f3a9c", "5b7e"), ("c:1", "e:2"), ("o'brien", "ünï"), ("", "")];
    for (collection_id, content_id) in ids {
        let built: String = exec.connection().query_row(&sql, [collection_id, content_id], |r| r.get(0)).unwrap();
        let built: Vec<String> = serde_json::from_str(&built).unwrap();
        let rust: Vec<String> = [Variant::Columns, Variant::DraftOverlay]
            .into_iter()
            .map(|v| source_key(collection_id, content_id, v))
            .collect();
        assert_eq!(built, rust, "{collection_id:?} / {content_id:?}");
    }
}

/// An entry with both sources stored (live columns and a draft overlay), and a change to it
/// queued but not yet projected.
fn entry_with_a_queued_change() -> Api {
    let api = Api::new();
    let r = api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = api.post("/content/posts", &json!({"slug": "a", "status": "published", "data": {"hero": "m1"}}));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = data(&r)["item"]["id"].as_str().unwrap().to_owned();
    let r = api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": "d1"}}));
    assert_eq!(r.status, 200, "{}", r.body);
    // The after-write jobs published both sources (each against the signature it had loaded).
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 2, "both sources published");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "nothing queued yet");
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = 'm2' WHERE id = '{id}'")).unwrap();
    api
}

#[test]
fn a_job_publishes_against_the_signature_it_loaded_and_conflicts_when_any_signed_column_changes() {
    // Unchanged between the load and the publish: the guard finds the signature that was loaded.
    let api = entry_with_a_queued_change();
    let outcome = block_on(project::process_next(&api.db, None, &project::Policy::default())).unwrap();
    assert_eq!(outcome, Some(JobOutcome::Published));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'm2'"), 1);

    // Any column of the signature changed in between: nothing is written.
    let changes = [
        ("source_key", "source_key = source_key || 'x'"),
        ("current_generation", "current_generation = 'g-other'"),
        ("updated_at", "updated_at = '2000-01-01T00:00:00.000Z'"),
        ("source_fingerprint", "source_fingerprint = 'media-usage-projection:v1:sha256:00'"),
        ("source_completeness", "source_completeness = 'failed'"),
        ("last_error_code", "last_error_code = 'X'"),
        ("collection_id", "collection_id = 'c-other'"),
        ("source_updated_at", "source_updated_at = '2000-01-01T00:00:00.000Z'"),
        ("source_version", "source_version = 99"),
        ("identity_version", "identity_version = 2"),
        ("revision_id", "revision_id = 'r-other'"),
        ("last_attempted_at", "last_attempted_at = '2000-01-01T00:00:00.000Z'"),
    ];
    for (column, set) in changes {
        let api = entry_with_a_queued_change();
        let sql = format!("UPDATE _emdash_media_usage_sources SET {set} WHERE source_variant = 'draft_overlay'");
        let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", move |db| {
            db.connection().execute_batch(&sql).unwrap();
        });
        let outcome = block_on(project::process_next(&hooked, None, &project::Policy::default())).unwrap();
        hooked.done();
        assert_eq!(outcome, Some(JobOutcome::Conflict), "{column}");
        assert_eq!(
            scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'm2'"),
            0,
            "{column}: nothing written"
        );
    }
}
