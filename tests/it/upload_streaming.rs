//! Uploads stream: a file larger than one part goes to the bucket part by part (never held whole),
//! and whatever ends an upload early — a refusal, a duplicate, a broken connection, a bad field
//! after the file, a failing store — leaves no object and no unfinished multipart upload.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use media_usage_worker::api::{BodyError, BodyStream, Response};
use media_usage_worker::storage::memory::MemoryStorage;
use media_usage_worker::storage::PART_BYTES;

use crate::media_files::{form, png, Part};
use crate::support::{code, data, Api};

const T0: f64 = 1_800_000_000_000.0;
const CHUNK: usize = 64 * 1024;

/// A PNG of `len` bytes: a 640×480 header, then filler that varies with `salt`.
fn big_png(len: usize, salt: u8) -> Vec<u8> {
    let mut b = png(640, 480, salt);
    b.extend((b.len()..len).map(|i| (i % 251) as u8 ^ salt));
    b
}

/// A body of `bytes` in chunks, with a counter of how many of them the worker read; `break_after`
/// chunks in, the connection fails instead and the body ends.
fn body(bytes: Vec<u8>, break_after: Option<usize>) -> (BodyStream<'static>, Arc<AtomicUsize>) {
    let read = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&read);
    // Like the edge's stream, it ends after a failure.
    let chunks: Vec<Bytes> =
        bytes.chunks(CHUNK).take(break_after.map_or(usize::MAX, |n| n + 1)).map(Bytes::copy_from_slice).collect();
    let stream = futures::stream::iter(chunks.into_iter().enumerate())
        .map(move |(i, c)| {
            counter.fetch_add(1, Ordering::SeqCst);
            match break_after {
                Some(n) if i >= n => Err(BodyError::Broken("connection reset".into())),
                _ => Ok(c),
            }
        })
        .boxed();
    (stream, read)
}

