//! EmDash's media API as its client uses it: the list's `mimeType` (comma lists, `type/*`), `q`
//! and `includeUsage=1` (each item's usage summary, by the item route's rules), every page bounded
//! in rows read; media authors (`authorId`, written once) and ownership: `PUT /media/{id}`
//! (alt, caption, width, height) and the safe delete take only the caller's own media below
//! editor, any for editors and admins; the update after a crash at any of its statements.

use media_usage_worker::api::media::LIST_WINDOW;
use media_usage_worker::clock::MonotonicClock;
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use serde_json::{json, Value as Json};

use crate::media_files::{form, png};
use crate::support::{code, data, request, Api, ADMIN};

const T0: f64 = 1_800_000_000_000.0;
const SCOPES: &[&str] = &["media:read", "media:write"];

fn setup() -> Api {
    let api = Api::with_storage(T0);
    let fields = json!([{"slug": "hero", "type": "image"}, {"slug": "file", "type": "file"}]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    api
}

/// Registers a media item by JSON with `token`; the item.
fn register_as(api: &Api, token: &str, filename: &str, mime: &str) -> Json {
    let n: i64 = api.db.connection().query_row("SELECT count(*) FROM media", [], |r| r.get(0)).unwrap();
    let body = json!({"filename": filename, "mimeType": mime, "storageKey": format!("k/{n}/{filename}")});
    let r = api.call("POST", "/media", Some(token), Some(body.to_string().as_bytes()));
    data(&r)["item"].clone()
}

fn register(api: &Api, filename: &str, mime: &str) -> String {
    register_as(api, ADMIN, filename, mime)["id"].as_str().unwrap().to_owned()
}

/// Uploads a small PNG with `token`; the answer.
fn upload_as(api: &Api, token: &str, salt: u8) -> media_usage_worker::api::Response {
    let (ty, body) = form(&[("file", Some("photo.png"), Some("image/png"), &png(4, 3, salt))]);
    api.request("POST", "/media", Some(token), Some(&body), |r| r.content_type = Some(ty))
}

/// A token of `role` named `name`: (its id, its secret).
fn token(api: &Api, name: &str, role: &str) -> (String, String) {
    let d = data(&api.post("/admin/tokens", &json!({"name": name, "role": role, "scopes": SCOPES})));
    (d["id"].as_str().unwrap().to_owned(), d["token"].as_str().unwrap().to_owned())
}

fn entry(api: &Api, slug: &str, status: &str, d: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": status, "data": d}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

/// The file names `GET /media?{query}` lists (one page of up to 100), in list order.
fn names(api: &Api, query: &str) -> Vec<String> {
    let d = data(&api.get(&format!("/media?limit=100&{query}")));
    d["items"].as_array().unwrap().iter().map(|m| m["filename"].as_str().unwrap().to_owned()).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The media row `id` as stored, every column.
fn stored(api: &Api, id: &str) -> Vec<String> {
    let conn = api.db.connection();
    let mut stmt = conn.prepare("SELECT * FROM media WHERE id = ?1").unwrap();
    let n = stmt.column_count();
    stmt.query_row([id], |r| Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect())).unwrap()
}

#[test]
fn mime_type_takes_a_comma_list_of_whole_types_and_type_prefixes() {
    let api = setup();
    for (name, mime) in [
        ("a.pdf", "application/pdf"),
        ("b.png", "image/png"),
        ("c.jpg", "image/jpeg"),
        ("d.svg", "image/svg+xml"),
        ("e.txt", "text/plain"),
        ("f.mp4", "video/mp4"),
        ("g.imagex", "imagex/png"),
    ] {
        register(&api, name, mime);
    }
    let list = |q: &str| sorted(names(&api, q));
    assert_eq!(list("mimeType=application/pdf"), ["a.pdf"]);
    assert_eq!(list("mimeType=image/*"), ["b.png", "c.jpg", "d.svg"], "a prefix is the whole type, not imagex/");
    assert_eq!(list("mimeType=image/"), ["b.png", "c.jpg", "d.svg"], "EmDash's form of a prefix");
    assert_eq!(list("mimeType=image/png,application/pdf"), ["a.pdf", "b.png"]);
    assert_eq!(list("mimeType=image/png,video/*,text/plain"), ["b.png", "e.txt", "f.mp4"]);
    assert_eq!(list("mimeType=IMAGE/PNG"), ["b.png"], "case-insensitive");
    assert_eq!(list("mimeType=image/png; charset=x"), ["b.png"], "parameters are ignored");
    assert_eq!(list("mimeType=,\t image/png ,,"), ["b.png"], "empty entries are skipped");
    assert_eq!(list("mimeType=image/gif"), Vec::<String>::new());
    assert_eq!(list("mimeType=image/*&q=.jpg"), ["c.jpg"], "with the other filters");
}

#[test]
fn bad_mime_type_lists_are_refused_with_the_parameter_named() {
    let api = setup();
    register(&api, "a.pdf", "application/pdf");
    let twenty_one = vec!["image/png"; 21].join(",");
    let twenty = vec!["image/png"; 20].join(",");
    assert_eq!(api.get(&format!("/media?mimeType={twenty}")).status, 200);
    let longest = format!("image/png;{}", "x".repeat(2048 - 10));
    assert_eq!(longest.chars().count(), 2048);
    assert_eq!(api.get(&format!("/media?mimeType={longest}")).status, 200, "2048 characters");
    for bad in [
        "",
        ",",
        " ",
        "image",
        "png",
        "*/*",
        "image/*x",
        "image//",
        "/png",
        "image/png image/jpeg",
        "image/p ng",
        "imäge/png",
        "image/png\n",
        twenty_one.as_str(),
        &format!("image/png;{}", "x".repeat(2048)),
    ] {
        let r = api.get(&format!("/media?mimeType={bad}"));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()), "{bad}: {}", r.body);
        assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "mimeType", "{bad}");
    }
}

