//! The object store on R2 (`MEDIA_BUCKET`). `MEDIA_USAGE_FAULT_STORAGE_DELETE` (tests only)
//! makes deletes fail, standing for a crash between a row delete and its object delete. Every
//! object stored here (a put, or a completed multipart upload) carries the custom metadata
//! [`MARKER`]; listings ask for custom metadata so that the sweep sees it.

use std::collections::HashMap;

use futures::future::LocalBoxFuture;
use worker::{Bucket, HttpMetadata, Include, Object, UploadedPart};

use crate::storage::{is_marked, Listing, PartTag, Storage, StorageError, StoredObject, MARKER};

pub struct R2Storage {
    bucket: Bucket,
    fail_deletes: bool,
}

impl R2Storage {
    pub fn new(bucket: Bucket, fail_deletes: bool) -> R2Storage {
        R2Storage { bucket, fail_deletes }
    }

    /// Reads `length` bytes from `offset` as a response body stream; `None` if the object went.
    pub async fn body(&self, key: &str, offset: u64, length: u64) -> worker::Result<Option<worker::ResponseBody>> {
        let mut get = self.bucket.get(key);
        if length > 0 {
            get = get.range(worker::Range::OffsetWithLength { offset, length });
        }
        match get.execute().await? {
            Some(object) if length == 0 => {
                drop(object);
                Ok(Some(worker::ResponseBody::Empty))
            }
            Some(object) => object.body().map(|b| b.response_body()).transpose(),
            None => Ok(None),
        }
    }
}

fn err(e: worker::Error) -> StorageError {
    StorageError(e.to_string())
}

/// The custom metadata of every object this worker stores.
fn marker() -> HashMap<String, String> {
    HashMap::from([(MARKER.0.to_owned(), MARKER.1.to_owned())])
}

/// What the store knows of `o`. A head always has its custom metadata; a listing has it because
/// it asks for it (`Include::CustomMetadata`); unreadable metadata counts as unmarked.
fn stored(o: &Object) -> StoredObject {
    let metadata = o.custom_metadata().unwrap_or_default();
    StoredObject {
        key: o.key(),
        size: o.size(),
        http_etag: o.http_etag(),
        content_type: o.http_metadata().content_type,
        uploaded_ms: o.uploaded().as_millis() as f64,
        marked: is_marked(metadata.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
    }
}

impl Storage for R2Storage {
    fn put<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        content_type: &'a str,
        sha256: [u8; 32],
    ) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            let metadata = HttpMetadata { content_type: Some(content_type.to_owned()), ..Default::default() };
            self.bucket
                .put(key, bytes)
                .http_metadata(metadata)
                .custom_metadata(marker())
                .sha256(sha256.to_vec())
                .execute()
                .await
                .map_err(err)?;
            Ok(())
        })
    }

    fn begin_multipart<'a>(
        &'a self,
        key: &'a str,
        content_type: &'a str,
    ) -> LocalBoxFuture<'a, Result<String, StorageError>> {
        Box::pin(async move {
            let metadata = HttpMetadata { content_type: Some(content_type.to_owned()), ..Default::default() };
            let upload = self
                .bucket
                .create_multipart_upload(key)
                .http_metadata(metadata)
                .custom_metadata(marker())
                .execute()
                .await
                .map_err(err)?;
            Ok(upload.upload_id().await)
        })
    }

    fn put_part<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        number: u16,
        bytes: Vec<u8>,
    ) -> LocalBoxFuture<'a, Result<PartTag, StorageError>> {
        Box::pin(async move {
            let upload = self.bucket.resume_multipart_upload(key, upload_id).map_err(err)?;
            let part = upload.upload_part(number, bytes).await.map_err(err)?;
            Ok(PartTag { number: part.part_number(), etag: part.etag() })
        })
    }

    fn complete_multipart<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        parts: Vec<PartTag>,
    ) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            let upload = self.bucket.resume_multipart_upload(key, upload_id).map_err(err)?;
            upload.complete(parts.into_iter().map(|p| UploadedPart::new(p.number, p.etag))).await.map_err(err)?;
            Ok(())
        })
    }

    fn abort_multipart<'a>(&'a self, key: &'a str, upload_id: &'a str) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(
            async move { self.bucket.resume_multipart_upload(key, upload_id).map_err(err)?.abort().await.map_err(err) },
        )
    }

    fn head<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<StoredObject>, StorageError>> {
        Box::pin(async move { Ok(self.bucket.head(key).await.map_err(err)?.as_ref().map(stored)) })
    }

    fn delete<'a>(&'a self, keys: &'a [String]) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            if self.fail_deletes {
                return Err(StorageError("injected delete failure (MEDIA_USAGE_FAULT_STORAGE_DELETE)".into()));
            }
            match keys {
                [] => Ok(()),
                [one] => self.bucket.delete(one.as_str()).await.map_err(err),
                many => self.bucket.delete_multiple(many.iter().map(String::as_str).collect()).await.map_err(err),
            }
        })
    }

    fn list<'a>(&'a self, cursor: Option<&'a str>, limit: u32) -> LocalBoxFuture<'a, Result<Listing, StorageError>> {
        Box::pin(async move {
            let mut list = self.bucket.list().limit(limit).include(vec![Include::CustomMetadata]);
            if let Some(c) = cursor {
                list = list.cursor(c);
            }
            let page = list.execute().await.map_err(err)?;
            let objects = page.objects().iter().map(stored).collect();
            Ok(Listing { objects, cursor: if page.truncated() { page.cursor() } else { None } })
        })
    }

    fn now_ms(&self) -> f64 {
        js_sys::Date::now()
    }
}
