//! The evaluator: pgbench.c's `evaluateExpr`, `evalLazyFunc` and `evalStandardFunc`.

use super::ast::{Env, Expr, Func};
use crate::error::EvalError;
use crate::random;
use crate::value::{special_double, Value};

/// pgbench's MAX_FARGS: a function evaluates at most this many arguments.
const MAX_FARGS: usize = 16;

fn err(class: &'static str, message: impl Into<String>) -> EvalError {
    EvalError {
        class,
        message: message.into(),
    }
}

fn type_err(message: String) -> EvalError {
    err("script:type", message)
}

fn overflow(message: impl Into<String>) -> EvalError {
    err("script:overflow", message)
}

pub(super) fn eval(expr: &Expr, env: &mut dyn Env) -> Result<Value, EvalError> {
    match expr {
        Expr::Const(v) => Ok(v.clone()),
        Expr::Var(name) => match env.lookup(name) {
            // hash/permute's implicit seed: pgbench always defines :default_seed; an
            // environment that does not, gives its default_seed()
            Err(e) if name == "default_seed" && e.class == "script:undefined-variable" => {
                Ok(Value::Int(env.default_seed()))
            }
            r => r,
        },
        Expr::Func(f, args) => match f {
            Func::And | Func::Or | Func::Case => lazy(*f, args, env),
            _ => standard(*f, args, env),
        },
    }
}

/// `coerceToBool`: only booleans are booleans.
fn to_bool(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(type_err(format!(
            "cannot coerce {} to boolean",
            v.type_name()
        ))),
    }
}

/// `valueTruth`: NULL and zero are false (for CASE conditions).
fn truth(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Double(d) => *d != 0.0,
    }
}

/// `%f` as PostgreSQL's snprintf writes it.
fn format_f(d: f64) -> String {
    match special_double(d) {
        Some(s) => s.to_string(),
        None => format!("{d:.6}"),
    }
}

/// 2^63: FLOAT8_FITS_IN_INT64 is `-2^63 <= d < 2^63`.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// `coerceToInt`: doubles are rounded to the nearest (ties to even, as `rint`) and must fit.
fn to_int(v: &Value) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Double(d) => {
            let r = d.round_ties_even();
            // FLOAT8_FITS_IN_INT64
            if !(-TWO_63..TWO_63).contains(&r) {
                return Err(overflow(format!(
                    "double to int overflow for {}",
                    format_f(r)
                )));
            }
            Ok(r as i64)
        }
        _ => Err(type_err(format!("cannot coerce {} to int", v.type_name()))),
    }
}

/// `coerceToDouble`.
fn to_double(v: &Value) -> Result<f64, EvalError> {
    match v {
        Value::Double(d) => Ok(*d),
        Value::Int(i) => Ok(*i as f64),
        _ => Err(type_err(format!(
            "cannot coerce {} to double",
            v.type_name()
        ))),
    }
}

/// `evalLazyFunc`: AND, OR and CASE evaluate their later arguments only when needed.
fn lazy(f: Func, args: &[Expr], env: &mut dyn Env) -> Result<Value, EvalError> {
    if args.len() < 2 {
        return Err(type_err(format!("{f:?} needs at least two arguments")));
    }
    let a1 = eval(&args[0], env)?;
    match f {
        Func::And | Func::Or => {
            if a1 == Value::Null {
                return Ok(Value::Null);
            }
            let b1 = to_bool(&a1)?;
            // false AND …, true OR …: decided
            if b1 == (f == Func::Or) {
                return Ok(Value::Bool(b1));
            }
            let a2 = eval(&args[1], env)?;
            if a2 == Value::Null {
                return Ok(Value::Null);
            }
            Ok(Value::Bool(to_bool(&a2)?))
        }
        _ => {
            // CASE: when, then, when, then, …, else
            let mut cond = a1;
            let mut rest = args;
            loop {
                if truth(&cond) {
                    return eval(&rest[1], env);
                }
                rest = &rest[2..];
                match rest.len() {
                    0 => return Ok(Value::Null),
                    1 => return eval(&rest[0], env),
                    _ => cond = eval(&rest[0], env)?,
                }
            }
        }
    }
}

