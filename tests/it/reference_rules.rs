//! What counts as a use (the reference rules): every rule at every position, live and draft,
//! through the API; the upgrade of an index built under the first rules; media registered after
//! the content that links to it; and the cost of large documents.

use futures::executor::block_on;
use media_usage_worker::clock::MonotonicClock;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::repo::lease;
use media_usage_worker::usage::extract::Rules;
use media_usage_worker::usage::project::{self, JobOutcome, JOB_MAX_STATEMENTS};
use serde_json::{json, Value as Json};

use crate::support::{code, data, query_plan as plan, scalar, text, used_in, Api, ADMIN};

const FIELDS: &str = r#"[
  {"slug": "title", "type": "string"},
  {"slug": "hero", "type": "image"},
  {"slug": "body", "type": "portableText"},
  {"slug": "extra", "type": "json"},
  {"slug": "notes", "type": "text"},
  {"slug": "downloads", "type": "repeater", "subFields": [{"slug": "doc", "type": "file"}, {"slug": "caption", "type": "string"}]}
]"#;

fn collection(api: &Api, slug: &str) {
    let fields: Json = serde_json::from_str(FIELDS).unwrap();
    data(&api.post("/schema/collections", &json!({"slug": slug, "label": slug, "fields": fields})));
}

/// Registers a media item stored elsewhere (JSON); returns its id.
fn media(api: &Api, key: &str, mime: &str) -> String {
    let d = data(&api.post("/media", &json!({"filename": key, "mimeType": mime, "storageKey": key})));
    d["item"]["id"].as_str().unwrap().to_owned()
}

