//! Admission: a write whose references pass `MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY` is refused
//! up front (400, nothing written), so nothing saved through the API is left unindexed; an entry
//! that is over anyway (saved by an earlier version, or before the limit was lowered) is not
//! indexed, stays on the operator work list, and blocks the safe delete of exactly the media it
//! references: its collection's coverage stays complete for every other media item.

use media_usage_worker::usage::project::Admission;
use serde_json::json;

use crate::support::{code, data, scalar, Api, ADMIN};

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
        "media/list.sql",
        "media/bulk_status.sql",
        "media/delete_unused.sql",
    ] {
        let sql = &crate::sql_files::product_statement(label);
        let plan = crate::support::query_plan(&api.db, sql);
        let work: Vec<&String> = plan.iter().filter(|d| d.contains(" uw ") || d.ends_with(" uw")).collect();
        assert!(!work.is_empty(), "{plan:#?}");
        for d in work {
            assert!(d.contains("idx__emdash_media_usage_work_unindexed"), "{sql}\n{plan:#?}");
        }
    }
}

/// Work rows left failed: none may be, for content the API accepted.
fn failed_jobs(api: &Api) -> i64 {
    scalar(api, "SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'failed'")
}

#[test]
fn a_write_whose_file_url_keys_pass_one_lookup_is_refused_with_the_figure() {
    let api = setup(1000);
    // 780 file-route URLs with keys of about 1 KB: 0.8 MiB, each key read as written and
    // without its trailing punctuation.
    let text: String = (0..780).map(|i| format!("/_emdash/api/media/file/{i:04}{}. ", "k".repeat(1000))).collect();
    assert!(text.len() > 780_000 && text.len() < 1_000_000);
    let r = api.post("/content/posts", &json!({"slug": "flood", "data": {"title": text}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
    let message = r.body_json()["error"]["details"]["issues"][0]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("bytes of media file URL keys; at most 1000000"), "{message}");
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), 0, "nothing written");
    // Half of it is accepted, indexed, and blocks nothing.
    let half: String = text.chars().take(text.len() / 2).collect();
    data(&api.post("/content/posts", &json!({"slug": "half", "data": {"title": half}})));
    let m = media(&api, "unused.png");
    api.drain();
    assert_eq!((coverage(&api), failed_jobs(&api)), ("complete".into(), 0));
    assert_eq!(safe_delete(&api, &m), (200, String::new()));
}

#[test]
fn a_large_entry_with_a_draft_is_indexed() {
    let api = setup(1000);
    let m = media(&api, "hero.png");
    // A live row of about 1.1 MB (two writes of half a megabyte of pasted image data each), and a
    // draft that changes only the title: together past what one row may hold.
    let blob = |c: char| format!("data:image/png;base64,{}", c.to_string().repeat(550_000));
    let d = data(&api.post(
        "/content/posts",
        &json!({"slug": "big", "status": "published", "data": {"hero": m, "extra": {"a": blob('A')}}}),
    ));
    let id = d["item"]["id"].as_str().unwrap().to_owned();
    data(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"title": blob('B')}})));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": m}})));
    let row = scalar(&api, "SELECT length(title) + length(extra) FROM ec_posts");
    let draft = scalar(&api, "SELECT length(data) FROM revisions");
    assert!(row > 1_100_000 && row + draft > 2_000_000, "{row} + {draft}");
    api.drain();
    assert_eq!((coverage(&api), failed_jobs(&api)), ("complete".into(), 0));
    let used = data(&api.get(&format!("/media/{m}/usage")));
    assert_eq!(used["items"][0]["contentId"], id.as_str());
    let variants = scalar(
        &api,
        "SELECT count(*) FROM _emdash_media_usage_sources WHERE source_completeness = 'complete' AND current_generation IS NOT NULL",
    );
    assert_eq!(variants, 2, "both the live columns and the draft are indexed");
}

