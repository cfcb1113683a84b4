//! The migrations in `migrations/`, embedded in order. The same files are applied by
//! `wrangler d1 migrations apply`, by the native executor and by the workerd test setup.

/// One migration file.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration, in application order. A test checks this matches the directory.
pub const ALL: &[Migration] = &[
    Migration { name: "0001_content_model.sql", sql: include_str!("../migrations/0001_content_model.sql") },
    Migration { name: "0002_media_usage.sql", sql: include_str!("../migrations/0002_media_usage.sql") },
    Migration {
        name: "0003_media_usage_reconciliation.sql",
        sql: include_str!("../migrations/0003_media_usage_reconciliation.sql"),
    },
    Migration {
        name: "0004_media_usage_read_views.sql",
        sql: include_str!("../migrations/0004_media_usage_read_views.sql"),
    },
    Migration { name: "0005_state_checks.sql", sql: include_str!("../migrations/0005_state_checks.sql") },
    Migration { name: "0006_collection_deletion.sql", sql: include_str!("../migrations/0006_collection_deletion.sql") },
    Migration { name: "0007_real_content.sql", sql: include_str!("../migrations/0007_real_content.sql") },
    Migration { name: "0008_guard_consumed.sql", sql: include_str!("../migrations/0008_guard_consumed.sql") },
    Migration { name: "0009_token_lifecycle.sql", sql: include_str!("../migrations/0009_token_lifecycle.sql") },
    Migration { name: "0010_continuation.sql", sql: include_str!("../migrations/0010_continuation.sql") },
    Migration { name: "0011_media_files.sql", sql: include_str!("../migrations/0011_media_files.sql") },
    Migration { name: "0012_reference_rules.sql", sql: include_str!("../migrations/0012_reference_rules.sql") },
    Migration { name: "0013_unindexed_media.sql", sql: include_str!("../migrations/0013_unindexed_media.sql") },
    Migration { name: "0014_token_lineage.sql", sql: include_str!("../migrations/0014_token_lineage.sql") },
    Migration {
        name: "0015_content_table_revisions.sql",
        sql: include_str!("../migrations/0015_content_table_revisions.sql"),
    },
    Migration { name: "0016_deletion_rows_kind.sql", sql: include_str!("../migrations/0016_deletion_rows_kind.sql") },
    Migration { name: "0017_rows_budgets.sql", sql: include_str!("../migrations/0017_rows_budgets.sql") },
    Migration { name: "0018_media_trash.sql", sql: include_str!("../migrations/0018_media_trash.sql") },
    Migration { name: "0019_media_author.sql", sql: include_str!("../migrations/0019_media_author.sql") },
    Migration { name: "0021_content_schedule.sql", sql: include_str!("../migrations/0021_content_schedule.sql") },
    Migration { name: "0022_field_deletion.sql", sql: include_str!("../migrations/0022_field_deletion.sql") },
    Migration { name: "0023_idle_passes.sql", sql: include_str!("../migrations/0023_idle_passes.sql") },
    Migration { name: "0024_deletion_counters.sql", sql: include_str!("../migrations/0024_deletion_counters.sql") },
    Migration { name: "0025_rules_index.sql", sql: include_str!("../migrations/0025_rules_index.sql") },
    Migration { name: "0026_partial_projection.sql", sql: include_str!("../migrations/0026_partial_projection.sql") },
    Migration { name: "0027_media_versions.sql", sql: include_str!("../migrations/0027_media_versions.sql") },
    Migration { name: "0028_media_relinks.sql", sql: include_str!("../migrations/0028_media_relinks.sql") },
    Migration { name: "0029_version_purge.sql", sql: include_str!("../migrations/0029_version_purge.sql") },
    Migration { name: "0030_relink_walk.sql", sql: include_str!("../migrations/0030_relink_walk.sql") },
];
