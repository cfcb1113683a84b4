//! Deployment settings: the one table of every environment variable the worker reads (`[vars]`
//! and secrets), with its default, what it accepts and what it means, and [`Settings::parse`],
//! which reads them all at once. Pure: the edge hands in a lookup and logs the warnings.
//!
//! A value that is malformed or out of range is never taken silently: it gives a
//! [`SettingWarning`] (the variable, the value — never a secret's — and the value used instead),
//! and the default (or, where the table says so, the nearest accepted value) is used. An unset or
//! empty variable is its default without a warning.
//!
//! Defaults and bounds are written here, except those the code itself also relies on, which the
//! table names from their module: the tick's smallest budget, the cleanup batch's largest size
//! and default statement target, the admission default and limit, the fewest revisions an entry
//! keeps, and the built-in upload allowlist ([`Allowlist::default`]).

use std::collections::BTreeSet;
use std::fmt;

use crate::api::{self, upload::UploadRules};
use crate::lane::adaptive::DEFAULT_TARGET_MS;
use crate::lane::RowCount;
use crate::lifecycle::deletion::batch::{CleanupBatch, MAX_BATCH_ROWS};
use crate::model::auth::bootstrap_hash;
use crate::repo::content::MIN_MAX_REVISIONS;
use crate::storage::inspect::Allowlist;
use crate::tick::budget::{self, Budget, MIN_TICK_STATEMENTS};
use crate::tick::lanes::BackgroundPolicy;
use crate::usage::cost;
use crate::usage::extract::Rules;
use crate::usage::project::{self, Admission, Policy};

/// A variable holding a whole number, with a default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub name: &'static str,
    pub default: u64,
    pub bounds: Bounds,
    pub meaning: &'static str,
}

/// A variable holding a whole number, unset by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionalCount {
    pub name: &'static str,
    /// What being unset means (e.g. "an adaptive batch").
    pub unset: &'static str,
    pub bounds: Bounds,
    pub meaning: &'static str,
}

/// The whole numbers a variable accepts: `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub min: u64,
    pub max: u64,
    /// A value below `min` is raised to `min` (else it is refused like any other out of range).
    pub raise_to_min: bool,
}

impl Bounds {
    const fn between(min: u64, max: u64) -> Bounds {
        Bounds { min, max, raise_to_min: false }
    }

    const fn at_least(min: u64) -> Bounds {
        Bounds { min, max: u64::MAX, raise_to_min: false }
    }

    /// The accepted range as text: `1–10,000` or `at least 11`.
    pub fn text(&self) -> String {
        if self.max == u64::MAX {
            format!("at least {}", grouped(self.min))
        } else {
            format!("{}–{}", grouped(self.min), grouped(self.max))
        }
    }

    /// Reads `raw` (set, non-empty): the number to use, or why it is refused and the number to
    /// use instead (`None`: the default).
    fn check(&self, raw: &str) -> Result<u64, (String, Option<u64>)> {
        match raw.trim().parse::<u64>() {
            Err(_) => Err(("not a whole number".to_owned(), None)),
            Ok(n) if n < self.min && self.raise_to_min => {
                Err((format!("below the minimum {}", self.min), Some(self.min)))
            }
            Ok(n) if n < self.min || n > self.max => Err((format!("outside {}", self.text()), None)),
            Ok(n) => Ok(n),
        }
    }
}

/// `n` with its thousands separated by commas, as README writes numbers: `10,000`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A variable holding a decimal number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number {
    pub name: &'static str,
    pub default: f64,
    /// The lower bound: values must be above it, or at least it when `inclusive`.
    pub min: f64,
    pub inclusive: bool,
    /// Whether infinity is refused.
    pub finite: bool,
    pub meaning: &'static str,
}

/// A variable whose value is not a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plain {
    pub name: &'static str,
    pub kind: PlainKind,
    pub meaning: &'static str,
}

