//! The HTTP contract as plain functions: a [`Request`] in, a [`Response`] out, against any
//! [`Executor`]. The edge only converts `worker` types to and from these.

pub mod auth;
pub mod console;
pub mod content;
pub mod content_reads;
pub mod content_state;
pub mod deletions;
pub mod error;
pub mod input;
pub mod media;
pub mod media_file;
pub mod queue;
pub mod relink;
pub mod routes;
pub mod schema;
pub mod sitemap;
pub mod tokens;
pub mod upload;
pub mod usage;

use serde_json::{json, Value as Json};

use crate::exec::Executor;
use crate::model::auth::Principal;
use crate::storage::Storage;
use error::ApiError;
use routes::{Access, Op};

/// Base path of every API route.
pub const BASE_PATH: &str = "/_emdash/api";

/// The committed OpenAPI document, served as is.
pub const OPENAPI_JSON: &str = include_str!("../../openapi.json");

/// Why a streamed body could not be read to its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BodyError {
    /// It (or its declared length) went over the limit; nothing more of it is read.
    #[error("the body is larger than allowed")]
    TooLarge,
    /// The connection failed while it was read.
    #[error("the body could not be read: {0}")]
    Broken(String),
}

/// An upload's body as the edge streams it (every other body is read into [`Request::body`]
/// first). `Send` because the form parser asks for it; at the edge that is a formality.
pub type BodyStream<'a> = futures::stream::BoxStream<'a, Result<bytes::Bytes, BodyError>>;

/// An incoming request, already read by the edge (but for an upload's body; see
/// [`streams_body`]).
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// The URL path, percent-decoding not applied.
    pub path: String,
    /// Decoded query parameters in order.
    pub query: Vec<(String, String)>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    pub body: Vec<u8>,
    /// The edge saw a body (or `Content-Length`) over the limit and did not read it.
    pub body_too_large: bool,
    /// The `Content-Type` header (uploads are `multipart/form-data`).
    pub content_type: Option<String>,
    /// `If-None-Match` and `Range` (stored files).
    pub if_none_match: Option<String>,
    pub range: Option<String>,
    /// The origin the request was sent to (`https://host`), for absolute URLs of this worker's
    /// own routes (sitemap images at the file route).
    pub origin: Option<String>,
}

/// An outgoing response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    /// API responses are `Cache-Control: private, no-store`; public documents may be cached.
    pub no_store: bool,
    /// For the log: the hidden cause of a 500.
    pub cause: Option<String>,
    /// For the log: things that went wrong without failing the request.
    pub log: Vec<String>,
    /// Extra headers (`Allow` on a 405).
    pub headers: Vec<(&'static str, String)>,
    /// Whether the edge may tell the caller what the request cost in D1: only an authenticated
    /// caller learns it (public routes and refusals say nothing about the inside).
    pub expose_cost: bool,
    /// The body is a stored file's bytes instead: its key, offset and length (the edge streams
    /// them from the object store).
    pub object: Option<(String, u64, u64)>,
}

impl Response {
    /// An answer of `status` with `body` as `content_type` and `Cache-Control: private, no-store`,
    /// nothing else set; callers adjust the rest (struct update syntax).
    pub fn raw(status: u16, content_type: &'static str, body: String) -> Response {
        Response {
            status,
            content_type,
            body,
            no_store: true,
            cause: None,
            log: Vec::new(),
            headers: Vec::new(),
            expose_cost: false,
            object: None,
        }
    }

    fn json(status: u16, body: &Json) -> Response {
        Self::raw(status, "application/json", body.to_string())
    }

    pub fn data(status: u16, data: Json) -> Response {
        Self::json(status, &json!({"success": true, "data": data}))
    }

    pub fn error(e: &ApiError) -> Response {
        let mut r = Self::json(e.status, &e.body());
        r.cause = e.cause.clone();
        if let Some(allow) = &e.allow {
            r.headers.push(("allow", allow.to_string()));
        }
        r
    }

    /// Parses the body back (tests).
    pub fn body_json(&self) -> Json {
        serde_json::from_str(&self.body).unwrap_or(Json::Null)
    }
}

