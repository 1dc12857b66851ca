//! One session of the script workload: a [`Client`] walks the scripts; this side talks to the
//! database, times each command, retries what pgbench retries, and records the events.

use std::sync::Arc;

use dbscope_core::{NameId, Recorder};
use dbscope_db::{ScriptSend, Session, StmtId, StmtResult, TargetError, TargetResult};
use dbscope_pgscript::client::ResultSet;
use dbscope_pgscript::parse::CommandKind;
use dbscope_pgscript::{Client, ClientConfig, EvalError, QueryMode, Script, Step};

use super::failure::{retryable, OnError};
use crate::workload::work::SessionWork;

/// Longest command text kept in an event's name.
const NAME_TEXT: usize = 60;

/// Retries and failures.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub max_tries: u32,
    pub latency_limit_ns: Option<u64>,
    pub on_error: OnError,
}

/// Event names of one script: its transaction, and each command's (0 for meta-commands that
/// record no event).
struct Names {
    txn: NameId,
    cmds: Vec<NameId>,
}

/// A SQL command's text as sent and its parameters.
type Bound = (String, Vec<String>);

pub(super) struct ScriptSession {
    client: Client,
    scripts: Arc<[Script]>,
    names: Vec<Names>,
    /// `-M prepared`: each SQL command's statement on this connection, prepared at first use.
    stmts: Vec<Vec<Option<StmtId>>>,
    mode: QueryMode,
    limits: Limits,
    skipped: NameId,
    /// Set when a failure stops the run (`--on-error stop`).
    abort: Option<String>,
    /// Each SQL command's text as last sent (variables substituted in `-M simple`) and the
    /// parameters last bound to it (`--explain`); `None` until the command first runs.
    bound: Vec<Vec<Option<Bound>>>,
}

/// The name of a command's event: `script:line text`, the text cut at [`NAME_TEXT`] characters.
fn command_name(script: &str, line: u32, text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = text.chars().take(NAME_TEXT).collect();
    let ell = if cut.len() < text.len() { "…" } else { "" };
    format!("{script}:{line} {cut}{ell}")
}

fn eval_error(e: EvalError) -> TargetError {
    TargetError {
        class: e.class.to_string(),
        sqlstate: None,
        mysql_code: None,
        message: e.message,
        connection_lost: false,
    }
}

fn result_sets(results: Vec<StmtResult>) -> Vec<ResultSet> {
    results
        .into_iter()
        .map(|r| ResultSet {
            columns: r.columns,
            rows: r.rows,
        })
        .collect()
}

impl ScriptSession {
    pub(super) fn new(scripts: Arc<[Script]>, cfg: ClientConfig, limits: Limits) -> Self {
        let mode = cfg.mode;
        ScriptSession {
            client: Client::new(scripts.clone(), cfg),
            stmts: scripts
                .iter()
                .map(|s| vec![None; s.commands.len()])
                .collect(),
            bound: scripts
                .iter()
                .map(|s| vec![None; s.commands.len()])
                .collect(),
            scripts,
            names: Vec::new(),
            mode,
            limits,
            skipped: 0,
            abort: None,
        }
    }

