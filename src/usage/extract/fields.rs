//! Which fields an extraction reads: the collection's media fields, Portable Text fields and
//! repeaters with media sub-fields, by slug.

use super::reference::reference_type;
use crate::model::field::{Field, FieldType};
use crate::model::ident::Ident;

/// A field that can hold media references, with its media sub-fields for repeaters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractionField {
    pub slug: Ident,
    pub field_type: FieldType,
    /// The `image` and `file` sub-fields of a repeater, sorted by slug.
    pub media_sub_fields: Vec<MediaSubField>,
}

/// A repeater sub-field that holds a media reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaSubField {
    pub slug: Ident,
    /// [`FieldType::Image`] or [`FieldType::File`].
    pub field_type: FieldType,
}

/// The extraction schema of a collection: extraction fields sorted by slug.
pub fn extraction_fields(fields: &[Field]) -> Vec<ExtractionField> {
    let mut out: Vec<ExtractionField> = fields
        .iter()
        .filter_map(|f| match f.field_type {
            FieldType::Image | FieldType::File | FieldType::PortableText => {
                Some(ExtractionField { slug: f.slug.clone(), field_type: f.field_type, media_sub_fields: Vec::new() })
            }
            FieldType::Repeater => {
                let mut subs: Vec<MediaSubField> = f
                    .sub_fields
                    .iter()
                    .filter(|s| reference_type(s.field_type).is_some())
                    .map(|s| MediaSubField { slug: s.slug.clone(), field_type: s.field_type })
                    .collect();
                subs.sort_by(|a, b| a.slug.cmp(&b.slug));
                subs.dedup_by(|a, b| a.slug == b.slug);
                (!subs.is_empty()).then(|| ExtractionField {
                    slug: f.slug.clone(),
                    field_type: FieldType::Repeater,
                    media_sub_fields: subs,
                })
            }
            _ => None,
        })
        .collect();
    out.sort_by(|a, b| a.slug.cmp(&b.slug));
    out
}

/// Whether adding this field changes what the extractor sees (schema changes that matter).
pub fn is_extraction_field(f: &Field) -> bool {
    !extraction_fields(std::slice::from_ref(f)).is_empty()
}