/// What a [`Plain`] variable holds. All of them are unset by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainKind {
    /// Text taken as it is set (an origin, a URL prefix).
    Text,
    /// Comma-separated `type/subtype` or `type/*` entries.
    Types,
    /// On when set to anything.
    Flag,
    /// A secret: never repeated in a warning or a log.
    Secret,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    Count(&'static Count),
    OptionalCount(&'static OptionalCount),
    Number(&'static Number),
    Plain(&'static Plain),
}

impl Setting {
    pub fn name(&self) -> &'static str {
        match self {
            Setting::Count(c) => c.name,
            Setting::OptionalCount(c) => c.name,
            Setting::Number(n) => n.name,
            Setting::Plain(p) => p.name,
        }
    }

    pub fn meaning(&self) -> &'static str {
        match self {
            Setting::Count(c) => c.meaning,
            Setting::OptionalCount(c) => c.meaning,
            Setting::Number(n) => n.meaning,
            Setting::Plain(p) => p.meaning,
        }
    }

    /// The values it accepts, as README's meaning column writes them (`None`: any text).
    pub fn range(&self) -> Option<String> {
        match self {
            Setting::Count(c) => Some(c.bounds.text()),
            Setting::OptionalCount(c) => Some(c.bounds.text()),
            Setting::Number(n) => Some(format!("{} {}", if n.inclusive { "≥" } else { ">" }, n.min)),
            Setting::Plain(_) => None,
        }
    }

    /// Whether it is a secret (as opposed to a `[vars]` value).
    pub fn is_secret(&self) -> bool {
        matches!(self, Setting::Plain(Plain { kind: PlainKind::Secret, .. }))
    }

    /// The default as README's configuration table writes it: `Some("40")`, or `None` when the
    /// variable is unset by default.
    pub fn default_text(&self) -> Option<String> {
        match self {
            Setting::Count(c) => Some(c.default.to_string()),
            Setting::Number(n) => Some(n.default.to_string()),
            Setting::OptionalCount(_) | Setting::Plain(_) => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The table.

pub const TICK_MAX_QUERIES: Count = Count {
    name: "MEDIA_USAGE_TICK_MAX_QUERIES",
    default: 40,
    bounds: Bounds { min: MIN_TICK_STATEMENTS, max: u64::MAX, raise_to_min: true },
    meaning: "D1 statements one cron tick (or a repair request) may issue",
};

pub const TICK_MAX_MS: Number = Number {
    name: "MEDIA_USAGE_TICK_MAX_MS",
    default: 2500.0,
    min: 0.0,
    inclusive: false,
    finite: false,
    meaning: "wall-time budget of one cron tick (or a repair request), in milliseconds",
};

pub const TICK_MAX_CPU_MS: Number = Number {
    name: "MEDIA_USAGE_TICK_MAX_CPU_MS",
    default: cost::DEFAULT_TICK_CPU_MS,
    min: 0.0,
    inclusive: false,
    finite: false,
    meaning: "CPU one cron tick's projections may spend by the cost model, in milliseconds of native core CPU (an entry too heavy for it with its draft is projected one source variant a tick; one that still does not fit runs, past it)",
};

pub const TICK_MAX_ROWS_WRITTEN: Count = Count {
    name: "MEDIA_USAGE_TICK_MAX_ROWS_WRITTEN",
    default: 20_000,
    bounds: Bounds { min: MIN_TICK_ROWS.written, max: u64::MAX, raise_to_min: true },
    meaning: "rows (D1's `rows_written`, index entries included) one cron tick (or a repair request) may write",
};

pub const TICK_MAX_ROWS_READ: Count = Count {
    name: "MEDIA_USAGE_TICK_MAX_ROWS_READ",
    default: 200_000,
    bounds: Bounds { min: MIN_TICK_ROWS.read, max: u64::MAX, raise_to_min: true },
    meaning: "rows (D1's `rows_read`) one cron tick (or a repair request) may read",
};

pub const DAILY_ROWS_WRITTEN: Count = Count {
    name: "MEDIA_USAGE_DAILY_ROWS_WRITTEN",
    default: 50_000,
    bounds: Bounds::at_least(0),
    meaning: "rows the cron ticks of one UTC day may write before every lane but the work and schedule lanes rests until the next day (0: unlimited)",
};

/// The smallest row budgets a tick accepts: one projection job at the default admission limit,
/// the continuation and the log write ([`Settings::budget`] raises them further when the
/// admission limit is higher).
pub const MIN_TICK_ROWS: RowCount =
    Admission::DEFAULT.job_max_rows().plus(budget::CONTINUATION_ROWS).plus(budget::LOG_ROWS);

pub const CLEANUP_BATCH_ROWS: OptionalCount = OptionalCount {
    name: "MEDIA_USAGE_CLEANUP_BATCH_ROWS",
    unset: "an adaptive batch",
    bounds: Bounds::between(1, MAX_BATCH_ROWS as u64),
    meaning: "rows per collection-cleanup statement",
};

pub const STATEMENT_TARGET_MS: Number = Number {
    name: "MEDIA_USAGE_STATEMENT_TARGET_MS",
    default: DEFAULT_TARGET_MS,
    min: 0.0,
    inclusive: false,
    finite: true,
    meaning: "duration a cleanup statement aims at, in milliseconds",
};

pub const MAX_OCCURRENCES_PER_ENTRY: Count = Count {
    name: "MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY",
    default: Admission::DEFAULT.max_occurrences as u64,
    bounds: Bounds::between(1, Admission::MAX_OCCURRENCES as u64),
    meaning: "media references one entry may hold per source variant (live columns, draft overlay)",
};

pub const MAX_REVISIONS_PER_ENTRY: Count = Count {
    name: "MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY",
    default: 20,
    bounds: Bounds::between(MIN_MAX_REVISIONS as u64, 1_000),
    meaning: "revisions an entry keeps (its live and draft ones always)",
};

pub const SITE_URL: Plain = Plain {
    name: "SITE_URL",
    kind: PlainKind::Text,
    meaning: "public site origin; enables `/sitemap.xml` and `/sitemap-<collection>.xml`",
};

pub const MEDIA_PUBLIC_URL: Plain =
    Plain { name: "MEDIA_PUBLIC_URL", kind: PlainKind::Text, meaning: "where stored media is served" };

pub const MAX_UPLOAD_BYTES: Count = Count {
    name: "MEDIA_MAX_UPLOAD_BYTES",
    default: 50 * 1024 * 1024,
    bounds: Bounds::at_least(1),
    meaning: "largest file an upload may carry, in bytes",
};

pub const ALLOWED_TYPES: Plain =
    Plain { name: "MEDIA_ALLOWED_TYPES", kind: PlainKind::Types, meaning: "comma-separated types an upload may have" };

pub const STORAGE_GRACE_HOURS: Number = Number {
    name: "MEDIA_STORAGE_GRACE_HOURS",
    default: 24.0,
    min: 0.0,
    inclusive: true,
    finite: true,
    meaning: "age, in hours, an unreferenced object the worker stored must reach before the storage sweep deletes it",
};

pub const TRASH_DAYS: Number = Number {
    name: "MEDIA_TRASH_DAYS",
    default: 30.0,
    min: 0.0,
    inclusive: true,
    finite: true,
    meaning:
        "days a media item stays in the trash before the tick's purge deletes it (row, then object) if nothing uses it",
};

pub const FAULT_AFTER_STATEMENTS: OptionalCount = OptionalCount {
    name: "MEDIA_USAGE_FAULT_AFTER_STATEMENTS",
    unset: "no injected faults",
    bounds: Bounds::at_least(1),
    meaning: "tests only: the N-th statement of each invocation and all later ones fail",
};

pub const FAULT_STORAGE_DELETE: Plain = Plain {
    name: "MEDIA_USAGE_FAULT_STORAGE_DELETE",
    kind: PlainKind::Flag,
    meaning: "tests only: object deletes fail",
};

pub const ADMIN_TOKEN: Plain = Plain {
    name: "EMDASH_ADMIN_TOKEN",
    kind: PlainKind::Secret,
    meaning: "bootstrap admin token (role admin, every scope); mints other tokens",
};

/// Every variable the worker reads.
pub const TABLE: &[Setting] = &[
    Setting::Plain(&ADMIN_TOKEN),
    Setting::Count(&TICK_MAX_QUERIES),
    Setting::Number(&TICK_MAX_MS),
    Setting::Number(&TICK_MAX_CPU_MS),
    Setting::Count(&TICK_MAX_ROWS_WRITTEN),
    Setting::Count(&TICK_MAX_ROWS_READ),
    Setting::Count(&DAILY_ROWS_WRITTEN),
    Setting::OptionalCount(&CLEANUP_BATCH_ROWS),
    Setting::Count(&MAX_OCCURRENCES_PER_ENTRY),
    Setting::Count(&MAX_REVISIONS_PER_ENTRY),
    Setting::Number(&STATEMENT_TARGET_MS),
    Setting::Plain(&SITE_URL),
    Setting::Plain(&MEDIA_PUBLIC_URL),
    Setting::Count(&MAX_UPLOAD_BYTES),
    Setting::Plain(&ALLOWED_TYPES),
    Setting::Number(&STORAGE_GRACE_HOURS),
    Setting::Number(&TRASH_DAYS),
    Setting::OptionalCount(&FAULT_AFTER_STATEMENTS),
    Setting::Plain(&FAULT_STORAGE_DELETE),
];

// ---------------------------------------------------------------------------------------------
// Reading values.

/// A value that was set but is not used as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingWarning {
    pub name: &'static str,
    /// The value as set; `None` for a secret, whose value is never repeated.
    pub value: Option<String>,
    /// What is wrong with it.
    pub reason: String,
    /// What is used instead.
    pub used: String,
}

impl fmt::Display for SettingWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "{}={value:?}: {}; using {}", self.name, self.reason, self.used),
            None => write!(f, "{} (value not shown): {}; using {}", self.name, self.reason, self.used),
        }
    }
}