    /// One try of script `script` from its first command. On failure the failed command's event
    /// is recorded; the error is returned.
    fn attempt(
        &mut self,
        sess: &mut dyn Session,
        rec: &mut Recorder,
        script: usize,
    ) -> TargetResult<()> {
        let Self {
            client,
            scripts,
            names,
            stmts,
            mode,
            bound,
            ..
        } = self;
        let names = &names[script];
        let commands = &scripts[script].commands;
        let pipelining = sess.can_pipeline();
        let mut in_pipeline = false;
        // Commands queued in the pipeline, with whether they keep rows.
        let mut queued: Vec<usize> = Vec::new();
        loop {
            let t0 = rec.now();
            let step = client.next().map_err(eval_error)?;
            match step {
                Step::End => return Ok(()),
                Step::Sql {
                    cmd,
                    sql,
                    params: values,
                } => {
                    // Kept for `--explain`, reusing the buffers: no allocation once warm.
                    match &mut bound[script][cmd] {
                        Some((text, params)) => {
                            if text != sql {
                                text.clear();
                                text.push_str(sql);
                            }
                            if params.len() == values.len() {
                                params.clone_from_slice(values);
                            } else {
                                *params = values.to_vec();
                            }
                        }
                        slot => *slot = Some((sql.to_string(), values.to_vec())),
                    }
                    let keep =
                        matches!(&commands[cmd].kind, CommandKind::Sql(s) if s.gset.is_some());
                    let send = match mode {
                        QueryMode::Simple => ScriptSend::Simple(sql),
                        QueryMode::Extended => ScriptSend::Unnamed(sql),
                        QueryMode::Prepared => {
                            let id = match stmts[script][cmd] {
                                Some(id) => id,
                                None => {
                                    let id = sess.prepare(sql).inspect_err(|e| {
                                        rec.push_unpaced(
                                            names.cmds[cmd],
                                            t0,
                                            rec.now(),
                                            rec.outcome(&e.class),
                                            0,
                                        )
                                    })?;
                                    stmts[script][cmd] = Some(id);
                                    id
                                }
                            };
                            ScriptSend::Prepared(id)
                        }
                    };
                    // The parameters as `&str`, on the stack for up to 16 (no allocation per
                    // command).
                    let mut small = [""; 16];
                    let heap: Vec<&str>;
                    let params: &[&str] = if values.len() <= small.len() {
                        for (slot, v) in small.iter_mut().zip(values) {
                            *slot = v;
                        }
                        &small[..values.len()]
                    } else {
                        heap = values.iter().map(String::as_str).collect();
                        &heap
                    };
                    if in_pipeline && pipelining {
                        let r = sess.pipeline_queue(send, params, keep);
                        let t1 = rec.now();
                        match r {
                            Ok(()) => rec.push_unpaced(names.cmds[cmd], t0, t1, 0, 0),
                            Err(e) => {
                                rec.push_unpaced(names.cmds[cmd], t0, t1, rec.outcome(&e.class), 0);
                                return Err(e);
                            }
                        }
                        queued.push(cmd);
                        continue;
                    }
                    let r = sess.script(send, params, keep);
                    let t1 = rec.now();
                    match r {
                        Ok(results) => {
                            let rows: u64 = results.iter().map(|r| r.affected).sum();
                            rec.push_unpaced(names.cmds[cmd], t0, t1, 0, rows);
                            if keep {
                                client
                                    .store(cmd, &result_sets(results))
                                    .map_err(eval_error)?;
                            }
                        }
                        Err(e) => {
                            rec.push_unpaced(names.cmds[cmd], t0, t1, rec.outcome(&e.class), 0);
                            return Err(e);
                        }
                    }
                }
                Step::Sleep { cmd, us } => {
                    crate::pace::wait_until(rec, t0.saturating_add(us.saturating_mul(1_000)));
                    rec.push_unpaced(names.cmds[cmd], t0, rec.now(), 0, 0);
                }
                Step::Shell { cmd } => {
                    rec.push_unpaced(names.cmds[cmd], t0, rec.now(), 0, 0);
                }
                Step::StartPipeline { .. } => {
                    in_pipeline = true;
                    queued.clear();
                }
                Step::SyncPipeline { cmd } => {
                    if pipelining {
                        let r = sess.pipeline_sync();
                        let t1 = rec.now();
                        let outcome = r.as_ref().err().map_or(0, |e| rec.outcome(&e.class));
                        rec.push_unpaced(names.cmds[cmd], t0, t1, outcome, 0);
                        r?;
                    }
                }
                Step::EndPipeline { cmd } => {
                    in_pipeline = false;
                    if !pipelining {
                        continue;
                    }
                    let r = sess.pipeline_end();
                    let t1 = rec.now();
                    let (results, failed) = match r {
                        Ok(r) => r,
                        Err(e) => {
                            rec.push_unpaced(names.cmds[cmd], t0, t1, rec.outcome(&e.class), 0);
                            return Err(e);
                        }
                    };
                    let rows: u64 = results.iter().flatten().map(|r| r.affected).sum();
                    match failed {
                        Some((i, e)) => {
                            rec.push_unpaced(names.cmds[cmd], t0, t1, rec.outcome(&e.class), rows);
                            let at = queued.get(i).map_or(String::new(), |&c| {
                                format!(" (line {} of the pipeline)", commands[c].line)
                            });
                            return Err(TargetError {
                                message: format!("{}{at}", e.message),
                                ..e
                            });
                        }
                        None => rec.push_unpaced(names.cmds[cmd], t0, t1, 0, rows),
                    }
                    for (&c, r) in queued.iter().zip(results) {
                        let keep =
                            matches!(&commands[c].kind, CommandKind::Sql(s) if s.gset.is_some());
                        if let (true, Some(r)) = (keep, r) {
                            client.store(c, &result_sets(vec![r])).map_err(eval_error)?;
                        }
                    }
                    queued.clear();
                }
            }
        }
    }
}

