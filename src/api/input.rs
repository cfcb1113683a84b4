//! Strict input reading: JSON bodies (unknown keys rejected, every problem reported with its
//! path), query parameters, list limits and opaque cursors.

use base64::Engine;
use serde_json::{Map, Value as Json};

use super::error::{ApiError, Issue};
use super::Request;

/// Largest accepted request body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Longest accepted cursor.
pub const MAX_CURSOR_LEN: usize = 2048;

/// Collects input problems so a client sees all of them at once.
#[derive(Debug, Default)]
pub struct Issues(Vec<Issue>);

impl Issues {
    pub fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Issue { path: path.into(), message: message.into() });
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The validated value, or `Err(VALIDATION_ERROR)` when anything was reported. A missing
    /// value without an issue is reported as one (its reader should have said why).
    pub fn finish_with<T>(mut self, value: Option<T>) -> Result<T, ApiError> {
        match value {
            Some(v) if self.0.is_empty() => Ok(v),
            Some(_) => Err(ApiError::validation(self.0)),
            None => {
                if self.0.is_empty() {
                    self.add("", "Invalid request");
                }
                Err(ApiError::validation(self.0))
            }
        }
    }

    /// `Err(VALIDATION_ERROR)` when anything was reported.
    pub fn finish(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation(self.0))
        }
    }
}

/// Parses the request body as JSON (413 when too large, 400 `INVALID_JSON` when not JSON).
pub fn json_body(req: &Request) -> Result<Json, ApiError> {
    if req.body_too_large || req.body.len() > MAX_BODY_BYTES {
        return Err(ApiError::new(413, "PAYLOAD_TOO_LARGE", "Request body exceeds 1 MiB"));
    }
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid_json("Request body must be a JSON object"));
    }
    serde_json::from_slice(&req.body).map_err(|_| ApiError::invalid_json("Request body is not valid JSON"))
}

/// A JSON object being read under a path, with unknown keys reported.
#[derive(Debug)]
pub struct Obj<'a> {
    path: String,
    map: &'a Map<String, Json>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Obj<'a> {
    /// Reads `value` as an object allowing only `allowed` keys.
    pub fn new(issues: &mut Issues, path: &str, value: &'a Json, allowed: &[&str]) -> Option<Obj<'a>> {
        let Some(map) = value.as_object() else {
            issues.add(path, "Expected an object");
            return None;
        };
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                issues.add(join(path, key), "Unrecognized key");
            }
        }
        Some(Obj { path: path.to_owned(), map })
    }

    pub fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub fn raw(&self, key: &str) -> Option<&'a Json> {
        self.map.get(key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// A string of `min..=max` characters; `None` (with an issue if `required`) when absent.
    pub fn string(&self, issues: &mut Issues, key: &str, required: bool, min: usize, max: usize) -> Option<String> {
        match self.map.get(key) {
            None | Some(Json::Null) if !required => None,
            None | Some(Json::Null) => {
                issues.add(self.path(key), "Required");
                None
            }
            Some(Json::String(s)) => {
                let n = s.chars().count();
                if n < min {
                    issues.add(self.path(key), format!("Must be at least {min} characters"));
                    None
                } else if n > max {
                    issues.add(self.path(key), format!("Must be at most {max} characters"));
                    None
                } else {
                    Some(s.clone())
                }
            }
            Some(_) => {
                issues.add(self.path(key), "Expected a string");
                None
            }
        }
    }

    pub fn boolean(&self, issues: &mut Issues, key: &str) -> Option<bool> {
        match self.map.get(key) {
            None | Some(Json::Null) => None,
            Some(Json::Bool(b)) => Some(*b),
            Some(_) => {
                issues.add(self.path(key), "Expected a boolean");
                None
            }
        }
    }

    /// An integer in `min..=max`.
    pub fn integer(&self, issues: &mut Issues, key: &str, min: i64, max: i64) -> Option<i64> {
        match self.map.get(key) {
            None | Some(Json::Null) => None,
            // A whole number written as a float (`1022.0`) is that integer.
            Some(v) => match v
                .as_i64()
                .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
                .filter(|i| (min..=max).contains(i))
            {
                Some(i) => Some(i),
                None => {
                    issues.add(self.path(key), format!("Expected an integer from {min} to {max}"));
                    None
                }
            },
        }
    }

    pub fn array(&self, issues: &mut Issues, key: &str, required: bool) -> Option<&'a Vec<Json>> {
        match self.map.get(key) {
            None | Some(Json::Null) if !required => None,
            None | Some(Json::Null) => {
                issues.add(self.path(key), "Required");
                None
            }
            Some(Json::Array(a)) => Some(a),
            Some(_) => {
                issues.add(self.path(key), "Expected an array");
                None
            }
        }
    }

    pub fn object(&self, issues: &mut Issues, key: &str) -> Option<&'a Map<String, Json>> {
        match self.map.get(key) {
            None | Some(Json::Null) => None,
            Some(Json::Object(m)) => Some(m),
            Some(_) => {
                issues.add(self.path(key), "Expected an object");
                None
            }
        }
    }
}

