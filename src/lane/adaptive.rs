//! The adaptive batch: how a lane sizes its next batch (rows per cleanup statement, entries per
//! group job) from how long its last one took. Pure: the caller measures the time.

/// The default duration a batch aims at (`MEDIA_USAGE_STATEMENT_TARGET_MS`), in milliseconds.
pub const DEFAULT_TARGET_MS: f64 = 200.0;

/// A batch size that follows the time its batches take: it doubles while a batch comes back
/// full in under half the target, halves when one takes longer than the target, and otherwise
/// stays, always within `min..=max`. A fixed size is the case `min == max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveBatch {
    /// The size of the first batch (a lane that stores the size it reached resumes from that).
    pub start: u32,
    /// It never shrinks below this.
    pub min: u32,
    /// Nor grows beyond this.
    pub max: u32,
    /// The duration one batch aims at, in milliseconds.
    pub target_ms: f64,
}

impl AdaptiveBatch {
    /// Always `n`: a batch that does not adapt (its target is never consulted).
    pub fn fixed(n: u32) -> AdaptiveBatch {
        AdaptiveBatch { start: n, min: n, max: n, target_ms: DEFAULT_TARGET_MS }
    }

    /// The size after a batch of `current` took `elapsed_ms` and did `done` items. It grows
    /// only when the batch was full: a short one says nothing about larger batches.
    pub fn next(self, current: u32, elapsed_ms: f64, done: u64) -> u32 {
        let current = current.clamp(self.min, self.max);
        if elapsed_ms > self.target_ms {
            (current / 2).max(self.min)
        } else if elapsed_ms < self.target_ms / 2.0 && done >= u64::from(current) {
            current.saturating_mul(2).min(self.max)
        } else {
            current
        }
    }

    /// The size after a batch of `current` failed (an error, a timeout): half, within bounds.
    /// The failed size is never tried again as it was.
    pub fn after_failure(self, current: u32) -> u32 {
        (current.clamp(self.min, self.max) / 2).max(self.min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: AdaptiveBatch = AdaptiveBatch { start: 50, min: 10, max: 400, target_ms: 200.0 };

    #[test]
    fn a_full_batch_well_under_the_target_doubles() {
        assert_eq!(B.next(50, 10.0, 50), 100);
        assert_eq!(B.next(100, 99.9, 100), 200, "just under half the target");
        assert_eq!(B.next(50, 10.0, 70), 100, "more than asked counts as full");
    }

    #[test]
    fn a_short_batch_says_nothing_about_larger_ones() {
        assert_eq!(B.next(50, 10.0, 49), 50);
        assert_eq!(B.next(50, 0.0, 0), 50);
    }

    #[test]
    fn between_half_the_target_and_the_target_the_size_is_kept() {
        assert_eq!(B.next(100, 100.0, 100), 100, "exactly half the target");
        assert_eq!(B.next(100, 150.0, 100), 100);
        assert_eq!(B.next(100, 200.0, 100), 100, "exactly the target");
    }

    #[test]
    fn a_batch_over_the_target_halves() {
        assert_eq!(B.next(100, 200.1, 100), 50, "just over the target");
        assert_eq!(B.next(100, 900.0, 3), 50, "full or not");
    }

    #[test]
    fn the_size_stays_within_its_bounds() {
        assert_eq!(B.next(12, 900.0, 12), 10, "never below min");
        assert_eq!(B.next(300, 1.0, 300), 400, "never above max");
        assert_eq!(B.next(u32::MAX, 1.0, u64::MAX), 400, "a current size above max is max");
        assert_eq!(B.next(1, 150.0, 1), 10, "a current size below min is min");
        assert_eq!(B.next(1, 900.0, 1), 10);
    }

    #[test]
    fn a_failed_batch_halves_within_its_bounds() {
        assert_eq!(B.after_failure(400), 200);
        assert_eq!(B.after_failure(15), 10, "never below min");
        assert_eq!(B.after_failure(u32::MAX), 200, "a current size above max halves max");
        assert_eq!(AdaptiveBatch::fixed(50).after_failure(50), 50, "a fixed batch stays");
    }

    #[test]
    fn a_fixed_batch_never_changes() {
        let fixed = AdaptiveBatch::fixed(50);
        assert_eq!(fixed.start, 50);
        for (elapsed, done) in [(0.0, 50), (0.0, 0), (1e9, 50), (150.0, 50)] {
            assert_eq!(fixed.next(50, elapsed, done), 50);
            assert_eq!(fixed.next(7, elapsed, done), 50, "whatever it was told it had");
        }
    }
}
