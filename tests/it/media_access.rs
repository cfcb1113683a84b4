//! The trash and the file route answer to the right people: restoring from the trash needs an
//! editor by every route (an author's re-upload of trashed bytes is refused), a deduplicated
//! upload never answers with a row that is gone, and a stored object is served, and kept from the
//! storage sweep, only while an uploaded row names it — never because a JSON registration names
//! its key.

use media_usage_worker::clock::MonotonicClock;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use serde_json::{json, Value as Json};

use crate::media_files::{form, png};
use crate::support::{code, data, request, Api, ADMIN};

const HOUR_MS: f64 = 3_600_000.0;
const T0: f64 = 1_800_000_000_000.0;

fn upload_as(api: &Api, token: &str, bytes: &[u8]) -> media_usage_worker::api::Response {
    let (ty, body) = form(&[("file", Some("photo.png"), Some("image/png"), bytes)]);
    api.request("POST", "/media", Some(token), Some(&body), |r| r.content_type = Some(ty))
}

fn objects(api: &Api) -> Vec<String> {
    api.storage.as_ref().unwrap().keys()
}

fn deleted_at(api: &Api, id: &str) -> Json {
    data(&api.get(&format!("/media/{id}")))["item"]["deletedAt"].clone()
}

#[test]
fn an_authors_reupload_of_trashed_bytes_is_refused_and_leaves_the_item_in_the_trash() {
    let api = Api::with_storage(T0);
    let author = api.token("author", &["media:write", "media:read"]);
    let bytes = png(5, 5, 1);
    let item = data(&upload_as(&api, &author, &bytes))["item"].clone();
    let id = item["id"].as_str().unwrap();
    // Live bytes: the author's re-upload is answered with the item, as before.
    let r = upload_as(&api, &author, &bytes);
    assert_eq!((r.status, data(&r)["item"]["id"].as_str()), (200, Some(id)));
    data(&api.delete(&format!("/media/{id}")));
    let store = api.storage.as_ref().unwrap();
    let before = (objects(&api), store.operations.get());
    let r = upload_as(&api, &author, &bytes);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()), "{}", r.body);
    let error = r.body_json()["error"].clone();
    assert_eq!(error["message"], "This file is in the media trash; restoring it needs an editor");
    assert_eq!(error["details"], json!({"id": id}));
    assert!(deleted_at(&api, id).is_string(), "the item stays in the trash");
    assert_eq!((objects(&api), store.operations.get()), before, "nothing stored");
    assert_eq!(store.open_uploads(), 0);
    // Nor does the restore route take it out for an author.
    let r = api.call("POST", &format!("/media/{id}/restore"), Some(&author), None);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()));
    assert!(deleted_at(&api, id).is_string());
}

#[test]
fn an_editors_or_admins_reupload_of_trashed_bytes_restores_the_item() {
    let api = Api::with_storage(T0);
    let editor = api.token("editor", &["media:write", "media:read"]);
    for (n, token) in [editor.as_str(), ADMIN].into_iter().enumerate() {
        let bytes = png(5, 5, 10 + n as u8);
        let item = data(&upload_as(&api, ADMIN, &bytes))["item"].clone();
        let id = item["id"].as_str().unwrap();
        data(&api.delete(&format!("/media/{id}")));
        let keys = objects(&api);
        let r = upload_as(&api, token, &bytes);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(data(&r)["deduplicated"], true);
        assert_eq!(data(&r)["item"]["id"], id);
        assert_eq!(data(&r)["item"]["deletedAt"], Json::Null);
        assert_eq!(deleted_at(&api, id), Json::Null, "restored");
        assert_eq!(objects(&api), keys, "nothing new stored");
    }
}

/// D1 as an upload sees it while the purge (or a restore) runs: `meanwhile` runs right before the
/// upload's restore of the trashed row it found.
struct BeforeRestore<'a> {
    db: &'a SqliteExecutor,
    meanwhile: &'a str,
}

impl Executor for BeforeRestore<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        if stmt.sql().contains("UPDATE media SET deleted_at = NULL") {
            self.db.connection().execute_batch(self.meanwhile).unwrap();
        }
        self.db.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.db.batch(stmts).await
    }
}

#[test]
fn a_deduplicated_upload_never_answers_with_a_row_that_is_gone() {
    // The purge deletes the trashed row between the upload's look-up and its restore: the upload
    // is a new one (stored, registered, 201), never an answer naming the purged row.
    let api = Api::with_storage(T0);
    let bytes = png(6, 6, 1);
    let old = data(&upload_as(&api, ADMIN, &bytes))["item"].clone();
    let old_id = old["id"].as_str().unwrap();
    data(&api.delete(&format!("/media/{old_id}")));
    let (ty, body) = form(&[("file", Some("again.png"), Some("image/png"), &bytes)]);
    let mut req = request("POST", "/media", Some(ADMIN), Some(&body));
    req.content_type = Some(ty.clone());
    let purge = format!("DELETE FROM media WHERE id = '{old_id}'");
    let r = api.request_on(&BeforeRestore { db: &api.db, meanwhile: &purge }, &req);
    assert_eq!(r.status, 201, "{}", r.body);
    let new = data(&r)["item"].clone();
    assert_ne!(new["id"], old["id"]);
    assert_ne!(new["storageKey"], old["storageKey"]);
    assert_eq!(data(&api.get(&format!("/media/{}", new["id"].as_str().unwrap())))["item"]["deletedAt"], Json::Null);
    assert!(objects(&api).contains(&new["storageKey"].as_str().unwrap().to_owned()), "its file is stored");
    // Restored by someone else meanwhile: the upload answers with the live row.
    data(&api.delete(&format!("/media/{}", new["id"].as_str().unwrap())));
    let restore = "UPDATE media SET deleted_at = NULL".to_owned();
    let keys = objects(&api);
    let r = api.request_on(&BeforeRestore { db: &api.db, meanwhile: &restore }, &req);
    assert_eq!((r.status, &data(&r)["item"]["id"]), (200, &new["id"]), "{}", r.body);
    assert_eq!(data(&r)["item"]["deletedAt"], Json::Null);
    assert_eq!(objects(&api), keys, "nothing new stored");
}

