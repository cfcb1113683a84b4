//! Coverage: how far the index can be trusted, per collection and overall. Aggregation fails
//! closed: anything unknown or unfinished keeps it from being `complete`.

use super::extract::Rules;
use crate::model::source::SCHEMA_VERSION;
use crate::model::state::CoverageStatus;
use crate::repo::capture::CoverageRow;

/// The coverage of one collection as read from its status row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionCoverage {
    /// The stored status, or `None` when the collection has no status row (a table that
    /// predates capture). A stored word this code does not know reads as `Unknown`.
    pub status: Option<CoverageStatus>,
    pub reconciliation_required: bool,
    /// The content source schema version the coverage was built for.
    pub schema_version: Option<i64>,
    /// The coverage was proven under the deployed reference rules.
    pub rules_current: bool,
}

impl CollectionCoverage {
    /// The status a reader should believe: `complete` with a pending reconciliation, or built for
    /// another source schema version or under other reference rules, is `stale`; a missing row
    /// is `never`.
    pub fn effective(&self) -> CoverageStatus {
        match self.status {
            None => CoverageStatus::Never,
            Some(CoverageStatus::Complete)
                if self.reconciliation_required
                    || self.schema_version.is_some_and(|v| v != SCHEMA_VERSION)
                    || !self.rules_current =>
            {
                CoverageStatus::Stale
            }
            Some(s) => s,
        }
    }
}

impl CollectionCoverage {
    /// The coverage of a stored row, judged under the deployed reference rules.
    pub fn of(row: &CoverageRow, rules: &Rules) -> Self {
        CollectionCoverage {
            status: row.status,
            reconciliation_required: row.reconciliation_required.unwrap_or(0) != 0,
            schema_version: row.schema_version,
            rules_current: row.rules_version.as_deref() == Some(rules.id()),
        }
    }
}

/// The overall coverage of all registered collections: `complete` only if every one is (or
/// there are none); any unknown or running collection decides it; otherwise the weakest.
pub fn aggregate(collections: &[CollectionCoverage]) -> CoverageStatus {
    use CoverageStatus::{Complete, Failed, Never, Partial, Running, Stale, Unknown};
    let statuses: Vec<CoverageStatus> = collections.iter().map(CollectionCoverage::effective).collect();
    let all = |s: CoverageStatus| statuses.iter().all(|x| *x == s);
    let any = |s: CoverageStatus| statuses.contains(&s);
    if statuses.is_empty() || all(Complete) {
        Complete
    } else if any(Unknown) {
        Unknown
    } else if any(Running) {
        Running
    } else if all(Never) {
        Never
    } else if all(Failed) {
        Failed
    } else if any(Stale) {
        Stale
    } else {
        Partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CoverageStatus::*;

    fn c(status: CoverageStatus, reconciliation_required: bool) -> CollectionCoverage {
        CollectionCoverage {
            status: Some(status),
            reconciliation_required,
            schema_version: Some(1),
            rules_current: true,
        }
    }

    #[test]
    fn aggregation_fails_closed() {
        assert_eq!(aggregate(&[]), Complete);
        assert_eq!(aggregate(&[c(Complete, false), c(Complete, false)]), Complete);
        assert_eq!(aggregate(&[c(Complete, false), c(Never, false)]), Partial);
        assert_eq!(aggregate(&[c(Complete, false), c(Running, false)]), Running);
        assert_eq!(aggregate(&[c(Complete, true)]), Stale);
        assert_eq!(aggregate(&[c(Complete, false), c(Unknown, false)]), Unknown);
        assert_eq!(aggregate(&[c(Never, false), c(Never, false)]), Never);
        assert_eq!(aggregate(&[c(Failed, false), c(Failed, false)]), Failed);
        assert_eq!(aggregate(&[c(Failed, false), c(Complete, false)]), Partial);
        assert_eq!(aggregate(&[c(Stale, false), c(Partial, false)]), Stale);
        assert_eq!(
            aggregate(&[CollectionCoverage {
                status: None,
                reconciliation_required: false,
                schema_version: None,
                rules_current: true
            }]),
            Never
        );
        let old = CollectionCoverage {
            status: Some(Complete),
            reconciliation_required: false,
            schema_version: Some(0),
            rules_current: true,
        };
        assert_eq!(aggregate(&[old]), Stale);
        let other_rules = CollectionCoverage { rules_current: false, ..c(Complete, false) };
        assert_eq!(aggregate(std::slice::from_ref(&other_rules)), Stale, "complete under other rules is not trusted");
        assert_eq!(other_rules.effective(), Stale);
        assert_eq!(CollectionCoverage { rules_current: false, ..c(Running, false) }.effective(), Running);
    }
}
