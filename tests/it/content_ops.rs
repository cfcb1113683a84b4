//! EmDash's content operations that change what entries use, through the API handlers: a
//! create without a slug (one is made from the title, unique per collection and locale, even
//! for racing creates), discarding a draft, duplicating an entry, and the reads beside them
//! (revisions, compare, translations). "Used in" stays exact after each write, in the same
//! request.

use media_usage_worker::api::Response;
use media_usage_worker::usage::project::Admission;
use serde_json::{json, Value as Json};

use crate::deletion::Hooked;
use crate::support::{code, data, now, request, scalar, text, used_in, Api, ADMIN};

const SCOPES: &[&str] = &["content:read", "content:write"];

/// `posts` with a title, a hero image and a gallery; `people` with a name.
fn setup() -> Api {
    let api = Api::new();
    let fields = json!([
        {"slug": "title", "type": "string"},
        {"slug": "hero", "type": "image"},
        {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}
    ]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    let fields = json!([{"slug": "name", "type": "string"}, {"slug": "photo", "type": "image"}]);
    data(&api.post("/schema/collections", &json!({"slug": "people", "label": "People", "fields": fields})));
    api
}

fn media(api: &Api, key: &str) -> String {
    let d = data(&api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key})));
    d["item"]["id"].as_str().unwrap().to_owned()
}

fn create(api: &Api, collection: &str, body: Json) -> Json {
    let r = api.post(&format!("/content/{collection}"), &body);
    assert_eq!(r.status, 201, "{}", r.body);
    data(&r)["item"].clone()
}

fn id(item: &Json) -> String {
    item["id"].as_str().unwrap().to_owned()
}

fn call(api: &Api, method: &str, path: &str, token: &str, body: Option<Json>) -> Response {
    let body = body.map(|b| b.to_string());
    api.call(method, path, Some(token), body.as_deref().map(str::as_bytes))
}

/// The content ids "Used in" lists for media `m`.
fn users(api: &Api, m: &str) -> Vec<String> {
    let mut ids: Vec<String> = used_in(api, m).0.into_iter().map(|(id, _)| id).collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

// ---------------------------------------------------------------------------------------------
// Slugs made from titles.

#[test]
fn a_create_without_a_slug_makes_one_from_the_title_unique_in_its_locale() {
    let api = setup();
    let slug = |body: Json| create(&api, "posts", body)["slug"].clone();
    assert_eq!(slug(json!({"data": {"title": "Hello World"}})), "hello-world");
    assert_eq!(slug(json!({"data": {"title": "Hello, world!"}})), "hello-world-1");
    assert_eq!(slug(json!({"slug": null, "data": {"title": "hello world"}})), "hello-world-2");
    assert_eq!(slug(json!({"slug": "", "data": {"title": "Hello World"}})), "hello-world-3", "EmDash's nullish slug");
    assert_eq!(slug(json!({"locale": "de", "data": {"title": "Hello World"}})), "hello-world", "per locale");
    // N is one above the largest numbered sibling, as EmDash counts: a given slug counts too,
    // suffixes that are not numbers do not.
    assert_eq!(slug(json!({"slug": "hello-world-41", "data": {"title": "x"}})), "hello-world-41");
    assert_eq!(slug(json!({"slug": "hello-world-x9", "data": {"title": "x"}})), "hello-world-x9");
    assert_eq!(slug(json!({"slug": "hello-world-99abc", "data": {"title": "x"}})), "hello-world-99abc");
    assert_eq!(slug(json!({"slug": "hello-world-", "data": {"title": "x"}})), "hello-world-");
    assert_eq!(slug(json!({"data": {"title": "Hello World"}})), "hello-world-42");
    assert_eq!(slug(json!({"locale": "de", "data": {"title": "Hello World"}})), "hello-world-1", "siblings per locale");
    // A trashed entry keeps its slug.
    let trashed = create(&api, "posts", json!({"data": {"title": "Gone"}}));
    data(&api.delete(&format!("/content/posts/{}", id(&trashed))));
    assert_eq!(slug(json!({"data": {"title": "Gone"}})), "gone-1");
    // The base alone is free again once it is: the lowest form is taken first.
    assert_eq!(slug(json!({"data": {"title": "Café Crème"}})), "cafe-creme");
    // No title: the name; neither, or nothing left of it: no slug, as in EmDash (and any
    // number of entries may have none).
    assert_eq!(create(&api, "people", json!({"data": {"name": "Ada Lovelace"}}))["slug"], "ada-lovelace");
    assert_eq!(slug(json!({"data": {}})), Json::Null);
    assert_eq!(slug(json!({"data": {"title": ""}})), Json::Null);
    assert_eq!(slug(json!({"data": {"title": "మేష రాసి"}})), Json::Null);
    assert_eq!(slug(json!({"data": {"title": "!!!"}})), Json::Null);
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts WHERE slug IS NULL"), 4);
    // At most 80 characters before the suffix.
    let long = "word ".repeat(40);
    let first = slug(json!({"data": {"title": long}}));
    assert_eq!(first.as_str().unwrap().len(), 79, "{first}");
    assert_eq!(slug(json!({"data": {"title": long}})), format!("{}-1", first.as_str().unwrap()));
    // A given slug that is taken is still a 409 naming its holder.
    let r = api.post("/content/posts", &json!({"slug": "hello-world", "data": {"title": "y"}}));
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()));
    assert_eq!(r.body_json()["error"]["details"]["slug"], "hello-world");
}

