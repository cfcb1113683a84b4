//! What the tick's lanes share. A lane is a kind of background work advanced one bounded step at
//! a time; its state and its step live with the work itself (`usage::project::WorkLane`,
//! `lifecycle::deletion::lane::DeletionLane`, `usage::repair::RepairLane`,
//! `storage::sweep::StorageLane`), each implementing [`Lane`], and `tick` only rotates them
//! within a budget. Every step gets a [`Ctx`] and answers `Result<Option<LaneStep>, _>`: `None`
//! when nothing of its kind is due. [`adaptive`] sizes the lanes' batches. Pure: this module
//! names no layer.

pub mod adaptive;

/// A number lanes report in the tick log (`details`, beside `continued`, `d1` and `error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Its key in the tick log's `details` (camelCase; `openapi.json`'s `TickDetails` documents
    /// each).
    pub name: &'static str,
    /// It counts operations outside the database (object-store calls), which a tick counts
    /// against its statement budget like statements.
    pub spends_budget: bool,
}

impl Counter {
    /// A counter of what a lane did.
    pub const fn new(name: &'static str) -> Counter {
        Counter { name, spends_budget: false }
    }

    /// A counter of operations outside the database, spent from the statement budget.
    pub const fn operations(name: &'static str) -> Counter {
        Counter { name, spends_budget: true }
    }
}

/// Counts by counter, in the order the counters were first declared or added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(Vec<(Counter, u64)>);

impl Counts {
    /// Every counter of `lanes` (each lane's list), at 0.
    pub fn declare(lanes: &[&[Counter]]) -> Counts {
        let mut counts = Counts::default();
        for &counter in lanes.iter().copied().flatten() {
            counts.add(counter, 0);
        }
        counts
    }

    /// Adds `n` to `counter` (declaring it when new).
    pub fn add(&mut self, counter: Counter, n: u64) {
        match self.0.iter_mut().find(|(c, _)| c.name == counter.name) {
            Some((_, value)) => *value = value.saturating_add(n),
            None => self.0.push((counter, n)),
        }
    }

    /// The count of the counter named `name` (0 when it is not declared).
    pub fn get(&self, name: &str) -> u64 {
        self.0.iter().find(|(c, _)| c.name == name).map_or(0, |(_, n)| *n)
    }

    /// Whether a counter named `name` is declared.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(c, _)| c.name == name)
    }

    /// What the counters of operations outside the database add up to.
    pub fn spending_budget(&self) -> u64 {
        self.0.iter().filter(|(c, _)| c.spends_budget).map(|(_, n)| n).sum()
    }

    /// Each counter's name and count, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().map(|(c, n)| (c.name, *n))
    }
}

/// Rows read and written, as D1 reports them per statement (every index entry written counts):
/// what a step may spend, what it spent, or what it costs at most.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowCount {
    pub written: u64,
    pub read: u64,
}

impl RowCount {
    pub const fn new(written: u64, read: u64) -> RowCount {
        RowCount { written, read }
    }

    /// Both counts added.
    pub const fn plus(self, other: RowCount) -> RowCount {
        RowCount { written: self.written.saturating_add(other.written), read: self.read.saturating_add(other.read) }
    }

    /// Both counts less `other`'s, at least 0.
    pub const fn minus(self, other: RowCount) -> RowCount {
        RowCount { written: self.written.saturating_sub(other.written), read: self.read.saturating_sub(other.read) }
    }

    /// Whether both counts are within `limit`'s.
    pub const fn fits(self, limit: RowCount) -> bool {
        self.written <= limit.written && self.read <= limit.read
    }

    /// How many items of `per_item` each fit in these counts (at most `cap`).
    pub fn items(self, per_item: RowCount, cap: u32) -> u32 {
        let by = |room: u64, each: u64| room.checked_div(each).unwrap_or(u64::MAX);
        let n = by(self.written, per_item.written).min(by(self.read, per_item.read));
        u32::try_from(n).unwrap_or(u32::MAX).min(cap)
    }
}

/// What one lane step may use. Statements go through `exec`; what the step did is added to
/// `counts` as it happens, so a step that ends with nothing due or fails still reports what it
/// spent.
pub struct Ctx<'a, E, K> {
    /// The tick's (metered) executor.
    pub exec: &'a E,
    /// The elapsed-time clock a step measures its batches by.
    pub clock: &'a K,
    /// How many statements this step may issue: at least its lane's reserve, and more when the
    /// budget has room (the work lane then runs group jobs).
    pub room: u64,
    /// The rows this step may read and write: at least its lane's row reserve; a lane sizes its
    /// batches to stay within them.
    pub rows: RowCount,
    /// The rows the tick's statements have read and written so far (as the database reported
    /// them), so a step can measure what its own statements cost.
    pub spent: &'a dyn Fn() -> RowCount,
    /// The tick's counts.
    pub counts: &'a mut Counts,
}

impl<E, K> std::fmt::Debug for Ctx<'_, E, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx").field("room", &self.room).field("rows", &self.rows).field("counts", &self.counts).finish()
    }
}

