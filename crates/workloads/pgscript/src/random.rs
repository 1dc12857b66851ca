//! pgbench's random generators over [`Prng`] (`getrand`, `getExponentialRand`,
//! `getGaussianRand`, `getZipfianRand`), shared by the script functions and the built-in
//! workloads' `--dist`.

use crate::error::EvalError;
use crate::prng::Prng;

/// `random(min, max)`: uniform integer in [min, max].
pub fn uniform(rng: &mut Prng, min: i64, max: i64) -> i64 {
    let _ = (rng, min, max);
    todo!("helper")
}
/// `random_exponential(min, max, parameter)` (parameter > 0).
pub fn exponential(rng: &mut Prng, min: i64, max: i64, parameter: f64) -> i64 {
    let _ = (rng, min, max, parameter);
    todo!("helper")
}
/// `random_gaussian(min, max, parameter)` (parameter ≥ 2.0).
pub fn gaussian(rng: &mut Prng, min: i64, max: i64, parameter: f64) -> i64 {
    let _ = (rng, min, max, parameter);
    todo!("helper")
}
/// `random_zipfian(min, max, s)` (0 < s ≤ 1000, s ≠ 1 allowed as pgbench 13+ allows).
pub fn zipfian(rng: &mut Prng, min: i64, max: i64, s: f64) -> i64 {
    let _ = (rng, min, max, s);
    todo!("helper")
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
        let _ = s;
        todo!("helper")
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

/// Checks the arguments of a random function before drawing (pgbench's messages: `empty range
/// given to random`, `random range is too large`, `exponential parameter must be greater than
/// zero…`).
pub fn check(func: &str, min: i64, max: i64, parameter: Option<f64>) -> Result<(), EvalError> {
    let _ = (func, min, max, parameter);
    todo!("helper")
}