/// `evalStandardFunc`: every argument is evaluated first, then NULL in gives NULL out
/// (except for `IS` and `debug`).
fn standard(f: Func, args: &[Expr], env: &mut dyn Env) -> Result<Value, EvalError> {
    let mut v = Vec::with_capacity(args.len().min(MAX_FARGS));
    for a in args.iter().take(MAX_FARGS) {
        v.push(eval(a, env)?);
    }
    if args.len() > MAX_FARGS {
        return Err(type_err(format!(
            "too many function arguments, maximum is {MAX_FARGS}"
        )));
    }
    let want = |n: usize| -> Result<(), EvalError> {
        if v.len() == n {
            Ok(())
        } else {
            Err(type_err(format!(
                "{f:?} takes {n} arguments, not {}",
                v.len()
            )))
        }
    };
    if !matches!(f, Func::Is | Func::IsNull | Func::IsNotNull | Func::Debug)
        && v.contains(&Value::Null)
    {
        return Ok(Value::Null);
    }
    match f {
        Func::Add | Func::Sub | Func::Mul | Func::Div | Func::Mod | Func::ModFn => {
            want(2)?;
            arith(f, &v[0], &v[1])
        }
        Func::Neg => {
            want(1)?;
            arith(Func::Sub, &Value::Int(0), &v[0])
        }
        Func::Eq | Func::Ne | Func::Lt | Func::Le => {
            want(2)?;
            compare(f, &v[0], &v[1])
        }
        // not made by the parser (it swaps the arguments of < and <=), but meaningful
        Func::Gt => {
            want(2)?;
            compare(Func::Lt, &v[1], &v[0])
        }
        Func::Ge => {
            want(2)?;
            compare(Func::Le, &v[1], &v[0])
        }
        Func::BitAnd | Func::BitOr | Func::BitXor | Func::Shl | Func::Shr => {
            want(2)?;
            let (l, r) = (to_int(&v[0])?, to_int(&v[1])?);
            Ok(Value::Int(match f {
                Func::BitAnd => l & r,
                Func::BitOr => l | r,
                Func::BitXor => l ^ r,
                // C's << and >> on int64 as x86-64 runs them: the count taken modulo 64
                Func::Shl => l.wrapping_shl(r as u32),
                _ => l.wrapping_shr(r as u32),
            }))
        }
        Func::BitNot => {
            want(1)?;
            Ok(Value::Int(!to_int(&v[0])?))
        }
        Func::Not => {
            want(1)?;
            Ok(Value::Bool(!to_bool(&v[0])?))
        }
        Func::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Func::Abs => {
            want(1)?;
            match v[0] {
                Value::Int(i) => Ok(Value::Int(if i < 0 { i.wrapping_neg() } else { i })),
                Value::Double(d) => Ok(Value::Double(if d < 0.0 { -d } else { d })),
                // pgbench asserts this cannot happen (and reads garbage without asserts)
                ref other => Err(type_err(format!(
                    "cannot coerce {} to double",
                    other.type_name()
                ))),
            }
        }
        Func::Debug => {
            want(1)?;
            env.debug(&v[0]);
            Ok(v.swap_remove(0))
        }
        Func::Double | Func::Sqrt | Func::Ln | Func::Exp => {
            want(1)?;
            let d = to_double(&v[0])?;
            Ok(Value::Double(match f {
                Func::Sqrt => d.sqrt(),
                Func::Ln => d.ln(),
                Func::Exp => d.exp(),
                _ => d,
            }))
        }
        Func::Int => {
            want(1)?;
            Ok(Value::Int(to_int(&v[0])?))
        }
        Func::Least | Func::Greatest => extremum(f, &v),
        Func::Random | Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            random_call(f, &v, env)
        }
        Func::Pow => {
            want(2)?;
            Ok(Value::Double(to_double(&v[0])?.powf(to_double(&v[1])?)))
        }
        Func::Is => {
            want(2)?;
            // same type and same value; only ever NULL or a boolean on the right
            Ok(Value::Bool(match (&v[0], &v[1]) {
                (Value::Null, Value::Null) => true,
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Int(a), Value::Int(b)) => a == b,
                (Value::Double(a), Value::Double(b)) => a == b,
                _ => false,
            }))
        }
        Func::IsNull | Func::IsNotNull => {
            want(1)?;
            Ok(Value::Bool((v[0] == Value::Null) == (f == Func::IsNull)))
        }
        Func::Hash | Func::HashMurmur2 | Func::HashFnv1a => {
            want(2)?;
            let (val, seed) = (to_int(&v[0])?, to_int(&v[1])?);
            Ok(Value::Int(if f == Func::HashFnv1a {
                random::hash_fnv1a(val, seed as u64)
            } else {
                random::hash_murmur2(val, seed as u64)
            }))
        }
        Func::Permute => {
            want(3)?;
            let (val, size, seed) = (to_int(&v[0])?, to_int(&v[1])?, to_int(&v[2])?);
            if size <= 0 {
                return Err(err(
                    "script:range",
                    "permute size parameter must be greater than zero",
                ));
            }
            Ok(Value::Int(random::permute(val, size, seed)))
        }
        Func::And | Func::Or | Func::Case => unreachable!("lazy functions are evaluated by lazy()"),
    }
}