/// The first value of a query parameter.
pub fn query<'r>(req: &'r Request, key: &str) -> Option<&'r str> {
    req.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// `?flag=true|1` (anything else, or absent, is false). Values are checked by
/// [`check_flags`] before any handler runs.
pub fn query_flag(req: &Request, key: &str) -> bool {
    matches!(query(req, key), Some("true" | "1"))
}

/// Checks boolean query parameters: each at most once, and `true`, `false`, `1` or `0`.
pub fn check_flags(req: &Request, flags: &[&str]) -> Result<(), ApiError> {
    let mut issues = Issues::default();
    for flag in flags {
        let values: Vec<&str> = req.query.iter().filter(|(k, _)| k == flag).map(|(_, v)| v.as_str()).collect();
        match values.as_slice() {
            [] | ["true" | "false" | "1" | "0"] => {}
            [_] => issues.add(*flag, "Expected true or false"),
            _ => issues.add(*flag, "Given more than once"),
        }
    }
    issues.finish()
}

/// `limit`: an integer from 1 to 100, 50 when absent.
pub fn limit(req: &Request, issues: &mut Issues) -> u32 {
    match query(req, "limit") {
        None => 50,
        Some(raw) => match raw.parse::<u32>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => {
                issues.add("limit", "Expected an integer from 1 to 100");
                50
            }
        },
    }
}

/// `cursor`: an opaque base64 token of `{"v": <order value>, "id": <id>}`.
pub fn cursor(req: &Request, issues: &mut Issues) -> Result<Option<(String, String)>, ApiError> {
    let Some(raw) = query(req, "cursor") else {
        return Ok(None);
    };
    if raw.is_empty() || raw.len() > MAX_CURSOR_LEN {
        issues.add("cursor", format!("Expected 1 to {MAX_CURSOR_LEN} characters"));
        return Ok(None);
    }
    decode_cursor(raw).map(Some).ok_or_else(ApiError::invalid_cursor)
}

/// Trims a `limit + 1` fetch to `limit` rows; when there were more, returns the cursor of the
/// last row kept, built from its `(order value, id)`.
pub fn paginate<T>(rows: &mut Vec<T>, limit: u32, key: impl Fn(&T) -> (String, String)) -> Option<String> {
    if rows.len() <= limit as usize {
        return None;
    }
    rows.truncate(limit as usize);
    rows.last().map(|r| {
        let (order_value, id) = key(r);
        encode_cursor(&order_value, &id)
    })
}

/// A list page as EmDash answers it: `items`, and `nextCursor` only when there is more (EmDash's
/// schemas declare it an optional string, not a nullable one).
pub fn page(items: impl Into<Json>, next: Option<String>) -> Json {
    let mut body = serde_json::json!({ "items": items.into() });
    if let Some(next) = next {
        body["nextCursor"] = Json::from(next);
    }
    body
}

pub fn encode_cursor(order_value: &str, id: &str) -> String {
    let json = serde_json::json!({"v": order_value, "id": id});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
}

fn decode_cursor(raw: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(raw.trim_end_matches('=')).ok()?;
    let json: Json = serde_json::from_slice(&bytes).ok()?;
    let v = json.get("v")?.as_str()?.to_owned();
    let id = json.get("id")?.as_str()?.to_owned();
    Some((v, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = encode_cursor("2026-01-01T00:00:00.000Z", "abc");
        assert_eq!(decode_cursor(&c), Some(("2026-01-01T00:00:00.000Z".into(), "abc".into())));
        assert_eq!(decode_cursor("%%%"), None);
        let empty_obj = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("{}");
        assert_eq!(decode_cursor(&empty_obj), None);
    }

    #[test]
    fn unknown_keys_and_types_are_reported_with_paths() {
        let v = serde_json::json!({"slug": 3, "extra": true});
        let mut issues = Issues::default();
        let obj = Obj::new(&mut issues, "", &v, &["slug", "label"]).unwrap();
        assert_eq!(obj.string(&mut issues, "slug", true, 1, 10), None);
        assert_eq!(obj.string(&mut issues, "label", true, 1, 10), None);
        let err = issues.finish().unwrap_err();
        let paths: Vec<String> = err.details.unwrap()["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(paths, ["extra", "slug", "label"]);
    }
}
