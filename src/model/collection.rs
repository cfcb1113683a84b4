//! A registered collection: its exact identity (id and slug), label and fields.

use super::field::Field;
use super::ident::Ident;

/// A registered collection with its fields in display order. The pair (`id`, `slug`) is its
/// exact identity: a collection deleted and created again under the same slug has a new id.
#[derive(Debug, Clone, PartialEq)]
pub struct Collection {
    pub id: String,
    pub slug: Ident,
    pub label: String,
    pub created_at: String,
    pub updated_at: String,
    pub fields: Vec<Field>,
}

impl Collection {
    pub fn field(&self, slug: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.slug.as_str() == slug)
    }
}
