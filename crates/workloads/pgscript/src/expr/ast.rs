//! The expression language's vocabulary: [`Expr`], [`Func`], [`ExprError`] and [`Env`], what an
//! expression sees while it is evaluated. A leaf of `expr`: the lexer, parser and evaluator use it,
//! and `expr` re-exports it.

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
