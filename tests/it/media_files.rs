//! Media files: multipart uploads into the (in-memory) bucket, dedup, refusals, dimensions, the
//! file route (GET and HEAD), deletes that remove the object, the storage sweep of the tick, and
//! a bucket shared with other files: only objects carrying the worker's marker are swept, served
//! or deleted.

use futures::executor::block_on;
use media_usage_worker::clock::MonotonicClock;
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::Executor;
use media_usage_worker::storage::memory::MemoryStorage;
use media_usage_worker::tick;
use serde_json::{json, Value as Json};

use crate::support::{code, data, scalar, Api, TickRun, ADMIN};

const HOUR_MS: f64 = 3_600_000.0;
const T0: f64 = 1_800_000_000_000.0;

/// A PNG header of `w`×`h` (signature and IHDR).
pub(crate) fn png(w: u32, h: u32, salt: u8) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, salt]);
    b
}

/// A JPEG header of `w`×`h` (SOI, APP0, SOF0).
fn jpeg(w: u16, h: u16) -> Vec<u8> {
    let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0];
    b.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08]);
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1, 0xFF, 0xD9]);
    b
}

/// A form part: name, file name, content type, bytes.
pub(crate) type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// A multipart form body of these parts.
pub(crate) fn form(parts: &[Part<'_>]) -> (String, Vec<u8>) {
    let boundary = "----test-boundary-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, filename, ty, bytes) in parts {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes());
        if let Some(f) = filename {
            body.extend_from_slice(format!("; filename=\"{f}\"").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        if let Some(t) = ty {
            body.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

fn upload(api: &Api, parts: &[Part<'_>]) -> media_usage_worker::api::Response {
    let (ty, body) = form(parts);
    api.request("POST", "/media", Some(ADMIN), Some(&body), |r| r.content_type = Some(ty))
}

fn upload_png(api: &Api, bytes: &[u8]) -> Json {
    let r = upload(api, &[("file", Some("photo.png"), Some("image/png"), bytes), ("alt", None, None, b"A photo")]);
    assert_eq!(r.status, 201, "{}", r.body);
    data(&r)["item"].clone()
}

fn objects(api: &Api) -> Vec<String> {
    api.storage.as_ref().unwrap().keys()
}

#[test]
fn an_upload_is_stored_registered_and_measured() {
    let api = Api::with_storage(T0);
    let item = upload_png(&api, &png(640, 480, 1));
    let key = item["storageKey"].as_str().unwrap();
    assert!(key.len() == 36 && key.ends_with(".png"), "{key}");
    assert!(key.starts_with(&format!("{:012x}", 0)), "the key sorts by upload time (the test clock is 0): {key}");
    assert_eq!(item["mimeType"], "image/png");
    assert_eq!(item["filename"], "photo.png");
    assert_eq!(
        (item["width"].clone(), item["height"].clone(), item["size"].clone()),
        (json!(640), json!(480), json!(33))
    );
    assert_eq!(item["alt"], "A photo");
    assert_eq!(item["url"], format!("https://cdn.example/media/{key}"));
    assert_eq!(objects(&api), [key]);
    assert_eq!(api.storage.as_ref().unwrap().bytes(key).unwrap(), png(640, 480, 1));
    // Given dimensions win; a JPEG's are read from its SOF header.
    let r = upload(
        &api,
        &[
            ("file", Some("x.jpg"), Some("image/jpeg"), &jpeg(300, 200)),
            ("width", None, None, b"30"),
            ("height", None, None, b"20"),
        ],
    );
    assert_eq!((data(&r)["item"]["width"].clone(), data(&r)["item"]["height"].clone()), (json!(30), json!(20)));
    let r = upload(&api, &[("file", Some("c:\\photos\\y.jpg"), None, &jpeg(1024, 768))]);
    let item = data(&r)["item"].clone();
    assert_eq!((item["width"].clone(), item["height"].clone()), (json!(1024), json!(768)));
    assert_eq!(item["mimeType"], "image/jpeg", "undeclared: the content's type");
    assert_eq!(item["filename"], "y.jpg", "no directory part");
    // Without MEDIA_PUBLIC_URL the file route is the URL.
    let mut api = Api::with_storage(T0);
    api.config.media_public_url = None;
    let item = upload_png(&api, &png(1, 1, 9));
    assert_eq!(item["url"], format!("/_emdash/api/media/file/{}", item["storageKey"].as_str().unwrap()));
}

#[test]
fn identical_bytes_answer_the_existing_media_and_store_nothing() {
    let api = Api::with_storage(T0);
    let first = upload_png(&api, &png(10, 10, 1));
    let r = upload(&api, &[("file", Some("again.png"), Some("image/png"), &png(10, 10, 1))]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(data(&r)["deduplicated"], true);
    assert_eq!(data(&r)["item"]["id"], first["id"]);
    assert_eq!(objects(&api).len(), 1);
    assert_ne!(upload_png(&api, &png(10, 10, 2))["id"], first["id"], "other bytes are other media");
}

#[test]
fn a_racing_upload_of_the_same_bytes_leaves_one_row_and_one_object() {
    use crate::deletion::Hooked;
    let api = Api::with_storage(T0);
    let bytes = png(5, 5, 3);
    // Another upload registers the same bytes between this one's dedup check and its insert.
    let rival = upload_png(&api, &bytes);
    let rival_key = rival["storageKey"].as_str().unwrap().to_owned();
    block_on(async {
        let hooked = Hooked::new(&api.db);
        let (ty, body) = form(&[("file", Some("same.png"), Some("image/png"), &bytes)]);
        let req = media_usage_worker::api::Request {
            method: "POST".into(),
            path: "/_emdash/api/media".into(),
            authorization: Some(format!("Bearer {ADMIN}")),
            body,
            content_type: Some(ty),
            ..Default::default()
        };
        // The rival's row is not visible to this upload's dedup check (not committed yet)...
        api.db
            .connection()
            .execute_batch("UPDATE media SET content_hash = 'hidden' WHERE content_hash IS NOT NULL")
            .unwrap();
        // ...and is, by the time this upload inserts its own.
        let sha = hex_sha(&bytes);
        let hooked = hooked.before("INSERT INTO media", move |db| {
            db.connection()
                .execute(&format!("UPDATE media SET content_hash = '{sha}' WHERE content_hash = 'hidden'"), [])
                .unwrap();
        });
        let storage = api.storage.as_ref().map(|s| s as &dyn media_usage_worker::storage::Storage);
        let r = media_usage_worker::api::handle_with(&hooked, &api.config, storage, &req).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body_json()["data"]["deduplicated"], true);
        assert_eq!(r.body_json()["data"]["item"]["id"], rival["id"]);
    });
    assert_eq!(objects(&api), [rival_key], "the loser's object was deleted before the response");
}

fn hex_sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn refused_uploads_say_why_and_leave_nothing_behind() {
    let mut api = Api::with_storage(T0);
    type Case<'a> = (Vec<(&'a str, Option<&'a str>, Option<&'a str>, Vec<u8>)>, u16, &'a str);
    let cases: Vec<Case<'_>> = vec![
        (vec![("file", Some("a.html"), Some("text/html"), b"<html></html>".to_vec())], 400, "INVALID_TYPE"),
        (vec![("file", Some("a.png"), Some("image/png"), b"%PDF-1.7 not a png".to_vec())], 400, "INVALID_TYPE"),
        (vec![("file", Some("a.txt"), None, b"just text".to_vec())], 400, "INVALID_TYPE"),
        (vec![("file", Some("a.svg"), Some("image/svg+xml"), b"<svg/>".to_vec())], 400, "INVALID_TYPE"),
        (vec![("alt", None, None, b"no file".to_vec())], 400, "VALIDATION_ERROR"),
        (
            vec![("file", Some("a.png"), Some("image/png"), png(1, 1, 0)), ("extra", None, None, b"x".to_vec())],
            400,
            "VALIDATION_ERROR",
        ),
        (
            vec![("file", Some("a.png"), Some("image/png"), png(1, 1, 0)), ("width", None, None, b"wide".to_vec())],
            400,
            "VALIDATION_ERROR",
        ),
        (
            vec![("file", Some("a.png"), Some("image/png"), png(1, 1, 0)), ("alt", None, None, vec![b'a'; 4097])],
            400,
            "VALIDATION_ERROR",
        ),
        (
            vec![
                ("file", Some("a.png"), Some("image/png"), png(1, 1, 0)),
                ("file", Some("b.png"), Some("image/png"), png(2, 2, 0)),
            ],
            400,
            "VALIDATION_ERROR",
        ),
    ];
    for (parts, status, expected) in &cases {
        let parts: Vec<Part<'_>> = parts.iter().map(|(n, f, t, b)| (*n, *f, *t, b.as_slice())).collect();
        let r = upload(&api, &parts);
        assert_eq!((r.status, code(&r).as_str()), (*status, *expected), "{parts:?}: {}", r.body);
    }
    // No boundary, or not multipart at all (then it is JSON).
    let r =
        api.request("POST", "/media", Some(ADMIN), Some(b"x"), |r| r.content_type = Some("multipart/form-data".into()));
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"));
    // Over the upload limit: while the edge reads the body, or inside the form.
    let (ty, body) = form(&[("file", Some("a.png"), Some("image/png"), &png(1, 1, 0))]);
    let r = api.request("POST", "/media", Some(ADMIN), Some(&body), |r| {
        r.content_type = Some(ty.clone());
        r.body_too_large = true;
    });
    assert_eq!((r.status, code(&r).as_str()), (413, "PAYLOAD_TOO_LARGE"));
    api.config.uploads.max_bytes = 20;
    let r = upload(&api, &[("file", Some("a.png"), Some("image/png"), &png(1, 1, 0))]);
    assert_eq!((r.status, code(&r).as_str()), (413, "PAYLOAD_TOO_LARGE"), "{}", r.body);
    // A configured allowlist.
    api.config.uploads = crate::support::settings_with(&[("MEDIA_ALLOWED_TYPES", "application/pdf")]).uploads();
    let r = upload(&api, &[("file", Some("a.png"), Some("image/png"), &png(1, 1, 0))]);
    assert_eq!((r.status, code(&r).as_str()), (400, "INVALID_TYPE"));
    assert_eq!(upload(&api, &[("file", Some("a.pdf"), None, b"%PDF-1.4 x")]).status, 201);
    // Alt text and captions hold up to 1,000 characters (up to 4 KiB of UTF-8 is read).
    let long = "é".repeat(1001);
    let r = upload(&api, &[("file", Some("b.pdf"), None, b"%PDF-1.4 y"), ("caption", None, None, long.as_bytes())]);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"));
    let alt = "é".repeat(1000);
    assert_eq!(
        upload(&api, &[("file", Some("b.pdf"), None, b"%PDF-1.4 y"), ("alt", None, None, alt.as_bytes())]).status,
        201
    );
    assert_eq!(objects(&api).len(), 2, "only the accepted uploads stored anything");
    assert_eq!(scalar(&api, "SELECT count(*) FROM media"), 2);
    // Without a bucket an upload cannot be stored (JSON registration still works).
    let api = Api::new();
    let r = upload(&api, &[("file", Some("a.png"), Some("image/png"), &png(1, 1, 0))]);
    assert_eq!((r.status, code(&r).as_str()), (503, "MEDIA_STORAGE_UNAVAILABLE"));
}

fn get_file(
    api: &Api,
    key: &str,
    adjust: impl FnOnce(&mut media_usage_worker::api::Request),
) -> media_usage_worker::api::Response {
    api.request("GET", &format!("/media/file/{key}"), None, None, adjust)
}

fn header<'a>(r: &'a media_usage_worker::api::Response, name: &str) -> Option<&'a str> {
    r.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
}

#[test]
fn stored_files_are_served_publicly_with_caching_and_ranges() {
    let api = Api::with_storage(T0);
    let item = upload_png(&api, &png(2, 2, 4));
    let key = item["storageKey"].as_str().unwrap();
    let r = get_file(&api, key, |_| {});
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.object, Some((key.to_owned(), 0, 33)));
    assert_eq!(header(&r, "content-type"), Some("image/png"));
    assert_eq!(header(&r, "cache-control"), Some("public, max-age=31536000, immutable"));
    assert_eq!(header(&r, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&r, "content-security-policy"), Some("sandbox"));
    assert!(!r.no_store && !r.expose_cost);
    let etag = header(&r, "etag").unwrap().to_owned();
    let r = get_file(&api, key, |q| q.if_none_match = Some(etag.clone()));
    assert_eq!((r.status, r.object.clone()), (304, None));
    let r = get_file(&api, key, |q| q.range = Some("bytes=0-7".into()));
    assert_eq!((r.status, r.object.clone()), (206, Some((key.to_owned(), 0, 8))));
    assert_eq!(header(&r, "content-range"), Some("bytes 0-7/33"));
    let r = get_file(&api, key, |q| q.range = Some("bytes=40-".into()));
    assert_eq!((r.status, r.object.clone()), (416, None));
    assert_eq!(header(&r, "content-range"), Some("bytes */33"));
    assert_eq!(header(&r, "cache-control"), None, "not kept a year");
    let r = get_file(&api, key, |q| q.range = Some("bytes=0-1,4-5".into()));
    assert_eq!((r.status, r.object.clone()), (200, Some((key.to_owned(), 0, 33))), "several ranges: the whole file");
    for missing in ["nope.png", "..", "a%2Fb"] {
        assert_eq!(get_file(&api, missing, |_| {}).status, 404, "{missing}");
    }
    // A bad token is ignored: the route is public.
    let r = api.request("GET", &format!("/media/file/{key}"), Some("not-a-token"), None, |_| {});
    assert_eq!(r.status, 200);
}

fn tick(api: &Api, grace_hours: f64) -> tick::report::TickReport {
    tick_on(&api.db, api, grace_hours)
}

/// [`tick`] with its statements going through `exec`.
fn tick_on<E: Executor>(exec: &E, api: &Api, grace_hours: f64) -> tick::report::TickReport {
    let policy = crate::support::policy().with_storage_grace_ms(grace_hours * HOUR_MS);
    let storage = api.storage.as_ref().map(|s| s as &dyn media_usage_worker::storage::Storage);
    let report = TickRun::new(crate::support::budget(), &policy).storage(storage).run(exec);
    assert!(report.statements + report.count("storageOperations") <= 40, "{report:?}");
    report
}

#[test]
fn deleting_media_deletes_its_object_and_a_crash_between_is_swept_after_the_grace_period() {
    let api = Api::with_storage(T0);
    let a = upload_png(&api, &png(1, 1, 10));
    let b = upload_png(&api, &png(1, 1, 11));
    let c = upload_png(&api, &png(1, 1, 12));
    // A delete moves the item to the trash: its object stays.
    assert_eq!(api.delete(&format!("/media/{}", a["id"].as_str().unwrap())).status, 200);
    assert_eq!(objects(&api).len(), 3);
    // Permanent deletes (of an item in the trash, and forced) remove the object before answering.
    assert_eq!(api.delete(&format!("/media/{}?permanent=true", a["id"].as_str().unwrap())).status, 200);
    assert_eq!(api.delete(&format!("/media/{}?permanent=true&force=true", b["id"].as_str().unwrap())).status, 200);
    assert_eq!(objects(&api), [c["storageKey"].as_str().unwrap()]);
    // The object delete "crashes": the row is gone, the object stays behind.
    let store = api.storage.as_ref().unwrap();
    store.fail_deletes.set(true);
    assert_eq!(api.delete(&format!("/media/{}?permanent=true", c["id"].as_str().unwrap())).status, 200);
    store.fail_deletes.set(false);
    let orphan = c["storageKey"].as_str().unwrap().to_owned();
    assert_eq!(objects(&api), std::slice::from_ref(&orphan));
    // Deleted is deleted: the object left for the sweep is not served meanwhile.
    assert_eq!(file_metered(&api, "GET", &orphan).0.status, 404);
    // A referenced object, older than any grace, is never swept.
    let kept = upload_png(&api, &png(1, 1, 13));
    // Within the grace period nothing is swept: a pass lists the bucket, then the sweep rests.
    store.now_ms.set(T0 + 23.0 * HOUR_MS);
    for listed in [true, false, false] {
        let r = tick(&api, 24.0);
        assert_eq!(r.count("objectsDeleted"), 0);
        assert_eq!(r.count("storageOperations") >= 1, listed, "the sweep listed the bucket: {r:?}");
    }
    assert_eq!(objects(&api).len(), 2);
    // Past the grace period (and the rest after the pass), the next tick sweeps the orphan and
    // only the orphan.
    store.now_ms.set(T0 + 47.0 * HOUR_MS);
    let r = tick(&api, 24.0);
    assert_eq!(r.count("objectsDeleted"), 1, "{r:?}");
    assert!(r.lanes.contains(&"storage"));
    assert_eq!(objects(&api), [kept["storageKey"].as_str().unwrap()]);
    // A grace of 0 sweeps at once; the referenced object still stays.
    let r = tick(&api, 0.0);
    assert_eq!(r.count("objectsDeleted"), 0);
    assert_eq!(objects(&api).len(), 1);
}

#[test]
fn a_crash_at_any_statement_of_a_sweeping_tick_never_deletes_a_referenced_object() {
    let setup = || {
        let api = Api::with_storage(T0);
        let kept = upload_png(&api, &png(1, 1, 70))["storageKey"].as_str().unwrap().to_owned();
        put_raw(api.storage.as_ref().unwrap(), "orphan.png", png(1, 1, 71), "image/png");
        api.storage.as_ref().unwrap().now_ms.set(T0 + 25.0 * HOUR_MS);
        (api, kept)
    };
    let (probe, _) = setup();
    let clock = MonotonicClock::default();
    let metered = Metered::new(&probe.db, &clock);
    let r = tick_on(&metered, &probe, 24.0);
    assert_eq!(r.count("objectsDeleted"), 1, "{r:?}");
    let n = metered.usage().statements;
    assert!(n >= 4, "the tick issued {n} statements");
    for k in 1..=n {
        let (api, kept) = setup();
        let crashed = tick_on(&Faulty::new(&api.db, Some(k)), &api, 24.0);
        assert!(crashed.error.is_some(), "k={k}: {crashed:?}");
        // Later ticks sweep the orphan, and only the orphan.
        for _ in 0..3 {
            tick(&api, 24.0);
        }
        assert_eq!(objects(&api), [kept], "k={k}");
    }
}

#[test]
fn an_upload_whose_row_insert_committed_unseen_keeps_its_object_and_answers_its_row() {
    // Regression: the object was deleted as if the row had not been written, leaving a media row
    // whose file was gone (and a retry deduplicated onto it).
    let api = Api::with_storage(T0);
    let (ty, body) = form(&[("file", Some("photo.png"), Some("image/png"), &png(4, 4, 1))]);
    let mut req = crate::support::request("POST", "/media", Some(ADMIN), Some(&body));
    req.content_type = Some(ty);
    // Statement 1 looks the bytes up; statement 2 inserts the row.
    let r = api.request_on(&Faulty::commit_unknown(&api.db, 2), &req);
    assert_eq!(r.status, 201, "{}", r.body);
    let key = data(&r)["item"]["storageKey"].as_str().unwrap().to_owned();
    assert_eq!(objects(&api), std::slice::from_ref(&key));
    // The same bytes again: the row, with its object.
    let again = api.request_on(&api.db, &req);
    assert_eq!((again.status, data(&again)["item"]["storageKey"].as_str()), (200, Some(key.as_str())));
}

#[test]
fn the_sweep_pages_through_a_large_bucket_within_the_tick_budget() {
    let api = Api::with_storage(T0);
    let store = api.storage.as_ref().unwrap();
    // 450 unreferenced objects (a crashed bulk import), 50 referenced ones.
    for i in 0..500u32 {
        let bytes = png(i + 1, 1, 0);
        let key = format!("{:012x}{:020x}.png", i, i);
        put_raw(store, &key, bytes, "image/png");
        if i % 10 == 0 {
            let r = api.post("/media", &json!({"filename": "x.png", "mimeType": "image/png", "storageKey": key}));
            assert_eq!(r.status, 201);
        }
    }
    store.now_ms.set(T0 + 48.0 * HOUR_MS);
    let mut ticks = 0;
    while objects(&api).len() > 50 {
        tick(&api, 24.0);
        ticks += 1;
        assert!(ticks < 10, "the sweep does not finish");
    }
    assert!(ticks <= 2, "{ticks} ticks for 5 pages");
    let left = objects(&api);
    assert!(left.iter().all(|k| u32::from_str_radix(&k[..12], 16).unwrap() % 10 == 0), "only referenced objects stay");
}

#[test]
fn a_sweep_that_only_looks_is_not_progress_and_never_asks_for_a_continuation() {
    let api = Api::with_storage(T0);
    let store = api.storage.as_ref().unwrap();
    // 3,000 referenced-or-young objects: more pages than one default tick can list.
    for i in 0..3_000u32 {
        let bytes = png(i + 1, 2, 1);
        let key = format!("{i:012x}{i:020x}.png");
        put_raw(store, &key, bytes, "image/png");
    }
    let storage = api.storage.as_ref().map(|s| s as &dyn media_usage_worker::storage::Storage);
    let on = tick::Continuation::On { handing_on: None };
    let policy = crate::support::policy();
    let r = TickRun::new(crate::support::budget(), &policy).storage(storage).continuation(on).run(&api.db);
    assert!(r.count("storageOperations") >= 5, "it listed page after page: {r:?}");
    assert_eq!(r.count("objectsDeleted"), 0);
    assert_eq!(r.outcome, media_usage_worker::model::state::TickOutcome::Idle, "{r:?}");
    assert_eq!(r.continue_with, None, "no continuation for a sweep that found nothing");
    assert!(!r.lanes.contains(&"storage"));
    // With orphans to delete, a sweep step is progress, and orphans left at the budget's end
    // are work left (a continuation may come for them).
    store.now_ms.set(T0 + 48.0 * HOUR_MS);
    let r = tick(&api, 24.0);
    assert!(r.count("objectsDeleted") > 0 && r.lanes.contains(&"storage"), "{r:?}");
    assert_eq!(r.outcome, media_usage_worker::model::state::TickOutcome::Budget, "{r:?}");
}

/// Stores `bytes` under `key` directly in the bucket through the worker's store (so it carries
/// the marker), as an upload whose row was never written would leave it.
pub(crate) fn put_raw(store: &MemoryStorage, key: &str, bytes: Vec<u8>, content_type: &str) {
    let sha: [u8; 32] = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes).into()
    };
    block_on(media_usage_worker::storage::Storage::put(store, key, bytes, content_type, sha)).unwrap();
}

