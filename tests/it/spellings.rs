//! Every spelling of a reference a page can show, through the API with a media bucket and
//! `MEDIA_PUBLIC_URL` set, in an entry's live data and in its draft: "Used in" lists the entry at
//! its path, the safe delete refuses, and the purge keeps the row and the object. Look-alikes
//! cost nothing: no occurrence, and the item is deleted and purged as if nothing named it.

use media_usage_worker::storage::memory::MemoryStorage;
use serde_json::{json, Value as Json};

use crate::media_files::{form, png};
use crate::support::{self, code, data, db, settings_with, Api, Listed, ADMIN};

const PUBLIC: &str = "https://cdn.example.com/media";

/// A site with a bucket, files served under [`PUBLIC`], and a collection `posts`.
fn site() -> Api {
    let settings = settings_with(&[("MEDIA_PUBLIC_URL", PUBLIC), ("MEDIA_TRASH_DAYS", "0")]);
    let api = Api { db: db(), config: settings.config(|| 0.0), storage: Some(MemoryStorage::new(1.8e12)) };
    let fields = json!([
        {"slug": "title", "type": "string"},
        {"slug": "hero", "type": "image"},
        {"slug": "notes", "type": "text"},
        {"slug": "extra", "type": "json"}
    ]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    api
}

/// Uploads a new image; returns its id and storage key.
fn upload(api: &Api, salt: u8) -> (String, String) {
    let bytes = png(4, 3, salt);
    let (ty, body) = form(&[("file", Some("p.png"), Some("image/png"), &bytes)]);
    let r = api.request("POST", "/media", Some(ADMIN), Some(&body), |r| r.content_type = Some(ty));
    let item = data(&r)["item"].clone();
    (item["id"].as_str().unwrap().to_owned(), item["storageKey"].as_str().unwrap().to_owned())
}

/// Runs ticks (with the bucket) until one finds nothing due.
fn drain(api: &Api) {
    for _ in 0..50 {
        let report = api.tick();
        assert_eq!(report.error, None);
        if report.outcome == media_usage_worker::model::state::TickOutcome::Idle {
            return;
        }
    }
    panic!("the ticks never went idle");
}

/// Puts every trashed item past its days in the trash (the purge compares the database clock).
fn age_trash(api: &Api) {
    api.db
        .connection()
        .execute_batch("UPDATE media SET deleted_at = '2000-01-01T00:00:00.000Z' WHERE deleted_at IS NOT NULL")
        .unwrap();
    // As long ago for the purge's rest between passes.
    crate::support::purge_rest_over(&api.db);
}

fn media_exists(api: &Api, id: &str) -> bool {
    api.db.connection().query_row("SELECT count(*) FROM media WHERE id = ?1", [id], |r| r.get::<_, i64>(0)).unwrap()
        == 1
}

fn object_exists(api: &Api, key: &str) -> bool {
    api.storage.as_ref().unwrap().keys().iter().any(|k| k == key)
}

/// The entries "Used in" lists for `media`, under complete coverage.
fn used_in(api: &Api, media: &str) -> Vec<Listed> {
    let (items, coverage) = support::used_in(api, media);
    assert_eq!(coverage, "complete");
    items
}

/// A spelling: a name, the entry data naming the media `(id, key)` (and another id), the path
/// it is found at and how.
type Spelling = (&'static str, fn(&str, &str, &str) -> Json, fn(&str) -> String, &'static str);

fn object_key_path(id: &str) -> String {
    if id.starts_with(|c: char| c.is_ascii_alphabetic()) {
        format!("extra.captions.{id}")
    } else {
        format!("extra.captions[\"{id}\"]")
    }
}

fn spellings() -> Vec<Spelling> {
    let notes = |_: &str| "notes".to_owned();
    vec![
        (
            "image transformation on the public host",
            |_, key, _| json!({"notes": format!("<img src=\"https://cdn.example.com/cdn-cgi/image/width=800,format=auto/media/{key}\">")}),
            notes,
            "embedded_url",
        ),
        (
            "image transformation of the public URL on another host",
            |_, key, _| json!({"notes": format!("https://img.example/cdn-cgi/image/w=400/https://cdn.example.com/media/{key}")}),
            notes,
            "embedded_url",
        ),
        (
            "the host in capitals",
            |_, key, _| json!({"notes": format!("https://CDN.Example.COM/media/{key}")}),
            notes,
            "embedded_url",
        ),
        (
            "the default port",
            |_, key, _| json!({"notes": format!("https://cdn.example.com:443/media/{key}")}),
            notes,
            "embedded_url",
        ),
        (
            "http and its port",
            |_, key, _| json!({"notes": format!("http://cdn.example.com:80/media/{key}")}),
            notes,
            "embedded_url",
        ),
        (
            "scheme-relative",
            |_, key, _| json!({"notes": format!("<img src=\"//cdn.example.com/media/{key}\">")}),
            notes,
            "embedded_url",
        ),
        (
            "an image endpoint's encoded href",
            |_, key, _| json!({"notes": format!("<img src=\"/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2F{key}&w=800\">")}),
            notes,
            "embedded_url",
        ),
        (
            "an image endpoint's encoded url, the & escaped",
            |_, key, _| json!({"notes": format!("<a href=\"/_image?w=1&amp;url=https%3A%2F%2Fcdn.example.com%2Fmedia%2F{key}\">x</a>")}),
            notes,
            "embedded_url",
        ),
        (
            "JSON-escaped slashes",
            |_, key, _| json!({"notes": format!("\\/_emdash\\/api\\/media\\/file\\/{key}")}),
            notes,
            "embedded_url",
        ),
        (
            "HTML character references",
            |_, key, _| json!({"notes": format!("<img src=\"&#47;_emdash&#x2F;api&sol;media/file/{key}\">")}),
            notes,
            "embedded_url",
        ),
        (
            "a query string ends the key",
            |_, key, _| json!({"notes": format!("/_emdash/api/media/file/{key}&w=1")}),
            notes,
            "embedded_url",
        ),
        (
            "an id as an object key",
            |id, _, _| json!({"extra": {"captions": {id: "A cat"}}}),
            object_key_path,
            "embedded_id",
        ),
        (
            "ids in a shortcode",
            |id, _, other| json!({"notes": format!("[gallery ids=\"{other},{id}\"]")}),
            notes,
            "embedded_id",
        ),
        (
            "an id in an attribute",
            |id, _, _| json!({"notes": format!("<figure data-media-id=\"{id}\">")}),
            notes,
            "embedded_id",
        ),
    ]
}

/// Look-alikes of the media `(id, key)`: none is a use.
fn look_alikes(id: &str, key: &str) -> Vec<Json> {
    vec![
        json!({"notes": format!("https://other.example/media/{key}")}),
        json!({"notes": format!("https://cdn.example.com/cdn-cgi/image/w=800/https://other.example/media/{key}")}),
        json!({"notes": format!("https://other.example/cdn-cgi/image/w=800/media/{key}")}),
        json!({"notes": format!("/_emdash/api/media/file/{key}x")}),
        json!({"notes": format!("https://cdn.example.com/media/{key}.bak")}),
        json!({"notes": format!("{id}0 x{id} {id}-copy")}),
        json!({"extra": {format!("{id}_alt"): 1}}),
        json!({"hero": {"provider": "external", "id": id}}),
        json!({"notes": format!("data:image/png;base64,{id}")}),
    ]
}

#[test]
fn every_spelling_a_page_shows_is_a_use_live_and_draft() {
    let api = site();
    let (other, _) = upload(&api, 0);
    for (n, (name, data_of, path_of, kind)) in spellings().into_iter().enumerate() {
        for draft in [false, true] {
            let (id, key) = upload(&api, 10 + 2 * n as u8 + u8::from(draft));
            let d = data_of(&id, &key, &other);
            let slug = format!("e{n}-{draft}");
            let entry = if draft {
                let e = data(
                    &api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": {"title": "T"}})),
                );
                let e = e["item"]["id"].as_str().unwrap().to_owned();
                data(&api.put(&format!("/content/posts/{e}"), &json!({"draft": true, "data": d})));
                e
            } else {
                let e = data(&api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": d})));
                e["item"]["id"].as_str().unwrap().to_owned()
            };
            drain(&api);
            let listed = used_in(&api, &id);
            assert_eq!(listed, [(entry.clone(), vec![(path_of(&id), kind.to_owned())])], "{name}, draft {draft}: {d}");
            let r = api.delete(&format!("/media/{id}"));
            assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".to_owned()), "{name}, draft {draft}");
            // Forced into the trash and long past its days: the purge still keeps it.
            assert_eq!(api.call("DELETE", &format!("/media/{id}?force=true"), Some(ADMIN), None).status, 200);
            age_trash(&api);
            drain(&api);
            assert!(media_exists(&api, &id) && object_exists(&api, &key), "{name}, draft {draft}: purged while used");
        }
    }
}

#[test]
fn look_alikes_cost_nothing_and_leave_the_item_deletable() {
    let api = site();
    for draft in [false, true] {
        let (id, key) = upload(&api, 100 + u8::from(draft));
        for (n, d) in look_alikes(&id, &key).into_iter().enumerate() {
            let slug = format!("l{n}-{draft}");
            if draft {
                let e = data(&api.post("/content/posts", &json!({"slug": slug, "data": {"title": "T"}})));
                let e = e["item"]["id"].as_str().unwrap().to_owned();
                data(&api.put(&format!("/content/posts/{e}"), &json!({"draft": true, "data": d})));
            } else {
                data(&api.post("/content/posts", &json!({"slug": slug, "data": d})));
            }
        }
        drain(&api);
        let occurrences: i64 =
            api.db.connection().query_row("SELECT count(*) FROM _emdash_media_usage", [], |r| r.get(0)).unwrap();
        assert_eq!(occurrences, 0, "draft {draft}");
        assert!(used_in(&api, &id).is_empty());
        assert_eq!(api.delete(&format!("/media/{id}")).status, 200, "draft {draft}");
        age_trash(&api);
        drain(&api);
        assert!(!media_exists(&api, &id) && !object_exists(&api, &key), "draft {draft}: the unused item is purged");
    }
}
