//! [`Client`]: one client's interpreter (pgbench's `CState`). It walks a script, evaluates the
//! meta-commands itself (`\set`, `\if`…, `\shell`, `\setshell`) and hands every SQL command,
//! sleep and pipeline boundary to the caller as a [`Step`]; the caller talks to the database,
//! times what it does, and gives `\gset`/`\aset` their rows back with [`Client::store`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::process::{Command as Process, Stdio};
use std::sync::Arc;

use crate::error::EvalError;
use crate::expr::{self, Env, Expr};
use crate::parse::{valid_variable_name, Arg, CommandKind, Piece, Script};
use crate::prng::Prng;
use crate::value::Value;

/// How SQL is sent (pgbench `-M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueryMode {
    /// Simple query protocol, variables substituted into the text.
    #[default]
    Simple,
    /// Extended protocol, unnamed statement, variables as parameters.
    Extended,
    /// Extended protocol, each command prepared once per connection.
    Prepared,
}

/// What a client starts with.
#[derive(Clone, Debug, Default)]
pub struct ClientConfig {
    /// `:client_id` (0-based, as pgbench).
    pub client_id: u32,
    /// `:scale`.
    pub scale: i64,
    /// `:random_seed`: the run's seed.
    pub random_seed: u64,
    /// `:default_seed`: the default seed of `hash*` and `permute` (pgbench draws it from the
    /// run's seed; the same for every client).
    pub default_seed: i64,
    /// `-D NAME=VALUE`, set as text before the builtins.
    pub defines: Vec<(String, String)>,
    /// How SQL is sent: decides whether [`Step::Sql`] carries substituted text or parameters.
    pub mode: QueryMode,
    /// Seed of this client's generator (random functions and the choice of script). The random
    /// functions draw from `Prng::seed(seed)`, as pgbench's `cs_func_rs` is
    /// `pg_prng_seed(seed)`; the choice of script from a second generator seeded from `seed`
    /// (pgbench has one per thread, `ts_choose_rs`).
    pub seed: u64,
}

/// The rows of one statement's result, columns as text (`None` for NULL), for `\gset`/`\aset`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultSet {
    /// Column names.
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<Option<String>>>,
}

/// What the caller does next.
#[derive(Debug, PartialEq)]
pub enum Step<'a> {
    /// Send SQL command `cmd` (an index into the script's commands). In simple mode `sql` has
    /// the variables substituted and `params` is empty; in extended and prepared modes `sql` is
    /// [`crate::parse::Sql::parameterized`] and `params` the values of `$1`, `$2`…
    Sql {
        /// Index of the command.
        cmd: usize,
        /// The SQL to send.
        sql: &'a str,
        /// Parameter values.
        params: &'a [String],
    },
    /// Sleep this long (`\sleep`).
    Sleep {
        /// Index of the command.
        cmd: usize,
        /// Microseconds.
        us: u64,
    },
    /// `\shell` or `\setshell` ran (inside [`Client::next`]).
    Shell {
        /// Index of the command.
        cmd: usize,
    },
    /// `\startpipeline`
    StartPipeline {
        /// Index of the command.
        cmd: usize,
    },
    /// `\syncpipeline`
    SyncPipeline {
        /// Index of the command.
        cmd: usize,
    },
    /// `\endpipeline`
    EndPipeline {
        /// Index of the command.
        cmd: usize,
    },
    /// The script is done: the transaction ended.
    End,
}

/// One client's interpreter.
pub struct Client {
    scripts: Arc<[Script]>,
    cfg: ClientConfig,
    vars: Vars,
    /// The random functions' generator (pgbench's `cs_func_rs`).
    rng: Prng,
    /// Its state when the transaction started (pgbench's `random_state`).
    saved_rng: Prng,
    /// The generator of the choice of script.
    choose_rng: Prng,
    /// The script running, if one was started and has not ended.
    current: Option<usize>,
    /// The next command.
    pc: usize,
    /// Inside `\startpipeline` … `\endpipeline`.
    pipeline: bool,
    /// Simple mode's SQL text, reused.
    sql: String,
    /// Extended and prepared modes' parameter values, reused.
    params: Vec<String>,
    nparams: usize,
    /// A variable name being built (`\gset` prefix + column), reused.
    name: String,
}

