//! Converts `worker` requests and responses to and from the core's plain types.

use futures::StreamExt;
use worker::Headers;

use crate::api::{self, input::MAX_BODY_BYTES};
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
    })
}

/// Reads the body of an admitted request into `head`, chunk by chunk: a declared or streamed
/// body over 1 MiB is dropped as soon as that is known (chunked uploads included) and marked
/// too large; nothing more of it is read.
pub async fn read_body(req: &mut worker::Request, head: &mut api::Request) -> worker::Result<()> {
    if !matches!(head.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") {
        return Ok(());
    }
    let declared = req.headers().get("content-length")?.and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        head.body_too_large = true;
        return Ok(());
    }
    let Ok(mut stream) = req.stream() else { return Ok(()) };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            head.body_too_large = true;
            return Ok(());
        }
        body.extend_from_slice(&chunk);
    }
    head.body = body;
    Ok(())
}

/// Writes the response; `usage` (what the invocation cost in D1) goes into the
/// `x-media-usage-cost` header so operators and tests can see per-request cost.
pub fn write_response(r: api::Response, usage: Option<Usage>) -> worker::Result<worker::Response> {
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
    Ok(worker::Response::from_bytes(r.body.into_bytes())?.with_status(r.status).with_headers(headers))
}
