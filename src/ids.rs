//! Random identifiers and secrets (entry, media, collection and token ids, lease tokens).

/// 128 random bits as 32 lowercase hex characters.
pub fn new_id() -> String {
    hex::encode(random_bytes::<16>())
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
    }
}
