//! The permanent media delete without `force`: the safe delete's rule is carried by the statement
//! that deletes, so a client's retry after a 500 is as safe as its first try. For every statement
//! of the delete, a crash and (separately) a commit-unknown there; then a content write that
//! starts using the item; then the client's retry of the same request: an item in use is never
//! removed, row or object. Without the content write the retry completes, leaving neither.

use media_usage_worker::clock::FnClock;
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::Metered;
use serde_json::{json, Value as Json};

use crate::media_files::{form, png};
use crate::support::{code, data, request, Api, ADMIN};

const HOUR_MS: f64 = 3_600_000.0;
const T0: f64 = 1_800_000_000_000.0;

/// A collection with an image field, and an uploaded image nothing uses (in the trash when
/// `trashed`); every write projected. Returns the API and the item.
fn setup(trashed: bool) -> (Api, Json) {
    let api = Api::with_storage(T0);
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    let (ty, body) = form(&[("file", Some("photo.png"), Some("image/png"), &png(3, 3, 1))]);
    let r = api.request("POST", "/media", Some(ADMIN), Some(&body), |r| r.content_type = Some(ty));
    let item = data(&r)["item"].clone();
    if trashed {
        data(&api.delete(&format!("/media/{}", item["id"].as_str().unwrap())));
    }
    api.drain();
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
    (api, item)
}

fn rows(api: &Api) -> i64 {
    api.db.connection().query_row("SELECT count(*) FROM media", [], |r| r.get(0)).unwrap()
}

fn objects(api: &Api) -> Vec<String> {
    api.storage.as_ref().unwrap().keys()
}

/// Lets the storage sweep's grace period pass and runs ticks with the bucket until idle.
fn sweep(api: &Api) {
    let store = api.storage.as_ref().unwrap();
    store.now_ms.set(store.now_ms.get() + 48.0 * HOUR_MS);
    for _ in 0..5 {
        api.tick();
    }
}

/// The statements a permanent delete of the fixture's item issues without a fault.
fn statements(trashed: bool) -> u64 {
    let (api, item) = setup(trashed);
    let clock = FnClock(|| 0.0);
    let metered = Metered::new(&api.db, &clock);
    let path = format!("/media/{}?permanent=true", item["id"].as_str().unwrap());
    let r = api.request_on(&metered, &request("DELETE", &path, Some(ADMIN), None));
    assert_eq!(r.status, 200, "{}", r.body);
    metered.usage().statements
}

#[test]
fn a_retried_permanent_delete_never_removes_an_item_a_content_write_started_using_meanwhile() {
    let mut runs = 0;
    for trashed in [false, true] {
        let n = statements(trashed);
        assert!(n >= 1);
        // Every statement, and one past the last (the first try does not fail at all).
        for k in 1..=n + 1 {
            for kind in ["crash", "commit-unknown"] {
                for write in [true, false] {
                    let (api, item) = setup(trashed);
                    let id = item["id"].as_str().unwrap().to_owned();
                    let key = item["storageKey"].as_str().unwrap().to_owned();
                    let what = format!("trashed={trashed}, {kind} at {k} of {n}, content write: {write}");
                    let req = request("DELETE", &format!("/media/{id}?permanent=true"), Some(ADMIN), None);
                    let first = match kind {
                        "crash" => api.request_on(&Faulty::new(&api.db, Some(k)), &req),
                        _ => api.request_on(&Faulty::commit_unknown(&api.db, k), &req),
                    };
                    runs += 1;
                    if first.status == 200 {
                        // Deleted before any write could use it: row and object are gone.
                        assert_eq!((rows(&api), objects(&api).len()), (0, 0), "{what}");
                        continue;
                    }
                    assert_eq!(first.status, 500, "{what}: {}", first.body);
                    let existed = rows(&api) == 1;
                    if write {
                        let r = api.post("/content/posts", &json!({"slug": "uses", "data": {"hero": id}}));
                        assert_eq!(r.status, 201, "{what}: {}", r.body);
                        api.drain();
                    }
                    let retry = api.request_on(&api.db, &req);
                    if write && existed {
                        // In use by the time of the retry: refused, row and object kept.
                        assert_eq!((retry.status, code(&retry)), (409, "MEDIA_IN_USE".to_owned()), "{what}");
                        let entries = &retry.body_json()["error"]["details"]["entries"];
                        assert_eq!(entries[0]["collection"], "posts", "{what}");
                        assert_eq!(rows(&api), 1, "{what}: the row is kept");
                        sweep(&api);
                        assert_eq!(objects(&api), std::slice::from_ref(&key), "{what}: the object is kept");
                        assert_eq!(rows(&api), 1, "{what}: the purge keeps it too");
                    } else {
                        // Nothing uses it (or it was gone before the write): the retry completes.
                        assert!(
                            retry.status == 200 || (retry.status, code(&retry).as_str()) == (404, "NOT_FOUND"),
                            "{what}: {}",
                            retry.body
                        );
                        assert_eq!(rows(&api), 0, "{what}: no row");
                        sweep(&api);
                        assert_eq!(objects(&api), Vec::<String>::new(), "{what}: no object after the sweep");
                    }
                }
            }
        }
    }
    assert!(runs >= 8, "{runs} runs");
}