#[test]
fn racing_creates_of_one_title_get_distinct_slugs() {
    let api = setup();
    let body = json!({"data": {"title": "Breaking News"}}).to_string();
    // A rival create of the same title commits between anything this create has read and its
    // insert: the insert chooses the slug itself, so it takes the next one.
    let rival = std::cell::RefCell::new(None);
    let hooked = Hooked::new(&api.db).before("INSERT INTO \"ec_posts\"", |db| {
        let req = request("POST", "/content/posts", Some(ADMIN), Some(body.as_bytes()));
        *rival.borrow_mut() = Some(now(media_usage_worker::api::handle(db, &api.config, &req)));
    });
    let r = api.request_on(&hooked, &request("POST", "/content/posts", Some(ADMIN), Some(body.as_bytes())));
    hooked.done();
    drop(hooked);
    let rival = rival.into_inner().unwrap();
    assert_eq!((rival.status, r.status), (201, 201), "{} / {}", rival.body, r.body);
    assert_eq!(data(&rival)["item"]["slug"], "breaking-news");
    assert_eq!(data(&r)["item"]["slug"], "breaking-news-1");
}

#[test]
fn a_made_slug_that_is_taken_is_tried_again_with_the_next_suffix_a_bounded_number_of_times() {
    let api = setup();
    // The choice looks at suffixes of up to 18 digits: one above the largest is 10^18, which a
    // longer suffix may hold.
    for slug in ["t", "t-999999999999999999", "t-1000000000000000000"] {
        create(&api, "posts", json!({"slug": slug, "data": {"title": "T"}}));
    }
    assert_eq!(create(&api, "posts", json!({"data": {"title": "T"}}))["slug"], "t-1000000000000000001");
    create(&api, "posts", json!({"slug": "t-1000000000000000002", "data": {"title": "T"}}));
    let before = scalar(&api, "SELECT count(*) FROM ec_posts");
    let r = api.post("/content/posts", &json!({"data": {"title": "T"}}));
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), before, "nothing written");
}

#[test]
fn another_unique_violation_is_not_read_as_a_taken_slug() {
    let api = setup();
    create(&api, "posts", json!({"slug": "first", "data": {"title": "Same"}}));
    // A stand-in for a collision of ids: a unique index the slug has nothing to do with.
    api.db.connection().execute_batch("CREATE UNIQUE INDEX test_unique_title ON ec_posts (title)").unwrap();
    for body in [json!({"slug": "second", "data": {"title": "Same"}}), json!({"data": {"title": "Same"}})] {
        let r = api.post("/content/posts", &body);
        assert_eq!((r.status, code(&r)), (500, "INTERNAL_ERROR".into()), "{body}: {}", r.body);
        assert!(r.body_json()["error"].get("details").is_none(), "no slug holder named: {}", r.body);
    }
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), 1);
}

