//! Reads a script file: SQL commands (one per line, or spanning lines up to an unquoted `;`,
//! `\;` joining compound statements), `:name` variables, and the meta-commands. Checks the
//! structure (`\if` balanced, pipelines closed, `\gset` only after SQL) and reports problems with
//! file, line and column.

use crate::error::ScriptError;
use crate::expr::Expr;

/// A parsed script.
#[derive(Clone, Debug)]
pub struct Script {
    /// The name events carry: the built-in's name (`tpcb-like`) or the file name as given.
    pub name: String,
    /// Weight in the choice between scripts (`FILE@W`), default 1.
    pub weight: u32,
    /// The commands in order.
    pub commands: Vec<Command>,
}

/// One command of a script.
#[derive(Clone, Debug)]
pub struct Command {
    /// 1-based line of the file where the command starts.
    pub line: u32,
    /// The command's first line as written, trimmed (event names: `tpcb-like:7 UPDATE …`).
    pub text: String,
    /// What it does.
    pub kind: CommandKind,
}

/// What a command does.
#[derive(Clone, Debug)]
pub enum CommandKind {
    /// An SQL command.
    Sql(Sql),
    /// `\set NAME EXPR`
    Set {
        /// Variable set.
        var: String,
        /// Its expression.
        expr: Expr,
    },
    /// `\sleep N [us|ms|s]` (N a number or `:var`).
    Sleep {
        /// The amount: a constant or a variable.
        amount: Arg,
        /// Microseconds per unit (1, 1000, 1 000 000).
        unit_us: u64,
    },
    /// `\setshell NAME CMD ARGS…`
    SetShell {
        /// Variable set to the command's output (an integer).
        var: String,
        /// The command and its arguments.
        argv: Vec<Arg>,
    },
    /// `\shell CMD ARGS…`
    Shell {
        /// The command and its arguments.
        argv: Vec<Arg>,
    },
    /// `\if EXPR`: when false, go to command `next` (the matching `\elif`, `\else` or `\endif`).
    If {
        /// The condition.
        cond: Expr,
        /// Where to go when false.
        next: usize,
    },
    /// `\elif EXPR`: reached by falling through a taken branch, go to `end`; reached by a jump,
    /// test `cond` and go to `next` when false.
    Elif {
        /// The condition.
        cond: Expr,
        /// Where to go when false.
        next: usize,
        /// The matching `\endif`.
        end: usize,
    },
    /// `\else`: reached by falling through a taken branch, go to `end`.
    Else {
        /// The matching `\endif`.
        end: usize,
    },
    /// `\endif`
    Endif,
    /// `\startpipeline`
    StartPipeline,
    /// `\syncpipeline` (pgbench 17)
    SyncPipeline,
    /// `\endpipeline`
    EndPipeline,
}

/// An argument of `\sleep`, `\shell`, `\setshell`: literal text or a variable's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// Literal text (for `\sleep`, a number).
    Text(String),
    /// `:name`
    Var(String),
}

/// An SQL command, ready for each query mode.
#[derive(Clone, Debug)]
pub struct Sql {
    /// The SQL with each `:name` replaced by `$1`, `$2`… in order of first use (extended and
    /// prepared modes).
    pub parameterized: String,
    /// The variable of each `$n`, in order.
    pub params: Vec<String>,
    /// The SQL cut at variable references, for simple mode (text substitution).
    pub pieces: Vec<Piece>,
    /// `\gset [PREFIX]` or `\aset [PREFIX]` after the command.
    pub gset: Option<Gset>,
}

/// A piece of an SQL command's text.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    /// Text sent as is.
    Text(String),
    /// `:name`, replaced by the variable's value.
    Var(String),
}

/// `\gset` / `\aset`.
#[derive(Clone, Debug, PartialEq)]
pub struct Gset {
    /// Prefix of the variable names.
    pub prefix: String,
    /// `\aset`: every row of every statement of a compound command sets variables (no row: none);
    /// `\gset`: exactly one row is required.
    pub all: bool,
}

impl Script {
    /// Parses `text` read from `file` (the name errors give; `name` the name events carry).
    pub fn parse(file: &str, name: &str, text: &str, weight: u32) -> Result<Script, ScriptError> {
        let _ = (file, name, text, weight);
        todo!("helper: the script parser")
    }
}

/// Parses `-f FILE[@WEIGHT]` / `-b NAME[@WEIGHT]`: the name and the weight (default 1). A weight
/// that is not a non-negative integer is an error naming the argument.
pub fn split_weight(arg: &str) -> Result<(&str, u32), String> {
    let _ = arg;
    todo!("helper")
}
