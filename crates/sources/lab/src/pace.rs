//! Open-loop pacing: the intended start of every operation, from a target rate and an arrival
//! process (constant spacing or Poisson, seeded), independent of how fast the database answers.
//!
//! A closed-loop client waits for each answer before it asks again, so a slow database quietly
//! lowers the offered load and its stalls never show in the latencies ("coordinated omission",
//! Gil Tene). An open-loop client fixes each operation's intended start in advance: when the
//! database falls behind, operations start late, and the latency measured from the intended start
//! (end − intended) shows the wait while the service time (end − actual start) does not. The
//! operations due but not yet started are the *backlog*.

use std::str::FromStr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::Error;

/// How intended starts are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly: one every 1/rate seconds.
    Constant,
    /// A Poisson process: exponential gaps with mean 1/rate, from a seeded generator.
    Poisson,
}

impl FromStr for Arrival {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "constant" => Ok(Arrival::Constant),
            "poisson" => Ok(Arrival::Poisson),
            _ => Err(Error::invalid(
                "arrival",
                format!("{s:?}: expected `constant` or `poisson`"),
            )),
        }
    }
}

impl Arrival {
    /// The name as given on the command line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// Open-loop pacing of a run: `--rate` and `--arrival`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pacing {
    /// Operations per second offered in total (all sessions together) or, with `per_session`,
    /// by each session.
    pub rate: f64,
    /// `rate` is per session rather than the total.
    pub per_session: bool,
    /// How intended starts are spaced.
    pub arrival: Arrival,
}

impl Pacing {
    /// Checks the rate; the message names the option.
    pub fn validate(&self) -> Result<(), Error> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(Error::invalid(
                "rate",
                format!(
                    "{}: expected a rate above 0 operations per second, e.g. {{rate}} 2000",
                    self.rate
                ),
            ));
        }
        if self.rate > 1e9 {
            return Err(Error::invalid(
                "rate",
                format!("{}: at most 1e9 operations per second", self.rate),
            ));
        }
        Ok(())
    }

    /// The rate one session offers when `sessions` share the run.
    pub fn session_rate(&self, sessions: u32) -> f64 {
        if self.per_session {
            self.rate
        } else {
            self.rate / sessions.max(1) as f64
        }
    }
}

/// Parses `--rate`: `R` (total operations per second) or `R/session`.
pub fn parse_rate(s: &str) -> Result<(f64, bool), Error> {
    let (num, per_session) = match s.strip_suffix("/session") {
        Some(n) => (n, true),
        None => (s, false),
    };
    let rate: f64 = num.trim().parse().map_err(|_| {
        Error::invalid(
            "rate",
            format!("{s:?}: expected operations per second, e.g. 2000 (in total) or 500/session"),
        )
    })?;
    Ok((rate, per_session))
}

/// The intended starts of one stream of operations (a session's, or one client's).
#[derive(Clone, Debug)]
pub struct Pacer {
    /// Next intended start, ns since the run's clock origin (fractional, so spacing never drifts).
    next_ns: f64,
    gap_ns: f64,
    arrival: Arrival,
    rng: ChaCha8Rng,
}

impl Pacer {
    /// A stream of `rate` operations per second starting at `start_ns`; `seed` drives the Poisson
    /// gaps. With constant spacing the first start is `start_ns + phase · gap` (`phase` in [0, 1)),
    /// so streams that start together spread over the first gap instead of arriving at once.
    pub fn new(rate: f64, arrival: Arrival, seed: u64, start_ns: u64, phase: f64) -> Pacer {
        let gap_ns = 1e9 / rate;
        let mut p = Pacer {
            next_ns: start_ns as f64,
            gap_ns,
            arrival,
            rng: ChaCha8Rng::seed_from_u64(seed),
        };
        match arrival {
            Arrival::Constant => p.next_ns += phase.clamp(0.0, 1.0) * gap_ns,
            Arrival::Poisson => p.next_ns += p.gap(),
        }
        p
    }

    fn gap(&mut self) -> f64 {
        match self.arrival {
            Arrival::Constant => self.gap_ns,
            // Inverse transform of an exponential: −ln(1 − U) · mean, with U in [0, 1).
            Arrival::Poisson => -(1.0 - self.rng.random::<f64>()).ln() * self.gap_ns,
        }
    }

    /// Moves the whole schedule `ns` later (a stream made before its start time was known).
    pub fn shift(&mut self, ns: u64) {
        self.next_ns += ns as f64;
    }

