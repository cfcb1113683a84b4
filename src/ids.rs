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
    #[cfg(not(target_arch = "wasm32"))]
    if seeded::fill(&mut buf) {
        return buf;
    }
    // The OS/JS CSPRNG failing is not recoverable and never happens on supported platforms.
    getrandom::getrandom(&mut buf).expect("the platform random source is available");
    buf
}

/// Native builds only: ids and secrets drawn from a seeded sequence on one thread, so that a
/// run of the simulator (`examples/sim`) replays exactly from its seed. The worker never seeds
/// it; nothing seeded is secret.
#[cfg(not(target_arch = "wasm32"))]
pub mod seeded {
    use std::cell::Cell;

    thread_local! {
        static STATE: Cell<Option<u64>> = const { Cell::new(None) };
    }

    /// From now on this thread's ids and secrets come from `seed` (`None`: the platform's random
    /// source again).
    pub fn seed_this_thread(seed: Option<u64>) {
        STATE.with(|s| s.set(seed));
    }

    /// Fills `buf` from the seeded sequence (SplitMix64) when this thread is seeded.
    pub(super) fn fill(buf: &mut [u8]) -> bool {
        STATE.with(|s| {
            let Some(mut state) = s.get() else { return false };
            for chunk in buf.chunks_mut(8) {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
            }
            s.set(Some(state));
            true
        })
    }
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

    #[test]
    fn a_seeded_thread_draws_the_same_ids_again() {
        let draw = |seed| {
            super::seeded::seed_this_thread(Some(seed));
            let ids = (super::new_id(), super::new_secret());
            super::seeded::seed_this_thread(None);
            ids
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        assert_ne!(draw(7).0, draw(7).1[..32], "a draw moves the sequence on");
        assert_ne!(super::new_id(), super::new_id(), "unseeded again");
    }
}
