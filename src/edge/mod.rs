//! Worker entrypoints: the only module that names `worker`. Each handler is a thin adapter that
//! builds the executor stack (D1 → fault injector → meter), calls the core and converts back.

mod clock;
mod d1;
mod http;
mod r2;

use std::cell::RefCell;

use worker::{event, Context, Env};

use crate::api;
use crate::exec::fault::Faulty;
use crate::exec::meter::Metered;
use crate::settings::{Reported, Settings};
use crate::storage::Storage;
use crate::tick::{self, Continuation, TickTime};

/// The optional queue binding (producer and consumer) that carries continuation ticks.
const CONTINUE_BINDING: &str = "MEDIA_USAGE_CONTINUE";
/// The optional R2 binding that stores media files.
const BUCKET_BINDING: &str = "MEDIA_BUCKET";

/// The media file store, when `MEDIA_BUCKET` is bound.
fn storage(env: &Env, settings: &Settings) -> Option<r2::R2Storage> {
    env.bucket(BUCKET_BINDING).ok().map(|b| r2::R2Storage::new(b, settings.fault_storage_delete))
}

/// The executor stack every invocation uses.
pub(crate) type EdgeExecutor = Metered<Faulty<d1::D1Executor>, clock::DateClock>;

/// Builds the executor for one invocation (the fault point is a setting, read per invocation).
fn executor(env: &Env, settings: &Settings) -> worker::Result<EdgeExecutor> {
    let d1 = d1::D1Executor::new(env.d1("DB")?);
    Ok(Metered::new(Faulty::new(d1, settings.fault_after_statements), clock::DateClock))
}

/// A `[vars]` value or secret, if set and non-empty.
pub(crate) fn var(env: &Env, name: &str) -> Option<String> {
    env.secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()
        .filter(|s| !s.is_empty())
}

thread_local! {
    /// The setting warnings this isolate has logged.
    static REPORTED: RefCell<Reported> = RefCell::new(Reported::default());
}

/// Reads the settings for one invocation; each distinct warning (a malformed or out-of-range
/// value, an ignored bootstrap secret: never a secret's value) is logged once per isolate.
fn settings(env: &Env) -> Settings {
    let (settings, warnings) = Settings::parse(|name| var(env, name));
    for warning in REPORTED.with(|reported| reported.borrow_mut().fresh(warnings)) {
        worker::console_warn!("configuration: {warning}");
    }
    settings
}

#[event(start)]
fn start() {
    console_error_panic_hook::set_once();
}

#[event(fetch)]
async fn fetch(req: worker::Request, env: Env, _ctx: Context) -> worker::Result<worker::Response> {
    let request = http::read_head(&req)?;
    if !api::is_shared_cacheable(&request) || bypasses_cache(&env, &request).await {
        return answer(req, request, &env).await;
    }
    // Public sitemaps, and their 404s, come from the Cache API while their max-age lasts, so
    // repeated crawls do not read D1 again. Only canonical URLs get here, and the key ignores the
    // query string: no other spelling of a URL can be used to bypass the cache.
    let mut key = req.url()?;
    key.set_query(None);
    let cache = worker::Cache::default();
    if let Ok(Some(hit)) = cache.get(key.as_str(), false).await {
        return Ok(hit);
    }
    let mut response = answer(req, request, &env).await?;
    let public = response.headers().get("cache-control")?.is_some_and(|c| c.starts_with("public"));
    if matches!(response.status_code(), 200 | 404) && public {
        if let Err(e) = cache.put(key.as_str(), response.cloned()?).await {
            worker::console_warn!("sitemap cache write failed: {e}");
        }
    }
    Ok(response)
}

/// Whether a cacheable request's token authenticates, so it is answered from the database (a
/// header that cannot hold a valid token reads nothing). Without an executor, the answer reports
/// why.
async fn bypasses_cache(env: &Env, request: &api::Request) -> bool {
    if request.authorization.is_none() {
        return false;
    }
    let settings = settings(env);
    let Ok(exec) = executor(env, &settings) else { return true };
    api::bypasses_shared_cache(&exec, &settings.config(js_sys::Date::now), request).await
}