    /// The next intended start without taking it.
    #[inline]
    pub fn peek(&self) -> u64 {
        self.next_ns as u64
    }

    /// Takes the next intended start and moves on to the one after.
    #[inline]
    pub fn next_start(&mut self) -> u64 {
        let t = self.next_ns as u64;
        self.next_ns += self.gap();
        t
    }

    /// How many intended starts of this stream, from its first, fall in each second of the run
    /// clock up to `end_ns` (inclusive): constant spacing is counted arithmetically, Poisson
    /// arrivals are replayed from the seed. Call it on a fresh pacer (a clone of the one made).
    pub fn due_per_second(&self, end_ns: u64) -> Vec<u64> {
        let secs = (end_ns / 1_000_000_000) as usize + 1;
        let mut out = vec![0u64; secs];
        match self.arrival {
            Arrival::Constant => {
                // Starts at or before x: floor((x − first) / gap) + 1.
                let upto = |x: f64| -> u64 {
                    if x < self.next_ns {
                        0
                    } else {
                        ((x - self.next_ns) / self.gap_ns) as u64 + 1
                    }
                };
                let mut before = 0;
                for (k, slot) in out.iter_mut().enumerate() {
                    let hi = (((k as u64 + 1) * 1_000_000_000).min(end_ns + 1) - 1) as f64;
                    let n = upto(hi);
                    *slot = n - before;
                    before = n;
                }
            }
            Arrival::Poisson => {
                let mut p = self.clone();
                while p.peek() <= end_ns {
                    out[(p.next_start() / 1_000_000_000) as usize] += 1;
                }
            }
        }
        out
    }

    /// How many intended starts fall at or before `now_ns` and have not been taken.
    pub fn due(&self, now_ns: u64) -> u64 {
        if self.peek() > now_ns {
            return 0;
        }
        match self.arrival {
            Arrival::Constant => ((now_ns as f64 - self.next_ns) / self.gap_ns) as u64 + 1,
            Arrival::Poisson => {
                let mut p = self.clone();
                let mut n = 0;
                while p.peek() <= now_ns {
                    p.next_start();
                    n += 1;
                }
                n
            }
        }
    }
}

/// Records the pacing in the workload parameters of the manifest (`rate_per_s` in total,
/// `rate_per_session_per_s`, `arrival`), where old readers see plain parameters.
pub fn record_params(
    p: &Pacing,
    sessions: u32,
    params: &mut std::collections::BTreeMap<String, serde_json::Value>,
) {
    let per = p.session_rate(sessions);
    params.insert("rate_per_s".into(), (per * sessions as f64).into());
    params.insert("rate_per_session_per_s".into(), per.into());
    params.insert("arrival".into(), p.arrival.as_str().into());
}

/// The `pacing` counter section: what was offered and what was left undone at the end (the
/// backlog the per-second series of `report` cannot see, since those operations never started).
pub fn section(
    p: &Pacing,
    sessions: u32,
    ops_started: u64,
    left_due: u64,
    due_per_s: &[u64],
) -> dbscope_core::CounterSection {
    use dbscope_core::counters::{Column, Counter, CounterTable, CounterValue};
    let per = p.session_rate(sessions);
    dbscope_core::CounterSection {
        key: "pacing".into(),
        title: format!(
            "open-loop pacing: {} arrivals, {} session{}",
            p.arrival.as_str(),
            sessions,
            if sessions == 1 { "" } else { "s" }
        ),
        final_counts: true,
        counters: vec![
            Counter::new(
                "offered_per_s",
                "offered",
                CounterValue::float(Some(per * sessions as f64)),
                "ops/s",
            )
            .decimals(1),
            Counter::new(
                "ops_started",
                "operations started",
                CounterValue::count(ops_started),
                "",
            ),
            Counter::new(
                "backlog_at_end",
                "due but never started at the end (backlog)",
                CounterValue::count(left_due),
                "",
            ),
        ],
        tables: vec![CounterTable {
            key: "per_second".into(),
            title: "operations due per second of the run clock".into(),
            columns: vec![
                Column::new("second", "second", ""),
                Column::new("due", "due", ""),
            ],
            rows: due_per_s
                .iter()
                .enumerate()
                .map(|(k, &n)| vec![CounterValue::count(k as u64), CounterValue::count(n)])
                .collect(),
        }],
        notes: Vec::new(),
    }
}

