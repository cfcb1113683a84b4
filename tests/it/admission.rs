//! Admission: a write whose references pass `MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY` is refused
//! up front (400, nothing written), so nothing saved through the API is left unindexed; an entry
//! that is over anyway (saved by an earlier version, or before the limit was lowered) is not
//! indexed, stays on the operator work list, and blocks the safe delete of exactly the media it
//! references: its collection's coverage stays complete for every other media item.

use media_usage_worker::usage::project::Admission;
use serde_json::json;

use crate::support::{code, data, Api, ADMIN};

fn scalar(api: &Api, sql: &str) -> i64 {
    api.db.connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

/// `posts` (a title, a hero image and a JSON field), admitting `max` references per variant.
fn setup(max: usize) -> Api {
    let mut api = Api::new();
    api.config.background = api.config.background.clone().with_admission(Admission { max_occurrences: max });
    let fields = json!([
        {"slug": "title", "type": "string"},
        {"slug": "hero", "type": "image"},
        {"slug": "extra", "type": "json"}
    ]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    api
}

fn media(api: &Api, key: &str) -> String {
    let d = data(&api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key})));
    d["item"]["id"].as_str().unwrap().to_owned()
}

fn coverage(api: &Api) -> String {
    data(&api.get("/admin/media-usage/status"))["status"].as_str().unwrap().to_owned()
}

/// A safe delete's answer: (status, error code).
fn safe_delete(api: &Api, m: &str) -> (u16, String) {
    let r = api.call("DELETE", &format!("/media/{m}"), Some(ADMIN), None);
    (r.status, code(&r))
}

fn refused(r: &media_usage_worker::api::Response, count: usize, max: usize) {
    assert_eq!((r.status, code(r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
    let issue = &r.body_json()["error"]["details"]["issues"][0];
    assert_eq!(issue["path"], "data");
    let message = issue["message"].as_str().unwrap();
    assert!(message.contains(&format!("references {count} media items; at most {max}")), "{message}");
}

#[test]
fn every_content_write_is_admitted_before_anything_is_written() {
    let mut api = setup(2);
    let [a, b, c] = [media(&api, "a.png"), media(&api, "b.png"), media(&api, "c.png")];
    // Create: three uses (a field, an embedded id, a file URL).
    let url = format!("/_emdash/api/media/file/{}", "c.png");
    let r = api.post("/content/posts", &json!({"slug": "three", "data": {"hero": a, "extra": {"x": b, "y": url}}}));
    refused(&r, 3, 2);
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), 0, "nothing written");
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "nothing queued");
    // Update: the live columns after the write count (the stored hero plus two new uses).
    let d = data(&api.post("/content/posts", &json!({"slug": "two", "data": {"hero": a, "extra": [b]}})));
    let id = d["item"]["id"].as_str().unwrap().to_owned();
    let version = d["item"]["version"].clone();
    refused(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"extra": [b, c]}})), 3, 2);
    let after = data(&api.get(&format!("/content/posts/{id}")))["item"].clone();
    assert_eq!((after["version"].clone(), after["data"]["extra"].clone()), (version, json!([b])));
    // Clearing the hero in the same write makes room.
    data(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"hero": null, "extra": [b, c]}})));
    // A draft counts as a whole (the live values it keeps, and its own).
    refused(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": a}})), 3, 2);
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": a, "extra": [b]}})));
    // Publishing makes the draft live: refused if the limit was lowered since it was saved.
    api.config.background = api.config.background.clone().with_admission(Admission { max_occurrences: 1 });
    refused(&api.call("POST", &format!("/content/posts/{id}/publish"), Some(ADMIN), None), 2, 1);
    assert_eq!(data(&api.get(&format!("/content/posts/{id}")))["item"]["status"], "draft");
    api.drain();
    assert_eq!(coverage(&api), "complete", "nothing saved is left unindexed");
}

