//! The media library's list, `GET /media`: the library or the trash (`trashed=true`), filtered by
//! a part of the file name (`search`) and by use (`usage=used|unused`, by the safe delete's rule;
//! `unused` only while coverage is complete), with each item's entry count (`include=usage`,
//! capped), paged by cursor over a bounded window of examined rows.

use std::collections::BTreeMap;

use media_usage_worker::api::media::{LIST_WINDOW, USAGE_COUNT_CAP};
use serde_json::{json, Value as Json};

use crate::support::{code, data, exec_sql, Api};

fn setup() -> Api {
    let api = Api::new();
    let fields = json!([
        {"slug": "hero", "type": "image"},
        {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}
    ]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    api
}

/// Registers a media item by JSON under the file name `filename`; its id.
fn media(api: &Api, filename: &str) -> String {
    let key = format!(
        "k/{}",
        api.db.connection().query_row("SELECT count(*) FROM media", [], |r| r.get::<_, i64>(0)).unwrap()
    );
    let r = api.post("/media", &json!({"filename": filename, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

/// A published entry with these data; its id.
fn entry(api: &Api, slug: &str, d: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": d}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

/// Runs ticks until nothing is due: every write projected, coverage complete.
fn settle(api: &Api) {
    api.drain();
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
}

/// One page of `GET /media?{query}`: its items and `nextCursor`.
fn page(api: &Api, query: &str) -> (Vec<Json>, Option<String>) {
    let r = api.get(&format!("/media?{query}"));
    let d = data(&r);
    (d["items"].as_array().unwrap().clone(), d["nextCursor"].as_str().map(str::to_owned))
}

/// Every item of `GET /media?limit=100&{query}`, following the cursors (each item once), and the
/// pages it took.
fn list_all(api: &Api, query: &str) -> (Vec<Json>, usize) {
    let mut items: Vec<Json> = Vec::new();
    let mut cursor: Option<String> = None;
    for pages in 1..=100 {
        let at = cursor.as_deref().map(|c| format!("&cursor={c}")).unwrap_or_default();
        let (more, next) = page(api, &format!("limit=100&{query}{at}"));
        for m in more {
            assert!(!items.iter().any(|i| i["id"] == m["id"]), "{query}: {} listed twice", m["filename"]);
            items.push(m);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return (items, pages),
        }
    }
    panic!("{query}: the cursors do not end");
}

/// The file names `GET /media?{query}` lists, sorted.
fn names(api: &Api, query: &str) -> Vec<String> {
    let mut out: Vec<String> =
        list_all(api, query).0.iter().map(|m| m["filename"].as_str().unwrap().to_owned()).collect();
    out.sort();
    out
}

/// What the index says of each media item, by file name: whether it is in use by the safe
/// delete's rule (a current occurrence, or an entry too large to index that lists it), and how
/// many distinct entries count as using it (eligible occurrences outside the trash, or an entry
/// too large to index that lists it).
fn index_says(api: &Api) -> BTreeMap<String, (bool, i64)> {
    let conn = api.db.connection();
    let mut stmt = conn
        .prepare(
            "SELECT m.filename,
                    EXISTS (SELECT 1 FROM _emdash_media_usage_current c WHERE c.media_id = m.id)
                    OR EXISTS (SELECT 1 FROM _emdash_media_usage_work w, json_each(w.unindexed_media) j
                               WHERE j.value = m.id),
                    (SELECT count(*) FROM (SELECT collection_id, content_id
                                           FROM _emdash_media_usage_eligible c
                                           WHERE c.media_id = m.id AND c.content_deleted_at IS NULL
                                           UNION
                                           SELECT w.collection_id, w.content_id
                                           FROM _emdash_media_usage_work w, json_each(w.unindexed_media) j
                                           WHERE j.value = m.id))
             FROM media m",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get::<_, bool>(1)?, r.get::<_, i64>(2)?))))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The library's names whose index answer passes `keep`.
fn by_index(index: &BTreeMap<String, (bool, i64)>, trashed: &[&str], keep: impl Fn(&str, bool) -> bool) -> Vec<String> {
    index
        .iter()
        .filter(|(name, (used, _))| !trashed.contains(&name.as_str()) && keep(name, *used))
        .map(|(name, _)| name.clone())
        .collect()
}

#[test]
fn each_filter_alone_and_combined_lists_what_the_index_says() {
    let api = setup();
    let cat_used = media(&api, "Cat-used.png");
    media(&api, "cat-unused.png");
    let dog_used = media(&api, "dog-used.png");
    media(&api, "dog-unused.png");
    let listed = media(&api, "listed-dog.png");
    let trashed_cat = media(&api, "trashed-cat.png");
    let trashed_used = media(&api, "trashed-used-cat.png");
    entry(&api, "e1", json!({"hero": cat_used}));
    entry(&api, "e2", json!({"hero": dog_used, "gallery": [{"image": trashed_used}]}));
    // Twice in one entry: one entry.
    entry(&api, "e3", json!({"gallery": [{"image": dog_used}, {"image": dog_used}]}));
    // An entry too large to index that lists `listed` (its failed work row keeps the ids).
    api.entry_too_large_using(&[&listed]);
    settle(&api);
    assert_eq!(api.delete(&format!("/media/{trashed_cat}")).status, 200);
    assert_eq!(api.delete(&format!("/media/{trashed_used}?force=true")).status, 200);
    let trashed = ["trashed-cat.png", "trashed-used-cat.png"];
    let index = index_says(&api);
    let expect = |keep: &dyn Fn(&str, bool) -> bool| by_index(&index, &trashed, keep);
    let has = |name: &str, part: &str| name.to_lowercase().contains(part);

    // The library: everything but the trash.
    let library = ["Cat-used.png", "cat-unused.png", "dog-unused.png", "dog-used.png", "listed-dog.png"];
    assert_eq!(names(&api, ""), library);
    assert_eq!(names(&api, ""), expect(&|_, _| true));
    // Each filter alone.
    assert_eq!(names(&api, "usage=used"), ["Cat-used.png", "dog-used.png", "listed-dog.png"]);
    assert_eq!(names(&api, "usage=used"), expect(&|_, used| used));
    assert_eq!(names(&api, "usage=unused"), ["cat-unused.png", "dog-unused.png"]);
    assert_eq!(names(&api, "usage=unused"), expect(&|_, used| !used));
    assert_eq!(names(&api, "search=cat"), ["Cat-used.png", "cat-unused.png"], "case-insensitive");
    assert_eq!(names(&api, "search=CAT"), expect(&|name, _| has(name, "cat")));
    assert_eq!(names(&api, "search=g-u"), ["dog-unused.png", "dog-used.png"]);
    // Combined.
    assert_eq!(names(&api, "search=dog&usage=used"), ["dog-used.png", "listed-dog.png"]);
    assert_eq!(names(&api, "search=dog&usage=used"), expect(&|name, used| has(name, "dog") && used));
    assert_eq!(names(&api, "search=cat&usage=unused"), ["cat-unused.png"]);
    assert_eq!(names(&api, "search=cat&usage=unused"), expect(&|name, used| has(name, "cat") && !used));
    assert_eq!(names(&api, "search=unused&usage=used"), Vec::<String>::new());
    // Usage counts: distinct entries counting as using the item, as the item's own count counts
    // them (its eligible occurrences outside the trash, and an entry too large to index that
    // lists it), with any filter or none; absent unless asked. An item that counts a use is
    // "used" (here, with no entry in the trash, the converse holds too).
    for query in ["include=usage", "include=usage&usage=used", "include=usage&search=o&usage=unused"] {
        let (items, _) = list_all(&api, query);
        assert!(!items.is_empty(), "{query}");
        for m in items {
            let name = m["filename"].as_str().unwrap();
            assert_eq!(m["usageCount"], index[name].1, "{query}: {name}");
            assert_eq!(m["usageCountCapped"], false, "{query}: {name}");
            assert_eq!(m["usageCount"] != 0, index[name].0, "{query}: {name}");
        }
    }
    let counts: BTreeMap<String, Json> = list_all(&api, "include=usage")
        .0
        .iter()
        .map(|m| (m["filename"].as_str().unwrap().to_owned(), m["usageCount"].clone()))
        .collect();
    assert_eq!(counts["Cat-used.png"], 1);
    assert_eq!(counts["dog-used.png"], 2);
    assert_eq!(counts["listed-dog.png"], 1, "the entry too large to index counts");
    assert_eq!(counts["dog-unused.png"], 0);
    let (plain, _) = list_all(&api, "usage=used");
    assert!(plain.iter().all(|m| m.get("usageCount").is_none() && m.get("usageCountCapped").is_none()));

    // The trash: only with `trashed=true`, never in the library's listing, whatever the filter.
    assert_eq!(names(&api, "trashed=true"), trashed);
    assert_eq!(names(&api, "trashed=true&search=used"), ["trashed-used-cat.png"]);
    assert_eq!(names(&api, "trashed=true&usage=used"), ["trashed-used-cat.png"]);
    assert_eq!(names(&api, "trashed=true&usage=unused"), ["trashed-cat.png"]);
    assert_eq!(names(&api, "trashed=false&search=cat"), ["Cat-used.png", "cat-unused.png"]);
    for query in ["", "search=trashed", "usage=used", "usage=unused", "include=usage&search=cat"] {
        let listed = names(&api, query);
        assert!(trashed.iter().all(|t| !listed.contains(&(*t).to_owned())), "{query}: {listed:?}");
    }
    let (items, _) = list_all(&api, "trashed=true&include=usage");
    assert!(items.iter().all(|m| m["deletedAt"].is_string()), "{items:?}");
    let used_in_trash = items.iter().find(|m| m["filename"] == "trashed-used-cat.png").unwrap();
    assert_eq!(used_in_trash["usageCount"], 1);
    // Restored, an item is back in the library and out of the trash.
    data(&api.post(&format!("/media/{trashed_cat}/restore"), &json!({})));
    assert_eq!(names(&api, "trashed=true"), ["trashed-used-cat.png"]);
    assert_eq!(names(&api, "search=trashed"), ["trashed-cat.png"]);
}

#[test]
fn unused_is_refused_while_coverage_is_incomplete_and_usage_takes_used_or_unused_only() {
    let api = setup();
    let used = media(&api, "used.png");
    media(&api, "free.png");
    entry(&api, "e1", json!({"hero": used}));
    settle(&api);
    assert_eq!(names(&api, "usage=unused"), ["free.png"]);
    // A content write the index has not seen yet (behind the API: the capture trigger queues it).
    exec_sql(&api, "UPDATE ec_posts SET hero = NULL");
    for query in ["usage=unused", "usage=unused&search=free", "usage=unused&trashed=true&include=usage"] {
        let r = api.get(&format!("/media?{query}"));
        assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".to_owned()), "{query}: {}", r.body);
        assert_ne!(r.body_json()["error"]["details"]["coverage"]["status"], "complete", "{query}");
    }
    // "Used" claims no absence, and the unfiltered list none either: both answer meanwhile.
    assert_eq!(names(&api, "usage=used"), ["used.png"]);
    assert_eq!(names(&api, ""), ["free.png", "used.png"]);
    // Once a tick has projected the write, the item it no longer uses is unused.
    settle(&api);
    assert_eq!(names(&api, "usage=unused"), ["free.png", "used.png"]);
    // Bad values are 400s, whatever the coverage.
    for query in
        ["usage=maybe", "usage=", "usage=USED", "include=everything", "include=", "search=", "limit=0", "limit=101"]
    {
        let r = api.get(&format!("/media?{query}"));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()), "{query}: {}", r.body);
    }
    let r = api.get("/media?usage=sometimes");
    assert!(r.body.contains("usage"), "the issue names the parameter: {}", r.body);
}

#[test]
fn search_matches_a_part_of_the_file_name_only_and_its_wildcard_characters_are_literal() {
    let api = setup();
    for name in ["50%_off.png", "500 off.png", "a_b.png", "axb.png", "ab.png", "back\\slash.png"] {
        media(&api, name);
    }
    // A name that does not hold the text: its key, type and alt text do.
    let r = api.post(
        "/media",
        &json!({"filename": "plain.png", "mimeType": "image/png", "storageKey": "needle/plain.png", "alt": "needle"}),
    );
    data(&r);
    assert_eq!(names(&api, "search=needle"), Vec::<String>::new(), "the key and the alt text are not searched");
    assert_eq!(names(&api, "search=image"), Vec::<String>::new(), "nor the type");
    // Substrings anywhere in the name.
    assert_eq!(names(&api, "search=lain"), ["plain.png"]);
    assert_eq!(names(&api, "search=.PNG").len(), 7);
    // `%` and `_` are the characters themselves, not LIKE's wildcards; `\` too.
    assert_eq!(names(&api, "search=%"), ["50%_off.png"]);
    assert_eq!(names(&api, "search=50%"), ["50%_off.png"]);
    assert_eq!(names(&api, "search=_"), ["50%_off.png", "a_b.png"]);
    assert_eq!(names(&api, "search=a_b"), ["a_b.png"]);
    assert_eq!(names(&api, "search=%_"), ["50%_off.png"]);
    assert_eq!(names(&api, "search=\\"), ["back\\slash.png"]);
    assert_eq!(names(&api, "search=k\\s"), ["back\\slash.png"]);
}

/// Sets the creation time of the media `ids` so that they list in this order, newest first.
fn list_order(api: &Api, ids: &[String]) {
    let conn = api.db.connection();
    let n = ids.len();
    for (i, id) in ids.iter().enumerate() {
        let at = format!("2020-01-01T00:{:02}:{:02}.000Z", (n - i) / 60, (n - i) % 60);
        conn.execute("UPDATE media SET created_at = ?1 WHERE id = ?2", [&at, id]).unwrap();
    }
}

#[test]
fn a_filtered_page_examines_a_bounded_window_and_the_cursors_find_every_match_once() {
    let api = setup();
    let window = LIST_WINDOW as usize;
    // Newest first: more than a window of items that match no filter, then a used "needle", a
    // second such run, and the oldest needle.
    let newer: Vec<String> = (0..window + 50).map(|i| media(&api, &format!("hay-{i}.png"))).collect();
    let mid = media(&api, "needle-mid.png");
    let between: Vec<String> = (0..window + 50).map(|i| media(&api, &format!("straw-{i}.png"))).collect();
    let old = media(&api, "needle-old.png");
    entry(&api, "e1", json!({"hero": mid, "gallery": [{"image": old}]}));
    settle(&api);
    let order: Vec<String> = newer.iter().chain([&mid]).chain(&between).chain([&old]).cloned().collect();
    list_order(&api, &order);
    let total = order.len();
    assert!(total > 2 * window);

    for query in ["search=needle", "usage=used", "search=needle&usage=used", "usage=used&include=usage"] {
        // The first page examines a window of items that do not match: none to show, and a cursor.
        let (first, next) = page(&api, &format!("limit=100&{query}"));
        assert!(first.is_empty(), "{query}: {first:?}");
        let next = next.unwrap_or_else(|| panic!("{query}: the first page must go on"));
        // The next window holds the first needle, and goes on.
        let (second, next) = page(&api, &format!("limit=100&{query}&cursor={next}"));
        assert_eq!(second.iter().map(|m| m["id"].clone()).collect::<Vec<_>>(), [json!(mid)], "{query}");
        assert!(next.is_some(), "{query}: the second page must go on");
        // Followed to the end, the cursors find each match once (`list_all` checks), in order.
        let (items, pages) = list_all(&api, query);
        assert_eq!(items.iter().map(|m| m["id"].clone()).collect::<Vec<_>>(), [json!(mid), json!(old)], "{query}");
        assert_eq!(pages, total.div_ceil(window), "{query}: each page examined a window of the {total} items");
    }
    // A limit below the window: the page ends at the limit-th match with a cursor after it.
    let (one, next) = page(&api, "limit=1&search=-");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["id"], json!(newer[0]));
    let (two, _) = page(&api, &format!("limit=1&search=-&cursor={}", next.unwrap()));
    assert_eq!(two[0]["id"], json!(newer[1]));
    // Unfiltered, a page is `limit` items, and the cursors list the whole library once, newest
    // first.
    let (first, next) = page(&api, "limit=100");
    assert_eq!(first.len(), 100);
    assert!(next.is_some());
    let (all, pages) = list_all(&api, "");
    assert_eq!(all.iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>(), order);
    assert_eq!(pages, total.div_ceil(100));
    // Every filter over the same library, paged: what one unpaged look finds, once each.
    let (haystack, _) = list_all(&api, "search=hay");
    assert_eq!(haystack.len(), newer.len());
    let (unused, _) = list_all(&api, "usage=unused");
    assert_eq!(unused.len(), total - 2);
}

#[test]
fn usage_counts_stop_at_the_cap_and_say_so() {
    let cap = USAGE_COUNT_CAP as usize;
    let api = setup();
    let (over, under, exact) = (media(&api, "over.png"), media(&api, "under.png"), media(&api, "exact.png"));
    // `under`: one entry fewer than the cap; `exact`: the cap; `over`: more, one of them using it
    // twice.
    for i in 0..=cap {
        let mut gallery = vec![json!({"image": over})];
        if i == 0 {
            gallery.push(json!({"image": over}));
        }
        if i + 1 < cap {
            gallery.push(json!({"image": under}));
        }
        if i < cap {
            gallery.push(json!({"image": exact}));
        }
        entry(&api, &format!("e{i}"), json!({"gallery": gallery}));
    }
    settle(&api);
    let index = index_says(&api);
    assert_eq!(index["over.png"].1, cap as i64 + 1);
    assert_eq!(index["exact.png"].1, cap as i64);
    assert_eq!(index["under.png"].1, cap as i64 - 1);
    let (items, _) = list_all(&api, "include=usage");
    let by_name = |name: &str| items.iter().find(|m| m["filename"] == name).unwrap().clone();
    assert_eq!(
        (by_name("over.png")["usageCount"].clone(), by_name("over.png")["usageCountCapped"].clone()),
        (json!(cap), json!(true))
    );
    assert_eq!(
        (by_name("exact.png")["usageCount"].clone(), by_name("exact.png")["usageCountCapped"].clone()),
        (json!(cap), json!(true))
    );
    assert_eq!(
        (by_name("under.png")["usageCount"].clone(), by_name("under.png")["usageCountCapped"].clone()),
        (json!(cap - 1), json!(false))
    );
}

#[test]
fn below_editor_the_list_shows_no_usage_counts_and_takes_no_usage_filter() {
    let api = setup();
    let used = media(&api, "used.png");
    media(&api, "free.png");
    // A draft entry: only editors may learn that anything uses the item.
    let r = api.post("/content/posts", &json!({"slug": "draft", "status": "draft", "data": {"hero": used}}));
    data(&r);
    settle(&api);
    for role in ["subscriber", "contributor", "author"] {
        let token = api.token(role, &["media:read"]);
        let r = api.call("GET", "/media?include=usage", Some(&token), None);
        let items = data(&r)["items"].as_array().unwrap().clone();
        assert_eq!(items.len(), 2, "{role}: the list itself is theirs");
        for item in &items {
            let item = item.as_object().unwrap();
            assert!(!item.contains_key("usageCount") && !item.contains_key("usageCountCapped"), "{role}: {item:?}");
        }
        for query in ["usage=used", "usage=unused", "usage=used&include=usage", "usage=unused&trashed=true"] {
            let r = api.call("GET", &format!("/media?{query}"), Some(&token), None);
            assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()), "{role}, {query}: {}", r.body);
        }
    }
    // An editor (and an admin) sees the counts and filters by use.
    let editor = api.token("editor", &["media:read"]);
    let r = api.call("GET", "/media?include=usage&usage=used", Some(&editor), None);
    let items = data(&r)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!((&items[0]["id"], &items[0]["usageCount"]), (&json!(used), &json!(1)));
    assert_eq!(names(&api, "usage=unused&include=usage"), ["free.png"]);
    // The scope is still needed.
    let without_scope = api.token("editor", &["media:write"]);
    let r = api.call("GET", "/media?usage=used", Some(&without_scope), None);
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".to_owned()));
}

#[test]
fn a_page_that_holds_the_last_items_has_no_next_cursor_and_a_search_takes_up_to_255_characters() {
    let api = setup();
    for name in ["a.png", "b.png", "c.png"] {
        media(&api, name);
    }
    settle(&api);
    for query in ["limit=3", "limit=3&search=png", "limit=4", "limit=3&usage=unused"] {
        let (items, next) = page(&api, query);
        assert_eq!((items.len(), next), (3, None), "{query}: everything, and nothing after it");
    }
    let (items, next) = page(&api, "limit=2");
    assert_eq!(items.len(), 2);
    let (rest, after) = page(&api, &format!("limit=2&cursor={}", next.expect("a cursor to the third item")));
    assert_eq!((rest.len(), after), (1, None));
    let (matched, next) = page(&api, "limit=2&search=png");
    assert_eq!(matched.len(), 2);
    assert!(next.is_some(), "a filtered page that stopped at its limit says where to go on");
    let longest = "x".repeat(255);
    assert_eq!(page(&api, &format!("search={longest}")).0.len(), 0);
    let r = api.get(&format!("/media?search={longest}x"));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()));
}
