//! pgbench's PRNG (PostgreSQL's `pg_prng`: xoroshiro128** 1.0, seeded through SplitMix64), so
//! that the random functions draw from the same generator pgbench does.
//!
//! This follows `src/common/pg_prng.c` of PostgreSQL 15–17 step by step. (PostgreSQL's generator
//! is xoroshiro128**, two words of state — not xoshiro256**.)

/// The generator state; `Clone` so a transaction can be retried with the same random values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prng {
    s: [u64; 2],
}

/// pg_prng.c's `splitmix64`: fills the state from a 64-bit seed.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut val = *state;
    val = (val ^ (val >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    val = (val ^ (val >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    val ^ (val >> 31)
}

impl Prng {
    /// `pg_prng_seed`.
    pub fn seed(seed: u64) -> Prng {
        let mut seed = seed;
        let s0 = splitmix64(&mut seed);
        let s1 = splitmix64(&mut seed);
        // pg_prng_seed_check: an all-zero state is a fixed point; pg_prng puts Knuth's LCG
        // constants there instead.
        if s0 == 0 && s1 == 0 {
            return Prng {
                s: [0x5851_F42D_4C95_7F2D, 0x1405_7B7E_F767_814F],
            };
        }
        Prng { s: [s0, s1] }
    }

    /// `pg_prng_uint64`.
    pub fn next_u64(&mut self) -> u64 {
        // pg_prng.c's xoroshiro128ss
        let s0 = self.s[0];
        let sx = self.s[1] ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s[0] = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s[1] = sx.rotate_left(37);
        val
    }

    /// `pg_prng_uint64_range(min, max)` (inclusive). An empty range (`max <= min`) gives `min`
    /// without drawing, as pg_prng does.
    pub fn u64_range(&mut self, min: u64, max: u64) -> u64 {
        if max <= min {
            return min;
        }
        // pg_prng's bitmask rejection: keep the bits up to the range's leftmost one, retry
        // while the draw is above the range (fewer than two draws on average).
        let range = max - min;
        let rshift = range.leading_zeros();
        loop {
            let val = self.next_u64() >> rshift;
            if val <= range {
                return min + val;
            }
        }
    }

    /// `pg_prng_double`: uniform in [0, 1), from the top 52 bits of one draw.
    pub fn double(&mut self) -> f64 {
        let v = self.next_u64();
        // ldexp((double) (v >> 12), -52), exactly
        (v >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// `pg_prng_double_normal`: one standard normal value by the basic Box–Muller transform
    /// (two uniform draws in (0, 1], the sine branch), as pgbench's gaussian draws it.
    pub fn double_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_stays_inside_and_empty_range_gives_min() {
        let mut r = Prng::seed(1);
        for _ in 0..1000 {
            let v = r.u64_range(10, 13);
            assert!((10..=13).contains(&v), "{v}");
        }
        let before = r.clone();
        assert_eq!(r.u64_range(7, 7), 7);
        assert_eq!(r.u64_range(9, 3), 9);
        assert_eq!(r, before, "an empty range draws nothing");
        // the full range is one draw
        let mut a = Prng::seed(2);
        let mut b = a.clone();
        assert_eq!(a.u64_range(0, u64::MAX), b.next_u64());
    }

    #[test]
    fn double_is_in_unit_interval() {
        let mut r = Prng::seed(3);
        for _ in 0..10_000 {
            let d = r.double();
            assert!((0.0..1.0).contains(&d));
        }
    }
}
