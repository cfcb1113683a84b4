//! How domain values travel to and from columns: a checked field value as the [`Value`] it is
//! bound as, a stored column back as the JSON the API and the extractor read, and the stored
//! states and phases as their words. The model decides what a value may be; this module decides
//! how a column holds it.

use serde_json::Value as Json;

use crate::exec::Value;
use crate::model::field::{Field, FieldType, FieldValue};
use crate::model::state::{
    CaptureState, CoverageStatus, DeletionPhase, FieldDeletionPhase, QueueState, RepairPhase, TickOutcome,
};

impl From<FieldValue> for Value {
    /// Booleans are stored as `0`/`1` (SQLite has no boolean type), numbers as REAL.
    fn from(v: FieldValue) -> Value {
        match v {
            FieldValue::Null => Value::Null,
            FieldValue::Text(s) => Value::Text(s),
            FieldValue::Number(n) => Value::Real(n),
            FieldValue::Boolean(b) => Value::from(b),
        }
    }
}

/// Checks a value written to `field` ([`Field::check`]) and gives the value its column is bound
/// to; `Err` says what is wrong with it.
pub fn to_column(field: &Field, value: &Json) -> Result<Value, String> {
    field.check(value).map(Value::from)
}

/// Converts a stored column value of `field` (as a row returns it) back to the JSON written.
pub fn from_column(field: &Field, stored: &Json) -> Json {
    match (field.field_type, stored) {
        (_, Json::Null) => Json::Null,
        (FieldType::Boolean, v) => Json::Bool(v.as_i64().is_some_and(|i| i != 0)),
        (FieldType::Number, v) => v.clone(),
        (FieldType::Image | FieldType::File, Json::String(s)) => parse_json_like(s),
        (FieldType::PortableText | FieldType::Repeater | FieldType::Json, Json::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Json::String(s.clone()))
        }
        (_, v) => v.clone(),
    }
}

/// The live data of a content row: its field columns as the JSON written.
pub fn live_data(row: &crate::exec::Row, fields: &[Field]) -> serde_json::Map<String, Json> {
    let get = |k: &str| row.get(k).cloned().unwrap_or(Json::Null);
    fields.iter().map(|f| (f.slug.as_str().to_owned(), from_column(f, &get(f.slug.as_str())))).collect()
}

/// Parses a stored string as JSON when it starts with `{` or `[` (the stored form of JSON-bearing
/// fields); otherwise it is a plain string (a legacy media id).
fn parse_json_like(s: &str) -> Json {
    let t = s.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        serde_json::from_str(s).unwrap_or_else(|_| Json::String(s.to_owned()))
    } else {
        Json::String(s.to_owned())
    }
}

/// Binds each stored state or phase as its word (`as_str`), which its column's `CHECK` pins.
macro_rules! bound_as_word {
    ($($name:ident),+ $(,)?) => {
        $(
            impl From<$name> for Value {
                fn from(v: $name) -> Value {
                    Value::Text(v.as_str().to_owned())
                }
            }
        )+
    };
}

bound_as_word!(QueueState, RepairPhase, TickOutcome, CoverageStatus, CaptureState, DeletionPhase, FieldDeletionPhase);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::ident::Ident;

    fn field(t: FieldType) -> Field {
        Field {
            id: "f".into(),
            slug: Ident::parse("x").unwrap(),
            label: "X".into(),
            field_type: t,
            required: false,
            sub_fields: vec![],
            sort_order: 0,
            meta: Default::default(),
        }
    }

    #[test]
    fn checked_values_are_bound_in_their_column_form() {
        let cases: &[(FieldType, Json, Value)] = &[
            (FieldType::String, json!("a"), Value::Text("a".into())),
            (FieldType::Number, json!(1.5), Value::Real(1.5)),
            (FieldType::Number, json!(2), Value::Real(2.0)),
            (FieldType::Boolean, json!(true), Value::Integer(1)),
            (FieldType::Boolean, json!(false), Value::Integer(0)),
            (FieldType::Image, json!("m1"), Value::Text("m1".into())),
            (FieldType::Image, json!({"id": "m1"}), Value::Text(r#"{"id":"m1"}"#.into())),
            (FieldType::Json, json!("text"), Value::Text(r#""text""#.into())),
            (FieldType::String, Json::Null, Value::Null),
        ];
        for (t, v, bound) in cases {
            assert_eq!(to_column(&field(*t), v).as_ref(), Ok(bound), "{t:?} {v}");
        }
        assert_eq!(to_column(&field(FieldType::Boolean), &json!(1)), Err("must be a boolean".to_owned()));
    }

    #[test]
    fn stored_values_round_trip() {
        let cases: &[(FieldType, Json)] = &[
            (FieldType::Image, json!("m1")),
            (FieldType::Image, json!({"id": "m1", "provider": "local"})),
            (FieldType::Boolean, json!(false)),
            (FieldType::Boolean, json!(true)),
            (FieldType::Number, json!(1.5)),
            (FieldType::Repeater, json!([{"image": "a"}])),
            (FieldType::Json, json!("text")),
        ];
        for (t, v) in cases {
            let f = field(*t);
            let stored = match to_column(&f, v).unwrap() {
                Value::Text(s) => Json::String(s),
                Value::Integer(i) => json!(i),
                Value::Real(r) => json!(r),
                Value::Null => Json::Null,
            };
            assert_eq!(&from_column(&f, &stored), v, "{t:?}");
        }
        // A stored string that is not JSON after all stays the string it is.
        assert_eq!(from_column(&field(FieldType::Image), &json!("{broken")), json!("{broken"));
    }

    #[test]
    fn states_and_phases_are_bound_as_their_words() {
        fn words<T: Copy + Into<Value>>(all: &[T], word: impl Fn(T) -> &'static str) {
            for v in all {
                assert_eq!((*v).into(), Value::Text(word(*v).to_owned()));
            }
        }
        words(QueueState::ALL, QueueState::as_str);
        words(RepairPhase::ALL, RepairPhase::as_str);
        words(TickOutcome::ALL, TickOutcome::as_str);
        words(CoverageStatus::ALL, CoverageStatus::as_str);
        words(CaptureState::ALL, CaptureState::as_str);
        words(DeletionPhase::ALL, DeletionPhase::as_str);
        words(FieldDeletionPhase::ALL, FieldDeletionPhase::as_str);
        assert_eq!(Value::from(DeletionPhase::Fence), Value::Text("fence".into()));
    }
}
