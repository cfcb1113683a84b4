//! Random identifiers and secrets (entry, media, collection and token ids, lease tokens).

/// 128 random bits as 32 lowercase hex characters.
pub fn new_id() -> String {
    hex::encode(random_bytes::<16>())
}

/// A time-sortable id: the milliseconds since the epoch as 12 hex digits, then 80 random bits
/// as 20 hex digits (32 characters; ids from later milliseconds sort after earlier ones).
pub fn new_sortable_id(now_ms: f64) -> String {
    let ms = if now_ms.is_finite() && now_ms > 0.0 { (now_ms as u64).min(0xFFFF_FFFF_FFFF) } else { 0 };
    format!("{ms:012x}{}", hex::encode(random_bytes::<10>()))
}

/// 256 random bits as 64 lowercase hex characters, for bearer-token secrets.
pub fn new_secret() -> String {
    hex::encode(random_bytes::<32>())
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // The OS/JS CSPRNG failing is not recoverable and never happens on supported platforms.
    getrandom::getrandom(&mut buf).expect("the platform random source is available");
    buf
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_hex_and_distinct() {
        let a = super::new_id();
        let b = super::new_id();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(super::new_secret().len(), 64);
        let (early, late) = (super::new_sortable_id(1_700_000_000_000.0), super::new_sortable_id(1_700_000_000_001.0));
        assert_eq!(early.len(), 32);
        assert!(early < late, "{early} {late}");
        assert!(early.starts_with("018bcfe56800"));
        assert_ne!(super::new_sortable_id(5.0), super::new_sortable_id(5.0));
    }
}
