//! pgbench's PRNG (PostgreSQL's `pg_prng`: xoshiro256**, seeded through SplitMix64), so that the
//! random functions draw from the same generator pgbench does.

/// The generator state; `Clone` so a transaction can be retried with the same random values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prng {
    s: [u64; 4],
}

impl Prng {
    /// `pg_prng_seed`.
    pub fn seed(seed: u64) -> Prng {
        let _ = seed;
        todo!("helper")
    }
    /// `pg_prng_uint64`.
    pub fn next_u64(&mut self) -> u64 {
        todo!("helper")
    }
    /// `pg_prng_uint64_range(min, max)` (inclusive).
    pub fn u64_range(&mut self, min: u64, max: u64) -> u64 {
        let _ = (min, max);
        todo!("helper")
    }
    /// `pg_prng_double`: uniform in [0, 1).
    pub fn double(&mut self) -> f64 {
        todo!("helper")
    }
}