#[test]
fn q_is_a_trimmed_case_insensitive_part_of_the_file_name_and_search_its_older_name() {
    let api = setup();
    for name in ["Cat photo.PNG", "dog.png", "50%_off.pdf", "catalogue.pdf"] {
        register(&api, name, "image/png");
    }
    let list = |q: &str| sorted(names(&api, q));
    assert_eq!(list("q=cat"), ["Cat photo.PNG", "catalogue.pdf"]);
    assert_eq!(list("q=  CAT\t"), ["Cat photo.PNG", "catalogue.pdf"], "trimmed");
    assert_eq!(list("q=t p"), ["Cat photo.PNG"], "inner spaces count");
    assert_eq!(list("q=.png"), ["Cat photo.PNG", "dog.png"], "extensions too");
    assert_eq!(list("q=%_"), ["50%_off.pdf"], "LIKE's wildcards are themselves");
    assert_eq!(list("q=_"), ["50%_off.pdf"]);
    assert_eq!(list("search=cat"), list("q=cat"), "search is q's older name");
    assert_eq!(list("q=cat&search=.pdf"), ["catalogue.pdf"], "given both, a name contains both");
    assert_eq!(list("q=cat&mimeType=image/png"), ["Cat photo.PNG", "catalogue.pdf"]);
    let longest = "x".repeat(200);
    assert_eq!(list(&format!("q={longest}")), Vec::<String>::new());
    for bad in [String::new(), " ".into(), " \t\n\r".into(), format!("{longest}x"), format!(" {longest}")] {
        let r = api.get(&format!("/media?q={bad}"));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()), "q={bad}: {}", r.body);
        assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "q");
    }
}

/// The `usage` of media `id` as `GET /media/{id}?includeUsage=1` gives it to `token`.
fn item_usage(api: &Api, token: &str, id: &str) -> Json {
    let r = api.call("GET", &format!("/media/{id}?includeUsage=1"), Some(token), None);
    data(&r)["item"]["usage"].clone()
}

/// Each listed item's `usage` for `token`, by id, and the page's cursor.
fn listed_usage(api: &Api, token: &str, query: &str) -> (Vec<(String, Json)>, Option<String>) {
    let r = api.call("GET", &format!("/media?includeUsage=1&{query}"), Some(token), None);
    let d = data(&r);
    let items =
        d["items"].as_array().unwrap().iter().map(|m| (m["id"].as_str().unwrap().to_owned(), m["usage"].clone()));
    (items.collect(), d["nextCursor"].as_str().map(str::to_owned))
}

