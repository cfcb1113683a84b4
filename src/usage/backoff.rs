//! Retry policy shared by every leased queue of the index (projection work, collection
//! deletions, repair runs): how many attempts an item gets, and how long it waits between them.

use crate::repo::lease::Failure;

/// Attempts before an item fails for good (only an operator retry reopens it).
pub const MAX_ATTEMPTS: i64 = 5;
/// The first retry waits this long; each later one twice as long, up to [`RETRY_MAX_SECONDS`].
pub const RETRY_BASE_SECONDS: i64 = 30;
pub const RETRY_MAX_SECONDS: i64 = 900;

/// The attempts a claimed item has had: its stored `attempt_count`, which its claim counted, so
/// the attempt under way is included (the first attempt is 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts(i64);

impl Attempts {
    pub const fn new(attempt_count: i64) -> Attempts {
        Attempts(attempt_count)
    }

    /// The attempts counted, the one under way included.
    pub const fn count(self) -> i64 {
        self.0
    }

    /// Claimed more often than it may be attempted: earlier holders died or lost the item
    /// without recording a failure (a crash, a backend error, a lost lease). The lane stops here
    /// and fails it, visibly, instead of attempting it again.
    pub fn over_claimed(self) -> bool {
        self.0 > MAX_ATTEMPTS
    }

    /// A failure of the attempt under way is the last: the item fails for good.
    pub fn terminal(self) -> bool {
        self.0 >= MAX_ATTEMPTS
    }

    /// The delay before the next attempt after this one fails: 30, 60, 120, 240 s, … up to
    /// 900 s. Measured from the database clock by the statement that records the failure.
    pub fn retry_delay_seconds(self) -> i64 {
        let exp = (self.0 - 1).clamp(0, 10) as u32;
        (RETRY_BASE_SECONDS * 2i64.pow(exp)).min(RETRY_MAX_SECONDS)
    }

    /// How a failure of the attempt under way is recorded: terminal once the attempts are used
    /// up, else retried after the backoff.
    pub fn failure(self) -> Failure {
        Failure { terminal: self.terminal(), delay_seconds: self.retry_delay_seconds() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_double_from_30_seconds_up_to_900() {
        let delays: Vec<i64> = (0..=8).map(|n| Attempts::new(n).retry_delay_seconds()).collect();
        assert_eq!(delays, [30, 30, 60, 120, 240, 480, 900, 900, 900]);
        // The exponent is capped: a count far past any real one neither overflows nor grows.
        assert_eq!(Attempts::new(1_000).retry_delay_seconds(), 900);
        assert_eq!(Attempts::new(i64::MAX).retry_delay_seconds(), 900);
    }

    #[test]
    fn the_fifth_attempt_is_the_last_and_a_sixth_claim_is_over_claimed() {
        let terminal: Vec<bool> = (1..=6).map(|n| Attempts::new(n).terminal()).collect();
        assert_eq!(terminal, [false, false, false, false, true, true]);
        let over: Vec<bool> = (1..=7).map(|n| Attempts::new(n).over_claimed()).collect();
        assert_eq!(over, [false, false, false, false, false, true, true]);
    }

    #[test]
    fn a_failure_is_retried_with_the_backoff_until_the_last_attempt() {
        assert_eq!(Attempts::new(1).failure(), Failure { terminal: false, delay_seconds: 30 });
        assert_eq!(Attempts::new(4).failure(), Failure { terminal: false, delay_seconds: 240 });
        assert_eq!(Attempts::new(5).failure(), Failure { terminal: true, delay_seconds: 480 });
    }
}
