//! The CPU cost model: what projecting an entry costs the worker's own CPU, told from the data
//! (a worker cannot read its CPU clock), so the work lane sizes its jobs by CPU as it does by
//! statements and rows. Pure. The coefficients are calibrated natively by
//! `examples/core_cpu.rs` (see docs/cost-and-quotas.md, "CPU"), which fails when a measured
//! invocation costs more than the model says.

/// What a projection does that costs CPU: the bytes of source data it parses, extracts and
/// fingerprints (both variants), the candidate strings it looks up, and the rows it encodes
/// (occurrences and source rows written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuWork {
    /// Entries projected (each costs a fixed part: snapshot, planning, its observed row).
    pub entries: u64,
    /// Bytes of field values and draft data read.
    pub bytes: u64,
    /// Candidate strings looked up.
    pub candidates: u64,
    /// Occurrence and source rows encoded.
    pub rows: u64,
}

/// Microseconds of native core CPU per entry projected.
pub const ENTRY_US: f64 = 40.0;
/// Microseconds per MiB of source data (decoded, extracted, fingerprinted): at or above the
/// largest entry the API accepts projected alone in its slowest spelling (`core_cpu`).
pub const MIB_US: f64 = 3_900.0;
/// Microseconds per candidate string looked up.
pub const CANDIDATE_US: f64 = 10.0;
/// Microseconds per row encoded.
pub const ROW_US: f64 = 20.0;

/// The default of `MEDIA_USAGE_TICK_MAX_CPU_MS`: the modelled CPU a tick's projections may
/// spend, in milliseconds of native core CPU. The Free plan allows 10 ms per invocation; this
/// leaves room for the tick's own CPU ([`TICK_FIXED_MS`]) and for wasm running slower than
/// native ([`WASM_RATIO`]): (4 + 1.5) × 1.6 = 8.8 ms.
pub const DEFAULT_TICK_CPU_MS: f64 = 4.0;
/// How much longer the wasm build takes than the native one for the same work: measured 1.52
/// (the median over the extraction bench's bodies, and on rich entries parsed, extracted and
/// fingerprinted; `tests/bench/wasm_extraction.mjs`), rounded up.
pub const WASM_RATIO: f64 = 1.6;
/// What a tick costs besides its projections (the driver, the other lanes' steps, the log
/// write), measured natively: it is not spent from the CPU budget but is part of the margin.
pub const TICK_FIXED_MS: f64 = 1.5;

impl CpuWork {
    /// The work of one entry of `bytes` bytes, `candidates` candidate strings and `rows` rows.
    pub const fn entry(bytes: u64, candidates: u64, rows: u64) -> CpuWork {
        CpuWork { entries: 1, bytes, candidates, rows }
    }

    /// Both added.
    pub const fn plus(self, o: CpuWork) -> CpuWork {
        CpuWork {
            entries: self.entries + o.entries,
            bytes: self.bytes + o.bytes,
            candidates: self.candidates + o.candidates,
            rows: self.rows + o.rows,
        }
    }

    /// Its modelled CPU, in milliseconds of native core CPU.
    pub fn ms(self) -> f64 {
        (self.entries as f64 * ENTRY_US
            + self.bytes as f64 * MIB_US / 1_048_576.0
            + self.candidates as f64 * CANDIDATE_US
            + self.rows as f64 * ROW_US)
            / 1000.0
    }
}

/// The most bytes of source data one entry may have for its projection to fit `budget_ms`
/// alone (no candidates, no rows): a larger entry still runs, past the budget (see the work lane).
pub fn fitting_bytes(budget_ms: f64) -> u64 {
    let left_us = budget_ms * 1000.0 - ENTRY_US;
    if left_us <= 0.0 {
        return 0;
    }
    (left_us / MIB_US * 1_048_576.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_adds_each_kind_of_work_at_its_rate() {
        assert_eq!(CpuWork::default().ms(), 0.0);
        assert!((CpuWork::entry(0, 0, 0).ms() - ENTRY_US / 1000.0).abs() < 1e-9);
        assert!((CpuWork::entry(1_048_576, 0, 0).ms() - (ENTRY_US + MIB_US) / 1000.0).abs() < 1e-9);
        let two = CpuWork::entry(10, 2, 3).plus(CpuWork::entry(20, 1, 1));
        assert_eq!(two, CpuWork { entries: 2, bytes: 30, candidates: 3, rows: 4 });
        let expected = (2.0 * ENTRY_US + 30.0 * MIB_US / 1_048_576.0 + 3.0 * CANDIDATE_US + 4.0 * ROW_US) / 1000.0;
        assert!((two.ms() - expected).abs() < 1e-9);
    }

    #[test]
    fn the_bytes_that_fit_a_budget_alone_project_within_it() {
        let bytes = fitting_bytes(DEFAULT_TICK_CPU_MS);
        assert!(CpuWork::entry(bytes, 0, 0).ms() <= DEFAULT_TICK_CPU_MS);
        assert!(CpuWork::entry(bytes + 1024, 0, 0).ms() > DEFAULT_TICK_CPU_MS);
        assert_eq!(fitting_bytes(0.0), 0);
    }
}