fn entry(api: &Api, collection: &str, slug: &str, status: &str, d: &Json) -> String {
    let r = api.post(&format!("/content/{collection}"), &json!({"slug": slug, "status": status, "data": d}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn occurrences_of_entry(api: &Api, id: &str) -> i64 {
    scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage WHERE source_key LIKE 'content:%:{id}:%'"))
}

fn status(api: &Api) -> Json {
    data(&api.get("/admin/media-usage/status"))
}

fn collection_status(api: &Api, slug: &str) -> Json {
    status(api)["collections"].as_array().unwrap().iter().find(|c| c["collection"] == slug).unwrap().clone()
}

struct Library {
    a: String,
    b: String,
    c: String,
}

/// A collection `posts` and three media items: A (`a.png`), B (`dir/b 1.pdf`), C (`c.jpg`).
fn library(api: &Api) -> Library {
    collection(api, "posts");
    Library {
        a: media(api, "a.png", "image/png"),
        b: media(api, "dir/b 1.pdf", "application/pdf"),
        c: media(api, "c.jpg", "image/jpeg"),
    }
}

#[test]
fn every_rule_at_every_position_live_and_draft_is_used_and_blocks_the_safe_delete() {
    let api = Api::new();
    let m = library(&api);
    let (a, b, c) = (m.a.as_str(), m.b.as_str(), m.c.as_str());
    let url_a = "/_emdash/api/media/file/a.png";
    // (data, the media it uses, path, reference type)
    let rows: Vec<(Json, &str, &str, &str)> = vec![
        (json!({"hero": a}), a, "hero", "image_field"),
        (json!({"hero": {"id": c, "mimeType": "image/jpeg"}}), c, "hero", "image_field"),
        (json!({"downloads": [{"caption": "x"}, {"doc": {"id": b}}]}), b, "downloads[1].doc", "file_field"),
        (json!({"body": [{"_type": "image", "asset": {"_ref": a}}]}), a, "body[0].asset._ref", "portable_text_image"),
        (
            json!({"body": [{"_type": "block", "children": [{"_type": "span", "text": "hi"}, {"_type": "image", "asset": {"_ref": c}}]}]}),
            c,
            "body[0].children[1].asset._ref",
            "portable_text_image",
        ),
        (
            json!({"body": [{"_type": "block"}, {"_type": "gallery", "images": [{"asset": {"id": a}}, {"asset": {"_ref": c}}]}]}),
            c,
            "body[1].images[1].asset._ref",
            "embedded_asset",
        ),
        (json!({"extra": {"cover": {"asset": {"_ref": b}}}}), b, "extra.cover.asset._ref", "embedded_asset"),
        (json!({"extra": {"ogImage": c}}), c, "extra.ogImage", "embedded_id"),
        (json!({"extra": c}), c, "extra", "embedded_id"),
        (
            json!({"extra": {"asset": {"_ref": "99999999999999999999999999999999", "id": b}}}),
            b,
            "extra.asset.id",
            "embedded_id",
        ),
        (json!({"title": a}), a, "title", "embedded_id"),
        (json!({"downloads": [{"caption": b}]}), b, "downloads[0].caption", "embedded_id"),
        (json!({"extra": {"ogImage": format!("https://any.example{url_a}")}}), a, "extra.ogImage", "embedded_url"),
        (json!({"notes": format!("<p><img src=\"{url_a}\" alt=\"\"></p>")}), a, "notes", "embedded_url"),
        (json!({"notes": format!("Look: ![a]({url_a}?w=640).")}), a, "notes", "embedded_url"),
        (json!({"notes": "/_emdash/api/media/file/dir%2Fb%201.pdf"}), b, "notes", "embedded_url"),
        (json!({"notes": "https://cdn.example/media/dir/b%201.pdf"}), b, "notes", "embedded_url"),
        (json!({"extra": ["//cdn.example/media/c.jpg"]}), c, "extra[0]", "embedded_url"),
        (
            json!({"body": [{"_type": "block", "markDefs": [{"_type": "link", "_key": "k", "href": url_a}], "children": []}]}),
            a,
            "body[0].markDefs[0].href",
            "embedded_url",
        ),
        (json!({"hero": {"provider": "external", "id": "x1", "url": url_a}}), a, "hero.url", "embedded_url"),
    ];
    for (i, (d, media_id, path, kind)) in rows.iter().enumerate() {
        for variant in ["live", "draft"] {
            let slug = format!("row-{i}-{variant}");
            let id = if variant == "live" {
                entry(&api, "posts", &slug, "published", d)
            } else {
                let id = entry(&api, "posts", &slug, "published", &json!({"title": "x"}));
                data(&api.put(&format!("/content/posts/{id}"), &json!({"data": d, "draft": true})));
                id
            };
            let (items, coverage) = used_in(&api, media_id);
            assert_eq!(coverage, "complete", "{slug}");
            let listed =
                items.iter().find(|(cid, _)| *cid == id).unwrap_or_else(|| panic!("{slug}: {d} not in {items:?}"));
            assert!(listed.1.contains(&(path.to_string(), kind.to_string())), "{slug}: {d}: {:?}", listed.1);
            let r = api.delete(&format!("/media/{media_id}"));
            assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".to_owned()), "{slug}");
            // Gone with its entry: the next row's refusal is its own.
            assert_eq!(
                api.call("DELETE", &format!("/content/posts/{id}?permanent=true"), Some(ADMIN), None).status,
                200
            );
            assert!(used_in(&api, media_id).0.is_empty(), "{slug}");
        }
    }
}

#[test]
fn strings_that_name_no_media_item_add_nothing_and_cost_nothing() {
    let api = Api::new();
    let m = library(&api);
    let decoys = json!({
        "notes": "https://elsewhere.example/media/a.png /_emdash/api/media/file/a.png.bak /_emdash/api/media/file/a.png2 \
                  https://cdn.example/other/a.png /media/file/a.png",
        "hero": {"provider": "external", "id": "photo-1"},
        "downloads": [{"caption": format!("{}0", m.a)}],
        "title": format!("x{}", m.c),
        "body": [{"_type": "image", "asset": {"_ref": "   "}}, {"_type": "image", "asset": {"url": "https://x.example/a.png"}}],
        "extra": {"id": format!("{}x", m.a), "list": [format!("see {}-2", m.c), 1, true, null, "0123456789abcdef0123456789abcdef"]},
    });
    let id = entry(&api, "posts", "decoys", "published", &decoys);
    assert_eq!(occurrences_of_entry(&api, &id), 0);
    for media_id in [&m.a, &m.b, &m.c] {
        assert!(used_in(&api, media_id).0.is_empty());
    }
    // The unknown keys are remembered on the source row (no row of their own), so a later
    // registration under one of them finds the entry.
    let pending =
        text(&api.db, "SELECT pending_keys FROM _emdash_media_usage_sources WHERE source_variant = 'columns'");
    let pending: Vec<String> = serde_json::from_str(&pending.unwrap()).unwrap();
    assert!(pending.contains(&"a.png.bak".to_owned()) && pending.contains(&"a.png2".to_owned()), "{pending:?}");
    assert!(!pending.contains(&"a.png".to_owned()), "a key the library has is no pending key");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    // Safe deletes go through: the decoys protect nothing.
    assert_eq!(api.delete(&format!("/media/{}", m.b)).status, 200);
}

#[test]
fn an_index_built_under_the_first_rules_is_stale_until_the_ticks_reproject_it() {
    let mut api = Api::new();
    let current = api.config.clone();
    api.config.background = api.config.background.clone().with_rules(Rules::v1());
    let m = library(&api);
    collection(&api, "empty");
    let unused = media(&api, "unused.png", "image/png");
    let body = json!([
        {"_type": "image", "asset": {"_ref": m.a}},
        {"_type": "block", "children": [{"_type": "image", "asset": {"_ref": m.c}}]}
    ]);
    let id = entry(&api, "posts", "old", "published", &json!({"body": body, "extra": {"og": m.b}}));
    // The first rules see the top-level block only.
    assert_eq!(used_in(&api, &m.a).0.len(), 1);
    assert_eq!(used_in(&api, &m.c), (vec![], "complete".to_owned()));
    assert_eq!(collection_status(&api, "posts")["rulesVersion"], "1");

    // The new rules are deployed: nothing is trusted until re-projected.
    api.config = current;
    let rules = api.config.background.projection.rules.id().to_owned();
    assert_eq!(status(&api)["status"], "stale");
    assert_eq!(collection_status(&api, "posts")["status"], "stale");
    assert_eq!(collection_status(&api, "empty")["status"], "stale", "proven under the old rules too");
    assert_eq!(used_in(&api, &m.c), (vec![], "stale".to_owned()));
    let r = api.delete(&format!("/media/{unused}"));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".to_owned()));
    // Only cron ticks, no operator.
    api.drain();
    let st = status(&api);
    assert_eq!(st["status"], "complete", "{st}");
    for c in st["collections"].as_array().unwrap() {
        assert_eq!(c["rulesVersion"], rules.as_str(), "{c}");
    }
    let (items, coverage) = used_in(&api, &m.c);
    assert_eq!(coverage, "complete");
    assert_eq!(
        items,
        [(id.clone(), vec![("body[1].children[0].asset._ref".to_owned(), "portable_text_image".to_owned())])]
    );
    assert_eq!(used_in(&api, &m.b).0[0].1, [("extra.og".to_owned(), "embedded_id".to_owned())]);
    let r = api.delete(&format!("/media/{}", m.c));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".to_owned()));
    assert_eq!(api.delete(&format!("/media/{unused}")).status, 200);
    // Nothing is left running: the runs ended, and another drain finds nothing to do.
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
}

#[test]
fn coverage_that_failed_or_never_existed_waits_for_an_operator_under_new_rules() {
    let api = Api::new();
    library(&api);
    collection(&api, "pages");
    entry(&api, "posts", "p", "published", &json!({"title": "p"}));
    entry(&api, "pages", "q", "published", &json!({"title": "q"}));
    api.db
        .connection()
        .execute_batch(
            "UPDATE _emdash_media_usage_index_status SET rules_version = '1';
             UPDATE _emdash_media_usage_index_status SET status = 'failed' WHERE scope_key = 'posts';
             UPDATE _emdash_media_usage_index_status SET status = 'never' WHERE scope_key = 'pages';",
        )
        .unwrap();
    api.drain();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_reconciliations"), 0);
    assert_eq!(
        (collection_status(&api, "posts")["status"].clone(), collection_status(&api, "pages")["status"].clone()),
        (json!("failed"), json!("never"))
    );
    // An operator's repair runs under the deployed rules and ends complete.
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "all"})));
    api.drain();
    let st = status(&api);
    assert_eq!(st["status"], "complete", "{st}");
    assert_eq!(collection_status(&api, "posts")["rulesVersion"], api.config.background.projection.rules.id());
}

