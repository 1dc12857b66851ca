//! The expression language of `\set` and `\if`: pgbench's operators (`+ - * / %`, comparison,
//! `AND OR NOT`, `IS [NOT] NULL`, bit operators `& | # ~ << >>`, `CASE WHEN … THEN … ELSE … END`),
//! literals (integers, doubles, `true`/`false`, `NULL`), `:variables`, and its functions.
//! Integer overflow and division by zero fail as pgbench fails.

//!
//! The parser follows pgbench's `exprscan.l` (tokens) and `exprparse.y` (grammar and operator
//! precedence) of PostgreSQL 17; the evaluator follows `evaluateExpr`, `evalLazyFunc` and
//! `evalStandardFunc` of its `pgbench.c`, including their error messages.

use crate::error::EvalError;
use crate::prng::Prng;
use crate::value::Value;

mod eval;
mod lex;
mod parser;
#[cfg(test)]
mod tests;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant.
    Const(Value),
    /// `:name`
    Var(String),
    /// An operator or function applied to its arguments (`+` is a function of two arguments).
    Func(Func, Vec<Expr>),
}

/// Every operator and function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Func {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    And,
    Or,
    Not,
    BitAnd,
    BitOr,
    BitXor,
    BitNot,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    IsNull,
    IsNotNull,
    Case,
    Abs,
    Int,
    Double,
    Greatest,
    Least,
    ModFn,
    Pow,
    Sqrt,
    Ln,
    Exp,
    Pi,
    Debug,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    Permute,
    Hash,
    HashFnv1a,
    HashMurmur2,
    /// pgbench's `!is`: both arguments of the same type and value, for `IS [NOT] TRUE|FALSE`
    /// (`IS [NOT] NULL`, `ISNULL` and `NOTNULL` parse to [`Func::IsNull`]/[`Func::IsNotNull`]).
    Is,
}

/// Where an expression's parse failed: the byte offset in the expression's text and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprError {
    /// Byte offset into the text given to [`parse`].
    pub offset: usize,
    /// pgbench's wording, e.g. `syntax error`, `unexpected character`, `unexpected function name`.
    pub message: String,
}

impl std::fmt::Display for ExprError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for ExprError {}

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

/// What an expression can see while it is evaluated.
pub trait Env {
    /// The value of variable `name` (converted from its text form as pgbench does when it was set
    /// as text), or `None` when undefined.
    fn var(&self, name: &str) -> Option<Value>;
    /// The random generator of random functions (the client's).
    fn rng(&mut self) -> &mut Prng;
    /// `:default_seed`, the default seed of `hash*` and `permute` (used when the variable
    /// `default_seed` is not defined; pgbench always defines it).
    fn default_seed(&self) -> i64;
    /// The value of variable `name` or the error evaluating it gives. The default says
    /// `undefined variable "name"` when [`Env::var`] has nothing; an environment holding text
    /// values overrides it to report text that is not a value
    /// ([`Value::from_text`]'s `malformed variable …`, class `script:type`).
    fn lookup(&self, name: &str) -> Result<Value, EvalError> {
        self.var(name).ok_or_else(|| undefined_variable(name))
    }
    /// `debug(x)` was evaluated to `value`. pgbench prints
    /// `debug(script=S,command=C): int 5` to stderr; the default prints `debug: int 5`
    /// ([`Value::describe`]) as it does not know where it is — an interpreter overrides it.
    fn debug(&mut self, value: &Value) {
        eprintln!("debug: {}", value.describe());
    }
}

/// The error of an undefined variable (class `script:undefined-variable`).
pub fn undefined_variable(name: &str) -> EvalError {
    EvalError {
        class: "script:undefined-variable",
        message: format!("undefined variable \"{name}\""),
    }
}

/// Evaluates an expression.
pub fn eval(expr: &Expr, env: &mut dyn Env) -> Result<Value, EvalError> {
    eval::eval(expr, env)
}