/// XORed into the seed of the script-choice generator so that it draws apart from the random
/// functions' generator.
const CHOOSE_SEED_MIX: u64 = 0x6a09_e667_f3bc_c908;

impl Client {
    /// A client of `scripts` (weights inside), its variables set from `cfg`.
    ///
    /// As pgbench's `main`: the `-D` definitions as text, then `:scale`, `:client_id`,
    /// `:default_seed` and `:random_seed` unless a definition set them.
    pub fn new(scripts: Arc<[Script]>, cfg: ClientConfig) -> Client {
        let mut vars = Vars::default();
        for (name, text) in &cfg.defines {
            let slot = vars.slot(name);
            vars.set_text(slot, text);
        }
        let builtins = [
            ("scale", cfg.scale),
            ("client_id", i64::from(cfg.client_id)),
            ("default_seed", cfg.default_seed),
            // pgbench keeps the seed in an int64: a seed above i64::MAX reads negative
            ("random_seed", cfg.random_seed as i64),
        ];
        for (name, value) in builtins {
            if vars.get(name).is_none() {
                let slot = vars.slot(name);
                vars.set_value(slot, Value::Int(value));
            }
        }
        let rng = Prng::seed(cfg.seed);
        Client {
            saved_rng: rng.clone(),
            rng,
            choose_rng: Prng::seed(cfg.seed ^ CHOOSE_SEED_MIX),
            scripts,
            cfg,
            vars,
            current: None,
            pc: 0,
            pipeline: false,
            sql: String::new(),
            params: Vec::new(),
            nparams: 0,
            name: String::new(),
        }
    }
    /// The scripts.
    pub fn scripts(&self) -> &Arc<[Script]> {
        &self.scripts
    }
    /// The configuration it was made with.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }
    /// Picks the next script by weight (pgbench's `chooseScript`), from this client's generator.
    ///
    /// With one script nothing is drawn (pgbench returns it without drawing); with a total
    /// weight of zero (which pgbench refuses before running) the first script is returned.
    pub fn choose(&mut self) -> usize {
        if self.scripts.len() <= 1 {
            return 0;
        }
        let total: u64 = self.scripts.iter().map(|s| u64::from(s.weight)).sum();
        if total == 0 {
            return 0;
        }
        let mut w = self.choose_rng.u64_range(0, total - 1) as i64;
        let mut i = 0;
        loop {
            w -= i64::from(self.scripts[i].weight);
            i += 1;
            if w < 0 || i == self.scripts.len() {
                return i - 1;
            }
        }
    }
    /// Starts script `script` at its first command and remembers the generator's state, so
    /// [`Client::retry`] replays the same random values.
    pub fn start(&mut self, script: usize) {
        self.current = (script < self.scripts.len()).then_some(script);
        self.pc = 0;
        self.pipeline = false;
        // pgbench's CSTATE_START_TX: st->random_state = st->cs_func_rs
        self.saved_rng.clone_from(&self.rng);
    }
    /// Starts the current script again from its first command with the generator as it was at
    /// [`Client::start`] (pgbench's retry of a serialization failure or deadlock).
    ///
    /// As pgbench's CSTATE_RETRY, variables keep the values the failed try gave them; only the
    /// generator goes back.
    pub fn retry(&mut self) {
        self.rng.clone_from(&self.saved_rng);
        self.pc = 0;
        self.pipeline = false;
    }
    /// Runs meta-commands until the next thing for the caller to do.
    ///
    /// Before [`Client::start`], and after the script's end, this is [`Step::End`].
    // Not an Iterator: each step borrows the client's buffers until the caller is done with it.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Step<'_>, EvalError> {
        Ok(match self.advance()? {
            Out::Sql(cmd) => {
                let sql = match self.cfg.mode {
                    QueryMode::Simple => self.sql.as_str(),
                    QueryMode::Extended | QueryMode::Prepared => {
                        let script = self.current.unwrap_or(0);
                        match &self.scripts[script].commands[cmd].kind {
                            CommandKind::Sql(sql) => sql.parameterized.as_str(),
                            _ => "",
                        }
                    }
                };
                Step::Sql {
                    cmd,
                    sql,
                    params: &self.params[..self.nparams],
                }
            }
            Out::Sleep(cmd, us) => Step::Sleep { cmd, us },
            Out::Shell(cmd) => Step::Shell { cmd },
            Out::StartPipeline(cmd) => Step::StartPipeline { cmd },
            Out::SyncPipeline(cmd) => Step::SyncPipeline { cmd },
            Out::EndPipeline(cmd) => Step::EndPipeline { cmd },
            Out::End => Step::End,
        })
    }
    /// Gives command `cmd`'s results (one per statement; a compound command has several) to its
    /// `\gset`/`\aset`; a command without either ignores them. `\gset` wants exactly one row.
    ///
    /// pgbench's `readCommandResponse`: `\gset` takes the last statement's result, which must
    /// have exactly one row; `\aset` takes every statement's last row, skipping empty results.
    /// A result without columns stands for a statement that returns no rows. Values are stored
    /// as text (a NULL as the empty text, read as NULL by expressions).
    pub fn store(&mut self, cmd: usize, results: &[ResultSet]) -> Result<(), EvalError> {
        let Some(script) = self.current else {
            return Ok(());
        };
        let scripts = Arc::clone(&self.scripts);
        let Some(CommandKind::Sql(sql)) = scripts[script].commands.get(cmd).map(|c| &c.kind) else {
            return Ok(());
        };
        let Some(gset) = &sql.gset else {
            return Ok(());
        };
        let id = self.cfg.client_id;
        let fail = |message: String| EvalError {
            class: "script:gset",
            message,
        };
        if results.is_empty() {
            return Err(fail(format!("client {id} command {cmd}: no results")));
        }
        for (q, rs) in results.iter().enumerate() {
            let is_last = q + 1 == results.len();
            if !(gset.all || is_last) {
                continue;
            }
            let n = if rs.columns.is_empty() {
                0
            } else {
                rs.rows.len()
            };
            if !gset.all && n != 1 {
                return Err(fail(format!(
                    "client {id} script {script} command {cmd} query {q}: expected one row, got {n}"
                )));
            }
            if n == 0 {
                continue;
            }
            let row = &rs.rows[n - 1];
            for (f, column) in rs.columns.iter().enumerate() {
                self.name.clear();
                self.name.push_str(&gset.prefix);
                self.name.push_str(column);
                let slot = match self.vars.get(&self.name) {
                    Some(slot) => slot,
                    None if valid_variable_name(&self.name) => self.vars.slot(&self.name),
                    None => {
                        let what = if gset.all { "aset" } else { "gset" };
                        return Err(fail(format!(
                            "{what}: invalid variable name: \"{}\"",
                            self.name
                        )));
                    }
                };
                match row.get(f).and_then(|v| v.as_deref()) {
                    Some(text) => self.vars.set_text(slot, text),
                    None => self.vars.set_null_text(slot),
                }
            }
        }
        Ok(())
    }
    /// The text value of variable `name` (tests, `debug`).
    pub fn var(&self, name: &str) -> Option<String> {
        let slot = &self.vars.slots[self.vars.get(name)?];
        if slot.text_valid {
            Some(slot.text.clone())
        } else {
            slot.value.as_ref().map(value_text)
        }
    }

    /// Runs commands until one for the caller.
    fn advance(&mut self) -> Result<Out, EvalError> {
        let Some(script) = self.current else {
            return Ok(Out::End);
        };
        let scripts = Arc::clone(&self.scripts);
        let commands = &scripts[script].commands;
        loop {
            let cmd = self.pc;
            let Some(command) = commands.get(cmd) else {
                self.current = None;
                if self.pipeline {
                    self.pipeline = false;
                    return Err(pipeline_error("end of script reached with pipeline open"));
                }
                return Ok(Out::End);
            };
            match &command.kind {
                CommandKind::Sql(sql) => {
                    if self.pipeline && sql.gset.is_some() {
                        let word = if sql.gset.as_ref().is_some_and(|g| g.all) {
                            "aset"
                        } else {
                            "gset"
                        };
                        return Err(pipeline_error(&format!(
                            "\\{word} is not allowed in pipeline mode"
                        )));
                    }
                    self.fill_sql(sql)?;
                    self.pc += 1;
                    return Ok(Out::Sql(cmd));
                }
                CommandKind::Set { var, expr } => {
                    let value = self.eval(expr)?;
                    let slot = self.vars.slot(var);
                    self.vars.set_value(slot, value);
                    self.pc += 1;
                }
                CommandKind::Sleep { amount, unit_us } => {
                    let n = match amount {
                        Arg::Text(text) => atoi(text),
                        Arg::Var(name) => {
                            let Some(text) = self.text_of(name) else {
                                return Err(undefined(format!(
                                    "sleep: undefined variable \"{name}\""
                                )));
                            };
                            let n = atoi(text);
                            // pgbench's evaluateSleep: 0 from something that does not start
                            // with a digit is not a number
                            if n == 0 && !text.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                                return Err(EvalError {
                                    class: "script:sleep",
                                    message: format!(
                                        "sleep: invalid sleep time \"{text}\" for variable \"{name}\""
                                    ),
                                });
                            }
                            n
                        }
                    };
                    self.pc += 1;
                    let us = n.saturating_mul(*unit_us as i64).max(0) as u64;
                    return Ok(Out::Sleep(cmd, us));
                }
                CommandKind::Shell { argv } => {
                    self.shell(None, argv)?;
                    self.pc += 1;
                    return Ok(Out::Shell(cmd));
                }
                CommandKind::SetShell { var, argv } => {
                    self.shell(Some(var), argv)?;
                    self.pc += 1;
                    return Ok(Out::Shell(cmd));
                }
                CommandKind::If { cond, next } => {
                    if truth(&self.eval(cond)?) {
                        self.pc += 1;
                    } else {
                        self.jump(commands, *next)?;
                    }
                }
                // reached at the end of a branch that ran: on to the \endif
                CommandKind::Elif { end, .. } | CommandKind::Else { end } => self.pc = *end,
                CommandKind::Endif => self.pc += 1,
                CommandKind::StartPipeline => {
                    if self.cfg.mode == QueryMode::Simple {
                        return Err(pipeline_error(
                            "cannot use pipeline mode with the simple query protocol",
                        ));
                    }
                    if self.pipeline {
                        return Err(pipeline_error("already in pipeline mode"));
                    }
                    self.pipeline = true;
                    self.pc += 1;
                    return Ok(Out::StartPipeline(cmd));
                }
                CommandKind::SyncPipeline => {
                    if !self.pipeline {
                        return Err(pipeline_error("not in pipeline mode"));
                    }
                    self.pc += 1;
                    return Ok(Out::SyncPipeline(cmd));
                }
                CommandKind::EndPipeline => {
                    if !self.pipeline {
                        return Err(pipeline_error("not in pipeline mode"));
                    }
                    self.pipeline = false;
                    self.pc += 1;
                    return Ok(Out::EndPipeline(cmd));
                }
            }
        }
    }

    /// A condition was false: go to branch `target` (an `\elif` to test, an `\else` to run, or
    /// the `\endif`).
    fn jump(
        &mut self,
        commands: &[crate::parse::Command],
        mut target: usize,
    ) -> Result<(), EvalError> {
        loop {
            match commands.get(target).map(|c| &c.kind) {
                Some(CommandKind::Elif { cond, next, .. }) => {
                    if truth(&self.eval(cond)?) {
                        self.pc = target + 1;
                        return Ok(());
                    }
                    target = *next;
                }
                _ => {
                    self.pc = target + 1;
                    return Ok(());
                }
            }
        }
    }

    fn eval(&mut self, expr: &Expr) -> Result<Value, EvalError> {
        let default_seed = match self
            .vars
            .get("default_seed")
            .and_then(|s| self.vars.slots[s].value.clone())
        {
            Some(Value::Int(seed)) => seed,
            _ => self.cfg.default_seed,
        };
        let mut env = ClientEnv {
            vars: &self.vars,
            rng: &mut self.rng,
            default_seed,
            script: self.current.unwrap_or(0),
            command: self.pc,
        };
        expr::eval(expr, &mut env)
    }

    /// The text of a defined variable, computed (and kept) from its value if needed.
    fn text_of(&mut self, name: &str) -> Option<&str> {
        let slot = self.vars.get(name)?;
        let slot = &mut self.vars.slots[slot];
        if !slot.defined {
            return None;
        }
        slot.ensure_text();
        Some(&slot.text)
    }

    /// Simple mode: the text with the variables' values in it; extended and prepared modes:
    /// the parameters' values.
    fn fill_sql(&mut self, sql: &crate::parse::Sql) -> Result<(), EvalError> {
        let undefined_var = |name: &str| undefined(format!("undefined variable \"{name}\""));
        match self.cfg.mode {
            QueryMode::Simple => {
                self.nparams = 0;
                let mut out = std::mem::take(&mut self.sql);
                out.clear();
                for piece in &sql.pieces {
                    match piece {
                        Piece::Text(text) => out.push_str(text),
                        Piece::Var(name) => match self.text_of(name) {
                            Some(text) => out.push_str(text),
                            None => {
                                self.sql = out;
                                return Err(undefined_var(name));
                            }
                        },
                    }
                }
                self.sql = out;
            }
            QueryMode::Extended | QueryMode::Prepared => {
                let mut params = std::mem::take(&mut self.params);
                for (k, name) in sql.params.iter().enumerate() {
                    let Some(text) = self.text_of(name) else {
                        self.params = params;
                        return Err(undefined_var(name));
                    };
                    match params.get_mut(k) {
                        Some(p) => {
                            p.clear();
                            p.push_str(text);
                        }
                        None => params.push(text.to_string()),
                    }
                }
                self.params = params;
                self.nparams = sql.params.len();
            }
        }
        Ok(())
    }

    /// pgbench's `runShellCommand`: the words joined by blanks (`:var` replaced by its value,
    /// `::word` is `:word`), run by `/bin/sh -c` (`system()`), or for `\setshell` read from its
    /// output (`popen()`), whose first line must be an integer.
    fn shell(&mut self, var: Option<&String>, argv: &[Arg]) -> Result<(), EvalError> {
        let word0 = match argv.first() {
            Some(Arg::Text(t)) => t.clone(),
            Some(Arg::Var(v)) => format!(":{v}"),
            None => String::new(),
        };
        let fail = |message: String| EvalError {
            class: "script:shell",
            message,
        };
        let mut command = String::new();
        for (i, arg) in argv.iter().enumerate() {
            let text = match arg {
                Arg::Text(t) => t.as_str(),
                Arg::Var(v) => match self.text_of(v) {
                    Some(t) => t,
                    None => return Err(undefined(format!("{word0}: undefined variable \":{v}\""))),
                },
            };
            // SHELL_COMMAND_SIZE is 256 with its terminating NUL
            if command.len() + text.len() + usize::from(i > 0) >= 255 {
                return Err(fail(format!("{word0}: shell command is too long")));
            }
            if i > 0 {
                command.push(' ');
            }
            command.push_str(text);
        }
        let Some(var) = var else {
            let status = Process::new("/bin/sh").arg("-c").arg(&command).status();
            return match status {
                Ok(s) if s.success() => Ok(()),
                _ => Err(fail(format!("{word0}: could not launch shell command"))),
            };
        };
        let child = Process::new("/bin/sh")
            .arg("-c")
            .arg(&command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            return Err(fail(format!("{word0}: could not launch shell command")));
        };
        let mut output = Vec::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_end(&mut output);
        }
        let _ = child.wait();
        // fgets into a 64-byte buffer: the first line, newline kept, at most 63 bytes
        let mut line_end = output
            .iter()
            .position(|&c| c == b'\n')
            .map_or(output.len(), |n| n + 1);
        line_end = line_end.min(63);
        let line = String::from_utf8_lossy(&output[..line_end]).into_owned();
        if line.is_empty() {
            return Err(fail(format!(
                "{word0}: could not read result of shell command"
            )));
        }
        let Some(value) = strtol_whole(&line) else {
            return Err(fail(format!(
                "{word0}: shell command must return an integer (not \"{line}\")"
            )));
        };
        let slot = self.vars.slot(var);
        // pgbench keeps `(int) strtol(…)`
        self.vars
            .set_value(slot, Value::Int(i64::from(value as i32)));
        Ok(())
    }
}

