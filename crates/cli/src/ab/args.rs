//! Arguments of `dbscope ab --a 'ARGS…' --b 'ARGS…'` (clap).

use std::path::PathBuf;

use clap::Args;

use crate::compare::args::{parse_fail_if, parse_percent, Conditions};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope ab --a 'commit --ops 2000' --b 'commit --ops 2000 --set synchronous=off'
  dbscope ab --a 'commit --target null --set delay=1ms --ops 300' \\
             --b 'commit --target null --set delay=2ms --ops 300'
  dbscope ab --a 'commit -d 5s --target postgres://…' --b 'commit -d 5s --target postgres://…' \\
             --equivalence 3% --fail-if 'p99>+5%' --json

Runs A and B alternately (ABBA: AB, BA, AB, …; --order abab: AB, AB, …), each an ordinary
`dbscope run` under the runs directory, and after every round from --min-rounds on looks at the
interval of B's change in the figure (p50 or p99 of the headline event, or throughput) across
the rounds. It stops when the interval excludes zero (B slower / B faster), lies within
±--equivalence (no difference larger than X%), or at --max-rounds (undecided). The intervals are
alpha-spending (Pocock-type) repeated t-intervals: the chance that any look misleads is at most
1 − --confidence however many looks are taken. See docs/notebook.md.

Exit codes: 0 decided; 6 undecided after --max-rounds; with --fail-if: 5 when a condition held,
0 otherwise (undecided included); a failed round exits with its run's code (1, 2, 4, 130).")]
pub struct AbArgs {
    /// Plan A: the words of a `dbscope run` (the workload and its options, without --out), e.g.
    /// 'commit --ops 2000'.
    #[arg(long = "a", value_name = "ARGS", allow_hyphen_values = true)]
    pub a: String,
    /// Plan B, as A.
    #[arg(long = "b", value_name = "ARGS", allow_hyphen_values = true)]
    pub b: String,
    /// The figure compared, per round: p50 or p99 of the headline event, or throughput.
    #[arg(long, default_value = "p50", value_parser = ["p50", "p99", "throughput"])]
    pub figure: String,
    /// Order of the runs: abba (AB, BA, AB, … : cancels a linear drift) or abab.
    #[arg(long, default_value = "abba", value_parser = ["abba", "abab"])]
    pub order: String,
    /// The first look, in rounds (one round = one A run and one B run); at least 2.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub min_rounds: usize,
    /// The last look: undecided after this many rounds.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub max_rounds: usize,
    /// Confidence of the whole sequence of looks (1 − the error rate), e.g. 95%.
    #[arg(long, default_value = "95%", value_name = "PERCENT", value_parser = parse_percent)]
    pub confidence: f64,
    /// Stop and say "no difference larger than X%" when the interval lies within ±X% (even if it
    /// also excludes 0: a shift smaller than X% is not called "B slower").
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub equivalence: Option<f64>,
    /// A regression gate on the rounds: exit 5 when a condition's whole interval lies beyond its
    /// threshold, e.g. 'p99>+5%,throughput<-3%' (metrics: p50, p99, throughput).
    #[arg(long, value_name = "CONDITIONS", value_parser = parse_fail_if)]
    pub fail_if: Option<Conditions>,
    /// JSON instead of text (the same as the A/B run's ab.json).
    #[arg(long)]
    pub json: bool,
    /// Print a one-paragraph Markdown summary (for a CI job to post) instead of the text.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// The A/B run's directory; the rounds go beside it as DIR-01a, DIR-01b, … Default:
    /// runs/<UTC timestamp>-ab.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
}
