//! Layering and hygiene rules that the compiler cannot check.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::files_with_extension;

fn all_rust_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = files_with_extension(&root.join("src"), "rs");
    files.extend(files_with_extension(&root.join("tests"), "rs"));
    files
}

#[test]
fn worker_is_named_only_under_src_edge() {
    for file in all_rust_files() {
        let text = fs::read_to_string(&file).unwrap().replace("media_usage_worker::", "");
        let in_edge = file.components().any(|c| c.as_os_str() == "edge");
        for needle in ["worker::", "wasm_bindgen", "js_sys", "Date::now", "SystemTime::now"] {
            if !in_edge && text.contains(needle) && !file.ends_with("tidy.rs") {
                panic!("{} names {needle} outside src/edge/", file.display());
            }
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    for file in all_rust_files() {
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("//!"), "{} lacks a leading //! doc", file.display());
    }
}

#[test]
fn no_sql_keywords_in_rust_string_literals_outside_the_repository_and_tests() {
    // SQL lives in src/sql/**.sql; Rust code outside exec/ only includes it.
    for file in all_rust_files() {
        let path = file.to_string_lossy();
        if path.contains("/tests/") || path.contains("/src/exec/") || path.contains("/src/sql.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for needle in ["\"SELECT ", "\"INSERT ", "\"UPDATE ", "\"DELETE FROM", "\"CREATE ", "\"DROP "] {
            assert!(!text.contains(needle), "{} embeds SQL ({needle})", file.display());
        }
    }
}

#[test]
fn the_source_signature_is_written_once_in_its_fragment() {
    // The load and the guarded publish compare it: a second copy could drift from the first.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let needle = "json_group_array(json_array(s.source_key";
    let holders: Vec<String> = files_with_extension(&root.join("src/sql"), "sql")
        .into_iter()
        .filter(|f| fs::read_to_string(f).unwrap().contains(needle))
        .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"))
        .collect();
    assert_eq!(holders, ["src/sql/usage/source_signature.sql"], "the source signature is written out in {holders:?}");
    let fragment = fs::read_to_string(root.join("src/sql/usage/source_signature.sql")).unwrap();
    assert_eq!(fragment.matches(needle).count(), 1, "the fragment writes the signature more than once");
}

/// `sql` without its `--` comments, its whitespace runs made single spaces.
fn sql_code(sql: &str) -> String {
    let code: Vec<&str> = sql.lines().map(|l| l.split("--").next().unwrap_or_default()).collect();
    code.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_safe_delete_rule_is_written_once_in_its_fragment() {
    // The single delete's guard, the permanent delete, the bulk trash and the purge must refuse
    // the same items: a copy of the rule in one of them could drift from the others.
    let fragment = "src/sql/media/unused_and_proven.sql";
    let files = sql_files_code();
    let holders = |found: &dyn Fn(&str) -> bool| -> Vec<String> {
        let mut found: Vec<String> = files.iter().filter(|(_, code)| found(code)).map(|(f, _)| f.clone()).collect();
        found.sort();
        found
    };
    // Its coverage predicate ...
    let coverage = "st.status IS NOT 'complete' OR st.reconciliation_required <> 0";
    let coverage_fragment = "src/sql/media/coverage_proven.sql";
    assert_eq!(holders(&|code| code.contains(coverage)), [coverage_fragment], "the coverage predicate is written out");
    assert_eq!(
        holders(&|code| code.contains("{coverage_proven}")),
        [fragment, "src/sql/versions/purge.sql"],
        "the statements that embed the coverage predicate"
    );
    // ... and any statement that reads both the uses (the relation that blocks a delete, or the
    // occurrences themselves) and the coverage rows: the rule's shape, however it is written.
    let both = |code: &str| {
        (code.contains("{blocks_delete}") || code.contains("_emdash_media_usage_current"))
            && (code.contains("_emdash_media_usage_index_status") || code.contains("{coverage_proven}"))
    };
    assert_eq!(holders(&both), [fragment], "a statement reads the occurrences and the coverage rows");
    // The four statements embed it, once each.
    let embedders = holders(&|code| code.contains("{unused_and_proven}"));
    assert_eq!(
        embedders,
        [
            "src/sql/media/bulk_trash.sql",
            "src/sql/media/delete_unused.sql",
            "src/sql/media/purge.sql",
            "src/sql/usage/guard_media_unused.sql"
        ],
        "the statements that embed the safe delete's rule"
    );
    for (file, code) in files.iter().filter(|(f, _)| embedders.contains(f)) {
        assert_eq!(code.matches("{unused_and_proven}").count(), 1, "{file} embeds the rule more than once");
    }
}

/// The product's SQL files, by path from the crate's root, each as [`sql_code`].
fn sql_files_code() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    files_with_extension(&root.join("src/sql"), "sql")
        .into_iter()
        .map(|f| {
            let code = sql_code(&fs::read_to_string(&f).unwrap());
            (f.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"), code)
        })
        .collect()
}

#[test]
fn who_uses_a_media_item_is_written_once_in_its_two_relations() {
    // What blocks a delete and what counts as a use in a summary are two relations, each written
    // once (`repo::uses`): a statement that spelled one out could drift from the others, as the
    // list's count and the item's count once did.
    let files = sql_files_code();
    let holders = |found: &dyn Fn(&str) -> bool| -> Vec<String> {
        let mut found: Vec<String> = files.iter().filter(|(_, code)| found(code)).map(|(f, _)| f.clone()).collect();
        found.sort();
        found
    };
    // The current occurrences: only the relation that blocks a delete reads them.
    assert_eq!(
        holders(&|code| code.contains("_emdash_media_usage_current")),
        ["src/sql/uses/blocks_delete.sql"],
        "a statement reads the current occurrences itself"
    );
    // The eligible occurrences: the relation that counts as a use, and "Used in"'s page, which
    // lists each occurrence of the entries in the trash too (EmDash's "Used in").
    assert_eq!(
        holders(&|code| code.contains("_emdash_media_usage_eligible")),
        ["src/sql/usage/usage_page.sql", "src/sql/uses/counts_as_use.sql"],
        "a statement reads the eligible occurrences itself"
    );
    // The entries too large to index, by the media their work rows list (the list's elements
    // read): the one arm both relations share.
    let unindexed = |code: &str| code.contains("unindexed_media") && code.contains("json_each(");
    assert_eq!(holders(&unindexed), ["src/sql/uses/unindexed.sql"], "a statement reads the unindexed media itself");
    // What embeds each.
    let embedders = |name: &str| holders(&|code| code.contains(&format!("{{{name}}}")));
    assert_eq!(
        embedders("unindexed_uses"),
        [
            "src/sql/usage/unindexed_users.sql",
            "src/sql/uses/blocks_delete.sql",
            "src/sql/uses/counts_as_use.sql",
            "src/sql/versions/purge.sql"
        ]
    );
    assert_eq!(
        embedders("blocks_delete"),
        [
            "src/sql/media/bulk_status.sql",
            "src/sql/media/list.sql",
            "src/sql/media/unused_and_proven.sql",
            "src/sql/usage/media_usage_entries.sql"
        ]
    );
    assert_eq!(embedders("counts_as_use"), ["src/sql/media/list.sql", "src/sql/usage/count_entries.sql"]);
}

#[test]
fn handing_a_leased_row_back_is_written_once_in_its_fragment() {
    // A release that forgot a column (a token left behind, an expiry that keeps the row looking
    // leased) would strand the row: every statement that ends a lease embeds the one SET list.
    let files = sql_files_code();
    let holders = |found: &dyn Fn(&str) -> bool| -> Vec<String> {
        let mut found: Vec<String> = files.iter().filter(|(_, code)| found(code)).map(|(f, _)| f.clone()).collect();
        found.sort();
        found
    };
    let release = "src/sql/lease/release.sql";
    // Setting the lease columns to nothing: the release, and a failed attempt (retry or failed,
    // not pending).
    let unleases = |code: &str| {
        ["lease_token = NULL", "NULL ELSE lease_token", "lease_expires_at = NULL", "NULL ELSE lease_expires_at"]
            .iter()
            .any(|set| code.contains(set))
    };
    assert_eq!(holders(&unleases), ["src/sql/lease/fail.sql", release], "a statement ends a lease itself");
    // Making a row pending: only the release.
    let pending = |code: &str| code.contains("THEN 'pending'") || code.contains("state = 'pending',");
    assert_eq!(holders(&pending), [release], "a statement makes a row pending itself");
    // The statements that hand a row back (queueing afresh is a release too).
    assert_eq!(
        holders(&|code| code.contains("{release}")),
        [
            "src/sql/deletion/checkpoint.sql",
            "src/sql/fields/checkpoint.sql",
            "src/sql/lease/reset_pending.sql",
            "src/sql/relink/finish.sql",
            "src/sql/relink/release.sql",
            "src/sql/repair/advance_run.sql",
            "src/sql/repair/barrier_wait.sql",
            "src/sql/usage/hold_partial.sql",
            "src/sql/usage/release_group.sql"
        ]
    );
}

/// The source files of the crate's modules under `src/`, each with its module path (`src/api/media.rs`
/// is `["api", "media"]`, `src/api/mod.rs` is `["api"]`).
fn modules() -> Vec<(Vec<String>, PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    files_with_extension(&src, "rs")
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(&src).unwrap().with_extension("");
            let mut path: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
                path.pop();
            }
            (path, file)
        })
        .collect()
}

