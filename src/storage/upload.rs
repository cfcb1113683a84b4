//! An upload's file on its way into the store ([`Incoming`]): hashed as it arrives, its type
//! settled by its first [`PART_BYTES`] before anything is stored, then stored by one put or
//! streamed part by part into a multipart upload that is completed, or aborted when the upload is
//! given up. What the file must be is [`inspect`]'s; reading it out of a request is the API's.

use sha2::{Digest, Sha256};

use super::inspect::{self, Allowlist, Refusal, Sniffed};
use super::{PartTag, Storage, StorageError, PART_BYTES};

/// Why a file could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// Its first bytes refuse it: a type not allowed, or not the one declared.
    #[error("the file is refused: {0:?}")]
    Refused(Refusal),
    /// It needs more parts than a multipart upload can number.
    #[error("the file needs more parts than an upload may have")]
    TooManyParts,
    /// The store failed at `doing` (for the log, never for the caller).
    #[error("{doing}: {cause}")]
    Store { doing: String, cause: StorageError },
}

/// What the first bytes of a file settled: its type, an image's dimensions and its storage key.
#[derive(Debug, Clone, PartialEq)]
pub struct Identified {
    pub kind: Sniffed,
    pub dimensions: Option<(i64, i64)>,
    pub key: String,
}

/// A multipart upload in progress.
struct Multipart {
    upload_id: String,
    parts: Vec<PartTag>,
}

/// An upload's file as it arrives: hashed chunk by chunk; its first [`PART_BYTES`] are held until
/// they settle its type (nothing is stored of a file that is refused); a larger file streams into
/// a multipart upload one part at a time, so at most about one part is held in memory. A file of
/// one part or less is stored by a single put, once [`store`](Incoming::store) is called (after
/// the caller knows it is not a duplicate). Whatever is not stored must be
/// [abandoned](Incoming::abandon), so that no unfinished upload is left behind.
pub struct Incoming<'s> {
    storage: &'s dyn Storage,
    allowed: &'s Allowlist,
    declared: Option<String>,
    now_ms: f64,
    hasher: Sha256,
    size: u64,
    held: Vec<u8>,
    identified: Option<Identified>,
    multipart: Option<Multipart>,
}

impl<'s> Incoming<'s> {
    /// A file declared as `declared` (its `Content-Type`, if any), to be stored if `allowed`
    /// allows it; `now_ms` orders its new key.
    pub fn new(storage: &'s dyn Storage, allowed: &'s Allowlist, declared: Option<String>, now_ms: f64) -> Self {
        Incoming {
            storage,
            allowed,
            declared,
            now_ms,
            hasher: Sha256::new(),
            size: 0,
            held: Vec::new(),
            identified: None,
            multipart: None,
        }
    }

    /// The bytes received so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The SHA-256 of the bytes received so far.
    pub fn sha256(&self) -> [u8; 32] {
        self.hasher.clone().finalize().into()
    }

    /// Settles the type from the bytes held (the file's first part, or all of it).
    pub fn identify(&mut self) -> Result<&Identified, UploadError> {
        if self.identified.is_none() {
            let kind =
                inspect::check(self.declared.as_deref(), &self.held, self.allowed).map_err(UploadError::Refused)?;
            let dimensions = inspect::dimensions(&kind.mime, &self.held);
            let key = format!("{}.{}", crate::ids::new_sortable_id(self.now_ms), kind.extension);
            self.identified = Some(Identified { kind, dimensions, key });
        }
        Ok(self.identified.as_ref().expect("identified above"))
    }

    /// Takes the next chunk of the file.
    pub async fn push(&mut self, chunk: &[u8]) -> Result<(), UploadError> {
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.held.extend_from_slice(chunk);
        // A part is sent only once more follows it, so a file of one part is never multipart.
        while self.held.len() > PART_BYTES {
            // The first part settles the type before anything is stored.
            self.identify()?;
            let rest = self.held[PART_BYTES..].to_vec();
            self.held.truncate(PART_BYTES);
            let part = std::mem::replace(&mut self.held, rest);
            self.send_part(part).await?;
        }
        Ok(())
    }

    /// Sends the next part, starting the multipart upload with the first.
    async fn send_part(&mut self, part: Vec<u8>) -> Result<(), UploadError> {
        let identified = self.identified.as_ref().expect("identified before the first part");
        let key = identified.key.as_str();
        if self.multipart.is_none() {
            let upload_id = self
                .storage
                .begin_multipart(key, &identified.kind.mime)
                .await
                .map_err(|cause| UploadError::Store { doing: format!("starting the upload of {key}"), cause })?;
            self.multipart = Some(Multipart { upload_id, parts: Vec::new() });
        }
        let multipart = self.multipart.as_mut().expect("started above");
        let number = u16::try_from(multipart.parts.len() + 1).map_err(|_| UploadError::TooManyParts)?;
        let tag = self
            .storage
            .put_part(key, &multipart.upload_id, number, part)
            .await
            .map_err(|cause| UploadError::Store { doing: format!("storing part {number} of {key}"), cause })?;
        multipart.parts.push(tag);
        Ok(())
    }

