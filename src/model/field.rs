//! Field types, their column types, and validation of field values on write (`repo::encode`
//! binds a checked value and decodes a stored one).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::ident::Ident;

/// Columns every content table has; field slugs may not reuse them.
pub const SYSTEM_COLUMNS: &[&str] = &[
    "id",
    "slug",
    "status",
    "author_id",
    "primary_byline_id",
    "created_at",
    "updated_at",
    "published_at",
    "scheduled_at",
    "deleted_at",
    "version",
    "live_revision_id",
    "draft_revision_id",
    "locale",
    "translation_group",
];

/// D1 allows 100 columns per table; leave room for the system columns.
pub const MAX_FIELDS: usize = 80;
/// Repeater sub-fields per repeater.
pub const MAX_SUB_FIELDS: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FieldType {
    String,
    Text,
    Number,
    Boolean,
    Datetime,
    Image,
    File,
    PortableText,
    Repeater,
    Json,
}

impl FieldType {
    pub const ALL: &'static [FieldType] = &[
        FieldType::String,
        FieldType::Text,
        FieldType::Number,
        FieldType::Boolean,
        FieldType::Datetime,
        FieldType::Image,
        FieldType::File,
        FieldType::PortableText,
        FieldType::Repeater,
        FieldType::Json,
    ];

    pub fn parse(raw: &str) -> Option<FieldType> {
        Self::ALL.iter().copied().find(|t| t.as_str() == raw)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::String => "string",
            FieldType::Text => "text",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Datetime => "datetime",
            FieldType::Image => "image",
            FieldType::File => "file",
            FieldType::PortableText => "portableText",
            FieldType::Repeater => "repeater",
            FieldType::Json => "json",
        }
    }

    /// SQLite column type: JSON-bearing fields are stored as JSON text.
    pub fn column_type(self) -> &'static str {
        match self {
            FieldType::Number => "REAL",
            FieldType::Boolean => "INTEGER",
            _ => "TEXT",
        }
    }

    /// Whether a repeater may contain this type as a sub-field (no nesting).
    pub fn allowed_in_repeater(self) -> bool {
        !matches!(self, FieldType::Repeater | FieldType::PortableText)
    }

    /// The column type EmDash gives this field type (its `FIELD_TYPE_TO_COLUMN`): `TEXT`, `JSON`,
    /// `REAL` or `INTEGER`. A field's type may change only within one of these (EmDash refuses
    /// any other change: there is no in-place migration of the stored values).
    pub fn emdash_column_type(self) -> &'static str {
        match self {
            FieldType::String | FieldType::Text | FieldType::Datetime | FieldType::Image | FieldType::File => "TEXT",
            FieldType::PortableText | FieldType::Repeater | FieldType::Json => "JSON",
            FieldType::Number => "REAL",
            FieldType::Boolean => "INTEGER",
        }
    }
}

/// The prefix of a deleted field's column, renamed out of reach until a tick drops it. No field
/// slug can start with it (slugs start with a letter).
pub const DELETED_COLUMN_PREFIX: &str = "_deleted_";

/// The name a deleted field's column is renamed to: the prefix and a generated id (32 lowercase
/// hex digits), so it names no field and no other deleted column.
pub fn deleted_column_name(generated_id: &str) -> Option<String> {
    let name = format!("{DELETED_COLUMN_PREFIX}{generated_id}");
    is_deleted_column_name(&name).then_some(name)
}

