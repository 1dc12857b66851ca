//! Arguments of `dbscope sweep`: the session counts, repeats, and the `run` command after `--`.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope sweep --sessions 1,2,4,8 -- run commit --duration 5s
  dbscope sweep --sessions 1,2,4,8,16,32 --repeat 3 -- run commit --target postgres://bench@/bench \\
                --duration 30s --keys shared:100
  dbscope sweep --sessions 1,2,4,8 --json -- run lookup --rows 100000 --ops 200000
  dbscope sweep --sessions 1,2,4,8 -- run events --strategy batch --clients 8 --duration 10s
  dbscope sweep --sessions 1,2,4,8 -- io redo --dest /var/tmp/redo.log --duration 10s

Each point is an ordinary run (same seed, same duration or operations) under DIR/points/; the sweep
directory is itself a run: one `point` event per point run, and counters section `usl` with the fit
(`dbscope report DIR`; `report --html` plots it). events points vary the connections (the clients
and their offered load stay as given) and fit committed events/s; io redo points vary the committer
threads and fit the MB/s written to the log. The fit: X(N) = λN / (1 + σ(N−1) + κN(N−1)), σ contention, κ coherency,
by bounded non-linear least squares (docs/sweep.md).")]
pub struct SweepArgs {
    /// Session counts to run at, increasing integers ≥ 1, e.g. 1,2,4,8,16,32.
    #[arg(long, short = 's', value_name = "N,N,…", value_parser = parse_sessions)]
    // `std::vec::Vec`: one value parsed into a list, not a repeated option.
    #[arg(required = true)]
    pub sessions: std::vec::Vec<u32>,

    /// Runs per session count (all points enter the fit).
    #[arg(long, default_value_t = 1, value_name = "K",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,

    /// Sweep directory. Default: runs/<UTC timestamp>-sweep-<workload>.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Print the points and the fit as JSON (also written to DIR/sweep.json).
    #[arg(long)]
    pub json: bool,

    /// The command: `run WORKLOAD [args…]` or `io redo [args…]`, without --sessions and --out
    /// (the sweep sets them; events: without --connections).
    #[arg(
        last = true,
        required = true,
        value_name = "run WORKLOAD [ARGS] | io redo [ARGS]"
    )]
    pub run: Vec<String>,
}

/// Parses `1,2,4,8`: strictly increasing integers ≥ 1.
pub fn parse_sessions(s: &str) -> Result<Vec<u32>, String> {
    let mut out: Vec<u32> = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let n: u32 = part
            .parse()
            .map_err(|_| format!("{part:?} in {s:?} is not a whole number; use e.g. 1,2,4,8"))?;
        if n == 0 {
            return Err(format!("0 in {s:?}: a point needs one session at least"));
        }
        if let Some(&prev) = out.last() {
            if n <= prev {
                return Err(format!(
                    "{s:?} is not increasing: {n} follows {prev}; use e.g. 1,2,4,8"
                ));
            }
        }
        out.push(n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_lists() {
        assert_eq!(parse_sessions("1,2,4,8").unwrap(), vec![1, 2, 4, 8]);
        assert_eq!(parse_sessions("3").unwrap(), vec![3]);
        assert!(parse_sessions("2,1")
            .unwrap_err()
            .contains("not increasing"));
        assert!(parse_sessions("1,1")
            .unwrap_err()
            .contains("not increasing"));
        assert!(parse_sessions("1,two")
            .unwrap_err()
            .contains("not a whole number"));
        assert!(parse_sessions("1,,2").is_err());
        assert!(parse_sessions("0,1").unwrap_err().contains("one session"));
        assert!(parse_sessions("-1,2").is_err());
    }
}