    /// Gives up what is unfinished: a multipart upload not completed is aborted (its parts never
    /// become an object). Nothing to give up is no error.
    pub async fn abandon(&mut self) -> Result<(), UploadError> {
        if let (Some(m), Some(id)) = (self.multipart.take(), &self.identified) {
            self.storage.abort_multipart(&id.key, &m.upload_id).await.map_err(|cause| UploadError::Store {
                doing: format!("could not abort the upload of {}", id.key),
                cause,
            })?;
        }
        Ok(())
    }

    /// Stores the rest: the last part and the completion, or the whole file in one put. The file
    /// must have been [identified](Incoming::identify).
    pub async fn store(&mut self) -> Result<(), UploadError> {
        let sha256 = self.sha256();
        let held = std::mem::take(&mut self.held);
        let stored = if self.multipart.is_some() {
            self.send_part(held).await?;
            let m = self.multipart.as_ref().expect("checked above");
            let key = &self.identified.as_ref().expect("identified before storing").key;
            let completed = self.storage.complete_multipart(key, &m.upload_id, m.parts.clone()).await;
            if completed.is_ok() {
                self.multipart = None;
            }
            completed
        } else {
            let identified = self.identified.as_ref().expect("identified before storing");
            self.storage.put(&identified.key, held, &identified.kind.mime, sha256).await
        };
        let key = &self.identified.as_ref().expect("identified before storing").key;
        stored.map_err(|cause| UploadError::Store { doing: format!("storing {key}"), cause })
    }
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;

    use super::*;
    use crate::storage::memory::MemoryStorage;

    /// A PNG header (1×1) followed by `len` bytes in all.
    fn png(len: usize) -> Vec<u8> {
        let mut bytes = vec![
            0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0,
            1, 8, 6, 0, 0, 0,
        ];
        bytes.resize(len, 7);
        bytes
    }

    fn push_all(file: &mut Incoming<'_>, bytes: &[u8]) -> Result<(), UploadError> {
        bytes.chunks(64 * 1024).try_for_each(|c| block_on(file.push(c)))
    }

    #[test]
    fn a_small_file_is_stored_by_one_put_only_when_asked() {
        let storage = MemoryStorage::new(1.0);
        let allowed = Allowlist::default();
        let mut file = Incoming::new(&storage, &allowed, Some("image/png".into()), 1.0);
        let bytes = png(PART_BYTES);
        push_all(&mut file, &bytes).unwrap();
        assert_eq!(storage.operations.get(), 0, "nothing is stored before store()");
        let id = file.identify().unwrap().clone();
        assert_eq!((id.kind.mime.as_str(), id.dimensions), ("image/png", Some((1, 1))));
        assert!(id.key.ends_with(".png"));
        assert_eq!((file.size(), file.sha256()), (bytes.len() as u64, <[u8; 32]>::from(Sha256::digest(&bytes))));
        block_on(file.store()).unwrap();
        block_on(file.abandon()).unwrap();
        assert_eq!(storage.keys(), std::slice::from_ref(&id.key));
        assert_eq!(storage.bytes(&id.key).unwrap(), bytes);
        assert_eq!((storage.operations.get(), storage.open_uploads()), (1, 0));
    }

    #[test]
    fn a_large_file_streams_in_parts_and_is_aborted_when_given_up() {
        let storage = MemoryStorage::new(1.0);
        let allowed = Allowlist::default();
        let bytes = png(2 * PART_BYTES + 10);
        let mut file = Incoming::new(&storage, &allowed, None, 1.0);
        push_all(&mut file, &bytes).unwrap();
        assert_eq!(storage.open_uploads(), 1, "two parts are sent while the last is held");
        assert!(storage.largest_payload.get() <= PART_BYTES);
        block_on(file.abandon()).unwrap();
        assert_eq!((storage.open_uploads(), storage.keys().len()), (0, 0));

        let mut file = Incoming::new(&storage, &allowed, None, 1.0);
        push_all(&mut file, &bytes).unwrap();
        let key = file.identify().unwrap().key.clone();
        block_on(file.store()).unwrap();
        block_on(file.abandon()).unwrap();
        assert_eq!(storage.bytes(&key).unwrap(), bytes);
        assert_eq!(storage.open_uploads(), 0);
    }

    #[test]
    fn a_refused_file_stores_nothing_and_a_failing_store_says_where() {
        let storage = MemoryStorage::new(1.0);
        let pdf_only = Allowlist::new(vec!["application/pdf".into()]);
        let mut file = Incoming::new(&storage, &pdf_only, Some("image/png".into()), 1.0);
        let refused = push_all(&mut file, &png(PART_BYTES + 1)).unwrap_err();
        assert!(matches!(refused, UploadError::Refused(Refusal::NotAllowed(ref t)) if t == "image/png"), "{refused}");
        assert_eq!(storage.operations.get(), 0);

        let allowed = Allowlist::default();
        storage.fail_parts.set(true);
        let mut file = Incoming::new(&storage, &allowed, None, 1.0);
        let failed = push_all(&mut file, &png(PART_BYTES + 1)).unwrap_err();
        assert!(
            matches!(failed, UploadError::Store { ref doing, .. } if doing.starts_with("storing part 1 of ")),
            "{failed}"
        );
        block_on(file.abandon()).unwrap();
        assert_eq!(storage.open_uploads(), 0);
    }
}
