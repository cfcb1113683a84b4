//! Projection fingerprints: SHA-256 over canonical JSON (keys sorted at every
//! level) of the extraction schema, the reference rules, the source metadata and the sorted
//! occurrences.

use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};

use super::extract::{ExtractionField, Occurrence, Rules};
use crate::model::source::SourceMeta;

/// Prefix of every v1 fingerprint.
pub const PREFIX: &str = "media-usage-projection:v1:sha256:";

/// Canonical JSON: object keys sorted recursively, no whitespace.
pub fn canonical(v: &Json) -> String {
    match v {
        Json::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.into_iter().map(|k| format!("{}:{}", Json::String(k.clone()), canonical(&map[k]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Json::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// The fingerprint and the UTF-8 length of its canonical payload (used by admission).
/// `field_epoch` counts the collection's deleted fields: it is part of the payload when not 0
/// (so fingerprints from before any deletion keep their value).
pub fn fingerprint(
    schema: &[ExtractionField],
    rules: &Rules,
    field_epoch: i64,
    meta: &SourceMeta,
    occurrences: &[Occurrence],
) -> (String, usize) {
    let schema_json: Vec<Json> = schema
        .iter()
        .map(|f| {
            json!({
                "slug": f.slug.as_str(),
                "type": f.field_type.as_str(),
                "subFields": f.media_sub_fields.iter()
                    .map(|s| json!({"slug": s.slug.as_str(), "type": s.field_type.as_str()}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut occ: Vec<String> = occurrences.iter().map(|o| canonical(&json!(o))).collect();
    occ.sort();
    let occ_json: Vec<Json> = occ.iter().map(|s| serde_json::from_str(s).unwrap_or(Json::Null)).collect();
    let payload = json!({
        "version": 1,
        "rules": rules.id(),
        "collectionId": meta.collection_id,
        "schema": schema_json,
        "source": {
            "key": meta.source_key,
            "type": "content",
            "collectionSlug": meta.collection_slug,
            "contentId": meta.content_id,
            "variant": meta.variant.as_str(),
            "locale": meta.locale,
            "translationGroup": meta.translation_group,
            "slug": meta.content_slug,
            "title": meta.content_title,
            "status": meta.content_status,
            "scheduledAt": meta.content_scheduled_at,
            "deletedAt": meta.content_deleted_at,
            "revisionId": meta.revision_id,
            "schemaVersion": meta.schema_version,
            "completeness": "complete",
        },
        "occurrences": occ_json,
    });
    let mut payload = payload;
    if field_epoch != 0 {
        payload["fieldEpoch"] = json!(field_epoch);
    }
    let text = canonical(&payload);
    let digest = Sha256::digest(text.as_bytes());
    (format!("{PREFIX}{}", hex::encode(digest)), text.len())
}

/// Whether a stored fingerprint is a well-formed v1 fingerprint.
pub fn is_v1(fp: &str) -> bool {
    fp.strip_prefix(PREFIX).is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let v = json!({"b": 1, "a": {"d": [ {"z": 1, "y": 2} ], "c": null}});
        assert_eq!(canonical(&v), r#"{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}"#);
    }

    #[test]
    fn v1_shape_is_recognised() {
        assert!(is_v1(&format!("{PREFIX}{}", "a".repeat(64))));
        assert!(!is_v1("media-usage-projection:v2:sha256:abc"));
    }
}