#[test]
fn a_long_article_with_pasted_images_and_many_id_like_tokens_is_accepted_and_indexed() {
    let api = setup(1000);
    let m = media(&api, "cover.png");
    // Base64 image data is full of id-length tokens between its `+` and `/`; a list of UUIDs is
    // full of ids that name nothing. Neither is refused.
    let base64: String = (0..24_000).map(|i| format!("Q2xhdWRl{i:08}Zm9yIG1lZGlh+/")).collect();
    let uuids: String = (0..6_000).map(|i| format!("550e8400-e29b-41d4-a716-{i:012} ")).collect();
    let article = format!(
        "<p>Look:</p><img src=\"data:image/png;base64,{base64}\"><p>{uuids}</p><img src=\"/_emdash/api/media/file/cover.png\">"
    );
    assert!(article.len() > 700_000, "{}", article.len());
    let d = data(
        &api.post("/content/posts", &json!({"slug": "article", "data": {"title": "A", "extra": {"html": article}}})),
    );
    let id = d["item"]["id"].as_str().unwrap().to_owned();
    api.drain();
    assert_eq!((coverage(&api), failed_jobs(&api)), ("complete".into(), 0));
    let used = data(&api.get(&format!("/media/{m}/usage")));
    assert_eq!(used["items"][0]["contentId"], id.as_str());
    assert_eq!(used["items"][0]["occurrences"][0]["fieldPath"], "extra.html");
}

/// An entry written behind the API (an import) under a CPU budget of `cpu_ms`: 1.9 MB of
/// distinct id-like tokens in the live row and as many others in the draft; its media item.
fn imported_with_many_ids(cpu_ms: f64) -> (Api, String) {
    let mut api = setup(1000);
    api.config.background = api.config.background.clone().with_cpu_ms(cpu_ms);
    let m = media(&api, "a.png");
    let d =
        data(&api.post("/content/posts", &json!({"slug": "imported", "status": "published", "data": {"title": "T"}})));
    let id = d["item"]["id"].as_str().unwrap().to_owned();
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"title": "D"}})));
    let tokens = |from: u32| -> String { (from..from + 57_000).map(|i| format!("{i:032x} ")).collect() };
    let draft = json!({"title": tokens(100_000)}).to_string();
    let conn = api.db.connection();
    conn.execute("UPDATE ec_posts SET title = ?1 WHERE id = ?2", [&tokens(0), &id]).unwrap();
    conn.execute("UPDATE revisions SET data = ?1 WHERE id = (SELECT draft_revision_id FROM ec_posts)", [&draft])
        .unwrap();
    (api, m)
}

#[test]
fn an_entry_whose_ids_pass_one_lookup_behind_the_api_fails_closed() {
    // A budget that projects both variants in one job: their ids together pass one lookup, so
    // what they name cannot be told.
    let (api, m) = imported_with_many_ids(600_000.0);
    api.drain();
    assert_eq!(failed_jobs(&api), 1);
    assert_eq!(coverage(&api), "partial", "coverage cannot be proven");
    assert_eq!(safe_delete(&api, &m).1, "MEDIA_USAGE_COVERAGE_INCOMPLETE");
}

#[test]
fn projected_one_variant_a_job_the_same_entry_is_indexed_each_variants_ids_in_one_lookup() {
    // At the default budget the entry is too heavy with both variants: each is projected by a
    // job of its own, whose ids fit one lookup.
    let (api, m) = imported_with_many_ids(media_usage_worker::usage::cost::DEFAULT_TICK_CPU_MS);
    api.drain();
    assert_eq!(failed_jobs(&api), 0);
    assert_eq!(
        scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources WHERE source_completeness = 'complete'"),
        2
    );
    assert_eq!(coverage(&api), "complete");
    assert_eq!(safe_delete(&api, &m).0, 200, "nothing names it");
}

#[test]
fn an_entry_whose_file_url_keys_pass_one_lookup_behind_the_api_fails_closed() {
    let api = setup(1000);
    let m = media(&api, "a.png");
    let d = data(&api.post("/content/posts", &json!({"slug": "imported", "data": {"title": "T"}})));
    let id = d["item"]["id"].as_str().unwrap().to_owned();
    // 1.9 MB of file URLs whose keys each read four ways: what they name cannot be told.
    let text: String = (0..24_000).map(|i| format!("/_emdash/api/media/file/{i:048}%41. ")).collect();
    api.db.connection().execute("UPDATE ec_posts SET title = ?1 WHERE id = ?2", [&text, &id]).unwrap();
    api.drain();
    assert_eq!(failed_jobs(&api), 1);
    assert_eq!(coverage(&api), "partial", "coverage cannot be proven");
    assert_eq!(safe_delete(&api, &m).1, "MEDIA_USAGE_COVERAGE_INCOMPLETE");
}
