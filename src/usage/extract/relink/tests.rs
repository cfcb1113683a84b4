//! The relink of a text: each spelling of an earlier key rewritten in its own form, and nothing
//! else.

use super::*;

fn earlier(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

/// `text` relinked from `old` to `new` under the public URL `public`.
fn relinked(text: &str, old: &[&str], new: &str, public: Option<&str>) -> Option<String> {
    let earlier = earlier(old);
    Rules::current(public).relink(text, KeyChange { earlier: &earlier, current: new })
}

fn rewrites(text: &str, expected: &str) {
    assert_eq!(
        relinked(text, &["old/a b.png"], "new/c d.png", Some("https://cdn.example.com/media")).as_deref(),
        Some(expected),
        "{text}"
    );
}

#[test]
fn every_spelling_of_an_earlier_key_is_rewritten_in_its_own_form() {
    for (text, expected) in [
        ("/_emdash/api/media/file/old/a%20b.png", "/_emdash/api/media/file/new/c%20d.png"),
        ("/_emdash/api/media/file/old%2Fa%20b.png", "/_emdash/api/media/file/new%2Fc%20d.png"),
        ("/_emdash/api/media/file/old%2fa%20b.png", "/_emdash/api/media/file/new%2fc%20d.png"),
        (
            "https://site.example/_emdash/api/media/file/old/a%20b.png?w=1#x",
            "https://site.example/_emdash/api/media/file/new/c%20d.png?w=1#x",
        ),
        ("https://cdn.example.com/media/old/a%20b.png", "https://cdn.example.com/media/new/c%20d.png"),
        ("//CDN.example.com:443/media/old/a%20b.png.", "//CDN.example.com:443/media/new/c%20d.png."),
        (
            "<img src=\"https://cdn.example.com/cdn-cgi/image/width=800,format=auto/media/old/a%20b.png\">",
            "<img src=\"https://cdn.example.com/cdn-cgi/image/width=800,format=auto/media/new/c%20d.png\">",
        ),
        (
            "https://x.example/cdn-cgi/image/w=80/_emdash/api/media/file/old/a%20b.png",
            "https://x.example/cdn-cgi/image/w=80/_emdash/api/media/file/new/c%20d.png",
        ),
        ("\\/_emdash\\/api\\/media\\/file\\/old\\/a%20b.png", "\\/_emdash\\/api\\/media\\/file\\/new\\/c%20d.png"),
        (
            "&#47;_emdash&#x2F;api&sol;media/file/old&#47;a%20b.png",
            "&#47;_emdash&#x2F;api&sol;media/file/new&#47;c%20d.png",
        ),
        (
            "/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fold%2Fa%2520b.png&w=800",
            "/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fnew%2Fc%2520d.png&w=800",
        ),
        (
            "srcset=\"/_emdash/api/media/file/old/a%20b.png 1x, /_emdash/api/media/file/old/a%20b.png 2x\"",
            "srcset=\"/_emdash/api/media/file/new/c%20d.png 1x, /_emdash/api/media/file/new/c%20d.png 2x\"",
        ),
        ("![alt](/_emdash/api/media/file/old/a%20b.png \"t\")", "![alt](/_emdash/api/media/file/new/c%20d.png \"t\")"),
    ] {
        rewrites(text, expected);
    }
}

#[test]
fn a_query_value_is_rewritten_percent_encoded() {
    let text = "/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fold.png&w=800";
    assert_eq!(
        relinked(text, &["old.png"], "dir/new 1.png", None).as_deref(),
        Some("/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fdir%2Fnew%25201.png&w=800")
    );
    let text = "/_image?w=8&amp;src=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fold.png";
    assert_eq!(
        relinked(text, &["old.png"], "new.png", None).as_deref(),
        Some("/_image?w=8&amp;src=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fnew.png")
    );
}

#[test]
fn a_plain_key_stays_plain_and_characters_that_end_a_url_are_encoded() {
    assert_eq!(
        relinked("see /_emdash/api/media/file/old.png, then", &["old.png"], "n\"e w%.png", None).as_deref(),
        Some("see /_emdash/api/media/file/n%22e%20w%25.png, then")
    );
    assert_eq!(
        relinked("/_emdash/api/media/file/old.png", &["old.png"], "dir/new.png", None).as_deref(),
        Some("/_emdash/api/media/file/dir/new.png")
    );
}

#[test]
fn json_text_is_rewritten_where_its_strings_hold_the_url() {
    let stored = r#"{"_type":"block","children":[{"text":"<a href=\"/_emdash/api/media/file/old.pdf\">x</a>"}],"k":"/_emdash\\/api\\/media\\/file\\/old.pdf"}"#;
    let expected = r#"{"_type":"block","children":[{"text":"<a href=\"/_emdash/api/media/file/new/v2.pdf\">x</a>"}],"k":"/_emdash\\/api\\/media\\/file\\/new\\/v2.pdf"}"#;
    assert_eq!(relinked(stored, &["old.pdf"], "new/v2.pdf", None).as_deref(), Some(expected));
    let parsed: serde_json::Value = serde_json::from_str(expected).unwrap();
    assert_eq!(parsed["k"], "/_emdash\\/api\\/media\\/file\\/new\\/v2.pdf");
}

#[test]
fn only_earlier_keys_of_the_item_are_rewritten() {
    for text in [
        "/_emdash/api/media/file/other.png",
        "/_emdash/api/media/file/old.png2",
        "/_emdash/api/media/file/cur.png",
        "https://other.example/media/old.png",
        "old.png",
        "/media/file/old.png",
    ] {
        assert_eq!(relinked(text, &["old.png"], "cur.png", Some("https://cdn.example.com/media")), None, "{text}");
    }
    // Several versions, and the current key left alone.
    assert_eq!(
        relinked(
            "/_emdash/api/media/file/v1.png /_emdash/api/media/file/v2.png /_emdash/api/media/file/v3.png",
            &["v1.png", "v2.png"],
            "v3.png",
            None
        )
        .as_deref(),
        Some("/_emdash/api/media/file/v3.png /_emdash/api/media/file/v3.png /_emdash/api/media/file/v3.png")
    );
    assert_eq!(relinked("/_emdash/api/media/file/old.png", &[], "cur.png", None), None, "no earlier keys");
}

#[test]
fn nothing_but_the_key_changes() {
    let prefix = "lorem <p class=\"x\">ipsum &amp; ";
    let suffix = "?w=1&amp;h=2#frag</p> dolor";
    let text = format!("{prefix}https://cdn.example.com/cdn-cgi/image/w=1/media/old.png{suffix}");
    let out = relinked(&text, &["old.png"], "new.png", Some("https://cdn.example.com/media")).unwrap();
    assert_eq!(out, format!("{prefix}https://cdn.example.com/cdn-cgi/image/w=1/media/new.png{suffix}"));
}

#[test]
fn a_rewritten_text_names_the_current_key_where_it_named_an_earlier_one() {
    let change_set = earlier(&["old/a b.png"]);
    let change = KeyChange { earlier: &change_set, current: "new/c d.png" };
    let public = Public::parse(Some("https://cdn.example.com/media"));
    let text =
        "<img srcset=\"/_emdash/api/media/file/old/a%20b.png 1x\"> https://cdn.example.com/media/old%2Fa%20b.png";
    let out = relink(text, &public, change).unwrap();
    let mut names = Vec::new();
    Scanner::new(&public).string(&out, &mut names);
    let keys: Vec<&Vec<String>> =
        names.iter().filter_map(|n| if let Names::Key(r) = n { Some(r) } else { None }).collect();
    assert!(!keys.is_empty());
    for readings in keys {
        assert!(readings.iter().any(|r| r == "new/c d.png"), "{readings:?}");
        assert!(!readings.iter().any(|r| r == "old/a b.png"), "{readings:?}");
    }
}