impl<E, K> Ctx<'_, E, K> {
    /// Adds `n` to `counter`.
    pub fn count(&mut self, counter: Counter, n: u64) {
        self.counts.add(counter, n);
    }

    /// The rows the tick has read and written so far.
    pub fn spent(&self) -> RowCount {
        (self.spent)()
    }
}

/// What one lane step did, for the tick's rotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneStep {
    /// It changed something. A step that only looked (a sweep page with nothing to delete) is
    /// not progress: the tick's outcome stays `idle` for it, so work left of that kind never
    /// asks for a continuation.
    pub progressed: bool,
    /// It gave the work lane something to do again (a repair pass queued entries).
    pub wakes_work: bool,
    /// The lane has nothing useful to do until the work lane has run out of due work (a repair
    /// run at its barrier while its collection's queue work is due): it sleeps until then.
    pub waits_for_work: bool,
    /// A failure the step recorded for retry and went on from: the tick reports it as its
    /// error.
    pub failure: Option<String>,
    /// The lane had due work but the rows left in the tick do not fit its next unit (a group,
    /// a cleanup statement): it did nothing, and steps no more this tick, as if its reserve
    /// had not fit.
    pub out_of_room: bool,
}

impl LaneStep {
    /// A step that changed something and asks nothing of the rotation.
    pub fn progress() -> LaneStep {
        LaneStep { progressed: true, wakes_work: false, waits_for_work: false, failure: None, out_of_room: false }
    }

    /// A step that found no room for its next unit and did nothing.
    pub fn out_of_room() -> LaneStep {
        LaneStep { progressed: false, out_of_room: true, ..LaneStep::progress() }
    }

    /// A step that only looked.
    pub fn looked() -> LaneStep {
        LaneStep { progressed: false, ..LaneStep::progress() }
    }
}

/// A kind of background work the tick runs one bounded step at a time, over the executor `E`
/// and the elapsed-time clock `K`. A lane writes its name, its reserves and its step; the rest
/// has defaults for a lane that holds nothing between steps and that the daily budget stops.
#[allow(async_fn_in_trait)] // Single-threaded on workerd and in native tests; no Send bound.
pub trait Lane<E, K> {
    /// What a step fails with (the executor's error).
    type Error;

    /// Its name in the tick log.
    fn name(&self) -> &'static str;

    /// The most statements its next step issues.
    fn reserve(&self) -> u64;

    /// The most rows its next step reads and writes at its smallest: a lane sizes its batches to
    /// the room it is given beyond that.
    fn reserve_rows(&self) -> RowCount;

    /// Whether the daily budget of background rows stops it (by default, yes).
    fn daily(&self) -> bool {
        true
    }

    /// Statements finishing the lane will cost when the tick ends (releasing what it holds).
    fn release_cost(&self) -> u64 {
        0
    }

    /// Rows finishing the lane will cost when the tick ends.
    fn release_rows(&self) -> RowCount {
        RowCount::default()
    }

    /// Runs one step; `None` when the lane has nothing due.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Self::Error>;

    /// Releases what the lane holds (the tick is over).
    async fn finish(&mut self, _exec: &E) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Counter = Counter::new("a");
    const B: Counter = Counter::new("b");
    const OPS: Counter = Counter::operations("ops");

    #[test]
    fn counts_keep_every_declared_counter_in_order_and_add_up() {
        let mut counts = Counts::declare(&[&[A, OPS], &[B]]);
        assert_eq!(counts.iter().collect::<Vec<_>>(), [("a", 0), ("ops", 0), ("b", 0)]);
        counts.add(B, 2);
        counts.add(B, 3);
        counts.add(OPS, 4);
        assert_eq!(counts.iter().collect::<Vec<_>>(), [("a", 0), ("ops", 4), ("b", 5)]);
        assert_eq!((counts.get("b"), counts.get("nothing")), (5, 0));
        assert!(counts.has("a") && !counts.has("nothing"));
    }

    #[test]
    fn row_counts_add_subtract_and_divide_into_items() {
        let room = RowCount::new(1_000, 500);
        assert_eq!(room.plus(RowCount::new(1, 2)), RowCount::new(1_001, 502));
        assert_eq!(room.minus(RowCount::new(2_000, 1)), RowCount::new(0, 499), "never below 0");
        assert!(RowCount::new(1_000, 500).fits(room) && !RowCount::new(1_001, 0).fits(room));
        assert_eq!(room.items(RowCount::new(10, 1), 10_000), 100, "bounded by rows written");
        assert_eq!(room.items(RowCount::new(1, 10), 10_000), 50, "bounded by rows read");
        assert_eq!(room.items(RowCount::new(1, 1), 60), 60, "bounded by the cap");
        assert_eq!(room.items(RowCount::new(0, 0), 60), 60, "free items: the cap");
        assert_eq!(RowCount::new(5, 5).items(RowCount::new(6, 1), 60), 0, "not even one");
    }

    #[test]
    fn only_operations_outside_the_database_spend_the_statement_budget() {
        let mut counts = Counts::declare(&[&[A, OPS]]);
        counts.add(A, 10);
        counts.add(OPS, 3);
        assert_eq!(counts.spending_budget(), 3);
    }
}