/// `+ - * / %` (and `mod()`): doubles when either side is a double (except `%`, always on
/// integers), integers checked for overflow with pgbench's messages.
fn arith(f: Func, l: &Value, r: &Value) -> Result<Value, EvalError> {
    let is_mod = matches!(f, Func::Mod | Func::ModFn);
    if !is_mod && (matches!(l, Value::Double(_)) || matches!(r, Value::Double(_))) {
        let (a, b) = (to_double(l)?, to_double(r)?);
        return Ok(Value::Double(match f {
            Func::Add => a + b,
            Func::Sub => a - b,
            Func::Mul => a * b,
            _ => a / b,
        }));
    }
    let (a, b) = (to_int(l)?, to_int(r)?);
    let checked = |r: Option<i64>, what: &str| {
        r.map(Value::Int)
            .ok_or_else(|| overflow(format!("bigint {what} out of range")))
    };
    match f {
        Func::Add => checked(a.checked_add(b), "add"),
        Func::Sub => checked(a.checked_sub(b), "sub"),
        Func::Mul => checked(a.checked_mul(b), "mul"),
        _ => {
            if b == 0 {
                return Err(err("script:division-by-zero", "division by zero"));
            }
            if b == -1 {
                // INT64_MIN / -1 overflows; INT64_MIN % -1 is 0
                return if is_mod {
                    Ok(Value::Int(0))
                } else {
                    checked(a.checked_neg(), "div")
                };
            }
            Ok(Value::Int(if is_mod { a % b } else { a / b }))
        }
    }
}

/// `= <> < <=`: as doubles when either side is a double, else as integers (booleans are
/// neither: `true = true` fails as in pgbench).
fn compare(f: Func, l: &Value, r: &Value) -> Result<Value, EvalError> {
    let b = if matches!(l, Value::Double(_)) || matches!(r, Value::Double(_)) {
        let (a, b) = (to_double(l)?, to_double(r)?);
        match f {
            Func::Eq => a == b,
            Func::Ne => a != b,
            Func::Lt => a < b,
            _ => a <= b,
        }
    } else {
        let (a, b) = (to_int(l)?, to_int(r)?);
        match f {
            Func::Eq => a == b,
            Func::Ne => a != b,
            Func::Lt => a < b,
            _ => a <= b,
        }
    };
    Ok(Value::Bool(b))
}

/// `least`/`greatest`: doubles if any argument is a double, with C's `Min`/`Max` macros
/// (`x < y ? x : y`, so a NaN argument wins when it comes second).
fn extremum(f: Func, v: &[Value]) -> Result<Value, EvalError> {
    if v.is_empty() {
        return Err(type_err(format!("{f:?} needs at least one argument")));
    }
    let least = f == Func::Least;
    if v.iter().any(|x| matches!(x, Value::Double(_))) {
        let mut m = to_double(&v[0])?;
        for x in &v[1..] {
            let d = to_double(x)?;
            m = if least {
                if m < d {
                    m
                } else {
                    d
                }
            } else if m > d {
                m
            } else {
                d
            };
        }
        Ok(Value::Double(m))
    } else {
        let mut m = to_int(&v[0])?;
        for x in &v[1..] {
            let i = to_int(x)?;
            m = if least { m.min(i) } else { m.max(i) };
        }
        Ok(Value::Int(m))
    }
}

/// `random*`: the bounds as integers and checked, then the parameter, then a draw from the
/// client's generator.
fn random_call(f: Func, v: &[Value], env: &mut dyn Env) -> Result<Value, EvalError> {
    let (name, n) = match f {
        Func::Random => ("random", 2),
        Func::RandomExponential => ("random_exponential", 3),
        Func::RandomGaussian => ("random_gaussian", 3),
        _ => ("random_zipfian", 3),
    };
    if v.len() != n {
        return Err(type_err(format!(
            "{name} takes {n} arguments, not {}",
            v.len()
        )));
    }
    let (min, max) = (to_int(&v[0])?, to_int(&v[1])?);
    random::check(name, min, max, None)?;
    let rng = env.rng();
    if f == Func::Random {
        return Ok(Value::Int(random::uniform(rng, min, max)));
    }
    let p = to_double(&v[2])?;
    random::check(name, min, max, Some(p))?;
    let rng = env.rng();
    Ok(Value::Int(match f {
        Func::RandomExponential => random::exponential(rng, min, max, p),
        Func::RandomGaussian => random::gaussian(rng, min, max, p),
        _ => random::zipfian(rng, min, max, p),
    }))
}
