//! The media usage index: extraction of media references from content (pure), projection
//! fingerprints, snapshots, coverage aggregation, the projection job, repair and the cron tick
//! (which also runs the collection-deletion lane of [`crate::lifecycle::deletion`]).

pub mod admission;
pub mod backoff;
pub mod coverage;
pub mod extract;
pub mod fingerprint;
pub mod project;
pub mod repair;
pub mod sitemap;
pub mod snapshot;
pub mod tick;
