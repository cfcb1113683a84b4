//! Coverage: how far the index can be trusted, per collection and overall (reference §4.3,
//! §10 item 68). Aggregation fails closed: anything unknown or unfinished keeps it from being
//! `complete`.

use super::snapshot::SCHEMA_VERSION;

/// The coverage of one collection as read from its status row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionCoverage {
    /// `never|running|complete|partial|failed|stale`, or `None` when the collection has no
    /// status row (a table that predates capture).
    pub status: Option<String>,
    pub reconciliation_required: bool,
    /// The content source schema version the coverage was built for.
    pub schema_version: Option<i64>,
}

impl CollectionCoverage {
    /// The status a reader should believe: `complete` with a pending reconciliation, or built for
    /// another source schema version, is `stale`; a missing row is `never`; an unknown word is
    /// `unknown`.
    pub fn effective(&self) -> &'static str {
        match self.status.as_deref() {
            None => "never",
            Some("complete") if self.reconciliation_required => "stale",
            Some("complete") if self.schema_version.is_some_and(|v| v != SCHEMA_VERSION) => "stale",
            Some("complete") => "complete",
            Some("never") => "never",
            Some("running") => "running",
            Some("partial") => "partial",
            Some("failed") => "failed",
            Some("stale") => "stale",
            Some(_) => "unknown",
        }
    }
}

/// The overall coverage of all registered collections.
pub fn aggregate(collections: &[CollectionCoverage]) -> &'static str {
    let statuses: Vec<&str> = collections.iter().map(CollectionCoverage::effective).collect();
    let all = |s: &str| statuses.iter().all(|x| *x == s);
    let any = |s: &str| statuses.contains(&s);
    if statuses.is_empty() || all("complete") {
        "complete"
    } else if any("unknown") {
        "unknown"
    } else if any("running") {
        "running"
    } else if all("never") {
        "never"
    } else if all("failed") {
        "failed"
    } else if any("stale") {
        "stale"
    } else {
        "partial"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(status: &str, reconciliation_required: bool) -> CollectionCoverage {
        CollectionCoverage { status: Some(status.into()), reconciliation_required, schema_version: Some(1) }
    }

    #[test]
    fn scenario_68_aggregation() {
        assert_eq!(aggregate(&[]), "complete");
        assert_eq!(aggregate(&[c("complete", false), c("complete", false)]), "complete");
        assert_eq!(aggregate(&[c("complete", false), c("never", false)]), "partial");
        assert_eq!(aggregate(&[c("complete", false), c("running", false)]), "running");
        assert_eq!(aggregate(&[c("complete", true)]), "stale");
        assert_eq!(aggregate(&[c("complete", false), c("bogus", false)]), "unknown");
        assert_eq!(aggregate(&[c("never", false), c("never", false)]), "never");
        assert_eq!(aggregate(&[c("failed", false), c("failed", false)]), "failed");
        assert_eq!(aggregate(&[c("failed", false), c("complete", false)]), "partial");
        assert_eq!(aggregate(&[c("stale", false), c("partial", false)]), "stale");
        assert_eq!(
            aggregate(&[CollectionCoverage { status: None, reconciliation_required: false, schema_version: None }]),
            "never"
        );
        let old = CollectionCoverage {
            status: Some("complete".into()),
            reconciliation_required: false,
            schema_version: Some(0),
        };
        assert_eq!(aggregate(&[old]), "stale");
    }
}