/// Answers a request from the core: admitted on its head, then its body is read.
async fn answer(mut req: worker::Request, mut request: api::Request, env: &Env) -> worker::Result<worker::Response> {
    let settings = settings(env);
    let store = storage(env, &settings);
    let (response, usage) = match executor(env, &settings) {
        Ok(exec) => {
            let config = settings.config(js_sys::Date::now);
            // The body is read only once the route and the caller are admitted.
            let response = match api::admit(&exec, &config, &request).await {
                Ok(admitted) => {
                    let limit = api::body_limit(&admitted, &config, &request);
                    let store: Option<&dyn Storage> = store.as_ref().map(|s| s as &dyn Storage);
                    // An upload streams into the bucket; any other body is read first.
                    let body = if api::streams_body(&admitted, &request) {
                        Some(http::body_stream(&mut req, limit)?)
                    } else {
                        http::read_body(&mut req, &mut request, limit).await?;
                        None
                    };
                    api::respond(&exec, &config, store, admitted, &request, body).await
                }
                Err(refused) => refused,
            };
            (response, Some(exec.usage()))
        }
        Err(e) => (api::Response::error(&api::error::ApiError::internal(format!("executor setup: {e}"))), None),
    };
    if let Some(cause) = &response.cause {
        worker::console_error!("{} {} failed: {}", request.method, request.path, cause);
    }
    for line in &response.log {
        worker::console_warn!("{} {}: {}", request.method, request.path, line);
    }
    // A HEAD is answered with the headers alone (the core sets the `Content-Length` a GET of a
    // stored file would have); nothing is read from the bucket.
    if request.method == "HEAD" {
        return http::write_response_with(response, usage, Some(worker::ResponseBody::Empty));
    }
    // A stored file: stream its bytes from the bucket (gone since its head: 404).
    if let (Some((key, offset, length)), Some(store)) = (response.object.clone(), store.as_ref()) {
        return match store.body(&key, offset, length).await? {
            Some(body) => http::write_response_with(response, usage, Some(body)),
            None => http::write_response(
                api::Response::error(&api::error::ApiError::not_found("No stored file has this key")),
                usage,
            ),
        };
    }
    http::write_response(response, usage)
}

/// One cron tick. It cannot return an error: the outcome is logged and recorded in
/// `_emdash_media_usage_ticks` by the core.
#[event(scheduled)]
async fn scheduled(event: worker::ScheduledEvent, env: Env, _ctx: worker::ScheduleContext) {
    // The tick publishes what is scheduled up to its scheduled time (or the database clock, if
    // later); its rows count against the database's day, and nothing stored comes from the event.
    tick_and_continue(&env, None, TickTime::scheduled(event.schedule())).await;
}

/// A continuation message: run another tick at once, with the same budgets. Any batch from any
/// queue is handled: each message is one tick (a message from another chain, or a stale one,
/// cannot hand the baton on, so its chain simply ends).
#[event(queue)]
async fn queue(batch: worker::MessageBatch<ContinueMessage>, env: Env, _ctx: Context) -> worker::Result<()> {
    for message in batch.raw_iter() {
        let token = serde_wasm_bindgen::from_value::<ContinueMessage>(message.body()).ok().map(|m| m.token);
        // A continuation tick counts against the database's day, at the database clock's time.
        tick_and_continue(&env, token.as_deref(), TickTime::database()).await;
    }
    batch.ack_all();
    Ok(())
}

/// The body of a continuation message: the baton token it carries.
#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueMessage {
    token: String,
}

/// Runs one tick; with the optional `MEDIA_USAGE_CONTINUE` queue bound, a tick that leaves due
/// work sends one continuation message.
async fn tick_and_continue(env: &Env, handing_on: Option<&str>, when: TickTime) {
    let settings = settings(env);
    let exec = match executor(env, &settings) {
        Ok(exec) => exec,
        Err(e) => {
            worker::console_error!("media usage tick could not start: {e}");
            return;
        }
    };
    let queue = env.queue(CONTINUE_BINDING).ok();
    let continuation = if queue.is_some() { Continuation::On { handing_on } } else { Continuation::Off };
    let store = storage(env, &settings);
    let store: Option<&dyn Storage> = store.as_ref().map(|s| s as &dyn Storage);
    let (budget, policy) = (settings.budget(), settings.background());
    let report = tick::run_on(&exec, &clock::DateClock, budget, &policy, continuation, store, &when).await;
    match &report.error {
        Some(e) => worker::console_error!("media usage tick {}: {} jobs, {e}", report.outcome, report.count("jobs")),
        None => worker::console_log!(
            "media usage tick {}: {} jobs, {} statements",
            report.outcome,
            report.count("jobs"),
            report.statements
        ),
    }
    if let (Some(queue), Some(token)) = (queue, report.continue_with) {
        // A lost message only delays the work: the baton expires and cron sends another.
        if let Err(e) = queue.send(ContinueMessage { token }).await {
            worker::console_error!("media usage continuation could not be sent: {e}");
        }
    }
}
