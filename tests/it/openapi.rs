//! Drift checks for the committed `openapi.json`: routes, error codes, auth rules, enums and
//! limits must match the code, and every `$ref` must resolve.

use std::collections::{BTreeMap, BTreeSet};

use media_usage_worker::api::error::CODES;
use media_usage_worker::api::input::MAX_CURSOR_LEN;
use media_usage_worker::api::routes::{access, Access, Route, ROUTES};
use media_usage_worker::api::{Request, OPENAPI_JSON};
use media_usage_worker::model::auth::{Role, Scope};
use media_usage_worker::model::field::{FieldType, MAX_FIELDS, MAX_SUB_FIELDS, SYSTEM_COLUMNS};
use media_usage_worker::tick::lanes;
use serde_json::Value as Json;

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

fn doc() -> Json {
    serde_json::from_str(OPENAPI_JSON).expect("openapi.json is valid JSON")
}

/// Follows `$ref`s (local JSON pointers) until a non-reference value.
fn deref<'a>(doc: &'a Json, mut v: &'a Json) -> &'a Json {
    while let Some(r) = v.get("$ref").and_then(Json::as_str) {
        v = r.strip_prefix('#').and_then(|p| doc.pointer(p)).unwrap_or_else(|| panic!("unresolved $ref {r}"));
    }
    v
}

/// Every operation in the document: (METHOD, path, operation object).
fn operations(doc: &Json) -> Vec<(String, String, &Json)> {
    let paths = doc["paths"].as_object().expect("`paths` is an object");
    let mut out = Vec::new();
    for (path, item) in paths {
        let item = item.as_object().expect("path item is an object");
        for (method, op) in item {
            if METHODS.contains(&method.as_str()) {
                out.push((method.to_uppercase(), path.clone(), op));
            }
        }
    }
    out
}

/// The document's operation for a route.
fn operation<'a>(doc: &'a Json, route: &Route) -> &'a Json {
    let op = &doc["paths"][route.path][route.method.to_lowercase()];
    assert!(op.is_object(), "openapi.json lacks {} {}", route.method, route.path);
    op
}

fn request(route: &Route, query: &[(&str, &str)]) -> Request {
    Request {
        method: route.method.to_owned(),
        path: route.path.to_owned(),
        query: query.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        ..Request::default()
    }
}

fn strings(v: &Json) -> BTreeSet<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected an array, got {v}"))
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect()
}

#[test]
fn the_document_is_openapi_3_1() {
    let doc = doc();
    let version = doc["openapi"].as_str().unwrap_or_default();
    assert!(version.starts_with("3.1"), "openapi is {version:?}");
    assert_eq!(doc["info"]["title"], "media-usage-worker");
    assert_eq!(doc["components"]["securitySchemes"]["bearerAuth"]["scheme"], "bearer");
    assert_eq!(doc["security"], serde_json::json!([{"bearerAuth": []}]));
}

#[test]
fn documented_routes_equal_the_route_table() {
    let doc = doc();
    let documented: BTreeSet<(String, String)> = operations(&doc).into_iter().map(|(m, p, _)| (m, p)).collect();
    let served: BTreeSet<(String, String)> = ROUTES.iter().map(|r| (r.method.to_owned(), r.path.to_owned())).collect();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(
        undocumented.is_empty() && unserved.is_empty(),
        "openapi.json and routes::ROUTES differ.\n  served but not documented: {undocumented:?}\n  \
         documented but not served: {unserved:?}"
    );
}

#[test]
fn path_parameters_match_the_templates() {
    let doc = doc();
    for (method, path, op) in operations(&doc) {
        // A parameter may fill a whole segment or part of one (`/sitemap-{collection}.xml`).
        let in_template: BTreeSet<String> =
            path.split('/').filter_map(|s| Some(s.split_once('{')?.1.split_once('}')?.0)).map(str::to_owned).collect();
        let declared: BTreeSet<String> = op["parameters"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| deref(&doc, p))
            .filter(|p| p["in"] == "path")
            .inspect(|p| assert_eq!(p["required"], true, "{method} {path}: {p}"))
            .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(in_template, declared, "{method} {path}: path parameters");
    }
}

