//! Arguments of `dbscope compare A B` (clap).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::parse::parse_duration;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope compare runs/before runs/after
  dbscope compare runs/sync-full runs/sync-off --event commit --outlier 500ms --noise 2%
  dbscope compare a.trc b.trc --event 'log file sync'      # 10046 traces become runs
  dbscope compare runs/a runs/b --json > cmp.json
  dbscope compare --baseline main runs/pr-1 runs/pr-2      # pooled runs against baseline main

Per event name with at least two successful events in each run: n, R's summary() of A and B, the
mean difference B − A with Welch's 95% CI and p-value (R's t.test), the Hodges–Lehmann shift with
the Wilcoxon rank-sum p-value (R's wilcox.test, exact = FALSE, correct = TRUE), p50/p90/p99/p99.9
differences with seeded bootstrap CIs, failures by class, and a verdict that calls a change only
when a CI lies wholly outside the noise band, or says \"too few samples to decide\" when no test
could decide with so few events. Every other name (one run lacks it, one event each, only
failures) is shown side by side without a test. See docs/compare.md.")]
pub struct CompareArgs {
    /// Run A, the baseline, then run B, the candidate (run directories, or Oracle 10046 .trc
    /// files). With --baseline: the candidate run(s) only, pooled when several.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Compare against the named baseline's runs (pooled; see `dbscope baseline`), looked up in
    /// the runs directory of the first RUN.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Compare only this event name.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    /// Count events longer than this in each run, e.g. 500ms.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub outlier: Option<Duration>,
    /// Changes within ± this share of A's value are noise: e.g. 1%, 0.5%.
    #[arg(long, value_name = "PERCENT", default_value = "1%", value_parser = parse_percent)]
    pub noise: f64,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report (verdicts, manifest differences, A and B overlaid
    /// in every plot) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write each plot as its own SVG file into DIR.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Include warm-up events.
    #[arg(long)]
    pub include_warmup: bool,
    /// Compare runs with no recorded end or damaged event files (the events read so far).
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Seed of the bootstrap (recorded in the output).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bootstrap replicates per quantile.
    #[arg(long, default_value_t = 2000, value_name = "N")]
    pub replicates: usize,
    /// A regression gate: exit 5 when a condition holds with 95% confidence (its whole interval
    /// lies beyond the threshold), e.g. 'p99>+5%,throughput<-3%' (metrics: any compared quantile,
    /// mean, throughput). See docs/notebook.md.
    #[arg(long, value_name = "CONDITIONS", value_parser = parse_fail_if)]
    pub fail_if: Option<Conditions>,
    /// Print a one-paragraph Markdown summary (for a CI job to post) instead of the text report.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Quantiles to compare: p50,p90,p99,p99.9 or fractions 0.5,0.99.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "p50,p90,p99,p99.9",
        value_parser = parse_quantile
    )]
    pub quantiles: Vec<f64>,
    /// About how much memory the latencies may take (e.g. 100MB, 2GiB). An event name whose
    /// samples do not fit is sorted on disk in $TMPDIR (about 16 bytes per event while it is
    /// sorted) and every statistic is read from there: the same figures, more slowly.
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = crate::io::args::parse_size)]
    pub memory: u64,
}

/// Parses `p99.9` (a percentile) or `0.999` (a fraction) into a fraction in [0, 1].
pub fn parse_quantile(s: &str) -> Result<f64, String> {
    let t = s.trim();
    // `p99.9` is parsed as the decimal 99.9e-2, so it gives exactly the double nearest 0.999.
    let text = match t.strip_prefix('p') {
        Some(rest) if !rest.is_empty() && !rest.contains(['e', 'E']) => format!("{rest}e-2"),
        _ => t.to_string(),
    };
    let q: f64 = text
        .parse()
        .map_err(|_| format!("{s:?} is not a quantile; use e.g. p99, p99.9 or 0.99"))?;
    if !(0.0..=1.0).contains(&q) {
        return Err(format!(
            "{s:?} is out of range: quantiles are p0 to p100 (0 to 1)"
        ));
    }
    Ok(q)
}

// `--fail-if` conditions (judged in `compare::gate`).

/// What a condition measures.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// A compared quantile (a fraction).
    Quantile(f64),
    /// The mean latency.
    Mean,
    /// Successful operations per second.
    Throughput,
}

/// One `--fail-if` condition.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// As written.
    pub text: String,
    /// What it measures.
    pub metric: Metric,
    /// `true` for `>`, `false` for `<`.
    pub above: bool,
    /// Threshold on B/A − 1.
    pub threshold: f64,
}

/// The conditions of one `--fail-if`.
#[derive(Clone, Debug, PartialEq)]
pub struct Conditions(pub Vec<Condition>);

/// Parses `p99>+5%,throughput<-3%` into conditions.
pub fn parse_fail_if(s: &str) -> Result<Conditions, String> {
    s.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| {
            let (at, above) = c
                .find(['>', '<'])
                .map(|i| (i, c.as_bytes()[i] == b'>'))
                .ok_or_else(|| format!("{c:?}: expected METRIC>+X% or METRIC<-X%"))?;
            let (m, t) = (c[..at].trim(), c[at + 1..].trim());
            let metric =
                match m {
                    "mean" => Metric::Mean,
                    "throughput" => Metric::Throughput,
                    _ => Metric::Quantile(parse_quantile(m).map_err(|e| {
                        format!("{c:?}: {e} (metrics: p50, p99, …, mean, throughput)")
                    })?),
                };
            let pct = t
                .strip_suffix('%')
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{c:?}: expected a signed percentage such as +5% or -3%"))?;
            Ok(Condition {
                text: c.to_string(),
                metric,
                above,
                threshold: pct / 100.0,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|v| {
            if v.is_empty() {
                Err("no condition given".into())
            } else {
                Ok(Conditions(v))
            }
        })
}

/// Parses `1%`, `0.5%` or a bare `2` (percent) into a fraction.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage; use e.g. 1% or 0.5%"))?;
    if !(0.0..100.0).contains(&v) {
        return Err(format!("{s:?} is out of range; use 0% to 99%"));
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percents() {
        assert_eq!(parse_percent("1%").unwrap(), 0.01);
        assert_eq!(parse_percent("0.5 %").unwrap(), 0.005);
        assert_eq!(parse_percent("2").unwrap(), 0.02);
        assert!(parse_percent("x").is_err());
        assert!(parse_percent("150%").is_err());
        assert_eq!(parse_quantile("p99.9").unwrap(), 0.999);
        assert_eq!(parse_quantile("0.25").unwrap(), 0.25);
        assert!(parse_quantile("p101").is_err());
        assert!(parse_quantile("median").is_err());
    }
}
