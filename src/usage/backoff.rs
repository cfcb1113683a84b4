//! Retry policy shared by every leased queue of the index (projection work, collection
//! deletions, repair runs): how many attempts, and how long to wait between them.

/// Attempts before an item fails for good (only an operator retry reopens it).
pub const MAX_ATTEMPTS: i64 = 5;
/// The first retry waits this long; each later one twice as long, up to [`RETRY_MAX_SECONDS`].
pub const RETRY_BASE_SECONDS: i64 = 30;
pub const RETRY_MAX_SECONDS: i64 = 900;

/// The delay before the next attempt after `attempt` attempts (1-based): 30, 60, 120, 240 s, …
/// up to 900 s. Measured from the database clock by the statement that records the failure.
pub fn retry_delay_seconds(attempt: i64) -> i64 {
    let exp = (attempt - 1).clamp(0, 10) as u32;
    (RETRY_BASE_SECONDS * 2i64.pow(exp)).min(RETRY_MAX_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_double_from_30_seconds_up_to_900() {
        let delays: Vec<i64> = (0..=7).map(retry_delay_seconds).collect();
        assert_eq!(delays, [30, 30, 60, 120, 240, 480, 900, 900]);
    }
}
