//! The `dbscope` binary: parses arguments and calls the library; nothing else.
//!
//! Modules, leaves first: `exit` (codes by error kind), `parse` (value parsers), `common` (stop
//! signal, progress bar, run directory, closing lines), `args` (the top-level `Cli` and its
//! `Command`s), then one folder per subcommand, each the same shape: `mod.rs` (the command:
//! `cmd_<name>(args) -> Result<u8, Exit>`), `args.rs` (its clap arguments) and, where the
//! arguments become a library config, that conversion (`run/plan.rs`). Commands that read the same
//! library's data share a folder: `report/` holds `report` and `export`, `capture/` holds
//! `capture`, `replay` and `restore-point`. Nothing imports `main`.

mod ab;
mod args;
mod baseline;
mod capture;
mod cluster;
mod common;
mod compare;
mod exit;
mod history;
mod import;
mod io;
mod parse;
mod query;
mod report;
mod run;
mod sweep;
mod tpch;
mod trace;
mod transfer;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use dbscope_core::redact::redact;

use args::{Cli, Command};

fn main() -> ExitCode {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run(a) => run::cmd_run(*a),
        Command::Report(a) => report::cmd_report(a),
        Command::Export(a) => report::cmd_export(a),
        Command::Compare(a) => compare::cmd_compare(a),
        Command::History(a) => history::cmd_history(a),
        Command::Baseline(a) => baseline::cmd_baseline(a),
        Command::Ab(a) => ab::cmd_ab(a),
        Command::Import(a) => import::cmd_import(a),
        Command::Trace(a) => trace::cmd_trace(a),
        Command::Io(a) => io::cmd_io(a),
        Command::Tpch(a) => tpch::cmd_tpch(a),
        Command::Tpcc(a) => run::tpcc::cmd_tpcc(a),
        Command::Capture(a) => capture::cmd_capture(a),
        Command::Replay(a) => capture::cmd_replay(a),
        Command::RestorePoint(a) => capture::cmd_restore_point(a),
        Command::Sweep(a) => sweep::cmd_sweep(a),
        Command::Transfer(a) => transfer::cmd_transfer(a),
        Command::Cluster(a) => cluster::cmd_cluster(a),
        Command::Query(a) => query::cmd_query(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(exit) => {
            let code = exit.code();
            let e = exit.1;
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let mut msg = format!("dbscope: error: {e}");
            for cause in e.chain().skip(1) {
                // Many errors already include their source's text (e.g. "path: No such file").
                let cause = cause.to_string();
                if !msg.contains(&cause) {
                    msg.push_str(&format!(": {cause}"));
                }
            }
            eprintln!("{}", redact(&msg));
            ExitCode::from(code)
        }
    }
}

/// The top-level command: [`Cli`]'s, its help ending with the exit codes ([`exit::HELP`]).
fn command() -> clap::Command {
    let cmd = Cli::command();
    let start = cmd
        .get_after_help()
        .map(|h| format!("{h}\n\n"))
        .unwrap_or_default();
    cmd.after_help(format!("{start}{}", exit::HELP))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn top_level_help_lists_the_exit_codes() {
        let help = super::command().render_help().to_string();
        assert!(help.contains("Start here:"), "{help}");
        assert!(help.contains(super::exit::HELP), "{help}");
        super::command().debug_assert();
    }
}
