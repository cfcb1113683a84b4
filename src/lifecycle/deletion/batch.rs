//! The cleanup batch of the deletion lanes (collections and fields): how many rows one cleanup
//! statement deletes, fixed or adapted to the time statements take.

use crate::lane::adaptive::AdaptiveBatch;

/// The cleanup batch: rows per cleanup statement.
pub const START_BATCH_ROWS: u32 = 50;
/// The adaptive batch never shrinks below this.
pub const MIN_BATCH_ROWS: u32 = 50;
/// Nor grows beyond this.
pub const MAX_BATCH_ROWS: u32 = 10_000;

/// How many rows a cleanup statement deletes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CleanupBatch {
    /// Always this many (`MEDIA_USAGE_CLEANUP_BATCH_ROWS`, 1..=[`MAX_BATCH_ROWS`], e.g. 50 for
    /// small, even steps).
    Fixed(u32),
    /// Start at 50; double while statements take under half the target
    /// (`MEDIA_USAGE_STATEMENT_TARGET_MS`), halve above it.
    Adaptive { target_ms: f64 },
}

impl CleanupBatch {
    /// How the rows per statement are sized: a fixed batch never changes; the adaptive one
    /// starts at [`START_BATCH_ROWS`] and stays within [`MIN_BATCH_ROWS`]..=[`MAX_BATCH_ROWS`].
    pub fn sizer(self) -> AdaptiveBatch {
        match self {
            CleanupBatch::Fixed(n) => AdaptiveBatch::fixed(n),
            CleanupBatch::Adaptive { target_ms } => {
                AdaptiveBatch { start: START_BATCH_ROWS, min: MIN_BATCH_ROWS, max: MAX_BATCH_ROWS, target_ms }
            }
        }
    }

    /// The batch a new deletion starts with.
    pub fn start(self) -> u32 {
        self.sizer().start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adaptive_batch_grows_when_full_and_fast_and_shrinks_when_slow() {
        let b = CleanupBatch::Adaptive { target_ms: 200.0 }.sizer();
        assert_eq!(b.start, 50);
        assert_eq!(b.next(50, 10.0, 50), 100, "full and fast: doubles");
        assert_eq!(b.next(50, 10.0, 49), 50, "short: says nothing about larger batches");
        assert_eq!(b.next(800, 150.0, 800), 800, "between half the target and the target: kept");
        assert_eq!(b.next(800, 100.0, 800), 800, "exactly half the target: kept");
        assert_eq!(b.next(800, 99.9, 800), 1_600, "just under half the target: doubles");
        assert_eq!(b.next(800, 200.0, 800), 800, "exactly the target: kept");
        assert_eq!(b.next(800, 200.1, 800), 400, "just over the target: halves");
        assert_eq!(b.next(800, 250.0, 800), 400, "over the target: halves");
        assert_eq!(b.next(60, 900.0, 60), 50, "never below 50");
        assert_eq!(b.next(8_000, 1.0, 8_000), 10_000, "never above 10,000");
        assert_eq!(CleanupBatch::Fixed(50).sizer().next(50, 0.0, 50), 50);
        assert_eq!(CleanupBatch::Fixed(7).start(), 7);
    }
}