#[test]
fn the_lists_usage_count_and_the_items_count_agree_on_what_counts_as_a_use() {
    let api = setup();
    let live = register(&api, "live.png", "image/png");
    let draft_only = register(&api, "draft-only.png", "image/png");
    let overlay = register(&api, "overlay.png", "image/png");
    let in_trash = register(&api, "in-trash.png", "image/png");
    // A live use; an entry never published; a published entry's unpublished draft (its live
    // media still counts); an entry in the trash.
    entry(&api, "live", "published", json!({"hero": live}));
    entry(&api, "draft", "draft", json!({"hero": draft_only}));
    let edited = entry(&api, "edited", "published", json!({"hero": live}));
    data(&api.put(&format!("/content/posts/{edited}"), &json!({"draft": true, "data": {"hero": overlay}})));
    let gone = entry(&api, "gone", "published", json!({"hero": in_trash}));
    data(&api.delete(&format!("/content/posts/{gone}")));
    api.drain();
    let items = data(&api.get("/media?include=usage&includeUsage=1"))["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 4);
    let mut counts = Vec::new();
    for m in &items {
        let id = m["id"].as_str().unwrap();
        let item = item_usage(&api, ADMIN, id)["count"].clone();
        assert_eq!((&m["usageCount"], &m["usage"]["count"]), (&item, &item), "{m}");
        counts.push((id.to_owned(), item));
    }
    let count = |id: &str| counts.iter().find(|(i, _)| i == id).unwrap().1.clone();
    assert_eq!(
        [count(&live), count(&draft_only), count(&overlay), count(&in_trash)],
        [json!(2), json!(1), json!(1), json!(0)]
    );
    // The entry in the trash still blocks the delete: the item is listed as used, and a safe
    // delete refuses it, naming the entry.
    assert!(names(&api, "usage=used").contains(&"in-trash.png".to_owned()));
    let r = api.delete(&format!("/media/{in_trash}"));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".to_owned()));
    assert_eq!(r.body_json()["error"]["details"]["entries"][0]["contentId"], json!(gone));
}

#[test]
fn include_usage_gives_each_listed_item_the_items_own_usage_summary() {
    let api = setup();
    let live = register(&api, "live.png", "image/png");
    let draft_only = register(&api, "draft.png", "image/png");
    let in_trashed_entry = register(&api, "trashed-entry.png", "image/png");
    let unindexed = register(&api, "unindexed.pdf", "application/pdf");
    let free = register(&api, "free.pdf", "application/pdf");
    entry(&api, "a", "published", json!({"hero": live}));
    entry(&api, "b", "published", json!({"hero": {"id": live}}));
    entry(&api, "c", "draft", json!({"hero": draft_only}));
    let gone = entry(&api, "d", "draft", json!({"hero": in_trashed_entry}));
    data(&api.delete(&format!("/content/posts/{gone}")));
    api.drain();
    api.entry_too_large_using(&[&unindexed]);
    let (_, editor) = token(&api, "editor", "editor");
    let (_, author) = token(&api, "author", "author");
    let subscriber = api.token("subscriber", &["media:read"]);
    // An editor, an admin: the counts of the item route (entries outside the trash, entries too
    // large to index), with the coverage.
    let complete = json!({"scope": "all_content_collections", "status": "complete"});
    for who in [ADMIN, editor.as_str()] {
        let (items, next) = listed_usage(&api, who, "");
        assert_eq!(next, None);
        assert_eq!(items.len(), 5);
        for (id, usage) in &items {
            assert_eq!(usage, &item_usage(&api, who, id), "{id}");
            assert_eq!(usage["coverage"], complete);
        }
        let count = |id: &str| items.iter().find(|(i, _)| i == id).unwrap().1["count"].clone();
        assert_eq!(
            [count(&live), count(&draft_only), count(&in_trashed_entry), count(&unindexed), count(&free)],
            [json!(2), json!(1), json!(0), json!(1), json!(0)]
        );
    }
    // The list's own count (`include=usage`) counts the same uses: not the entry in the trash.
    let r = api.get("/media?includeUsage=1&include=usage&q=trashed-entry");
    let item = data(&r)["items"][0].clone();
    assert_eq!((item["usage"]["count"].clone(), item["usageCount"].clone()), (json!(0), json!(0)));
    // Below editor: the summary, without a count, as the item route gives it.
    for who in [author.as_str(), subscriber.as_str()] {
        let (items, _) = listed_usage(&api, who, "");
        assert_eq!(items.len(), 5);
        for (id, usage) in &items {
            assert_eq!(usage, &json!({"count": null, "coverage": complete}), "{id}");
            assert_eq!(usage, &item_usage(&api, who, id));
        }
    }
    // While coverage is not complete: no count for anyone, the status said.
    api.db.connection().execute_batch("UPDATE ec_posts SET hero = NULL WHERE slug = 'a'").unwrap();
    let (items, _) = listed_usage(&api, ADMIN, "mimeType=image/*");
    assert_eq!(items.len(), 3);
    for (id, usage) in &items {
        assert_eq!(usage["count"], Json::Null, "{id}");
        assert_ne!(usage["coverage"]["status"], "complete");
        assert_eq!(usage, &item_usage(&api, ADMIN, id));
    }
    // Without it, no `usage`; `includeUsage` takes the flag values only.
    assert!(data(&api.get("/media"))["items"].as_array().unwrap().iter().all(|m| m.get("usage").is_none()));
    assert!(data(&api.get("/media?includeUsage=0"))["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m.get("usage").is_none()));
    assert!(data(&api.get("/media?includeUsage=true"))["items"][0]["usage"].is_object());
    for bad in ["includeUsage=2", "includeUsage=yes", "includeUsage=1&includeUsage=1"] {
        let r = api.get(&format!("/media?{bad}"));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()), "{bad}");
    }
}

#[test]
fn include_usage_counts_only_the_items_on_the_page_in_one_statement() {
    let api = setup();
    let ids: Vec<String> = (0..30).map(|i| register(&api, &format!("m{i}.png"), "image/png")).collect();
    for (i, id) in ids.iter().enumerate().take(10) {
        entry(&api, &format!("e{i}"), "published", json!({"hero": id}));
    }
    api.drain();
    let count = |query: &str| {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let r = api.request_on(&metered, &request("GET", &format!("/media?{query}"), Some(ADMIN), None));
        assert_eq!(r.status, 200, "{}", r.body);
        metered.usage().statements
    };
    // The summaries add the coverage read and one count, whatever the page holds.
    let plain = count("limit=20");
    assert_eq!(count("limit=20&includeUsage=1"), plain + 2);
    assert_eq!(count("limit=5&includeUsage=1"), plain + 2);
    // Paged, each item is counted as the item route counts it.
    let (first, next) = listed_usage(&api, ADMIN, "limit=20");
    let (rest, end) = listed_usage(&api, ADMIN, &format!("limit=20&cursor={}", next.unwrap()));
    assert_eq!(end, None);
    assert_eq!(first.len() + rest.len(), 30);
    for (id, usage) in first.iter().chain(&rest) {
        let expected = if ids[..10].contains(id) { 1 } else { 0 };
        assert_eq!(usage["count"], expected, "{id}");
    }
}

/// What one `GET /media?{query}` read, and its answer.
fn rows_read(api: &Api, query: &str) -> (u64, Json) {
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let r = api.request_on(&metered, &request("GET", &format!("/media?{query}"), Some(ADMIN), None));
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    (metered.usage().rows_read, data(&r))
}

#[test]
fn a_filtered_page_reads_a_bounded_number_of_rows_however_large_the_library() {
    let api = setup();
    let window = u64::from(LIST_WINDOW);
    // A library ten windows large, of PNGs; one PDF, the oldest.
    let n = 10 * LIST_WINDOW as usize;
    api.db
        .connection()
        .execute_batch(&format!(
            "INSERT INTO media (id, filename, mime_type, storage_key, created_at)
             VALUES ('pdf', 'needle.pdf', 'application/pdf', 'k/pdf', '2000-01-01T00:00:00.000Z');
             WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n})
             INSERT INTO media (id, filename, mime_type, storage_key, created_at)
             SELECT printf('m%06d', i), printf('hay-%06d.png', i), 'image/png', printf('k/%06d', i),
                    printf('2020-01-01T00:00:00.%03dZ', i % 1000) FROM k;"
        ))
        .unwrap();
    for query in [
        "mimeType=application/pdf",
        "mimeType=application/pdf&includeUsage=1",
        "q=needle",
        "search=needle",
        "mimeType=video/*,text/plain&q=hay",
        "usage=used",
        "mimeType=application/*&includeUsage=1&include=usage",
    ] {
        let (read, page) = rows_read(&api, &format!("limit=100&{query}"));
        // A window of rows (and what each reads of the usage index, nothing here), never the
        // library: without the window this reads all of it.
        assert!(read <= 3 * window, "{query}: a page read {read} rows of a library of {n}");
        assert!(page["items"].as_array().unwrap().is_empty(), "{query}: the needle is older than a window");
        assert!(page["nextCursor"].is_string(), "{query}: a cursor to go on from");
    }
    // Followed, the cursors reach the PDF, a window a page.
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    let found = loop {
        pages += 1;
        let at = cursor.map(|c| format!("&cursor={c}")).unwrap_or_default();
        let (read, page) = rows_read(&api, &format!("limit=100&mimeType=application/pdf&includeUsage=1{at}"));
        assert!(read <= 3 * window, "page {pages}: {read}");
        if let Some(item) = page["items"].as_array().unwrap().first() {
            assert!(page.get("nextCursor").is_none(), "the last page has no cursor");
            break item.clone();
        }
        cursor = Some(page["nextCursor"].as_str().unwrap().to_owned());
        assert!(pages <= 11);
    };
    assert_eq!((found["filename"].clone(), pages), (json!("needle.pdf"), n.div_ceil(LIST_WINDOW as usize) + 1));
    assert_eq!(found["usage"]["count"], 0);
    // Unfiltered, a page reads about its limit.
    let (read, page) = rows_read(&api, "limit=10");
    assert_eq!(page["items"].as_array().unwrap().len(), 10);
    assert!(read <= 3 * 11, "{read}");
}