/// Deployment settings the handlers need, built from the environment by
/// [`crate::settings::Settings::config`]. No defaults: the edge (or a test) states them.
#[derive(Debug, Clone)]
pub struct Config {
    /// SHA-256 of `EMDASH_ADMIN_TOKEN` (trimmed), if set and long enough
    /// ([`crate::model::auth::bootstrap_hash`]).
    pub admin_token_hash: Option<[u8; 32]>,
    /// `SITE_URL`: the public site's origin, for sitemap entry URLs (sitemaps are off without it).
    pub site_url: Option<String>,
    /// `MEDIA_PUBLIC_URL`: where stored media is served, for sitemap image URLs.
    pub media_public_url: Option<String>,
    /// The per-tick budget; a repair request does at most this much work itself.
    pub tick_budget: crate::tick::budget::Budget,
    /// How background work is done: the cleanup batch a collection deletion starts from, the
    /// reference rules and admission of projections (the after-write one included), the
    /// storage sweep's grace period.
    pub background: crate::tick::lanes::BackgroundPolicy,
    /// An elapsed-time clock (milliseconds) for that budget.
    pub clock: fn() -> f64,
    /// Revisions an entry keeps at most (`MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY`).
    pub max_revisions: u32,
    /// What an upload may be: `MEDIA_MAX_UPLOAD_BYTES` and `MEDIA_ALLOWED_TYPES`.
    pub uploads: upload::UploadRules,
}

#[cfg(test)]
impl Default for Config {
    /// Unit tests: the settings of an empty environment (no admin secret, no site or media
    /// origin, the default budget, limits and upload rules) and a clock that never advances
    /// (budgets then count statements only).
    fn default() -> Config {
        crate::settings::Settings::defaults().config(|| 0.0)
    }
}

/// Everything a handler may use.
pub struct Ctx<'a, E> {
    pub exec: &'a E,
    pub config: &'a Config,
    /// The object store for media files (`MEDIA_BUCKET`), when bound.
    pub storage: Option<&'a dyn Storage>,
    pub principal: Option<Principal>,
    log: std::cell::RefCell<Vec<String>>,
}

impl<E> Ctx<'_, E> {
    /// Notes something for the log without failing the request.
    pub fn log(&self, line: String) {
        self.log.borrow_mut().push(line);
    }
}

/// A successful handler result: status and `data`.
pub type Reply = (u16, Json);

/// Answers one API request (without an object store).
pub async fn handle<E: Executor>(exec: &E, config: &Config, req: &Request) -> Response {
    handle_with(exec, config, None, req).await
}

/// Answers one API request with the object store for media files, if any. An upload's body is
/// taken from [`Request::body`] as it would be streamed.
pub async fn handle_with<E: Executor>(
    exec: &E,
    config: &Config,
    storage: Option<&dyn Storage>,
    req: &Request,
) -> Response {
    match admit(exec, config, req).await {
        Ok(admitted) => respond(exec, config, storage, admitted, req, None).await,
        Err(refused) => refused,
    }
}

/// Answers one API request whose body, if it is an upload's, arrives as `body`.
pub async fn handle_streaming<E: Executor>(
    exec: &E,
    config: &Config,
    storage: Option<&dyn Storage>,
    req: &Request,
    body: BodyStream<'_>,
) -> Response {
    match admit(exec, config, req).await {
        Ok(admitted) => respond(exec, config, storage, admitted, req, Some(body)).await,
        Err(refused) => refused,
    }
}

/// Whether the edge should hand this admitted request's body on as a stream (an upload, up to
/// [`body_limit`] bytes) rather than read it first.
pub fn streams_body(admitted: &Admitted, req: &Request) -> bool {
    matches!(admitted.op, Op::CreateMedia | Op::ReplaceMedia) && upload::is_multipart(req)
}

/// The most body bytes the edge should read for an admitted request: a multipart upload may
/// carry a file of up to `MEDIA_MAX_UPLOAD_BYTES` (plus its form framing); anything else 1 MiB.
pub fn body_limit(admitted: &Admitted, config: &Config, req: &Request) -> usize {
    if streams_body(admitted, req) {
        config.uploads.body_limit()
    } else {
        input::MAX_BODY_BYTES
    }
}

/// Whether the answer to this request is a public document the edge may serve from its cache
/// for the answer's `max-age`, and keep there when its `Cache-Control` is public (a sitemap and
/// its 404s): a `GET` of a sitemap's canonical URL (so every cache key is one), unless its
/// credentials let it past the cache ([`bypasses_shared_cache`]).
pub fn is_shared_cacheable(req: &Request) -> bool {
    req.method == "GET"
        && matches!(routes::resolve(&req.method, &req.path), Ok((Op::SitemapIndex | Op::SitemapCollection, _)))
        && sitemap::is_canonical(&req.path)
}

