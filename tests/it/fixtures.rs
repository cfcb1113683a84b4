//! The shared test data of `tests/fixtures/`: what the large-collection fixture seeds, for every
//! test (native, workerd, bench) that reads it.

use crate::support::{fixture_statements, large_collection, scalar, text, Api, LargeCollection};

#[test]
fn the_large_collection_fixture_seeds_entries_work_sources_occurrences_and_revisions() {
    let api = Api::new();
    let shape = LargeCollection { entries: 12, occurrences: 3, revisions: 5, revision_bytes: 7 };
    let id = large_collection(&api, "posts", shape);
    let count = |sql: &str| scalar(&api, sql);
    assert_eq!(count("SELECT count(*) FROM ec_posts"), 12);
    assert_eq!(count("SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'pending'"), 12, "queued by capture");
    assert_eq!(count("SELECT count(*) FROM _emdash_media_usage_sources WHERE source_completeness = 'complete'"), 12);
    assert_eq!(count("SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'm'"), 36);
    assert_eq!(count("SELECT count(*) FROM revisions WHERE collection = 'posts'"), 5);
    assert_eq!(count("SELECT min(length(json_extract(data, '$.body'))) FROM revisions"), 7);
    assert_eq!(text(&api, "SELECT max(entry_id) FROM revisions").as_deref(), Some("e0000005"), "the first entries");
    assert_eq!(
        text(&api, "SELECT min(source_key) FROM _emdash_media_usage_sources"),
        Some(format!("content:{id}:e0000001:columns"))
    );
    // Every occurrence belongs to a source of the collection.
    assert_eq!(
        count(
            "SELECT count(*) FROM _emdash_media_usage AS u
             JOIN _emdash_media_usage_sources AS s ON s.source_key = u.source_key AND s.current_generation = u.generation"
        ),
        36
    );
}

#[test]
fn one_occurrence_and_no_revision_is_the_smallest_shape() {
    let api = Api::new();
    large_collection(&api, "docs", LargeCollection::new(3, 1));
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_usage"), 3);
    assert_eq!(scalar(&api, "SELECT count(*) FROM revisions"), 0);
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_docs"), 3);
}

#[test]
fn fixture_statements_drop_comments_and_name_the_table() {
    let statements = fixture_statements(include_str!("../fixtures/large_collection.sql"), "\"ec_x\"");
    assert_eq!(statements.len(), 4);
    assert!(statements.iter().all(|s| !s.contains("--") && !s.contains("{table}") && !s.ends_with(';')));
    assert!(statements[0].contains("INSERT INTO \"ec_x\""));
}