#[test]
fn media_record_the_token_that_registered_or_uploaded_them_and_never_another() {
    let api = setup();
    let (a_id, a) = token(&api, "a", "author");
    let (b_id, b) = token(&api, "b", "author");
    let registered = register_as(&api, &a, "a.png", "image/png");
    assert_eq!(registered["authorId"], a_id.as_str());
    let uploaded = upload_as(&api, &a, 1);
    assert_eq!(uploaded.status, 201);
    let uploaded = data(&uploaded)["item"].clone();
    assert_eq!(uploaded["authorId"], a_id.as_str());
    assert_eq!(register_as(&api, ADMIN, "admin.png", "image/png")["authorId"], "bootstrap");
    // The same bytes again, from b: the item a uploaded, still a's.
    let again = upload_as(&api, &b, 1);
    assert_eq!((again.status, data(&again)["item"]["authorId"].clone()), (200, json!(a_id)));
    assert_ne!(a_id, b_id);
    // Shown by every read.
    let id = uploaded["id"].as_str().unwrap();
    assert_eq!(data(&api.get(&format!("/media/{id}")))["item"]["authorId"], a_id.as_str());
    let listed = data(&api.get("/media?limit=100"));
    assert!(listed["items"].as_array().unwrap().iter().all(|m| m["authorId"].is_string()));
    // The author is written once: the database refuses to change it, and keeps it on other
    // changes.
    let conn = api.db.connection();
    let e = conn.execute("UPDATE media SET author_id = ?1 WHERE id = ?2", [b_id.as_str(), id]).unwrap_err();
    assert!(e.to_string().contains("author_id is written once"), "{e}");
    assert!(conn.execute("UPDATE media SET author_id = NULL WHERE id = ?1", [id]).is_err(), "nor cleared");
    assert_eq!(conn.execute("UPDATE media SET author_id = author_id, alt = 'x' WHERE id = ?1", [id]).unwrap(), 1);
    assert_eq!(data(&api.get(&format!("/media/{id}")))["item"]["authorId"], a_id.as_str());
}

