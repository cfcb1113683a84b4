//! The media usage index: extraction of media references from content (pure), projection
//! fingerprints, snapshots, coverage aggregation, the projection job and repair (the work and
//! repair lanes the tick runs).

pub mod admission;
pub mod backoff;
pub mod cost;
pub mod coverage;
pub mod extract;
pub mod fingerprint;
pub mod project;
pub mod repair;
pub mod sitemap;
pub mod snapshot;
