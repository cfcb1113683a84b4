//! Converts `worker` requests and responses to and from the core's plain types.

use worker::{Headers, Method};

use crate::api::{self, input::MAX_BODY_BYTES};
use crate::exec::meter::Usage;

fn method_name(m: &Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Patch => "PATCH",
        Method::Head => "HEAD",
        Method::Options => "OPTIONS",
        _ => "OTHER",
    }
}

/// Reads what the core needs; a body over 1 MiB (declared or actual) is not kept.
pub async fn read_request(mut req: worker::Request) -> worker::Result<api::Request> {
    let url = req.url()?;
    let query = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let authorization = req.headers().get("authorization")?;
    let declared = req.headers().get("content-length")?.and_then(|v| v.parse::<usize>().ok());
    let method = method_name(&req.method()).to_owned();
    let (body, body_too_large) = if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        (Vec::new(), true)
    } else if matches!(method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") {
        let bytes = req.bytes().await.unwrap_or_default();
        let too_large = bytes.len() > MAX_BODY_BYTES;
        (if too_large { Vec::new() } else { bytes }, too_large)
    } else {
        (Vec::new(), false)
    };
    Ok(api::Request { method, path: url.path().to_owned(), query, authorization, body, body_too_large })
}

/// Writes the response; `usage` (what the invocation cost in D1) goes into the
/// `x-media-usage-cost` header so operators and tests can see per-request cost.
pub fn write_response(r: api::Response, usage: Option<Usage>) -> worker::Result<worker::Response> {
    let headers = Headers::new();
    headers.set("content-type", r.content_type)?;
    if let Some(u) = usage {
        headers.set(
            "x-media-usage-cost",
            &format!(
                "statements={}, binds={}, max-binds={}, max-sql-bytes={}, rows-read={}, rows-written={}",
                u.statements, u.binds, u.max_binds, u.max_sql_bytes, u.rows_read, u.rows_written
            ),
        )?;
    }
    headers.set("cache-control", if r.no_store { "private, no-store" } else { "public, max-age=300" })?;
    Ok(worker::Response::from_bytes(r.body.into_bytes())?.with_status(r.status).with_headers(headers))
}
