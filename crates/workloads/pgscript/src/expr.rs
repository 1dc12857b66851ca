//! The expression language of `\set` and `\if`: pgbench's operators (`+ - * / %`, comparison,
//! `AND OR NOT`, `IS [NOT] NULL`, bit operators `& | # ~ << >>`, `CASE WHEN … THEN … ELSE … END`),
//! literals (integers, doubles, `true`/`false`, `NULL`), `:variables`, and its functions.
//! Integer overflow and division by zero fail as pgbench fails.

use crate::error::EvalError;
use crate::prng::Prng;
use crate::value::Value;

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
}

/// Where an expression's parse failed: the byte offset in the expression's text and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprError {
    /// Byte offset into the text given to [`parse`].
    pub offset: usize,
    /// pgbench's wording, e.g. `syntax error`, `unexpected character`, `unexpected function name`.
    pub message: String,
}

/// Parses the text of an expression (what follows `\set NAME` or `\if`).
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    let _ = text;
    todo!("helper: expression parser")
}

/// What an expression can see while it is evaluated.
pub trait Env {
    /// The value of variable `name` (converted from its text form as pgbench does when it was set
    /// as text), or `None` when undefined.
    fn var(&self, name: &str) -> Option<Value>;
    /// The random generator of random functions (the client's).
    fn rng(&mut self) -> &mut Prng;
    /// `:default_seed`, the default seed of `hash*` and `permute`.
    fn default_seed(&self) -> i64;
}

/// Evaluates an expression.
pub fn eval(expr: &Expr, env: &mut dyn Env) -> Result<Value, EvalError> {
    let _ = (expr, env);
    todo!("helper: evaluator")
}
