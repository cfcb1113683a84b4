//! `GET`/`HEAD /media/file/{key}`: a stored media file's bytes, cacheable for a year, served
//! only while an uploaded media row outside the trash names its key.

use super::error::ApiError;
use super::{Ctx, Request, Response};
use crate::exec::Executor;
use crate::repo::media as repo;
use crate::storage::{serve, valid_key};

/// `GET /media/file/{key}` (public): the stored bytes with their type, entity tag and a year of
/// caching; `If-None-Match` → 304, `Range` → 206 (416 when it cannot be served). `HEAD` answers
/// exactly as `GET` would, `Content-Length` included, without reading the object.
///
/// An object is served only while an uploaded media row (`content_hash` set: this worker stored
/// the object, under a key it chose) names its key and that row is outside the trash. Whatever
/// else the bucket holds is 404: another application's file, an object a client named by a JSON
/// registration (a JSON row never makes an object servable, even one this worker once stored), the
/// file of an item in the trash, and the object of one deleted (its delete still to come, or
/// failed and waiting for the storage sweep). One statement on the unique index of storage keys
/// decides; an object uploaded before the storage marker existed is served by the same rule.
pub async fn get<E: Executor>(ctx: &Ctx<'_, E>, key: &str, req: &Request) -> Result<Response, ApiError> {
    let not_found = || ApiError::not_found("No stored file has this key");
    let storage = ctx.storage.ok_or_else(not_found)?;
    // The route gives the key decoded, slashes included; a key R2 would refuse is simply absent.
    if !valid_key(key) {
        return Err(not_found());
    }
    let object = storage
        .head(key)
        .await
        .map_err(|e| ApiError::internal(format!("reading {key}: {e}")))?
        .ok_or_else(not_found)?;
    // One statement on the unique index of storage keys.
    if !repo::key_served(ctx.exec, key).await? {
        return Err(not_found());
    }
    let plan = serve::plan(&object, req.if_none_match.as_deref(), req.range.as_deref());
    let mut headers = plan.headers;
    let body = if req.method == "HEAD" {
        // The length the `GET` would send: the edge has it set from the body there (the bytes
        // served; an empty body for a 416; none at all for a 304).
        let length = match plan.body {
            Some((_, length)) => Some(length),
            None if plan.status == 304 => None,
            None => Some(0),
        };
        if let Some(length) = length {
            headers.push(("content-length", length.to_string()));
        }
        None
    } else {
        plan.body.map(|(offset, length)| (key.to_owned(), offset, length))
    };
    Ok(Response {
        no_store: false,
        headers,
        object: body,
        ..Response::raw(plan.status, "application/octet-stream", String::new())
    })
}