/// Adds one stream's due-per-second counts into the run's.
pub fn add_due(total: &std::sync::Mutex<Vec<u64>>, mine: &[u64]) {
    let mut t = total
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if t.len() < mine.len() {
        t.resize(mine.len(), 0);
    }
    for (a, b) in t.iter_mut().zip(mine) {
        *a += b;
    }
}

/// Waits until the run clock reads `intended_ns`, giving the thread to the other sessions on it
/// meanwhile ([`dbscope_db::mux::sleep_until`]); returns at once when that time has passed.
///
/// The sleep is on the OS's monotonic clock, the run clock's own, but the sleep's end is computed
/// from a reading taken before it (and the run clock was once the TSC, calibrated once, 1.4 ms
/// off in 2 s on a CI machine), so the wait goes on until the run clock itself has passed the
/// time, and a delay recorded on it is never short. What is left after the sleep: under
/// [`SPIN_LEFT_NS`] it is spun away rather than slept, since a second sleep of a few nanoseconds
/// would last the kernel's timer slack (50 µs) and start a paced operation late.
pub fn wait_until(rec: &dbscope_core::Recorder, intended_ns: u64) {
    dbscope_db::mux::precise_sleeps();
    let mut slept = false;
    loop {
        let now = rec.now();
        if intended_ns <= now {
            return;
        }
        let left = intended_ns - now;
        if slept && left < SPIN_LEFT_NS {
            while rec.now() < intended_ns {
                std::hint::spin_loop();
            }
            return;
        }
        let at = std::time::Instant::now() + std::time::Duration::from_nanos(left);
        dbscope_db::mux::sleep_until(at);
        slept = true;
    }
}

/// After a sleep, a rest shorter than this (the clocks' difference over a sleep of up to about a
/// tenth of a second) is spun rather than slept.
const SPIN_LEFT_NS: u64 = 100_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_spacing_is_exact_and_phased() {
        let mut p = Pacer::new(1000.0, Arrival::Constant, 1, 0, 0.5);
        let starts: Vec<u64> = (0..4).map(|_| p.next_start()).collect();
        assert_eq!(starts, vec![500_000, 1_500_000, 2_500_000, 3_500_000]);
        assert_eq!(p.due(4_500_000), 1);
        assert_eq!(p.due(5_600_000), 2);
        assert_eq!(p.due(3_000_000), 0);
        let fresh = Pacer::new(1000.0, Arrival::Constant, 1, 0, 0.5);
        assert_eq!(fresh.due_per_second(2_400_000_000), vec![1000, 1000, 400]);
        assert_eq!(fresh.due_per_second(1_000_000_000), vec![1000, 0]);
    }

    #[test]
    fn poisson_has_the_mean_rate_and_is_seeded() {
        let mut a = Pacer::new(10_000.0, Arrival::Poisson, 7, 0, 0.0);
        let mut b = Pacer::new(10_000.0, Arrival::Poisson, 7, 0, 0.0);
        let mut last = 0;
        for _ in 0..100_000 {
            last = a.next_start();
            assert_eq!(last, b.next_start());
        }
        // 100,000 arrivals at 10,000/s take about 10 s (sd of the sum: 0.03 s).
        let secs = last as f64 / 1e9;
        assert!((9.8..10.2).contains(&secs), "{secs}");
        let per_s = Pacer::new(10_000.0, Arrival::Poisson, 7, 0, 0.0).due_per_second(9_999_999_999);
        assert_eq!(per_s.len(), 10);
        assert!(
            per_s.iter().all(|&n| (9_500..10_500).contains(&n)),
            "{per_s:?}"
        );
        let mut c = Pacer::new(10_000.0, Arrival::Poisson, 8, 0, 0.0);
        assert_ne!(
            c.next_start(),
            Pacer::new(10_000.0, Arrival::Poisson, 7, 0, 0.0).peek()
        );
    }

    #[test]
    fn rates_parse_and_validate() {
        assert_eq!(parse_rate("2000").unwrap(), (2000.0, false));
        assert_eq!(parse_rate("500/session").unwrap(), (500.0, true));
        assert!(parse_rate("fast").is_err());
        let p = |rate| Pacing {
            rate,
            per_session: false,
            arrival: Arrival::Constant,
        };
        assert!(p(0.0).validate().is_err());
        assert!(p(-1.0).validate().is_err());
        assert!(p(f64::NAN).validate().is_err());
        assert!(p(2000.0).validate().is_ok());
        assert_eq!(p(2000.0).session_rate(4), 500.0);
        assert!("sometimes".parse::<Arrival>().is_err());
    }
}
