//! Unit tests of the expression parser and evaluator (pgbench's own answers are checked in
//! `tests/pgbench_reference.rs`).

use std::collections::HashMap;

use super::*;
use crate::prng::Prng;
use crate::value::Value::{Bool, Double, Int, Null};

/// Variables as text, converted on use as pgbench does.
pub(crate) struct TestEnv {
    pub vars: HashMap<String, String>,
    pub rng: Prng,
    pub debugged: Vec<Value>,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let mut vars = HashMap::new();
        vars.insert("default_seed".to_string(), "42".to_string());
        vars.insert("i".to_string(), "7".to_string());
        vars.insert("d".to_string(), "2.5".to_string());
        vars.insert("t".to_string(), "true".to_string());
        vars.insert("s".to_string(), "abc".to_string());
        vars.insert("n".to_string(), "null".to_string());
        TestEnv {
            vars,
            rng: Prng::seed(1),
            debugged: Vec::new(),
        }
    }
}

impl Env for TestEnv {
    fn var(&self, name: &str) -> Option<Value> {
        self.vars
            .get(name)
            .and_then(|t| Value::from_text(name, t).ok())
    }
    fn lookup(&self, name: &str) -> Result<Value, EvalError> {
        match self.vars.get(name) {
            None => Err(undefined_variable(name)),
            Some(t) => Value::from_text(name, t).map_err(|message| EvalError {
                class: "script:type",
                message,
            }),
        }
    }
    fn rng(&mut self) -> &mut Prng {
        &mut self.rng
    }
    fn default_seed(&self) -> i64 {
        42
    }
    fn debug(&mut self, value: &Value) {
        self.debugged.push(value.clone());
    }
}

fn run(text: &str) -> Result<Value, EvalError> {
    let e = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    eval(&e, &mut TestEnv::new())
}