/// Stores `n` objects with sortable keys `<prefix><i>` directly in the bucket.
fn put_objects(api: &Api, prefix: &str, n: u32) -> Vec<String> {
    let store = api.storage.as_ref().unwrap();
    (0..n)
        .map(|i| {
            let bytes = png(i + 1, 3, 2);
            let key = format!("{prefix}{i:08}.png");
            put_raw(store, &key, bytes, "image/png");
            key
        })
        .collect()
}

#[test]
fn the_sweep_moves_past_pages_with_nothing_to_delete_and_counts_its_operations() {
    let api = Api::with_storage(T0);
    // A first page of objects uploaded rows name, then orphans on the second page.
    for key in put_objects(&api, "a", 100) {
        register_uploaded(&api, &key);
    }
    let orphans = put_objects(&api, "b", 30);
    api.storage.as_ref().unwrap().now_ms.set(T0 + 48.0 * HOUR_MS);
    let r = tick(&api, 24.0);
    assert_eq!(r.count("objectsDeleted"), 30, "{r:?}");
    // Page one: a listing; page two: a listing and a delete.
    assert_eq!(r.count("storageOperations"), 3, "{r:?}");
    let left = objects(&api);
    assert_eq!(left.len(), 100);
    assert!(orphans.iter().all(|k| !left.contains(k)));
    // The pass ended: the sweep rests for the grace period, tick after tick, listing nothing...
    for _ in 0..3 {
        let r = tick(&api, 24.0);
        assert_eq!((r.count("objectsDeleted"), r.count("storageOperations")), (0, 0), "{r:?}");
    }
    // ... then starts over and only looks (the 100 left fit one listing).
    api.storage.as_ref().unwrap().now_ms.set(T0 + 72.0 * HOUR_MS);
    let r = tick(&api, 24.0);
    assert_eq!((r.count("objectsDeleted"), r.count("storageOperations")), (0, 1), "{r:?}");
    let r = tick(&api, 24.0);
    assert_eq!((r.count("objectsDeleted"), r.count("storageOperations")), (0, 0), "{r:?}");
}

