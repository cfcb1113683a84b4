//! API errors: HTTP status, stable machine code, public message, optional details. The cause of
//! a 500 is kept for the log and never serialized.

use serde_json::{json, Value as Json};

use crate::exec;

/// Every error code this API can answer with (kept in step with `openapi.json` by a test).
pub const CODES: &[&str] = &[
    "VALIDATION_ERROR",
    "INVALID_JSON",
    "INVALID_CURSOR",
    "PAYLOAD_TOO_LARGE",
    "UNAUTHORIZED",
    "FORBIDDEN",
    "INSUFFICIENT_SCOPE",
    "NOT_FOUND",
    "METHOD_NOT_ALLOWED",
    "COLLECTION_NOT_FOUND",
    "COLLECTION_EXISTS",
    "COLLECTION_HAS_CONTENT",
    "CONFLICT",
    "MEDIA_USAGE_CAPTURE_INACTIVE",
    "MEDIA_IN_USE",
    "MEDIA_USAGE_COVERAGE_INCOMPLETE",
    "WORK_LEASE_ACTIVE",
    "WORK_CHANGED",
    "INVALID_TYPE",
    "MEDIA_STORAGE_UNAVAILABLE",
    "FIELD_TYPE_COLUMN_CHANGE",
    "INTERNAL_ERROR",
];

/// One problem with the input, located by a path such as `fields[2].slug`.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    pub details: Option<Json>,
    /// What went wrong inside, for the log only.
    pub cause: Option<String>,
    /// The `Allow` header of a 405: the methods the path serves.
    pub allow: Option<Box<str>>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        debug_assert!(CODES.contains(&code), "undeclared error code {code}");
        ApiError { status, code, message: message.into(), details: None, cause: None, allow: None }
    }

    pub fn with_details(mut self, details: Json) -> Self {
        self.details = Some(details);
        self
    }

    pub fn validation(issues: Vec<Issue>) -> Self {
        let list: Vec<Json> = issues.iter().map(|i| json!({"path": i.path, "message": i.message})).collect();
        let summary = issues.first().map_or_else(
            || "Invalid request".to_owned(),
            |i| {
                if i.path.is_empty() {
                    i.message.clone()
                } else {
                    format!("{}: {}", i.path, i.message)
                }
            },
        );
        ApiError::new(400, "VALIDATION_ERROR", summary).with_details(json!({ "issues": list }))
    }

    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation(vec![Issue { path: path.into(), message: message.into() }])
    }

    pub fn invalid_json(message: impl Into<String>) -> Self {
        ApiError::new(400, "INVALID_JSON", message)
    }

    pub fn invalid_cursor() -> Self {
        ApiError::new(400, "INVALID_CURSOR", "Invalid cursor")
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(404, "NOT_FOUND", message)
    }

    pub fn collection_not_found(slug: &str) -> Self {
        ApiError::new(404, "COLLECTION_NOT_FOUND", format!("Collection '{slug}' not found"))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(409, "CONFLICT", message)
    }

    /// An unexpected failure: opaque to the client, the cause goes to the log.
    pub fn internal(cause: impl Into<String>) -> Self {
        ApiError {
            status: 500,
            code: "INTERNAL_ERROR",
            message: "Internal error".into(),
            details: None,
            cause: Some(cause.into()),
            allow: None,
        }
    }

    /// The envelope body.
    pub fn body(&self) -> Json {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.details {
            error["details"] = d.clone();
        }
        json!({"success": false, "error": error})
    }
}

impl From<exec::Error> for ApiError {
    fn from(e: exec::Error) -> Self {
        match e {
            // The capture trigger refused a content write: the collection is not actively
            // indexed (for example while it is being deleted).
            exec::Error::CaptureInactive => ApiError::new(
                409,
                "MEDIA_USAGE_CAPTURE_INACTIVE",
                "Content writes to this collection are fenced: its media usage capture is not active",
            ),
            exec::Error::TooBig(_) => ApiError::new(
                413,
                "PAYLOAD_TOO_LARGE",
                "The change would make the entry larger than the database's 2,000,000-byte row limit",
            ),
            // A content table dropped by a collection deletion while this request ran. Any other
            // missing table (`media`, the registry, …) is a broken database: an internal error.
            e if e.is_missing_content_table() => {
                ApiError::new(404, "COLLECTION_NOT_FOUND", "The collection no longer exists")
            }
            other => ApiError::internal(other.to_string()),
        }
    }
}
