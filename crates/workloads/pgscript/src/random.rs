//! pgbench's random generators over [`Prng`] (`getrand`, `getExponentialRand`,
//! `getGaussianRand`, `getZipfianRand`), shared by the script functions and the built-in
//! workloads' `--dist`; and its deterministic helpers `permute`, `getHashFnv1a`,
//! `getHashMurmur2`. Each follows pgbench.c of PostgreSQL 15–17 operation by operation, so the
//! same generator state gives the same value.

use crate::error::EvalError;
use crate::prng::Prng;

/// pgbench's MIN_GAUSSIAN_PARAM.
pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;
/// pgbench's MIN_ZIPFIAN_PARAM (pgbench 13+ dropped s < 1).
pub const MIN_ZIPFIAN_PARAM: f64 = 1.001;
/// pgbench's MAX_ZIPFIAN_PARAM.
pub const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

/// `random(min, max)`: uniform integer in [min, max] (`getrand`). The range must have been
/// [`check`]ed; outside it the result is meaningless but nothing panics.
pub fn uniform(rng: &mut Prng, min: i64, max: i64) -> i64 {
    min.wrapping_add(rng.u64_range(0, max.wrapping_sub(min) as u64) as i64)
}

/// `(int64) ((max - min + 1) * rand)` added to `min`, with rand in [0, 1).
fn scale(min: i64, max: i64, rand: f64) -> i64 {
    let n = max.wrapping_sub(min).wrapping_add(1) as f64;
    min.wrapping_add((n * rand) as i64)
}

/// `random_exponential(min, max, parameter)` (parameter > 0): `getExponentialRand`, inverting
/// the exponential CDF truncated at `exp(-parameter)`.
pub fn exponential(rng: &mut Prng, min: i64, max: i64, parameter: f64) -> i64 {
    let cut = (-parameter).exp();
    // pg_prng_double is in [0, 1); uniform in (0, 1]
    let uniform = 1.0 - rng.double();
    let rand = -(cut + (1.0 - cut) * uniform).ln() / parameter;
    scale(min, max, rand)
}

/// `random_gaussian(min, max, parameter)` (parameter ≥ 2.0): `getGaussianRand`, drawing normal
/// values (Box–Muller, [`Prng::double_normal`]) until one is in [-parameter, parameter).
pub fn gaussian(rng: &mut Prng, min: i64, max: i64, parameter: f64) -> i64 {
    let stdev = loop {
        let s = rng.double_normal();
        // a NaN parameter would loop forever in pgbench; check() refuses it
        if !(s < -parameter || s >= parameter) || parameter.is_nan() {
            break s;
        }
    };
    let rand = (stdev + parameter) / (parameter * 2.0);
    scale(min, max, rand)
}

/// `random_zipfian(min, max, s)` (1.001 ≤ s ≤ 1000, as pgbench 13+ allows): `getZipfianRand`,
/// the rejection method of Devroye, "Non-Uniform Random Variate Generation", p. 550–551
/// (`computeIterativeZipfian`).
pub fn zipfian(rng: &mut Prng, min: i64, max: i64, s: f64) -> i64 {
    let n = max.wrapping_sub(min).wrapping_add(1);
    min.wrapping_sub(1)
        .wrapping_add(iterative_zipfian(rng, n, s))
}

fn iterative_zipfian(rng: &mut Prng, n: i64, s: f64) -> i64 {
    if n <= 1 || s.is_nan() || s <= 1.0 {
        return 1;
    }
    let b = 2f64.powf(s - 1.0);
    loop {
        let u = rng.double();
        let v = rng.double();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        // reject if too large or out of bound
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            return x as i64;
        }
    }
}

/// `hash_fnv1a(val, seed)`: pgbench's `getHashFnv1a`, FNV-1a over the value's 8 bytes (low
/// first), the offset basis xor-ed with the seed.
pub fn hash_fnv1a(val: i64, seed: u64) -> i64 {
    const FNV_PRIME: u64 = 0x100_0000_01b3;
    const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    let mut result = FNV_OFFSET_BASIS ^ seed;
    let mut v = val;
    for _ in 0..8 {
        let octet = (v & 0xff) as u64;
        // an arithmetic shift, as pgbench's on int64
        v >>= 8;
        result = (result ^ octet).wrapping_mul(FNV_PRIME);
    }
    result as i64
}

/// `hash(val, seed)` and `hash_murmur2(val, seed)`: pgbench's `getHashMurmur2`, 64-bit
/// MurmurHash2 of one 8-byte value.
pub fn hash_murmur2(val: i64, seed: u64) -> i64 {
    const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
    const MM2_MUL_TIMES_8: u64 = 0x3525_3c9a_de8f_4ca8;
    const MM2_ROT: u32 = 47;
    let mut result = seed ^ MM2_MUL_TIMES_8;
    let mut k = val as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    result ^= k;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result as i64
}