/// Whether `name` is a deleted field's column name as [`deleted_column_name`] makes them.
pub fn is_deleted_column_name(name: &str) -> bool {
    name.strip_prefix(DELETED_COLUMN_PREFIX)
        .is_some_and(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// What the schema API shows of a field beyond what the content model uses: its stored
/// validation and widget options (JSON text, EmDash's `validation` and `options`; the content
/// model reads only a repeater's sub-fields from the validation) and when it was created and
/// last changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldMeta {
    pub validation: Option<String>,
    pub options: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// A repeater sub-field.
#[derive(Debug, Clone, PartialEq)]
pub struct SubField {
    pub slug: Ident,
    pub field_type: FieldType,
}

/// A field of a collection, as stored in `_emdash_fields`.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub id: String,
    pub slug: Ident,
    pub label: String,
    pub field_type: FieldType,
    pub required: bool,
    pub sub_fields: Vec<SubField>,
    pub sort_order: i64,
    /// Shown by the schema API only; nothing else reads it.
    pub meta: FieldMeta,
}

impl Field {
    /// The `validation` JSON stored for this field (`{"subFields":[…]}` for repeaters).
    pub fn validation_json(&self) -> Option<String> {
        (self.field_type == FieldType::Repeater).then(|| {
            let subs: Vec<Json> = self
                .sub_fields
                .iter()
                .map(|s| serde_json::json!({"slug": s.slug.as_str(), "type": s.field_type.as_str()}))
                .collect();
            serde_json::json!({ "subFields": subs }).to_string()
        })
    }

    /// Parses the `validation` column back into sub-fields; malformed entries are ignored
    /// (the extractor treats a repeater without valid image sub-fields as "no references").
    pub fn parse_sub_fields(validation: Option<&str>) -> Vec<SubField> {
        let Some(raw) = validation else {
            return Vec::new();
        };
        let Ok(json) = serde_json::from_str::<Json>(raw) else {
            return Vec::new();
        };
        json.get("subFields")
            .and_then(Json::as_array)
            .map(|subs| {
                subs.iter()
                    .filter_map(|s| {
                        let slug = Ident::parse_max(s.get("slug")?.as_str()?, 63).ok()?;
                        let field_type = FieldType::parse(s.get("type")?.as_str()?)?;
                        Some(SubField { slug, field_type })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Like [`Field::parse_sub_fields`] but refuses anything malformed, for readers that must
    /// fail closed (the extractor: a repeater it cannot read could hide references).
    /// `None` and a missing or non-array `subFields` mean "no sub-fields".
    pub fn parse_sub_fields_strict(validation: Option<&str>) -> Result<Vec<SubField>, &'static str> {
        const INVALID: &str = "INVALID_REPEATER_VALIDATION";
        let Some(raw) = validation else { return Ok(Vec::new()) };
        let json = serde_json::from_str::<Json>(raw).map_err(|_| INVALID)?;
        let Some(subs) = json.get("subFields").and_then(Json::as_array) else { return Ok(Vec::new()) };
        subs.iter()
            .map(|s| {
                let slug = s.get("slug").and_then(Json::as_str).and_then(|x| Ident::parse_max(x, 63).ok());
                let field_type = s.get("type").and_then(Json::as_str).and_then(FieldType::parse);
                match (slug, field_type) {
                    (Some(slug), Some(field_type)) => Ok(SubField { slug, field_type }),
                    _ => Err(INVALID),
                }
            })
            .collect()
    }

    /// Checks a value written to this field; `Err` says what is wrong with it.
    pub fn check(&self, value: &Json) -> Result<FieldValue, String> {
        if value.is_null() {
            return if self.required { Err("is required".into()) } else { Ok(FieldValue::Null) };
        }
        match self.field_type {
            FieldType::String | FieldType::Text => {
                value.as_str().map(|s| FieldValue::Text(s.to_owned())).ok_or_else(|| "must be a string".to_owned())
            }
            FieldType::Datetime => match value.as_str() {
                Some(s) if is_iso_datetime(s) => Ok(FieldValue::Text(s.to_owned())),
                _ => Err("must be an ISO-8601 date-time string".into()),
            },
            FieldType::Number => value
                .as_f64()
                .filter(|f| f.is_finite())
                .map(FieldValue::Number)
                .ok_or_else(|| "must be a number".to_owned()),
            FieldType::Boolean => {
                value.as_bool().map(FieldValue::Boolean).ok_or_else(|| "must be a boolean".to_owned())
            }
            FieldType::Image | FieldType::File => match value {
                // A bare string is a legacy local media id and is stored as is.
                Json::String(s) => Ok(FieldValue::Text(s.clone())),
                Json::Object(_) => Ok(FieldValue::Text(value.to_string())),
                _ => Err("must be a media id string or a media reference object".into()),
            },
            FieldType::PortableText => match value {
                Json::Array(blocks) if blocks.iter().all(Json::is_object) => Ok(FieldValue::Text(value.to_string())),
                _ => Err("must be an array of Portable Text blocks".into()),
            },
            FieldType::Repeater => match value {
                Json::Array(items) if items.iter().all(Json::is_object) => Ok(FieldValue::Text(value.to_string())),
                _ => Err("must be an array of objects".into()),
            },
            FieldType::Json => Ok(FieldValue::Text(value.to_string())),
        }
    }
}

/// A value that passed its field's [check](Field::check), in the form its column holds it:
/// JSON-bearing fields (media references, Portable Text, repeaters, JSON) as their JSON text, a
/// legacy media id as the bare string.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    Null,
    Text(String),
    Number(f64),
    Boolean(bool),
}

/// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH:MM)`.
pub fn is_iso_datetime(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    if !(digits(0..4) && b.get(4) == Some(&b'-') && digits(5..7) && b.get(7) == Some(&b'-') && digits(8..10)) {
        return false;
    }
    let month = (b[5] - b'0') * 10 + (b[6] - b'0');
    let day = (b[8] - b'0') * 10 + (b[9] - b'0');
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    if !(matches!(b.get(10), Some(b'T')) && digits(11..13) && b.get(13) == Some(&b':') && digits(14..16)) {
        return false;
    }
    let mut i = 16;
    if b.get(i) == Some(&b':') {
        if !digits(i + 1..i + 3) {
            return false;
        }
        i += 3;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            i = start;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return false;
            }
        }
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            i + 6 == b.len() && digits(i + 1..i + 3) && b.get(i + 3) == Some(&b':') && digits(i + 4..i + 6)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(t: FieldType, required: bool) -> Field {
        Field {
            id: "f".into(),
            slug: Ident::parse("x").unwrap(),
            label: "X".into(),
            field_type: t,
            required,
            sub_fields: vec![],
            sort_order: 0,
            meta: FieldMeta::default(),
        }
    }

    #[test]
    fn deleted_column_names_are_the_prefix_and_a_generated_id() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(deleted_column_name(id).as_deref(), Some("_deleted_0123456789abcdef0123456789abcdef"));
        assert!(is_deleted_column_name("_deleted_0123456789abcdef0123456789abcdef"));
        for bad in [
            "",
            "x",
            "0123456789ABCDEF0123456789abcdef",
            "0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdeg",
            "0123456789abcdef0123456789abcdef0",
        ] {
            assert_eq!(deleted_column_name(bad), None, "{bad:?}");
        }
        assert!(!is_deleted_column_name("deleted_0123456789abcdef0123456789abcdef"));
        assert!(Ident::parse("_deleted_0123456789abcdef0123456789abcdef").is_err(), "no field slug is one");
    }

    #[test]
    fn a_type_may_change_only_within_emdashs_column_type() {
        let class = |t: FieldType| t.emdash_column_type();
        let text = [FieldType::String, FieldType::Text, FieldType::Datetime, FieldType::Image, FieldType::File];
        let json = [FieldType::PortableText, FieldType::Repeater, FieldType::Json];
        assert!(text.iter().all(|t| class(*t) == "TEXT"));
        assert!(json.iter().all(|t| class(*t) == "JSON"));
        assert_eq!(class(FieldType::Number), "REAL");
        assert_eq!(class(FieldType::Boolean), "INTEGER");
    }

    #[test]
    fn values_are_checked_per_type() {
        let cases: &[(FieldType, Json, bool)] = &[
            (FieldType::String, json!("a"), true),
            (FieldType::String, json!(1), false),
            (FieldType::Number, json!(1.5), true),
            (FieldType::Number, json!("1"), false),
            (FieldType::Boolean, json!(true), true),
            (FieldType::Boolean, json!(1), false),
            (FieldType::Datetime, json!("2026-01-02T03:04:05.123Z"), true),
            (FieldType::Datetime, json!("2026-01-02"), true),
            (FieldType::Datetime, json!("2026-13-02"), false),
            (FieldType::Datetime, json!("yesterday"), false),
            (FieldType::Image, json!("m1"), true),
            (FieldType::Image, json!({"id": "m1"}), true),
            (FieldType::Image, json!(3), false),
            (FieldType::PortableText, json!([{"_type": "block"}]), true),
            (FieldType::PortableText, json!({"_type": "block"}), false),
            (FieldType::Repeater, json!([{"a": 1}]), true),
            (FieldType::Repeater, json!([1]), false),
            (FieldType::Json, json!({"any": [1, "x"]}), true),
        ];
        for (t, v, ok) in cases {
            assert_eq!(field(*t, false).check(v).is_ok(), *ok, "{t:?} {v}");
        }
        assert!(field(FieldType::String, true).check(&Json::Null).is_err());
        assert_eq!(field(FieldType::String, false).check(&Json::Null), Ok(FieldValue::Null));
    }

    #[test]
    fn strict_sub_field_parsing_fails_closed() {
        assert_eq!(Field::parse_sub_fields_strict(None), Ok(vec![]));
        assert_eq!(Field::parse_sub_fields_strict(Some("{}")), Ok(vec![]));
        assert_eq!(Field::parse_sub_fields_strict(Some(r#"{"subFields":{}}"#)), Ok(vec![]));
        assert_eq!(
            Field::parse_sub_fields_strict(Some(r#"{"subFields":[{"slug":"image","type":"image"}]}"#)).unwrap().len(),
            1
        );
        assert!(Field::parse_sub_fields_strict(Some("{not json")).is_err());
        assert!(Field::parse_sub_fields_strict(Some(r#"{"subFields":[{"slug":"Bad","type":"image"}]}"#)).is_err());
        assert!(Field::parse_sub_fields_strict(Some(r#"{"subFields":[{"slug":"a","type":"nope"}]}"#)).is_err());
    }

    #[test]
    fn repeater_sub_fields_parse_leniently() {
        let subs = Field::parse_sub_fields(Some(
            r#"{"subFields":[{"slug":"image","type":"image"},{"slug":"Bad","type":"image"},{"slug":"n","type":"nope"}]}"#,
        ));
        assert_eq!(subs.len(), 1);
        assert!(Field::parse_sub_fields(Some("not json")).is_empty());
        assert!(Field::parse_sub_fields(None).is_empty());
    }
}