#[test]
fn a_run_under_other_rules_is_restarted_under_the_deployed_ones() {
    let api = Api::new();
    library(&api);
    let id = entry(&api, "posts", "p", "published", &json!({"title": "p"}));
    let cid = text(&api.db, "SELECT id FROM _emdash_collections WHERE slug = 'posts'").unwrap();
    // A run started by an older deployment.
    block_on(media_usage_worker::repo::repair::begin(&api.db, &[cid.as_str()], "1")).unwrap();
    assert_eq!(collection_status(&api, "posts")["status"], "running");
    api.drain();
    assert_eq!(collection_status(&api, "posts")["status"], "complete");
    assert_eq!(collection_status(&api, "posts")["rulesVersion"], api.config.background.projection.rules.id());
    assert_eq!(occurrences_of_entry(&api, &id), 0);
}

#[test]
fn media_registered_after_the_content_shows_where_it_is_linked() {
    let api = Api::new();
    library(&api);
    collection(&api, "pages");
    let linked =
        entry(&api, "posts", "linked", "published", &json!({"notes": "<img src='/_emdash/api/media/file/late.png'>"}));
    let public =
        entry(&api, "posts", "public", "published", &json!({"extra": {"img": "https://cdn.example/media/late.png"}}));
    let draft = entry(&api, "posts", "draft", "published", &json!({"title": "d"}));
    data(&api.put(
        &format!("/content/posts/{draft}"),
        &json!({"data": {"notes": "/_emdash/api/media/file/late.png"}, "draft": true}),
    ));
    // Linked by an edit (the source row is updated, not inserted).
    let edited = entry(&api, "posts", "edited", "published", &json!({"title": "e"}));
    data(
        &api.put(
            &format!("/content/posts/{edited}"),
            &json!({"data": {"title": "see /_emdash/api/media/file/late.png"}}),
        ),
    );
    entry(&api, "pages", "elsewhere", "published", &json!({"notes": "/_emdash/api/media/file/other.png"}));
    let unused = media(&api, "unused.png", "image/png");
    assert_eq!(status(&api)["status"], "complete");

    let late = media(&api, "late.png", "image/png");
    // Right after the registration the index does not know yet, and says so.
    assert_eq!(collection_status(&api, "posts")["status"], "stale");
    assert_eq!(collection_status(&api, "pages")["status"], "complete", "no entry there names late.png");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 4);
    let r = api.delete(&format!("/media/{unused}"));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".to_owned()));
    api.drain();
    let (items, coverage) = used_in(&api, &late);
    assert_eq!(coverage, "complete");
    let mut ids: Vec<&str> = items.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    let mut want = vec![linked.as_str(), public.as_str(), draft.as_str(), edited.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want);
    assert!(items.iter().all(|(_, o)| o.iter().all(|(_, t)| t == "embedded_url")));

    // Deleted for good by force and registered again under the same key (a new id): still found.
    assert_eq!(api.call("DELETE", &format!("/media/{late}?force=true&permanent=true"), Some(ADMIN), None).status, 200);
    api.drain();
    let again = media(&api, "late.png", "image/png");
    api.drain();
    assert_eq!(used_in(&api, &again).0.len(), 4);
    assert_eq!(api.delete(&format!("/media/{unused}")).status, 200);
}

