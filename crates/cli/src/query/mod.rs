//! `dbscope query`: the data hub (issue 32; the work is in `dbscope_hub`), or how to build it.

pub mod args;

use crate::exit::Exit;
use crate::query::args::QueryArgs;

/// Runs `dbscope query` (this build has no hub: says how to get one, exit 2).
#[cfg(not(feature = "hub"))]
pub fn cmd_query(_: QueryArgs) -> Result<u8, Exit> {
    Err(anyhow::anyhow!(
        "this dbscope was built without the data hub (Apache DataFusion); build it with \
         `cargo build --release --features hub` (or `--features cluster`), see docs/hub.md"
    )
    .into())
}

#[cfg(feature = "hub")]
pub use with_hub::cmd_query;

#[cfg(feature = "hub")]
mod with_hub {
    use crate::query::args::QueryEngine;
    use dbscope_core::redact::redact;
    use dbscope_hub::{
        parse_plan, parse_source, read_sources_file, run_query, Dataflow, Engine, QueryConfig,
    };

    use super::*;
    use crate::common::{default_run_dir, outcome_code, redacted_command_line, stop_on_ctrl_c};

    /// Runs `dbscope query`.
    pub fn cmd_query(a: QueryArgs) -> Result<u8, Exit> {
        let mut sources = match &a.sources {
            Some(f) => read_sources_file(f)?,
            None => Vec::new(),
        };
        for s in &a.source {
            sources.push(parse_source(s)?);
        }
        let run = match &a.run {
            Some(p) => p.clone(),
            None => default_run_dir("query")?,
        };
        let (sql, dataflow) = match (&a.sql, &a.plan) {
            (_, Some(p)) => {
                let text = std::fs::read_to_string(p).map_err(|e| {
                    Exit(
                        crate::exit::EXIT_INPUT,
                        anyhow::anyhow!("{}: cannot read: {e}", p.display()),
                    )
                })?;
                let file = p.display().to_string();
                let steps = parse_plan(&text, &file)?;
                (text, Some(Dataflow { file, steps }))
            }
            (Some(sql), None) => (sql.clone(), None),
            (None, None) => return Err(anyhow::anyhow!("give the SQL or --plan FILE").into()),
        };
        let cfg = QueryConfig {
            sql,
            dataflow,
            sources,
            scan_connections: a.scan_connections.unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map_or(2, |n| n.get() as u32)
                    .clamp(2, 8)
            }),
            pushdown: !a.no_pushdown,
            out: a.out.clone(),
            show: a.show,
            run,
            command_line: redacted_command_line(),
            stop: Some(stop_on_ctrl_c()),
            engine: match (a.engine, &a.scheduler) {
                (QueryEngine::Local, None) => Engine::Local,
                (QueryEngine::Local, Some(_)) => {
                    return Err(anyhow::anyhow!(
                        "--scheduler is for --engine ballista (the query runs in this process \
                         otherwise)"
                    )
                    .into())
                }
                (QueryEngine::Ballista, Some(s)) => Engine::Ballista {
                    scheduler: s.clone(),
                },
                (QueryEngine::Ballista, None) => {
                    return Err(anyhow::anyhow!(
                        "--engine ballista needs --scheduler df://HOST:PORT"
                    )
                    .into())
                }
            },
        };
        let r = run_query(&cfg)?;
        if a.quiet {
            println!("{}", r.run.display());
        } else {
            if a.explain {
                for s in &r.scans {
                    println!("source table {} ({}):", s.table, s.source);
                    println!("  split: {}", s.split);
                    println!("  columns read: {}", s.columns.join(", "));
                    println!(
                        "  filters pushed: {}",
                        if s.pushed.is_empty() {
                            "none".to_string()
                        } else {
                            s.pushed.join(" AND ")
                        }
                    );
                    if !s.kept.is_empty() {
                        println!("  filters left to DataFusion: {}", s.kept.join(" AND "));
                    }
                    if let Some(l) = s.limit {
                        println!("  limit pushed: {l}");
                    }
                    if let Some(d) = &s.dynamic {
                        println!(
                            "  join's run-time filter sent: {d} (waited {:.3} s for the join's \
                             table)",
                            s.filter_wait_s
                        );
                    }
                    println!("  received: {} rows, {} bytes", s.rows, s.bytes);
                    for (i, sql) in s.sql.iter().enumerate() {
                        println!("  sql[{i}]: {}", redact(sql));
                    }
                }
                println!("{}", r.plan);
            }
            if !r.shown.is_empty() {
                println!("{}", r.shown);
            }
            let more = if (r.shown_rows as u64) < r.rows {
                format!(" (first {} shown)", r.shown_rows)
            } else {
                String::new()
            };
            println!("{} rows{more} in {:.3} s", r.rows, r.seconds);
            if let Some(o) = &r.out {
                println!("written to {}", o.display());
            }
            eprintln!(
                "dbscope: query: recorded {} events in {}; see: dbscope report {}",
                r.events,
                r.run.display(),
                r.run.display()
            );
        }
        if let Some(d) = &r.detail {
            eprintln!(
                "dbscope: query {}: {}; the run is kept in {}{}",
                r.outcome.as_str(),
                redact(d),
                r.run.display(),
                if cfg.out.is_some() {
                    "; nothing was written at --out"
                } else {
                    ""
                }
            );
        }
        Ok(outcome_code(r.outcome))
    }
}