#[test]
fn keys_the_store_would_refuse_are_simply_not_found() {
    let api = Api::with_storage(T0);
    let store = api.storage.as_ref().unwrap();
    let longest = "k".repeat(1024);
    put_raw(store, &longest, b"x".to_vec(), "text/plain");
    register_uploaded(&api, &longest);
    assert_eq!(get_file(&api, &longest, |_| {}).status, 200, "a key of 1024 bytes is served");
    let r = get_file(&api, &"k".repeat(1025), |_| {});
    assert_eq!((r.status, code(&r).as_str()), (404, "NOT_FOUND"), "over 1024 bytes: absent, not a 500");
}

/// Stores `bytes` under `key` without the worker's marker: another application's file in the same
/// bucket, or a file uploaded by a version before the marker existed.
fn put_foreign(api: &Api, key: &str, bytes: &[u8], content_type: &str) {
    api.storage.as_ref().unwrap().put_foreign(key, bytes.to_vec(), content_type, &[("owner", "another-app")]);
}

/// Writes an uploaded media row (`content_hash` set) for `key` behind the API: what an upload by
/// an earlier version (or an import) left, under a key the tests choose. Returns its id.
pub(crate) fn register_uploaded(api: &Api, key: &str) -> String {
    let id = hex_sha(format!("id:{key}").as_bytes())[..32].to_owned();
    api.db
        .connection()
        .execute(
            "INSERT INTO media (id, filename, mime_type, storage_key, content_hash) VALUES (?1, 'f.png', 'image/png', ?2, ?3)",
            [&id, key, &hex_sha(key.as_bytes())],
        )
        .unwrap();
    id
}