/// An entry written behind the API (its body is larger than a request may be): captured, queued.
fn insert_raw(api: &Api, id: &str, body: &Json, extra: &Json) {
    api.db
        .connection()
        .execute(
            "INSERT INTO ec_posts (id, slug, status, body, extra) VALUES (?1, ?1, 'published', ?2, ?3)",
            [id, &body.to_string(), &extra.to_string()],
        )
        .unwrap();
}

#[test]
fn a_megabyte_of_portable_text_and_five_thousand_json_strings_index_in_one_job() {
    let api = Api::new();
    let m = library(&api);
    let filler = "lorem ipsum dolor sit amet ".repeat(36);
    let blocks: Vec<Json> = (0..1000)
        .map(|i| {
            let text = match i {
                100 => format!("{filler} /_emdash/api/media/file/a.png"),
                200 => format!("{filler} /_emdash/api/media/file/missing-{i}.png"),
                _ => filler.clone(),
            };
            json!({"_type": "block", "_key": format!("k{i}"), "children": [{"_type": "span", "_key": format!("s{i}"), "text": text}]})
        })
        .collect();
    let body = Json::Array(blocks);
    assert!(body.to_string().len() > 1_000_000, "{}", body.to_string().len());
    let strings: Vec<Json> = (0..5000)
        .map(|i| match i {
            10 => json!(m.c),
            _ => json!(format!("value {i:05}")),
        })
        .collect();
    let extra = Json::Array(strings);
    assert!(extra.to_string().len() > 50_000);
    insert_raw(&api, "big", &body, &extra);
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let outcome = block_on(project::process_next(&metered, None, &api.config.background.projection)).unwrap();
    assert_eq!(outcome, Some(JobOutcome::Published));
    let usage = metered.usage();
    assert!(usage.statements <= JOB_MAX_STATEMENTS, "{usage:?}");
    assert!(usage.binds < 40, "one bind per lookup list, not one per candidate: {usage:?}");
    assert_eq!(used_in(&api, &m.a).0[0].1, [("body[100].children[0].text".to_owned(), "embedded_url".to_owned())]);
    assert_eq!(used_in(&api, &m.c).0[0].1, [("extra[10]".to_owned(), "embedded_id".to_owned())]);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 2);
}

