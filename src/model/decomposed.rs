//! The Latin letters and digits inside precomposed characters: what Unicode's canonical
//! decomposition (NFD) of a character holds of `a-z` and `0-9`, for the slugs EmDash's
//! `slugify` makes (`é` is `e` plus a combining acute accent, which it drops; `ﬁ` decomposes only
//! by compatibility, so it keeps nothing). A table rather than a normaliser: a few kilobytes in
//! the worker instead of the normalisation data. Checked against `icu_normalizer` for every
//! character (`every_character_keeps_what_its_nfd_holds_of_a_z_and_0_9`, which prints the table
//! when Unicode changes it).

/// Every character beyond ASCII whose NFD holds a lowercase ASCII letter or a digit (never more
/// than one), with it, in code point order.
#[rustfmt::skip]
const TABLE: &[(char, u8)] = &[
    ('\u{e0}', b'a'), ('\u{e1}', b'a'), ('\u{e2}', b'a'), ('\u{e3}', b'a'), ('\u{e4}', b'a'),
    ('\u{e5}', b'a'), ('\u{e7}', b'c'), ('\u{e8}', b'e'), ('\u{e9}', b'e'), ('\u{ea}', b'e'),
    ('\u{eb}', b'e'), ('\u{ec}', b'i'), ('\u{ed}', b'i'), ('\u{ee}', b'i'), ('\u{ef}', b'i'),
    ('\u{f1}', b'n'), ('\u{f2}', b'o'), ('\u{f3}', b'o'), ('\u{f4}', b'o'), ('\u{f5}', b'o'),
    ('\u{f6}', b'o'), ('\u{f9}', b'u'), ('\u{fa}', b'u'), ('\u{fb}', b'u'), ('\u{fc}', b'u'),
    ('\u{fd}', b'y'), ('\u{ff}', b'y'), ('\u{101}', b'a'), ('\u{103}', b'a'), ('\u{105}', b'a'),
    ('\u{107}', b'c'), ('\u{109}', b'c'), ('\u{10b}', b'c'), ('\u{10d}', b'c'), ('\u{10f}', b'd'),
    ('\u{113}', b'e'), ('\u{115}', b'e'), ('\u{117}', b'e'), ('\u{119}', b'e'), ('\u{11b}', b'e'),
    ('\u{11d}', b'g'), ('\u{11f}', b'g'), ('\u{121}', b'g'), ('\u{123}', b'g'), ('\u{125}', b'h'),
    ('\u{129}', b'i'), ('\u{12b}', b'i'), ('\u{12d}', b'i'), ('\u{12f}', b'i'), ('\u{135}', b'j'),
    ('\u{137}', b'k'), ('\u{13a}', b'l'), ('\u{13c}', b'l'), ('\u{13e}', b'l'), ('\u{144}', b'n'),
    ('\u{146}', b'n'), ('\u{148}', b'n'), ('\u{14d}', b'o'), ('\u{14f}', b'o'), ('\u{151}', b'o'),
    ('\u{155}', b'r'), ('\u{157}', b'r'), ('\u{159}', b'r'), ('\u{15b}', b's'), ('\u{15d}', b's'),
    ('\u{15f}', b's'), ('\u{161}', b's'), ('\u{163}', b't'), ('\u{165}', b't'), ('\u{169}', b'u'),
    ('\u{16b}', b'u'), ('\u{16d}', b'u'), ('\u{16f}', b'u'), ('\u{171}', b'u'), ('\u{173}', b'u'),
    ('\u{175}', b'w'), ('\u{177}', b'y'), ('\u{17a}', b'z'), ('\u{17c}', b'z'), ('\u{17e}', b'z'),
    ('\u{1a1}', b'o'), ('\u{1b0}', b'u'), ('\u{1ce}', b'a'), ('\u{1d0}', b'i'), ('\u{1d2}', b'o'),
    ('\u{1d4}', b'u'), ('\u{1d6}', b'u'), ('\u{1d8}', b'u'), ('\u{1da}', b'u'), ('\u{1dc}', b'u'),
    ('\u{1df}', b'a'), ('\u{1e1}', b'a'), ('\u{1e7}', b'g'), ('\u{1e9}', b'k'), ('\u{1eb}', b'o'),
    ('\u{1ed}', b'o'), ('\u{1f0}', b'j'), ('\u{1f5}', b'g'), ('\u{1f9}', b'n'), ('\u{1fb}', b'a'),
    ('\u{201}', b'a'), ('\u{203}', b'a'), ('\u{205}', b'e'), ('\u{207}', b'e'), ('\u{209}', b'i'),
    ('\u{20b}', b'i'), ('\u{20d}', b'o'), ('\u{20f}', b'o'), ('\u{211}', b'r'), ('\u{213}', b'r'),
    ('\u{215}', b'u'), ('\u{217}', b'u'), ('\u{219}', b's'), ('\u{21b}', b't'), ('\u{21f}', b'h'),
    ('\u{227}', b'a'), ('\u{229}', b'e'), ('\u{22b}', b'o'), ('\u{22d}', b'o'), ('\u{22f}', b'o'),
    ('\u{231}', b'o'), ('\u{233}', b'y'), ('\u{1e01}', b'a'), ('\u{1e03}', b'b'),
    ('\u{1e05}', b'b'), ('\u{1e07}', b'b'), ('\u{1e09}', b'c'), ('\u{1e0b}', b'd'),
    ('\u{1e0d}', b'd'), ('\u{1e0f}', b'd'), ('\u{1e11}', b'd'), ('\u{1e13}', b'd'),
    ('\u{1e15}', b'e'), ('\u{1e17}', b'e'), ('\u{1e19}', b'e'), ('\u{1e1b}', b'e'),
    ('\u{1e1d}', b'e'), ('\u{1e1f}', b'f'), ('\u{1e21}', b'g'), ('\u{1e23}', b'h'),
    ('\u{1e25}', b'h'), ('\u{1e27}', b'h'), ('\u{1e29}', b'h'), ('\u{1e2b}', b'h'),
    ('\u{1e2d}', b'i'), ('\u{1e2f}', b'i'), ('\u{1e31}', b'k'), ('\u{1e33}', b'k'),
    ('\u{1e35}', b'k'), ('\u{1e37}', b'l'), ('\u{1e39}', b'l'), ('\u{1e3b}', b'l'),
    ('\u{1e3d}', b'l'), ('\u{1e3f}', b'm'), ('\u{1e41}', b'm'), ('\u{1e43}', b'm'),
    ('\u{1e45}', b'n'), ('\u{1e47}', b'n'), ('\u{1e49}', b'n'), ('\u{1e4b}', b'n'),
    ('\u{1e4d}', b'o'), ('\u{1e4f}', b'o'), ('\u{1e51}', b'o'), ('\u{1e53}', b'o'),
    ('\u{1e55}', b'p'), ('\u{1e57}', b'p'), ('\u{1e59}', b'r'), ('\u{1e5b}', b'r'),
    ('\u{1e5d}', b'r'), ('\u{1e5f}', b'r'), ('\u{1e61}', b's'), ('\u{1e63}', b's'),
    ('\u{1e65}', b's'), ('\u{1e67}', b's'), ('\u{1e69}', b's'), ('\u{1e6b}', b't'),
    ('\u{1e6d}', b't'), ('\u{1e6f}', b't'), ('\u{1e71}', b't'), ('\u{1e73}', b'u'),
    ('\u{1e75}', b'u'), ('\u{1e77}', b'u'), ('\u{1e79}', b'u'), ('\u{1e7b}', b'u'),
    ('\u{1e7d}', b'v'), ('\u{1e7f}', b'v'), ('\u{1e81}', b'w'), ('\u{1e83}', b'w'),
    ('\u{1e85}', b'w'), ('\u{1e87}', b'w'), ('\u{1e89}', b'w'), ('\u{1e8b}', b'x'),
    ('\u{1e8d}', b'x'), ('\u{1e8f}', b'y'), ('\u{1e91}', b'z'), ('\u{1e93}', b'z'),
    ('\u{1e95}', b'z'), ('\u{1e96}', b'h'), ('\u{1e97}', b't'), ('\u{1e98}', b'w'),
    ('\u{1e99}', b'y'), ('\u{1ea1}', b'a'), ('\u{1ea3}', b'a'), ('\u{1ea5}', b'a'),
    ('\u{1ea7}', b'a'), ('\u{1ea9}', b'a'), ('\u{1eab}', b'a'), ('\u{1ead}', b'a'),
    ('\u{1eaf}', b'a'), ('\u{1eb1}', b'a'), ('\u{1eb3}', b'a'), ('\u{1eb5}', b'a'),
    ('\u{1eb7}', b'a'), ('\u{1eb9}', b'e'), ('\u{1ebb}', b'e'), ('\u{1ebd}', b'e'),
    ('\u{1ebf}', b'e'), ('\u{1ec1}', b'e'), ('\u{1ec3}', b'e'), ('\u{1ec5}', b'e'),
    ('\u{1ec7}', b'e'), ('\u{1ec9}', b'i'), ('\u{1ecb}', b'i'), ('\u{1ecd}', b'o'),
    ('\u{1ecf}', b'o'), ('\u{1ed1}', b'o'), ('\u{1ed3}', b'o'), ('\u{1ed5}', b'o'),
    ('\u{1ed7}', b'o'), ('\u{1ed9}', b'o'), ('\u{1edb}', b'o'), ('\u{1edd}', b'o'),
    ('\u{1edf}', b'o'), ('\u{1ee1}', b'o'), ('\u{1ee3}', b'o'), ('\u{1ee5}', b'u'),
    ('\u{1ee7}', b'u'), ('\u{1ee9}', b'u'), ('\u{1eeb}', b'u'), ('\u{1eed}', b'u'),
    ('\u{1eef}', b'u'), ('\u{1ef1}', b'u'), ('\u{1ef3}', b'y'), ('\u{1ef5}', b'y'),
    ('\u{1ef7}', b'y'), ('\u{1ef9}', b'y'),
];