impl Count {
    /// The number to use for `raw` (`None`: unset), and a warning when `raw` is not used as it is.
    pub fn read(&self, raw: Option<&str>) -> (u64, Option<SettingWarning>) {
        let Some(raw) = raw else { return (self.default, None) };
        match self.bounds.check(raw) {
            Ok(n) => (n, None),
            Err((reason, instead)) => {
                let used = instead.map_or_else(|| format!("the default {}", self.default), |n| n.to_string());
                (instead.unwrap_or(self.default), Some(warning(self.name, raw, reason, used)))
            }
        }
    }
}

impl OptionalCount {
    /// The number to use for `raw` (`None`: unset), and a warning when `raw` is not used as it is.
    pub fn read(&self, raw: Option<&str>) -> (Option<u64>, Option<SettingWarning>) {
        let Some(raw) = raw else { return (None, None) };
        match self.bounds.check(raw) {
            Ok(n) => (Some(n), None),
            Err((reason, instead)) => {
                let used = instead.map_or_else(|| format!("the default ({})", self.unset), |n| n.to_string());
                (instead, Some(warning(self.name, raw, reason, used)))
            }
        }
    }
}

impl Number {
    /// The number to use for `raw` (`None`: unset), and a warning when `raw` is not used as it is.
    pub fn read(&self, raw: Option<&str>) -> (f64, Option<SettingWarning>) {
        let Some(raw) = raw else { return (self.default, None) };
        let reason = match raw.trim().parse::<f64>() {
            Err(_) => "not a number".to_owned(),
            Ok(v) if self.finite && !v.is_finite() => "not a finite number".to_owned(),
            Ok(v) if (self.inclusive && v >= self.min) || (!self.inclusive && v > self.min) => return (v, None),
            Ok(_) => format!("not {} {}", if self.inclusive { "at least" } else { "above" }, self.min),
        };
        (self.default, Some(warning(self.name, raw, reason, format!("the default {}", self.default))))
    }
}