/// The leading identifier of `s`.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// `s` without its leading whitespace, and how much was skipped.
fn skip_space(s: &str) -> (&str, usize) {
    let t = s.trim_start();
    (t, s.len() - t.len())
}

/// The paths a use tree (or a path in code) at the start of `s` names, and the bytes it took:
/// `a::b::{c, d::{self, e}}` names `a::b::c`, `a::b::d` and `a::b::d::e`; `a::b(…)` names `a::b`.
fn use_tree(s: &str) -> (Vec<String>, usize) {
    let mut segments: Vec<&str> = Vec::new();
    let mut i = 0;
    loop {
        let (rest, skipped) = skip_space(&s[i..]);
        i += skipped;
        if rest.starts_with('{') {
            i += 1;
            let mut paths = Vec::new();
            loop {
                let (inner, used) = use_tree(&s[i..]);
                i += used;
                for p in inner.into_iter().filter(|p| !p.is_empty()) {
                    let tail = if p == "self" { Vec::new() } else { vec![p.as_str()] };
                    paths.push([segments.as_slice(), &tail].concat().join("::"));
                }
                let (rest, skipped) = skip_space(&s[i..]);
                i += skipped;
                match rest.chars().next() {
                    Some(',') => i += 1,
                    Some('}') => {
                        i += 1;
                        break;
                    }
                    _ => break,
                }
            }
            return (paths, i);
        }
        let id = ident(rest);
        if id.is_empty() {
            break;
        }
        segments.push(id);
        i += id.len();
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            break;
        }
    }
    (vec![segments.join("::")], i)
}