/// The lowercase ASCII letter or digit in `ch`'s canonical decomposition, if any.
pub fn ascii_in(ch: char) -> Option<char> {
    TABLE.binary_search_by_key(&ch, |(c, _)| *c).ok().map(|i| char::from(TABLE[i].1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NFD keeps of `a-z` and `0-9` in `ch`.
    fn nfd_ascii(nfd: &icu_normalizer::DecomposingNormalizerBorrowed<'_>, ch: char) -> Vec<char> {
        nfd.normalize(&ch.to_string()).chars().filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit()).collect()
    }

    #[test]
    fn every_character_keeps_what_its_nfd_holds_of_a_z_and_0_9() {
        let nfd = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd();
        let mut table = Vec::new();
        let mut wrong = Vec::new();
        for ch in (0x80..=0x10FFFF).filter_map(char::from_u32) {
            let kept = nfd_ascii(&nfd, ch);
            assert!(kept.len() <= 1, "{ch:?} holds {kept:?}");
            if let Some(&k) = kept.first() {
                table.push(format!("('\\u{{{:x}}}', b'{k}')", u32::from(ch)));
            }
            if ascii_in(ch) != kept.first().copied() {
                wrong.push(ch);
            }
            // Nothing beyond ASCII decomposes into a separator (other ASCII, such as U+037E's
            // `;`, is dropped like the character itself).
            let d = nfd.normalize(&ch.to_string()).into_owned();
            assert!(!d.contains(['_', '-']), "{ch:?}");
            assert!(ch.is_whitespace() || !d.chars().any(char::is_whitespace), "{ch:?}: {d:?}");
        }
        assert!(wrong.is_empty(), "the table differs at {wrong:?}; it is:\n{}", table.join(", "));
    }
}
