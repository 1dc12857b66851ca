//! `--inject DEST:SPEC`: seeded extra delay added to one destination's writes, so the race's
//! effect on the tail can be shown on one machine. Every injected delay is recorded.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::Error;

/// A delay distribution.
#[derive(Clone, Debug, PartialEq)]
pub enum DelaySpec {
    /// With probability `p`, add `delay`; otherwise nothing.
    Bernoulli {
        /// Probability per write, in [0, 1].
        p: f64,
        /// The delay added.
        delay: Duration,
    },
    /// Log-normal with this median and shape σ (of the underlying normal), added to every write.
    LogNormal {
        /// Median delay.
        median: Duration,
        /// σ of ln(delay).
        sigma: f64,
    },
}

/// One `--inject` option: which destination, and what delay.
#[derive(Clone, Debug, PartialEq)]
pub struct Injection {
    /// Destination name or 1-based index, as given.
    pub dest: String,
    /// The delay distribution.
    pub spec: DelaySpec,
    /// The text as given, for the manifest.
    pub text: String,
}

const SPEC_HELP: &str =
    "use DEST:p=PROB:DELAY (e.g. disk:p=0.001:300ms), DEST:DELAY (every write), \
     or DEST:lognormal:MEDIAN:SIGMA (e.g. 2:lognormal:200us:1.5)";

impl std::str::FromStr for Injection {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = |why: &str| Error::Config(format!("--inject {s:?}: {why}; {SPEC_HELP}"));
        let (dest, spec) = s
            .split_once(':')
            .ok_or_else(|| bad("no DEST: before the delay"))?;
        if dest.is_empty() {
            return Err(bad("empty destination"));
        }
        let parts: Vec<&str> = spec.split(':').collect();
        let spec = match parts.as_slice() {
            [p, d] if p.starts_with("p=") => {
                let p: f64 = p[2..]
                    .parse()
                    .map_err(|_| bad(&format!("{:?} is not a probability", &p[2..])))?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(bad("the probability must be between 0 and 1"));
                }
                DelaySpec::Bernoulli {
                    p,
                    delay: parse_delay(d).map_err(|e| bad(&e.to_string()))?,
                }
            }
            ["lognormal", m, sg] => {
                let sigma: f64 = sg
                    .parse()
                    .map_err(|_| bad(&format!("{sg:?} is not a number")))?;
                if !(0.0..=10.0).contains(&sigma) {
                    return Err(bad("sigma must be between 0 and 10"));
                }
                DelaySpec::LogNormal {
                    median: parse_delay(m).map_err(|e| bad(&e.to_string()))?,
                    sigma,
                }
            }
            [d] => DelaySpec::Bernoulli {
                p: 1.0,
                delay: parse_delay(d).map_err(|e| bad(&e.to_string()))?,
            },
            _ => return Err(bad("cannot read the delay")),
        };
        Ok(Injection {
            dest: dest.to_string(),
            spec,
            text: s.to_string(),
        })
    }
}

/// Parses `300ms`, `250us`, `2s`, `1.5ms`.
pub fn parse_delay(s: &str) -> Result<Duration, Error> {
    let bad = |msg: String| Error::Config(msg);
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| bad(format!("{s:?} is not a delay (e.g. 300ms, 250us, 2s)")))?;
    let scale = match unit {
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        _ => {
            return Err(bad(format!(
                "{s:?}: the delay needs a unit: ns, us, ms or s"
            )))
        }
    };
    let secs = v * scale;
    if !secs.is_finite() || !(0.0..=60.0).contains(&secs) {
        return Err(bad(format!("{s:?}: a delay must be between 0 and 60s")));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Draws delays for one destination from a seeded generator.
#[derive(Debug)]
pub struct Injector {
    spec: DelaySpec,
    rng: ChaCha8Rng,
}

impl Injector {
    /// An injector with its own seed (derive it from the run seed and the destination).
    pub fn new(spec: DelaySpec, seed: u64) -> Self {
        Injector {
            spec,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The extra delay for the next write (zero most of the time for a Bernoulli spec).
    pub fn next_delay(&mut self) -> Duration {
        match self.spec {
            DelaySpec::Bernoulli { p, delay } => {
                if p >= 1.0 || self.rng.random::<f64>() < p {
                    delay
                } else {
                    Duration::ZERO
                }
            }
            DelaySpec::LogNormal { median, sigma } => {
                // Box–Muller: one standard normal from two uniforms in (0, 1].
                let u1: f64 = 1.0 - self.rng.random::<f64>();
                let u2: f64 = self.rng.random::<f64>();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let secs = (median.as_secs_f64() * (sigma * z).exp()).min(60.0);
                Duration::from_secs_f64(secs)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_and_refuses_junk() {
        let i: Injection = "disk:p=0.001:300ms".parse().unwrap();
        assert_eq!(i.dest, "disk");
        assert_eq!(
            i.spec,
            DelaySpec::Bernoulli {
                p: 0.001,
                delay: Duration::from_millis(300)
            }
        );
        let i: Injection = "2:lognormal:200us:1.5".parse().unwrap();
        assert_eq!(
            i.spec,
            DelaySpec::LogNormal {
                median: Duration::from_micros(200),
                sigma: 1.5
            }
        );
        let i: Injection = "flash:5ms".parse().unwrap();
        assert_eq!(
            i.spec,
            DelaySpec::Bernoulli {
                p: 1.0,
                delay: Duration::from_millis(5)
            }
        );
        for bad in [
            "disk",
            "disk:p=2:1ms",
            "disk:p=x:1ms",
            "disk:300",
            ":1ms",
            "d:lognormal:1ms",
        ] {
            let e = bad.parse::<Injection>().unwrap_err().to_string();
            assert!(e.contains("--inject") && e.contains("DEST:"), "{bad}: {e}");
        }
    }

    #[test]
    fn draws_are_seeded_and_match_the_distribution() {
        let spec = DelaySpec::Bernoulli {
            p: 0.1,
            delay: Duration::from_millis(1),
        };
        let draw = |seed| {
            let mut inj = Injector::new(spec.clone(), seed);
            (0..10_000).map(|_| inj.next_delay()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        let hits = draw(7).iter().filter(|d| !d.is_zero()).count();
        assert!((800..1200).contains(&hits), "{hits} of 10000 at p=0.1");

        let mut ln = Injector::new(
            DelaySpec::LogNormal {
                median: Duration::from_micros(100),
                sigma: 1.0,
            },
            3,
        );
        let mut v: Vec<f64> = (0..20_001).map(|_| ln.next_delay().as_secs_f64()).collect();
        v.sort_by(f64::total_cmp);
        let median = v[10_000];
        assert!((90e-6..110e-6).contains(&median), "median {median}");
    }
}
