//! Converts `worker` requests and responses to and from the core's plain types.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use worker::send::SendWrapper;
use worker::Headers;

use crate::api;
use crate::exec::meter::Usage;

/// Reads what the core needs to route and authenticate a request: everything but its body.
pub fn read_head(req: &worker::Request) -> worker::Result<api::Request> {
    let url = req.url()?;
    let query = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    Ok(api::Request {
        method: req.inner().method(),
        path: url.path().to_owned(),
        query,
        authorization: req.headers().get("authorization")?,
        body: Vec::new(),
        body_too_large: false,
        content_type: req.headers().get("content-type")?,
        if_none_match: req.headers().get("if-none-match")?,
        range: req.headers().get("range")?,
        origin: Some(url.origin().ascii_serialization()).filter(|o| o != "null"),
    })
}

/// Whether the request's `Content-Length` is over `limit` (its body is then refused unread).
fn declares_over(req: &worker::Request, limit: usize) -> worker::Result<bool> {
    let declared = req.headers().get("content-length")?.and_then(|v| v.parse::<usize>().ok());
    Ok(declared.is_some_and(|n| n > limit))
}

/// Reads the body of an admitted request into `head`, chunk by chunk: a declared or streamed
/// body over `limit` bytes (1 MiB, or the upload limit for a multipart upload) is dropped as soon
/// as that is known (chunked uploads included) and marked too large; nothing more of it is read.
pub async fn read_body(req: &mut worker::Request, head: &mut api::Request, limit: usize) -> worker::Result<()> {
    if !matches!(head.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") {
        return Ok(());
    }
    if declares_over(req, limit)? {
        head.body_too_large = true;
        return Ok(());
    }
    let Ok(mut stream) = req.stream() else { return Ok(()) };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > limit {
            head.body_too_large = true;
            return Ok(());
        }
        body.extend_from_slice(&chunk);
    }
    head.body = body;
    Ok(())
}

/// An upload's body as a stream of at most `limit` bytes: a declared length over it ends the
/// stream with [`api::BodyError::TooLarge`] before a byte is read, and so does the first chunk
/// that would pass it (nothing more is read).
pub fn body_stream(req: &mut worker::Request, limit: usize) -> worker::Result<api::BodyStream<'static>> {
    if declares_over(req, limit)? {
        return Ok(futures::stream::once(async { Err(api::BodyError::TooLarge) }).boxed());
    }
    match req.stream() {
        Ok(inner) => Ok(LimitedBody { inner: Some(SendWrapper::new(inner)), read: 0, limit }.boxed()),
        // No body at all: the form parser reports an empty form.
        Err(_) => Ok(futures::stream::empty().boxed()),
    }
}

/// Counts the bytes of a request body stream against its limit.
struct LimitedBody {
    /// `None` once the stream ended or failed: nothing more is read.
    inner: Option<SendWrapper<worker::ByteStream>>,
    read: usize,
    limit: usize,
}

impl Stream for LimitedBody {
    type Item = Result<bytes::Bytes, api::BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(inner) = self.inner.as_mut() else { return Poll::Ready(None) };
        let item = match inner.0.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        let item = match item {
            None => None,
            Some(Err(e)) => Some(Err(api::BodyError::Broken(e.to_string()))),
            Some(Ok(chunk)) if chunk.len() > self.limit - self.read => Some(Err(api::BodyError::TooLarge)),
            Some(Ok(chunk)) => {
                self.read += chunk.len();
                return Poll::Ready(Some(Ok(bytes::Bytes::from(chunk))));
            }
        };
        self.inner = None;
        Poll::Ready(item)
    }
}

/// Writes the response; `usage` (what the invocation cost in D1) goes into the
/// `x-media-usage-cost` header so operators and tests can see per-request cost.
pub fn write_response(r: api::Response, usage: Option<Usage>) -> worker::Result<worker::Response> {
    write_response_with(r, usage, None)
}

/// Like [`write_response`], with `body` instead of the core's: a stored file's bytes, or no body
/// at all (`ResponseBody::Empty`, the answer to a `HEAD`, whose headers then say what a `GET`
/// would send).
pub fn write_response_with(
    r: api::Response,
    usage: Option<Usage>,
    body: Option<worker::ResponseBody>,
) -> worker::Result<worker::Response> {
    let headers = Headers::new();
    headers.set("content-type", r.content_type)?;
    if let Some(u) = usage.filter(|_| r.expose_cost) {
        headers.set(
            "x-media-usage-cost",
            &format!(
                "statements={}, binds={}, max-binds={}, max-sql-bytes={}, rows-read={}, rows-written={}",
                u.statements, u.binds, u.max_binds, u.max_sql_bytes, u.rows_read, u.rows_written
            ),
        )?;
    }
    headers.set("cache-control", if r.no_store { "private, no-store" } else { "public, max-age=300" })?;
    for (name, value) in &r.headers {
        headers.set(name, value)?;
    }
    let response = match body {
        Some(body) => worker::Response::from_body(body)?,
        None => worker::Response::from_bytes(r.body.into_bytes())?,
    };
    Ok(response.with_status(r.status).with_headers(headers))
}
