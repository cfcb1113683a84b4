//! Media files: the object store behind `MEDIA_BUCKET` (R2 at the edge, memory in native tests),
//! what an upload may be (`inspect`), and how a stored file is served (`serve`).
//!
//! The store is reached through one object-safe trait so that handlers and the tick take it as
//! `&dyn Storage` without another type parameter. Every call is one storage operation, counted by
//! the caller like a statement.

pub mod inspect;
#[cfg(not(target_arch = "wasm32"))]
pub mod memory;
pub mod serve;
pub mod sweep;

use futures::future::LocalBoxFuture;

/// What the store knows of an object.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredObject {
    pub key: String,
    pub size: u64,
    /// The entity tag, quoted (`"…"`), as sent in `ETag`.
    pub http_etag: String,
    pub content_type: Option<String>,
    /// Upload time, milliseconds since the epoch.
    pub uploaded_ms: f64,
}

/// One page of a listing in key order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Listing {
    pub objects: Vec<StoredObject>,
    /// Where the next page starts; `None` on the last page.
    pub cursor: Option<String>,
}

/// A storage operation failed (the message is for the log, never for the caller).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("storage: {0}")]
pub struct StorageError(pub String);

/// The object store.
pub trait Storage {
    /// Stores `bytes` under `key` with its content type; the store verifies the SHA-256.
    fn put<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        content_type: &'a str,
        sha256: [u8; 32],
    ) -> LocalBoxFuture<'a, Result<(), StorageError>>;

    /// The object's metadata, `None` when there is none.
    fn head<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<StoredObject>, StorageError>>;

    /// Deletes the objects (missing ones are no error).
    fn delete<'a>(&'a self, keys: &'a [String]) -> LocalBoxFuture<'a, Result<(), StorageError>>;

    /// Up to `limit` objects after `cursor`, in key order.
    fn list<'a>(&'a self, cursor: Option<&'a str>, limit: u32) -> LocalBoxFuture<'a, Result<Listing, StorageError>>;

    /// The store's current time (ms since the epoch), on the same clock as upload times.
    fn now_ms(&self) -> f64;
}
