//! An in-memory object store for native tests, with an adjustable clock for upload times and a
//! switch that makes deletes fail (a crash between a row delete and its object delete). Objects
//! stored through [`Storage`] carry the [`MARKER`] custom metadata, as on R2;
//! [`MemoryStorage::put_foreign`] stores one without it (another application's file, or one
//! uploaded before the marker existed). Keys and
//! multipart uploads follow R2's rules: an empty key or one over 1024 bytes is an error; parts
//! are no object until completed, and every part but the last is [`PART_BYTES`] or more, all of
//! one size, the last no larger.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use futures::future::{self, LocalBoxFuture};
use sha2::{Digest, Sha256};

use super::{is_marked, valid_key, Listing, PartTag, Storage, StorageError, StoredObject, MARKER, PART_BYTES};

/// A multipart upload not yet completed or aborted.
#[derive(Debug)]
struct OpenUpload {
    key: String,
    content_type: String,
    parts: BTreeMap<u16, Vec<u8>>,
}

#[derive(Debug, Default)]
pub struct MemoryStorage {
    objects: RefCell<BTreeMap<String, (StoredObject, Vec<u8>)>>,
    uploads: RefCell<BTreeMap<String, OpenUpload>>,
    next_upload: Cell<u64>,
    /// Storing a part fails while set.
    pub fail_parts: Cell<bool>,
    /// The largest single payload handed to the store so far (a put or a part).
    pub largest_payload: Cell<usize>,
    /// The upload time given to new objects (ms since the epoch).
    pub now_ms: Cell<f64>,
    /// Deletes fail while set.
    pub fail_deletes: Cell<bool>,
    /// Operations so far.
    pub operations: Cell<u64>,
}

impl MemoryStorage {
    pub fn new(now_ms: f64) -> MemoryStorage {
        MemoryStorage { now_ms: Cell::new(now_ms), ..Default::default() }
    }

    /// A copy of the stored objects and the clock (no open multipart upload, no switch set):
    /// a fixture built once and copied for each run of a matrix of fault tests.
    pub fn snapshot(&self) -> MemoryStorage {
        MemoryStorage { objects: RefCell::new(self.objects.borrow().clone()), ..MemoryStorage::new(self.now_ms.get()) }
    }

    pub fn keys(&self) -> Vec<String> {
        self.objects.borrow().keys().cloned().collect()
    }

    pub fn bytes(&self, key: &str) -> Option<Vec<u8>> {
        self.objects.borrow().get(key).map(|(_, b)| b.clone())
    }

    /// Multipart uploads neither completed nor aborted.
    pub fn open_uploads(&self) -> usize {
        self.uploads.borrow().len()
    }

    fn op(&self) {
        self.operations.set(self.operations.get() + 1);
    }

    fn payload(&self, len: usize) {
        self.largest_payload.set(self.largest_payload.get().max(len));
    }

    /// Stores an object as something other than this worker would, with `metadata` as its custom
    /// metadata instead of [`MARKER`] (so it is marked only if `metadata` holds the marker).
    pub fn put_foreign(&self, key: &str, bytes: Vec<u8>, content_type: &str, metadata: &[(&str, &str)]) {
        self.store(key, bytes, content_type, metadata);
    }

    fn store(&self, key: &str, bytes: Vec<u8>, content_type: &str, metadata: &[(&str, &str)]) {
        let object = StoredObject {
            key: key.to_owned(),
            size: bytes.len() as u64,
            http_etag: format!("\"{}\"", hex::encode(&Sha256::digest(&bytes)[..16])),
            content_type: Some(content_type.to_owned()),
            uploaded_ms: self.now_ms.get(),
            marked: is_marked(metadata.iter().copied()),
        };
        self.objects.borrow_mut().insert(key.to_owned(), (object, bytes));
    }

    fn complete(&self, key: &str, upload_id: &str, parts: &[PartTag]) -> Result<(), StorageError> {
        let fail = |why: &str| Err(StorageError(format!("completing {upload_id}: {why}")));
        let mut uploads = self.uploads.borrow_mut();
        let Some(upload) = uploads.get(upload_id).filter(|u| u.key == key) else { return fail("no such upload") };
        let mut bytes = Vec::new();
        let mut size = None;
        for (i, tag) in parts.iter().enumerate() {
            let Some(part) = upload.parts.get(&tag.number) else { return fail("no such part") };
            if tag.etag != part_etag(part) {
                return fail("wrong part etag");
            }
            let last = i + 1 == parts.len();
            let first_size = *size.get_or_insert(part.len());
            if (!last && (part.len() < PART_BYTES || part.len() != first_size)) || part.len() > first_size {
                return fail("parts but the last must be one size of at least 5 MiB; the last no larger");
            }
            bytes.extend_from_slice(part);
        }
        let content_type = upload.content_type.clone();
        uploads.remove(upload_id);
        drop(uploads);
        self.store(key, bytes, &content_type, &[MARKER]);
        Ok(())
    }
}