/// Whether a shared-cacheable request is answered from the database instead of the cache: only
/// when its token authenticates (its holder may learn what the answer cost). A header that
/// cannot hold a valid token (neither the bootstrap token nor of a minted token's shape) is
/// judged without the database; a token of a minted token's shape costs one indexed read.
pub async fn bypasses_shared_cache<E: Executor>(exec: &E, config: &Config, req: &Request) -> bool {
    req.authorization.is_some()
        && matches!(auth::authenticate(exec, config, req.authorization.as_deref()).await, Ok(Some(_)))
}

/// A request whose route and caller are settled; its body has not been needed yet.
#[derive(Debug)]
pub struct Admitted {
    op: Op,
    params: Vec<String>,
    principal: Option<Principal>,
}

/// Routes and authenticates a request from its method, path, query and `Authorization` header
/// alone: an unknown route (404), an unserved method (405), a missing or unknown token (401) or
/// a caller without the role or scope (403) is refused here, before the edge reads any body.
/// `Err` is the whole answer, given from the head: a refusal, or a file of the operator console
/// (which needs neither a body nor the database).
pub async fn admit<E: Executor>(exec: &E, config: &Config, req: &Request) -> Result<Admitted, Response> {
    if let Some(console_file) = console::respond(req, config) {
        return Err(console_file);
    }
    let refuse = |e: ApiError| Response::error(&e);
    let (op, params) = routes::resolve(&req.method, &req.path).map_err(refuse)?;
    input::check_flags(req, routes::flags(op)).map_err(refuse)?;
    // Public routes ignore credentials, so a stale token cannot break a health check; a valid
    // one only lets its holder see what the request cost (an operator measuring public routes).
    let principal = match routes::access(op, req) {
        Access::Public if req.authorization.is_some() => {
            auth::authenticate(exec, config, req.authorization.as_deref()).await.ok().flatten()
        }
        Access::Public => None,
        Access::Need(role, scope) => {
            let principal = auth::authenticate(exec, config, req.authorization.as_deref()).await.map_err(refuse)?;
            auth::authorize(principal.as_ref(), role, scope).map_err(refuse)?;
            principal
        }
    };
    Ok(Admitted { op, params, principal })
}

/// Answers an admitted request. The edge has read its body by now, or hands an upload's body on
/// as `body` (without it, an upload's body is taken from [`Request::body`]).
pub async fn respond<E: Executor>(
    exec: &E,
    config: &Config,
    storage: Option<&dyn Storage>,
    admitted: Admitted,
    req: &Request,
    body: Option<BodyStream<'_>>,
) -> Response {
    // Only an authenticated caller learns what its request cost inside.
    let authenticated = admitted.principal.is_some();
    let mut response = match dispatch(exec, config, storage, admitted, req, body).await {
        Ok(r) => r,
        Err(e) => Response::error(&e),
    };
    response.expose_cost = authenticated;
    response
}

