//! Arguments of `dbscope baseline set|list|show` (clap).

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope baseline set main runs/20261205-080000-commit runs/20261205-080200-commit
  dbscope baseline list
  dbscope baseline show main
  dbscope compare --baseline main runs/20261205-090000-commit     # one run against main's
  dbscope compare --baseline main runs/pr-1 runs/pr-2             # several, pooled

A baseline names runs of one runs directory (kept in DIR/.dbscope-baselines.json and mirrored in
the catalogue, so `dbscope history --baseline NAME` lists them). Setting an existing name replaces
it. See docs/notebook.md.")]
pub struct BaselineArgs {
    #[command(subcommand)]
    pub command: BaselineCommand,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Name one or more complete runs of one runs directory as a baseline (replacing one of that
    /// name).
    Set {
        /// The baseline's name (letters, digits, '-', '_', '.', '/').
        name: String,
        /// Its runs (run directories, all in the same runs directory, all of one workload).
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<PathBuf>,
    },
    /// The baselines of a runs directory.
    List {
        /// The runs directory.
        #[arg(default_value = "runs")]
        dir: PathBuf,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One baseline's runs with their headline figures.
    Show {
        /// The baseline's name.
        name: String,
        /// The runs directory.
        #[arg(default_value = "runs")]
        dir: PathBuf,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}
