//! The `tables` lane: brings each collection's content table up to the table revision this code
//! creates ([`schema::TABLE_REVISION`]), one collection per step. Tables created before an
//! index was added to the template get it here, since a migration cannot name `ec_<slug>`
//! tables; a table created now is current from the start and never seen by this lane.

use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, LaneStep};
use crate::model::ident::Ident;
use crate::repo::schema;

/// Content tables the lane brought up to date.
pub const TABLES_UPGRADED: Counter = Counter::new("tablesUpgraded");

/// The `tables` lane in a tick: steps until no registered collection's table is outdated.
#[derive(Debug, Clone, Default)]
pub struct TablesLane {
    /// No outdated table was found in this tick.
    done: bool,
}

impl TablesLane {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "tables";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[TABLES_UPGRADED];

    pub fn new() -> TablesLane {
        TablesLane::default()
    }

    /// The most statements one step issues.
    pub fn reserve(&self) -> u64 {
        schema::UPGRADE_STEP_STATEMENTS
    }

    /// Upgrades the next outdated table; `None` when every table is current. A collection
    /// deleted between the lookup and the upgrade fails the step (its table is gone); the next
    /// tick no longer finds it.
    pub async fn step<E: Executor, K>(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.done {
            return Ok(None);
        }
        let Some(table) = schema::outdated_table(ctx.exec).await? else {
            self.done = true;
            return Ok(None);
        };
        let slug = Ident::parse(&table.slug)
            .map_err(|e| Error::Decode(format!("stored collection slug {:?}: {e}", table.slug)))?;
        schema::upgrade_table(ctx.exec, &table.id, &slug).await?;
        ctx.count(TABLES_UPGRADED, 1);
        Ok(Some(LaneStep::progress()))
    }
}
