//! Commit-unknown at every statement: each write the API offers, and each step of every lane,
//! run once for every statement it issues with that statement committed and then reported as a
//! transient error (`Fault::CommitUnknown`, what D1 does when the connection is lost after a
//! write). After the client's documented retry (requests) or the next ticks (lanes), the whole
//! observable state — content, drafts, schema, media, stored objects, tokens, coverage, queues
//! and the usage index — equals the state the same write or tick reaches without a fault, and the
//! index equals a projection of that content from scratch: nothing lost, nothing done twice in a
//! way that shows.
//!
//! One fixture is built once and copied (`Api::snapshot`) for every run.

use std::collections::BTreeMap;

use futures::executor::block_on;
use media_usage_worker::api::{Request, Response};
use media_usage_worker::clock::FnClock;
use media_usage_worker::exec::fault::{Fault, Faulty};
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::Executor;
use media_usage_worker::lifecycle::deletion::batch::CleanupBatch;
use media_usage_worker::model::state::TickOutcome;
use media_usage_worker::storage::Storage;
use media_usage_worker::tick::{budget::Budget, lanes::BackgroundPolicy, report::TickReport};
use serde_json::{json, Value as Json};

use crate::media_files::{form, png};
use crate::support::{code, data, exec_sql, request, scalar, time_passes, Api, TickRun, ADMIN};

const HOUR_MS: f64 = 3_600_000.0;
const T0: f64 = 1_800_000_000_000.0;

fn rows(api: &Api, sql: &str) -> Vec<Vec<Json>> {
    let conn = api.db.connection();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Json::Null,
                    rusqlite::types::ValueRef::Integer(v) => json!(v),
                    rusqlite::types::ValueRef::Real(v) => json!(v),
                    rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                    rusqlite::types::ValueRef::Blob(_) => json!("<blob>"),
                })
            })
            .collect()
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

// ---------------------------------------------------------------------------------------------
// The state a write or a tick leaves, without the ids, times and counters that differ between
// runs, and the index built from scratch.

/// Columns that differ between runs of the same writes, or that a retry may bump without
/// changing what the entry is: ids chosen at random, times, the version and revision pointers
/// (the draft's data is compared instead).
const VOLATILE: &[&str] = &[
    "id",
    "translation_group",
    "created_at",
    "updated_at",
    "published_at",
    "version",
    "live_revision_id",
    "draft_revision_id",
];

/// Every content table's entries, keyed by collection and slug, with the draft revision's data.
fn content(api: &Api) -> BTreeMap<String, Json> {
    let mut out = BTreeMap::new();
    for slug in rows(api, "SELECT slug FROM _emdash_collections ORDER BY slug") {
        let slug = slug[0].as_str().unwrap().to_owned();
        let conn = api.db.connection();
        let stmt = conn.prepare(&format!("SELECT * FROM ec_{slug} ORDER BY slug, locale")).unwrap();
        let names: Vec<String> = stmt.column_names().iter().map(|s| (*s).to_owned()).collect();
        drop(stmt);
        for row in rows(api, &format!("SELECT * FROM ec_{slug} ORDER BY slug, locale")) {
            let mut entry: serde_json::Map<String, Json> = names.iter().cloned().zip(row).collect();
            let draft = entry.get("draft_revision_id").and_then(Json::as_str).map(|rev| {
                api.db
                    .connection()
                    .query_row("SELECT data FROM revisions WHERE id = ?1", [rev], |r| r.get::<_, String>(0))
                    .unwrap()
            });
            for k in VOLATILE {
                entry.remove(*k);
            }
            entry.insert("draft".into(), json!(draft));
            if entry.get("deleted_at").is_some_and(|d| !d.is_null()) {
                entry.insert("deleted_at".into(), json!("trashed"));
            }
            let key = format!("{slug}/{}", entry["slug"].as_str().unwrap_or("(no slug)"));
            out.insert(key, Json::Object(entry));
        }
    }
    out
}

/// The entry slugs by content id, across collections (sources name entries by id).
fn slugs_by_id(api: &Api) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for slug in rows(api, "SELECT slug FROM _emdash_collections") {
        let slug = slug[0].as_str().unwrap();
        for r in rows(api, &format!("SELECT id, slug FROM ec_{slug}")) {
            out.insert(r[0].as_str().unwrap().to_owned(), format!("{slug}/{}", r[1].as_str().unwrap_or("(no slug)")));
        }
    }
    out
}

/// The usage index: each current source (by collection and entry slug, or `gone:` for a source
/// whose entry no longer exists) and its current occurrences, media named by storage key.
fn index(api: &Api) -> Vec<String> {
    let slugs = slugs_by_id(api);
    let mut out: Vec<String> = rows(
        api,
        "SELECT s.content_id, s.collection_slug, s.source_variant, s.source_completeness, coalesce(s.last_error_code, ''),
                coalesce((SELECT group_concat(x, ',') FROM
                    (SELECT u.field_path || '=' || coalesce(m.storage_key, u.media_id) AS x
                     FROM _emdash_media_usage u LEFT JOIN media m ON m.id = u.media_id
                     WHERE u.source_key = s.source_key AND u.generation = s.current_generation ORDER BY x)), '')
         FROM _emdash_media_usage_sources s",
    )
    .into_iter()
    .map(|r| {
        let id = r[0].as_str().unwrap();
        let entry = slugs.get(id).cloned().unwrap_or_else(|| format!("gone:{}/{id}", r[1].as_str().unwrap()));
        format!("{entry}:{}:{}:{}:{}", r[2].as_str().unwrap(), r[3], r[4], r[5])
    })
    .collect();
    out.sort();
    out
}

