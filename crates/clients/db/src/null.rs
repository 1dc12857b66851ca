//! The `null` target: every call succeeds at once, so a run measures the harness alone — or,
//! with `--set delay=2ms` / `--set commit_delay=1ms`, after a scripted sleep, so tests and
//! `dbscope ab` get runs whose latencies differ by a known amount.

use std::time::Duration;

use dbscope_core::TargetInfo;

use crate::target::{Dialect, Param, Session, StmtId, Target, TargetError, TargetResult};

/// A target that does nothing (but wait, when told to).
#[derive(Debug)]
pub struct NullTarget {
    settings: Vec<(String, String)>,
    delays: Delays,
}

/// Scripted latencies of the null target.
#[derive(Clone, Copy, Debug, Default)]
struct Delays {
    /// Slept in every statement executed (`execute`, `batch`, queries).
    statement: Duration,
    /// Slept in every commit.
    commit: Duration,
}

/// Parses `250us`, `2ms`, `1.5ms`, `1s`, `800ns` (also `µs`).
fn parse_delay(name: &str, v: &str) -> TargetResult<Duration> {
    let t = v.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(x) if scale.is_finite() && x.is_finite() && (0.0..=10.0).contains(&(x * scale)) => {
            Ok(Duration::from_secs_f64(x * scale))
        }
        _ => Err(TargetError::config(format!(
            "--set {name}={v}: expected a duration of at most 10s such as 250us, 2ms or 1s"
        ))),
    }
}

impl NullTarget {
    /// The null target; its only settings are scripted latencies: `delay` (each statement) and
    /// `commit_delay` (each commit).
    pub fn new(settings: &[(String, String)]) -> TargetResult<Self> {
        let mut delays = Delays::default();
        for (name, value) in settings {
            match name.as_str() {
                "delay" => delays.statement = parse_delay(name, value)?,
                "commit_delay" => delays.commit = parse_delay(name, value)?,
                _ => {
                    return Err(TargetError::config(format!(
                        "the null target's only settings are delay and commit_delay (scripted \
                         latencies, e.g. --set delay=2ms); remove --set {name}=…"
                    )))
                }
            }
        }
        Ok(NullTarget {
            settings: settings.to_vec(),
            delays,
        })
    }
}

impl Target for NullTarget {
    fn kind(&self) -> &'static str {
        "null"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Null
    }
    fn connect(&self) -> TargetResult<Box<dyn Session>> {
        Ok(Box::new(NullSession {
            stmts: 0,
            delays: self.delays,
        }))
    }
    fn describe(&self) -> TargetResult<TargetInfo> {
        Ok(TargetInfo {
            kind: "null".into(),
            location: "null".into(),
            server_version: format!("dbscope {} null target", env!("CARGO_PKG_VERSION")),
            settings_requested: self.settings.clone(),
            settings_effective: Default::default(),
        })
    }
}

struct NullSession {
    stmts: usize,
    delays: Delays,
}

/// Sleeps `d` unless it is zero (no system call on the plain null target's hot path).
#[inline]
fn wait(d: Duration) {
    if !d.is_zero() {
        std::thread::sleep(d);
    }
}

impl Session for NullSession {
    fn batch(&mut self, _sql: &str) -> TargetResult<()> {
        wait(self.delays.statement);
        Ok(())
    }
    fn prepare(&mut self, _sql: &str) -> TargetResult<StmtId> {
        self.stmts += 1;
        Ok(StmtId(self.stmts - 1))
    }
    #[inline]
    fn execute(&mut self, _stmt: StmtId, _params: &[Param]) -> TargetResult<u64> {
        wait(self.delays.statement);
        Ok(1)
    }
    fn query_i64(&mut self, _sql: &str) -> TargetResult<Vec<i64>> {
        wait(self.delays.statement);
        Ok(Vec::new())
    }
    /// The null target holds no data: every query returns no rows.
    fn query_rows(
        &mut self,
        _sql: &str,
        _params: &[Param],
    ) -> TargetResult<Vec<Vec<Option<String>>>> {
        wait(self.delays.statement);
        Ok(Vec::new())
    }
    #[inline]
    fn begin(&mut self) -> TargetResult<()> {
        Ok(())
    }
    #[inline]
    fn commit(&mut self) -> TargetResult<()> {
        wait(self.delays.commit);
        Ok(())
    }
    fn rollback(&mut self) -> TargetResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: &str) -> Vec<(String, String)> {
        vec![(k.to_string(), v.to_string())]
    }

    #[test]
    fn delays_are_parsed_recorded_and_slept() {
        let t = NullTarget::new(&set("delay", "3ms")).unwrap();
        assert_eq!(t.delays.statement, Duration::from_millis(3));
        assert_eq!(
            t.describe().unwrap().settings_requested,
            set("delay", "3ms")
        );
        let mut s = t.connect().unwrap();
        let stmt = s.prepare("update").unwrap();
        let t0 = std::time::Instant::now();
        s.execute(stmt, &[]).unwrap();
        assert!(t0.elapsed() >= Duration::from_millis(3));
        let c = NullTarget::new(&set("commit_delay", "1.5ms")).unwrap();
        assert_eq!(c.delays.commit, Duration::from_micros(1500));
        assert_eq!(
            parse_delay("delay", "250us").unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(
            parse_delay("delay", "800ns").unwrap(),
            Duration::from_nanos(800)
        );
        for bad in ["", "2", "2h", "fast", "-1ms", "11s"] {
            assert!(parse_delay("delay", bad).is_err(), "{bad}");
        }
        let e = NullTarget::new(&set("fsync", "off"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("remove --set fsync"), "{e}");
    }
}
