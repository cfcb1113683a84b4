//! Content lifecycle through the pure API handlers on SQLite.

use serde_json::json;

use crate::support::{code, data, Api};

fn setup() -> Api {
    let api = Api::new();
    let r = api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [
            {"slug": "title", "type": "string", "required": true},
            {"slug": "hero", "type": "image"},
            {"slug": "views", "type": "number"},
            {"slug": "featured", "type": "boolean"},
            {"slug": "sections", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}
        ]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    api
}

#[test]
fn create_read_update_with_versions_and_revs() {
    let api = setup();
    let r = api.post(
        "/content/posts",
        &json!({"slug": "hello", "data": {"title": "Hello", "hero": {"id": "m1"}, "views": 3, "featured": true}}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let item = data(&r)["item"].clone();
    assert_eq!(item["version"], 1);
    assert_eq!(item["status"], "draft");
    assert_eq!(item["locale"], "en");
    assert_eq!(item["translationGroup"], item["id"]);
    assert_eq!(item["data"]["hero"], json!({"id": "m1"}));
    assert_eq!(item["data"]["featured"], true);
    let id = item["id"].as_str().unwrap().to_owned();

    let got = data(&api.get(&format!("/content/posts/{id}")));
    let rev = got["_rev"].as_str().unwrap().to_owned();
    let upd = api.put(&format!("/content/posts/{id}"), &json!({"data": {"views": 4}, "_rev": rev}));
    assert_eq!(data(&upd)["item"]["version"], 2);
    assert_eq!(data(&upd)["item"]["data"]["title"], "Hello", "untouched fields stay");
    let stale = api.put(&format!("/content/posts/{id}"), &json!({"data": {"views": 5}, "_rev": rev}));
    assert_eq!((stale.status, code(&stale)), (409, "CONFLICT".into()));
    let bad_rev = api.put(&format!("/content/posts/{id}"), &json!({"_rev": "garbage!"}));
    assert_eq!(code(&bad_rev), "VALIDATION_ERROR");
}

#[test]
fn drafts_publish_unpublish_trash_restore_and_delete() {
    let api = setup();
    let id = data(&api.post("/content/posts", &json!({"slug": "a", "status": "published", "data": {"title": "Live"}})))
        ["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/content/posts/{id}");
    let draft = data(&api.put(&path, &json!({"draft": true, "slug": "a2", "data": {"title": "Draft"}})));
    assert_eq!(draft["item"]["data"]["title"], "Live", "a draft save leaves live columns alone");
    assert_eq!(draft["item"]["slug"], "a");
    assert!(draft["item"]["draftRevisionId"].is_string());
    assert_eq!(draft["item"]["version"], 2);
    // A second draft save builds on the first.
    data(&api.put(&path, &json!({"draft": true, "data": {"views": 9}})));

    let published = data(&api.post(&format!("{path}/publish"), &json!({})));
    assert_eq!(published["item"]["data"]["title"], "Draft");
    assert_eq!(published["item"]["data"]["views"], 9.0);
    assert_eq!(published["item"]["slug"], "a2");
    assert!(published["item"]["draftRevisionId"].is_null());
    assert!(published["item"]["liveRevisionId"].is_string());
    assert_eq!(published["item"]["status"], "published");

    let unpub = data(&api.post(&format!("{path}/unpublish"), &json!({})));
    assert_eq!(unpub["item"]["status"], "draft");
    let trashed = data(&api.delete(&path));
    assert!(trashed["item"]["deletedAt"].is_string());
    let listed = data(&api.get("/content/posts"));
    assert_eq!(listed["items"].as_array().unwrap().len(), 0, "trashed entries are not listed");
    let restored = data(&api.post(&format!("{path}/restore"), &json!({})));
    assert!(restored["item"]["deletedAt"].is_null());
    let gone = api.call("DELETE", &format!("{path}?permanent=true"), Some(crate::support::ADMIN), None);
    assert_eq!(data(&gone)["deleted"], true);
    assert_eq!(api.get(&path).status, 404);
}

#[test]
fn field_values_are_validated_against_the_collection() {
    let api = setup();
    let r = api.post("/content/posts", &json!({"slug": "x", "data": {"views": "many", "nope": 1, "sections": [1]}}));
    assert_eq!(r.status, 400);
    let issues = r.body_json()["error"]["details"]["issues"].clone();
    let paths: Vec<&str> = issues.as_array().unwrap().iter().map(|i| i["path"].as_str().unwrap()).collect();
    for p in ["data.views", "data.nope", "data.sections", "data.title"] {
        assert!(paths.contains(&p), "{p} missing from {paths:?}");
    }
}

#[test]
fn slugs_are_unique_per_locale() {
    let api = setup();
    let first = data(&api.post("/content/posts", &json!({"slug": "s", "data": {"title": "a"}})));
    let dup = api.post("/content/posts", &json!({"slug": "s", "data": {"title": "b"}}));
    assert_eq!((dup.status, code(&dup)), (409, "CONFLICT".into()));
    // It names the entry holding the slug (a retry after an unseen commit finds its own).
    assert_eq!(dup.body_json()["error"]["details"], json!({"id": first["item"]["id"], "slug": "s", "locale": "en"}));
    assert_eq!(api.post("/content/posts", &json!({"slug": "s", "locale": "de", "data": {"title": "c"}})).status, 201);
}

#[test]
fn lists_paginate_without_gaps_or_repeats() {
    let api = setup();
    for i in 0..5 {
        api.post("/content/posts", &json!({"slug": format!("p{i}"), "data": {"title": "t"}}));
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let path = match &cursor {
            Some(c) => format!("/content/posts?limit=2&cursor={c}"),
            None => "/content/posts?limit=2".into(),
        };
        let page = data(&api.get(&path));
        seen.extend(page["items"].as_array().unwrap().iter().map(|i| i["slug"].as_str().unwrap().to_owned()));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p4"]);
    assert_eq!(code(&api.get("/content/posts?cursor=%25%25%25")), "INVALID_CURSOR");
    assert_eq!(code(&api.get("/content/posts?limit=0")), "VALIDATION_ERROR");
}

fn create_entry(api: &Api, slug: &str, data_: serde_json::Value) -> String {
    data(&api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": data_})))["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn revisions(api: &Api, id: &str) -> i64 {
    api.db.connection().query_row("SELECT count(*) FROM revisions WHERE entry_id = ?1", [id], |r| r.get(0)).unwrap()
}

#[test]
fn publishing_a_draft_older_than_the_live_row_is_a_conflict_and_a_new_save_rebases_it() {
    let api = setup();
    let id = create_entry(&api, "a", json!({"title": "A", "views": 1}));
    let path = format!("/content/posts/{id}");
    // A draft of another field, then a live edit of the title.
    data(&api.put(&path, &json!({"draft": true, "data": {"views": 2}})));
    let live = data(&api.put(&path, &json!({"data": {"title": "B"}})));
    assert_eq!(live["item"]["data"]["title"], "B");
    let before = data(&api.get(&path));
    let r = api.post(&format!("{path}/publish"), &json!({}));
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(data(&api.get(&path)), before, "nothing was written");
    // Saving the draft again rebases it: what this save does not set takes the live values.
    data(&api.put(&path, &json!({"draft": true, "data": {"views": 3}})));
    let published = data(&api.post(&format!("{path}/publish"), &json!({})));
    assert_eq!(published["item"]["data"]["title"], "B", "the live edit survives");
    assert_eq!(published["item"]["data"]["views"], 3.0);
    // Publishing right after a draft save is never a conflict; a second save over a current
    // draft still builds on it.
    data(&api.put(&path, &json!({"draft": true, "data": {"views": 4}})));
    data(&api.put(&path, &json!({"draft": true, "slug": "a2"})));
    let published = data(&api.post(&format!("{path}/publish"), &json!({})));
    assert_eq!(
        (published["item"]["data"]["views"].clone(), published["item"]["slug"].clone()),
        (json!(4.0), json!("a2"))
    );
    // Any later non-draft write makes a draft stale: here an unpublish.
    data(&api.put(&path, &json!({"draft": true, "data": {"views": 5}})));
    data(&api.post(&format!("{path}/unpublish"), &json!({})));
    assert_eq!(code(&api.post(&format!("{path}/publish"), &json!({}))), "CONFLICT");
    // A stale draft's own slug goes too when it is rebased.
    data(&api.put(&path, &json!({"draft": true, "slug": "stale-slug"})));
    data(&api.put(&path, &json!({"data": {"title": "C"}})));
    data(&api.put(&path, &json!({"draft": true, "data": {"views": 6}})));
    let published = data(&api.post(&format!("{path}/publish"), &json!({})));
    assert_eq!(published["item"]["slug"], "a2");
    assert_eq!(published["item"]["data"]["title"], "C");
}

#[test]
fn a_draft_saved_before_base_versions_existed_publishes_as_before() {
    let api = setup();
    let id = create_entry(&api, "a", json!({"title": "A"}));
    let path = format!("/content/posts/{id}");
    data(&api.put(&path, &json!({"draft": true, "data": {"title": "Draft"}})));
    data(&api.put(&path, &json!({"data": {"views": 7}})));
    api.db.connection().execute_batch("UPDATE revisions SET base_version = NULL").unwrap();
    let published = data(&api.post(&format!("{path}/publish"), &json!({})));
    assert_eq!(published["item"]["data"]["title"], "Draft");
}

#[test]
fn an_entry_keeps_at_most_twenty_revisions_and_its_live_and_draft_ones() {
    let api = setup();
    let id = create_entry(&api, "a", json!({"title": "A"}));
    let path = format!("/content/posts/{id}");
    data(&api.put(&path, &json!({"draft": true, "data": {"title": "first live"}})));
    let live_rev =
        data(&api.post(&format!("{path}/publish"), &json!({})))["item"]["liveRevisionId"].as_str().unwrap().to_owned();
    // Older revisions of another entry, and of an entry with the same id in another collection
    // (ids are random, but pruning must not rely on it): none of them is touched.
    let other = create_entry(&api, "b", json!({"title": "B"}));
    data(&api.put(&format!("/content/posts/{other}"), &json!({"draft": true, "data": {"views": 1}})));
    api.db
        .connection()
        .execute("INSERT INTO revisions (id, collection, entry_id, data) VALUES ('twin', 'pages', ?1, '{}')", [&id])
        .unwrap();
    let keeps = |rev: &str| -> i64 {
        api.db.connection().query_row("SELECT count(*) FROM revisions WHERE id = ?1", [rev], |r| r.get(0)).unwrap()
    };
    let own = |id: &str| -> i64 {
        api.db
            .connection()
            .query_row("SELECT count(*) FROM revisions WHERE collection = 'posts' AND entry_id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap()
    };
    for i in 0..30 {
        data(&api.put(&path, &json!({"draft": true, "data": {"views": i}})));
        assert!(own(&id) <= 20, "after save {i}: {}", own(&id));
    }
    assert_eq!(own(&id), 20);
    assert_eq!((own(&other), keeps("twin")), (1, 1));
    let item = data(&api.get(&path))["item"].clone();
    assert_eq!(keeps(&live_rev), 1, "the live revision is kept however old");
    assert_eq!(keeps(item["draftRevisionId"].as_str().unwrap()), 1);
    // The newest are the ones kept: the draft has the last value.
    assert_eq!(data(&api.post(&format!("{path}/publish"), &json!({})))["item"]["data"]["views"], 29.0);
    // A permanent delete takes the entry's revisions with it, and only them.
    let r = api.call("DELETE", &format!("{path}?permanent=true"), Some(crate::support::ADMIN), None);
    assert_eq!(r.status, 200);
    assert_eq!(own(&id), 0);
    assert_eq!((own(&other), keeps("twin")), (1, 1));
}

#[test]
fn the_revision_limit_is_configurable_within_bounds() {
    let mut api = setup();
    api.config.max_revisions =
        crate::support::settings_with(&[("MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY", "2")]).max_revisions;
    let id = create_entry(&api, "a", json!({"title": "A"}));
    let path = format!("/content/posts/{id}");
    for i in 0..5 {
        data(&api.put(&path, &json!({"draft": true, "data": {"views": i}})));
    }
    assert_eq!(revisions(&api, &id), 1, "only the draft (never published, so no live revision)");
    data(&api.post(&format!("{path}/publish"), &json!({})));
    for i in 0..5 {
        data(&api.put(&path, &json!({"draft": true, "data": {"views": i}})));
    }
    assert_eq!(revisions(&api, &id), 2, "the live and the draft revision");
}

#[test]
fn unpublishing_an_entry_that_is_not_published_changes_nothing() {
    let api = setup();
    let id = data(&api.post("/content/posts", &json!({"slug": "d", "data": {"title": "D"}})))["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/content/posts/{id}");
    let before = data(&api.get(&path));
    let work_before: i64 =
        api.db.connection().query_row("SELECT count(*) FROM _emdash_media_usage_work", [], |r| r.get(0)).unwrap();
    let r = data(&api.post(&format!("{path}/unpublish"), &json!({})));
    assert_eq!(r["item"], before["item"]);
    assert_eq!(r["item"]["version"], 1, "no version bump");
    let work_after: i64 =
        api.db.connection().query_row("SELECT count(*) FROM _emdash_media_usage_work", [], |r| r.get(0)).unwrap();
    assert_eq!(work_after, work_before, "no work row");
    // A published one is unpublished.
    data(&api.post(&format!("{path}/publish"), &json!({})));
    let r = data(&api.post(&format!("{path}/unpublish"), &json!({})));
    assert_eq!((r["item"]["status"].clone(), r["item"]["version"].clone()), (json!("draft"), json!(3)));
}

#[test]
fn bad_input_that_used_to_reach_a_500_gets_a_4xx() {
    let api = setup();
    let id = create_entry(&api, "a", json!({"title": "A"}));
    let path = format!("/content/posts/{id}");
    // A `_rev` of 2^53 + 1: not a version the database can hold.
    for rev in ["cmV2OjkwMDcxOTkyNTQ3NDA5OTM", "cmV2Oi0x"] {
        let r = api.put(&path, &json!({"_rev": rev, "data": {"title": "B"}}));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{rev}: {}", r.body);
    }
    // A ticks cursor whose id is past 2^53.
    let cursor = media_usage_worker::api::input::encode_cursor("x", "9007199254740993");
    let r = api.get(&format!("/admin/media-usage/ticks?cursor={cursor}"));
    assert_eq!((r.status, code(&r)), (400, "INVALID_CURSOR".into()), "{}", r.body);
    let ok = media_usage_worker::api::input::encode_cursor("x", "9007199254740991");
    assert_eq!(api.get(&format!("/admin/media-usage/ticks?cursor={ok}")).status, 200);
    // Two writes that together make the row larger than D1's 2,000,000 bytes.
    let big = |c: char| json!({"data": {"title": c.to_string().repeat(900_000)}});
    data(&api.put(&path, &big('a')));
    let half = json!({"data": {"sections": [{"image": "m".repeat(900_000)}]}});
    data(&api.put(&path, &half));
    let before = data(&api.get(&path));
    let r = api.put(&path, &json!({"data": {"views": 1, "hero": "h".repeat(300_000)}}));
    assert_eq!((r.status, code(&r)), (413, "PAYLOAD_TOO_LARGE".into()), "{}", &r.body[..r.body.len().min(300)]);
    assert_eq!(data(&api.get(&path)), before, "nothing was written");
    // The same through a draft: the revision would pass the limit.
    let r = api.put(&path, &json!({"draft": true, "data": {"hero": "h".repeat(300_000)}}));
    assert_eq!((r.status, code(&r)), (413, "PAYLOAD_TOO_LARGE".into()));
    assert_eq!(data(&api.get(&path)), before);
}

#[test]
fn a_list_page_stops_at_its_size_bound_and_continues_after_it() {
    let api = setup();
    // Six entries of 900 KB each: a page of 100 would be 5.4 MB.
    for i in 0..6 {
        data(&api.post("/content/posts", &json!({"slug": format!("big{i}"), "data": {"title": "x".repeat(900_000)}})));
    }
    let first = data(&api.get("/content/posts?limit=100"));
    let n = first["items"].as_array().unwrap().len();
    assert_eq!(n, 5, "4 MB of rows, plus the one that crosses it");
    let cursor = first["nextCursor"].as_str().expect("a page cut by size continues").to_owned();
    let rest = data(&api.get(&format!("/content/posts?limit=100&cursor={cursor}")));
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    assert!(rest.get("nextCursor").is_none(), "absent on the last page");
    let mut slugs: Vec<String> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["items"].as_array().unwrap())
        .map(|i| i["slug"].as_str().unwrap().to_owned())
        .collect();
    slugs.sort();
    assert_eq!(slugs, ["big0", "big1", "big2", "big3", "big4", "big5"]);
    // Small entries are unaffected: a full page with the usual cursor.
    let api = setup();
    for i in 0..3 {
        data(&api.post("/content/posts", &json!({"slug": format!("s{i}"), "data": {"title": "t"}})));
    }
    let page = data(&api.get("/content/posts?limit=2"));
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert!(page["nextCursor"].is_string());
    assert!(page["items"][0].get("__row_bytes").is_none());
}
