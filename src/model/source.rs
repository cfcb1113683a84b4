//! Source identity: what a row of `_emdash_media_usage_sources` stands for (one variant of one
//! entry of one exact collection), its canonical key, and the metadata stored with it.

/// Content source schema version.
pub const SCHEMA_VERSION: i64 = 1;
/// Characters of an entry's title the index keeps (its display title).
pub const MAX_TITLE_CHARS: usize = 200;
/// The fields an entry's display title is read from, in order (else its slug, else its id).
pub const TITLE_FIELDS: [&str; 2] = ["title", "name"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Columns,
    DraftOverlay,
}

impl Variant {
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Columns => "columns",
            Variant::DraftOverlay => "draft_overlay",
        }
    }
}

/// `content:<collectionId>:<contentId>:<variant>`.
pub fn source_key(collection_id: &str, content_id: &str, variant: Variant) -> String {
    format!("content:{collection_id}:{content_id}:{}", variant.as_str())
}

/// The half-open range `[low, high)` holding every source key of a collection: keys embed the
/// collection id, so its occurrences are found by range even when their source row is gone.
/// (`;` is the character after `:`.)
pub fn source_key_range(collection_id: &str) -> (String, String) {
    (format!("content:{collection_id}:"), format!("content:{collection_id};"))
}

/// The metadata stored with a source row.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceMeta {
    pub source_key: String,
    pub collection_id: String,
    pub collection_slug: String,
    pub content_id: String,
    pub variant: Variant,
    pub locale: Option<String>,
    pub translation_group: Option<String>,
    pub content_slug: Option<String>,
    pub content_title: String,
    pub content_status: Option<String>,
    pub content_scheduled_at: Option<String>,
    pub content_deleted_at: Option<String>,
    pub revision_id: Option<String>,
    pub schema_version: i64,
    /// The content row's `updated_at` and `version` when the snapshot was taken.
    pub source_updated_at: Option<String>,
    pub source_version: Option<i64>,
}
