//! Repository: builds statements from the `.sql` files in `src/sql/` and runs them through an
//! [`Executor`](crate::exec::Executor). The only module that knows table layouts.

pub mod capture;
pub mod content;
pub mod continuation;
pub mod daily;
pub mod deletion;
pub mod encode;
pub mod field_deletion;
pub mod lease;
pub mod media;
pub mod projection;
pub mod reads;
pub mod relink;
pub mod repair;
pub mod schedule;
pub mod schema;
pub mod sitemap;
pub mod ticks;
pub mod tokens;
pub mod uses;
pub mod versions;
pub mod work;