/// The warnings an isolate has reported: each distinct one is reported once, however many
/// invocations read the same environment.
#[derive(Debug, Default)]
pub struct Reported(BTreeSet<String>);

impl Reported {
    /// The warnings of `warnings` not reported before; they count as reported from now on.
    pub fn fresh(&mut self, warnings: Vec<SettingWarning>) -> Vec<SettingWarning> {
        warnings.into_iter().filter(|w| self.0.insert(w.to_string())).collect()
    }
}

fn warning(name: &'static str, raw: &str, reason: String, used: String) -> SettingWarning {
    SettingWarning { name, value: Some(raw.to_owned()), reason, used }
}

/// Reads `MEDIA_ALLOWED_TYPES`: its lower-cased entries that name a type (`None`: unset, or no
/// such entry: the built-in list). Entries without a `/` are left out and reported.
fn read_types(raw: Option<&str>) -> (Option<Vec<String>>, Option<SettingWarning>) {
    let Some(raw) = raw else { return (None, None) };
    let (types, refused): (Vec<String>, Vec<String>) =
        raw.split(',').map(|s| s.trim().to_ascii_lowercase()).filter(|s| !s.is_empty()).partition(|s| s.contains('/'));
    let types = (!types.is_empty()).then_some(types);
    let warning = (!refused.is_empty()).then(|| {
        let used = match &types {
            Some(t) => t.join(","),
            None => "the default (images, video, audio, PDF, office documents)".to_owned(),
        };
        warning(ALLOWED_TYPES.name, raw, format!("not types (no \"/\"): {}", refused.join(", ")), used)
    });
    (types, warning)
}