#[test]
fn a_permanent_delete_whose_object_delete_fails_leaves_the_object_to_the_sweep_only() {
    for trashed in [false, true] {
        let (api, item) = setup(trashed);
        let store = api.storage.as_ref().unwrap();
        store.fail_deletes.set(true);
        let r = api.delete(&format!("/media/{}?permanent=true", item["id"].as_str().unwrap()));
        store.fail_deletes.set(false);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!((rows(&api), objects(&api).len()), (0, 1), "trashed={trashed}: the row went first");
        sweep(&api);
        assert!(objects(&api).is_empty(), "trashed={trashed}: swept");
    }
}

#[test]
fn a_permanent_delete_is_refused_as_the_safe_delete_is_whether_or_not_the_item_is_in_the_trash() {
    for trashed in [false, true] {
        let (api, item) = setup(trashed);
        let id = item["id"].as_str().unwrap();
        // Force-trashed while in use, or used while in the trash: refused with the entries.
        let entry = data(&api.post("/content/posts", &json!({"slug": "uses", "data": {"hero": id}})));
        let r = api.delete(&format!("/media/{id}?permanent=true"));
        assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".to_owned()), "trashed={trashed}: {}", r.body);
        let details = r.body_json()["error"]["details"].clone();
        assert_eq!(details["count"], 1);
        assert_eq!(details["entries"][0]["contentId"], entry["item"]["id"]);
        assert_eq!((rows(&api), objects(&api).len()), (1, 1));
        // Unused again, but coverage cannot prove it: refused for that.
        data(&api.put(
            &format!("/content/posts/{}", entry["item"]["id"].as_str().unwrap()),
            &json!({"data": {"hero": null}}),
        ));
        api.db.connection().execute_batch("UPDATE ec_posts SET slug = 'behind-the-api'").unwrap();
        let r = api.delete(&format!("/media/{id}?permanent=true"));
        assert_eq!(
            (r.status, code(&r)),
            (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".to_owned()),
            "trashed={trashed}: {}",
            r.body
        );
        assert_eq!(r.body_json()["error"]["details"]["coverage"]["status"], "stale");
        assert_eq!((rows(&api), objects(&api).len()), (1, 1));
        // Proven unused: deleted, row and object; then gone.
        api.drain();
        assert_eq!(data(&api.delete(&format!("/media/{id}?permanent=true")))["deleted"], true);
        assert_eq!((rows(&api), objects(&api).len()), (0, 0));
        let r = api.delete(&format!("/media/{id}?permanent=true"));
        assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".to_owned()));
        // With force, an admin deletes an item in use outright.
        let (api, item) = setup(trashed);
        let id = item["id"].as_str().unwrap();
        data(&api.post("/content/posts", &json!({"slug": "uses", "data": {"hero": id}})));
        assert_eq!(data(&api.delete(&format!("/media/{id}?permanent=true&force=true")))["deleted"], true);
        assert_eq!((rows(&api), objects(&api).len()), (0, 0));
    }
}
