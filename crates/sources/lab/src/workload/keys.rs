//! Key distributions of the built-in workloads (`--dist`): uniform, Zipf, exponential and
//! Gaussian, drawn by pgbench's own generators (`dbscope_pgscript::random`, the functions a script's
//! `random_zipfian`, `random_exponential` and `random_gaussian` call), so a built-in workload and
//! a pgbench script with the same parameter draw keys alike.
//!
//! One exception: pgbench's Zipf generator takes s in [1.001, 1000] only (its rejection method
//! needs s > 1); the seed experiments' `zipf:0.99` and any s below 1.001 draw from
//! `rand_distr::Zipf` (rejection-inversion, any s > 0), as dbscope always did.

use std::str::FromStr;

use dbscope_pgscript::random;
use dbscope_pgscript::Prng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};

use crate::error::Error;

/// Smallest s pgbench's Zipf generator takes (pgbench's `MIN_ZIPFIAN_PARAM`).
pub const PGBENCH_MIN_ZIPF: f64 = 1.001;
/// Largest s (pgbench's `MAX_ZIPFIAN_PARAM`).
pub const MAX_ZIPF: f64 = 1000.0;

/// How keys are drawn from 1..=N.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDist {
    /// Every key equally likely (`random`).
    Uniform,
    /// Zipf with exponent `s` over ranks 1..=N: key 1 is the hottest (`random_zipfian`).
    Zipf(f64),
    /// Exponential with this parameter: key 1 the most likely (`random_exponential`).
    Exponential(f64),
    /// Gaussian around the middle key, this many standard deviations to each end
    /// (`random_gaussian`).
    Gaussian(f64),
}

impl FromStr for KeyDist {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = |why: &str| {
            Error::invalid(
                "dist",
                format!(
                    "{s:?}: {why}expected `uniform`, `zipf:S` (0 < S ≤ 1000, e.g. zipf:0.99), \
                     `exponential:P` (P > 0) or `gaussian:P` (P ≥ 2)"
                ),
            )
        };
        if s == "uniform" {
            return Ok(KeyDist::Uniform);
        }
        let (kind, p) = s.split_once(':').ok_or_else(|| bad(""))?;
        let p: f64 = p
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite())
            .ok_or_else(|| bad("the parameter is not a number; "))?;
        match kind {
            "zipf" if p > 0.0 && p <= MAX_ZIPF => Ok(KeyDist::Zipf(p)),
            "exponential" if p > 0.0 => Ok(KeyDist::Exponential(p)),
            "gaussian" if p >= 2.0 => Ok(KeyDist::Gaussian(p)),
            "zipf" | "exponential" | "gaussian" => Err(bad("the parameter is out of range; ")),
            _ => Err(bad("")),
        }
    }
}

impl std::fmt::Display for KeyDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyDist::Uniform => write!(f, "uniform"),
            KeyDist::Zipf(s) => write!(f, "zipf:{s}"),
            KeyDist::Exponential(p) => write!(f, "exponential:{p}"),
            KeyDist::Gaussian(p) => write!(f, "gaussian:{p}"),
        }
    }
}

/// A seeded stream of keys in 1..=N.
#[derive(Clone, Debug)]
pub struct KeyGen {
    dist: KeyDist,
    n: u64,
    prng: Prng,
    /// Zipf below pgbench's range: rand_distr's generator and its own random source.
    small_zipf: Option<(Zipf<f64>, ChaCha8Rng)>,
}

impl KeyGen {
    /// Keys from 1..=`n` (n ≥ 1) drawn by `dist`, seeded.
    pub fn new(dist: KeyDist, n: u64, seed: u64) -> KeyGen {
        let n = n.max(1);
        let small_zipf = match dist {
            KeyDist::Zipf(s) if s < PGBENCH_MIN_ZIPF => Zipf::new(n as f64, s)
                .ok()
                .map(|z| (z, ChaCha8Rng::seed_from_u64(seed))),
            _ => None,
        };
        KeyGen {
            dist,
            n,
            prng: Prng::seed(seed),
            small_zipf,
        }
    }