/// Parses `NAME=VALUE` of `-D` as pgbench does: `invalid variable definition: "…"` without a
/// name or a value, `option: invalid variable name: "…"` for a name that cannot be one.
pub fn parse_define(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => {
            if valid_variable_name(name) {
                Ok((name.to_string(), value.to_string()))
            } else {
                Err(format!("option: invalid variable name: \"{name}\""))
            }
        }
        _ => Err(format!("invalid variable definition: \"{arg}\"")),
    }
}

/// What [`Client::advance`] stopped at.
enum Out {
    Sql(usize),
    Sleep(usize, u64),
    Shell(usize),
    StartPipeline(usize),
    SyncPipeline(usize),
    EndPipeline(usize),
    End,
}

fn undefined(message: String) -> EvalError {
    EvalError {
        class: "script:undefined-variable",
        message,
    }
}

fn pipeline_error(message: &str) -> EvalError {
    EvalError {
        class: "script:pipeline",
        message: message.to_string(),
    }
}

/// pgbench's `valueTruth`: NULL and zero are false.
fn truth(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Double(d) => *d != 0.0,
    }
}

/// pgbench's `getVariable` text of a value (NULL is `NULL`: a `\set x NULL` substituted into
/// SQL is the keyword).
fn value_text(v: &Value) -> String {
    v.to_text()
}