#[test]
fn error_code_enum_equals_the_codes() {
    let doc = doc();
    let documented = strings(&doc["components"]["schemas"]["ErrorCode"]["enum"]);
    let declared: BTreeSet<String> = CODES.iter().map(|c| (*c).to_owned()).collect();
    assert_eq!(
        documented.len(),
        doc["components"]["schemas"]["ErrorCode"]["enum"].as_array().map_or(0, Vec::len),
        "ErrorCode.enum has duplicates"
    );
    assert_eq!(
        documented,
        declared,
        "ErrorCode.enum vs api::error::CODES.\n  only in openapi.json: {:?}\n  only in CODES: {:?}",
        documented.difference(&declared).collect::<Vec<_>>(),
        declared.difference(&documented).collect::<Vec<_>>()
    );
    let error = deref(&doc, &doc["components"]["schemas"]["ErrorResponse"]);
    assert_eq!(error["properties"]["error"]["properties"]["code"]["$ref"], "#/components/schemas/ErrorCode");
}

#[test]
fn operations_have_unique_ids_and_document_their_auth() {
    let doc = doc();
    let mut ids = BTreeMap::new();
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
        if let Some(other) = ids.insert(id.to_owned(), format!("{method} {path}")) {
            panic!("operationId {id} is used by {other} and {method} {path}");
        }
        assert!(
            op["responses"].as_object().is_some_and(|r| r.keys().any(|k| k.starts_with('2'))),
            "{method} {path} documents no success response"
        );
    }
    for route in ROUTES {
        let op = operation(&doc, route);
        let name = format!("{} {}", route.method, route.path);
        let responses = &op["responses"];
        match access(route.op, &request(route, &[])) {
            Access::Public => {
                assert_eq!(op["security"], serde_json::json!([]), "{name} is public: it must declare `security: []`");
            }
            Access::Need(..) => {
                assert!(op.get("security").is_none(), "{name} needs a token: it must not override the global security");
                for status in ["401", "403"] {
                    assert!(responses.get(status).is_some(), "{name} needs a token but does not document {status}");
                }
            }
        }
    }
}

/// `x-emdash-access` is `"public"` or `{role, scope, when?: {<parameter>: {role, scope}}}`, where
/// the parameter is a boolean query flag (the rule when it is on) or a query parameter with an
/// enum (the rule when it is given, whatever its value).
fn documented_access(name: &str, v: &Json) -> Access {
    if v == "public" {
        return Access::Public;
    }
    let role =
        v["role"].as_str().and_then(Role::parse).unwrap_or_else(|| panic!("{name}: bad x-emdash-access role in {v}"));
    let scope = v["scope"]
        .as_str()
        .and_then(Scope::parse)
        .unwrap_or_else(|| panic!("{name}: bad x-emdash-access scope in {v}"));
    Access::Need(role, scope)
}

#[test]
fn documented_access_rules_match_the_route_table() {
    let doc = doc();
    for route in ROUTES {
        let op = operation(&doc, route);
        let name = format!("{} {}", route.method, route.path);
        let rule = &op["x-emdash-access"];
        let base = documented_access(&name, rule);
        assert_eq!(base, access(route.op, &request(route, &[])), "{name}: x-emdash-access");
        let when = rule["when"].as_object().cloned().unwrap_or_default();
        // Each boolean flag turned on, and each value of each enum parameter.
        let given: Vec<(String, Vec<String>)> = op["parameters"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| deref(&doc, p))
            .filter(|p| p["in"] == "query")
            .filter_map(|p| {
                let values: Vec<String> = if p["schema"]["type"] == "boolean" {
                    vec!["true".into(), "1".into()]
                } else {
                    strings(p["schema"].get("enum")?).into_iter().collect()
                };
                Some((p["name"].as_str().unwrap_or_default().to_owned(), values))
            })
            .collect();
        for flag in when.keys() {
            assert!(
                given.iter().any(|(p, _)| p == flag),
                "{name}: x-emdash-access names `{flag}`, which is not a boolean or enum query parameter"
            );
        }
        for (param, values) in &given {
            let want = when.get(param).map_or(base, |r| documented_access(&name, r));
            for value in values {
                assert_eq!(
                    want,
                    access(route.op, &request(route, &[(param, value)])),
                    "{name}?{param}={value}: x-emdash-access"
                );
            }
        }
        if let Access::Need(role, scope) = base {
            let description = op["description"].as_str().unwrap_or_default();
            for needle in [role.name(), scope.name()] {
                assert!(
                    description.contains(&format!("`{needle}`")),
                    "{name}: the description does not mention `{needle}`"
                );
            }
        }
    }
}