fn register_json(api: &Api, key: &str) -> Json {
    let r = api.post("/media", &json!({"filename": "f.png", "mimeType": "image/png", "storageKey": key}));
    assert_eq!(r.status, 201, "{}", r.body);
    data(&r)["item"].clone()
}

#[test]
fn objects_the_worker_stores_carry_its_marker_and_others_do_not() {
    use media_usage_worker::storage::{Storage, MARKER};
    let api = Api::with_storage(T0);
    let store = api.storage.as_ref().unwrap();
    let item = upload_png(&api, &png(3, 3, 40));
    let key = item["storageKey"].as_str().unwrap();
    put_foreign(&api, "theirs/a.png", &png(3, 3, 41), "image/png");
    // Marked or not, as a head and as a listing see it.
    let head = |k: &str| block_on(store.head(k)).unwrap().unwrap().marked;
    assert!(head(key), "an upload is marked");
    assert!(!head("theirs/a.png"), "a foreign object is not");
    let listing = block_on(store.list(None, 10)).unwrap();
    let marked: Vec<(String, bool)> = listing.objects.iter().map(|o| (o.key.clone(), o.marked)).collect();
    assert_eq!(marked, [(key.to_owned(), true), ("theirs/a.png".to_owned(), false)]);
    // Only the exact marker counts.
    store.put_foreign("other-value.png", b"x".to_vec(), "image/png", &[(MARKER.0, "0")]);
    assert!(!head("other-value.png"));
    store.put_foreign("same-marker.png", b"x".to_vec(), "image/png", &[MARKER]);
    assert!(head("same-marker.png"));
}