#[test]
fn an_entry_is_answered_in_emdashs_shape() {
    let api = setup();
    let item = create(&api, "posts", json!({"data": {"title": "Shape"}}));
    assert_eq!(item["type"], "posts");
    assert_eq!(item["primaryBylineId"], Json::Null);
    for key in ["id", "slug", "status", "data", "authorId", "createdAt", "updatedAt", "version", "locale"] {
        assert!(item.get(key).is_some(), "{key}");
    }
}

// ---------------------------------------------------------------------------------------------
// Discard draft.

#[test]
fn discarding_a_draft_drops_it_and_its_uses_in_the_same_request() {
    let api = setup();
    let (a, b) = (media(&api, "a.png"), media(&api, "b.png"));
    let entry = create(&api, "posts", json!({"status": "published", "data": {"title": "Live", "hero": a}}));
    let path = format!("/content/posts/{}", id(&entry));
    let drafted = data(&api.put(&path, &json!({"draft": true, "slug": "renamed", "data": {"hero": b}})));
    assert_eq!(users(&api, &b), [id(&entry)], "the draft's use is listed");
    let draft_rev = drafted["item"]["draftRevisionId"].as_str().unwrap().to_owned();

    let r = api.post(&format!("{path}/discard-draft"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    let item = data(&r)["item"].clone();
    assert_eq!(item["draftRevisionId"], Json::Null);
    assert_eq!(item["data"]["hero"], a.as_str(), "the live columns are untouched");
    assert_eq!(item["slug"], entry["slug"]);
    assert_eq!(item["version"], drafted["item"]["version"].as_i64().unwrap() + 1);
    assert_eq!(item["updatedAt"], drafted["item"]["updatedAt"], "as in EmDash, not a change of the entry");
    assert!(users(&api, &b).is_empty(), "the draft's use is gone");
    assert_eq!(users(&api, &a), [id(&entry)], "the live use stays");
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
    // The revision stays in the history.
    let history = data(&api.get(&format!("{path}/revisions")));
    assert!(history["items"].as_array().unwrap().iter().any(|r| r["id"] == draft_rev.as_str()));
    // Nothing to discard: the entry as it is, unchanged.
    let again = data(&api.post(&format!("{path}/discard-draft"), &json!({})));
    assert_eq!(again["item"], item);
    // Unknown, or in the trash: not found.
    assert_eq!(api.post("/content/posts/nope/discard-draft", &json!({})).status, 404);
    data(&api.put(&path, &json!({"draft": true, "data": {"hero": b}})));
    data(&api.delete(&path));
    let r = api.post(&format!("{path}/discard-draft"), &json!({}));
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()));
    assert!(data(&api.get(&path))["item"]["draftRevisionId"].is_string(), "nothing written");
    assert_eq!(api.post("/content/nope/x/discard-draft", &json!({})).status, 404);
}

#[test]
fn a_discard_retried_after_its_projection_died_takes_the_drafts_uses_out_at_once() {
    use media_usage_worker::exec::fault::Faulty;
    let api = setup();
    let (a, b) = (media(&api, "a.png"), media(&api, "b.png"));
    let entry = create(&api, "posts", json!({"status": "published", "data": {"title": "Live", "hero": a}}));
    let path = format!("/content/posts/{}/discard-draft", id(&entry));
    data(&api.put(&format!("/content/posts/{}", id(&entry)), &json!({"draft": true, "data": {"hero": b}})));
    let mut seen = 0;
    for k in 1..20 {
        let run = api.snapshot();
        let first = run.request_on(&Faulty::new(&run.db, Some(k)), &request("POST", &path, Some(ADMIN), None));
        let discarded = scalar(&run, "SELECT count(*) FROM ec_posts WHERE draft_revision_id IS NULL") == 1;
        let queued = scalar(&run, "SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'pending'") == 1;
        if !discarded || !queued {
            // Not written, or the projection claimed the work before it died (the lease keeps
            // it for the ticks).
            continue;
        }
        // The draft is gone, its use still listed: the projection died before it claimed the
        // entry's work. The client's retry finds nothing to discard, and projects the entry.
        assert_eq!(users(&run, &b), [id(&entry)]);
        seen += 1;
        assert!(first.status == 200 || first.status == 500, "{}", first.body);
        assert_eq!(data(&run.post(&path, &json!({})))["item"]["draftRevisionId"], Json::Null);
        assert!(users(&run, &b).is_empty(), "statement {k}");
    }
    assert!(seen >= 1, "no crash left the draft's use behind");
}

