//! Media files: the object store behind `MEDIA_BUCKET` (R2 at the edge, memory in native tests),
//! what an upload may be (`inspect`), an upload's file on its way into the store (`upload`), and
//! how a stored file is served (`serve`).
//!
//! The store is reached through one object-safe trait so that handlers and the tick take it as
//! `&dyn Storage` without another type parameter. Every call is one storage operation, counted by
//! the caller like a statement.

pub mod inspect;
#[cfg(not(target_arch = "wasm32"))]
pub mod memory;
pub mod serve;
pub mod sweep;
pub mod upload;

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
    /// Whether the object carries [`MARKER`]: this worker stored it. Only such objects are swept,
    /// and (but for the legacy rule of the file route) served.
    pub marked: bool,
}

/// The custom metadata entry (name, value) every object this worker stores carries, so that it
/// can tell its own objects from others in a shared bucket: the storage sweep deletes only marked
/// objects and the file route serves only them (see `api::media_file::get` for the one exception).
/// Objects stored by versions before the marker have none.
pub const MARKER: (&str, &str) = ("emdash-media-worker", "1");

/// Whether custom metadata (name, value pairs) carries [`MARKER`].
pub fn is_marked<'a>(mut metadata: impl Iterator<Item = (&'a str, &'a str)>) -> bool {
    metadata.any(|entry| entry == MARKER)
}

/// One page of a listing in key order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Listing {
    pub objects: Vec<StoredObject>,
    /// Where the next page starts; `None` on the last page.
    pub cursor: Option<String>,
}

/// The smallest part of a multipart upload but the last (R2's rule; every part but the last must
/// also be the same size). Uploads stream through parts of exactly this size.
pub const PART_BYTES: usize = 5 * 1024 * 1024;

/// The longest object key R2 accepts, in bytes; a longer (or an empty) key is an error there, not
/// a missing object.
pub const MAX_KEY_BYTES: usize = 1024;

/// Whether R2 accepts `key` as an object key.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_BYTES
}

/// A stored part of a multipart upload, as its completion needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct PartTag {
    pub number: u16,
    pub etag: String,
}

/// A storage operation failed (the message is for the log, never for the caller).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("storage: {0}")]
pub struct StorageError(pub String);

/// The object store.
pub trait Storage {
    /// Stores `bytes` under `key` with its content type and [`MARKER`]; the store verifies the
    /// SHA-256.
    fn put<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        content_type: &'a str,
        sha256: [u8; 32],
    ) -> LocalBoxFuture<'a, Result<(), StorageError>>;

    /// Starts a multipart upload of `key` (its object will carry [`MARKER`]); returns its upload
    /// id. Its parts are no object (a listing does not show them) until it is completed.
    fn begin_multipart<'a>(
        &'a self,
        key: &'a str,
        content_type: &'a str,
    ) -> LocalBoxFuture<'a, Result<String, StorageError>>;

    /// Stores part `number` (from 1) of a multipart upload.
    fn put_part<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        number: u16,
        bytes: Vec<u8>,
    ) -> LocalBoxFuture<'a, Result<PartTag, StorageError>>;

    /// Completes a multipart upload: the object `key` is its parts in order.
    fn complete_multipart<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        parts: Vec<PartTag>,
    ) -> LocalBoxFuture<'a, Result<(), StorageError>>;

    /// Abandons a multipart upload and its parts.
    fn abort_multipart<'a>(&'a self, key: &'a str, upload_id: &'a str) -> LocalBoxFuture<'a, Result<(), StorageError>>;

    /// The object's metadata, `None` when there is none.
    fn head<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<StoredObject>, StorageError>>;

    /// Deletes the objects (missing ones are no error).
    fn delete<'a>(&'a self, keys: &'a [String]) -> LocalBoxFuture<'a, Result<(), StorageError>>;

    /// Up to `limit` objects after `cursor`, in key order, with whether each is marked (their
    /// content type may be absent).
    fn list<'a>(&'a self, cursor: Option<&'a str>, limit: u32) -> LocalBoxFuture<'a, Result<Listing, StorageError>>;

    /// The store's current time (ms since the epoch), on the same clock as upload times.
    fn now_ms(&self) -> f64;
}
