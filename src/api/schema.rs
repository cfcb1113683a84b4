//! `/schema/collections/**`: the content model.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{json_body, query_flag, Issues, Obj};
use super::{Ctx, Reply, Request};
use crate::exec::Executor;
use crate::ids;
use crate::lifecycle::deletion::front::{self, RequestOutcome};
use crate::lifecycle::fields::{DeleteOutcome as FieldDeleteOutcome, UpdateOutcome as FieldUpdateOutcome};
use crate::lifecycle::{self, AddFieldError, CreateError};
use crate::model::collection::Collection;
use crate::model::field::{Field, FieldMeta, FieldType, SubField, MAX_FIELDS, MAX_SUB_FIELDS, SYSTEM_COLUMNS};
use crate::model::ident::{Ident, MAX_FIELD_SLUG};
use crate::repo::schema::{self as repo, NewCollection};

/// Parses a collection slug from a path parameter (400 when malformed).
pub fn parse_slug(raw: &str, path: &str) -> Result<Ident, ApiError> {
    Ident::parse(raw).map_err(|e| ApiError::invalid(path, format!("Invalid collection slug: {e}")))
}

/// Loads a collection by its path parameter: 400 when malformed, 404 when unknown.
pub async fn load<E: Executor>(ctx: &Ctx<'_, E>, raw: &str, path: &str) -> Result<Collection, ApiError> {
    let slug = parse_slug(raw, path)?;
    repo::find(ctx.exec, &slug).await?.ok_or_else(|| ApiError::collection_not_found(slug.as_str()))
}

/// A stored JSON object (a field's validation or options), or null.
fn json_object(raw: Option<&str>) -> Json {
    raw.and_then(|r| serde_json::from_str::<Json>(r).ok()).filter(Json::is_object).unwrap_or(Json::Null)
}

/// A field as EmDash's schema API shows it (its `Field`), with `subFields` on repeaters. What
/// this service does not keep reads as EmDash's defaults (`unique: false`, `defaultValue: null`,
/// `widget: null`, `searchable: false`, `translatable: true`).
pub fn field_json(collection_id: &str, f: &Field) -> Json {
    let validation = f.meta.validation.clone().or_else(|| f.validation_json());
    let created = f.meta.created_at.clone().unwrap_or_default();
    let mut v = json!({
        "id": f.id,
        "collectionId": collection_id,
        "slug": f.slug.as_str(),
        "label": f.label,
        "type": f.field_type.as_str(),
        "required": f.required,
        "unique": false,
        "defaultValue": null,
        "validation": json_object(validation.as_deref()),
        "widget": null,
        "options": json_object(f.meta.options.as_deref()),
        "sortOrder": f.sort_order,
        "searchable": false,
        "translatable": true,
        "createdAt": created,
        "updatedAt": f.meta.updated_at.clone().unwrap_or(created),
    });
    if f.field_type == FieldType::Repeater {
        v["subFields"] =
            f.sub_fields.iter().map(|s| json!({"slug": s.slug.as_str(), "type": s.field_type.as_str()})).collect();
    }
    v
}

pub fn collection_json(c: &Collection) -> Json {
    json!({
        "id": c.id,
        "slug": c.slug.as_str(),
        "label": c.label,
        // EmDash's collection attributes this service does not keep: as EmDash answers for a
        // collection created without them.
        "labelSingular": Json::Null,
        "description": Json::Null,
        "icon": Json::Null,
        "supports": ["drafts", "revisions"],
        "source": Json::Null,
        "urlPattern": Json::Null,
        "hasSeo": false,
        "fields": c.fields.iter().map(|f| field_json(&c.id, f)).collect::<Vec<_>>(),
        "createdAt": c.created_at,
        "updatedAt": c.updated_at,
    })
}

pub async fn list<E: Executor>(ctx: &Ctx<'_, E>) -> Result<Reply, ApiError> {
    let all = repo::load(ctx.exec, None).await?;
    Ok((200, json!({"items": all.iter().map(collection_json).collect::<Vec<_>>()})))
}

pub async fn get<E: Executor>(ctx: &Ctx<'_, E>, slug: &str) -> Result<Reply, ApiError> {
    let c = load(ctx, slug, "slug").await?;
    Ok((200, json!({"item": collection_json(&c)})))
}