/// Reads `EMDASH_ADMIN_TOKEN` into the hash presented tokens are compared with
/// ([`bootstrap_hash`] holds the rule); an ignored secret is reported without its value.
fn read_admin_token(raw: Option<&str>) -> (Option<[u8; 32]>, Option<SettingWarning>) {
    let Some(raw) = raw else { return (None, None) };
    match bootstrap_hash(raw) {
        Ok(hash) => (Some(hash), None),
        Err(why) => {
            let prefix = format!("{} is ignored: ", ADMIN_TOKEN.name);
            let reason = why.strip_prefix(&prefix).unwrap_or(&why).to_owned();
            let used = "no bootstrap token".to_owned();
            (None, Some(SettingWarning { name: ADMIN_TOKEN.name, value: None, reason, used }))
        }
    }
}

/// The environment being read, and what it gave cause to warn about.
struct Reader<F> {
    get: F,
    warnings: Vec<SettingWarning>,
}

impl<F: Fn(&str) -> Option<String>> Reader<F> {
    /// A variable's value: `None` when unset or empty.
    fn raw(&self, name: &str) -> Option<String> {
        (self.get)(name).filter(|v| !v.is_empty())
    }

    fn keep<T>(&mut self, (value, warning): (T, Option<SettingWarning>)) -> T {
        self.warnings.extend(warning);
        value
    }

    fn count(&mut self, c: &Count) -> u64 {
        let read = c.read(self.raw(c.name).as_deref());
        self.keep(read)
    }

    fn optional_count(&mut self, c: &OptionalCount) -> Option<u64> {
        let read = c.read(self.raw(c.name).as_deref());
        self.keep(read)
    }

    fn number(&mut self, n: &Number) -> f64 {
        let read = n.read(self.raw(n.name).as_deref());
        self.keep(read)
    }
}