/// `permute(val, size, seed)`: pgbench's pseudorandom permutation of [0, size) — six rounds
/// of a random odd multiply, xor and rotate on overlapping lower and upper halves, then a
/// random offset — with its own generator seeded by `seed`. `size < 2` gives 0.
pub fn permute(val: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let mut rng = Prng::seed(seed as u64);
    let size = size as u64;
    let mut v = (val as u64) % size;
    // mask to work modulo the largest power of 2 not above size
    let masklen = 63 - size.leading_zeros();
    let mask = (1u64 << masklen) - 1;
    for _ in 0..6 {
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        if v <= mask {
            v = (v.wrapping_mul(m) ^ r) & mask;
            v = ((v << 1) & mask) | (v >> (masklen - 1));
        }
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        let mut t = size - 1 - v;
        if t <= mask {
            t = (t.wrapping_mul(m) ^ r) & mask;
            t = ((t << 1) & mask) | (t >> (masklen - 1));
            v = size - 1 - t;
        }
        let r = rng.u64_range(0, size - 1);
        // v, r < size < 2^63: the sum cannot overflow
        v = (v + r) % size;
    }
    v as i64
}

/// A key distribution for the built-in workloads (`--dist uniform|zipf:S|exponential:P|gaussian:P`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// `random`
    Uniform,
    /// `random_zipfian` with this s.
    Zipf(f64),
    /// `random_exponential` with this parameter.
    Exponential(f64),
    /// `random_gaussian` with this parameter.
    Gaussian(f64),
}

impl Dist {
    /// Parses `uniform`, `zipf:S`, `exponential:P`, `gaussian:P`, checking the parameter's range as
    /// the script functions do.
    pub fn parse(s: &str) -> Result<Dist, String> {
        let (kind, param) = match s.split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (s, None),
        };
        let number = |func: &str| -> Result<f64, String> {
            let p = param.ok_or_else(|| {
                format!("distribution \"{s}\": {kind} needs a parameter ({kind}:P)")
            })?;
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("distribution \"{s}\": \"{p}\" is not a number"))?;
            check(func, 1, 2, Some(v))
                .map_err(|e| format!("distribution \"{s}\": {}", e.message))?;
            Ok(v)
        };
        match kind {
            "uniform" if param.is_none() => Ok(Dist::Uniform),
            "zipf" | "zipfian" => Ok(Dist::Zipf(number("random_zipfian")?)),
            "exponential" => Ok(Dist::Exponential(number("random_exponential")?)),
            "gaussian" => Ok(Dist::Gaussian(number("random_gaussian")?)),
            _ => Err(format!(
                "unknown distribution \"{s}\": expected uniform, zipf:S, exponential:P or gaussian:P"
            )),
        }
    }
    /// Draws a key in [min, max].
    pub fn draw(&self, rng: &mut Prng, min: i64, max: i64) -> i64 {
        match *self {
            Dist::Uniform => uniform(rng, min, max),
            Dist::Zipf(s) => zipfian(rng, min, max, s),
            Dist::Exponential(p) => exponential(rng, min, max, p),
            Dist::Gaussian(p) => gaussian(rng, min, max, p),
        }
    }
}

/// `%f` as PostgreSQL's snprintf writes it.
fn f6(d: f64) -> String {
    match crate::value::special_double(d) {
        Some(s) => s.to_string(),
        None => format!("{d:.6}"),
    }
}