fn part_etag(part: &[u8]) -> String {
    hex::encode(&Sha256::digest(part)[..8])
}

impl Storage for MemoryStorage {
    fn put<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        content_type: &'a str,
        sha256: [u8; 32],
    ) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        self.op();
        if !valid_key(key) {
            return Box::pin(future::ready(Err(StorageError(format!("invalid key of {} bytes", key.len())))));
        }
        if <[u8; 32]>::from(Sha256::digest(&bytes)) != sha256 {
            return Box::pin(future::ready(Err(StorageError("checksum mismatch".into()))));
        }
        self.payload(bytes.len());
        self.store(key, bytes, content_type, &[MARKER]);
        Box::pin(future::ready(Ok(())))
    }

    fn begin_multipart<'a>(
        &'a self,
        key: &'a str,
        content_type: &'a str,
    ) -> LocalBoxFuture<'a, Result<String, StorageError>> {
        self.op();
        let id = format!("upload-{}", self.next_upload.get());
        self.next_upload.set(self.next_upload.get() + 1);
        let upload = OpenUpload { key: key.to_owned(), content_type: content_type.to_owned(), parts: BTreeMap::new() };
        self.uploads.borrow_mut().insert(id.clone(), upload);
        Box::pin(future::ready(Ok(id)))
    }

    fn put_part<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        number: u16,
        bytes: Vec<u8>,
    ) -> LocalBoxFuture<'a, Result<PartTag, StorageError>> {
        self.op();
        self.payload(bytes.len());
        let mut uploads = self.uploads.borrow_mut();
        let result = match uploads.get_mut(upload_id).filter(|u| u.key == key) {
            _ if self.fail_parts.get() => Err(StorageError("injected part failure".into())),
            None => Err(StorageError(format!("no upload {upload_id}"))),
            Some(_) if number == 0 => Err(StorageError("part numbers start at 1".into())),
            Some(upload) => {
                let etag = part_etag(&bytes);
                upload.parts.insert(number, bytes);
                Ok(PartTag { number, etag })
            }
        };
        Box::pin(future::ready(result))
    }

    fn complete_multipart<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        parts: Vec<PartTag>,
    ) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        self.op();
        Box::pin(future::ready(self.complete(key, upload_id, &parts)))
    }

    fn abort_multipart<'a>(&'a self, key: &'a str, upload_id: &'a str) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        self.op();
        let mut uploads = self.uploads.borrow_mut();
        let found = uploads.get(upload_id).is_some_and(|u| u.key == key);
        if found {
            uploads.remove(upload_id);
        }
        Box::pin(future::ready(Ok(())))
    }

    fn head<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<StoredObject>, StorageError>> {
        self.op();
        if !valid_key(key) {
            return Box::pin(future::ready(Err(StorageError(format!("invalid key of {} bytes", key.len())))));
        }
        Box::pin(future::ready(Ok(self.objects.borrow().get(key).map(|(o, _)| o.clone()))))
    }

    fn delete<'a>(&'a self, keys: &'a [String]) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        self.op();
        if self.fail_deletes.get() {
            return Box::pin(future::ready(Err(StorageError("injected delete failure".into()))));
        }
        let mut objects = self.objects.borrow_mut();
        for k in keys {
            objects.remove(k);
        }
        Box::pin(future::ready(Ok(())))
    }

    fn list<'a>(&'a self, cursor: Option<&'a str>, limit: u32) -> LocalBoxFuture<'a, Result<Listing, StorageError>> {
        self.op();
        let objects = self.objects.borrow();
        let after = |k: &String| cursor.is_none_or(|c| k.as_str() > c);
        let page: Vec<StoredObject> =
            objects.iter().filter(|(k, _)| after(k)).take(limit as usize).map(|(_, (o, _))| o.clone()).collect();
        let more = objects.keys().filter(|k| after(k)).count() > page.len();
        let cursor = if more { page.last().map(|o| o.key.clone()) } else { None };
        Box::pin(future::ready(Ok(Listing { objects: page, cursor })))
    }

    fn now_ms(&self) -> f64 {
        self.now_ms.get()
    }
}
