//! The media usage index: extraction of media references from content (pure), projection
//! fingerprints, snapshots, coverage aggregation, the projection job, repair, collection
//! deletion and the cron tick.

pub mod backoff;
pub mod coverage;
pub mod deletion;
pub mod extract;
pub mod fingerprint;
pub mod project;
pub mod repair;
pub mod sitemap;
pub mod snapshot;
pub mod tick;
