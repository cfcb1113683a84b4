//! The operator view of a leased queue row (a work row, a collection deletion): the lease and
//! attempt keys every such row shows, written once.

use serde_json::{json, Map, Value as Json};

use crate::repo::lease::LeaseView;

/// A queue row's JSON: its lease and attempt keys (`state`, `attemptCount`, `nextAttemptAt`,
/// `leaseExpiresAt`, `lastErrorCode`, `updatedAt`), every one always present (`null` when empty)
/// and never the lease token, with the row's `own` keys.
pub fn row_json<const N: usize>(lease: LeaseView<'_>, own: [(&str, Json); N]) -> Json {
    let mut out = Map::new();
    out.insert("state".into(), json!(lease.state));
    out.insert("attemptCount".into(), json!(lease.attempt_count));
    out.insert("nextAttemptAt".into(), json!(lease.next_attempt_at));
    out.insert("leaseExpiresAt".into(), json!(lease.lease_expires_at));
    out.insert("lastErrorCode".into(), json!(lease.last_error_code));
    out.insert("updatedAt".into(), json!(lease.updated_at));
    out.extend(own.into_iter().map(|(k, v)| (k.to_owned(), v)));
    Json::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::state::QueueState;

    #[test]
    fn a_queue_row_shows_every_lease_key_with_its_own() {
        let lease = LeaseView {
            state: QueueState::Retry,
            attempt_count: 2,
            next_attempt_at: "2030-01-01T00:01:00.000Z",
            lease_expires_at: None,
            last_error_code: Some("E"),
            updated_at: "2030-01-01T00:00:00.000Z",
        };
        assert_eq!(
            row_json(lease, [("phase", json!("work"))]),
            json!({
                "state": "retry",
                "attemptCount": 2,
                "nextAttemptAt": "2030-01-01T00:01:00.000Z",
                "leaseExpiresAt": null,
                "lastErrorCode": "E",
                "updatedAt": "2030-01-01T00:00:00.000Z",
                "phase": "work",
            })
        );
    }
}