async fn dispatch<E: Executor>(
    exec: &E,
    config: &Config,
    storage: Option<&dyn Storage>,
    admitted: Admitted,
    req: &Request,
    body: Option<BodyStream<'_>>,
) -> Result<Response, ApiError> {
    let Admitted { op, params, principal } = admitted;
    let ctx = Ctx { exec, config, storage, principal, log: Default::default() };
    let p = |i: usize| params.get(i).map(String::as_str).unwrap_or_default();
    let (status, data) = match op {
        Op::Health => health(&ctx).await?,
        Op::OpenApi => return Ok(Response::raw(200, "application/json", OPENAPI_JSON.to_owned())),
        Op::SitemapIndex => return sitemap::index(&ctx, req).await,
        Op::SitemapCollection => return sitemap::collection(&ctx, req).await,
        Op::ListCollections => schema::list(&ctx).await?,
        Op::CreateCollection => schema::create(&ctx, req).await?,
        Op::GetCollection => schema::get(&ctx, p(0)).await?,
        Op::DeleteCollection => schema::delete(&ctx, p(0), req).await?,
        Op::AddField => schema::add_field(&ctx, p(0), req).await?,
        Op::UpdateField => schema::update_field(&ctx, p(0), p(1), req).await?,
        Op::DeleteField => schema::delete_field(&ctx, p(0), p(1)).await?,
        Op::ListContent => content::list(&ctx, p(0), req).await?,
        Op::CreateContent => content::create(&ctx, p(0), req).await?,
        Op::GetContent => content::get(&ctx, p(0), p(1)).await?,
        Op::UpdateContent => content::update(&ctx, p(0), p(1), req).await?,
        Op::DeleteContent => content_state::delete(&ctx, p(0), p(1), req).await?,
        Op::PublishContent => content_state::publish(&ctx, p(0), p(1)).await?,
        Op::UnpublishContent => content_state::unpublish(&ctx, p(0), p(1)).await?,
        Op::RestoreContent => content_state::restore(&ctx, p(0), p(1)).await?,
        Op::DiscardDraft => content_state::discard_draft(&ctx, p(0), p(1)).await?,
        Op::DuplicateContent => content::duplicate(&ctx, p(0), p(1)).await?,
        Op::ContentRevisions => content_reads::revisions(&ctx, p(0), p(1), req).await?,
        Op::CompareContent => content_reads::compare(&ctx, p(0), p(1)).await?,
        Op::ContentTranslations => content_reads::translations(&ctx, p(0), p(1), req).await?,
        Op::ScheduleContent => content_state::schedule(&ctx, p(0), p(1), req).await?,
        Op::UnscheduleContent => content_state::unschedule(&ctx, p(0), p(1)).await?,
        Op::ListMedia => media::list(&ctx, req).await?,
        Op::CreateMedia if upload::is_multipart(req) => {
            upload::upload(&ctx, req, body.unwrap_or_else(|| upload::buffered(req))).await?
        }
        Op::CreateMedia => media::create(&ctx, req).await?,
        Op::MediaFile => return media_file::get(&ctx, p(0), req).await,
        Op::GetMedia => media::get(&ctx, p(0), req).await?,
        Op::UpdateMedia => media::update(&ctx, p(0), req).await?,
        Op::DeleteMedia => media::delete(&ctx, p(0), req).await?,
        Op::RestoreMedia => media::restore(&ctx, p(0)).await?,
        Op::StartRelink => relink::start(&ctx, p(0), req).await?,
        Op::GetRelink => relink::get(&ctx, p(0)).await?,
        Op::ReplaceMedia => {
            upload::replace_file(&ctx, p(0), req, body.unwrap_or_else(|| upload::buffered(req))).await?
        }
        Op::RevertMedia => media::revert(&ctx, p(0), req).await?,
        Op::BulkDeleteMedia => media::bulk_delete(&ctx, req).await?,
        Op::CreateToken => tokens::create(&ctx, req).await?,
        Op::ListTokens => tokens::list(&ctx, req).await?,
        Op::RevokeToken => tokens::revoke(&ctx, p(0), req).await?,
        Op::SelfCheck => self_check(&ctx).await?,
        Op::MediaUsage => usage::media_usage(&ctx, p(0), req).await?,
        Op::UsageStatus => usage::status(&ctx, req).await?,
        Op::UsageTicks => usage::ticks(&ctx, req).await?,
        Op::UsageWork => usage::list_work(&ctx, req).await?,
        Op::UsageWorkRetry => usage::retry_work(&ctx, req).await?,
        Op::UsageRepair => usage::repair(&ctx, req).await?,
        Op::ListDeletions => deletions::list(&ctx, req).await?,
        Op::RetryDeletion => deletions::retry(&ctx, req).await?,
    };
    let mut response = Response::data(status, data);
    response.log = ctx.log.into_inner();
    Ok(response)
}

async fn health<E: Executor>(ctx: &Ctx<'_, E>) -> Result<Reply, ApiError> {
    ctx.exec.run(crate::exec::Statement::new(HEALTH_SQL)).await?;
    Ok((200, json!({"status": "ok", "database": "ok"})))
}

async fn self_check<E: Executor>(ctx: &Ctx<'_, E>) -> Result<Reply, ApiError> {
    let report = crate::exec::selfcheck::run(ctx.exec).await?;
    Ok((200, json!({"passed": report.all_passed(), "checks": report})))
}

const HEALTH_SQL: &str = include_str!("../sql/health.sql");
