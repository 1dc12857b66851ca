//! The `dbscope` binary: parses arguments and calls the library; nothing else.

//!
//! Modules, leaves first: `exit` (codes by error kind), `parse` (value parsers), the `*args`
//! definitions, `common` (stop signal, progress bar, run directory, closing lines), then one
//! `cmd_*` per subcommand. Nothing imports `main`.

mod args;
mod capture_args;
mod cluster_args;
mod cmd_capture;
mod cmd_cluster;
mod cmd_compare;
mod cmd_events;
mod cmd_io;
mod cmd_report;
mod cmd_run;
mod cmd_sweep;
mod cmd_tpch;
mod cmd_trace;
mod cmd_transfer;
mod common;
mod compare_args;
mod events_args;
mod exit;
mod io_args;
mod lab_args;
mod parse;
mod sweep_args;
mod tpch_args;
mod trace_args;
mod transfer_args;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use dbscope_core::redact::redact;

use args::{Cli, Command};

fn main() -> ExitCode {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run(a) => cmd_run::cmd_run(*a),
        Command::Report(a) => cmd_report::cmd_report(a),
        Command::Export(a) => cmd_report::cmd_export(a),
        Command::Compare(a) => cmd_compare::cmd_compare(a),
        Command::Import(a) => cmd_compare::cmd_import(a),
        Command::Trace(a) => cmd_trace::cmd_trace(a),
        Command::Io(a) => cmd_io::cmd_io(a),
        Command::Tpch(a) => cmd_tpch::cmd_tpch(a),
        Command::Capture(a) => cmd_capture::cmd_capture(a),
        Command::Replay(a) => cmd_capture::cmd_replay(a),
        Command::RestorePoint(a) => cmd_capture::cmd_restore_point(a),
        Command::Sweep(a) => cmd_sweep::cmd_sweep(a),
        Command::Transfer(a) => cmd_transfer::cmd_transfer(a),
        Command::Cluster(a) => cmd_cluster::cmd_cluster(a),
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
