//! "Who uses media M", as two relations, each written once as a fragment in `sql/uses/`: what
//! *blocks a delete* (`blocks_delete.sql`: any current occurrence, entries in the trash and
//! entries too large to index included) and what *counts as a use* in summaries
//! (`counts_as_use.sql`: entries outside the trash, by EmDash's eligibility, and entries too large
//! to index). Both share the arm of the entries too large to index (`unindexed.sql`). A statement
//! embeds them as `{blocks_delete}`, `{counts_as_use}` or `{unindexed_uses}`, over the item it
//! names.

use crate::sql::{self, Fragment};

const BLOCKS_DELETE: &str = include_str!("../sql/uses/blocks_delete.sql");
const COUNTS_AS_USE: &str = include_str!("../sql/uses/counts_as_use.sql");
const UNINDEXED: &str = include_str!("../sql/uses/unindexed.sql");

/// `template` with `first` filled in (fragments that may embed a relation), then the relations,
/// then the item `media_id` they are about (a parameter, or a column of the enclosing row).
pub fn render(template: &'static str, media_id: &Fragment, first: &[(&str, &Fragment)]) -> String {
    let blocks_delete = Fragment::static_sql(BLOCKS_DELETE);
    let counts_as_use = Fragment::static_sql(COUNTS_AS_USE);
    let unindexed = Fragment::static_sql(UNINDEXED);
    let mut vars = first.to_vec();
    vars.extend([
        ("blocks_delete", &blocks_delete),
        ("counts_as_use", &counts_as_use),
        ("unindexed_uses", &unindexed),
        ("media_id", media_id),
    ]);
    sql::render(template, &vars)
}