/// Every setting, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `MEDIA_USAGE_TICK_MAX_QUERIES`.
    pub tick_max_statements: u64,
    /// `MEDIA_USAGE_TICK_MAX_MS`.
    pub tick_max_ms: f64,
    /// `MEDIA_USAGE_TICK_MAX_CPU_MS`.
    pub tick_max_cpu_ms: f64,
    /// `MEDIA_USAGE_TICK_MAX_ROWS_WRITTEN` and `MEDIA_USAGE_TICK_MAX_ROWS_READ`.
    pub tick_max_rows: RowCount,
    /// `MEDIA_USAGE_DAILY_ROWS_WRITTEN` (0: unlimited).
    pub daily_rows_written: u64,
    /// `MEDIA_USAGE_CLEANUP_BATCH_ROWS`: `None` for the adaptive batch.
    pub cleanup_batch_rows: Option<u32>,
    /// `MEDIA_USAGE_STATEMENT_TARGET_MS`.
    pub statement_target_ms: f64,
    /// `MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY`.
    pub max_occurrences: usize,
    /// `MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY`.
    pub max_revisions: u32,
    /// `SITE_URL`, as set.
    pub site_url: Option<String>,
    /// `MEDIA_PUBLIC_URL`, as set.
    pub media_public_url: Option<String>,
    /// `MEDIA_MAX_UPLOAD_BYTES`.
    pub max_upload_bytes: u64,
    /// `MEDIA_ALLOWED_TYPES`: `None` for the built-in list.
    pub allowed_types: Option<Vec<String>>,
    /// `MEDIA_STORAGE_GRACE_HOURS`.
    pub storage_grace_hours: f64,
    /// `MEDIA_TRASH_DAYS`.
    pub trash_days: f64,
    /// `MEDIA_USAGE_FAULT_AFTER_STATEMENTS`: `None` for no injected faults.
    pub fault_after_statements: Option<u64>,
    /// `MEDIA_USAGE_FAULT_STORAGE_DELETE`.
    pub fault_storage_delete: bool,
    /// SHA-256 of `EMDASH_ADMIN_TOKEN` (trimmed), when it is set and accepted.
    pub admin_token_hash: Option<[u8; 32]>,
}