/// Reads a repeater's sub-field definitions at `path`.
fn parse_sub_fields(issues: &mut Issues, path: &str, subs: &[Json]) -> Vec<SubField> {
    let mut sub_fields: Vec<SubField> = Vec::new();
    if subs.len() > MAX_SUB_FIELDS {
        issues.add(path, format!("At most {MAX_SUB_FIELDS} sub-fields"));
    }
    for (i, sub) in subs.iter().enumerate() {
        let sub_path = format!("{path}[{i}]");
        let Some(so) = Obj::new(issues, &sub_path, sub, &["slug", "type", "label"]) else {
            continue;
        };
        so.string(issues, "label", false, 1, 200);
        let s_slug = so.string(issues, "slug", true, 1, MAX_FIELD_SLUG).and_then(|s| {
            match Ident::parse_max(&s, MAX_FIELD_SLUG) {
                Ok(i) => Some(i),
                Err(e) => {
                    issues.add(so.path("slug"), format!("Invalid sub-field slug: {e}"));
                    None
                }
            }
        });
        let s_type = so.string(issues, "type", true, 1, 32).and_then(|t| match FieldType::parse(&t) {
            Some(ft) if ft.allowed_in_repeater() => Some(ft),
            _ => {
                issues.add(so.path("type"), format!("Type '{t}' is not allowed in a repeater"));
                None
            }
        });
        if let (Some(slug), Some(field_type)) = (s_slug, s_type) {
            if sub_fields.iter().any(|s| s.slug == slug) {
                issues.add(so.path("slug"), "Duplicate sub-field slug");
            } else {
                sub_fields.push(SubField { slug, field_type });
            }
        }
    }
    sub_fields
}

/// Reads one field definition at `path`.
fn parse_field(issues: &mut Issues, path: &str, value: &Json, sort_order: i64) -> Option<Field> {
    let obj = Obj::new(issues, path, value, &["slug", "type", "label", "required", "subFields"])?;
    let slug =
        obj.string(issues, "slug", true, 1, MAX_FIELD_SLUG).and_then(|s| match Ident::parse_max(&s, MAX_FIELD_SLUG) {
            Ok(i) if SYSTEM_COLUMNS.contains(&i.as_str()) => {
                issues.add(obj.path("slug"), format!("'{s}' is a reserved column name"));
                None
            }
            Ok(i) => Some(i),
            Err(e) => {
                issues.add(obj.path("slug"), format!("Invalid field slug: {e}"));
                None
            }
        });
    let field_type = obj.string(issues, "type", true, 1, 32).and_then(|t| {
        let parsed = FieldType::parse(&t);
        if parsed.is_none() {
            issues.add(obj.path("type"), format!("Unknown field type '{t}'"));
        }
        parsed
    });
    let label = obj.string(issues, "label", false, 1, 200);
    let required = obj.boolean(issues, "required").unwrap_or(false);
    let mut sub_fields = Vec::new();
    if let Some(subs) = obj.array(issues, "subFields", false) {
        if field_type.is_some_and(|t| t != FieldType::Repeater) {
            issues.add(obj.path("subFields"), "Only repeater fields have sub-fields");
        }
        sub_fields = parse_sub_fields(issues, &obj.path("subFields"), subs);
    }
    let (slug, field_type) = (slug?, field_type?);
    Some(Field {
        id: ids::new_id(),
        label: label.unwrap_or_else(|| slug.as_str().to_owned()),
        slug,
        field_type,
        required,
        sub_fields,
        sort_order,
        meta: FieldMeta::default(),
    })
}

