//! The settings table: how each environment variable is read (accepted, refused with a warning,
//! raised to its minimum), and that README's configuration table and `wrangler.toml`'s `[vars]`
//! agree with it.

use std::cell::RefCell;
use std::fs;
use std::path::Path;

use media_usage_worker::lane::RowCount;
use media_usage_worker::lifecycle::deletion::batch::CleanupBatch;
use media_usage_worker::model::auth::hash_token;
use media_usage_worker::settings::{Bounds, Reported, Setting, SettingWarning, Settings, TABLE};
use media_usage_worker::storage::inspect::Allowlist;
use media_usage_worker::tick::budget::Budget;
use media_usage_worker::usage::extract::Rules;
use media_usage_worker::usage::project::{self, Admission};

/// The settings of an environment that sets `vars` only.
fn parse(vars: &[(&str, &str)]) -> (Settings, Vec<SettingWarning>) {
    Settings::parse(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
}

/// The settings with `name` set to `value`, which must be accepted without a warning.
fn accepted(name: &str, value: &str) -> Settings {
    let (settings, warnings) = parse(&[(name, value)]);
    assert_eq!(warnings, vec![], "{name}={value:?}");
    settings
}

/// The settings with `name` set to `value`, which must give exactly one warning, about it: the
/// value and what is used instead.
fn refused(name: &str, value: &str, used: &str) -> Settings {
    let (settings, warnings) = parse(&[(name, value)]);
    assert_eq!(warnings.len(), 1, "{name}={value:?}: {warnings:?}");
    let w = &warnings[0];
    assert_eq!((w.name, w.value.as_deref(), w.used.as_str()), (name, Some(value), used), "{w}");
    assert!(w.to_string().starts_with(&format!("{name}={value:?}: ")), "{w}");
    settings
}

#[test]
fn an_empty_environment_is_every_default() {
    let (s, warnings) = parse(&[]);
    assert_eq!(warnings, vec![]);
    assert_eq!(s, Settings::defaults());
    assert_eq!(
        s.budget(),
        Budget {
            max_statements: 40,
            max_ms: 2500.0,
            max_rows: RowCount::new(20_000, 200_000),
            daily_rows_written: 50_000
        }
    );
    assert_eq!(s.cleanup(), CleanupBatch::Adaptive { target_ms: 200.0 });
    assert_eq!(s.projection().admission, Admission::DEFAULT);
    assert_eq!(s.projection().rules, Rules::current(None));
    assert_eq!(s.background().storage_grace_ms, 86_400_000.0, "a day");
    assert_eq!(s.max_revisions, 20);
    assert_eq!(s.uploads().max_bytes, 52_428_800, "50 MiB");
    assert_eq!(s.uploads().allowed, Allowlist::default());
    assert_eq!((s.site_url, s.media_public_url, s.admin_token_hash), (None, None, None));
    assert_eq!((s.fault_after_statements, s.fault_storage_delete), (None, false));
}

#[test]
fn an_empty_value_is_unset() {
    let empty: Vec<(&str, &str)> = TABLE.iter().map(|s| (s.name(), "")).collect();
    assert_eq!(parse(&empty), (Settings::defaults(), vec![]));
}

#[test]
fn parse_reads_exactly_the_variables_of_the_table() {
    let read = RefCell::new(Vec::new());
    Settings::parse(|name| {
        read.borrow_mut().push(name.to_owned());
        None
    });
    let mut read = read.into_inner();
    read.sort();
    read.dedup();
    let mut table: Vec<&str> = TABLE.iter().map(Setting::name).collect();
    table.sort_unstable();
    assert_eq!(read, table);
}

#[test]
fn a_typo_in_a_number_is_reported_not_read_as_another_number() {
    let (s, warnings) = parse(&[("MEDIA_USAGE_TICK_MAX_QUERIES", "4O")]);
    assert_eq!(s.tick_max_statements, 40);
    assert_eq!(
        warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        vec!["MEDIA_USAGE_TICK_MAX_QUERIES=\"4O\": not a whole number; using the default 40"]
    );
}

#[test]
fn tick_max_queries_is_raised_to_the_smallest_tick() {
    const N: &str = "MEDIA_USAGE_TICK_MAX_QUERIES";
    assert_eq!(accepted(N, "1000").budget().max_statements, 1000);
    assert_eq!(accepted(N, " 11 ").budget().max_statements, 11);
    for low in ["3", "0"] {
        assert_eq!(refused(N, low, "11").budget().max_statements, 11, "{low}");
    }
    for bad in ["-1", "x", "4O", "40.5", "  "] {
        assert_eq!(refused(N, bad, "the default 40").budget().max_statements, 40, "{bad}");
    }
}

#[test]
fn tick_max_ms_is_a_positive_number() {
    const N: &str = "MEDIA_USAGE_TICK_MAX_MS";
    assert_eq!(accepted(N, "100").budget().max_ms, 100.0);
    assert_eq!(accepted(N, " 0.5 ").budget().max_ms, 0.5);
    assert_eq!(accepted(N, "inf").budget().max_ms, f64::INFINITY, "accepted as before: no time limit");
    for bad in ["0", "-5", "x", "NaN"] {
        assert_eq!(refused(N, bad, "the default 2500").budget().max_ms, 2500.0, "{bad}");
    }
}

#[test]
fn cleanup_batch_rows_fix_the_batch_within_bounds() {
    const N: &str = "MEDIA_USAGE_CLEANUP_BATCH_ROWS";
    assert_eq!(accepted(N, "50").cleanup(), CleanupBatch::Fixed(50));
    assert_eq!(accepted(N, "1").cleanup(), CleanupBatch::Fixed(1));
    assert_eq!(accepted(N, "10000").cleanup(), CleanupBatch::Fixed(10_000));
    for bad in ["0", "10001", "-1", "x"] {
        let s = refused(N, bad, "the default (an adaptive batch)");
        assert_eq!(s.cleanup(), CleanupBatch::Adaptive { target_ms: 200.0 }, "{bad}");
    }
    // A fixed batch does not use the statement target.
    let (s, warnings) = parse(&[(N, "50"), ("MEDIA_USAGE_STATEMENT_TARGET_MS", "80")]);
    assert_eq!((s.cleanup(), warnings), (CleanupBatch::Fixed(50), vec![]));
}

#[test]
fn statement_target_ms_tunes_the_adaptive_batch() {
    const N: &str = "MEDIA_USAGE_STATEMENT_TARGET_MS";
    assert_eq!(accepted(N, "80").cleanup(), CleanupBatch::Adaptive { target_ms: 80.0 });
    assert_eq!(accepted(N, "0.5").background().cleanup, CleanupBatch::Adaptive { target_ms: 0.5 });
    for bad in ["0", "-1", "x", "inf", "NaN"] {
        assert_eq!(refused(N, bad, "the default 200").cleanup(), CleanupBatch::Adaptive { target_ms: 200.0 }, "{bad}");
    }
}

#[test]
fn group_jobs_aim_at_the_statement_target_only_with_the_adaptive_cleanup_batch() {
    const TARGET: &str = "MEDIA_USAGE_STATEMENT_TARGET_MS";
    const ROWS: &str = "MEDIA_USAGE_CLEANUP_BATCH_ROWS";
    let groups = |vars: &[(&str, &str)]| parse(vars).0.background().groups;
    assert_eq!(groups(&[]), project::group_sizer(200.0));
    assert_eq!(groups(&[(TARGET, "80")]), project::group_sizer(80.0));
    assert_eq!(groups(&[(TARGET, "80"), (ROWS, "50")]), project::group_sizer(200.0), "a fixed batch: the default");
    let g = groups(&[(TARGET, "80")]);
    assert_eq!((g.start, g.min, g.max), (50, 10, 400));
}

#[test]
fn max_occurrences_per_entry_is_the_admission_limit() {
    const N: &str = "MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY";
    assert_eq!(accepted(N, "12").background().projection.admission, Admission { max_occurrences: 12 });
    assert_eq!(accepted(N, "5000").projection().admission, Admission { max_occurrences: 5_000 });
    assert_eq!(accepted(N, "1").projection().admission, Admission { max_occurrences: 1 });
    for bad in ["0", "5001", "-1", "many"] {
        assert_eq!(refused(N, bad, "the default 1000").projection().admission, Admission::DEFAULT, "{bad}");
    }
}

#[test]
fn max_revisions_per_entry_keeps_at_least_the_live_and_the_draft() {
    const N: &str = "MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY";
    assert_eq!(accepted(N, "2").max_revisions, 2);
    assert_eq!(accepted(N, "1000").config(|| 0.0).max_revisions, 1000);
    for bad in ["1", "0", "1001", "-3", "x"] {
        assert_eq!(refused(N, bad, "the default 20").max_revisions, 20, "{bad}");
    }
}

#[test]
fn media_max_upload_bytes_is_a_positive_size() {
    const N: &str = "MEDIA_MAX_UPLOAD_BYTES";
    let s = accepted(N, " 1000 ");
    assert_eq!((s.uploads().max_bytes, s.uploads().body_limit()), (1000, 1000 + 65_536));
    assert_eq!(accepted(N, "1").config(|| 0.0).uploads.max_bytes, 1);
    for bad in ["0", "-1", "x", "50MB"] {
        assert_eq!(refused(N, bad, "the default 52428800").uploads().max_bytes, 52_428_800, "{bad}");
    }
}

#[test]
fn media_allowed_types_replace_the_built_in_list() {
    const N: &str = "MEDIA_ALLOWED_TYPES";
    let only = accepted(N, " image/* , Application/PDF ").uploads().allowed;
    assert!(only.allows("image/png") && only.allows("application/pdf"));
    assert!(!only.allows("video/mp4") && !only.allows("imagex/png"));
    assert_eq!(accepted(N, " , ").uploads().allowed, Allowlist::default(), "no entry: the built-in list");
    let default = "the default (images, video, audio, PDF, office documents)";
    assert_eq!(refused(N, "nonsense", default).uploads().allowed, Allowlist::default());
    let s = refused(N, "image/png, nonsense", "image/png");
    assert!(s.uploads().allowed.allows("image/png") && !s.uploads().allowed.allows("image/gif"));
    let (_, warnings) = parse(&[(N, "image/png, nonsense")]);
    assert!(warnings[0].reason.contains("nonsense"), "{}", warnings[0]);
}

#[test]
fn media_storage_grace_hours_is_a_finite_age() {
    const N: &str = "MEDIA_STORAGE_GRACE_HOURS";
    assert_eq!(accepted(N, "0").background().storage_grace_ms, 0.0, "no grace");
    assert_eq!(accepted(N, " 1.5 ").background().storage_grace_ms, 5_400_000.0);
    for bad in ["-1", "x", "inf", "NaN"] {
        assert_eq!(refused(N, bad, "the default 24").background().storage_grace_ms, 86_400_000.0, "{bad}");
    }
}

#[test]
fn media_public_url_and_site_url_are_taken_as_set() {
    let url = "https://cdn.example/media/";
    let s = accepted("MEDIA_PUBLIC_URL", url);
    assert_eq!(s.media_public_url.as_deref(), Some(url));
    assert_eq!(s.projection().rules, Rules::current(Some(url)), "the rules know the media origin");
    assert_eq!(s.config(|| 0.0).media_public_url.as_deref(), Some(url));
    let s = accepted("SITE_URL", "https://site.example");
    assert_eq!(s.config(|| 0.0).site_url.as_deref(), Some("https://site.example"));
}

#[test]
fn fault_settings_are_off_unless_set() {
    const N: &str = "MEDIA_USAGE_FAULT_AFTER_STATEMENTS";
    assert_eq!(accepted(N, " 7 ").fault_after_statements, Some(7));
    for bad in ["0", "x", "-2"] {
        assert_eq!(refused(N, bad, "the default (no injected faults)").fault_after_statements, None, "{bad}");
    }
    assert!(accepted("MEDIA_USAGE_FAULT_STORAGE_DELETE", "1").fault_storage_delete);
}

#[test]
fn the_bootstrap_secret_is_trimmed_and_an_ignored_one_is_reported_without_its_value() {
    const N: &str = "EMDASH_ADMIN_TOKEN";
    let secret = "0123456789abcdef0123456789abcdef";
    assert_eq!(accepted(N, &format!(" {secret}\n")).config(|| 0.0).admin_token_hash, Some(hash_token(secret)));
    for ignored in [&secret[..31], &"x".repeat(513)] {
        let (s, warnings) = parse(&[(N, ignored)]);
        assert_eq!(s.admin_token_hash, None);
        assert_eq!(warnings.len(), 1);
        let w = &warnings[0];
        assert_eq!((w.name, w.value.as_deref(), w.used.as_str()), (N, None, "no bootstrap token"));
        let shown = w.to_string();
        assert!(shown.starts_with("EMDASH_ADMIN_TOKEN (value not shown): "), "{shown}");
        assert!(!shown.contains(ignored) && !shown.contains("is ignored: "), "{shown}");
    }
    let (_, warnings) = parse(&[(N, "short")]);
    assert!(warnings[0].reason.contains("5 characters"), "{}", warnings[0]);
}

#[test]
fn warnings_are_reported_for_each_variable() {
    let (_, warnings) = parse(&[
        ("MEDIA_USAGE_TICK_MAX_QUERIES", "x"),
        ("MEDIA_USAGE_TICK_MAX_MS", "x"),
        ("MEDIA_STORAGE_GRACE_HOURS", "24"),
    ]);
    let names: Vec<&str> = warnings.iter().map(|w| w.name).collect();
    assert_eq!(names, ["MEDIA_USAGE_TICK_MAX_QUERIES", "MEDIA_USAGE_TICK_MAX_MS"]);
}

#[test]
fn each_distinct_warning_is_reported_once() {
    let mut reported = Reported::default();
    let env = [("MEDIA_USAGE_TICK_MAX_QUERIES", "4O"), ("EMDASH_ADMIN_TOKEN", "short")];
    assert_eq!(reported.fresh(parse(&env).1).len(), 2, "the first invocation reports both");
    assert_eq!(reported.fresh(parse(&env).1), vec![], "later ones with the same environment, nothing");
    let changed = reported.fresh(parse(&[("MEDIA_USAGE_TICK_MAX_QUERIES", "4P")]).1);
    assert_eq!(changed.iter().map(|w| w.value.as_deref()).collect::<Vec<_>>(), [Some("4P")], "another value is news");
}

// ---------------------------------------------------------------------------------------------
// The documents that name the variables.

fn read(file: &str) -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap()
}