impl Settings {
    /// Reads every variable of [`TABLE`] through `get` (`None` or an empty value: unset). A
    /// value that is not used as it is gives a warning, and its default (or, where the table
    /// says so, the nearest accepted value) is used instead.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> (Settings, Vec<SettingWarning>) {
        let mut env = Reader { get, warnings: Vec::new() };
        // The table's bounds keep every count within its field's type.
        let settings = Settings {
            tick_max_statements: env.count(&TICK_MAX_QUERIES),
            tick_max_ms: env.number(&TICK_MAX_MS),
            tick_max_cpu_ms: env.number(&TICK_MAX_CPU_MS),
            tick_max_rows: RowCount::new(env.count(&TICK_MAX_ROWS_WRITTEN), env.count(&TICK_MAX_ROWS_READ)),
            daily_rows_written: env.count(&DAILY_ROWS_WRITTEN),
            cleanup_batch_rows: env.optional_count(&CLEANUP_BATCH_ROWS).map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            statement_target_ms: env.number(&STATEMENT_TARGET_MS),
            max_occurrences: usize::try_from(env.count(&MAX_OCCURRENCES_PER_ENTRY)).unwrap_or(usize::MAX),
            max_revisions: u32::try_from(env.count(&MAX_REVISIONS_PER_ENTRY)).unwrap_or(u32::MAX),
            site_url: env.raw(SITE_URL.name),
            media_public_url: env.raw(MEDIA_PUBLIC_URL.name),
            max_upload_bytes: env.count(&MAX_UPLOAD_BYTES),
            allowed_types: {
                let read = read_types(env.raw(ALLOWED_TYPES.name).as_deref());
                env.keep(read)
            },
            storage_grace_hours: env.number(&STORAGE_GRACE_HOURS),
            trash_days: env.number(&TRASH_DAYS),
            fault_after_statements: env.optional_count(&FAULT_AFTER_STATEMENTS),
            fault_storage_delete: env.raw(FAULT_STORAGE_DELETE.name).is_some(),
            admin_token_hash: {
                let read = read_admin_token(env.raw(ADMIN_TOKEN.name).as_deref());
                env.keep(read)
            },
        };
        (settings, env.warnings)
    }

    /// The settings of an environment that sets nothing: every default.
    pub fn defaults() -> Settings {
        Settings::parse(|_| None).0
    }

    /// What a tick (or a repair request) may spend. The row budgets are at least what one
    /// projection job under the configured admission limit, the continuation and the log write
    /// need (a higher `MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY` raises them), so the work lane can
    /// always run.
    pub fn budget(&self) -> Budget {
        let least = self.projection().admission.job_max_rows().plus(budget::CONTINUATION_ROWS).plus(budget::LOG_ROWS);
        let rows =
            RowCount::new(self.tick_max_rows.written.max(least.written), self.tick_max_rows.read.max(least.read));
        Budget::new(self.tick_max_statements, self.tick_max_ms)
            .with_rows(rows)
            .with_daily_rows_written(self.daily_rows_written)
    }

    /// The cleanup batch: fixed when configured, else adaptive to the statement target.
    pub fn cleanup(&self) -> CleanupBatch {
        match self.cleanup_batch_rows {
            Some(n) => CleanupBatch::Fixed(n),
            None => CleanupBatch::Adaptive { target_ms: self.statement_target_ms },
        }
    }

    /// What counts as a use (under `MEDIA_PUBLIC_URL`) and what a projection may publish.
    pub fn projection(&self) -> Policy {
        Policy {
            rules: Rules::current(self.media_public_url.as_deref()),
            admission: Admission { max_occurrences: self.max_occurrences },
        }
    }

    /// How background work is done.
    pub fn background(&self) -> BackgroundPolicy {
        // The statement target sizes group jobs too, but only with the adaptive cleanup batch; a
        // fixed cleanup batch leaves groups at the default target.
        let group_target_ms = match self.cleanup() {
            CleanupBatch::Adaptive { target_ms } => target_ms,
            CleanupBatch::Fixed(_) => DEFAULT_TARGET_MS,
        };
        BackgroundPolicy {
            cleanup: self.cleanup(),
            projection: self.projection(),
            groups: project::group_sizer(group_target_ms),
            cpu_ms: self.tick_max_cpu_ms,
            storage_grace_ms: self.storage_grace_hours * 3_600_000.0,
            trash_days: self.trash_days,
            max_revisions: self.max_revisions,
        }
    }

    /// What an upload may be.
    pub fn uploads(&self) -> UploadRules {
        UploadRules {
            max_bytes: self.max_upload_bytes,
            allowed: self.allowed_types.clone().map_or_else(Allowlist::default, Allowlist::new),
        }
    }

    /// What the request handlers need, with the edge's elapsed-time `clock`.
    pub fn config(&self, clock: fn() -> f64) -> api::Config {
        api::Config {
            admin_token_hash: self.admin_token_hash,
            site_url: self.site_url.clone(),
            media_public_url: self.media_public_url.clone(),
            tick_budget: self.budget(),
            background: self.background(),
            clock,
            max_revisions: self.max_revisions,
            uploads: self.uploads(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_accepted_by_its_own_rule() {
        for setting in TABLE {
            let text = setting.default_text();
            let read = match setting {
                Setting::Count(c) => Some(c.read(text.as_deref())).map(|(v, w)| (v.to_string(), w)),
                Setting::Number(n) => Some(n.read(text.as_deref())).map(|(v, w)| (v.to_string(), w)),
                Setting::OptionalCount(_) | Setting::Plain(_) => None,
            };
            if let Some((value, warning)) = read {
                assert_eq!(Some(value), text, "{}", setting.name());
                assert_eq!(warning, None, "{}", setting.name());
            }
        }
        assert_eq!(Settings::parse(|_| None).1, vec![], "an empty environment warns about nothing");
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = TABLE.iter().map(Setting::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
    }
}