/// A media row from before authors were recorded (no author).
fn legacy(api: &Api, id: &str) {
    api.db
        .connection()
        .execute(
            "INSERT INTO media (id, filename, mime_type, storage_key) VALUES (?1, 'old.png', 'image/png', ?1)",
            [id],
        )
        .unwrap();
}

#[test]
fn below_editor_a_token_updates_and_deletes_only_its_own_media() {
    let api = setup();
    let (_, a) = token(&api, "a", "author");
    let (_, b) = token(&api, "b", "author");
    let (_, editor) = token(&api, "editor", "editor");
    let contributor = api.token("contributor", SCOPES);
    let theirs = register_as(&api, &b, "b.png", "image/png")["id"].as_str().unwrap().to_owned();
    let uploaded_by_b = data(&upload_as(&api, &b, 2))["item"]["id"].as_str().unwrap().to_owned();
    legacy(&api, "old");
    let put = |token: &str, id: &str, body: &Json| {
        api.call("PUT", &format!("/media/{id}"), Some(token), Some(body.to_string().as_bytes()))
    };
    let delete = |token: &str, id: &str| api.call("DELETE", &format!("/media/{id}"), Some(token), None);
    // a may change neither b's items nor one without an author: 403, nothing changed.
    for id in [theirs.as_str(), uploaded_by_b.as_str(), "old"] {
        let before = stored(&api, id);
        let r = put(&a, id, &json!({"alt": "mine now", "width": 9}));
        assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()), "{id}: {}", r.body);
        let r = delete(&a, id);
        assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()), "{id}: {}", r.body);
        assert_eq!(stored(&api, id), before, "{id}: unchanged");
        // Nor may a contributor (the route's floor), whoever's it is.
        assert_eq!(code(&put(&contributor, id, &json!({"alt": "x"}))), "FORBIDDEN");
        assert_eq!(code(&delete(&contributor, id)), "FORBIDDEN");
        assert_eq!(stored(&api, id), before, "{id}: unchanged");
    }
    // Not even once it is in the trash.
    data(&delete(&b, &theirs));
    let before = stored(&api, &theirs);
    assert_eq!(code(&delete(&a, &theirs)), "FORBIDDEN");
    assert_eq!(code(&put(&a, &theirs, &json!({"caption": "x"}))), "FORBIDDEN");
    assert_eq!(stored(&api, &theirs), before);
    // a's own: updated and trashed; then the restore needs an editor, as before.
    let mine = register_as(&api, &a, "a.png", "image/png")["id"].as_str().unwrap().to_owned();
    let r = put(&a, &mine, &json!({"alt": "A", "caption": "C", "width": 640, "height": 480}));
    let item = data(&r)["item"].clone();
    assert_eq!(
        (&item["alt"], &item["caption"], &item["width"], &item["height"]),
        (&json!("A"), &json!("C"), &json!(640), &json!(480))
    );
    assert_eq!(data(&delete(&a, &mine)), json!({"deleted": true, "id": mine}));
    assert!(data(&api.get(&format!("/media/{mine}")))["item"]["deletedAt"].is_string());
    assert_eq!(data(&delete(&a, &mine))["deleted"], true, "a retry answers the same");
    assert_eq!(code(&api.call("POST", &format!("/media/{mine}/restore"), Some(&a), None)), "FORBIDDEN");
    // An item in use is refused to its owner as to anyone.
    let used = register_as(&api, &a, "used.png", "image/png")["id"].as_str().unwrap().to_owned();
    entry(&api, "e", "published", json!({"hero": used}));
    api.drain();
    let r = delete(&a, &used);
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".to_owned()));
    // `force` and `permanent` stay admin's.
    for q in ["force=true", "permanent=true"] {
        let r = api.call("DELETE", &format!("/media/{used}?{q}"), Some(&a), None);
        assert_eq!(code(&r), "FORBIDDEN", "{q}");
        let r = api.call("DELETE", &format!("/media/{used}?{q}"), Some(&editor), None);
        assert_eq!(code(&r), "FORBIDDEN", "{q}");
    }
    // Editors and admins change and delete anyone's, the unknown author's included.
    for (who, id) in [(editor.as_str(), "old"), (ADMIN, uploaded_by_b.as_str())] {
        assert_eq!(data(&put(who, id, &json!({"alt": "edited"})))["item"]["alt"], "edited");
        assert_eq!(data(&delete(who, id))["deleted"], true);
    }
    // Unknown items: 404 for everyone.
    assert_eq!(code(&put(&a, "nope", &json!({"alt": "x"}))), "NOT_FOUND");
    assert_eq!(code(&delete(&a, "nope")), "NOT_FOUND");
}