fn send(api: &Api, parts: &[Part<'_>], break_after: Option<usize>) -> (Response, usize, usize) {
    let (ty, bytes) = form(parts);
    let total = bytes.len().div_ceil(CHUNK);
    let (stream, read) = body(bytes, break_after);
    let r = api.upload_stream(&ty, stream);
    (r, read.load(Ordering::SeqCst), total)
}

fn store(api: &Api) -> &MemoryStorage {
    api.storage.as_ref().unwrap()
}

/// Nothing left behind: no object, no unfinished upload.
fn assert_clean(api: &Api) {
    assert_eq!(store(api).keys(), Vec::<String>::new(), "no object");
    assert_eq!(store(api).open_uploads(), 0, "no unfinished multipart upload");
}

#[test]
fn a_file_larger_than_a_part_streams_into_equal_parts_and_is_stored_whole() {
    let api = Api::with_storage(T0);
    let file = big_png(2 * PART_BYTES + 123_457, 1);
    let (r, _, _) =
        send(&api, &[("file", Some("big.png"), Some("image/png"), &file), ("alt", None, None, b"Big")], None);
    assert_eq!(r.status, 201, "{}", r.body);
    let item = data(&r)["item"].clone();
    assert_eq!((item["width"].as_i64(), item["height"].as_i64()), (Some(640), Some(480)), "read from the first part");
    assert_eq!(item["size"].as_u64(), Some(file.len() as u64));
    assert_eq!(item["alt"], "Big");
    let key = item["storageKey"].as_str().unwrap();
    assert_eq!(store(&api).bytes(key).as_deref(), Some(&file[..]), "the object is the file, byte for byte");
    assert_eq!(store(&api).open_uploads(), 0);
    // begin, three parts, complete: never the whole file in one payload.
    assert_eq!(store(&api).operations.get(), 5);
    assert_eq!(store(&api).largest_payload.get(), PART_BYTES);
}

#[test]
fn a_file_of_exactly_one_part_is_stored_by_one_put() {
    let api = Api::with_storage(T0);
    let file = big_png(PART_BYTES, 2);
    let (r, _, _) = send(&api, &[("file", Some("one.png"), Some("image/png"), &file)], None);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(store(&api).operations.get(), 1, "one put, no multipart upload");
    let key = data(&r)["item"]["storageKey"].as_str().unwrap().to_owned();
    assert_eq!(store(&api).bytes(&key).map(|b| b.len()), Some(PART_BYTES));
}

#[test]
fn a_large_duplicate_answers_the_existing_media_and_aborts_its_parts() {
    let api = Api::with_storage(T0);
    let file = big_png(PART_BYTES + 10, 3);
    let parts: &[Part<'_>] = &[("file", Some("a.png"), Some("image/png"), &file)];
    let (first, _, _) = send(&api, parts, None);
    assert_eq!(first.status, 201, "{}", first.body);
    let (again, _, _) = send(&api, parts, None);
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(data(&again)["deduplicated"], true);
    assert_eq!(data(&again)["item"]["id"], data(&first)["item"]["id"]);
    assert_eq!(store(&api).keys().len(), 1, "only the first upload's object");
    assert_eq!(store(&api).open_uploads(), 0, "the duplicate's parts were aborted");
}

#[test]
fn a_broken_connection_mid_file_leaves_nothing_behind() {
    let api = Api::with_storage(T0);
    let file = big_png(3 * PART_BYTES, 4);
    // Two parts are stored by the time the connection fails.
    let break_after = (2 * PART_BYTES + CHUNK) / CHUNK;
    let (r, read, _) = send(&api, &[("file", Some("a.png"), Some("image/png"), &file)], Some(break_after));
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    assert_eq!(read, break_after + 1, "nothing is read after the failure");
    assert!(store(&api).operations.get() >= 3, "parts had been stored: {}", store(&api).operations.get());
    assert_clean(&api);
    assert_eq!(api.get("/media").body_json()["data"]["items"], serde_json::json!([]), "no row");
}

#[test]
fn a_file_over_the_limit_is_refused_while_it_streams() {
    let mut api = Api::with_storage(T0);
    api.config.uploads.max_bytes = 2 * PART_BYTES as u64;
    let file = big_png(8 * PART_BYTES, 5);
    let (r, read, total) = send(&api, &[("file", Some("a.png"), Some("image/png"), &file)], None);
    assert_eq!((r.status, code(&r).as_str()), (413, "PAYLOAD_TOO_LARGE"), "{}", r.body);
    assert!(read * 3 < total, "refused after {read} of {total} chunks");
    assert_clean(&api);
}

#[test]
fn a_large_file_of_the_wrong_type_is_refused_before_anything_is_stored_and_its_body_drained() {
    let api = Api::with_storage(T0);
    let mut file = b"%PDF-1.4\n".to_vec();
    file.resize(3 * PART_BYTES, b' ');
    let (r, read, total) = send(&api, &[("file", Some("a.png"), Some("image/png"), &file)], None);
    assert_eq!((r.status, code(&r).as_str()), (400, "INVALID_TYPE"), "{}", r.body);
    assert_eq!(store(&api).operations.get(), 0, "nothing stored, no upload started");
    // The rest is read and dropped, so that a client still sending gets the answer.
    assert_eq!(read, total, "drained");
}

#[test]
fn a_bad_field_after_the_file_aborts_the_stored_parts() {
    let api = Api::with_storage(T0);
    let file = big_png(2 * PART_BYTES + 1, 6);
    let (r, _, _) = send(&api, &[("file", Some("a.png"), Some("image/png"), &file), ("width", None, None, b"0")], None);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    assert!(r.body.contains("width"), "{}", r.body);
    assert!(store(&api).operations.get() >= 3, "parts had been stored");
    assert_clean(&api);
    let (r, _, _) = send(&api, &[("file", Some("a.png"), Some("image/png"), &file), ("tags", None, None, b"x")], None);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    assert_clean(&api);
}

#[test]
fn a_failing_store_is_a_500_that_aborts_the_upload() {
    let api = Api::with_storage(T0);
    let file = big_png(3 * PART_BYTES, 7);
    store(&api).fail_parts.set(true);
    let (r, _, _) = send(&api, &[("file", Some("a.png"), Some("image/png"), &file)], None);
    assert_eq!((r.status, code(&r).as_str()), (500, "INTERNAL_ERROR"), "{}", r.body);
    assert!(!r.body.contains("injected"), "a 500 says nothing of its cause: {}", r.body);
    assert_clean(&api);
    store(&api).fail_parts.set(false);
    let (r, _, _) = send(&api, &[("file", Some("a.png"), Some("image/png"), &file)], None);
    assert_eq!(r.status, 201, "the same upload succeeds once the store does: {}", r.body);
}

#[test]
fn junk_without_a_boundary_or_endless_part_headers_are_refused_not_buffered() {
    let api = Api::with_storage(T0);
    let (ty, _) = form(&[]);
    let junk = vec![b'x'; 4 * 1024 * 1024];
    let (stream, read) = body(junk.clone(), None);
    // Without the framing bound the parser would hold all of it, then call it cut off.
    let r = api.upload_stream(&ty, stream);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    assert!(r.body.contains("64 KiB"), "{}", r.body);
    assert_eq!(read.load(Ordering::SeqCst), junk.len() / CHUNK, "refused, then drained");
    let boundary = ty.split_once("boundary=").unwrap().1;
    let mut headers = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"\r\n").into_bytes();
    while headers.len() < 4 * 1024 * 1024 {
        headers.extend_from_slice(b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    let chunks = headers.len().div_ceil(CHUNK);
    let (stream, read) = body(headers, None);
    let r = api.upload_stream(&ty, stream);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    assert!(r.body.contains("64 KiB"), "{}", r.body);
    assert_eq!(read.load(Ordering::SeqCst), chunks, "refused, then drained");
    assert_clean(&api);
}

#[test]
fn a_body_that_ends_before_its_form_does_is_refused_and_aborts_its_parts() {
    let api = Api::with_storage(T0);
    let file = big_png(2 * PART_BYTES + 5, 8);
    let (ty, mut bytes) = form(&[("file", Some("a.png"), Some("image/png"), &file)]);
    // The body simply ends inside the file: no closing boundary.
    bytes.truncate(bytes.len() - 200);
    let (stream, _) = body(bytes, None);
    let r = api.upload_stream(&ty, stream);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    assert!(r.body.contains("ended before the form did"), "{}", r.body);
    assert!(store(&api).operations.get() >= 3, "parts had been stored");
    assert_clean(&api);
}

#[test]
fn a_file_name_holds_at_most_255_characters() {
    let api = Api::with_storage(T0);
    let longest = format!("{}.png", "é".repeat(251));
    let (r, _, _) = send(&api, &[("file", Some(&longest), Some("image/png"), &png(2, 2, 1))], None);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(data(&r)["item"]["filename"], longest.as_str());
    let too_long = format!("{}.png", "é".repeat(252));
    let (r, _, _) = send(&api, &[("file", Some(&too_long), Some("image/png"), &png(2, 2, 2))], None);
    assert_eq!((r.status, code(&r).as_str()), (400, "VALIDATION_ERROR"), "{}", r.body);
    assert!(r.body.contains("255"), "{}", r.body);
}