pub async fn create<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let obj = Obj::new(&mut issues, "", &body, &["slug", "label", "fields"]);
    let Some(obj) = obj else {
        return Err(issues.finish().unwrap_err());
    };
    let slug = obj.string(&mut issues, "slug", true, 1, 63).and_then(|s| match Ident::parse(&s) {
        Ok(i) => Some(i),
        Err(e) => {
            issues.add("slug", format!("Invalid collection slug: {e}"));
            None
        }
    });
    let label = obj.string(&mut issues, "label", true, 1, 200);
    let mut fields: Vec<Field> = Vec::new();
    if let Some(list) = obj.array(&mut issues, "fields", false) {
        if list.len() > MAX_FIELDS {
            issues.add("fields", format!("At most {MAX_FIELDS} fields"));
        }
        for (i, v) in list.iter().enumerate() {
            let path = format!("fields[{i}]");
            if let Some(f) = parse_field(&mut issues, &path, v, i as i64) {
                if fields.iter().any(|g| g.slug == f.slug) {
                    issues.add(format!("{path}.slug"), "Duplicate field slug");
                } else {
                    fields.push(f);
                }
            }
        }
    }
    let (slug, label) = issues.finish_with(slug.zip(label))?;
    let new = NewCollection { slug, label, fields };
    match lifecycle::create(ctx.exec, &new, ctx.config.background.projection.rules.id()).await {
        Ok(c) => Ok((201, json!({"item": collection_json(&c)}))),
        Err(CreateError::Exists) => Err(match crate::repo::deletion::target(ctx.exec, &new.slug).await?.tombstone {
            // Say why when it is a deletion in progress: the slug frees itself once it ends.
            Some(t) => ApiError::new(
                409,
                "COLLECTION_EXISTS",
                format!(
                    "Collection '{}' is being deleted; its slug is free again once the deletion finishes",
                    new.slug
                ),
            )
            .with_details(
                json!({"deletion": {"collectionId": t.row.collection_id, "phase": t.row.phase, "state": t.row.lease.state}}),
            ),
            None => ApiError::new(409, "COLLECTION_EXISTS", format!("Collection '{}' already exists", new.slug)),
        }),
        Err(CreateError::Db(e)) => Err(e.into()),
    }
}

pub async fn add_field<E: Executor>(ctx: &Ctx<'_, E>, slug: &str, req: &Request) -> Result<Reply, ApiError> {
    let c = load(ctx, slug, "slug").await?;
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let field = parse_field(&mut issues, "", &body, c.fields.iter().map(|f| f.sort_order + 1).max().unwrap_or(0));
    if c.fields.len() >= MAX_FIELDS {
        issues.add("", format!("A collection has at most {MAX_FIELDS} fields"));
    }
    let field = issues.finish_with(field)?;
    if c.field(field.slug.as_str()).is_some() {
        return Err(ApiError::conflict(format!("Field '{}' already exists", field.slug)));
    }
    match lifecycle::add_field(ctx.exec, &c, &field).await {
        // Answered as stored (its creation time is the database's).
        Ok(()) => {
            let stored = repo::find(ctx.exec, &c.slug).await?.filter(|now| now.id == c.id);
            let item = match stored.as_ref().and_then(|now| now.field(field.slug.as_str())) {
                Some(f) => field_json(&c.id, f),
                None => field_json(&c.id, &field),
            };
            Ok((201, json!({"item": item})))
        }
        // A concurrent add may have taken the last free field: say so rather than "retry".
        Err(AddFieldError::Conflict) => match load(ctx, slug, "slug").await {
            Ok(now) if now.fields.len() >= MAX_FIELDS => {
                let mut issues = Issues::default();
                issues.add("", format!("A collection has at most {MAX_FIELDS} fields"));
                Err(issues.finish().unwrap_err())
            }
            _ => Err(ApiError::conflict("The collection changed; retry")),
        },
        Err(AddFieldError::Db(e)) => Err(e.into()),
    }
}

/// `DELETE /schema/collections/{slug}[?force=true]`: runs the deletion's front phases (fence,
/// registry, table) and leaves the cleanup to cron ticks. Repeating it once the front phases
/// are done changes nothing and answers 200.
pub async fn delete<E: Executor>(ctx: &Ctx<'_, E>, raw: &str, req: &Request) -> Result<Reply, ApiError> {
    let slug = parse_slug(raw, "slug")?;
    let force = query_flag(req, "force");
    match front::request(ctx.exec, &slug, force, ctx.config.background.cleanup).await? {
        RequestOutcome::Deleted { collection_id } => {
            Ok((200, json!({"deleted": true, "slug": slug.as_str(), "collectionId": collection_id})))
        }
        RequestOutcome::NotFound => Err(ApiError::collection_not_found(slug.as_str())),
        RequestOutcome::HasContent => Err(ApiError::new(
            400,
            "COLLECTION_HAS_CONTENT",
            format!("Collection '{slug}' has entries that are not in the trash; trash them or pass force=true"),
        )),
        RequestOutcome::InProgress { tombstone: t, lease_live } => Err(ApiError::conflict(if lease_live {
            format!("Collection '{slug}' is being deleted by another request (phase {})", t.phase)
        } else {
            format!(
                "The deletion of collection '{slug}' is waiting ({}, phase {}); see the collection-deletions list",
                t.lease.state, t.phase
            )
        })
        .with_details(json!({
            "collectionId": t.collection_id,
            "phase": t.phase,
            "state": t.lease.state,
            "nextAttemptAt": t.lease.next_attempt_at,
            "leaseExpiresAt": t.lease.lease_expires_at,
        }))),
        RequestOutcome::IdentityConflict => Err(ApiError::conflict(format!(
            "A collection registered as '{slug}' is not the one whose deletion is in progress"
        ))),
        RequestOutcome::CaptureInactive => Err(ApiError::new(
            409,
            "MEDIA_USAGE_CAPTURE_INACTIVE",
            format!("Collection '{slug}' is not actively indexed, so its writes cannot be fenced for deletion"),
        )),
        RequestOutcome::Interrupted { phase } => Err(ApiError::conflict(format!(
            "The deletion of collection '{slug}' lost its lease at phase {phase}; the cron tick resumes it"
        ))
        .with_details(json!({"phase": phase}))),
    }
}

