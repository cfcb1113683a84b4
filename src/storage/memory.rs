//! An in-memory object store for native tests, with an adjustable clock for upload times and a
//! switch that makes deletes fail (a crash between a row delete and its object delete).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use futures::future::{self, LocalBoxFuture};
use sha2::{Digest, Sha256};

use super::{Listing, Storage, StorageError, StoredObject};

#[derive(Debug, Default)]
pub struct MemoryStorage {
    objects: RefCell<BTreeMap<String, (StoredObject, Vec<u8>)>>,
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

    pub fn keys(&self) -> Vec<String> {
        self.objects.borrow().keys().cloned().collect()
    }

    pub fn bytes(&self, key: &str) -> Option<Vec<u8>> {
        self.objects.borrow().get(key).map(|(_, b)| b.clone())
    }

    fn op(&self) {
        self.operations.set(self.operations.get() + 1);
    }
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
        if <[u8; 32]>::from(Sha256::digest(&bytes)) != sha256 {
            return Box::pin(future::ready(Err(StorageError("checksum mismatch".into()))));
        }
        let object = StoredObject {
            key: key.to_owned(),
            size: bytes.len() as u64,
            http_etag: format!("\"{}\"", hex::encode(&sha256[..16])),
            content_type: Some(content_type.to_owned()),
            uploaded_ms: self.now_ms.get(),
        };
        self.objects.borrow_mut().insert(key.to_owned(), (object, bytes));
        Box::pin(future::ready(Ok(())))
    }

    fn head<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<StoredObject>, StorageError>> {
        self.op();
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