#[test]
fn a_large_upload_stored_in_parts_is_marked_too() {
    let mut api = Api::with_storage(T0);
    api.config.uploads.max_bytes = 12 * 1024 * 1024;
    let mut bytes = vec![7u8; 11 * 1024 * 1024];
    bytes[..33].copy_from_slice(&png(4, 4, 42));
    let item = upload_png(&api, &bytes);
    let key = item["storageKey"].as_str().unwrap();
    let store = api.storage.as_ref().unwrap();
    assert!(store.largest_payload.get() <= media_usage_worker::storage::PART_BYTES, "it went in parts");
    assert!(block_on(media_usage_worker::storage::Storage::head(store, key)).unwrap().unwrap().marked);
}

#[test]
fn the_sweep_deletes_only_marked_objects_and_never_a_foreign_one() {
    let api = Api::with_storage(T0);
    let store = api.storage.as_ref().unwrap();
    // Old and unreferenced: one object the worker stored (a crashed upload), one another
    // application put into the bucket, one uploaded before the marker existed whose row was
    // deleted. Only the first is the worker's to reclaim.
    put_raw(store, "ours.png", png(1, 2, 50), "image/png");
    put_foreign(&api, "theirs.png", &png(1, 2, 51), "image/png");
    let legacy = upload_png(&api, &png(1, 2, 52));
    let legacy_key = legacy["storageKey"].as_str().unwrap().to_owned();
    put_foreign(&api, &legacy_key, &png(1, 2, 52), "image/png");
    store.fail_deletes.set(true);
    assert_eq!(api.delete(&format!("/media/{}", legacy["id"].as_str().unwrap())).status, 200);
    store.fail_deletes.set(false);
    // A foreign object a JSON registration names, later deleted: still not the worker's.
    put_foreign(&api, "theirs-registered.png", &png(1, 2, 53), "image/png");
    let registered = register_json(&api, "theirs-registered.png");
    assert_eq!(api.delete(&format!("/media/{}", registered["id"].as_str().unwrap())).status, 200);
    store.now_ms.set(T0 + 1000.0 * HOUR_MS);
    let r = tick(&api, 24.0);
    assert_eq!(r.count("objectsDeleted"), 1, "{r:?}");
    let mut left = objects(&api);
    left.sort();
    let mut want = vec![legacy_key.clone(), "theirs-registered.png".to_owned(), "theirs.png".to_owned()];
    want.sort();
    assert_eq!(left, want, "only the marked orphan went");
    // Pass after pass, with no grace at all, the foreign objects stay.
    for _ in 0..10 {
        assert_eq!(tick(&api, 0.0).count("objectsDeleted"), 0);
    }
    let mut left = objects(&api);
    left.sort();
    assert_eq!(left, want);
}

/// Calls the file route and counts the statements it issued.
fn file_metered(api: &Api, method: &str, key: &str) -> (media_usage_worker::api::Response, u64) {
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let req = media_usage_worker::api::Request {
        method: method.into(),
        path: format!("/_emdash/api/media/file/{key}"),
        ..Default::default()
    };
    let storage = api.storage.as_ref().map(|s| s as &dyn media_usage_worker::storage::Storage);
    let r = block_on(media_usage_worker::api::handle_with(&metered, &api.config, storage, &req));
    (r, metered.usage().statements)
}

#[test]
fn the_file_route_serves_only_objects_the_worker_stored() {
    let api = Api::with_storage(T0);
    // Marked: served after one statement (whether its row is in the trash).
    let ours = upload_png(&api, &png(6, 6, 60));
    let ours_key = ours["storageKey"].as_str().unwrap();
    let (r, statements) = file_metered(&api, "GET", ours_key);
    assert_eq!((r.status, statements), (200, 1), "{}", r.body);
    // Unmarked and named by no row: 404, after one statement.
    put_foreign(&api, "theirs.png", &png(6, 6, 61), "image/png");
    let (r, statements) = file_metered(&api, "GET", "theirs.png");
    assert_eq!((r.status, code(&r).as_str(), statements), (404, "NOT_FOUND", 1), "{}", r.body);
    assert_eq!(r.object, None);
    // Unmarked and named by a JSON registration only: still 404 (and the row's url leads nowhere).
    put_foreign(&api, "theirs-registered.png", &png(6, 6, 62), "image/png");
    register_json(&api, "theirs-registered.png");
    let (r, statements) = file_metered(&api, "GET", "theirs-registered.png");
    assert_eq!((r.status, code(&r).as_str(), statements), (404, "NOT_FOUND", 1));
    // Uploaded before the marker existed: unmarked, but an uploaded row names it: served.
    let legacy = upload_png(&api, &png(6, 6, 63));
    let legacy_key = legacy["storageKey"].as_str().unwrap();
    put_foreign(&api, legacy_key, &png(6, 6, 63), "image/png");
    let (r, statements) = file_metered(&api, "GET", legacy_key);
    assert_eq!((r.status, statements), (200, 1), "{}", r.body);
    assert_eq!(r.object, Some((legacy_key.to_owned(), 0, 33)));
    assert_eq!(header(&r, "content-security-policy"), Some("sandbox"));
    // Once that row is gone, the legacy object is no longer served.
    assert_eq!(api.delete(&format!("/media/{}?force=true", legacy["id"].as_str().unwrap())).status, 200);
    put_foreign(&api, legacy_key, &png(6, 6, 63), "image/png");
    assert_eq!(file_metered(&api, "GET", legacy_key).0.status, 404);
    // HEAD follows the same rule.
    assert_eq!(file_metered(&api, "HEAD", "theirs.png").0.status, 404);
    assert_eq!(file_metered(&api, "HEAD", "theirs-registered.png").0.status, 404);
    assert_eq!(file_metered(&api, "HEAD", ours_key).0.status, 200);
}