/// Parses a field slug from a path parameter (400 when malformed).
fn parse_field_slug(raw: &str) -> Result<Ident, ApiError> {
    Ident::parse_max(raw, MAX_FIELD_SLUG).map_err(|e| ApiError::invalid("field", format!("Invalid field slug: {e}")))
}

fn field_not_found(collection: &Collection, field: &Ident) -> ApiError {
    ApiError::not_found(format!("Field '{field}' not found in collection '{}'", collection.slug))
}

fn capture_inactive(collection: &Collection) -> ApiError {
    ApiError::new(
        409,
        "MEDIA_USAGE_CAPTURE_INACTIVE",
        format!("Collection '{}' is not actively indexed, so its fields cannot be changed", collection.slug),
    )
}

/// `DELETE /schema/collections/{slug}/fields/{field}` (EmDash's route and answer,
/// `{"success": true}`): the field leaves the registry and its column is put out of reach of
/// content writes in one atomic batch; the ticks remove its occurrences from the usage index
/// (coverage reads `stale` until then) and drop the column. A retry after a first try that did
/// commit answers 200 while that deletion is under way.
pub async fn delete_field<E: Executor>(ctx: &Ctx<'_, E>, slug: &str, field: &str) -> Result<Reply, ApiError> {
    let c = load(ctx, slug, "slug").await?;
    let field = parse_field_slug(field)?;
    match lifecycle::fields::delete(ctx.exec, &c, &field, ctx.config.background.cleanup).await? {
        FieldDeleteOutcome::Deleted | FieldDeleteOutcome::AlreadyDeleted => Ok((200, json!({"success": true}))),
        FieldDeleteOutcome::NotFound => Err(field_not_found(&c, &field)),
        FieldDeleteOutcome::CaptureInactive => Err(capture_inactive(&c)),
        FieldDeleteOutcome::Conflict => Err(ApiError::conflict(format!(
            "Collection '{}' or its field '{field}' changed while the field was being deleted; retry",
            c.slug
        ))),
    }
}

/// The most bytes a field's `options` may hold (as JSON text).
pub const MAX_OPTIONS_BYTES: usize = 16 * 1024;

