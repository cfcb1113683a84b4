//! The first rules: image/file fields, repeater sub-fields and top-level Portable Text image
//! blocks only. Indexes built before the current rules were built with these; they are kept so
//! upgrades from them are tested.

use serde_json::{Map, Value as Json};

use super::reference::{asset_reference, parse_reference, reference_type, structural};
use super::{Extracted, ExtractionField, ReferenceType};
use crate::model::field::FieldType;

/// The structural occurrences of `data` under the first rules (no candidates).
pub fn extract(fields: &[ExtractionField], data: &Map<String, Json>) -> Extracted {
    let mut out = Extracted::default();
    for f in fields {
        let slug = f.slug.as_str();
        let Some(value) = data.get(slug) else { continue };
        match f.field_type {
            FieldType::Image | FieldType::File => {
                if let (Some((kind, fallback)), Some(r)) = (reference_type(f.field_type), parse_reference(value)) {
                    let path = out.paths.key(None, slug);
                    out.structural.push(structural(path, kind, r, fallback));
                }
            }
            FieldType::Repeater => {
                let Some(items) = value.as_array() else { continue };
                for (i, item) in items.iter().enumerate() {
                    let Some(obj) = item.as_object() else { continue };
                    for sub in &f.media_sub_fields {
                        let Some((kind, fallback)) = reference_type(sub.field_type) else { continue };
                        if let Some(r) = obj.get(sub.slug.as_str()).and_then(parse_reference) {
                            let field = out.paths.key(None, slug);
                            let item = out.paths.index(Some(field), i);
                            let path = out.paths.key(Some(item), sub.slug.as_str());
                            out.structural.push(structural(path, kind, r, fallback));
                        }
                    }
                }
            }
            FieldType::PortableText => {
                let Some(blocks) = value.as_array() else { continue };
                for (i, block) in blocks.iter().enumerate() {
                    if block.get("_type").and_then(Json::as_str) != Some("image") {
                        continue;
                    }
                    let Some(found) = block.get("asset").and_then(Json::as_object).and_then(asset_reference) else {
                        continue;
                    };
                    let (key, r) = found;
                    let field = out.paths.key(None, slug);
                    let block = out.paths.index(Some(field), i);
                    let asset = out.paths.key(Some(block), "asset");
                    let path = out.paths.key(Some(asset), key);
                    out.structural.push(structural(path, ReferenceType::PortableTextImage, r, Some("image")));
                }
            }
            _ => {}
        }
    }
    out
}
