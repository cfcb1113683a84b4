//! SQL text helpers. Statements live in `src/sql/**.sql`; a few carry `{name}` placeholders
//! (a content table, a column list) that are filled only from [`Fragment`]s, which can only be
//! built from validated identifiers and counts. Values are always bound, never spliced.

use crate::model::ident::Ident;

/// The prefix of every collection's content table (`ec_<slug>`); no system table has it.
pub const CONTENT_TABLE_PREFIX: &str = "ec_";

/// A piece of SQL text made only from validated identifiers and numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment(String);

impl Fragment {
    /// The content table of a collection: `"ec_<slug>"`.
    pub fn content_table(slug: &Ident) -> Fragment {
        Fragment(format!("\"{CONTENT_TABLE_PREFIX}{}\"", slug.as_str()))
    }

    /// A bare quoted identifier.
    pub fn ident(ident: &Ident) -> Fragment {
        Fragment(format!("\"{}\"", ident.as_str()))
    }

    /// An unquoted name built from a validated identifier plus a fixed prefix/suffix (index and
    /// trigger names).
    pub fn name(prefix: &'static str, ident: &Ident, suffix: &'static str) -> Fragment {
        Fragment(format!("\"{prefix}{}{suffix}\"", ident.as_str()))
    }

    /// A quoted generated name (a trigger name made from a digest): lowercase letters, digits
    /// and underscores only; anything else is a programming error caught by tests.
    ///
    /// # Panics
    /// When `name` has any other character.
    pub fn digest_name(name: &str) -> Fragment {
        assert!(
            name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "not a generated name: {name:?}"
        );
        Fragment(format!("\"{name}\""))
    }

    /// A fixed piece of SQL from an embedded `.sql` file (a shared predicate), never input.
    pub fn static_sql(sql: &'static str) -> Fragment {
        Fragment(sql.trim_end().to_owned())
    }

    /// A positional parameter: `?3`.
    pub fn parameter(index: usize) -> Fragment {
        Fragment(format!("?{index}"))
    }

    /// A column of a row of the enclosing statement, both named by the code: `media.id`.
    pub fn row_column(row: &'static str, column: &'static str) -> Fragment {
        Fragment(format!("{row}.{column}"))
    }

    /// `, "a", "b"` (leading comma; empty for no columns).
    pub fn trailing_columns<'a>(idents: impl IntoIterator<Item = &'a Ident>) -> Fragment {
        Fragment(idents.into_iter().map(|i| format!(", \"{}\"", i.as_str())).collect())
    }

    /// `, ?3, ?4` for `n` parameters numbered from `first` (leading comma; empty for zero).
    pub fn trailing_placeholders(first: usize, n: usize) -> Fragment {
        Fragment((first..first + n).map(|i| format!(", ?{i}")).collect())
    }

    /// `, "a" = ?3, "b" = ?4` (leading comma; empty for no columns).
    pub fn trailing_assignments<'a>(idents: impl IntoIterator<Item = &'a Ident>, first: usize) -> Fragment {
        Fragment(
            idents.into_iter().enumerate().map(|(k, i)| format!(", \"{}\" = ?{}", i.as_str(), first + k)).collect(),
        )
    }

    /// `0 + coalesce(length(CAST(e."a" AS BLOB)), 0) + …`: the bytes of these columns of row `e`.
    pub fn byte_sum<'a>(idents: impl IntoIterator<Item = &'a Ident>) -> Fragment {
        let terms: String =
            idents.into_iter().map(|i| format!(" + coalesce(length(CAST(e.\"{}\" AS BLOB)), 0)", i.as_str())).collect();
        Fragment(format!("0{terms}"))
    }

    /// One column definition: `"a" TEXT`.
    pub fn column_def(ident: &Ident, column_type: &'static str) -> Fragment {
        Fragment(format!("\"{}\" {column_type}", ident.as_str()))
    }

    /// `, "a" TEXT, "b" REAL` column definitions.
    pub fn trailing_column_defs<'a>(cols: impl IntoIterator<Item = (&'a Ident, &'static str)>) -> Fragment {
        Fragment(cols.into_iter().map(|(i, ty)| format!(", \"{}\" {ty}", i.as_str())).collect())
    }

    /// A fixed keyword chosen by the code (`INSERT`, `NEW`, …), never by input.
    pub fn keyword(word: &'static str) -> Fragment {
        Fragment(word.to_owned())
    }

    /// A validated identifier as an SQL string literal: `'posts'`.
    pub fn literal(ident: &Ident) -> Fragment {
        Fragment(format!("'{}'", ident.as_str()))
    }

    /// A generated id (lowercase letters and digits only) as an SQL string literal; `None` for
    /// anything else, so no stored value can inject SQL through it.
    pub fn id_literal(id: &str) -> Option<Fragment> {
        let ok = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        ok.then(|| Fragment(format!("'{id}'")))
    }

    /// A deleted field's column name (`_deleted_` and a generated id, see
    /// [`crate::model::field::deleted_column_name`]), quoted; `None` for anything else, so no
    /// stored value can inject SQL through it.
    pub fn deleted_column(name: &str) -> Option<Fragment> {
        crate::model::field::is_deleted_column_name(name).then(|| Fragment(format!("\"{name}\"")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Fills every `{name}` in `template` with its fragment, in the order given: a fragment may hold
/// a placeholder that a later one fills.
///
/// # Panics
/// When a placeholder is left unfilled: that is a programming error caught by the SQL-file test.
pub fn render(template: &'static str, vars: &[(&str, &Fragment)]) -> String {
    let mut out = template.to_owned();
    for (name, fragment) in vars {
        out = out.replace(&format!("{{{name}}}"), fragment.as_str());
    }
    assert!(!has_placeholder(&out), "unfilled placeholder in SQL template: {template}");
    out
}

fn has_placeholder(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    bytes.iter().enumerate().any(|(i, b)| *b == b'{' && bytes.get(i + 1).is_some_and(|c| c.is_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_are_built_from_identifiers_only() {
        let a = Ident::parse("title").unwrap();
        let b = Ident::parse("hero").unwrap();
        let sql = render(
            "UPDATE {table} SET version = version + 1{set} WHERE id = ?1",
            &[
                ("table", &Fragment::content_table(&Ident::parse("posts").unwrap())),
                ("set", &Fragment::trailing_assignments([&a, &b], 2)),
            ],
        );
        assert_eq!(sql, "UPDATE \"ec_posts\" SET version = version + 1, \"title\" = ?2, \"hero\" = ?3 WHERE id = ?1");
        assert_eq!(Fragment::trailing_placeholders(3, 2).as_str(), ", ?3, ?4");
        assert_eq!(Fragment::trailing_placeholders(3, 0).as_str(), "");
        assert_eq!(Fragment::parameter(3).as_str(), "?3");
        assert_eq!(Fragment::row_column("media", "id").as_str(), "media.id");
    }

    #[test]
    fn a_deleted_column_is_only_ever_a_generated_name() {
        let name = "_deleted_0123456789abcdef0123456789abcdef";
        assert_eq!(Fragment::deleted_column(name).unwrap().as_str(), format!("\"{name}\""));
        for bad in ["hero", "_deleted_x\" OR 1", "_deleted_0123456789abcdef0123456789abcdeF", ""] {
            assert!(Fragment::deleted_column(bad).is_none(), "{bad:?}");
        }
    }
}