/// Checks the arguments of a random function before drawing, with pgbench's messages:
/// `empty range given to random`, `random range is too large` (max − min + 1 must fit in 64
/// bits), `gaussian parameter must be at least 2.000000 (not 1.500000)`,
/// `zipfian parameter must be in range [1.001, 1000] (not 0.500000)`,
/// `exponential parameter must be greater than zero (not 0.000000)`. `func` is the script
/// function's name (`random`, `random_exponential`, `random_gaussian`, `random_zipfian`); the
/// parameter is checked when given. A NaN parameter is refused too (pgbench would loop forever
/// or return garbage). Class `script:range`.
pub fn check(func: &str, min: i64, max: i64, parameter: Option<f64>) -> Result<(), EvalError> {
    let fail = |message: String| {
        Err(EvalError {
            class: "script:range",
            message,
        })
    };
    if min > max {
        return fail("empty range given to random".to_string());
    }
    if max
        .checked_sub(min)
        .and_then(|d| d.checked_add(1))
        .is_none()
    {
        return fail("random range is too large".to_string());
    }
    let Some(p) = parameter else { return Ok(()) };
    match func {
        "random_gaussian" if p.is_nan() || p < MIN_GAUSSIAN_PARAM => fail(format!(
            "gaussian parameter must be at least {} (not {})",
            f6(MIN_GAUSSIAN_PARAM),
            f6(p)
        )),
        "random_zipfian" if p.is_nan() || !(MIN_ZIPFIAN_PARAM..=MAX_ZIPFIAN_PARAM).contains(&p) => fail(format!(
            "zipfian parameter must be in range [{MIN_ZIPFIAN_PARAM:.3}, {MAX_ZIPFIAN_PARAM:.0}] (not {})",
            f6(p)
        )),
        "random_exponential" if p.is_nan() || p <= 0.0 => {
            fail(format!("exponential parameter must be greater than zero (not {})", f6(p)))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_says_what_pgbench_says() {
        let m = |f, a, b, p| check(f, a, b, p).unwrap_err().message;
        assert_eq!(m("random", 5, 4, None), "empty range given to random");
        assert_eq!(
            m("random", i64::MIN, i64::MAX, None),
            "random range is too large"
        );
        assert_eq!(m("random", 0, i64::MAX, None), "random range is too large");
        assert!(check("random", 1, i64::MAX, None).is_ok());
        assert_eq!(
            m("random_gaussian", 1, 10, Some(1.5)),
            "gaussian parameter must be at least 2.000000 (not 1.500000)"
        );
        assert_eq!(
            m("random_zipfian", 1, 10, Some(0.5)),
            "zipfian parameter must be in range [1.001, 1000] (not 0.500000)"
        );
        assert_eq!(
            m("random_exponential", 1, 10, Some(0.0)),
            "exponential parameter must be greater than zero (not 0.000000)"
        );
        assert!(check("random_zipfian", 1, 10, Some(f64::NAN)).is_err());
        assert_eq!(check("random_zipfian", 1, 10, Some(1000.0)), Ok(()));
        assert_eq!(
            check("random", 1, 10, Some(-1.0)),
            Ok(()),
            "random has no parameter to check"
        );
        assert_eq!(
            check("random", 2, 1, None).unwrap_err().class,
            "script:range"
        );
    }

    #[test]
    fn dist_parses_and_checks() {
        assert_eq!(Dist::parse("uniform"), Ok(Dist::Uniform));
        assert_eq!(Dist::parse("zipf:1.5"), Ok(Dist::Zipf(1.5)));
        assert_eq!(Dist::parse("exponential:2.5"), Ok(Dist::Exponential(2.5)));
        assert_eq!(Dist::parse("gaussian:5"), Ok(Dist::Gaussian(5.0)));
        assert!(Dist::parse("zipf:0.5")
            .unwrap_err()
            .contains("zipfian parameter must be in range"));
        assert!(Dist::parse("gaussian:1").is_err());
        assert!(Dist::parse("exponential:-1").is_err());
        assert!(Dist::parse("zipf").is_err());
        assert!(Dist::parse("zipf:x").is_err());
        assert!(Dist::parse("normal:2").is_err());
        assert!(Dist::parse("uniform:3").is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_dist_text_is_parsed_or_refused_without_panicking(s in "\\PC{0,30}") {
            let _ = Dist::parse(&s);
        }

        #[test]
        fn parsed_dists_draw_inside_the_range(p in 0.0f64..2000.0, lo in -1000i64..1000, span in 0i64..1000) {
            for text in [format!("zipf:{p}"), format!("exponential:{p}"), format!("gaussian:{p}")] {
                if let Ok(d) = Dist::parse(&text) {
                    let mut r = Prng::seed(p.to_bits());
                    let k = d.draw(&mut r, lo, lo + span);
                    proptest::prop_assert!((lo..=lo + span).contains(&k), "{} {}", text, k);
                }
            }
        }
    }

    #[test]
    fn draws_stay_in_range() {
        let mut r = Prng::seed(7);
        for d in [
            Dist::Uniform,
            Dist::Zipf(1.01),
            Dist::Zipf(3.0),
            Dist::Exponential(10.0),
            Dist::Gaussian(2.0),
        ] {
            for _ in 0..2000 {
                let k = d.draw(&mut r, -5, 20);
                assert!((-5..=20).contains(&k), "{d:?} gave {k}");
            }
        }
        // degenerate ranges
        assert_eq!(uniform(&mut r, 3, 3), 3);
        assert_eq!(zipfian(&mut r, 3, 3, 2.0), 3);
        assert_eq!(exponential(&mut r, 3, 3, 2.0), 3);
        // the widest range allowed
        let k = uniform(&mut r, i64::MIN + 1, i64::MAX);
        assert!(k > i64::MIN);
    }

    #[test]
    fn permute_is_a_permutation() {
        for size in [1i64, 2, 3, 5, 16, 17, 100, 1000] {
            let mut seen: Vec<i64> = (0..size).map(|v| permute(v, size, 12345)).collect();
            seen.sort_unstable();
            let want: Vec<i64> = if size < 2 {
                vec![0]
            } else {
                (0..size).collect()
            };
            assert_eq!(seen, want, "size {size}");
        }
        // values outside [0, size) are taken modulo size (as unsigned)
        assert_eq!(permute(7 + 10, 10, 3), permute(7, 10, 3));
        // no overflow at the edges
        let _ = permute(i64::MAX, i64::MAX, -1);
        let _ = permute(-1, i64::MAX, 0);
    }
}
