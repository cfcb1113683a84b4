//! Replacing a media item's file (`POST /media/{id}/replace`): the new bytes under a new key, the
//! earlier file kept as a version (shown by `GET /media/{id}`, still served, never swept), its
//! refusals, a racing change, and the versions going with their item when it is deleted for good.

use futures::executor::block_on;
use media_usage_worker::api::Response;
use serde_json::{json, Value as Json};

use crate::deletion::Hooked;
use crate::media_files::{form, png, Part};
use crate::support::{code, data, scalar, Api, TickRun, ADMIN};

const HOUR_MS: f64 = 3_600_000.0;
const T0: f64 = 1_800_000_000_000.0;

pub(crate) fn upload(api: &Api, bytes: &[u8]) -> Json {
    let (ty, body) = form(&[("file", Some("photo.png"), Some("image/png"), bytes), ("alt", None, None, b"Alt")]);
    let r = api.request("POST", "/media", Some(ADMIN), Some(&body), |r| r.content_type = Some(ty));
    assert_eq!(r.status, 201, "{}", r.body);
    data(&r)["item"].clone()
}

pub(crate) fn replace_as(api: &Api, id: &str, token: &str, parts: &[Part<'_>]) -> Response {
    let (ty, body) = form(parts);
    api.request("POST", &format!("/media/{id}/replace"), Some(token), Some(&body), |r| r.content_type = Some(ty))
}

pub(crate) fn replace(api: &Api, id: &str, bytes: &[u8]) -> Response {
    replace_as(api, id, ADMIN, &[("file", Some("new.png"), Some("image/png"), bytes)])
}

fn s(v: &Json) -> String {
    v.as_str().unwrap().to_owned()
}

fn objects(api: &Api) -> Vec<String> {
    api.storage.as_ref().unwrap().keys()
}

fn served(api: &Api, key: &str) -> Response {
    api.request("GET", &format!("/media/file/{key}"), None, None, |_| {})
}

fn header<'a>(r: &'a Response, name: &str) -> Option<&'a str> {
    r.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
}

