//! An entry's publication: what publishing writes (its draft revision's values as the live
//! columns, and the slug the draft stages), decided the same way for the publish request and the
//! tick's scheduled publish, with the draft admitted first (a publish is a content write: what one
//! projection job could not index is refused before anything is written).

use serde_json::Value as Json;

use crate::exec::{Error, Executor, Row};
use crate::model::collection::Collection;
use crate::repo::content::{self as repo, Publication};
use crate::repo::encode::to_column;
use crate::usage::admission;
use crate::usage::project::Policy;

/// Why an entry cannot be published as it stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The live row was written after the draft was saved: publishing the draft would undo that
    /// write (save the draft again to rebase it).
    StaleDraft,
    /// The draft revision the entry points at is missing, another entry's, or not an object.
    MissingDraft,
    /// One projection job could not index the draft.
    Admission(admission::Refusal),
    /// Draft values that no longer fit the collection's fields: `(path, message)` each.
    Invalid(Vec<(String, String)>),
}

impl Refusal {
    /// The refusal in words.
    pub fn message(&self) -> String {
        match self {
            Refusal::StaleDraft => {
                "The entry changed after its draft was saved; save the draft again to rebase it on the live entry"
                    .to_owned()
            }
            Refusal::MissingDraft => "The entry's draft revision is missing or invalid".to_owned(),
            Refusal::Admission(refusal) => refusal.message(),
            Refusal::Invalid(issues) => {
                let each: Vec<String> = issues.iter().map(|(path, msg)| format!("{path}: {msg}")).collect();
                format!("The draft's values no longer fit the collection's fields ({})", each.join("; "))
            }
        }
    }
}

/// The version of a content row.
pub fn row_version(row: &Row) -> i64 {
    row.get("version").and_then(Json::as_i64).unwrap_or_default()
}

/// What publishing `row` (an entry of `c`) writes: without a draft revision, nothing beyond the
/// status; with one, its values as live columns and its staged `_slug`, once the draft is found
/// current, valid and admitted under `policy`.
pub async fn prepare<E: Executor>(
    exec: &E,
    c: &Collection,
    row: &Row,
    policy: &Policy,
) -> Result<Result<Publication, Refusal>, Error> {
    let Some(rev_id) = row.get("draft_revision_id").and_then(Json::as_str) else {
        return Ok(Ok(Publication::default()));
    };
    let id = row.get("id").and_then(Json::as_str).unwrap_or_default();
    let rev = repo::get_revision(exec, rev_id).await?;
    if rev.as_ref().is_some_and(|r| r.is_stale(row_version(row))) {
        return Ok(Err(Refusal::StaleDraft));
    }
    let Some(draft) = rev
        .filter(|r| r.collection == c.slug.as_str() && r.entry_id == id)
        .and_then(|r| serde_json::from_str::<Json>(&r.data).ok())
        .and_then(|v| v.as_object().cloned())
    else {
        return Ok(Err(Refusal::MissingDraft));
    };
    if let Err(refusal) = admission::admit(exec, &c.id, &c.fields, &draft, &policy.rules, policy.admission).await? {
        return Ok(Err(Refusal::Admission(refusal)));
    }
    let mut publication = Publication::default();
    let mut invalid = Vec::new();
    for (key, value) in &draft {
        if key == "_slug" {
            publication.slug = value.as_str().map(str::to_owned);
        } else if let Some(f) = c.field(key) {
            match to_column(f, value) {
                Ok(v) => publication.columns.push((f.slug.clone(), v)),
                Err(msg) => invalid.push((format!("data.{key}"), msg)),
            }
        }
    }
    Ok(if invalid.is_empty() { Ok(publication) } else { Err(Refusal::Invalid(invalid)) })
}