/// D1 as a request sees it while the database changes between its statements: `meanwhile` runs
/// right before the first statement whose SQL contains `before`.
struct Meanwhile<'a> {
    db: &'a media_usage_worker::exec::sqlite::SqliteExecutor,
    before: &'a str,
    meanwhile: &'a str,
}

impl Executor for Meanwhile<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.db.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        if stmts.iter().any(|s| s.sql().contains(self.before)) {
            self.db.connection().execute_batch(self.meanwhile).unwrap();
        }
        self.db.batch(stmts).await
    }
}

#[test]
fn the_statement_that_moves_an_item_to_the_trash_checks_its_owner_itself() {
    // Were an item's author to change between the request's read and its move (the database
    // refuses that; here the refusal is lifted), the move still takes only the caller's own.
    let api = setup();
    let (a_id, a) = token(&api, "a", "author");
    let (b_id, _) = token(&api, "b", "author");
    let id = register_as(&api, &a, "a.png", "image/png")["id"].as_str().unwrap().to_owned();
    let meanwhile =
        format!("DROP TRIGGER media_author_id_fixed; UPDATE media SET author_id = '{b_id}' WHERE id = '{id}'");
    let exec = Meanwhile { db: &api.db, before: "UPDATE media SET deleted_at", meanwhile: &meanwhile };
    let r = api.request_on(&exec, &request("DELETE", &format!("/media/{id}"), Some(&a), None));
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()), "{}", r.body);
    assert!(data(&api.get(&format!("/media/{id}")))["item"]["deletedAt"].is_null(), "not moved");
    assert_ne!(a_id, b_id);
}