#[test]
fn an_entry_too_large_to_index_blocks_only_the_media_it_uses() {
    let api = setup(2);
    let [m1, m2, m3, m4] = ["1.png", "2.png", "3.png", "4.png"].map(|k| media(&api, k));
    // Saved behind the API (an earlier version, or a higher limit, let it in): three uses.
    let extra = json!([m1, m2, m3]).to_string();
    api.db
        .connection()
        .execute("INSERT INTO ec_posts (id, slug, status, extra) VALUES ('big', 'big', 'published', ?1)", [&extra])
        .unwrap();
    api.drain();
    let failed = data(&api.get("/admin/media-usage/work?collection=posts&state=failed"));
    assert_eq!(failed["items"][0]["contentId"], "big", "on the operator work list");
    assert_eq!(failed["items"][0]["lastErrorCode"], "MEDIA_USAGE_RESOURCE_LIMIT");
    assert_eq!(coverage(&api), "complete");
    // "Used in" names it apart from the indexed entries, for what it uses only.
    let used = data(&api.get(&format!("/media/{m1}/usage")));
    assert_eq!(used["items"], json!([]));
    assert_eq!(used["unindexed"], json!([{"collection": "posts", "contentId": "big"}]));
    assert_eq!(data(&api.get(&format!("/media/{m4}/usage")))["unindexed"], json!([]));
    let count = |m: &str| data(&api.get(&format!("/media/{m}?includeUsage=1")))["item"]["usage"]["count"].clone();
    assert_eq!((count(&m1), count(&m4)), (json!(1), json!(0)));
    // A media item it does not use can go; one it uses cannot, and the refusal names it.
    assert_eq!(safe_delete(&api, &m4), (200, String::new()));
    let r = api.call("DELETE", &format!("/media/{m1}"), Some(ADMIN), None);
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()), "{}", r.body);
    let details = &r.body_json()["error"]["details"];
    assert_eq!(details["count"], 1);
    assert_eq!(
        details["entries"][0],
        json!({"collection": "posts", "contentId": "big", "slug": null, "indexed": false})
    );
    // A repair re-proves the collection the same way.
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "all"})));
    api.drain();
    assert_eq!(coverage(&api), "complete");
    assert_eq!(safe_delete(&api, &m2).0, 409);
    let m5 = media(&api, "5.png");
    assert_eq!(safe_delete(&api, &m5), (200, String::new()));
    // Changed again (behind the API) and not yet projected, it proves nothing: every safe delete
    // waits.
    api.db.connection().execute("UPDATE ec_posts SET title = 'changed' WHERE id = 'big'", []).unwrap();
    let m6 = media(&api, "6.png");
    assert_eq!(safe_delete(&api, &m6), (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".into()));
    api.drain();
    assert_eq!(safe_delete(&api, &m6), (200, String::new()));
    // Fixed through the API, it is indexed like any entry and lets go of what it dropped.
    data(&api.put("/content/posts/big", &json!({"data": {"extra": [m1]}})));
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(safe_delete(&api, &m2), (200, String::new()));
    assert_eq!(safe_delete(&api, &m3), (200, String::new()));
    let r = api.call("DELETE", &format!("/media/{m1}"), Some(ADMIN), None);
    assert_eq!(r.body_json()["error"]["details"]["entries"][0]["indexed"], true);
}

#[test]
fn the_delete_guard_reads_only_entries_too_large_to_index() {
    let api = setup(2);
    // A large second collection's worth of finished and failed work.
    api.db
        .connection()
        .execute_batch(
            "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 5000)
             INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, state, last_error_code)
             SELECT 'big', 'e' || i, 'big', 'failed', 'MEDIA_USAGE_SNAPSHOT_FAILED' FROM c;
             ANALYZE;",
        )
        .unwrap();
    for label in [
        "usage/guard_media_unused.sql",
        "media/bulk_trash.sql",
        "media/purge.sql",
        "usage/media_usage_entries.sql",
        "usage/unindexed_users.sql",
        "usage/count_entries.sql",
    ] {
        let sql = &crate::sql_files::product_statement(label);
        let plan = crate::support::query_plan(&api.db, sql);
        let work: Vec<&String> = plan.iter().filter(|d| d.contains(" w ") || d.ends_with(" w")).collect();
        assert!(!work.is_empty(), "{plan:#?}");
        for d in work {
            assert!(d.contains("idx__emdash_media_usage_work_unindexed"), "{sql}\n{plan:#?}");
        }
    }
}
