//! Domain types: validated identifiers, the field and content model, roles and scopes.

pub mod auth;
pub mod collection;
pub mod content;
pub mod field;
pub mod ident;
pub mod source;
pub mod state;