/// `PUT /schema/collections/{slug}/fields/{field}` with EmDash's update body, strict:
/// `{"label"?, "type"?, "required"?, "sortOrder"?, "validation"?: {"subFields"?: [...]} | null,
/// "options"?: {...}}`. A type change must keep EmDash's column type (400
/// `FIELD_TYPE_COLUMN_CHANGE` otherwise). A change that could change what counts as a use (the
/// type, a repeater's media sub-fields, the type of a title field) makes coverage `stale` and
/// has every entry projected again by the ticks; any other change needs nothing.
pub async fn update_field<E: Executor>(
    ctx: &Ctx<'_, E>,
    slug: &str,
    field: &str,
    req: &Request,
) -> Result<Reply, ApiError> {
    let c = load(ctx, slug, "slug").await?;
    let field = parse_field_slug(field)?;
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let allowed = ["label", "type", "required", "sortOrder", "validation", "options"];
    let Some(obj) = Obj::new(&mut issues, "", &body, &allowed) else {
        return Err(issues.finish().unwrap_err());
    };
    let label = obj.string(&mut issues, "label", false, 1, 200);
    let field_type = obj.string(&mut issues, "type", false, 1, 32).and_then(|t| {
        let parsed = FieldType::parse(&t);
        if parsed.is_none() {
            issues.add("type", format!("Unknown field type '{t}'"));
        }
        parsed
    });
    let required = obj.boolean(&mut issues, "required");
    let sort_order = obj.integer(&mut issues, "sortOrder", 0, i64::from(i32::MAX));
    // `validation`: absent keeps it, null clears it, an object sets it (only `subFields`).
    let validation: Option<Option<Vec<SubField>>> = match obj.raw("validation") {
        None => None,
        Some(Json::Null) => Some(None),
        Some(v) => Obj::new(&mut issues, "validation", v, &["subFields"]).map(|vo| {
            Some(match vo.array(&mut issues, "subFields", false) {
                Some(subs) => parse_sub_fields(&mut issues, "validation.subFields", subs),
                None => Vec::new(),
            })
        }),
    };
    let options = obj.object(&mut issues, "options").map(|o| Json::Object(o.clone()).to_string());
    if obj.raw("options").is_some_and(Json::is_null) {
        issues.add("options", "Expected an object");
    }
    if options.as_ref().is_some_and(|o| o.len() > MAX_OPTIONS_BYTES) {
        issues.add("options", format!("At most {MAX_OPTIONS_BYTES} bytes of JSON"));
    }
    issues.finish()?;
    let read = c.field(field.as_str()).cloned().ok_or_else(|| field_not_found(&c, &field))?;
    let new_type = field_type.unwrap_or(read.field_type);
    if new_type.emdash_column_type() != read.field_type.emdash_column_type() {
        return Err(ApiError::new(
            400,
            "FIELD_TYPE_COLUMN_CHANGE",
            format!(
                "Cannot change field '{field}' from type '{}' to '{}': its column type would change from {} to {}; \
                 delete the field and add it again instead",
                read.field_type.as_str(),
                new_type.as_str(),
                read.field_type.emdash_column_type(),
                new_type.emdash_column_type()
            ),
        )
        .with_details(json!({
            "from": read.field_type.as_str(),
            "to": new_type.as_str(),
            "fromColumnType": read.field_type.emdash_column_type(),
            "toColumnType": new_type.emdash_column_type(),
        })));
    }
    let mut updated = read.clone();
    updated.field_type = new_type;
    if let Some(l) = label {
        updated.label = l;
    }
    if let Some(r) = required {
        updated.required = r;
    }
    if let Some(o) = sort_order {
        updated.sort_order = o;
    }
    if options.is_some() {
        updated.meta.options = options;
    }
    match validation {
        Some(subs) => {
            let subs = subs.unwrap_or_default();
            if new_type != FieldType::Repeater && !subs.is_empty() {
                let mut issues = Issues::default();
                issues.add("validation.subFields", "Only repeater fields have sub-fields");
                return Err(issues.finish().unwrap_err());
            }
            updated.sub_fields = subs;
            updated.meta.validation = updated.validation_json();
        }
        // A repeater keeps its sub-fields; a field that stops being one loses them.
        None if new_type != FieldType::Repeater && read.field_type == FieldType::Repeater => {
            updated.sub_fields = Vec::new();
            updated.meta.validation = None;
        }
        None if new_type == FieldType::Repeater && read.field_type != FieldType::Repeater => {
            updated.meta.validation = updated.validation_json();
        }
        None => {}
    }
    match lifecycle::fields::update(ctx.exec, &c, &read, &updated).await? {
        FieldUpdateOutcome::Updated { .. } => {
            let stored = repo::find(ctx.exec, &c.slug).await?.filter(|now| now.id == c.id);
            let item = match stored.as_ref().and_then(|now| now.field(field.as_str())) {
                Some(f) => field_json(&c.id, f),
                None => return Err(field_not_found(&c, &field)),
            };
            Ok((200, json!({"item": item})))
        }
        FieldUpdateOutcome::CaptureInactive => Err(capture_inactive(&c)),
        FieldUpdateOutcome::Conflict => Err(ApiError::conflict(format!(
            "Collection '{}' or its field '{field}' changed while the field was being updated; reload and retry",
            c.slug
        ))),
    }
}