/// The schedule index: each row by collection and entry slug (`gone:` for an entry that no longer
/// exists), with its time.
fn schedules(api: &Api) -> Vec<String> {
    let slugs = slugs_by_id(api);
    let mut out: Vec<String> =
        rows(api, "SELECT collection_slug, content_id, scheduled_at FROM _emdash_content_schedule")
            .into_iter()
            .map(|r| {
                let id = r[1].as_str().unwrap();
                let entry = slugs.get(id).cloned().unwrap_or_else(|| format!("gone:{}/{id}", r[0].as_str().unwrap()));
                format!("{entry}@{}", r[2].as_str().unwrap())
            })
            .collect();
    out.sort();
    out
}

/// Everything a client or an operator can observe, as text.
fn state(api: &Api) -> String {
    let store = api.storage.as_ref().unwrap();
    let mut objects: Vec<String> = store
        .keys()
        .iter()
        .map(|k| {
            let named = rows(
                api,
                &format!(
                    "SELECT filename FROM media WHERE storage_key = '{k}'
                     UNION ALL SELECT 'version of ' || filename FROM media_versions WHERE storage_key = '{k}'"
                ),
            );
            let bytes = store.bytes(k).unwrap();
            format!("{} bytes named by {:?}", bytes.len(), named.first().map(|r| r[0].clone()))
        })
        .collect();
    objects.sort();
    let snapshot = json!({
        "schema": rows(api, "SELECT c.slug, c.label, (SELECT group_concat(f.slug || ':' || f.type, ',') FROM
                                (SELECT * FROM _emdash_fields f WHERE f.collection_id = c.id ORDER BY f.sort_order) AS f)
                             FROM _emdash_collections c ORDER BY c.slug"),
        "content": content(api),
        "media": rows(api, "SELECT filename, mime_type, coalesce(content_hash, storage_key), alt, caption, width, height,
                                   author_id, deleted_at IS NOT NULL
                            FROM media ORDER BY 3"),
        "versions": rows(api, "SELECT v.filename, v.mime_type, coalesce(v.content_hash, v.storage_key), v.width,
                                      v.replaced_by, (SELECT coalesce(m.content_hash, m.storage_key) FROM media AS m
                                                      WHERE m.id = v.media_id)
                               FROM media_versions AS v ORDER BY 3"),
        "objects": objects,
        "tokens": rows(api, "SELECT name, role, scopes, created_by IS NOT NULL FROM _emdash_api_tokens ORDER BY name"),
        "coverage": rows(api, "SELECT scope_key, status, capture_state, reconciliation_required, last_error_code
                               FROM _emdash_media_usage_index_status ORDER BY scope_key"),
        "schedules": schedules(api),
        "queues": rows(api, "SELECT (SELECT count(*) FROM _emdash_media_usage_work),
                                    (SELECT count(*) FROM _emdash_media_usage_collection_deletions),
                                    (SELECT count(*) FROM _emdash_media_usage_field_deletions),
                                    (SELECT count(*) FROM _emdash_media_usage_reconciliations),
                                    (SELECT count(*) FROM revisions r WHERE NOT EXISTS
                                        (SELECT 1 FROM _emdash_collections c WHERE c.slug = r.collection)),
                                    (SELECT count(*) FROM _emdash_batch_guard)"),
        "index": index(api),
    });
    serde_json::to_string_pretty(&snapshot).unwrap()
}

/// Asserts that two [`state`]s are equal, showing the lines that differ.
fn assert_same(actual: &str, expected: &str, what: &str) {
    if actual != expected {
        let (a, e): (Vec<&str>, Vec<&str>) = (actual.lines().collect(), expected.lines().collect());
        let only = |x: &[&str], y: &[&str]| x.iter().filter(|l| !y.contains(l)).copied().collect::<Vec<_>>().join("\n");
        panic!(
            "{what}: the end state differs from the fault-free one\nonly here:\n{}\nonly without the fault:\n{}",
            only(&a, &e),
            only(&e, &a)
        );
    }
}

/// Asserts that the index equals a projection of the content from scratch: with every source
/// and occurrence dropped, a repair of every collection (and the ticks it needs) builds the
/// same index. (Sources of a collection whose deletion is under way are that deletion's to
/// remove, not part of the index.) Changes `api` (run it last).
fn assert_index_is_a_projection_from_scratch(api: &Api, what: &str) {
    let deleting: Vec<String> = rows(
        api,
        "SELECT collection_slug FROM _emdash_media_usage_collection_deletions
         WHERE collection_slug NOT IN (SELECT slug FROM _emdash_collections)",
    )
    .into_iter()
    .map(|r| format!("gone:{}/", r[0].as_str().unwrap()))
    .collect();
    let mut before = index(api);
    before.retain(|line| !deleting.iter().any(|d| line.starts_with(d)));
    exec_sql(api, "DELETE FROM _emdash_media_usage; DELETE FROM _emdash_media_usage_sources;");
    let ids: Vec<String> = rows(api, "SELECT id FROM _emdash_collections")
        .into_iter()
        .map(|r| r[0].as_str().unwrap().to_owned())
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    if !ids.is_empty() {
        block_on(media_usage_worker::repo::repair::begin(&api.db, &ids, crate::support::rules().id())).unwrap();
    }
    settle(api);
    assert_eq!(index(api), before, "{what}: the index differs from a projection from scratch");
}

// ---------------------------------------------------------------------------------------------
// Ticks and time.

/// The tick budget of the lane matrix: small, so that the background work spans several ticks
/// and every kind of step is cut somewhere; cleanup two rows at a time.
fn small_tick() -> (Budget, BackgroundPolicy) {
    // 28 statements: the probes of the eight other lanes (14 leave the storage sweep a step;
    // at 12 it never gets one: see docs/cost-and-quotas.md; the purge's look covers the trash and
    // the versions) and a relink's claim, an entry's load and its write in one tick.
    (Budget::new(28, 60_000.0), crate::support::policy().with_cleanup(CleanupBatch::Fixed(2)))
}

/// One tick through `exec`, with the fixture's object store, on a clock that stands still (what
/// a tick does then depends on statements only).
fn tick_on<E: Executor>(api: &Api, exec: &E, (budget, policy): &(Budget, BackgroundPolicy)) -> TickReport {
    let storage = api.storage.as_ref().map(|s| s as &dyn Storage);
    TickRun::new(*budget, policy).storage(storage).run(exec)
}

/// Lets time pass (two days, past the storage sweep's grace) and runs default ticks until one
/// finds nothing to do and no queue holds anything but failed items (which wait for an
/// operator).
fn settle(api: &Api) {
    let store = api.storage.as_ref().unwrap();
    store.now_ms.set(store.now_ms.get() + 48.0 * HOUR_MS);
    let default = (crate::support::budget(), crate::support::policy());
    for _ in 0..50 {
        time_passes(&api.db);
        let report = tick_on(api, &api.db, &default);
        let queued = scalar(
            api,
            "SELECT (SELECT count(*) FROM _emdash_media_usage_work WHERE state <> 'failed')
                  + (SELECT count(*) FROM _emdash_media_usage_collection_deletions WHERE state <> 'failed')
                  + (SELECT count(*) FROM _emdash_media_usage_reconciliations WHERE state <> 'failed')
                  + (SELECT count(*) FROM _emdash_media_relinks WHERE finished_at IS NULL)",
        );
        if report.outcome == TickOutcome::Idle && queued == 0 {
            return;
        }
    }
    panic!("the background work does not settle");
}

// ---------------------------------------------------------------------------------------------
// The fixture.

/// The fixture's ids.
struct Ids {
    /// The collection `posts`.
    posts: String,
    /// A published entry using A (hero) and B (gallery).
    live: String,
    /// A published entry using A with a draft using B.
    drafted: String,
    /// A trashed entry using B.
    trashed: String,
    /// Media registered by JSON: A (in use), an unused one, and an uploaded one (unused).
    a: String,
    unused: String,
    uploaded: String,
    /// An editor's token (its id and secret).
    editor: (String, String),
    /// An author's token (its secret), and an unused media item it registered.
    author: String,
    authors_media: String,
}

struct Fixture {
    api: Api,
    ids: Ids,
}

fn media(api: &Api, key: &str) -> String {
    let r = api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn entry(api: &Api, slug: &str, status: &str, d: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": status, "data": d}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn build_fixture() -> Fixture {
    let api = Api::with_storage(T0);
    let fields = json!([
        {"slug": "title", "type": "string"},
        {"slug": "hero", "type": "image"},
        {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}
    ]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    let posts =
        rows(&api, "SELECT id FROM _emdash_collections WHERE slug = 'posts'")[0][0].as_str().unwrap().to_owned();
    let a = media(&api, "a.png");
    let b = media(&api, "b.png");
    let unused = media(&api, "unused.png");
    let (ty, body) = form(&[("file", Some("up.png"), Some("image/png"), &png(2, 2, 7))]);
    let r = api.request("POST", "/media", Some(ADMIN), Some(&body), |r| r.content_type = Some(ty));
    let uploaded = data(&r)["item"]["id"].as_str().unwrap().to_owned();
    let live = entry(&api, "live", "published", json!({"title": "Live", "hero": a, "gallery": [{"image": b}]}));
    let drafted = entry(&api, "drafted", "published", json!({"hero": a}));
    data(&api.put(&format!("/content/posts/{drafted}"), &json!({"draft": true, "data": {"hero": b}})));
    let trashed = entry(&api, "trashed", "draft", json!({"hero": b}));
    data(&api.delete(&format!("/content/posts/{trashed}")));
    let r = api.post(
        "/admin/tokens",
        &json!({"name": "editor", "role": "editor", "scopes": ["content:read", "content:write"]}),
    );
    let editor = data(&r);
    let editor = (editor["id"].as_str().unwrap().to_owned(), editor["token"].as_str().unwrap().to_owned());
    let r = api.post("/admin/tokens", &json!({"name": "author", "role": "author", "scopes": ["media:write"]}));
    let author = data(&r)["token"].as_str().unwrap().to_owned();
    let body = json!({"filename": "mine.png", "mimeType": "image/png", "storageKey": "mine.png"}).to_string();
    let r = api.call("POST", "/media", Some(&author), Some(body.as_bytes()));
    let authors_media = data(&r)["item"]["id"].as_str().unwrap().to_owned();
    settle(&api);
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
    Fixture { api, ids: Ids { posts, live, drafted, trashed, a, unused, uploaded, editor, author, authors_media } }
}

fn fixture() -> &'static Fixture {
    // Built once; every run works on a copy. (`Api` holds a SQLite connection, which is `Send`
    // but not `Sync`: the fixture lives in a thread-safe cell of its own thread's making.)
    thread_local! {
        static FIXTURE: &'static Fixture = Box::leak(Box::new(build_fixture()));
    }
    FIXTURE.with(|f| *f)
}

// ---------------------------------------------------------------------------------------------
// Write paths.

/// A write as a client sends it.
struct Write {
    name: &'static str,
    /// What the write needs beyond the fixture, done on the copy before it.
    prepare: fn(&Api, &Ids),
    request: fn(&Api, &Ids) -> Request,
    /// The answer without a fault.
    ok: u16,
    /// What the client's retry of the same request may answer after a 5xx, besides `ok`, and
    /// what it then knows (docs/errors-and-retries.md).
    retry_answers: &'static [(u16, &'static str)],
    /// What the client does with the retry's answer beyond reading it (e.g. revoking a token it
    /// can never learn the secret of).
    recover: fn(&Api, &Response),
}

fn admin(method: &str, path: &str, body: Option<Json>) -> Request {
    let body = body.map(|b| b.to_string().into_bytes());
    request(method, path, Some(ADMIN), body.as_deref())
}

fn nothing(_: &Api, _: &Response) {}

fn no_preparation(_: &Api, _: &Ids) {}

/// An entry whose projection kept failing: its work row `failed`, coverage short of complete.
fn failed_work(api: &Api, _: &Ids) {
    let id = entry(api, "failing", "published", json!({}));
    exec_sql(
        api,
        &format!(
            "UPDATE ec_posts SET title = 'changed behind the API' WHERE id = '{id}';
             UPDATE _emdash_media_usage_work SET state = 'failed', attempt_count = 5,
                    last_error_code = 'MEDIA_USAGE_PROCESSING_FAILED' WHERE content_id = '{id}';"
        ),
    );
}

/// The published entry with a draft, scheduled.
fn scheduled(api: &Api, i: &Ids) {
    data(&api.post(&format!("/content/posts/{}/schedule", i.drafted), &json!({"scheduledAt": "2099-01-01T00:00:00Z"})));
}

/// The trashed entry scheduled (restored, scheduled and trashed again), its index row dropped as
/// the schedule lane drops it once its time has come.
fn scheduled_in_the_trash(api: &Api, i: &Ids) {
    data(&api.post(&format!("/content/posts/{}/restore", i.trashed), &json!({})));
    data(&api.post(&format!("/content/posts/{}/schedule", i.trashed), &json!({"scheduledAt": "2099-01-01T00:00:00Z"})));
    data(&api.delete(&format!("/content/posts/{}", i.trashed)));
    exec_sql(api, &format!("DELETE FROM _emdash_content_schedule WHERE content_id = '{}'", i.trashed));
}

/// The unused media item registered by JSON, in the trash.
/// An entry linking A's file by URL, then A's file replaced (its key `a.png` a version).
fn linked_by_url(api: &Api, i: &Ids) {
    let title = "see /_emdash/api/media/file/a.png and https://cdn.example/media/a.png.";
    entry(api, "linked", "published", json!({"title": title}));
    crate::relink::replace_by_sql(api, &i.a, "a-v2.png");
}

fn trashed_media(api: &Api, i: &Ids) {
    data(&api.delete(&format!("/media/{}", i.unused)));
}

/// The uploaded item's file replaced once: its first file is a version.
fn replaced_upload(api: &Api, i: &Ids) {
    let (ty, body) = form(&[("file", Some("second.png"), Some("image/png"), &png(4, 4, 11))]);
    let r = api.request("POST", &format!("/media/{}/replace", i.uploaded), Some(ADMIN), Some(&body), |r| {
        r.content_type = Some(ty)
    });
    assert_eq!(r.status, 200, "{}", r.body);
}

/// A replace of the uploaded item's file, as the client sends it.
fn replace_request(i: &Ids) -> Request {
    let (ty, body) = form(&[("file", Some("third.png"), Some("image/png"), &png(5, 5, 12))]);
    let mut r = admin("POST", &format!("/media/{}/replace", i.uploaded), None);
    r.body = body;
    r.content_type = Some(ty);
    r
}

/// A revert of the uploaded item to its first file (found by its bytes: a version before the
/// revert, the current file after it, so the client's retry names the same key).
fn revert_request(api: &Api, i: &Ids) -> Request {
    let hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(png(2, 2, 7)))
    };
    let key = rows(
        api,
        &format!(
            "SELECT storage_key FROM media_versions WHERE content_hash = '{hash}'
             UNION ALL SELECT storage_key FROM media WHERE content_hash = '{hash}'"
        ),
    );
    admin("POST", &format!("/media/{}/revert", i.uploaded), Some(json!({"version": key[0][0]})))
}

/// The writes of an item's file: a replace and a revert.
const FILE_CHANGES: &[&str] = &["media replace", "media replace of a replaced file", "media revert"];

/// A collection whose deletion failed after its front phases, its rows still to clean up.
fn failed_deletion(api: &Api, i: &Ids) {
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "old", "label": "Old", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    data(&api.post("/content/old", &json!({"slug": "o1", "data": {"hero": i.a}})));
    data(&api.delete("/schema/collections/old?force=true"));
    exec_sql(api, "UPDATE _emdash_media_usage_collection_deletions SET state = 'failed', attempt_count = 5");
}

/// A retried mint made a second token: the first one's secret was lost with its answer, so the
/// client revokes every token of that name but the one it holds.
fn revoke_lost_mints(api: &Api, retry: &Response) {
    let kept = data(retry)["id"].as_str().unwrap().to_owned();
    let list = data(&api.get("/admin/tokens?limit=100"));
    for t in list["items"].as_array().unwrap() {
        if t["name"] == "bot" && t["id"] != kept.as_str() {
            data(&api.delete(&format!("/admin/tokens/{}", t["id"].as_str().unwrap())));
        }
    }
}

/// A create that makes its slug cannot tell its retry from a second create: after a 5xx the
/// retry may have made a second entry of the same title (its slug `…-1`). The client keeps the
/// earlier one and deletes the one its retry made (docs/errors-and-retries.md).
fn delete_retry_twin(api: &Api, retry: &Response) {
    let item = &data(retry)["item"];
    let title = item["data"]["title"].as_str().unwrap();
    let twins = rows(
        api,
        &format!("SELECT id FROM ec_posts WHERE title = '{title}' AND id <> '{}'", item["id"].as_str().unwrap()),
    );
    if !twins.is_empty() {
        data(&api.delete(&format!("/content/posts/{}?permanent=true", item["id"].as_str().unwrap())));
    }
}

/// The writes EmDash's content operations added: a create without a slug, discard draft and
/// duplicate.
const CONTENT_OPERATIONS: &[&str] = &["content create without a slug", "discard draft", "duplicate"];

/// Every write the API offers.
fn writes() -> Vec<Write> {
    vec![
        Write {
            prepare: no_preparation,
            name: "content create",
            request: |_, i| {
                admin(
                    "POST",
                    "/content/posts",
                    Some(
                        json!({"slug": "new", "status": "published", "data": {"hero": i.a, "gallery": [{"image": i.a}]}}),
                    ),
                )
            },
            ok: 201,
            retry_answers: &[(409, "CONFLICT")],
            recover: |api, retry| {
                if retry.status == 409 {
                    // The 409 names the entry holding the slug: the one the first try created.
                    let id = retry.body_json()["error"]["details"]["id"].as_str().unwrap().to_owned();
                    assert_eq!(data(&api.get(&format!("/content/posts/{id}")))["item"]["slug"], "new");
                }
            },
        },
        Write {
            prepare: no_preparation,
            name: "content create without a slug",
            request: |_, i| {
                admin("POST", "/content/posts", Some(json!({"data": {"title": "Fresh news", "hero": i.a}})))
            },
            ok: 201,
            retry_answers: &[],
            recover: delete_retry_twin,
        },
        Write {
            prepare: no_preparation,
            name: "discard draft",
            request: |_, i| admin("POST", &format!("/content/posts/{}/discard-draft", i.drafted), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: linked_by_url,
            name: "media relink",
            request: |_, i| admin("POST", &format!("/media/{}/relink", i.a), None),
            ok: 202,
            // The first try started the relink: the retry answers it, in progress.
            retry_answers: &[(200, "")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "duplicate",
            request: |_, i| admin("POST", &format!("/content/posts/{}/duplicate", i.live), None),
            ok: 201,
            retry_answers: &[],
            recover: delete_retry_twin,
        },
        Write {
            prepare: no_preparation,
            name: "content update",
            request: |_, i| {
                admin("PUT", &format!("/content/posts/{}", i.live), Some(json!({"data": {"hero": i.unused}})))
            },
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "content update with _rev, by an editor's token",
            request: |_, i| {
                let body =
                    json!({"data": {"title": "Edited"}, "_rev": media_usage_worker::model::content::rev_token(1)});
                request(
                    "PUT",
                    &format!("/content/posts/{}", i.live),
                    Some(&i.editor.1),
                    Some(body.to_string().as_bytes()),
                )
            },
            ok: 200,
            retry_answers: &[(409, "CONFLICT")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "draft save",
            request: |_, i| {
                admin(
                    "PUT",
                    &format!("/content/posts/{}", i.live),
                    Some(json!({"draft": true, "data": {"gallery": []}})),
                )
            },
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "publish",
            request: |_, i| admin("POST", &format!("/content/posts/{}/publish", i.drafted), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "schedule",
            request: |_, i| {
                admin(
                    "POST",
                    &format!("/content/posts/{}/schedule", i.drafted),
                    Some(json!({"scheduledAt": "2099-01-01T02:00:00+02:00"})),
                )
            },
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: scheduled,
            name: "unschedule",
            request: |_, i| admin("DELETE", &format!("/content/posts/{}/schedule", i.drafted), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: scheduled_in_the_trash,
            name: "restore of a scheduled entry",
            request: |_, i| admin("POST", &format!("/content/posts/{}/restore", i.trashed), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "unpublish",
            request: |_, i| admin("POST", &format!("/content/posts/{}/unpublish", i.live), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "trash",
            request: |_, i| admin("DELETE", &format!("/content/posts/{}", i.live), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "restore",
            request: |_, i| admin("POST", &format!("/content/posts/{}/restore", i.trashed), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "permanent delete",
            request: |_, i| admin("DELETE", &format!("/content/posts/{}?permanent=true", i.drafted), None),
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media register",
            request: |_, _| {
                admin(
                    "POST",
                    "/media",
                    Some(json!({"filename": "c.png", "mimeType": "image/png", "storageKey": "c.png"})),
                )
            },
            ok: 201,
            retry_answers: &[(409, "CONFLICT")],
            recover: |api, retry| {
                if retry.status == 409 {
                    let id = retry.body_json()["error"]["details"]["id"].as_str().unwrap().to_owned();
                    assert_eq!(data(&api.get(&format!("/media/{id}")))["item"]["storageKey"], "c.png");
                }
            },
        },
        Write {
            prepare: no_preparation,
            name: "media upload",
            request: |_, _| {
                let (ty, body) = form(&[("file", Some("new.png"), Some("image/png"), &png(3, 3, 9))]);
                let mut r = admin("POST", "/media", None);
                r.body = body;
                r.content_type = Some(ty);
                r
            },
            ok: 201,
            // The same bytes again: the row the first try wrote.
            retry_answers: &[(200, "")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media replace",
            request: |_, i| replace_request(i),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: replaced_upload,
            name: "media replace of a replaced file",
            request: |_, i| replace_request(i),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: replaced_upload,
            name: "media revert",
            request: revert_request,
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media update",
            request: |_, i| {
                admin(
                    "PUT",
                    &format!("/media/{}", i.a),
                    Some(json!({"alt": "A", "caption": "Caption", "width": 10, "height": 20})),
                )
            },
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media update by its author",
            request: |_, i| {
                let body = json!({"alt": "Mine", "width": 3}).to_string();
                request("PUT", &format!("/media/{}", i.authors_media), Some(&i.author), Some(body.as_bytes()))
            },
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media delete by its author",
            request: |_, i| request("DELETE", &format!("/media/{}", i.authors_media), Some(&i.author), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media delete",
            request: |_, i| admin("DELETE", &format!("/media/{}", i.unused), None),
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media delete of an upload",
            request: |_, i| admin("DELETE", &format!("/media/{}", i.uploaded), None),
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media delete, forced",
            request: |_, i| admin("DELETE", &format!("/media/{}?force=true", i.a), None),
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media delete, permanent, of an unused upload",
            request: |_, i| admin("DELETE", &format!("/media/{}?permanent=true", i.uploaded), None),
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: trashed_media,
            name: "media delete, permanent, from the trash",
            request: |_, i| admin("DELETE", &format!("/media/{}?permanent=true", i.unused), None),
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: trashed_media,
            name: "media restore",
            request: |_, i| admin("POST", &format!("/media/{}/restore", i.unused), None),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "media bulk delete",
            request: |_, i| admin("POST", "/media/bulk-delete", Some(json!({"ids": [i.unused, i.a, "unknown"]}))),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "collection create",
            request: |_, _| {
                admin(
                    "POST",
                    "/schema/collections",
                    Some(json!({"slug": "pages", "label": "Pages", "fields": [{"slug": "hero", "type": "image"}]})),
                )
            },
            ok: 201,
            retry_answers: &[(409, "COLLECTION_EXISTS")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "field add",
            request: |_, _| {
                admin("POST", "/schema/collections/posts/fields", Some(json!({"slug": "cover", "type": "image"})))
            },
            ok: 201,
            retry_answers: &[(409, "CONFLICT")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "field delete",
            request: |_, _| admin("DELETE", "/schema/collections/posts/fields/hero", None),
            ok: 200,
            // While the first try's deletion runs, the retry answers 200 (once it is done, 404).
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "field update (a label)",
            request: |_, _| admin("PUT", "/schema/collections/posts/fields/hero", Some(json!({"label": "Hero"}))),
            ok: 200,
            // The first try changed the field the retry read: it writes the same again.
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "field update (a type: every entry projected again)",
            request: |_, _| admin("PUT", "/schema/collections/posts/fields/hero", Some(json!({"type": "file"}))),
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "collection delete",
            request: |_, _| admin("DELETE", "/schema/collections/posts?force=true", None),
            ok: 200,
            // The first try's lease is live until `details.leaseExpiresAt`; then a tick (or the
            // DELETE again) carries the deletion on.
            retry_answers: &[(409, "CONFLICT")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "token mint",
            request: |_, _| {
                admin(
                    "POST",
                    "/admin/tokens",
                    Some(json!({"name": "bot", "role": "author", "scopes": ["content:read"]})),
                )
            },
            ok: 201,
            retry_answers: &[],
            recover: revoke_lost_mints,
        },
        Write {
            prepare: no_preparation,
            name: "token revoke",
            request: |_, i| admin("DELETE", &format!("/admin/tokens/{}", i.editor.0), None),
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: no_preparation,
            name: "repair",
            request: |_, _| {
                admin("POST", "/admin/media-usage/repair", Some(json!({"scope": "collection", "collection": "posts"})))
            },
            ok: 200,
            retry_answers: &[],
            recover: nothing,
        },
        Write {
            prepare: failed_work,
            name: "work retry",
            request: |api, i| {
                let failing = rows(api, "SELECT id FROM ec_posts WHERE slug = 'failing'")[0][0].clone();
                admin(
                    "POST",
                    "/admin/media-usage/work/retry",
                    Some(json!({"collectionId": i.posts, "contentId": failing})),
                )
            },
            ok: 200,
            retry_answers: &[(404, "NOT_FOUND")],
            recover: nothing,
        },
        Write {
            prepare: failed_deletion,
            name: "deletion retry",
            request: |api, _| {
                let id = rows(api, "SELECT collection_id FROM _emdash_media_usage_collection_deletions")[0][0].clone();
                admin("POST", "/admin/media-usage/collection-deletions/retry", Some(json!({"collectionId": id})))
            },
            ok: 200,
            retry_answers: &[(409, "WORK_CHANGED")],
            recover: nothing,
        },
    ]
}

/// Runs `w` on a copy of the fixture, metered or with `fault` injected; returns the copy, the
/// answer and the statements it issued (metered only).
fn run_write(w: &Write, fault: Option<Fault>) -> (Api, Response, u64) {
    let f = fixture();
    let api = f.api.snapshot();
    (w.prepare)(&api, &f.ids);
    let req = (w.request)(&api, &f.ids);
    let clock = FnClock(|| 0.0);
    let (r, statements) = match fault {
        None => {
            let metered = Metered::new(&api.db, &clock);
            let r = api.request_on(&metered, &req);
            (r, metered.usage().statements)
        }
        Some(fault) => (api.request_on(&Faulty::injecting(&api.db, Some(fault)), &req), 0),
    };
    (api, r, statements)
}

/// Runs every write of `writes` with `fault(k)` at each of its statements, then the client's
/// retry after a 5xx and the ticks, and compares the end state with the fault-free one. Returns
/// the runs and how many were retried.
fn converge(writes: Vec<Write>, fault: fn(u64) -> Fault) -> (usize, usize) {
    let mut runs = 0;
    let mut retried = 0;
    for w in writes {
        let (reference, r, n) = run_write(&w, None);
        assert_eq!(r.status, w.ok, "{}: {}", w.name, r.body);
        assert!(n >= 1, "{}", w.name);
        settle(&reference);
        let expected = state(&reference);
        for k in 1..=n {
            let (api, first, _) = run_write(&w, Some(fault(k)));
            let what = format!("{} with statement {k} of {n}: {:?}", w.name, fault(k));
            runs += 1;
            if first.status >= 500 {
                assert_eq!(code(&first), "INTERNAL_ERROR", "{what}: {}", first.body);
                assert!(!first.body.contains("injected"), "{what}: a 500 never carries its cause");
                // The client retries the same request once.
                let retry = api.request_on(&api.db, &(w.request)(&api, &fixture().ids));
                let answer = (retry.status, code(&retry));
                assert!(
                    retry.status == w.ok || w.retry_answers.iter().any(|(s, c)| answer == (*s, (*c).to_owned())),
                    "{what}: the retry answered {}: {}",
                    retry.status,
                    retry.body
                );
                (w.recover)(&api, &retry);
                retried += 1;
            } else {
                // A success is a success: the write happened (the fault hit a step after it that
                // the ticks redo, such as the after-write projection).
                assert_eq!(first.status, w.ok, "{what}: {}", first.body);
            }
            settle(&api);
            assert_same(&state(&api), &expected, &what);
        }
        assert_index_is_a_projection_from_scratch(&reference, w.name);
    }
    (runs, retried)
}

#[test]
fn every_write_converges_after_a_commit_unknown_at_any_statement_and_the_clients_retry() {
    let (runs, retried) = converge(writes(), Fault::CommitUnknown);
    assert!(runs >= 100 && retried >= 20, "{runs} runs, {retried} retried");
}

#[test]
fn every_content_operation_converges_after_a_crash_at_any_statement_and_the_clients_retry() {
    let ops: Vec<Write> = writes().into_iter().filter(|w| CONTENT_OPERATIONS.contains(&w.name)).collect();
    assert_eq!(ops.len(), CONTENT_OPERATIONS.len());
    let (runs, retried) = converge(ops, Fault::Crash);
    assert!(runs >= 10 && retried >= 3, "{runs} runs, {retried} retried");
}

#[test]
fn every_change_of_a_file_converges_after_a_crash_at_any_statement_and_the_clients_retry() {
    let ops: Vec<Write> = writes().into_iter().filter(|w| FILE_CHANGES.contains(&w.name)).collect();
    assert_eq!(ops.len(), FILE_CHANGES.len());
    let (runs, retried) = converge(ops, Fault::Crash);
    assert!(runs >= 10 && retried >= 3, "{runs} runs, {retried} retried");
}

// ---------------------------------------------------------------------------------------------
// Lane steps.

/// Background work for every lane, on top of the fixture: entries written behind the API
/// (work, one with a draft), a collection whose capture was lost under a repair run (repair),
/// the fixture's deletion made due again (deletion), a field of that collection deleted
/// (fields), a stored object no row names, old enough to sweep (storage), and an uploaded item
/// long in the trash (purge, once coverage is complete again).
fn background() -> &'static Api {
    thread_local! {
        static BACKGROUND: &'static Api = Box::leak(Box::new(build_background()));
    }
    BACKGROUND.with(|b| *b)
}

fn build_background() -> Api {
    let f = fixture();
    let api = f.api.snapshot();
    let a = &f.ids.a;
    // The upload nothing uses, in the trash long ago (while coverage is complete: a safe delete).
    data(&api.delete(&format!("/media/{}", f.ids.uploaded)));
    exec_sql(&api, "UPDATE media SET deleted_at = '2001-01-01T00:00:00.000Z' WHERE deleted_at IS NOT NULL");
    // Versions nobody links (the items are used by id only), replaced long ago: the purge takes
    // them, row then object.
    for (id, salt) in [(&f.ids.unused, 21), (a, 22)] {
        let (ty, body) = form(&[("file", Some("next.png"), Some("image/png"), &png(6, 6, salt))]);
        let r = api
            .request("POST", &format!("/media/{id}/replace"), Some(ADMIN), Some(&body), |r| r.content_type = Some(ty));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    exec_sql(&api, "UPDATE media_versions SET replaced_at = '2001-01-01T00:00:00.000Z'");
    for i in 0..5 {
        exec_sql(
            &api,
            &format!(
                "INSERT INTO ec_posts (id, slug, status, hero, gallery) VALUES ('q{i}', 'q{i}', 'published', '{a}', '[{{\"image\":\"b.png-missing\"}}]')"
            ),
        );
    }
    exec_sql(
        &api,
        &format!(
            "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('rq', 'posts', 'q0', '{{\"hero\":\"{a}\",\"gallery\":[]}}');
             UPDATE ec_posts SET draft_revision_id = 'rq' WHERE id = 'q0';"
        ),
    );
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "pages", "label": "Pages", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    for i in 0..3 {
        exec_sql(&api, &format!("INSERT INTO ec_pages (id, slug, hero) VALUES ('p{i}', 'p{i}', '{a}')"));
    }
    exec_sql(&api, "DELETE FROM _emdash_media_usage_work WHERE collection_id IN (SELECT id FROM _emdash_collections WHERE slug = 'pages')");
    let pages =
        rows(&api, "SELECT id FROM _emdash_collections WHERE slug = 'pages'")[0][0].as_str().unwrap().to_owned();
    block_on(media_usage_worker::repo::repair::begin(&api.db, &[pages.as_str()], crate::support::rules().id()))
        .unwrap();
    failed_deletion(&api, &f.ids);
    exec_sql(&api, "UPDATE _emdash_media_usage_collection_deletions SET state = 'pending', attempt_count = 0");
    // Scheduled publishes (schedule): the published entry with a draft, a new draft, and a
    // schedule whose entry went to the trash; then their time passes.
    data(
        &api.post(
            &format!("/content/posts/{}/schedule", f.ids.drafted),
            &json!({"scheduledAt": "2099-01-01T00:00:00Z"}),
        ),
    );
    let soon = entry(&api, "soon", "draft", json!({"title": "Soon", "hero": a}));
    data(&api.post(&format!("/content/posts/{soon}/schedule"), &json!({"scheduledAt": "2099-01-01T00:00:00Z"})));
    let gone = entry(&api, "gone", "draft", json!({"title": "Gone"}));
    data(&api.post(&format!("/content/posts/{gone}/schedule"), &json!({"scheduledAt": "2099-01-01T00:00:00Z"})));
    data(&api.delete(&format!("/content/posts/{gone}")));
    exec_sql(
        &api,
        "UPDATE ec_posts SET scheduled_at = '2001-01-01T00:00:00.000Z' WHERE scheduled_at IS NOT NULL;
         UPDATE _emdash_content_schedule SET scheduled_at = '2001-01-01T00:00:00.000Z';",
    );
    // A field deletion whose walk and column drop the fields lane runs.
    data(&api.delete("/schema/collections/pages/fields/hero"));
    // B's file replaced, an entry linking it by URL in its live data and its draft, and a
    // relink of its links asked for (relink).
    let linked = entry(&api, "linked", "published", json!({"title": "/_emdash/api/media/file/b.png"}));
    let draft = json!({"draft": true, "data": {"title": "draft: https://cdn.example/media/b.png"}});
    data(&api.put(&format!("/content/posts/{linked}"), &draft));
    let b = rows(&api, "SELECT id FROM media WHERE storage_key = 'b.png'")[0][0].as_str().unwrap().to_owned();
    crate::relink::replace_by_sql(&api, &b, "b-v2.png");
    assert_eq!(api.call("POST", &format!("/media/{b}/relink"), Some(ADMIN), None).status, 202);
    let store = api.storage.as_ref().unwrap();
    let bytes = png(5, 5, 5);
    let sha: [u8; 32] = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes).into()
    };
    block_on(store.put("orphan.png", bytes, "image/png", sha)).unwrap();
    assert!(store.keys().contains(&"orphan.png".to_owned()));
    store.now_ms.set(store.now_ms.get() + 25.0 * HOUR_MS);
    api
}

#[test]
fn every_lane_step_converges_after_a_commit_unknown_at_any_statement_and_the_next_ticks() {
    // The fault-free run: statements per tick (time passing between ticks), and its end state.
    let probe = background().snapshot();
    // The state before each tick, to start each run from.
    let mut before = Vec::new();
    let mut per_tick = Vec::new();
    let mut lanes = std::collections::BTreeSet::new();
    loop {
        before.push(probe.snapshot());
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&probe.db, &clock);
        let report = tick_on(&probe, &metered, &small_tick());
        assert!(report.error.is_none(), "{:?}", report.error);
        if report.outcome == TickOutcome::Idle {
            break;
        }
        lanes.extend(report.lanes.iter().map(|l| l.to_string()));
        per_tick.push(metered.usage().statements);
        time_passes(&probe.db);
        assert!(per_tick.len() < 60, "the background work does not finish");
    }
    assert_eq!(
        lanes.iter().map(String::as_str).collect::<Vec<_>>(),
        ["deletion", "fields", "purge", "relink", "repair", "schedule", "storage", "work"],
        "every lane has work: {per_tick:?}"
    );
    settle(&probe);
    let expected = state(&probe);
    let (mut runs, mut failed) = (0, 0);
    for (i, n) in per_tick.iter().enumerate() {
        for k in 1..=*n {
            let api = before[i].snapshot();
            let report = tick_on(&api, &Faulty::commit_unknown(&api.db, k), &small_tick());
            failed += usize::from(report.error.is_some());
            settle(&api);
            assert_same(&state(&api), &expected, &format!("tick {i}, statement {k} of {n} commit-unknown"));
            runs += 1;
        }
    }
    assert!(runs >= 40 && failed * 2 >= runs, "{runs} runs ({failed} saw the error) over {per_tick:?}");
    assert_index_is_a_projection_from_scratch(&probe, "background");
}