#[test]
fn a_job_without_candidate_strings_issues_no_lookup() {
    let api = Api::new();
    let m = library(&api);
    insert_raw(&api, "plain", &json!([{"_type": "image", "asset": {"_ref": m.a}}]), &json!({"n": 1}));
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    assert_eq!(
        block_on(project::process_next(&metered, None, &api.config.background.projection)).unwrap(),
        Some(JobOutcome::Published)
    );
    let with_lookup = metered.usage().statements;
    insert_raw(&api, "named", &json!([{"_type": "image", "asset": {"_ref": m.a}}]), &json!({"n": m.c}));
    let metered = Metered::new(&api.db, &clock);
    assert_eq!(
        block_on(project::process_next(&metered, None, &api.config.background.projection)).unwrap(),
        Some(JobOutcome::Published)
    );
    assert_eq!(metered.usage().statements, with_lookup + 1, "a candidate string costs one lookup statement");
}

#[test]
fn a_run_under_the_deployed_rules_is_left_to_finish_while_it_waits() {
    let api = Api::new();
    library(&api);
    entry(&api, "posts", "p", "published", &json!({"title": "p"}));
    let cid = text(&api.db, "SELECT id FROM _emdash_collections WHERE slug = 'posts'").unwrap();
    let rules = api.config.background.projection.rules.clone();
    api.db.connection().execute_batch("UPDATE _emdash_media_usage_index_status SET rules_version = '1'").unwrap();
    block_on(media_usage_worker::repo::repair::begin(&api.db, &[cid.as_str()], rules.id())).unwrap();
    // The run waits (not due): a look for collections needing the rules must not restart it.
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_reconciliations SET next_attempt_at = '2999-01-01T00:00:00.000Z'")
        .unwrap();
    let token = || text(&api.db, "SELECT run_token FROM _emdash_media_usage_reconciliations");
    let before = token();
    assert_eq!(block_on(media_usage_worker::usage::repair::step_next(&api.db, None, &rules)).unwrap(), None);
    assert_eq!(token(), before);
    // Under other rules it is restarted at once.
    let other = Rules::current(Some("https://other.example/media"));
    let started = block_on(media_usage_worker::usage::repair::step_next(&api.db, None, &other)).unwrap();
    assert_eq!(started, Some(media_usage_worker::usage::repair::StepOutcome::Started { n: 1 }));
    assert_ne!(token(), before);
}