#[test]
fn a_restore_takes_only_an_item_in_the_trash_and_answers_any_other_as_it_is() {
    let api = Api::with_storage(T0);
    let item = data(&upload_as(&api, ADMIN, &png(8, 8, 1)))["item"].clone();
    let id = item["id"].as_str().unwrap();
    let restore = || {
        let clock = MonotonicClock::default();
        let metered = Metered::new(&api.db, &clock);
        let r = api.request_on(&metered, &request("POST", &format!("/media/{id}/restore"), Some(ADMIN), None));
        (r, metered.usage().rows_written)
    };
    // Not in the trash: answered as it is, nothing written.
    let (r, written) = restore();
    assert_eq!((r.status, &data(&r)["item"], written), (200, &item, 0), "{}", r.body);
    // In the trash: brought back.
    data(&api.delete(&format!("/media/{id}")));
    let (r, written) = restore();
    assert_eq!((r.status, &data(&r)["item"]["deletedAt"]), (200, &Json::Null));
    assert!(written >= 1);
    let r = api.call("POST", "/media/no-such-media/restore", Some(ADMIN), None);
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".to_owned()));
}

fn register_json(api: &Api, token: &str, key: &str) -> media_usage_worker::api::Response {
    let body = json!({"filename": "f.png", "mimeType": "image/png", "storageKey": key}).to_string();
    api.call("POST", "/media", Some(token), Some(body.as_bytes()))
}

fn file_status(api: &Api, key: &str) -> u16 {
    api.call("GET", &format!("/media/file/{key}"), None, None).status
}

/// Lets `hours` pass for the bucket and runs ticks with it until idle.
fn sweep_after(api: &Api, hours: f64) -> u64 {
    let store = api.storage.as_ref().unwrap();
    store.now_ms.set(store.now_ms.get() + hours * HOUR_MS);
    (0..5).map(|_| api.tick().count("objectsDeleted")).sum()
}

#[test]
fn a_json_registration_of_a_deleted_uploads_key_neither_serves_its_object_nor_keeps_it_from_the_sweep() {
    let api = Api::with_storage(T0);
    let author = api.token("author", &["media:write", "media:read"]);
    let store = api.storage.as_ref().unwrap();
    // An upload deleted for good whose object delete failed: the object waits for the sweep.
    let item = data(&upload_as(&api, ADMIN, &png(7, 7, 1)))["item"].clone();
    let key = item["storageKey"].as_str().unwrap().to_owned();
    store.fail_deletes.set(true);
    data(&api.delete(&format!("/media/{}?permanent=true", item["id"].as_str().unwrap())));
    store.fail_deletes.set(false);
    assert_eq!(objects(&api), std::slice::from_ref(&key));
    assert_eq!(file_status(&api, &key), 404);
    // An author registers its key by JSON: the row exists, but the object is not served ...
    let r = register_json(&api, &author, &key);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(file_status(&api, &key), 404, "a JSON registration never makes an object servable");
    let r = api.call("HEAD", &format!("/media/file/{key}"), None, None);
    assert_eq!(r.status, 404);
    // ... nor kept: the sweep takes it after its grace period, as if no row named it.
    assert_eq!(sweep_after(&api, 23.0), 0, "within the grace period");
    // That pass ended at 23 hours: the next starts a grace period later.
    assert_eq!(sweep_after(&api, 2.0), 0, "the sweep rests between passes");
    assert_eq!(sweep_after(&api, 22.0), 1);
    assert!(objects(&api).is_empty());
    // An uploaded row, in the library or in the trash, keeps its object from the sweep.
    let live = data(&upload_as(&api, ADMIN, &png(7, 7, 2)))["item"].clone();
    let trashed = data(&upload_as(&api, ADMIN, &png(7, 7, 3)))["item"].clone();
    data(&api.delete(&format!("/media/{}", trashed["id"].as_str().unwrap())));
    assert_eq!(sweep_after(&api, 1000.0), 0);
    assert_eq!(objects(&api).len(), 2);
    assert_eq!(file_status(&api, live["storageKey"].as_str().unwrap()), 200);
    assert_eq!(file_status(&api, trashed["storageKey"].as_str().unwrap()), 404, "in the trash");
}
