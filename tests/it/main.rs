//! Native integration tests: one binary, real SQLite configured like D1.

mod admission;
mod api_content;
mod api_schema_media_auth;
mod commit_unknown;
mod deletion;
mod executor;
mod lease;
mod media_files;
mod media_list;
mod openapi;
mod ownership;
mod projection;
mod reference_rules;
mod repair;
mod rows_budget;
mod safe_delete;
mod scans;
mod settings;
mod sitemap;
mod sql_files;
mod states;
mod support;
mod tidy;
mod tokens;
mod upload_streaming;
mod usage;