#[test]
fn the_lookup_and_the_re_queue_read_no_table_that_grows_with_content() {
    let api = Api::new();
    library(&api);
    // A large second collection and a big library: the plans must not scan them.
    collection(&api, "big");
    api.db
        .connection()
        .execute_batch(
            "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 5000)
             INSERT INTO media (id, filename, mime_type, storage_key) SELECT 'm' || i, 'f', 'image/png', 'k' || i FROM c;
             WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 5000)
             INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant, current_generation)
             SELECT 'content:x:' || i || ':columns', 'x', 'big', 'e' || i, 'columns', 'g' FROM c;
             ANALYZE;",
        )
        .unwrap();
    let scans = |sql: &str| -> Vec<String> {
        plan(&api.db, sql)
            .into_iter()
            // The partial index holds only sources with dangling file links: scanning it is the point.
            .filter(|d| !d.ends_with("USING INDEX idx__emdash_media_usage_sources_pending"))
            .filter(|d| {
                d.starts_with("SCAN")
                    && ["media", "s", "u", "_emdash_media_usage_sources", "_emdash_media_usage"]
                        .iter()
                        .any(|t| d == &format!("SCAN {t}") || d.starts_with(&format!("SCAN {t} ")))
            })
            .collect()
    };
    // The re-queue carries the work queue's upsert clause (a lease fragment).
    let enqueue_linking = lease::render(include_str!("../../src/sql/media/enqueue_linking.sql"), &[]);
    for sql in [
        include_str!("../../src/sql/media/lookup.sql"),
        enqueue_linking.as_str(),
        include_str!("../../src/sql/media/stale_while_queued.sql"),
        include_str!("../../src/sql/repair/needs_rules.sql"),
    ] {
        assert_eq!(scans(sql), Vec::<String>::new(), "{sql}\n{:#?}", plan(&api.db, sql));
    }
    let lookup = plan(&api.db, include_str!("../../src/sql/media/lookup.sql"));
    assert!(lookup.iter().any(|d| d.contains("PRIMARY KEY") || d.contains("sqlite_autoindex_media_1")), "{lookup:#?}");
    let requeue = plan(&api.db, &enqueue_linking);
    assert!(requeue.iter().any(|d| d.contains("idx__emdash_media_usage_sources_pending")), "{requeue:#?}");
    assert!(requeue.iter().any(|d| d.contains("idx__emdash_media_usage_media_source_generation")), "{requeue:#?}");
}