    /// The next key.
    pub fn next_key(&mut self) -> u64 {
        let max = self.n.min(i64::MAX as u64) as i64;
        let k = match (self.dist, &mut self.small_zipf) {
            (KeyDist::Zipf(_), Some((z, rng))) => z.sample(rng) as i64,
            (KeyDist::Uniform, _) => random::uniform(&mut self.prng, 1, max),
            (KeyDist::Zipf(s), None) => random::zipfian(&mut self.prng, 1, max, s),
            (KeyDist::Exponential(p), _) => random::exponential(&mut self.prng, 1, max, p),
            (KeyDist::Gaussian(p), _) => random::gaussian(&mut self.prng, 1, max, p),
        };
        (k.max(1) as u64).min(self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(dist: &str, n: u64, seed: u64) -> Vec<u64> {
        let mut g = KeyGen::new(dist.parse().unwrap(), n, seed);
        (0..20_000).map(|_| g.next_key()).collect()
    }

    /// Every distribution stays in 1..=N, is seeded (the same seed draws the same keys, another
    /// seed others), and has its shape: Zipf and exponential favour the low keys, Gaussian the
    /// middle, uniform none.
    #[test]
    fn keys_are_in_range_seeded_and_shaped() {
        let n = 1000u64;
        for dist in [
            "uniform",
            "zipf:0.99",
            "zipf:1.5",
            "exponential:5",
            "gaussian:3",
        ] {
            let a = draw(dist, n, 7);
            assert_eq!(a, draw(dist, n, 7), "{dist}: seeded");
            assert_ne!(a, draw(dist, n, 8), "{dist}: another seed");
            assert!(a.iter().all(|k| (1..=n).contains(k)), "{dist}: in range");
            let share = |lo: u64, hi: u64| {
                a.iter().filter(|&&k| (lo..=hi).contains(&k)).count() as f64 / a.len() as f64
            };
            let low = share(1, 10);
            let middle = share(451, 550);
            match dist {
                // 1% of the keys, 1% of the draws.
                "uniform" => assert!((0.005..0.016).contains(&low), "{dist}: {low}"),
                // Zipf(0.99) over 1,000 keys puts about 38% in the top 10; Zipf(1.5) about 75%.
                "zipf:0.99" => assert!(low > 0.30, "{dist}: {low}"),
                "zipf:1.5" => assert!(low > 0.65, "{dist}: {low}"),
                // P(k ≤ 10) = (1 − e^(−5·10/1000)) / (1 − e^(−5)) ≈ 4.9%, 5× uniform.
                "exponential:5" => assert!((0.04..0.06).contains(&low), "{dist}: {low}"),
                // 1,000 keys span ±3 sd, so the middle 100 keys are ±0.3 sd: 2Φ(0.3) − 1 ≈ 23.6%,
                // 2.4× uniform.
                "gaussian:3" => assert!((0.21..0.26).contains(&middle), "{dist}: {middle}"),
                _ => unreachable!(),
            }
        }
    }

    #[test]
    fn distributions_parse_with_pgbench_ranges() {
        assert_eq!("zipf:0.99".parse::<KeyDist>().unwrap(), KeyDist::Zipf(0.99));
        assert_eq!(
            "exponential:2.5".parse::<KeyDist>().unwrap(),
            KeyDist::Exponential(2.5)
        );
        assert_eq!(
            "gaussian:2".parse::<KeyDist>().unwrap(),
            KeyDist::Gaussian(2.0)
        );
        for bad in [
            "zipf:1001",
            "gaussian:1.9",
            "exponential:-1",
            "poisson:3",
            "zipf:inf",
        ] {
            assert!(bad.parse::<KeyDist>().is_err(), "{bad}");
        }
        for d in ["uniform", "zipf:1.5", "exponential:3", "gaussian:4"] {
            assert_eq!(d.parse::<KeyDist>().unwrap().to_string(), d);
        }
    }
}