/// README's configuration table: (name, kind, default cell, meaning cell) per row.
fn readme_rows() -> Vec<(String, String, String, String)> {
    let readme = read("README.md");
    let section = readme.split("\n## Configuration\n").nth(1).expect("a Configuration section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            assert!(cells.len() >= 4, "a row of name, kind, default, meaning: {l}");
            let meaning = cells[3..].join(" | ");
            (cells[0].trim_matches('`').to_owned(), cells[1].to_owned(), cells[2].to_owned(), meaning)
        })
        .collect()
}

/// A default cell's value: its first `code` span (`None`: the cell says unset or empty).
fn default_of(cell: &str) -> Option<String> {
    if cell.starts_with("unset") || cell.starts_with("empty") {
        assert!(!cell.contains('`'), "an unset default names no value: {cell}");
        return None;
    }
    let value = cell.strip_prefix('`').and_then(|c| c.split('`').next());
    Some(value.unwrap_or_else(|| panic!("a default is `value`, unset or empty: {cell}")).to_owned())
}

#[test]
fn the_readme_configuration_table_matches_the_settings_table() {
    let rows = readme_rows();
    let variables: Vec<&(String, String, String, String)> =
        rows.iter().filter(|(_, kind, _, _)| kind == "var" || kind == "secret").collect();
    for (name, kind, _, _) in &rows {
        assert!(
            kind == "var" || kind == "secret" || kind.ends_with("binding"),
            "README's {name} is a var, a secret or a binding, not {kind}"
        );
    }
    for setting in TABLE {
        let name = setting.name();
        let row = variables.iter().find(|(n, _, _, _)| n == name);
        let (_, kind, default, meaning) = row.unwrap_or_else(|| panic!("README's table lacks {name}"));
        assert_eq!(kind == "secret", setting.is_secret(), "{name}: README says {kind}");
        assert_eq!(default_of(default), setting.default_text(), "README's default of {name}");
        assert!(!setting.meaning().is_empty(), "{name} says what it means");
        assert!(meaning.starts_with(setting.meaning()), "README's {name} begins {:?}", setting.meaning());
        if let Some(range) = setting.range() {
            assert!(meaning.contains(&range), "README's {name} says what it accepts: {range}");
        }
    }
    for (name, _, _, _) in &variables {
        assert!(TABLE.iter().any(|s| s.name() == name), "README names {name}, which the settings table lacks");
    }
}