#[test]
fn admission_counts_resolved_references_only() {
    let mut api = Api::new();
    let admission = media_usage_worker::usage::project::Admission { max_occurrences: 2 };
    api.config.background = api.config.background.clone().with_admission(admission);
    let m = library(&api);
    // Two uses and a hundred strings that look like ids or file URLs but name nothing.
    let decoys: Vec<String> = (0..100)
        .map(|i| if i % 2 == 0 { format!("{i:032x}") } else { format!("/_emdash/api/media/file/nothing-{i}.png") })
        .collect();
    let id =
        entry(&api, "posts", "admitted", "published", &json!({"hero": m.a, "extra": {"og": m.c, "decoys": decoys}}));
    assert_eq!(occurrences_of_entry(&api, &id), 2);
    assert_eq!(status(&api)["status"], "complete");
    // A third real use is over the limit: refused before anything is written.
    let r = api.post("/content/posts", &json!({"slug": "over", "data": {"hero": m.a, "extra": [m.b, m.c, decoys]}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
    assert!(r.body.contains("references 3 media items; at most 2"), "{}", r.body);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM ec_posts WHERE slug = 'over'"), 0);
    assert_eq!(status(&api)["status"], "complete");
}

#[test]
fn deleting_media_says_whether_there_was_a_row() {
    let api = Api::new();
    let m = library(&api);
    assert!(block_on(media_usage_worker::repo::media::delete(&api.db, "no-such-media")).unwrap().is_none());
    assert!(block_on(media_usage_worker::repo::media::delete(&api.db, &m.a)).unwrap().is_some());
    assert!(block_on(media_usage_worker::repo::media::delete(&api.db, &m.a)).unwrap().is_none());
}

#[test]
fn strings_that_name_nothing_never_make_an_entry_unindexable() {
    let api = Api::new();
    let m = library(&api);
    // 50,000 distinct id-like strings (about 1.7 MB as JSON: more than one bound value holds, as
    // a live entry and its draft may together bring) and one real use: indexed in one job.
    let mut ids: Vec<Json> = (0..50_000).map(|i| json!(format!("{i:032x}"))).collect();
    ids.push(json!(m.c));
    insert_raw(&api, "huge", &json!([]), &Json::Array(ids));
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let outcome = block_on(project::process_next(&metered, None, &api.config.background.projection)).unwrap();
    assert_eq!(outcome, Some(JobOutcome::Published));
    assert!(metered.usage().statements <= JOB_MAX_STATEMENTS);
    assert_eq!(used_in(&api, &m.c).0[0].1, [("extra[50000]".to_owned(), "embedded_id".to_owned())]);
}

#[test]
fn coverage_under_rules_before_or_after_the_deployed_ones_is_repaired_and_a_deleting_collections_is_not() {
    let api = Api::new();
    for slug in ["older", "newer", "proven", "going"] {
        collection(&api, slug);
    }
    let rules = api.config.background.projection.rules.clone();
    let id = rules.id().to_owned();
    let set = |slug: &str, sql: &str| {
        api.db
            .connection()
            .execute(&format!("UPDATE _emdash_media_usage_index_status SET {sql} WHERE scope_key = ?1"), [slug])
            .unwrap();
    };
    // Proven under rules whose ids sort before and after the deployed one (an upgrade, a
    // rollback), under the deployed ones, and a collection being deleted under older ones.
    assert!("!" < id.as_str() && id.as_str() < format!("{id}~").as_str());
    set("older", "rules_version = '!'");
    set("newer", &format!("rules_version = '{id}~'"));
    set("going", "rules_version = '!', capture_state = 'deleting'");
    let needing = || {
        let mut ids = block_on(media_usage_worker::repo::repair::needing_rules(&api.db, &id)).unwrap();
        ids.sort();
        ids
    };
    let mut expected =
        vec![crate::support::collection_id(&api.db, "older"), crate::support::collection_id(&api.db, "newer")];
    expected.sort();
    assert_eq!(needing(), expected);
    let started = block_on(media_usage_worker::usage::repair::step_next(&api.db, None, &rules)).unwrap();
    assert_eq!(started, Some(media_usage_worker::usage::repair::StepOutcome::Started { n: 2 }));
    // Started: their runs are under the deployed rules, so they are not started again.
    assert_eq!(needing(), Vec::<String>::new());
    assert_eq!(collection_status(&api, "proven")["status"], "complete");
}
