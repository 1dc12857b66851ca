//! The specification's random functions (clause 4.3.2 and 2.1.6): uniform integers, a-strings and
//! n-strings, last names from syllables, and NURand with its run-time constants C.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The syllables last names are made of (clause 4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The three C constants of NURand (clause 2.1.6): for A = 255 (C_LAST), 1023 (C_ID) and 8191
/// (OL_I_ID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NuConstants {
    pub c_last: i64,
    pub c_id: i64,
    pub ol_i_id: i64,
}

impl NuConstants {
    /// Constants drawn at random, as the load uses them.
    pub fn draw(rng: &mut Gen) -> NuConstants {
        NuConstants {
            c_last: rng.int(0, 255),
            c_id: rng.int(0, 1023),
            ol_i_id: rng.int(0, 8191),
        }
    }

    /// The run's constants from the load's: C_LAST differs from the load's by a delta in 65..=119
    /// other than 96 and 112 (clause 2.1.6.1); C_ID and OL_I_ID may be the same.
    pub fn for_run(load: NuConstants, rng: &mut Gen) -> NuConstants {
        loop {
            let c_run = rng.int(0, 255);
            let delta = (c_run - load.c_last).abs();
            if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                return NuConstants {
                    c_last: c_run,
                    ..load
                };
            }
        }
    }
}

/// A seeded generator with the specification's functions.
pub struct Gen(ChaCha8Rng);

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A think time (clause 5.2.5.4): Tt = −ln(r) × `mean`, r uniform in (0, 1], cut at 10 ×
    /// `mean` as the clause allows; seconds.
    pub fn think_s(&mut self, mean: f64) -> f64 {
        // 1 − [0, 1) is (0, 1]: ln never sees 0.
        let r: f64 = 1.0 - self.0.random::<f64>();
        (-r.ln() * mean).min(10.0 * mean)
    }

    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        self.0.random_range(lo..=hi)
    }

    /// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y − x + 1)) + x, with C the
    /// constant for A.
    pub fn nurand(&mut self, a: i64, x: i64, y: i64, c: &NuConstants) -> i64 {
        let c = match a {
            255 => c.c_last,
            1023 => c.c_id,
            _ => c.ol_i_id,
        };
        (((self.int(0, a) | self.int(x, y)) + c) % (y - x + 1)) + x
    }

    /// A random a-string of `lo..=hi` alphanumeric characters.
    pub fn astring(&mut self, lo: usize, hi: usize) -> String {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let n = self.int(lo as i64, hi as i64) as usize;
        (0..n)
            .map(|_| ALNUM[self.int(0, ALNUM.len() as i64 - 1) as usize] as char)
            .collect()
    }

    /// A random n-string of `lo..=hi` digits.
    pub fn nstring(&mut self, lo: usize, hi: usize) -> String {
        let n = self.int(lo as i64, hi as i64) as usize;
        (0..n)
            .map(|_| (b'0' + self.int(0, 9) as u8) as char)
            .collect()
    }

    /// A zip code: four random digits and "11111" (clause 4.3.2.7).
    pub fn zip(&mut self) -> String {
        format!("{}11111", self.nstring(4, 4))
    }

    /// An a-string of `lo..=hi` characters that holds "ORIGINAL" at a random place 10 % of the
    /// time (I_DATA and S_DATA, clause 4.3.3.1).
    pub fn data_maybe_original(&mut self, lo: usize, hi: usize) -> String {
        let mut s = self.astring(lo, hi);
        if self.int(1, 10) == 1 {
            let at = self.int(0, (s.len() - 8) as i64) as usize;
            s.replace_range(at..at + 8, "ORIGINAL");
        }
        s
    }
}

/// The last name for a number 0..=999: its three digits' syllables (clause 4.3.2.3).
pub fn last_name(n: i64) -> String {
    let n = n.clamp(0, 999) as usize;
    format!(
        "{}{}{}",
        SYLLABLES[n / 100],
        SYLLABLES[(n / 10) % 10],
        SYLLABLES[n % 10]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_are_exponential_and_capped() {
        let mut g = Gen::new(3);
        let xs: Vec<f64> = (0..200_000).map(|_| g.think_s(12.0)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        // The cut at 120 s removes e^-10 of the mass: the mean stays 12 within sampling error.
        assert!((mean - 12.0).abs() < 0.15, "{mean}");
        assert!(xs.iter().all(|x| *x > 0.0 && *x <= 120.0));
        let over = xs.iter().filter(|x| **x > 12.0).count() as f64 / xs.len() as f64;
        assert!(
            (over - (-1.0f64).exp()).abs() < 0.01,
            "P(Tt > mean) = e^-1: {over}"
        );
    }

    #[test]
    fn last_names_as_the_spec_spells_them() {
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut g = Gen::new(7);
        let c = NuConstants::draw(&mut g);
        let mut hits = vec![0u32; 3000];
        for _ in 0..200_000 {
            let v = g.nurand(1023, 1, 3000, &c);
            assert!((1..=3000).contains(&v));
            hits[(v - 1) as usize] += 1;
        }
        // Uniform would give about 67 each; NURand's OR makes some ids far hotter than others.
        let max = *hits.iter().max().unwrap();
        let min = *hits.iter().min().unwrap();
        assert!(max > 4 * min.max(1), "max {max} min {min}");
    }

    #[test]
    fn run_constant_delta_is_valid() {
        let mut g = Gen::new(1);
        for _ in 0..100 {
            let load = NuConstants::draw(&mut g);
            let run = NuConstants::for_run(load, &mut g);
            let d = (run.c_last - load.c_last).abs();
            assert!((65..=119).contains(&d) && d != 96 && d != 112, "{d}");
            assert_eq!(run.c_id, load.c_id);
        }
    }

    #[test]
    fn original_in_a_tenth_of_data() {
        let mut g = Gen::new(3);
        let n = (0..10_000)
            .filter(|_| g.data_maybe_original(26, 50).contains("ORIGINAL"))
            .count();
        assert!((800..1200).contains(&n), "{n}");
    }
}