/// The crate paths a module's code names (comments left out), resolved from `crate::`, `self::`
/// and `super::` to absolute paths: `use super::{input, Ctx}` in `src/api/media.rs` names
/// `api::input` and `api::Ctx`; `crate::repo::media::get(…)` names `repo::media::get`.
fn named_paths(module: &[String], text: &str) -> Vec<String> {
    let code: String = text.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n");
    let starts_path = |i: usize| !code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    let mut out = Vec::new();
    for prefix in ["crate::", "self::", "super::"] {
        for (i, _) in code.match_indices(prefix).filter(|(i, _)| starts_path(*i)) {
            // Where the path starts: the crate root, this module, or an ancestor of it.
            let (mut base, mut rest) = match prefix {
                "crate::" => (Vec::new(), &code[i + prefix.len()..]),
                "self::" => (module.to_vec(), &code[i + prefix.len()..]),
                _ => (module.to_vec(), &code[i..]),
            };
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            for path in use_tree(rest).0 {
                let tail: Vec<String> = path.split("::").filter(|p| !p.is_empty()).map(str::to_owned).collect();
                out.push([base.clone(), tail].concat().join("::"));
            }
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` items (a unit test may build what it tests from any layer):
/// each from the attribute to its item's closing brace or semicolon.
fn without_unit_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let (open, semi) = (item.find('{'), item.find(';'));
        let end = match open.filter(|open| semi.is_none_or(|semi| *open < semi)) {
            Some(open) => {
                let mut depth = 0;
                let close = item[open..].char_indices().find_map(|(i, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    (depth == 0).then_some(open + i + 1)
                });
                close.unwrap_or(item.len())
            }
            None => semi.map_or(item.len(), |semi| semi + 1),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Whether any file of `from` (a module path such as `api` or `api::media`, its submodules
/// included) names an item at or under `to`.
fn depends_on(from: &str, to: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (module, file) in modules() {
        let name = module.join("::");
        if name != from && !name.starts_with(&format!("{from}::")) {
            continue;
        }
        for path in named_paths(&module, &without_unit_tests(&fs::read_to_string(&file).unwrap())) {
            if path == to || path.starts_with(&format!("{to}::")) {
                found.push(format!("{} names {path}", file.display()));
            }
        }
    }
    found
}

/// The layers, from the top: a module names only layers below its own. `api` and the console
/// share a floor (without an import circle, [`no_import_circles_between_the_api_and_the_console_or_between_media_and_uploads`]),
/// and so do `usage` and `storage` (the object store names no part of the index,
/// [`the_usage_index_and_the_object_store_keep_apart`]); `lane`, what every lane shares, is the
/// ground floor.
const LAYERS: &[&[&str]] = &[
    &["edge"],
    &["settings"],
    &["api", "console"],
    &["tick"],
    &["lifecycle"],
    &["usage", "storage"],
    &["repo"],
    &["exec"],
    &["sql"],
    &["model"],
    &["lane"],
];

#[test]
fn every_layer_names_only_layers_below_it() {
    let mut found = Vec::new();
    for (floor, layers) in LAYERS.iter().enumerate() {
        for layer in layers.iter() {
            for above in LAYERS[..floor].iter().copied().flatten() {
                found.extend(depends_on(layer, above).into_iter().map(|f| format!("{f} ({layer} names {above})")));
            }
        }
    }
    assert!(found.is_empty(), "a layer names a layer above it: {found:#?}");
}

#[test]
fn the_usage_index_and_the_object_store_keep_apart() {
    let found = depends_on("storage", "usage");
    assert!(found.is_empty(), "the object store must not depend on the usage index: {found:#?}");
}

#[test]
fn the_layer_check_sees_a_layer_named_from_below() {
    // The rule above is only as good as the path reader: a lane naming the tick is caught.
    let code = "use crate::tick::lanes::BackgroundPolicy;\nfn f() { crate::lifecycle::x(); }\n";
    let named = named_paths(&["usage".to_owned(), "project".to_owned()], code);
    assert_eq!(named, ["tick::lanes::BackgroundPolicy", "lifecycle::x"]);
}

#[test]
fn the_read_paths_write_nothing() {
    // A module named for reads does not write: no batch, no execute, and no statement it
    // includes inserts, updates or deletes (the safe delete's move is `repo::media`'s).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/repo/reads.rs");
    let code = fs::read_to_string(path).unwrap();
    for call in [".batch(", ".execute(", "guarded_batch"] {
        assert!(!code.contains(call), "repo::reads writes ({call})");
    }
    let included: Vec<&str> = code
        .match_indices("include_str!(\"")
        .filter_map(|(at, call)| code[at + call.len()..].split('"').next())
        .collect();
    assert!(!included.is_empty());
    for file in included {
        let sql = fs::read_to_string(Path::new(path).parent().unwrap().join(file)).unwrap();
        let words = sql.lines().filter(|l| !l.trim_start().starts_with("--")).flat_map(str::split_whitespace);
        let writes: Vec<&str> = words.filter(|w| ["INSERT", "UPDATE", "DELETE", "REPLACE"].contains(w)).collect();
        assert!(writes.is_empty(), "repo::reads includes {file}, which writes: {writes:?}");
    }
}

#[test]
fn no_import_circles_between_the_api_and_the_console_or_between_media_and_uploads() {
    for (a, b) in [("api", "console"), ("api::media", "api::upload")] {
        let (there, back) = (depends_on(a, b), depends_on(b, a));
        assert!(there.is_empty() || back.is_empty(), "{a} and {b} name each other: {there:#?} {back:#?}");
    }
}

#[test]
fn the_layer_rules_leave_unit_tests_out() {
    let code = "use crate::repo;\n#[cfg(test)]\nuse crate::api::x;\n#[cfg(test)]\nimpl A {\n    fn f() { crate::edge::y(); { } }\n}\n\
                fn g() { crate::exec::z(); }\n#[cfg(test)]\nmod tests {\n    use crate::settings;\n}\n";
    let named = named_paths(&["usage".to_owned()], &without_unit_tests(code));
    assert_eq!(named, ["repo", "exec::z"]);
}

#[test]
fn the_path_reader_resolves_crate_self_and_super_paths() {
    let code = "use super::{input::{self, json_body}, Ctx};\nuse crate::{exec, sql::render};\n\
                use self::inner::X; use super::super::repo::{self, x}; // crate::edge in a comment\n\
                fn f() { super::super::usage::y(); crate::storage::z(); my_crate::api::w(); }\n";
    let mut paths = named_paths(&["api".to_owned(), "media".to_owned()], code);
    paths.sort();
    assert_eq!(
        paths,
        [
            "api::Ctx",
            "api::input",
            "api::input::json_body",
            "api::media::inner::X",
            "exec",
            "repo",
            "repo::x",
            "sql::render",
            "storage::z",
            "usage::y",
        ]
    );
}

/// A duration written into SQL as a literal date modifier (`'+60 seconds'`, `'-5 minutes'`), if
/// the text has one. Lengths of leases, backoffs and throttles are named constants bound as
/// parameters (`'+' || ?2 || ' seconds'`), so the number lives in one place in the code.
fn literal_duration(sql: &str) -> Option<&str> {
    const UNITS: [&str; 8] = ["second", "seconds", "minute", "minutes", "hour", "hours", "day", "days"];
    sql.match_indices('\'').map(|(i, _)| &sql[i + 1..]).find_map(|rest| {
        let end = rest.find('\'')?;
        let body = &rest[..end];
        let (number, unit) = body.trim().split_once(' ')?;
        let digits = number.strip_prefix(['+', '-']).unwrap_or(number);
        let numeric = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.');
        (numeric && UNITS.contains(&unit.trim())).then_some(body)
    })
}

#[test]
fn no_sql_file_writes_a_duration_as_a_literal() {
    assert_eq!(literal_duration("strftime('%Y', 'now', '+60 seconds')"), Some("+60 seconds"));
    assert_eq!(literal_duration("x < strftime('%Y', 'now', '-60 seconds')"), Some("-60 seconds"));
    assert_eq!(literal_duration("strftime('%Y', 'now', '+1.5 days')"), Some("+1.5 days"));
    assert_eq!(literal_duration("strftime('%Y', 'now', '+' || ?2 || ' seconds')"), None);
    assert_eq!(literal_duration("strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"), None);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = files_with_extension(&root.join("src/sql"), "sql");
    files.extend(files_with_extension(&root.join("migrations"), "sql"));
    assert!(files.len() > 100, "found only {} SQL files", files.len());
    for file in files {
        let sql = fs::read_to_string(&file).unwrap();
        if let Some(found) = literal_duration(&sql) {
            panic!("{} writes the duration '{found}' as a literal: bind a named constant instead", file.display());
        }
    }
}

#[test]
fn no_source_file_holds_over_600_lines_of_code_but_the_settings_table() {
    // A file's unit tests (from its `#[cfg(test)]` module on, or a `tests.rs` module) do not
    // count; `settings.rs` is one table of every variable, read top to bottom.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in files_with_extension(&root.join("src"), "rs") {
        if file.ends_with("src/settings.rs") || file.ends_with("tests.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        let code = text.lines().take_while(|l| !l.starts_with("#[cfg(test)]")).count();
        assert!(code <= 600, "{} has {code} lines of code: split it by topic", file.display());
    }
}