fn check_refs(doc: &Json, v: &Json, at: &str, bad: &mut Vec<String>) {
    match v {
        Json::Object(map) => {
            if let Some(r) = map.get("$ref") {
                let target = r.as_str().filter(|r| r.starts_with("#/components/")).and_then(|r| doc.pointer(&r[1..]));
                if target.is_none() {
                    bad.push(format!("{at}: {r}"));
                }
            }
            for (k, child) in map {
                check_refs(doc, child, &format!("{at}/{k}"), bad);
            }
        }
        Json::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                check_refs(doc, child, &format!("{at}/{i}"), bad);
            }
        }
        _ => {}
    }
}

#[test]
fn every_ref_resolves_to_a_component() {
    let doc = doc();
    let mut bad = Vec::new();
    check_refs(&doc, &doc, "", &mut bad);
    assert!(bad.is_empty(), "unresolved $refs:\n  {}", bad.join("\n  "));
    let schemas = &doc["components"]["schemas"];
    for name in [
        "Collection",
        "Field",
        "ContentItem",
        "Media",
        "TokenCreated",
        "SelfCheckReport",
        "ValidationIssue",
        "ErrorResponse",
        "ErrorCode",
    ] {
        assert!(schemas.get(name).is_some(), "missing component {name}");
    }
}

#[test]
fn enums_and_limits_match_the_model() {
    let doc = doc();
    let s = &doc["components"]["schemas"];
    let names = |it: &mut dyn Iterator<Item = &'static str>| -> BTreeSet<String> { it.map(str::to_owned).collect() };
    assert_eq!(strings(&s["FieldType"]["enum"]), names(&mut FieldType::ALL.iter().map(|t| t.as_str())));
    assert_eq!(
        strings(&s["SubFieldType"]["enum"]),
        names(&mut FieldType::ALL.iter().filter(|t| t.allowed_in_repeater()).map(|t| t.as_str()))
    );
    assert_eq!(strings(&s["Role"]["enum"]), names(&mut Role::ALL.iter().map(|r| r.name())));
    assert_eq!(strings(&s["Scope"]["enum"]), names(&mut Scope::ALL.iter().map(|r| r.name())));
    assert_eq!(
        strings(&s["FieldInput"]["properties"]["slug"]["not"]["enum"]),
        names(&mut SYSTEM_COLUMNS.iter().copied()),
        "reserved field slugs"
    );
    assert_eq!(s["CreateCollectionBody"]["properties"]["fields"]["maxItems"], MAX_FIELDS);
    assert_eq!(s["FieldInput"]["properties"]["subFields"]["maxItems"], MAX_SUB_FIELDS);
    let cursor = &doc["components"]["parameters"]["Cursor"]["schema"];
    assert_eq!(cursor["maxLength"], MAX_CURSOR_LEN);
    let limit = &doc["components"]["parameters"]["Limit"]["schema"];
    assert_eq!(
        (&limit["minimum"], &limit["maximum"], &limit["default"]),
        (&Json::from(1), &Json::from(100), &Json::from(50))
    );
}

#[test]
fn every_tick_log_counter_of_every_lane_is_documented() {
    let doc = doc();
    let props = doc["components"]["schemas"]["TickDetails"]["properties"].as_object().expect("TickDetails properties");
    let counters: BTreeSet<&str> = lanes::COUNTERS.iter().copied().flatten().map(|c| c.name).collect();
    for name in &counters {
        assert_eq!(props.get(*name).map(|p| &p["type"]), Some(&Json::from("integer")), "TickDetails.{name}");
    }
    let rest: BTreeSet<&str> = props.keys().map(String::as_str).filter(|k| !counters.contains(k)).collect();
    let tick_keys = BTreeSet::from(["continued", "d1", "dailyBudgetSpent", "error"]);
    assert_eq!(rest, tick_keys, "TickDetails names no counter a lane lacks");
}
