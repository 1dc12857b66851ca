//! `dbscope capture proxy|info|log`, `dbscope replay` and `dbscope restore-point …`.

pub mod args;
mod watch;

use std::io::{IsTerminal, Write};

use anyhow::anyhow;
use dbscope_analysis::text::thousands;
use dbscope_capture::{info, proxy, CaptureError};

use crate::capture::args::{CaptureArgs, CaptureCommand, CaptureInfoArgs, CaptureProxyArgs};
use crate::common::{redacted_command_line, stop_on_ctrl_c};
use crate::exit::{Exit, EXIT_FAILED, EXIT_USAGE};

/// Runs `dbscope capture …`.
pub fn cmd_capture(a: CaptureArgs) -> Result<u8, Exit> {
    match a.command {
        CaptureCommand::Proxy(p) => cmd_proxy(p),
        CaptureCommand::Info(i) => cmd_info(i),
        CaptureCommand::Log(l) => cmd_log(l),
    }
}

fn cmd_log(a: crate::capture::args::CaptureLogArgs) -> Result<u8, Exit> {
    use crate::capture::args::LogFormatArg;
    use dbscope_capture::log::{capture_log, LogFormat, LogOptions};
    if a.out.exists() {
        return Err(Exit::from(anyhow!(
            "{} already exists: give a new directory for the capture",
            a.out.display()
        )));
    }
    let opts = LogOptions {
        format: a.format.map(|f| match f {
            LogFormatArg::Csv => LogFormat::Csv,
            LogFormatArg::Json => LogFormat::Json,
            LogFormatArg::Stderr => LogFormat::Stderr,
        }),
        prefix: a.prefix.clone(),
        database: a.database.clone(),
    };
    let s = capture_log(&a.files, &a.out, &opts, redacted_command_line())?;
    println!(
        "captured {} calls from {} ({} log records{}) into {}; see: dbscope capture info {}",
        thousands(s.calls as u64),
        dbscope_analysis::text::plural(s.sessions as u64, "session"),
        thousands(s.records as u64),
        match s.bad {
            0 => String::new(),
            n => format!(", {} unreadable", thousands(n)),
        },
        s.dir.display(),
        s.dir.display()
    );
    Ok(0)
}