#[test]
fn a_replace_gives_the_item_a_new_key_and_keeps_the_earlier_file_as_a_served_version() {
    let api = Api::with_storage(T0);
    let item = upload(&api, &png(10, 10, 1));
    let (id, old) = (s(&item["id"]), s(&item["storageKey"]));
    let r = replace(&api, &id, &png(30, 20, 2));
    assert_eq!(r.status, 200, "{}", r.body);
    let now = data(&r)["item"].clone();
    let new = s(&now["storageKey"]);
    assert_ne!(new, old, "a new key: the old one keeps its bytes");
    assert!(new.len() == 36 && new.ends_with(".png"), "an upload's key: {new}");
    assert_eq!(now["id"], item["id"]);
    assert_eq!((now["alt"].clone(), now["filename"].clone()), (json!("Alt"), json!("photo.png")), "kept");
    assert_eq!((now["width"].clone(), now["height"].clone()), (json!(30), json!(20)), "the new file's");
    assert_ne!(now["contentHash"], item["contentHash"]);
    assert_eq!(now["createdAt"], item["createdAt"]);
    assert_eq!(now["url"], format!("https://cdn.example/media/{new}"));
    // GET shows the same item with its versions.
    let got = data(&api.get(&format!("/media/{id}")))["item"].clone();
    assert_eq!(got, now, "the answer is the item as GET shows it");
    let versions = got["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1);
    let v = &versions[0];
    assert_eq!(v["storageKey"], old.as_str());
    assert_eq!(v["url"], format!("https://cdn.example/media/{old}"));
    assert_eq!(
        (v["width"].clone(), v["height"].clone(), v["filename"].clone()),
        (json!(10), json!(10), json!("photo.png"))
    );
    assert_eq!((v["replacedBy"].clone(), v["linked"].clone()), (json!("bootstrap"), json!(0)));
    assert!(v["replacedAt"].as_str().unwrap().ends_with('Z'));
    assert!(got.get("versionsMore").is_none());
    // Both files are served, each cacheable for a year; the bytes under each key never change.
    for (key, bytes) in [(&old, png(10, 10, 1)), (&new, png(30, 20, 2))] {
        let f = served(&api, key);
        assert_eq!(f.status, 200, "{key}: {}", f.body);
        assert_eq!(header(&f, "cache-control"), Some("public, max-age=31536000, immutable"));
        assert_eq!(api.storage.as_ref().unwrap().bytes(key).unwrap(), bytes);
    }
    // The list does not show versions.
    let list = data(&api.get("/media"));
    assert!(list["items"][0].get("versions").is_none(), "{list}");
    // A file name given is taken.
    let r = replace_as(
        &api,
        &id,
        ADMIN,
        &[("file", Some("x.png"), Some("image/png"), &png(1, 1, 3)), ("filename", None, None, b"logo-2026.png")],
    );
    assert_eq!(data(&r)["item"]["filename"], "logo-2026.png", "{}", r.body);
    assert_eq!(data(&r)["item"]["versions"].as_array().unwrap().len(), 2);
    assert_eq!(objects(&api).len(), 3);
}

#[test]
fn identical_bytes_answer_the_item_unchanged_and_another_items_bytes_are_a_conflict() {
    let api = Api::with_storage(T0);
    let item = upload(&api, &png(10, 10, 1));
    let other = upload(&api, &png(10, 10, 9));
    let id = s(&item["id"]);
    let r = replace(&api, &id, &png(10, 10, 1));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(data(&r)["item"]["storageKey"], item["storageKey"]);
    assert_eq!(data(&r)["item"]["versions"], json!([]));
    let r = replace(&api, &id, &png(10, 10, 9));
    assert_eq!((r.status, code(&r).as_str()), (409, "CONFLICT"), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["id"], other["id"]);
    assert_eq!(objects(&api).len(), 2, "nothing stored");
    assert_eq!(scalar(&api, "SELECT count(*) FROM media_versions"), 0);
}

#[test]
fn refused_replaces_say_why_and_store_nothing() {
    let mut api = Api::with_storage(T0);
    api.config.uploads.max_bytes = 1000;
    let item = upload(&api, &png(10, 10, 1));
    let id = s(&item["id"]);
    let unknown = replace(&api, "nope", &png(1, 1, 2));
    assert_eq!((unknown.status, code(&unknown).as_str()), (404, "NOT_FOUND"));
    let r = replace_as(&api, &id, ADMIN, &[("file", Some("a.gif"), Some("image/png"), b"GIF89a-not-a-png")]);
    assert_eq!((r.status, code(&r).as_str()), (400, "INVALID_TYPE"), "{}", r.body);
    let r = replace_as(&api, &id, ADMIN, &[("file", Some("a.exe"), Some("application/x-msdownload"), b"MZ\x90\0")]);
    assert_eq!((r.status, code(&r).as_str()), (400, "INVALID_TYPE"), "{}", r.body);
    let mut big = png(1, 1, 3);
    big.resize(2000, 0);
    let r = replace(&api, &id, &big);
    assert_eq!((r.status, code(&r).as_str()), (413, "PAYLOAD_TOO_LARGE"), "{}", r.body);
    let r = replace_as(&api, &id, ADMIN, &[("alt", None, None, b"no file")]);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    let r = replace_as(&api, &id, ADMIN, &[("filename", None, None, b"")]);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    let r = api.post(&format!("/media/{id}/replace"), &json!({"file": "x"}));
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    // In the trash: restore it first.
    assert_eq!(api.delete(&format!("/media/{id}")).status, 200);
    let r = replace(&api, &id, &png(1, 1, 4));
    assert_eq!((r.status, code(&r).as_str()), (409, "CONFLICT"), "{}", r.body);
    assert_eq!(objects(&api), [s(&item["storageKey"])], "no refusal stored anything");
    assert_eq!(scalar(&api, "SELECT count(*) FROM media_versions"), 0);
    // Without a bucket.
    let api = Api::new();
    let r = replace(&api, "any", &png(1, 1, 0));
    assert_eq!((r.status, code(&r).as_str()), (503, "MEDIA_STORAGE_UNAVAILABLE"));
}

#[test]
fn an_author_replaces_only_its_own_media() {
    let api = Api::with_storage(T0);
    let author = api.token("author", &["media:write", "media:read"]);
    let (ty, body) = form(&[("file", Some("mine.png"), Some("image/png"), &png(4, 4, 1))]);
    let r = api.request("POST", "/media", Some(&author), Some(&body), |r| r.content_type = Some(ty));
    let mine = s(&data(&r)["item"]["id"]);
    let theirs = s(&upload(&api, &png(4, 4, 2))["id"]);
    let r = replace_as(&api, &theirs, &author, &[("file", Some("a.png"), Some("image/png"), &png(4, 4, 3))]);
    assert_eq!((r.status, code(&r).as_str()), (403, "FORBIDDEN"), "{}", r.body);
    let r = replace_as(&api, &mine, &author, &[("file", Some("a.png"), Some("image/png"), &png(4, 4, 3))]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(objects(&api).len(), 3, "the refused replace stored nothing");
}

#[test]
fn a_replace_racing_another_change_of_the_item_changes_nothing_and_loses_no_file() {
    for (race, expected) in [
        // Another replace took the item first: its file and the one it replaced both stay.
        (
            "INSERT INTO media_versions (storage_key, media_id, filename, mime_type, content_hash)
               SELECT storage_key, id, filename, mime_type, content_hash FROM media;
             UPDATE media SET storage_key = 'raced.png', content_hash = 'raced';",
            "CONFLICT",
        ),
        // The item went to the trash.
        ("UPDATE media SET deleted_at = '2026-01-01T00:00:00.000Z';", "CONFLICT"),
        // It was deleted for good.
        ("DELETE FROM media;", "NOT_FOUND"),
    ] {
        let api = Api::with_storage(T0);
        let item = upload(&api, &png(10, 10, 1));
        let (id, old) = (s(&item["id"]), s(&item["storageKey"]));
        let versions_before = scalar(&api, "SELECT count(*) FROM media_versions");
        let r = block_on(async {
            let hooked = Hooked::new(&api.db).before("_emdash_batch_guard", |db| {
                db.connection().execute_batch(race).unwrap();
            });
            let (ty, body) = form(&[("file", Some("n.png"), Some("image/png"), &png(3, 3, 3))]);
            let req = crate::support::request("POST", &format!("/media/{id}/replace"), Some(ADMIN), Some(&body));
            let req = media_usage_worker::api::Request { content_type: Some(ty), ..req };
            let storage = api.storage.as_ref().map(|s| s as &dyn media_usage_worker::storage::Storage);
            let r = media_usage_worker::api::handle_with(&hooked, &api.config, storage, &req).await;
            hooked.done();
            r
        });
        assert_eq!((r.status, code(&r)), (if expected == "NOT_FOUND" { 404 } else { 409 }, expected.to_owned()));
        assert_eq!(objects(&api), std::slice::from_ref(&old), "{race}: the new object is deleted again");
        if race.starts_with("INSERT") {
            assert_eq!(versions_before, 0);
            assert_eq!(scalar(&api, &format!("SELECT count(*) FROM media_versions WHERE storage_key = '{old}'")), 1);
            assert_eq!(scalar(&api, "SELECT count(*) FROM media WHERE storage_key = 'raced.png'"), 1);
        } else {
            assert_eq!(scalar(&api, "SELECT count(*) FROM media_versions"), 0, "{race}");
        }
    }
}

/// Runs ticks with the storage sweep's grace long past.
fn sweep(api: &Api) -> media_usage_worker::tick::report::TickReport {
    let store = api.storage.as_ref().unwrap();
    store.now_ms.set(store.now_ms.get() + 48.0 * HOUR_MS);
    let policy = crate::support::policy().with_storage_grace_ms(HOUR_MS);
    let storage = Some(store as &dyn media_usage_worker::storage::Storage);
    TickRun::new(crate::support::budget(), &policy).storage(storage).run(&api.db)
}

#[test]
fn the_storage_sweep_never_deletes_a_versions_object() {
    let api = Api::with_storage(T0);
    let item = upload(&api, &png(10, 10, 1));
    let id = s(&item["id"]);
    data(&replace(&api, &id, &png(10, 10, 2)));
    data(&replace(&api, &id, &png(10, 10, 3)));
    // An orphan the sweep does take, to show it ran.
    crate::media_files::put_raw(api.storage.as_ref().unwrap(), "orphan.png", png(1, 1, 1), "image/png");
    let report = sweep(&api);
    assert_eq!(report.count("objectsDeleted"), 1, "{report:?}");
    assert_eq!(objects(&api).len(), 3, "the item's file and its two versions stay");
    // In the trash too (a version's file is not served then, but it is kept for a restore).
    assert_eq!(api.delete(&format!("/media/{id}")).status, 200);
    for key in objects(&api) {
        assert_eq!(served(&api, &key).status, 404, "{key}: not served while the item is in the trash");
    }
    sweep(&api);
    assert_eq!(objects(&api).len(), 3);
    data(&api.post(&format!("/media/{id}/restore"), &json!({})));
    for key in objects(&api) {
        assert_eq!(served(&api, &key).status, 200, "{key}: served again once restored");
    }
}

#[test]
fn a_version_registered_by_json_is_never_served() {
    let api = Api::with_storage(T0);
    let id = api.register_media("json.png");
    crate::media_files::put_raw(api.storage.as_ref().unwrap(), "json.png", png(1, 1, 1), "image/png");
    let r = replace(&api, &id, &png(2, 2, 2));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(data(&r)["item"]["versions"][0]["storageKey"], "json.png");
    assert_eq!(served(&api, "json.png").status, 404, "the worker did not upload it");
    assert_eq!(served(&api, &s(&data(&r)["item"]["storageKey"])).status, 200);
}

#[test]
fn deleting_an_item_for_good_deletes_its_versions_rows_then_their_uploaded_objects() {
    // A permanent delete (safe, then forced) and the trash's purge.
    for how in ["permanent", "forced", "purge"] {
        let api = Api::with_storage(T0);
        let item = upload(&api, &png(10, 10, 1));
        let id = s(&item["id"]);
        data(&replace(&api, &id, &png(10, 10, 2)));
        data(&replace(&api, &id, &png(10, 10, 3)));
        let kept = s(&upload(&api, &png(10, 10, 4))["storageKey"]);
        assert_eq!(objects(&api).len(), 4);
        match how {
            "permanent" => assert_eq!(api.delete(&format!("/media/{id}?permanent=true")).status, 200),
            "forced" => assert_eq!(api.delete(&format!("/media/{id}?permanent=true&force=true")).status, 200),
            _ => {
                assert_eq!(api.delete(&format!("/media/{id}")).status, 200);
                crate::support::exec_sql(
                    &api,
                    "UPDATE media SET deleted_at = '2001-01-01T00:00:00.000Z' WHERE deleted_at IS NOT NULL",
                );
                let report = api.tick();
                assert_eq!(report.count("mediaPurged"), 1, "{report:?}");
            }
        }
        assert_eq!(scalar(&api, "SELECT count(*) FROM media_versions"), 0, "{how}");
        assert_eq!(objects(&api), [kept], "{how}: the item's objects went, with its versions'");
    }
}

fn revert(api: &Api, id: &str, body: &Json) -> Response {
    api.post(&format!("/media/{id}/revert"), body)
}

#[test]
fn a_revert_makes_a_version_current_again_and_its_retry_answers_the_same() {
    let api = Api::with_storage(T0);
    let first = upload(&api, &png(10, 10, 1));
    let id = s(&first["id"]);
    let second = data(&replace_as(
        &api,
        &id,
        ADMIN,
        &[("file", Some("b.png"), Some("image/png"), &png(20, 20, 2)), ("filename", None, None, b"b.png")],
    ))["item"]
        .clone();
    let r = revert(&api, &id, &json!({"version": first["storageKey"]}));
    assert_eq!(r.status, 200, "{}", r.body);
    let now = data(&r)["item"].clone();
    for field in
        ["storageKey", "url", "filename", "width", "height", "contentHash", "mimeType", "size", "alt", "createdAt"]
    {
        assert_eq!(now[field], first[field], "{field}");
    }
    let versions = now["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{now}");
    assert_eq!(versions[0]["storageKey"], second["storageKey"], "the replaced file is a version now");
    assert_eq!(served(&api, &s(&second["storageKey"])).status, 200);
    // The client's retry after a lost answer: the item as it is.
    let again = revert(&api, &id, &json!({"version": first["storageKey"]}));
    assert_eq!((again.status, data(&again)["item"].clone()), (200, now.clone()));
    // And back.
    let r = revert(&api, &id, &json!({"version": second["storageKey"]}));
    assert_eq!(data(&r)["item"]["storageKey"], second["storageKey"]);
    assert_eq!(data(&r)["item"]["versions"][0]["storageKey"], first["storageKey"]);
    assert_eq!(scalar(&api, "SELECT count(*) FROM media_versions"), 1);
}

#[test]
fn refused_reverts_say_why_and_change_nothing() {
    let api = Api::with_storage(T0);
    let first = upload(&api, &png(10, 10, 1));
    let id = s(&first["id"]);
    data(&replace(&api, &id, &png(10, 10, 2)));
    let other = s(&upload(&api, &png(10, 10, 3))["id"]);
    data(&replace(&api, &other, &png(10, 10, 4)));
    let others_version = data(&api.get(&format!("/media/{other}")))["item"]["versions"][0]["storageKey"].clone();
    let before = data(&api.get(&format!("/media/{id}")));
    for (body, status, expected) in [
        (json!({}), 400, "VALIDATION_ERROR"),
        (json!({"version": first["storageKey"], "extra": 1}), 400, "VALIDATION_ERROR"),
        (json!({"version": 5}), 400, "VALIDATION_ERROR"),
        (json!({"version": ""}), 400, "VALIDATION_ERROR"),
        (json!({"version": "nope.png"}), 404, "NOT_FOUND"),
        (json!({"version": others_version}), 404, "NOT_FOUND"),
    ] {
        let r = revert(&api, &id, &body);
        assert_eq!((r.status, code(&r)), (status, expected.to_owned()), "{body}: {}", r.body);
    }
    let r = api.call("POST", &format!("/media/{id}/revert"), Some(ADMIN), Some(b"not json"));
    assert_eq!(r.status, 400, "{}", r.body);
    let r = revert(&api, "nope", &json!({"version": first["storageKey"]}));
    assert_eq!((r.status, code(&r).as_str()), (404, "NOT_FOUND"));
    let author = api.token("author", &["media:write"]);
    let body = json!({"version": first["storageKey"]}).to_string();
    let r = api.call("POST", &format!("/media/{id}/revert"), Some(&author), Some(body.as_bytes()));
    assert_eq!((r.status, code(&r).as_str()), (403, "FORBIDDEN"));
    assert_eq!(data(&api.get(&format!("/media/{id}"))), before, "nothing changed");
    assert_eq!(api.delete(&format!("/media/{id}")).status, 200);
    let r = revert(&api, &id, &json!({"version": first["storageKey"]}));
    assert_eq!((r.status, code(&r).as_str()), (409, "CONFLICT"), "in the trash");
}

#[test]
fn a_revert_racing_another_change_changes_nothing_unless_it_is_the_same_revert() {
    for (race, status) in [
        // A replace took the item first.
        (
            "INSERT INTO media_versions (storage_key, media_id, filename, mime_type, content_hash)
               SELECT storage_key, id, filename, mime_type, content_hash FROM media;
             UPDATE media SET storage_key = 'raced.png', content_hash = 'raced';",
            409,
        ),
        // The same revert, by another request: this one finds it done.
        (
            "INSERT INTO media_versions (storage_key, media_id, filename, mime_type, content_hash)
               SELECT storage_key, id, filename, mime_type, content_hash FROM media;
             UPDATE media SET storage_key = (SELECT storage_key FROM media_versions ORDER BY rowid LIMIT 1);
             DELETE FROM media_versions WHERE rowid = (SELECT min(rowid) FROM media_versions);",
            200,
        ),
        ("UPDATE media SET deleted_at = '2026-01-01T00:00:00.000Z';", 409),
        // The version went (its item's purge, say).
        ("DELETE FROM media_versions;", 404),
    ] {
        let api = Api::with_storage(T0);
        let first = upload(&api, &png(10, 10, 1));
        let id = s(&first["id"]);
        let second = data(&replace(&api, &id, &png(10, 10, 2)))["item"]["storageKey"].clone();
        let r = block_on(async {
            let hooked = Hooked::new(&api.db).before("_emdash_batch_guard", |db| {
                db.connection().execute_batch(race).unwrap();
            });
            let body = json!({"version": first["storageKey"]}).to_string();
            let req =
                crate::support::request("POST", &format!("/media/{id}/revert"), Some(ADMIN), Some(body.as_bytes()));
            let r = media_usage_worker::api::handle(&hooked, &api.config, &req).await;
            hooked.done();
            r
        });
        assert_eq!(r.status, status, "{race}: {}", r.body);
        // No file is lost: every key is the item's file or one of its versions.
        let keys = scalar(
            &api,
            &format!(
                "SELECT count(*) FROM (SELECT storage_key FROM media UNION SELECT storage_key FROM media_versions)
                 WHERE storage_key IN ('{}', {})",
                s(&first["storageKey"]),
                second
            ),
        );
        let expected = if race.starts_with("DELETE") { 1 } else { 2 };
        assert_eq!(keys, expected, "{race}");
    }
}

/// A collection `posts` with an image field and a text field.
fn posts(api: &Api) {
    let fields = json!([{"slug": "hero", "type": "image"}, {"slug": "body", "type": "text"}]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
}

fn entry(api: &Api, slug: &str, d: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": d}));
    assert_eq!(r.status, 201, "{}", r.body);
    s(&data(&r)["item"]["id"])
}

#[test]
fn a_file_url_to_an_earlier_key_is_a_use_of_the_item_and_used_in_says_which_version() {
    let api = Api::with_storage(T0);
    posts(&api);
    let item = upload(&api, &png(10, 10, 1));
    let (id, old) = (s(&item["id"]), s(&item["storageKey"]));
    let url = |key: &str| format!("<img src=\"https://cdn.example/media/{key}\">");
    // An entry by id, one linking the current file (soon an earlier one) by URL.
    let by_id = entry(&api, "by-id", json!({"hero": id}));
    let linking = entry(&api, "linking", json!({"body": url(&old)}));
    api.drain();
    let new = s(&data(&replace(&api, &id, &png(10, 10, 2)))["item"]["storageKey"]);
    // Written after the replace, a URL to the earlier key still names the item.
    let late = entry(&api, "late", json!({"body": format!("{} {}", url(&old), url(&new))}));
    api.drain();
    let page = data(&api.get(&format!("/media/{id}/usage?limit=100")));
    let entries = page["items"].as_array().unwrap();
    let find = |cid: &str| entries.iter().find(|e| e["contentId"] == cid).unwrap_or_else(|| panic!("{cid}: {page}"));
    assert_eq!(find(&by_id)["versions"], json!([]));
    assert_eq!(find(&by_id)["occurrences"][0]["linkedKey"], Json::Null, "an id names no key");
    assert_eq!(find(&linking)["versions"], json!([old]));
    assert_eq!(find(&linking)["occurrences"][0]["linkedKey"], old.as_str());
    assert_eq!(find(&linking)["occurrences"][0]["referenceType"], "embedded_url");
    let late_keys: Vec<Json> =
        find(&late)["occurrences"].as_array().unwrap().iter().map(|o| o["linkedKey"].clone()).collect();
    let mut expected = vec![json!(old), json!(new)];
    expected.sort_by_key(|k| k.as_str().unwrap().to_owned());
    assert_eq!(late_keys, expected, "one occurrence per key a path links");
    assert_eq!(find(&late)["versions"], json!([old]));
    assert_eq!(entries.len(), 3);
    // The version counts the entries linking to it.
    let got = data(&api.get(&format!("/media/{id}")))["item"].clone();
    assert_eq!(got["versions"][0]["linked"], 2, "{got}");
    // It blocks the item's delete, as any use.
    let r = api.delete(&format!("/media/{id}"));
    assert_eq!((r.status, code(&r).as_str()), (409, "MEDIA_IN_USE"), "{}", r.body);
    // Reading the entries by id shows the new file: the item's url is the new key's.
    assert_eq!(got["url"], format!("https://cdn.example/media/{new}"));
    // The sitemap lists the key each page links.
    let xml = api.call("GET", "/sitemap-posts.xml", None, None).body;
    for key in [&old, &new] {
        assert!(xml.contains(&format!("<image:loc>https://cdn.example/media/{key}</image:loc>")), "{key}: {xml}");
    }
    // Unlinked, the version counts nothing.
    data(&api.put(&format!("/content/posts/{linking}"), &json!({"data": {"body": "gone"}})));
    data(&api.put(&format!("/content/posts/{late}"), &json!({"data": {"body": url(&new)}})));
    api.drain();
    assert_eq!(data(&api.get(&format!("/media/{id}")))["item"]["versions"][0]["linked"], 0);
}

/// Ages every version by `days` (the purge reads the database clock) and ends the purge's rest.
fn age_versions(api: &Api, days: u32) {
    crate::support::exec_sql(
        api,
        &format!("UPDATE media_versions SET replaced_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-{days} days')"),
    );
    crate::support::purge_rest_over(&api.db);
}

#[test]
fn a_version_nobody_links_is_purged_after_the_window_row_then_object_and_a_linked_one_never() {
    let api = Api::with_storage(T0);
    posts(&api);
    let linked_item = upload(&api, &png(10, 10, 1));
    let free_item = upload(&api, &png(10, 10, 2));
    let (linked_id, linked_key) = (s(&linked_item["id"]), s(&linked_item["storageKey"]));
    let (free_id, free_key) = (s(&free_item["id"]), s(&free_item["storageKey"]));
    entry(&api, "links", json!({"body": format!("https://cdn.example/media/{linked_key}")}));
    data(&replace(&api, &linked_id, &png(10, 10, 3)));
    data(&replace(&api, &free_id, &png(10, 10, 4)));
    api.drain();
    let versions = || scalar(&api, "SELECT count(*) FROM media_versions");
    // Within the window: kept (and revertible).
    age_versions(&api, 29);
    assert_eq!(api.tick().count("versionsPurged"), 0);
    assert_eq!(versions(), 2);
    // Past it, but coverage is not complete (an entry waits in the queue): kept.
    age_versions(&api, 31);
    crate::support::exec_sql(&api, "UPDATE _emdash_media_usage_index_status SET status = 'stale'");
    assert_eq!(api.tick().count("versionsPurged"), 0);
    assert_eq!(versions(), 2);
    crate::support::exec_sql(&api, "UPDATE _emdash_media_usage_index_status SET status = 'complete'");
    crate::support::purge_rest_over(&api.db);
    let store = api.storage.as_ref().unwrap();
    assert!(store.keys().contains(&free_key));
    let report = api.tick();
    assert_eq!(report.count("versionsPurged"), 1, "{report:?}");
    assert_eq!(versions(), 1, "the linked version stays");
    assert!(!store.keys().contains(&free_key), "the unlinked version's object went after its row");
    assert!(store.keys().contains(&linked_key));
    assert_eq!(served(&api, &linked_key).status, 200, "still served");
    // A revert to the purged version is a 404 now.
    let r = revert(&api, &free_id, &json!({"version": free_key}));
    assert_eq!(r.status, 404);
    // The pass rests: an idle tick purges nothing and reads one row.
    assert_eq!(api.tick().count("versionsPurged"), 0);
    // An entry too large to index that lists the item keeps its versions too.
    data(&replace(&api, &free_id, &png(10, 10, 5)));
    api.entry_too_large_using(&[free_id.as_str()]);
    age_versions(&api, 31);
    assert_eq!(api.tick().count("versionsPurged"), 0);
    assert_eq!(versions(), 2);
}

/// The version purge's statement carries the rule itself: each of its conditions, made false by
/// another writer just before it runs (after the lane's own look found the version due and
/// coverage complete), keeps the version and its object.
#[test]
fn each_condition_of_the_version_purge_alone_keeps_the_version() {
    let cases: [(&str, &str); 4] = [
        ("coverage turned incomplete", "UPDATE _emdash_media_usage_index_status SET status = 'stale'"),
        (
            "coverage under other reference rules",
            "UPDATE _emdash_media_usage_index_status SET rules_version = 'other rules'",
        ),
        (
            "an occurrence links the version",
            "UPDATE _emdash_media_usage SET linked_key = (SELECT storage_key FROM media_versions) \
             WHERE rowid = (SELECT min(rowid) FROM _emdash_media_usage)",
        ),
        (
            "the version was replaced since the window",
            "UPDATE media_versions SET replaced_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        ),
    ];
    for (what, change) in cases {
        let api = Api::with_storage(T0);
        posts(&api);
        let item = upload(&api, &png(10, 10, 1));
        let other = upload(&api, &png(10, 10, 2));
        let (id, key) = (s(&item["id"]), s(&item["storageKey"]));
        // An entry using another item, so the index has an occurrence to point elsewhere.
        entry(&api, "other", json!({"body": format!("https://cdn.example/media/{}", s(&other["storageKey"]))}));
        data(&replace(&api, &id, &png(10, 10, 3)));
        api.drain();
        age_versions(&api, 31);
        let store = api.storage.as_ref().unwrap();
        let hooked = Hooked::new(&api.db).before("DELETE FROM media_versions", |db| {
            db.connection().execute_batch(change).unwrap();
        });
        let storage = api.storage.as_ref().map(|s| s as &dyn media_usage_worker::storage::Storage);
        let report = TickRun::new(api.config.tick_budget, &api.config.background).storage(storage).run(&hooked);
        hooked.done();
        drop(hooked);
        assert!(report.error.is_none(), "{what}: {report:?}");
        assert_eq!(report.count("versionsPurged"), 0, "{what}: {report:?}");
        assert_eq!(scalar(&api, "SELECT count(*) FROM media_versions"), 1, "{what}");
        assert!(store.keys().contains(&key), "{what}: the object stays");
    }
}