#[test]
fn the_file_routes_lookup_is_answered_from_the_storage_key_index() {
    let api = Api::new();
    let sql = include_str!("../../src/sql/media/key_served.sql");
    let conn = api.db.connection();
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let plan: Vec<String> = stmt
        .query_map([rusqlite::types::Value::Null], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(plan.iter().any(|d| d.starts_with("SEARCH media USING INDEX")), "{plan:#?}");
    assert!(!plan.iter().any(|d| d.starts_with("SCAN media")), "{plan:#?}");
}

#[test]
fn deleting_json_registered_media_never_deletes_the_object_it_names() {
    let api = Api::with_storage(T0);
    // Another application's file, registered by JSON, deleted safely and by force.
    put_foreign(&api, "theirs/one.png", &png(7, 7, 70), "image/png");
    put_foreign(&api, "theirs/two.png", &png(7, 7, 71), "image/png");
    let one = register_json(&api, "theirs/one.png");
    let two = register_json(&api, "theirs/two.png");
    let store = api.storage.as_ref().unwrap();
    let before = store.operations.get();
    assert_eq!(api.delete(&format!("/media/{}?permanent=true", one["id"].as_str().unwrap())).status, 200);
    assert_eq!(api.delete(&format!("/media/{}?permanent=true&force=true", two["id"].as_str().unwrap())).status, 200);
    assert_eq!(store.operations.get(), before, "no storage operation at all");
    assert_eq!(objects(&api), ["theirs/one.png", "theirs/two.png"]);
    // Even a marked object a JSON row names is left to the sweep (which takes it once no row
    // names it and the grace period is over).
    put_raw(store, "ours-registered.png", png(7, 7, 72), "image/png");
    let three = register_json(&api, "ours-registered.png");
    assert_eq!(api.delete(&format!("/media/{}?permanent=true", three["id"].as_str().unwrap())).status, 200);
    assert!(objects(&api).contains(&"ours-registered.png".to_owned()));
    store.now_ms.set(T0 + 25.0 * HOUR_MS);
    assert_eq!(tick(&api, 24.0).count("objectsDeleted"), 1);
    assert_eq!(objects(&api), ["theirs/one.png", "theirs/two.png"]);
    // An uploaded row's permanent delete still deletes its object.
    let up = upload_png(&api, &png(7, 7, 73));
    assert_eq!(api.delete(&format!("/media/{}?permanent=true", up["id"].as_str().unwrap())).status, 200);
    assert_eq!(objects(&api), ["theirs/one.png", "theirs/two.png"]);
}

#[test]
fn head_answers_exactly_as_get_without_a_body() {
    let api = Api::with_storage(T0);
    let png_item = upload_png(&api, &png(8, 8, 80));
    let pdf = upload(&api, &[("file", Some("doc.pdf"), None, b"%PDF-1.4 a small document")]);
    assert_eq!(pdf.status, 201, "{}", pdf.body);
    let pdf_key = data(&pdf)["item"]["storageKey"].as_str().unwrap().to_owned();
    // A legacy (unmarked, uploaded) object and a foreign one, too.
    let legacy = upload_png(&api, &png(8, 8, 81));
    let legacy_key = legacy["storageKey"].as_str().unwrap().to_owned();
    put_foreign(&api, &legacy_key, &png(8, 8, 81), "image/png");
    put_foreign(&api, "theirs.svg", b"<svg/>", "image/svg+xml");
    let png_key = png_item["storageKey"].as_str().unwrap().to_owned();
    let etag = header(&get_file(&api, &png_key, |_| {}), "etag").unwrap().to_owned();
    type Adjust = fn(&mut media_usage_worker::api::Request, &str);
    let cases: Vec<(&str, Adjust, u16)> = vec![
        (&png_key, |_, _| {}, 200),
        (&pdf_key, |_, _| {}, 200),
        (&legacy_key, |_, _| {}, 200),
        (&png_key, |q, _| q.range = Some("bytes=2-9".into()), 206),
        (&png_key, |q, _| q.range = Some("bytes=-5".into()), 206),
        (&png_key, |q, _| q.range = Some("bytes=0-1,4-5".into()), 200),
        (&png_key, |q, _| q.range = Some("bytes=999-".into()), 416),
        (&png_key, |q, etag| q.if_none_match = Some(etag.to_owned()), 304),
        ("theirs.svg", |_, _| {}, 404),
        ("nothing.png", |_, _| {}, 404),
    ];
    for (key, adjust, status) in cases {
        let get = api.request("GET", &format!("/media/file/{key}"), None, None, |q| adjust(q, &etag));
        let head = api.request("HEAD", &format!("/media/file/{key}"), None, None, |q| adjust(q, &etag));
        assert_eq!((get.status, head.status), (status, status), "{key}: {}", get.body);
        assert_eq!(head.object, None, "{key}: HEAD reads no bytes");
        assert_eq!((head.content_type, head.no_store), (get.content_type, get.no_store), "{key}");
        // The same headers, and the length GET's body has.
        let mut want = get.headers.clone();
        match (&get.object, status) {
            (Some((_, _, length)), _) => want.push(("content-length", length.to_string())),
            // A 416 has an empty body (length 0), a 304 none.
            (None, 416) => want.push(("content-length", "0".to_owned())),
            _ => {}
        }
        assert_eq!(head.headers, want, "{key} ({status})");
        if status == 404 {
            assert_eq!(head.body, get.body, "the edge drops a HEAD's body");
        } else {
            assert_eq!(head.body, "", "{key}");
        }
    }
    // The content length is the served part's.
    let head =
        api.request("HEAD", &format!("/media/file/{png_key}"), None, None, |q| q.range = Some("bytes=2-9".into()));
    assert_eq!(header(&head, "content-length"), Some("8"));
    assert_eq!(header(&head, "content-range"), Some("bytes 2-9/33"));
    let head = api.request("HEAD", &format!("/media/file/{pdf_key}"), None, None, |_| {});
    assert_eq!(header(&head, "content-length"), Some("25"));
    assert_eq!(header(&head, "content-type"), Some("application/pdf"));
    // Other methods are refused, naming both.
    let r = api.request("PUT", &format!("/media/file/{png_key}"), None, None, |_| {});
    assert_eq!((r.status, r.headers.clone()), (405, vec![("allow", "GET, HEAD".to_owned())]));
}

/// Ages every trashed media item by `days` (the purge reads the database clock).
fn age_trash(api: &Api, days: u32) {
    api.db
        .connection()
        .execute_batch(&format!(
            "UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-{days} days') WHERE deleted_at IS NOT NULL"
        ))
        .unwrap();
}

fn media_ids(api: &Api) -> Vec<String> {
    let conn = api.db.connection();
    let mut stmt = conn.prepare("SELECT id FROM media ORDER BY id").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn the_purge_deletes_items_in_the_trash_past_its_days_row_then_object_and_never_one_in_use() {
    let api = Api::with_storage(T0);
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "P", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    let old = upload_png(&api, &png(1, 1, 80));
    let young = upload_png(&api, &png(1, 1, 81));
    let used = upload_png(&api, &png(1, 1, 82));
    let id = |m: &Json| m["id"].as_str().unwrap().to_owned();
    data(&api.post("/content/posts", &json!({"slug": "a", "data": {"hero": id(&used)}})));
    for m in [&old, &young] {
        assert_eq!(api.delete(&format!("/media/{}", id(m))).status, 200);
    }
    assert_eq!(api.call("DELETE", &format!("/media/{}?force=true", id(&used)), Some(ADMIN), None).status, 200);
    age_trash(&api, 31);
    // Restored meanwhile: not purged.
    data(&api.post(&format!("/media/{}/restore", id(&young)), &json!({})));
    let report = tick(&api, 24.0);
    assert_eq!(report.count("mediaPurged"), 1, "{report:?}");
    assert_eq!(report.count("purgeOperations"), 1, "{report:?}");
    let mut left = vec![id(&young), id(&used)];
    left.sort();
    assert_eq!(media_ids(&api), left, "the old item went; the restored one and the one in use stay");
    let mut keys =
        vec![young["storageKey"].as_str().unwrap().to_owned(), used["storageKey"].as_str().unwrap().to_owned()];
    keys.sort();
    assert_eq!(objects(&api), keys, "with its object");
    // Not before its days: 29 days in the trash stay.
    assert_eq!(api.delete(&format!("/media/{}", id(&young))).status, 200);
    age_trash(&api, 29);
    assert_eq!(tick(&api, 24.0).count("mediaPurged"), 0);
    assert_eq!(media_ids(&api).len(), 2);
}

#[test]
fn a_crash_at_any_statement_of_a_purging_tick_leaves_the_row_or_nothing_and_the_sweep_takes_the_object() {
    let setup = || {
        let api = Api::with_storage(T0);
        let gone = upload_png(&api, &png(1, 1, 90));
        let kept = upload_png(&api, &png(1, 1, 91))["storageKey"].as_str().unwrap().to_owned();
        assert_eq!(api.delete(&format!("/media/{}", gone["id"].as_str().unwrap())).status, 200);
        age_trash(&api, 31);
        (api, kept)
    };
    let (probe, _) = setup();
    let clock = MonotonicClock::default();
    let metered = Metered::new(&probe.db, &clock);
    assert_eq!(tick_on(&metered, &probe, 24.0).count("mediaPurged"), 1);
    let n = metered.usage().statements;
    for k in 1..=n {
        for kind in ["crash", "commit-unknown"] {
            let (api, kept) = setup();
            let faulty = match kind {
                "crash" => Faulty::new(&api.db, Some(k)),
                _ => Faulty::commit_unknown(&api.db, k),
            };
            tick_on(&faulty, &api, 24.0);
            // Whatever happened, the next ticks purge the row, and the object goes with it or
            // (its row gone first) by the sweep after the grace period.
            tick(&api, 24.0);
            api.storage.as_ref().unwrap().now_ms.set(T0 + 25.0 * HOUR_MS);
            for _ in 0..3 {
                tick(&api, 24.0);
            }
            assert_eq!(media_ids(&api).len(), 1, "{kind} at {k}");
            assert_eq!(objects(&api), std::slice::from_ref(&kept), "{kind} at {k}");
        }
    }
}

#[test]
fn a_purge_whose_object_delete_fails_leaves_the_object_to_the_sweep() {
    let api = Api::with_storage(T0);
    let gone = upload_png(&api, &png(1, 1, 95));
    assert_eq!(api.delete(&format!("/media/{}", gone["id"].as_str().unwrap())).status, 200);
    age_trash(&api, 31);
    let store = api.storage.as_ref().unwrap();
    store.fail_deletes.set(true);
    let report = tick(&api, 24.0);
    store.fail_deletes.set(false);
    assert_eq!(report.count("mediaPurged"), 1);
    assert!(media_ids(&api).is_empty(), "the row went first");
    assert_eq!(objects(&api).len(), 1, "the object stayed behind");
    assert_eq!(file_metered(&api, "GET", gone["storageKey"].as_str().unwrap()).0.status, 404, "and is not served");
    // Within the grace period the sweep leaves it; after it, the sweep takes it.
    tick(&api, 24.0);
    assert_eq!(objects(&api).len(), 1);
    store.now_ms.set(T0 + 25.0 * HOUR_MS);
    tick(&api, 24.0);
    assert!(objects(&api).is_empty());
}

/// D1 as seen by a purge racing a restore: the item is restored (or trashed again, younger)
/// between the purge's read of due items and its delete.
struct RestoresBeforePurge<'a>(&'a media_usage_worker::exec::sqlite::SqliteExecutor, &'static str);

impl Executor for RestoresBeforePurge<'_> {
    async fn run(
        &self,
        stmt: media_usage_worker::exec::Statement,
    ) -> Result<media_usage_worker::exec::Outcome, media_usage_worker::exec::Error> {
        if stmt.sql().starts_with("-- Deletes each media of the JSON array") {
            self.0.connection().execute_batch(self.1).unwrap();
        }
        self.0.run(stmt).await
    }

    async fn batch(
        &self,
        stmts: Vec<media_usage_worker::exec::Statement>,
    ) -> Result<Vec<media_usage_worker::exec::Outcome>, media_usage_worker::exec::Error> {
        // The purge moves its cursor in the batch that deletes.
        if stmts.iter().any(|s| s.sql().starts_with("-- Deletes each media of the JSON array")) {
            self.0.connection().execute_batch(self.1).unwrap();
        }
        self.0.batch(stmts).await
    }
}

#[test]
fn an_item_restored_or_trashed_again_as_the_purge_runs_is_kept() {
    for meanwhile in
        ["UPDATE media SET deleted_at = NULL", "UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"]
    {
        let api = Api::with_storage(T0);
        let m = upload_png(&api, &png(1, 1, 97));
        assert_eq!(api.delete(&format!("/media/{}", m["id"].as_str().unwrap())).status, 200);
        age_trash(&api, 31);
        let report = tick_on(&RestoresBeforePurge(&api.db, meanwhile), &api, 24.0);
        assert_eq!(report.count("mediaPurged"), 0, "{meanwhile}");
        assert_eq!(media_ids(&api).len(), 1, "{meanwhile}");
        assert_eq!(objects(&api).len(), 1, "{meanwhile}");
    }
}

#[test]
fn a_bulk_delete_trashes_exactly_what_the_safe_delete_would() {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "P", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    let reg = |key: &str| register_json(&api, key)["id"].as_str().unwrap().to_owned();
    let (free, used, listed) = (reg("free.png"), reg("used.png"), reg("listed.png"));
    data(&api.post("/content/posts", &json!({"slug": "a", "data": {"hero": used}})));
    // An entry too large to index that lists `listed` (its failed work row keeps the ids).
    api.entry_too_large_using(&[&listed]);
    let bulk = |ids: &[&str]| data(&api.post("/media/bulk-delete", &json!({ "ids": ids })));
    let statuses = |r: &Json| -> Vec<(String, String)> {
        r["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["id"].as_str().unwrap().to_owned(), i["status"].as_str().unwrap().to_owned()))
            .collect()
    };
    // Coverage incomplete (a write the index has not seen): nothing moves.
    api.db.connection().execute_batch("UPDATE ec_posts SET hero = hero").unwrap();
    let r = bulk(&[&free]);
    assert_eq!(statuses(&r), [(free.clone(), "coverage_incomplete".to_owned())]);
    api.drain();
    let r = bulk(&[&free, &used, &listed, "nope"]);
    assert_eq!(
        statuses(&r),
        [
            (free.clone(), "trashed".to_owned()),
            (used.clone(), "in_use".to_owned()),
            (listed.clone(), "in_use".to_owned()),
            ("nope".to_owned(), "not_found".to_owned())
        ]
    );
    assert_eq!(r["trashed"], 1);
    // What blocks each refused delete: the indexed entries by name, and whether an entry too
    // large to index lists it (such an entry is named by "Used in", not here).
    let slugs = |i: usize| r["items"][i]["entries"].as_array().unwrap().iter().map(|e| e["slug"].clone()).collect();
    assert_eq!((slugs(1), slugs(2)), (vec![json!("a")], Vec::<Json>::new()));
    let status =
        block_on(media_usage_worker::repo::media::bulk_status(&api.db, &[used.clone(), listed.clone()], 5)).unwrap();
    assert_eq!(status.iter().map(|s| s.unindexed_use).collect::<Vec<_>>(), [0, 1]);
    // A retry answers the same for what it moved, and does not restart its time in the trash.
    api.db
        .connection()
        .execute_batch("UPDATE media SET deleted_at = '2001-01-01T00:00:00.000Z' WHERE deleted_at IS NOT NULL")
        .unwrap();
    assert_eq!(statuses(&bulk(&[&free]))[0].1, "trashed");
    let at: String =
        api.db.connection().query_row("SELECT deleted_at FROM media WHERE id = ?1", [&free], |r| r.get(0)).unwrap();
    assert_eq!(at, "2001-01-01T00:00:00.000Z");
}

#[test]
fn an_old_item_in_the_trash_that_an_entry_too_large_to_index_lists_is_not_purged() {
    let api = Api::with_storage(T0);
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "P", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    let listed = upload_png(&api, &png(1, 1, 100))["id"].as_str().unwrap().to_owned();
    let other = upload_png(&api, &png(1, 1, 101))["id"].as_str().unwrap().to_owned();
    for id in [&listed, &other] {
        assert_eq!(api.call("DELETE", &format!("/media/{id}?force=true"), Some(ADMIN), None).status, 200);
    }
    // Trashed as it was written into an entry that is too large to index: its failed work row
    // lists the item (and waits for an operator, so the ticks leave it).
    api.entry_too_large_using(&[&listed]);
    age_trash(&api, 31);
    assert_eq!(tick(&api, 24.0).count("mediaPurged"), 1);
    assert_eq!(media_ids(&api), std::slice::from_ref(&listed), "the other item went; the listed one stays");
    assert_eq!(objects(&api).len(), 1);
    assert_eq!(tick(&api, 24.0).count("mediaPurged"), 0);
    // Once the entry no longer lists it, it goes, at the purge's next pass.
    api.db.connection().execute_batch("DELETE FROM _emdash_media_usage_work").unwrap();
    assert_eq!(tick(&api, 24.0).count("mediaPurged"), 0, "the purge rests between passes");
    crate::support::purge_rest_over(&api.db);
    assert_eq!(tick(&api, 24.0).count("mediaPurged"), 1);
    assert!(media_ids(&api).is_empty());
}

/// A way the safe delete's rule can find a media item in use, or fail to prove it unused.
const REFUSALS: &[(&str, &str)] = &[
    ("nothing", ""),
    ("an occurrence", ""),
    ("an entry too large to index", ""),
    ("coverage stale", "UPDATE _emdash_media_usage_index_status SET status = 'stale'"),
    ("coverage failed", "UPDATE _emdash_media_usage_index_status SET status = 'failed'"),
    ("coverage running", "UPDATE _emdash_media_usage_index_status SET status = 'running'"),
    ("a reconciliation required", "UPDATE _emdash_media_usage_index_status SET reconciliation_required = 1"),
    ("another schema version", "UPDATE _emdash_media_usage_index_status SET schema_version = 2"),
    ("other reference rules", "UPDATE _emdash_media_usage_index_status SET rules_version = 'older-rules'"),
    ("no coverage row", "DELETE FROM _emdash_media_usage_index_status"),
];

#[test]
fn the_safe_delete_the_bulk_trash_and_the_purge_refuse_the_same_items() {
    let rules = crate::support::rules();
    for (refusal, sql) in REFUSALS {
        let api = Api::new();
        data(&api.post(
            "/schema/collections",
            &json!({"slug": "posts", "label": "P", "fields": [{"slug": "hero", "type": "image"}]}),
        ));
        // Coverage of a second collection, complete like the first: the rule reads every one.
        data(&api.post(
            "/schema/collections",
            &json!({"slug": "pages", "label": "Pages", "fields": [{"slug": "hero", "type": "image"}]}),
        ));
        let (single, bulk, purged) =
            (register_json(&api, "single.png"), register_json(&api, "bulk.png"), register_json(&api, "purged.png"));
        let ids: Vec<String> = [&single, &bulk, &purged].iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect();
        match *refusal {
            "an occurrence" => {
                for (i, id) in ids.iter().enumerate() {
                    data(&api.post("/content/posts", &json!({"slug": format!("e{i}"), "data": {"hero": id}})));
                }
            }
            "an entry too large to index" => api.entry_too_large_using(&ids),
            _ => {}
        }
        assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete", "{refusal}");
        // The purge's item: long in the trash (forced there, used or not).
        assert_eq!(api.call("DELETE", &format!("/media/{}?force=true", ids[2]), Some(ADMIN), None).status, 200);
        age_trash(&api, 31);
        // Only the coverage row of `pages` is changed: one collection short is enough.
        if !sql.is_empty() {
            api.db.connection().execute_batch(&format!("{sql} WHERE scope_key = 'pages'")).unwrap();
        }
        let taken = *refusal == "nothing";
        let r = api.delete(&format!("/media/{}", ids[0]));
        assert_eq!(r.status, if taken { 200 } else { 409 }, "the safe delete, with {refusal}: {}", r.body);
        let r = data(&api.post("/media/bulk-delete", &json!({"ids": [ids[1]]})));
        assert_eq!(r["trashed"], u8::from(taken), "the bulk trash, with {refusal}: {r}");
        let gone = block_on(media_usage_worker::repo::media::purge(&api.db, &ids[2..], 30.0, rules.id())).unwrap();
        assert_eq!(gone.len(), usize::from(taken), "the purge, with {refusal}");
        // What each refused stays where it was.
        let trashed: Vec<bool> = ids
            .iter()
            .map(|id| {
                api.db
                    .connection()
                    .query_row("SELECT deleted_at IS NOT NULL FROM media WHERE id = ?1", [id], |r| r.get(0))
                    .unwrap_or(true)
            })
            .collect();
        assert_eq!(trashed, [taken, taken, true], "{refusal}");
        assert_eq!(media_ids(&api).len(), if taken { 2 } else { 3 }, "{refusal}");
    }
}
