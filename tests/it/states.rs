//! Stored states and phases are closed word lists: the database refuses other words, and the
//! code decodes each into an enum (an unknown word is an error, never a fallback branch).

use futures::executor::block_on;
use media_usage_worker::exec::{Error, Executor, Statement};
use media_usage_worker::model::state::{QueueState, RepairPhase};
use serde::Deserialize;

use crate::support::db;

fn refused(sql: &str) {
    let exec = db();
    exec.connection()
        .execute_batch(
            "INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('c', 'e', 'posts');
             INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token) VALUES ('c', 'posts', 't');
             INSERT INTO _emdash_media_usage_index_status (scope_key, collection_id, status, capture_state) VALUES ('posts', 'c', 'complete', 'active');",
        )
        .unwrap();
    match block_on(exec.run(Statement::new(sql.to_owned()))) {
        Err(Error::Constraint(msg)) => assert!(msg.contains("CHECK constraint failed"), "{msg}"),
        other => panic!("{sql}: expected a CHECK failure, got {other:?}"),
    }
}

#[test]
fn the_database_refuses_unknown_state_and_phase_words() {
    refused("UPDATE _emdash_media_usage_work SET state = 'done'");
    refused("INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, state) VALUES ('c', 'f', 'posts', 'Pending')");
    refused("UPDATE _emdash_media_usage_reconciliations SET phase = 'finalise'");
    refused("UPDATE _emdash_media_usage_reconciliations SET state = 'running'");
    refused("UPDATE _emdash_media_usage_index_status SET status = 'bogus'");
    refused("UPDATE _emdash_media_usage_index_status SET capture_state = 'paused'");
    refused("INSERT INTO _emdash_media_usage_ticks (started_at, lane, outcome, statements, rows_written, duration_ms) VALUES ('t', 'work', 'weird', 1, 1, 1)");
    // Tombstones: closed word lists, and a lease token and expiry exactly while leased.
    let tombstone = |cols: &str, vals: &str| {
        format!("INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug{cols}) VALUES ('c', 'posts'{vals})")
    };
    refused(&tombstone(", phase", ", 'cleanup'"));
    refused(&tombstone(", state", ", 'done'"));
    refused(&tombstone(", state", ", 'leased'"));
    refused(&tombstone(", state, lease_token", ", 'leased', 't'"));
    refused(&tombstone(", lease_token, lease_expires_at", ", 't', '2999-01-01T00:00:00.000Z'"));
    refused(&tombstone(", cleanup_batch_rows", ", 10001"));
    refused(&tombstone(", force_delete", ", 2"));
}

#[test]
fn an_unknown_stored_word_is_a_decode_error() {
    #[derive(Debug, Deserialize)]
    struct Row {
        #[allow(dead_code)] // Decoding is the test.
        state: QueueState,
    }
    let exec = db();
    let bad: Result<Vec<Row>, Error> = block_on(exec.query(Statement::new("SELECT 'finalise' AS state")));
    assert!(matches!(bad, Err(Error::Decode(_))), "{bad:?}");
    let good: Vec<Row> = block_on(exec.query(Statement::new("SELECT 'leased' AS state"))).unwrap();
    assert_eq!(good.len(), 1);
    assert!(RepairPhase::parse("finalise").is_none());
}