/// C's `atoi`: blanks, a sign, digits; anything else ends it (saturating instead of C's
/// undefined overflow).
fn atoi(text: &str) -> i64 {
    let t = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for c in t.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if negative {
        -n
    } else {
        n
    }
}

/// `strtol(res, &end, 10)` then pgbench's check that only blanks follow: the value, or `None`
/// when something else does (a blank line reads 0, as in pgbench).
fn strtol_whole(res: &str) -> Option<i64> {
    let t = res.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (negative, digits_from) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let ndigits = digits_from.bytes().take_while(u8::is_ascii_digit).count();
    // without digits strtol's end is the start of the text
    let rest = if ndigits == 0 {
        res
    } else {
        &digits_from[ndigits..]
    };
    if !rest
        .trim_start_matches(|c: char| c.is_ascii_whitespace())
        .is_empty()
    {
        return None;
    }
    let mut n: i64 = 0;
    for c in digits_from[..ndigits].bytes() {
        n = n.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    Some(if negative { n.saturating_neg() } else { n })
}

/// A variable (pgbench's `Variable`): its text, its value, or both.
#[derive(Default)]
struct Slot {
    /// The variable's name (for messages).
    name: String,
    /// Set (a slot can exist for a name only looked up).
    defined: bool,
    /// The text form; valid when `text_valid` (kept allocated to be reused).
    text: String,
    text_valid: bool,
    /// The value, when known (set by `\set`, or read from the text).
    value: Option<Value>,
    /// The text could not be read as a value: pgbench's message.
    malformed: Option<String>,
}

impl Slot {
    fn ensure_text(&mut self) {
        if self.text_valid {
            return;
        }
        self.text.clear();
        match &self.value {
            Some(Value::Int(i)) => {
                let _ = write!(self.text, "{i}");
            }
            Some(v) => self.text.push_str(&value_text(v)),
            None => {}
        }
        self.text_valid = true;
    }
}

/// A client's variables.
#[derive(Default)]
struct Vars {
    index: HashMap<String, usize>,
    slots: Vec<Slot>,
}

impl Vars {
    fn get(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }
    fn slot(&mut self, name: &str) -> usize {
        if let Some(&slot) = self.index.get(name) {
            return slot;
        }
        self.slots.push(Slot {
            name: name.to_string(),
            ..Slot::default()
        });
        self.index.insert(name.to_string(), self.slots.len() - 1);
        self.slots.len() - 1
    }
    fn forget_malformed(&mut self, slot: usize) {
        self.slots[slot].malformed = None;
    }
    fn set_value(&mut self, slot: usize, value: Value) {
        self.forget_malformed(slot);
        let s = &mut self.slots[slot];
        s.defined = true;
        s.value = Some(value);
        s.text_valid = false;
    }
    /// A text from `-D`, `\gset`, `\aset`: read as a value now (pgbench reads it when an
    /// expression first uses it; a failure is kept and said then).
    fn set_text(&mut self, slot: usize, text: &str) {
        self.forget_malformed(slot);
        let value = Value::from_text(&self.slots[slot].name, text);
        let s = &mut self.slots[slot];
        s.defined = true;
        s.text.clear();
        s.text.push_str(text);
        s.text_valid = true;
        match value {
            Ok(v) => s.value = Some(v),
            Err(message) => {
                s.value = None;
                s.malformed = Some(message);
            }
        }
    }
    /// A NULL column of `\gset`/`\aset`: the empty text (what pgbench stores), NULL as a value.
    fn set_null_text(&mut self, slot: usize) {
        self.forget_malformed(slot);
        let s = &mut self.slots[slot];
        s.defined = true;
        s.text.clear();
        s.text_valid = true;
        s.value = Some(Value::Null);
    }
}

/// What an expression sees of a client.
struct ClientEnv<'c> {
    vars: &'c Vars,
    rng: &'c mut Prng,
    default_seed: i64,
    /// Where it is evaluated, for `debug()`.
    script: usize,
    command: usize,
}

impl Env for ClientEnv<'_> {
    fn var(&self, name: &str) -> Option<Value> {
        let slot = &self.vars.slots[self.vars.get(name)?];
        if slot.defined {
            slot.value.clone()
        } else {
            None
        }
    }
    fn rng(&mut self) -> &mut Prng {
        self.rng
    }
    fn default_seed(&self) -> i64 {
        self.default_seed
    }
    /// A text variable that is not a value fails as pgbench's `makeVariableValue` fails.
    fn lookup(&self, name: &str) -> Result<Value, EvalError> {
        match self.vars.get(name).map(|s| &self.vars.slots[s]) {
            Some(Slot {
                defined: true,
                malformed: Some(message),
                ..
            }) => Err(EvalError {
                class: "script:type",
                message: message.clone(),
            }),
            Some(Slot {
                defined: true,
                value: Some(v),
                ..
            }) => Ok(v.clone()),
            _ => Err(expr::undefined_variable(name)),
        }
    }
    /// pgbench's `debug(script=S,command=C): int 5` on stderr (C counted from 1).
    fn debug(&mut self, value: &Value) {
        eprintln!(
            "debug(script={},command={}): {}",
            self.script,
            self.command + 1,
            value.describe()
        );
    }
}