fn cmd_proxy(a: CaptureProxyArgs) -> Result<u8, Exit> {
    if a.out.exists() {
        return Err(Exit::from(anyhow!(
            "{} already exists: give a new directory for the capture",
            a.out.display()
        )));
    }
    if a.socket_mode.is_some() && !a.listen.contains('/') {
        return Err(Exit(
            EXIT_USAGE,
            anyhow!(
                "--socket-mode applies to a Unix socket only; --listen {} is TCP",
                a.listen
            ),
        ));
    }
    let stop = stop_on_ctrl_c();
    let cfg = proxy::ProxyConfig {
        listen: a.listen.clone(),
        upstream: a.upstream.clone(),
        out: a.out.clone(),
        duration: a.duration,
        threads: usize::from(a.threads),
        command_line: redacted_command_line(),
        socket_mode: a.socket_mode.unwrap_or(proxy::DEFAULT_SOCKET_MODE),
        watch: watch::open_watch(
            &a.observe,
            &a.upstream,
            Some("capture proxy (dbscope, its observer included)"),
        )?,
        // Read over the observer's connection (--observe, else the upstream as given), which
        // names a user and database; not at all with --no-observe.
        target_info: match a.observe.no_observe {
            true => None,
            false => watch::describe_postgres(a.observe.observe.as_deref().unwrap_or(&a.upstream)),
        },
    };
    let live = !a.quiet && std::io::stderr().is_terminal();
    let quiet = a.quiet;
    let upstream = dbscope_core::redact::redact(&a.upstream);
    let listening = |addr: &proxy::Listening| {
        if !quiet {
            eprintln!(
                "dbscope: capturing: clients connect to {addr} ({}; forwarded to {upstream}); Ctrl-C stops and keeps everything",
                addr.libpq_hint()
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
                "captured {} calls ({} errors) from {} in {:.1} s into {}; see: dbscope capture info {}",
                thousands(s.calls),
                thousands(s.errors),
                dbscope_analysis::text::plural(s.sessions as u64, "session"),
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

/// Runs `dbscope replay …`.
pub fn cmd_replay(a: crate::capture::args::ReplayArgs) -> Result<u8, Exit> {
    use dbscope_capture::{replay, restore};
    let out = match &a.out {
        Some(o) => o.clone(),
        None => crate::common::default_run_dir("replay")?,
    };
    if out.exists() {
        return Err(Exit::from(anyhow!(
            "{} already exists: give a new directory for the replay",
            out.display()
        )));
    }
    let observer = watch::open_watch(&a.observe, &a.target, None)?;
    if let Some(name) = &a.restore {
        let rp = restore::reset(&a.target, name)?;
        if !a.quiet {
            eprintln!(
                "dbscope: database {} reset to restore point {} (taken {})",
                rp.database, rp.name, rp.taken
            );
        }
    }
    let target_info = watch::describe_postgres(&a.target);
    let stop = stop_on_ctrl_c();
    let cfg = replay::ReplayConfig {
        capture: a.capture.clone(),
        target: a.target.clone(),
        out: out.clone(),
        speed: a.speed.0,
        sync_commit: a.sync == crate::capture::args::SyncArg::Commit,
        sync_slack: a.sync_slack,
        restored_from: a.restore.clone(),
        command_line: redacted_command_line(),
        watch: observer,
        target_info,
    };
    let live = !a.quiet && std::io::stderr().is_terminal();
    let result = replay::run(&cfg, &stop, |t| {
        if live {
            eprint!("\r{:>6.0} s replaying   ", t.as_secs_f64());
            let _ = std::io::stderr().flush();
        }
    });
    if live {
        eprintln!();
    }
    let s = match result {
        Ok(s) => s,
        Err(e @ CaptureError::Failed { .. }) => return Err(Exit(EXIT_FAILED, e.into())),
        Err(e) => return Err(Exit::from(e)),
    };
    let run = dbscope_core::RunDir::open(&s.dir)?;
    let code = crate::common::finish_run(
        &s.dir,
        run.manifest.outcome,
        run.manifest.outcome_detail.as_deref(),
        run.manifest.events_written.unwrap_or(0),
        None,
        a.quiet,
    )?;
    if !a.quiet {
        println!(
            "replayed {} calls ({} not replayed, {} diverged) in {:.3} s; the capture took {:.3} s",
            thousands(s.replayed as u64),
            thousands(s.not_replayed as u64),
            thousands(s.diverged as u64),
            s.replay_s,
            s.capture_s
        );
    }
    Ok(code)
}

/// Runs `dbscope restore-point …`.
pub fn cmd_restore_point(a: crate::capture::args::RestorePointArgs) -> Result<u8, Exit> {
    use crate::capture::args::RestorePointCommand as C;
    use dbscope_capture::restore;
    match a.command {
        C::Create(p) => {
            let rp = restore::create(&p.target, &p.name)?;
            println!(
                "restore point {} of database {} taken {}",
                rp.name, rp.database, rp.taken
            );
        }
        C::Reset(p) => {
            let rp = restore::reset(&p.target, &p.name)?;
            println!(
                "database {} reset to restore point {} (taken {})",
                rp.database, rp.name, rp.taken
            );
        }
        C::Drop(p) => {
            restore::drop_point(&p.target, &p.name)?;
            println!("restore point {} dropped", p.name);
        }
        C::List(t) => {
            let points = restore::list(&t.target)?;
            if points.is_empty() {
                println!("no restore points on this server");
            }
            for rp in points {
                println!("{:<24} of {:<24} taken {}", rp.name, rp.database, rp.taken);
            }
        }
    }
    Ok(0)
}