#[test]
fn each_number_says_what_it_accepts_as_readme_writes_it() {
    let range = |name: &str| TABLE.iter().find(|s| s.name() == name).and_then(|s| s.range());
    assert_eq!(range("MEDIA_USAGE_TICK_MAX_QUERIES").as_deref(), Some("at least 11"));
    assert_eq!(range("MEDIA_USAGE_CLEANUP_BATCH_ROWS").as_deref(), Some("1–10,000"));
    assert_eq!(range("MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY").as_deref(), Some("2–1,000"));
    assert_eq!(range("MEDIA_MAX_UPLOAD_BYTES").as_deref(), Some("at least 1"));
    assert_eq!(range("MEDIA_USAGE_TICK_MAX_MS").as_deref(), Some("> 0"));
    assert_eq!(range("MEDIA_STORAGE_GRACE_HOURS").as_deref(), Some("≥ 0"));
    assert_eq!(range("SITE_URL"), None);
    let bounds = Bounds { min: 100, max: 100_000_000, raise_to_min: false };
    assert_eq!(bounds.text(), "100–100,000,000");
}

/// `wrangler.toml`'s `[vars]`: (name, value) per line.
fn wrangler_vars() -> Vec<(String, String)> {
    let toml = read("wrangler.toml");
    let vars = toml.split("\n[vars]\n").nth(1).expect("a [vars] table");
    vars.lines()
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| {
            let (name, value) = l.split_once('=').unwrap_or_else(|| panic!("name = \"value\": {l}"));
            (name.trim().to_owned(), value.trim().trim_matches('"').to_owned())
        })
        .collect()
}

#[test]
fn wrangler_vars_name_only_known_variables_with_accepted_values() {
    let vars = wrangler_vars();
    assert!(!vars.is_empty());
    for (name, _) in &vars {
        let setting = TABLE.iter().find(|s| s.name() == name);
        let setting = setting.unwrap_or_else(|| panic!("wrangler.toml sets {name}, which the settings table lacks"));
        assert!(!setting.is_secret(), "{name} is a secret: `wrangler secret put`, not [vars]");
    }
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(parse(&vars).1, vec![], "wrangler.toml's values are accepted as they are");
}

#[test]
fn the_edge_reads_variables_only_through_the_settings() {
    let edge = read("src/edge/mod.rs");
    assert!(edge.contains("Settings::parse(|name| var(env, name))"));
    assert_eq!(edge.matches("var(env, ").count(), 1, "no variable is read around the table");
}
