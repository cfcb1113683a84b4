//! media-usage-worker: a Cloudflare Worker (Rust, D1) that keeps a CMS media usage index.
//!
//! Code map, in reading order (see `ARCHITECTURE.md` for invariants):
//! - [`model`]: validated identifiers, fields, content rules, roles and scopes (pure).
//! - [`exec`]: the one `Executor` trait every statement goes through, with the D1 limits,
//!   guarded batches, metering and fault injection; the native SQLite backend.
//! - [`sql`]: the only way to put identifiers into SQL templates.
//! - [`repo`]: statements built from `src/sql/**.sql`, per area.
//! - [`lane`]: what the tick's background lanes share: the context a step gets, what it
//!   reports, the tick-log counters, and the adaptive batch that sizes their steps.
//! - [`usage`]: the media usage index: extraction, projection (the work lane), coverage, repair
//!   (the repair lane) and the cron tick, which rotates every lane.
//! - [`storage`]: media files: the object store trait, upload checks, how files are served, the
//!   storage lane's sweep.
//! - [`lifecycle`]: collection create / add field / delete (the tombstone's front phases in the
//!   request, its cleanup as a tick lane), composed from `repo` and `usage`.
//! - [`api`]: the HTTP contract as plain functions of (request, executor).
//! - [`console`]: the operator console page (embedded HTML, script and style), a client of [`api`].
//! - [`settings`]: the table of every environment variable (default, range, meaning), read and
//!   checked at once into the budgets, policies and [`api::Config`] the rest takes.
//! - `edge` (wasm32 only): the worker entrypoints, the D1 executor and the clock.

pub mod api;
pub mod clock;
pub mod console;
pub mod exec;
pub mod ids;
pub mod lane;
pub mod lifecycle;
pub mod migrations;
pub mod model;
pub mod repo;
pub mod settings;
pub mod sql;
pub mod storage;
pub mod tick;
pub mod usage;

#[cfg(target_arch = "wasm32")]
mod edge;