// ---------------------------------------------------------------------------------------------
// Duplicate.

#[test]
fn a_duplicate_is_a_new_draft_of_the_live_data_indexed_like_any_new_entry() {
    let api = setup();
    let (a, b, c) = (media(&api, "a.png"), media(&api, "b.png"), media(&api, "c.png"));
    let author = api.token("author", SCOPES);
    let body = json!({"slug": "original", "locale": "de", "status": "published",
                      "data": {"title": "Hallo", "hero": a, "gallery": [{"image": c}]}});
    let original = data(&call(&api, "POST", "/content/posts", &author, Some(body)))["item"].clone();
    let path = format!("/content/posts/{}", id(&original));
    data(&call(&api, "PUT", &path, &author, Some(json!({"draft": true, "data": {"hero": b}}))));

    let r = call(&api, "POST", &format!("{path}/duplicate"), &author, None);
    assert_eq!(r.status, 201, "{}", r.body);
    let copy = data(&r)["item"].clone();
    assert_ne!(copy["id"], original["id"]);
    assert_eq!(copy["data"]["title"], "Hallo (Copy)");
    assert_eq!(copy["slug"], "hallo-copy");
    assert_eq!(copy["data"]["hero"], a.as_str(), "the live data, not the draft");
    assert_eq!(copy["data"]["gallery"], json!([{"image": c}]));
    assert_eq!((copy["status"].as_str(), copy["locale"].as_str()), (Some("draft"), Some("de")));
    assert_eq!(copy["translationGroup"], copy["id"], "a group of its own");
    assert_eq!(copy["authorId"], original["authorId"]);
    assert_eq!((copy["draftRevisionId"].clone(), copy["publishedAt"].clone()), (Json::Null, Json::Null));
    // Indexed in the same request.
    assert_eq!(users(&api, &a), sorted(vec![id(&original), id(&copy)]));
    assert_eq!(users(&api, &c), sorted(vec![id(&original), id(&copy)]));
    assert_eq!(users(&api, &b), [id(&original)], "the draft is not copied");
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
    // Again: the next slug. A copy of a copy adds another suffix.
    let again = data(&call(&api, "POST", &format!("{path}/duplicate"), &author, None))["item"].clone();
    assert_eq!(again["slug"], "hallo-copy-1");
    let copy2 = data(&api.post(&format!("/content/posts/{}/duplicate", id(&copy)), &json!({})))["item"].clone();
    assert_eq!(
        (copy2["data"]["title"].as_str(), copy2["slug"].as_str()),
        (Some("Hallo (Copy) (Copy)"), Some("hallo-copy-copy"))
    );
    assert_eq!(copy2["authorId"], "bootstrap", "the caller owns the copy");
    // `name` when there is no title; neither: no slug.
    let person = create(&api, "people", json!({"data": {"name": "Ada", "photo": a}}));
    let copy = data(&api.post(&format!("/content/people/{}/duplicate", id(&person)), &json!({})))["item"].clone();
    assert_eq!((copy["data"]["name"].as_str(), copy["slug"].as_str()), (Some("Ada (Copy)"), Some("ada-copy")));
    let untitled = create(&api, "posts", json!({"data": {"hero": a}}));
    let copy = data(&api.post(&format!("/content/posts/{}/duplicate", id(&untitled)), &json!({})))["item"].clone();
    assert_eq!((copy["slug"].clone(), copy["data"]["title"].clone()), (Json::Null, Json::Null));
    // Unknown, or in the trash: not found, nothing written.
    let n = scalar(&api, "SELECT count(*) FROM ec_posts");
    assert_eq!(api.post("/content/posts/nope/duplicate", &json!({})).status, 404);
    data(&api.delete(&path));
    assert_eq!(api.post(&format!("{path}/duplicate"), &json!({})).status, 404);
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), n);
}

