//! The `tables` lane: brings each collection's content table up to the table revision this code
//! creates ([`schema::TABLE_REVISION`]), one collection per step. Tables created before an
//! index was added to the template get it here, since a migration cannot name `ec_<slug>`
//! tables; a table created now is current from the start and never seen by this lane.
//!
//! Creating an index reads its table and writes an entry per indexed row, so an upgrade costs
//! rows in proportion to the table: the step bounds that from the table's largest rowid and runs
//! only when it fits the rows the tick has left. A table too large for any tick's rows budget is
//! upgraded by a tick that has written nothing else: the one step that may pass the budget, once
//! per table.

use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::model::ident::Ident;
use crate::repo::schema;

/// Content tables the lane brought up to date.
pub const TABLES_UPGRADED: Counter = Counter::new("tablesUpgraded");

/// The `tables` lane in a tick: steps until no registered collection's table is outdated.
#[derive(Debug, Clone, Default)]
pub struct TablesLane {
    /// No outdated table was found in this tick.
    done: bool,
    /// What the tick had spent when the step began.
    from: RowCount,
}

/// The rows the registry lookup and the table's bound read (the registry is small: one row per
/// collection).
const LOOKUP_ROWS: RowCount = RowCount::new(0, 200);

/// What upgrading a table of at most `rows` rows costs at most: each index reads the table and
/// writes an entry per row, and the registry row is rewritten.
pub fn upgrade_cost(rows: u64) -> RowCount {
    let per_index = rows.saturating_add(1);
    RowCount::new(
        per_index.saturating_mul(schema::UPGRADE_INDEXES) + 5,
        per_index.saturating_mul(schema::UPGRADE_INDEXES) + 10,
    )
}

impl TablesLane {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "tables";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[TABLES_UPGRADED];

    pub fn new() -> TablesLane {
        TablesLane::default()
    }
}

impl<E: Executor, K> Lane<E, K> for TablesLane {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// The most statements one step issues.
    fn reserve(&self) -> u64 {
        schema::UPGRADE_STEP_STATEMENTS
    }

    /// The rows one step costs before its upgrade: the registry lookup and the table's bound.
    fn reserve_rows(&self) -> RowCount {
        LOOKUP_ROWS
    }

    /// Upgrades the next outdated table; `None` when every table is current. A collection
    /// deleted between the lookup and the upgrade fails the step (its table is gone); the next
    /// tick no longer finds it.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.done {
            return Ok(None);
        }
        self.from = ctx.spent();
        let Some(table) = schema::outdated_table(ctx.exec).await? else {
            self.done = true;
            return Ok(None);
        };
        let slug = Ident::parse(&table.slug)
            .map_err(|e| Error::Decode(format!("stored collection slug {:?}: {e}", table.slug)))?;
        let cost = upgrade_cost(schema::table_rows_bound(ctx.exec, &slug).await?);
        let used = ctx.spent().minus(self.from);
        if !cost.fits(ctx.rows.minus(used)) && ctx.spent().written > 0 {
            return Ok(Some(LaneStep::out_of_room()));
        }
        schema::upgrade_table(ctx.exec, &table.id, &slug).await?;
        ctx.count(TABLES_UPGRADED, 1);
        Ok(Some(LaneStep::progress()))
    }
}
