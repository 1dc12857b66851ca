//! The expression language of `\set` and `\if`: pgbench's operators (`+ - * / %`, comparison,
//! `AND OR NOT`, `IS [NOT] NULL`, bit operators `& | # ~ << >>`, `CASE WHEN … THEN … ELSE … END`),
//! literals (integers, doubles, `true`/`false`, `NULL`), `:variables`, and its functions.
//! Integer overflow and division by zero fail as pgbench fails.

//!
//! The parser follows pgbench's `exprscan.l` (tokens) and `exprparse.y` (grammar and operator
//! precedence) of PostgreSQL 17; the evaluator follows `evaluateExpr`, `evalLazyFunc` and
//! `evalStandardFunc` of its `pgbench.c`, including their error messages.

use crate::error::EvalError;
use crate::value::Value;

mod ast;
mod eval;
mod lex;
mod parser;
#[cfg(test)]
mod tests;

pub use ast::{undefined_variable, Env, Expr, ExprError, Func};

/// Parses the text of an expression (what follows `\set NAME` or `\if`).
///
/// As pgbench: `>`/`>=` become `<`/`<=` with their arguments swapped, unary minus `0 - x`, `~x`
/// `-1 # x`; `hash*` with one argument and `permute` with two get `:default_seed` as their last
/// argument; argument counts are checked here. Errors carry pgbench's message (with its detail
/// in parentheses, e.g. `unexpected function name (foo)`) and the byte offset pgbench's caret
/// points at: the last byte of the offending token.
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    parser::Parser::new(text).parse()
}

/// Evaluates an expression.
pub fn eval(expr: &Expr, env: &mut dyn Env) -> Result<Value, EvalError> {
    eval::eval(expr, env)
}
