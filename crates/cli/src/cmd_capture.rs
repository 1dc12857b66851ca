//! `dbscope capture proxy|info`.

use std::io::{IsTerminal, Write};

use anyhow::anyhow;
use dbscope_capture::{info, proxy, CaptureError};

use crate::capture_args::{CaptureArgs, CaptureCommand, CaptureInfoArgs, CaptureProxyArgs};
use crate::common::{redacted_command_line, stop_on_ctrl_c};
use crate::exit::{Exit, EXIT_FAILED};

/// Runs `dbscope capture …`.
pub fn cmd_capture(a: CaptureArgs) -> Result<u8, Exit> {
    match a.command {
        CaptureCommand::Proxy(p) => cmd_proxy(p),
        CaptureCommand::Info(i) => cmd_info(i),
    }
}

fn cmd_proxy(a: CaptureProxyArgs) -> Result<u8, Exit> {
    if a.out.exists() {
        return Err(Exit::from(anyhow!(
            "{} already exists: give a new directory for the capture",
            a.out.display()
        )));
    }
    let stop = stop_on_ctrl_c();
    let cfg = proxy::ProxyConfig {
        listen: a.listen.clone(),
        upstream: a.upstream.clone(),
        out: a.out.clone(),
        duration: a.duration,
        command_line: redacted_command_line(),
    };
    let live = !a.quiet && std::io::stderr().is_terminal();
    let quiet = a.quiet;
    let upstream = dbscope_core::redact::redact(&a.upstream);
    let listening = |addr: std::net::SocketAddr| {
        if !quiet {
            eprintln!(
                "dbscope: capturing: clients connect to {addr} (forwarded to {upstream}); Ctrl-C stops and keeps everything"
            );
        }
    };
    let result = proxy::run(&cfg, &stop, listening, |l, t| {
        if live {
            use std::sync::atomic::Ordering::Relaxed;
            eprint!(
                "\r{:>6.0} s  sessions {} ({} open)  calls {}  errors {}   ",
                t.as_secs_f64(),
                l.sessions.load(Relaxed),
                l.open.load(Relaxed),
                l.calls.load(Relaxed),
                l.errors.load(Relaxed)
            );
            let _ = std::io::stderr().flush();
        }
    });
    if live {
        eprintln!();
    }
    match result {
        Ok(s) => {
            println!(
                "captured {} calls ({} errors) from {} sessions in {:.1} s into {}; see: dbscope capture info {}",
                s.calls,
                s.errors,
                s.sessions,
                s.seconds,
                s.dir.display(),
                s.dir.display()
            );
            Ok(0)
        }
        Err(e @ CaptureError::Failed { .. }) => Err(Exit(EXIT_FAILED, e.into())),
        Err(e) => Err(Exit::from(e)),
    }
}

fn cmd_info(a: CaptureInfoArgs) -> Result<u8, Exit> {
    let i = info::read(&a.capture)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&i)?);
    } else {
        print!("{}", info::render(&i, a.top));
    }
    Ok(0)
}