#[test]
fn put_takes_emdash_media_update_body_strictly() {
    let api = setup();
    let id = register(&api, "a.png", "image/png");
    let put = |body: &str| api.call("PUT", &format!("/media/{id}"), Some(ADMIN), Some(body.as_bytes()));
    // Each key alone; the rest kept.
    let item = data(&put(r#"{"alt": "An alt"}"#))["item"].clone();
    assert_eq!(
        (item["alt"].clone(), item["caption"].clone(), item["width"].clone()),
        (json!("An alt"), Json::Null, Json::Null)
    );
    let item = data(&put(r#"{"caption": "A caption", "width": 1, "height": 1000000}"#))["item"].clone();
    assert_eq!(
        (item["alt"].clone(), item["caption"].clone(), item["width"].clone(), item["height"].clone()),
        (json!("An alt"), json!("A caption"), json!(1), json!(1_000_000))
    );
    assert_eq!(data(&put(r#"{"width": 2.0}"#))["item"]["width"], 2, "a whole number written as a float");
    // An empty string clears a text; an empty object changes nothing and answers the item.
    assert_eq!(data(&put(r#"{"alt": ""}"#))["item"]["alt"], "");
    let before = stored(&api, &id);
    let item = data(&put("{}"))["item"].clone();
    assert_eq!(stored(&api, &id), before);
    assert_eq!(item, data(&api.get(&format!("/media/{id}")))["item"], "the item as GET shows it");
    let longest = "é".repeat(1000);
    assert_eq!(
        data(&put(&json!({"alt": longest, "caption": longest}).to_string()))["item"]["caption"],
        longest.as_str()
    );
    // Everything else: 400 with each issue located, nothing changed.
    let before = stored(&api, &id);
    for (body, paths) in [
        (r#"{"alt": null}"#, vec!["alt"]),
        (r#"{"caption": null}"#, vec!["caption"]),
        (r#"{"width": null}"#, vec!["width"]),
        (r#"{"alt": 5, "caption": ["x"]}"#, vec!["alt", "caption"]),
        (r#"{"width": 0, "height": -1}"#, vec!["width", "height"]),
        (r#"{"width": 1.5}"#, vec!["width"]),
        (r#"{"height": "10"}"#, vec!["height"]),
        (r#"{"width": 1000001}"#, vec!["width"]),
        (r#"{"filename": "x.png", "storageKey": "k", "authorId": "me"}"#, vec!["authorId", "filename", "storageKey"]),
        (r#"{"alt": "ok", "extra": 1}"#, vec!["extra"]),
        (r#"[]"#, vec![""]),
        (r#""alt""#, vec![""]),
    ] {
        let r = put(body);
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()), "{body}: {}", r.body);
        let got: Vec<String> = r.body_json()["error"]["details"]["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, paths, "{body}");
    }
    let too_long = json!({"alt": "x".repeat(1001)}).to_string();
    assert_eq!(code(&put(&too_long)), "VALIDATION_ERROR");
    let too_long = json!({"caption": "x".repeat(1001)}).to_string();
    assert_eq!(code(&put(&too_long)), "VALIDATION_ERROR");
    for body in ["", "{", "not json"] {
        assert_eq!(code(&put(body)), "INVALID_JSON", "{body:?}");
    }
    assert_eq!(stored(&api, &id), before, "nothing changed");
}

/// `PUT /media/{id}` by `token`, with the same body each time.
fn update_request(id: &str, token: &str) -> media_usage_worker::api::Request {
    let body = json!({"alt": "Updated", "caption": "New", "width": 12, "height": 34}).to_string();
    request("PUT", &format!("/media/{id}"), Some(token), Some(body.as_bytes()))
}

#[test]
fn a_crash_at_any_statement_of_an_update_and_the_clients_retry_converge_to_the_update() {
    for as_author in [false, true] {
        let api = setup();
        let (_, a) = token(&api, "a", "author");
        let caller = if as_author { a.clone() } else { ADMIN.to_owned() };
        let id = register_as(&api, &a, "a.png", "image/png")["id"].as_str().unwrap().to_owned();
        let reference = api.snapshot();
        let metered = Metered::new(&reference.db, MonotonicClock::default());
        assert_eq!(reference.request_on(&metered, &update_request(&id, &caller)).status, 200);
        let statements = metered.usage().statements;
        // The update (and, for a stored token, its look-up and use): each can crash.
        assert!(statements >= if as_author { 2 } else { 1 }, "{statements}");
        let expected = stored(&reference, &id);
        for n in 1..=statements {
            let run = api.snapshot();
            let r = run.request_on(&Faulty::new(&run.db, Some(n)), &update_request(&id, &caller));
            assert_eq!((r.status, code(&r)), (500, "INTERNAL_ERROR".to_owned()), "crash at {n}: {}", r.body);
            let retry = run.request_on(&run.db, &update_request(&id, &caller));
            assert_eq!(retry.status, 200, "crash at {n}: {}", retry.body);
            assert_eq!(stored(&run, &id), expected, "author {as_author}, crash at {n}");
        }
        // The same for a commit reported as failed: the retry writes the same values again.
        for n in 1..=statements {
            let run = api.snapshot();
            let r = run.request_on(&Faulty::commit_unknown(&run.db, n), &update_request(&id, &caller));
            if r.status >= 500 {
                assert_eq!(run.request_on(&run.db, &update_request(&id, &caller)).status, 200);
            } else {
                assert_eq!(r.status, 200);
            }
            assert_eq!(stored(&run, &id), expected, "author {as_author}, commit-unknown at {n}");
        }
        // Someone else's item: the crash and the retry change nothing.
        if as_author {
            let (_, b) = token(&api, "b", "author");
            let theirs = register_as(&api, &b, "b.png", "image/png")["id"].as_str().unwrap().to_owned();
            let before = stored(&api, &theirs);
            for n in 1..=statements {
                let r = api.request_on(&Faulty::new(&api.db, Some(n)), &update_request(&theirs, &a));
                assert!(r.status == 500 || r.status == 403, "{}", r.body);
                assert_eq!(code(&api.request_on(&api.db, &update_request(&theirs, &a))), "FORBIDDEN");
                assert_eq!(stored(&api, &theirs), before);
            }
        }
    }
}