fn ok(text: &str) -> Value {
    run(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn fails(text: &str) -> (&'static str, String) {
    match run(text) {
        Ok(v) => panic!("{text} gave {v:?}"),
        Err(e) => (e.class, e.message),
    }
}

fn perr(text: &str) -> ExprError {
    match parse(text) {
        Ok(e) => panic!("{text} parsed as {e:?}"),
        Err(e) => e,
    }
}

#[test]
fn precedence_follows_exprparse() {
    assert_eq!(ok("1 + 2 * 3"), Int(7));
    assert_eq!(ok("(1 + 2) * 3"), Int(9));
    assert_eq!(ok("10 - 4 - 3"), Int(3));
    assert_eq!(ok("100 / 10 / 5"), Int(2));
    assert_eq!(ok("7 % 4 * 2"), Int(6));
    assert_eq!(ok("-2 * 3"), Int(-6));
    assert_eq!(ok("- - 3"), Int(3));
    assert_eq!(ok("+ 3"), Int(3));
    // bit operators bind looser than + and share one level, left to right
    assert_eq!(ok("1 | 2 + 4"), Int(7));
    assert_eq!(ok("6 & 3 | 8"), Int(10));
    assert_eq!(ok("6 | 3 & 8"), Int(0));
    assert_eq!(ok("1 << 2 + 1"), Int(8));
    assert_eq!(ok("5 # 1"), Int(4));
    // ~ takes everything tighter than the bit operators: ~(1 + 1), and (~0) | 5
    assert_eq!(ok("~1 + 1"), Int(-3));
    assert_eq!(ok("~0 | 5"), Int(-1));
    assert_eq!(ok("~ 5 & 3"), Int(2));
    // comparison below bits, NOT below comparison, AND below NOT, OR lowest
    assert_eq!(ok("1 < 2 AND 2 < 3"), Bool(true));
    assert_eq!(ok("NOT 1 = 2"), Bool(true));
    assert_eq!(ok("not true and false"), Bool(false));
    assert_eq!(ok("true or true and false"), Bool(true));
    assert_eq!(ok("false and true or true"), Bool(true));
    assert_eq!(ok("1 + 1 = 2 AND 3 <> 4"), Bool(true));
    assert_eq!(ok("2 > 1"), Bool(true));
    assert_eq!(ok("2 >= 2"), Bool(true));
    assert_eq!(ok("2 != 2"), Bool(false));
    assert_eq!(ok("1 <= 0"), Bool(false));
}

#[test]
fn comparisons_do_not_chain() {
    // pgbench's %nonassoc
    assert_eq!(perr("1 < 2 < 3").message, "syntax error");
    assert_eq!(perr("1 = 1 = 1").message, "syntax error");
    assert_eq!(perr("1 < 2 = 3").message, "syntax error");
    assert_eq!(perr("1 < 2 < 3").offset, 6);
}

#[test]
fn is_forms() {
    assert_eq!(ok("NULL IS NULL"), Bool(true));
    assert_eq!(ok("1 IS NULL"), Bool(false));
    assert_eq!(ok("1 IS NOT NULL"), Bool(true));
    assert_eq!(ok(":n ISNULL"), Bool(true));
    assert_eq!(ok(":n NOTNULL"), Bool(false));
    assert_eq!(ok("1 = 1 IS TRUE"), Bool(true));
    assert_eq!(
        ok("1 IS TRUE"),
        Bool(false),
        "IS compares types: 1 is not true"
    );
    assert_eq!(ok("false IS NOT TRUE"), Bool(true));
    assert_eq!(ok("NULL IS NOT FALSE"), Bool(true));
    assert_eq!(ok("NOT 1 ISNULL"), Bool(true));
    assert_eq!(ok("1 ISNULL ISNULL"), Bool(false));
    assert_eq!(perr("1 IS 2").message, "syntax error");
    assert_eq!(perr("1 IS NOT").message, "syntax error");
}

#[test]
fn case_is_lazy_and_defaults_to_null() {
    assert_eq!(
        ok("CASE WHEN 1 = 2 THEN 1 WHEN 2 = 2 THEN 2 ELSE 3 END"),
        Int(2)
    );
    assert_eq!(ok("case when false then 1 end"), Null);
    assert_eq!(
        ok("CASE WHEN 0 THEN 1 WHEN 2.5 THEN 7 END"),
        Int(7),
        "numbers are conditions: nonzero is true"
    );
    assert_eq!(ok("CASE WHEN NULL THEN 1 ELSE 2 END"), Int(2));
    assert_eq!(ok("CASE WHEN true THEN 1 ELSE 1 / 0 END"), Int(1));
    assert_eq!(
        fails("CASE WHEN false THEN 1 ELSE 1 / 0 END").0,
        "script:division-by-zero"
    );
    assert_eq!(perr("CASE 1 END").message, "syntax error");
    assert_eq!(perr("CASE WHEN 1 THEN 2").message, "syntax error");
}

#[test]
fn and_or_are_lazy_and_strict_about_booleans() {
    assert_eq!(ok("false AND 1 / 0 = 1"), Bool(false));
    assert_eq!(ok("true OR 1 / 0 = 1"), Bool(true));
    assert_eq!(ok("NULL AND false"), Null);
    assert_eq!(ok("true AND NULL"), Null);
    assert_eq!(ok("false OR NULL"), Null);
    assert_eq!(
        fails("1 AND true"),
        ("script:type", "cannot coerce int to boolean".to_string())
    );
    assert_eq!(
        fails("false OR 2.5"),
        ("script:type", "cannot coerce double to boolean".to_string())
    );
    assert_eq!(
        fails("NOT 1"),
        ("script:type", "cannot coerce int to boolean".to_string())
    );
    assert_eq!(ok("NOT NULL"), Null);
}

#[test]
fn literals() {
    assert_eq!(ok("1e3"), Double(1000.0));
    assert_eq!(ok(".5"), Double(0.5));
    assert_eq!(ok("5."), Double(5.0));
    assert_eq!(ok("2.5E-1"), Double(0.25));
    assert_eq!(ok("9223372036854775807"), Int(i64::MAX));
    assert_eq!(ok("-9223372036854775808"), Int(i64::MIN));
    assert_eq!(ok("- 9223372036854775808"), Int(i64::MIN));
    assert_eq!(ok("TRUE"), Bool(true));
    assert_eq!(ok("null"), Null);
    assert_eq!(ok("PI()"), Double(std::f64::consts::PI));
    assert_eq!(perr("9223372036854775808").message, "syntax error");
    assert_eq!(perr("1 - 9223372036854775808").message, "syntax error");
    assert_eq!(
        perr("99999999999999999999").message,
        "bigint constant overflow (99999999999999999999)"
    );
    assert_eq!(perr("1e999").message, "double constant overflow (1e999)");
    assert_eq!(fails("--9223372036854775808").1, "bigint sub out of range");
    // "1e" is 1 then a word: bison stops at the word before it looks the function up
    assert_eq!(perr("1e").message, "syntax error");
}

#[test]
fn variables() {
    assert_eq!(ok(":i * 2"), Int(14));
    assert_eq!(ok(":d * 2"), Double(5.0));
    assert_eq!(ok(":t"), Bool(true));
    assert_eq!(
        fails(":nope + 1"),
        (
            "script:undefined-variable",
            "undefined variable \"nope\"".to_string()
        )
    );
    assert_eq!(
        fails(":s + 1"),
        (
            "script:type",
            "malformed variable \"s\" value: \"abc\"".to_string()
        )
    );
}

#[test]
fn integer_arithmetic_fails_as_pgbench() {
    let max = i64::MAX;
    assert_eq!(
        fails(&format!("{max} + 1")),
        ("script:overflow", "bigint add out of range".to_string())
    );
    assert_eq!(
        fails("-9223372036854775808 - 1"),
        ("script:overflow", "bigint sub out of range".to_string())
    );
    assert_eq!(
        fails(&format!("{max} * 2")),
        ("script:overflow", "bigint mul out of range".to_string())
    );
    assert_eq!(
        fails("-9223372036854775808 / -1"),
        ("script:overflow", "bigint div out of range".to_string())
    );
    assert_eq!(ok("-9223372036854775808 % -1"), Int(0));
    assert_eq!(ok("7 / -1"), Int(-7));
    assert_eq!(ok("-7 / 2"), Int(-3));
    assert_eq!(ok("-7 % 3"), Int(-1));
    assert_eq!(ok("mod(-7, 3)"), Int(-1));
    assert_eq!(
        fails("1 / 0"),
        ("script:division-by-zero", "division by zero".to_string())
    );
    assert_eq!(
        fails("1 % 0"),
        ("script:division-by-zero", "division by zero".to_string())
    );
    // doubles do not fail
    assert_eq!(ok("1.0 / 0"), Double(f64::INFINITY));
    assert_eq!(ok("9223372036854775807 + 1.0"), Double(i64::MAX as f64));
    // % works on integers: doubles are rounded half to even first
    assert_eq!(ok("7.5 % 4"), Int(0));
    assert_eq!(ok("6.5 % 4"), Int(2));
    assert_eq!(
        fails("1e30 % 7").1,
        "double to int overflow for 1000000000000000019884624838656.000000"
    );
    assert_eq!(fails("int(sqrt(-1))").1, "double to int overflow for NaN");
}

#[test]
fn promotion_and_coercion() {
    assert_eq!(ok("1 + 1"), Int(2));
    assert_eq!(ok("1 + 1.0"), Double(2.0));
    assert_eq!(ok("5 / 2"), Int(2));
    assert_eq!(ok("5 / 2.0"), Double(2.5));
    assert_eq!(ok("1 = 1.0"), Bool(true));
    assert_eq!(
        fails("true = true"),
        ("script:type", "cannot coerce boolean to int".to_string())
    );
    assert_eq!(
        fails("true + 1.5"),
        ("script:type", "cannot coerce boolean to double".to_string())
    );
    assert_eq!(ok("NULL + 1"), Null);
    assert_eq!(ok("int(2.5)"), Int(2));
    assert_eq!(ok("int(3.5)"), Int(4));
    assert_eq!(ok("int(-2.7)"), Int(-3));
    assert_eq!(ok("double(3)"), Double(3.0));
    assert_eq!(ok("abs(-3)"), Int(3));
    assert_eq!(ok("abs(-3.5)"), Double(3.5));
    assert_eq!(ok("abs(-9223372036854775808)"), Int(i64::MIN));
    assert_eq!(ok("sqrt(16)"), Double(4.0));
    assert_eq!(ok("ln(exp(1))"), Double(1.0));
    assert_eq!(ok("pow(2, 10)"), Double(1024.0));
    assert_eq!(ok("power(2, 0.5)"), Double(2f64.sqrt()));
    assert_eq!(ok("greatest(1, 5, 3)"), Int(5));
    assert_eq!(ok("least(1, 5.5, 3)"), Double(1.0));
    assert_eq!(ok("least(4)"), Int(4));
    assert_eq!(ok("greatest(1, NULL)"), Null);
    assert_eq!(ok("1 << 3"), Int(8));
    assert_eq!(ok("-16 >> 2"), Int(-4));
    assert_eq!(
        ok("1 << 64"),
        Int(1),
        "the shift count is taken modulo 64 as on x86-64"
    );
    assert_eq!(ok("1.6 | 0"), Int(2));
}

#[test]
fn too_many_arguments_fail_at_run_time() {
    let args = (1..=17)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    assert_eq!(
        ok(&format!(
            "greatest({})",
            (1..=16)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )),
        Int(16)
    );
    assert_eq!(
        fails(&format!("greatest({args})")).1,
        "too many function arguments, maximum is 16"
    );
}

#[test]
fn functions_by_name_and_arity() {
    assert_eq!(ok("ABS(-1)"), Int(1));
    assert_eq!(ok("Random(5, 5)"), Int(5));
    let e = perr("nosuch(1)");
    assert_eq!(
        (e.offset, e.message.as_str()),
        (5, "unexpected function name (nosuch)")
    );
    let e = perr("abs(1, 2)");
    assert_eq!(
        (e.offset, e.message.as_str()),
        (8, "unexpected number of arguments (abs)")
    );
    assert_eq!(perr("pi(1)").message, "unexpected number of arguments (pi)");
    assert_eq!(
        perr("least()").message,
        "at least one argument expected (least)"
    );
    assert_eq!(
        perr("hash()").message,
        "unexpected number of arguments (hash)"
    );
    assert_eq!(
        perr("hash(1, 2, 3)").message,
        "unexpected number of arguments (hash)"
    );
    assert_eq!(
        perr("permute(1)").message,
        "unexpected number of arguments (permute)"
    );
    assert_eq!(
        perr("random(1, 2, 3)").message,
        "unexpected number of arguments (random)"
    );
    assert_eq!(
        perr("random_zipfian(1, 2)").message,
        "unexpected number of arguments (random_zipfian)"
    );
    assert_eq!(perr("abs 1").message, "syntax error");
    assert_eq!(perr("abs(1,)").message, "syntax error");
    // hash and permute take :default_seed when the seed is left out
    assert_eq!(ok("hash(5)"), ok("hash(5, :default_seed)"));
    assert_eq!(ok("hash_fnv1a(5)"), ok("hash_fnv1a(5, 42)"));
    assert_eq!(ok("permute(3, 10)"), ok("permute(3, 10, 42)"));
    assert_eq!(ok("hash(5)"), ok("hash_murmur2(5)"));
    assert_eq!(
        fails("permute(1, 0)"),
        (
            "script:range",
            "permute size parameter must be greater than zero".to_string()
        )
    );
}

#[test]
fn lexical_errors() {
    let e = perr("1 + $");
    assert_eq!(
        (e.offset, e.message.as_str()),
        (4, "unexpected character ($)")
    );
    assert_eq!(perr("1 == 1").message, "syntax error");
    assert_eq!(perr(": 1").message, "unexpected character (:)");
    assert_eq!(perr("1 +").offset, 3);
    assert_eq!(perr("").message, "syntax error");
    assert_eq!(perr("(1").message, "syntax error");
    assert_eq!(perr("1 2").offset, 2);
    assert_eq!(perr("1 ~ 2").message, "syntax error");
    // continuation lines are white space
    assert_eq!(
        parse("1 +\\\n 2").map(|e| eval(&e, &mut TestEnv::new())),
        Ok(Ok(Int(3)))
    );
}

#[test]
fn random_functions_check_then_draw_from_the_clients_generator() {
    assert_eq!(
        fails("random(5, 1)"),
        ("script:range", "empty range given to random".to_string())
    );
    assert_eq!(
        fails("random(-9223372036854775808, 9223372036854775807)").1,
        "random range is too large"
    );
    assert_eq!(
        fails("random_gaussian(1, 10, 1.5)").1,
        "gaussian parameter must be at least 2.000000 (not 1.500000)"
    );
    assert_eq!(
        fails("random_zipfian(1, 10, 1)").1,
        "zipfian parameter must be in range [1.001, 1000] (not 1.000000)"
    );
    assert_eq!(
        fails("random_exponential(1, 10, 0)").1,
        "exponential parameter must be greater than zero (not 0.000000)"
    );
    assert_eq!(ok("random(1, NULL)"), Null);
    let mut env = TestEnv::new();
    let e = parse("random(1, 1000000)").unwrap();
    let a = eval(&e, &mut env).unwrap();
    let mut again = Prng::seed(1);
    assert_eq!(a, Int(crate::random::uniform(&mut again, 1, 1_000_000)));
    assert_ne!(
        env.rng,
        Prng::seed(1),
        "the draw advanced the client's generator"
    );
}

#[test]
fn debug_hands_the_value_to_the_environment() {
    let mut env = TestEnv::new();
    let e = parse("debug(1 + 1) * 2 + debug(NULL) IS NULL").unwrap();
    assert_eq!(eval(&e, &mut env), Ok(Bool(true)));
    assert_eq!(env.debugged, vec![Int(2), Null]);
    assert_eq!(Int(2).describe(), "int 2");
    assert_eq!(Double(1.5).describe(), "double 1.5");
    assert_eq!(Bool(false).describe(), "boolean false");
}

#[test]
fn evaluation_order_is_pgbenchs() {
    // a > b is evaluated as b < a: b first
    let mut env = TestEnv::new();
    let e = parse("debug(1) > debug(2)").unwrap();
    eval(&e, &mut env).unwrap();
    assert_eq!(env.debugged, vec![Int(2), Int(1)]);
}

#[test]
fn hostile_nesting_is_refused_not_a_stack_overflow() {
    let deep = "(".repeat(100_000) + "1" + &")".repeat(100_000);
    assert!(perr(&deep)
        .message
        .starts_with("expression too deeply nested"));
    let long = vec!["1"; 100_000].join("+");
    assert!(perr(&long)
        .message
        .starts_with("expression too deeply nested"));
    let neg = "-".repeat(100_000) + "1";
    assert!(perr(&neg)
        .message
        .starts_with("expression too deeply nested"));
    let isnull = "1".to_string() + &" ISNULL".repeat(10_000);
    assert!(perr(&isnull)
        .message
        .starts_with("expression too deeply nested"));
    let ok_sum = vec!["1"; 150].join("+");
    assert_eq!(ok(&ok_sum), Int(150));
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn random_text_never_panics(s in "\\PC{0,80}") {
            if let Ok(e) = parse(&s) {
                let _ = eval(&e, &mut TestEnv::new());
            }
        }

        #[test]
        fn expression_like_text_never_panics(s in "[-+*/%()<>=!~#&|:a-z0-9. ,]{0,60}") {
            match parse(&s) {
                Ok(e) => { let _ = eval(&e, &mut TestEnv::new()); }
                Err(e) => prop_assert!(e.offset <= s.len()),
            }
        }

        #[test]
        fn integer_sums_agree_with_checked_arithmetic(a in any::<i64>(), b in any::<i64>()) {
            let got = run(&format!("({a}) + ({b})"));
            match a.checked_add(b) {
                Some(s) => prop_assert_eq!(got, Ok(Int(s))),
                None => prop_assert_eq!(got.map_err(|e| e.class), Err("script:overflow")),
            }
        }
    }
}