impl SessionWork for ScriptSession {
    fn prepare(&mut self, _sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        // A new connection: statements are prepared again at first use.
        for s in &mut self.stmts {
            s.iter_mut().for_each(|id| *id = None);
        }
        self.skipped = rec.name("skipped (late)");
        self.names = self
            .scripts
            .iter()
            .map(|s| Names {
                txn: rec.name(&s.name),
                cmds: s
                    .commands
                    .iter()
                    .map(|c| match &c.kind {
                        CommandKind::Sql(_)
                        | CommandKind::Sleep { .. }
                        | CommandKind::Shell { .. }
                        | CommandKind::SetShell { .. }
                        | CommandKind::SyncPipeline
                        | CommandKind::EndPipeline => {
                            rec.name(&command_name(&s.name, c.line, &c.text))
                        }
                        _ => 0,
                    })
                    .collect(),
            })
            .collect();
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        let script = self.client.choose();
        let txn = self.names[script].txn;
        let start = rec.now();
        // Open loop: the latency a client sees runs from the intended start.
        let due = rec.op_intended().unwrap_or(start);
        if let (Some(limit), Some(intended)) = (self.limits.latency_limit_ns, rec.op_intended()) {
            if start.saturating_sub(intended) > limit {
                // pgbench --rate with --latency-limit: already late when due, skipped.
                rec.push(self.skipped, start, start, None, 0, 0);
                return Ok(());
            }
        }
        self.client.start(script);
        let mut tries = 1u32;
        loop {
            let result = self.attempt(sess, rec, script);
            let end = rec.now();
            let e = match result {
                Ok(()) => {
                    rec.push(txn, start, end, None, 0, tries as u64);
                    return Ok(());
                }
                Err(e) => e,
            };
            if !e.connection_lost {
                let _ = sess.rollback();
            }
            let in_time = self
                .limits
                .latency_limit_ns
                .is_none_or(|l| end.saturating_sub(due) < l);
            if retryable(&e) && !e.connection_lost && tries < self.limits.max_tries && in_time {
                tries += 1;
                self.client.retry();
                continue;
            }
            rec.push(txn, start, end, None, rec.outcome(&e.class), tries as u64);
            if self.limits.on_error == OnError::Stop && !retryable(&e) {
                self.abort = Some(format!(
                    "{} failed and --on-error is stop: {} ({})",
                    self.scripts[script].name, e.message, e.class
                ));
            }
            return Err(e);
        }
    }

    fn abort_reason(&self) -> Option<&str> {
        self.abort.as_deref()
    }

    fn statements(&self) -> Vec<crate::workload::Statement> {
        let mut out = Vec::new();
        for (script, cmds) in self.scripts.iter().zip(&self.bound) {
            for (c, b) in script.commands.iter().zip(cmds) {
                if let Some((sql, params)) = b {
                    out.push(crate::workload::Statement {
                        event: command_name(&script.name, c.line, &c.text),
                        sql: sql.clone(),
                        params: params
                            .iter()
                            .cloned()
                            .map(dbscope_db::Param::Text)
                            .collect(),
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_names_are_cut_and_spaced() {
        assert_eq!(
            command_name("s", 3, "SELECT  1\n  FROM t;"),
            "s:3 SELECT 1 FROM t;"
        );
        let long = "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;";
        let n = command_name("tpcb-like", 7, long);
        assert!(
            n.starts_with("tpcb-like:7 UPDATE pgbench_accounts SET"),
            "{n}"
        );
        assert!(n.ends_with('…') && n.chars().count() == "tpcb-like:7 ".len() + NAME_TEXT + 1);
    }
}