#[test]
fn a_duplicate_the_index_could_not_hold_is_refused_like_a_write() {
    let mut api = setup();
    let (a, b, c) = (media(&api, "a.png"), media(&api, "b.png"), media(&api, "c.png"));
    let entry =
        create(&api, "posts", json!({"data": {"title": "Full", "hero": a, "gallery": [{"image": b}, {"image": c}]}}));
    // The limit lowered since the entry was saved: a copy now would be over it.
    api.config.background = api.config.background.clone().with_admission(Admission { max_occurrences: 2 });
    let n = scalar(&api, "SELECT count(*) FROM ec_posts");
    let r = api.post(&format!("/content/posts/{}/duplicate", id(&entry)), &json!({}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "data");
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), n, "nothing written");
}

// ---------------------------------------------------------------------------------------------
// Ownership.

#[test]
fn below_editor_only_ones_own_entries_are_discarded_or_duplicated() {
    let api = setup();
    let m = media(&api, "m.png");
    let a = api.token("author", SCOPES);
    let b = {
        let r = api.post("/admin/tokens", &json!({"name": "b", "role": "author", "scopes": SCOPES}));
        data(&r)["token"].as_str().unwrap().to_owned()
    };
    let editor = api.token("editor", SCOPES);
    let contributor = api.token("contributor", SCOPES);
    let entry =
        data(&call(&api, "POST", "/content/posts", &a, Some(json!({"data": {"title": "Mine"}}))))["item"].clone();
    let path = format!("/content/posts/{}", id(&entry));
    data(&call(&api, "PUT", &path, &a, Some(json!({"draft": true, "data": {"hero": m}}))));
    let before = data(&api.get(&path))["item"].clone();
    let entries = scalar(&api, "SELECT count(*) FROM ec_posts");
    for (who, token) in [("another author", &b), ("a contributor", &contributor)] {
        for op in ["discard-draft", "duplicate"] {
            let r = call(&api, "POST", &format!("{path}/{op}"), token, None);
            assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()), "{who}: {op}: {}", r.body);
        }
    }
    assert_eq!(data(&api.get(&path))["item"], before, "nothing changed");
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), entries, "nothing created");
    assert_eq!(users(&api, &m), [id(&entry)], "the draft's use stays");
    // The reads are for contributors too.
    for op in ["revisions", "compare", "translations"] {
        assert_eq!(call(&api, "GET", &format!("{path}/{op}"), &contributor, None).status, 200, "{op}");
    }
    let subscriber = api.token("subscriber", &["content:read"]);
    assert_eq!(call(&api, "GET", &format!("{path}/compare"), &subscriber, None).status, 403);
    let no_scope = api.token("editor", &["content:read"]);
    let r = call(&api, "POST", &format!("{path}/duplicate"), &no_scope, None);
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".into()));
    // The owner and an editor may; an editor's copy is the editor's.
    assert_eq!(call(&api, "POST", &format!("{path}/duplicate"), &a, None).status, 201);
    let copy = data(&call(&api, "POST", &format!("{path}/duplicate"), &editor, None))["item"].clone();
    assert_ne!(copy["authorId"], entry["authorId"]);
    assert_eq!(call(&api, "POST", &format!("{path}/discard-draft"), &editor, None).status, 200);
    assert!(users(&api, &m).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Reads.

#[test]
fn revisions_are_listed_newest_first_in_bounded_pages() {
    let api = setup();
    let entry = create(&api, "posts", json!({"data": {"title": "Many"}}));
    let path = format!("/content/posts/{}", id(&entry));
    let empty = data(&api.get(&format!("{path}/revisions")));
    assert_eq!(empty, json!({"items": [], "total": 0}));
    for i in 0..25 {
        data(&api.put(&path, &json!({"draft": true, "data": {"title": format!("v{i}")}})));
    }
    // Pruned to what an entry keeps: its draft and 18 others (and its live revision, which
    // this entry has none of).
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let q = cursor.as_ref().map(|c| format!("&cursor={c}")).unwrap_or_default();
        let page = data(&api.get(&format!("{path}/revisions?limit=7{q}")));
        assert_eq!(page["total"], 19);
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 7);
        for r in items {
            assert_eq!((r["collection"].as_str(), r["entryId"].as_str()), (Some("posts"), Some(id(&entry).as_str())));
            assert!(r["createdAt"].is_string() && r.get("authorId").is_some());
            seen.push(r["data"]["title"].as_str().unwrap().to_owned());
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let expected: Vec<String> = (6..25).rev().map(|i| format!("v{i}")).collect();
    assert_eq!(seen, expected, "newest first, each once");
    // Bad paging input.
    let r = api.get(&format!("{path}/revisions?cursor=bm90LWpzb24"));
    assert_eq!((r.status, code(&r)), (400, "INVALID_CURSOR".into()));
    for (v, id) in [("x", "y"), ("x", "-1"), ("x", "1.5")] {
        let not_a_seq = media_usage_worker::api::input::encode_cursor(v, id);
        assert_eq!(code(&api.get(&format!("{path}/revisions?cursor={not_a_seq}"))), "INVALID_CURSOR", "{id}");
    }
    // Any place in insertion order is a place to continue from.
    for id in ["0", "9007199254740991"] {
        let cursor = media_usage_worker::api::input::encode_cursor("any", id);
        assert_eq!(api.get(&format!("{path}/revisions?cursor={cursor}")).status, 200, "{id}");
    }
    assert_eq!(code(&api.get(&format!("{path}/revisions?limit=0"))), "VALIDATION_ERROR");
    assert_eq!(code(&api.get(&format!("{path}/revisions?limit=101"))), "VALIDATION_ERROR");
    assert_eq!(api.get("/content/posts/nope/revisions").status, 404);
    // An entry in the trash keeps its history.
    data(&api.delete(&path));
    assert_eq!(data(&api.get(&format!("{path}/revisions")))["total"], 19);
}

#[test]
fn a_page_of_revisions_stops_at_its_size_bound() {
    let api = setup();
    let entry = create(&api, "posts", json!({"data": {"title": "Big"}}));
    let path = format!("/content/posts/{}", id(&entry));
    // Six revisions of 0.9 MB: a page holds them until 4 MB (the one crossing it is the last).
    for i in 0..6 {
        let title = format!("{i}{}", "x".repeat(900_000));
        data(&api.put(&path, &json!({"draft": true, "data": {"title": title}})));
    }
    let first = data(&api.get(&format!("{path}/revisions")));
    assert_eq!(first["items"].as_array().unwrap().len(), 5);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = data(&api.get(&format!("{path}/revisions?cursor={cursor}")));
    let items = second["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert!(items[0]["data"]["title"].as_str().unwrap().starts_with('0'));
    assert_eq!(second["nextCursor"], Json::Null);
}

#[test]
fn compare_shows_the_live_data_beside_the_draft() {
    let api = setup();
    let m = media(&api, "m.png");
    let entry =
        create(&api, "posts", json!({"slug": "c", "status": "published", "data": {"title": "Live", "hero": m}}));
    let path = format!("/content/posts/{}", id(&entry));
    let none = data(&api.get(&format!("{path}/compare")));
    assert_eq!(none, json!({"hasChanges": false, "live": entry["data"], "draft": null}));
    data(&api.put(&path, &json!({"draft": true, "slug": "c2", "data": {"title": "Draft"}})));
    let cmp = data(&api.get(&format!("{path}/compare")));
    assert_eq!(cmp["hasChanges"], true);
    assert_eq!(cmp["live"]["title"], "Live");
    assert_eq!(cmp["draft"]["title"], "Draft");
    assert_eq!(cmp["draft"]["hero"], m.as_str(), "the draft is whole: live data with the changes laid over");
    assert_eq!(cmp["draft"]["_slug"], "c2");
    data(&api.post(&format!("{path}/publish"), &json!({})));
    let published = data(&api.get(&format!("{path}/compare")));
    assert_eq!((published["hasChanges"].clone(), published["draft"].clone()), (json!(false), Json::Null));
    assert_eq!(published["live"]["title"], "Draft");
    assert_eq!(api.get("/content/posts/nope/compare").status, 404);
    // A draft pointer to a revision of another entry (written behind the API) shows no draft.
    let other = create(&api, "posts", json!({"data": {"title": "Other"}}));
    data(&api.put(&format!("/content/posts/{}", id(&other)), &json!({"draft": true, "data": {"title": "Theirs"}})));
    api.db
        .connection()
        .execute(
            "UPDATE ec_posts SET draft_revision_id = (SELECT draft_revision_id FROM ec_posts WHERE id = ?2) WHERE id = ?1",
            [id(&entry), id(&other)],
        )
        .unwrap();
    let foreign = data(&api.get(&format!("{path}/compare")));
    assert_eq!(foreign["draft"], Json::Null, "{foreign}");
    data(&api.delete(&path));
    assert_eq!(api.get(&format!("{path}/compare")).status, 404, "EmDash reads a trashed entry as missing");
}

#[test]
fn translations_list_the_groups_entries_outside_the_trash_by_locale() {
    let api = setup();
    let en = create(&api, "posts", json!({"slug": "hello", "data": {"title": "Hello"}}));
    let group = en["translationGroup"].as_str().unwrap().to_owned();
    let mut ids = vec![id(&en)];
    for locale in ["fr", "de", "es"] {
        let t = create(
            &api,
            "posts",
            json!({"slug": "hello", "locale": locale, "translationGroup": group, "data": {"title": locale}}),
        );
        ids.push(id(&t));
    }
    let trashed =
        create(&api, "posts", json!({"slug": "hello", "locale": "it", "translationGroup": group, "data": {}}));
    data(&api.delete(&format!("/content/posts/{}", id(&trashed))));
    create(&api, "posts", json!({"slug": "other", "data": {"title": "Other"}}));

    let all = data(&api.get(&format!("/content/posts/{}/translations", ids[2])));
    assert_eq!(all["translationGroup"], group.as_str());
    let locales: Vec<&str> =
        all["translations"].as_array().unwrap().iter().map(|t| t["locale"].as_str().unwrap()).collect();
    assert_eq!(locales, ["de", "en", "es", "fr"]);
    let first = &all["translations"][1];
    assert_eq!(first["id"], en["id"]);
    assert_eq!((first["slug"].as_str(), first["status"].as_str()), (Some("hello"), Some("draft")));
    assert!(first["updatedAt"].is_string());
    // Paged like other lists.
    let page = data(&api.get(&format!("/content/posts/{}/translations?limit=3", ids[0])));
    assert_eq!(page["translations"].as_array().unwrap().len(), 3);
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = data(&api.get(&format!("/content/posts/{}/translations?limit=3&cursor={cursor}", ids[0])));
    assert_eq!(
        rest["translations"].as_array().unwrap().iter().map(|t| t["locale"].clone()).collect::<Vec<_>>(),
        [json!("fr")]
    );
    assert_eq!(rest["nextCursor"], Json::Null);
    // An entry without a group is a group of its own; one in the trash is not found.
    api.db.connection().execute("UPDATE ec_posts SET translation_group = NULL WHERE slug = 'other'", []).unwrap();
    let other = text(&api, "SELECT id FROM ec_posts WHERE slug = 'other'").unwrap();
    let alone = data(&api.get(&format!("/content/posts/{other}/translations")));
    assert_eq!(alone["translationGroup"], other.as_str());
    assert_eq!(alone["translations"].as_array().unwrap().len(), 1);
    assert_eq!(api.get(&format!("/content/posts/{}/translations", id(&trashed))).status, 404);
    assert_eq!(code(&api.get(&format!("/content/posts/{}/translations?cursor=%%%", ids[0]))), "INVALID_CURSOR");
}

#[test]
fn the_reads_are_bounded_beside_a_large_collection() {
    use media_usage_worker::clock::MonotonicClock;
    use media_usage_worker::exec::meter::Metered;
    let api = setup();
    api.db
        .connection()
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO revisions (id, collection, entry_id, data) SELECT 'r' || i, 'posts', 'e' || (i % 50), '{}' FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO ec_posts (id, slug, translation_group, title) SELECT 'e' || i, 's' || i, 'g' || (i % 50), 't' FROM n;
             DELETE FROM _emdash_media_usage_work;",
        )
        .unwrap();
    let cost = |method: &str, path: &str| {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let r =
            api.request_on(&metered, &request(method, path, Some(ADMIN), Some(b"{\"data\":{\"title\":\"Hello\"}}")));
        assert!(r.status < 300, "{path}: {}", r.body);
        metered.usage().rows_read
    };
    // 400 revisions of `e1`, 400 entries in group `g1`: a page reads its own rows.
    assert!(cost("GET", "/content/posts/e1/revisions?limit=10") < 100);
    assert!(cost("GET", "/content/posts/e1/translations?limit=10") < 100);
    assert!(cost("GET", "/content/posts/e1/compare") < 100);
    // A made slug reads the slugs that share its base (none here), not the table.
    assert!(cost("POST", "/content/posts") < 100);
    assert!(cost("POST", "/content/posts") < 100, "the base taken: its numbered siblings by range");
}

#[test]
fn a_translation_of_an_entry_joins_its_group_for_whoever_may_change_the_entry() {
    let api = setup();
    let a = api.token("author", SCOPES);
    let b = {
        let r = api.post("/admin/tokens", &json!({"name": "b", "role": "author", "scopes": SCOPES}));
        data(&r)["token"].as_str().unwrap().to_owned()
    };
    let en = data(&call(&api, "POST", "/content/posts", &a, Some(json!({"data": {"title": "Hello"}}))))["item"].clone();
    let body = |of: &str| json!({"locale": "de", "translationOf": of, "data": {"title": "Hallo"}});
    let de = data(&call(&api, "POST", "/content/posts", &a, Some(body(&id(&en)))))["item"].clone();
    assert_eq!(de["translationGroup"], en["translationGroup"]);
    assert_eq!(de["slug"], "hallo");
    // Of a translation: the same group.
    let fr = create(&api, "posts", json!({"locale": "fr", "translationOf": id(&de), "data": {"title": "Bonjour"}}));
    assert_eq!(fr["translationGroup"], en["translationGroup"]);
    // An entry without a group: its id becomes the group.
    api.db.connection().execute("UPDATE ec_posts SET translation_group = NULL WHERE id = ?1", [id(&en)]).unwrap();
    let es = create(&api, "posts", json!({"locale": "es", "translationOf": id(&en), "data": {"title": "Hola"}}));
    assert_eq!(es["translationGroup"], en["id"]);
    let n = scalar(&api, "SELECT count(*) FROM ec_posts");
    // Another author's entry: 403; a missing source: 404; both ways of naming a group: 400.
    let r = call(&api, "POST", "/content/posts", &b, Some(body(&id(&de))));
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()), "{}", r.body);
    let r = api.post("/content/posts", &body("nope"));
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()));
    let both = json!({"translationOf": id(&de), "translationGroup": "g", "data": {"title": "x"}});
    let r = api.post("/content/posts", &both);
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
    assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "translationOf");
    data(&api.delete(&format!("/content/posts/{}", id(&fr))));
    assert_eq!(api.post("/content/posts", &body(&id(&fr))).status, 404, "a source in the trash");
    assert_eq!(scalar(&api, "SELECT count(*) FROM ec_posts"), n, "nothing written");
}
