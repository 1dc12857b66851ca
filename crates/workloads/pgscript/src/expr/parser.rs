//! exprparse.y's grammar as a precedence-climbing parser. Its precedence table, lowest first:
//! `OR` (left), `AND` (left), `NOT` (right), `IS ISNULL NOTNULL` (non-associative),
//! `< > = <= >= <> !=` (non-associative), `| # & << >> ~` (left), `+ -` (left), `* / %` (left),
//! unary `+ -` (right). A prefix operator takes as operand everything that binds tighter than
//! its rule's precedence (`NOT`'s or `~`'s; unary minus only a primary), as bison's
//! shift/reduce choices do.

use super::ast::{Expr, ExprError, Func};
use super::lex::{Lexer, Tok, Token};
use crate::value::Value;

const OR: u8 = 1;
const AND: u8 = 2;
const NOT: u8 = 3;
const IS: u8 = 4;
const CMP: u8 = 5;
const BIT: u8 = 6;
const ADD: u8 = 7;
const MUL: u8 = 8;
const UNARY: u8 = 9;

/// How many arguments a function takes (exprparse.y's `nargs`).
#[derive(Clone, Copy)]
enum Arity {
    Exactly(usize),
    /// `least`, `greatest`: at least one.
    AtLeastOne,
    /// `hash*`: one or two, the seed defaulting to `:default_seed`.
    Hash,
    /// `permute`: two or three, the seed defaulting to `:default_seed`.
    Permute,
}

/// exprparse.y's PGBENCH_FUNCTIONS that can be called by name (case-insensitively).
fn function(name: &str) -> Option<(Func, Arity, &'static str)> {
    use Arity::*;
    let n = name.to_ascii_lowercase();
    Some(match n.as_str() {
        "mod" => (Func::ModFn, Exactly(2), "mod"),
        "abs" => (Func::Abs, Exactly(1), "abs"),
        "least" => (Func::Least, AtLeastOne, "least"),
        "greatest" => (Func::Greatest, AtLeastOne, "greatest"),
        "debug" => (Func::Debug, Exactly(1), "debug"),
        "pi" => (Func::Pi, Exactly(0), "pi"),
        "sqrt" => (Func::Sqrt, Exactly(1), "sqrt"),
        "ln" => (Func::Ln, Exactly(1), "ln"),
        "exp" => (Func::Exp, Exactly(1), "exp"),
        "int" => (Func::Int, Exactly(1), "int"),
        "double" => (Func::Double, Exactly(1), "double"),
        "random" => (Func::Random, Exactly(2), "random"),
        "random_gaussian" => (Func::RandomGaussian, Exactly(3), "random_gaussian"),
        "random_exponential" => (Func::RandomExponential, Exactly(3), "random_exponential"),
        "random_zipfian" => (Func::RandomZipfian, Exactly(3), "random_zipfian"),
        "pow" => (Func::Pow, Exactly(2), "pow"),
        "power" => (Func::Pow, Exactly(2), "power"),
        "hash" => (Func::Hash, Hash, "hash"),
        "hash_murmur2" => (Func::HashMurmur2, Hash, "hash_murmur2"),
        "hash_fnv1a" => (Func::HashFnv1a, Hash, "hash_fnv1a"),
        "permute" => (Func::Permute, Permute, "permute"),
        _ => return None,
    })
}

/// The binary operator a token is, with its precedence level.
fn binary(tok: &Tok) -> Option<(u8, Func)> {
    Some(match tok {
        Tok::Or => (OR, Func::Or),
        Tok::And => (AND, Func::And),
        Tok::Lt => (CMP, Func::Lt),
        Tok::Gt => (CMP, Func::Gt),
        Tok::Le => (CMP, Func::Le),
        Tok::Ge => (CMP, Func::Ge),
        Tok::Eq => (CMP, Func::Eq),
        Tok::Ne => (CMP, Func::Ne),
        Tok::Pipe => (BIT, Func::BitOr),
        Tok::Hash => (BIT, Func::BitXor),
        Tok::Amp => (BIT, Func::BitAnd),
        Tok::Ls => (BIT, Func::Shl),
        Tok::Rs => (BIT, Func::Shr),
        Tok::Plus => (ADD, Func::Add),
        Tok::Minus => (ADD, Func::Sub),
        Tok::Star => (MUL, Func::Mul),
        Tok::Slash => (MUL, Func::Div),
        Tok::Percent => (MUL, Func::Mod),
        _ => return None,
    })
}

fn int(v: i64) -> Expr {
    Expr::Const(Value::Int(v))
}

pub(super) struct Parser<'a> {
    lexer: Lexer<'a>,
    text_len: usize,
    peeked: Option<Token>,
    depth: usize,
}

/// The deepest expression tree accepted (pgbench has no limit): deep enough for any script
/// (a sum of 200 terms is 200 deep), shallow enough that hostile input cannot overflow the
/// stack of the parser, the evaluator or the tree's drop.
pub(super) const MAX_DEPTH: usize = 200;

/// The depth of a node with these children (each built under the limit, so this is cheap).
fn depth(e: &Expr) -> usize {
    match e {
        Expr::Func(_, args) => 1 + args.iter().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

impl<'a> Parser<'a> {
    pub fn new(text: &'a str) -> Parser<'a> {
        Parser {
            lexer: Lexer::new(text),
            text_len: text.len(),
            peeked: None,
            depth: 0,
        }
    }

    pub fn parse(mut self) -> Result<Expr, ExprError> {
        let e = self.expr(0)?;
        let t = self.next()?;
        if t.tok != Tok::Eof {
            return Err(self.syntax_error(&t));
        }
        Ok(e)
    }

    fn peek(&mut self) -> Result<&Token, ExprError> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lexer.next()?);
        }
        Ok(self.peeked.as_ref().expect("just peeked"))
    }

    fn next(&mut self) -> Result<Token, ExprError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lexer.next(),
        }
    }

    fn syntax_error(&self, t: &Token) -> ExprError {
        // at the end of the text pgbench's caret is just after it
        let offset = if t.tok == Tok::Eof {
            self.text_len
        } else {
            t.err_offset()
        };
        ExprError {
            offset,
            message: "syntax error".to_string(),
        }
    }

    fn expect(&mut self, want: Tok) -> Result<Token, ExprError> {
        let t = self.next()?;
        if t.tok == want {
            Ok(t)
        } else {
            Err(self.syntax_error(&t))
        }
    }

    /// An expression whose operators all bind at least as tightly as `min`.
    fn expr(&mut self, min: u8) -> Result<Expr, ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.too_deep());
        }
        let r = self.expr_inner(min);
        self.depth -= 1;
        r
    }

    fn too_deep(&mut self) -> ExprError {
        let offset = match self.peek() {
            Ok(t) => t.err_offset(),
            Err(e) => e.offset,
        };
        ExprError {
            offset,
            message: format!("expression too deeply nested (more than {MAX_DEPTH} levels)"),
        }
    }

    fn expr_inner(&mut self, min: u8) -> Result<Expr, ExprError> {
        let mut lhs = self.prefix()?;
        loop {
            let tok = self.peek()?.tok.clone();
            // postfix IS forms (non-associative, but no rule has an expression after them)
            if matches!(tok, Tok::IsNull | Tok::NotNull | Tok::Is) {
                if IS < min {
                    break;
                }
                self.next()?;
                lhs = match tok {
                    Tok::IsNull => Expr::Func(Func::IsNull, vec![lhs]),
                    Tok::NotNull => Expr::Func(Func::IsNotNull, vec![lhs]),
                    _ => self.is_tail(lhs)?,
                };
                if depth(&lhs) > MAX_DEPTH {
                    return Err(self.too_deep());
                }
                continue;
            }
            let Some((level, func)) = binary(&tok) else {
                break;
            };
            if level < min {
                break;
            }
            self.next()?;
            let rhs = self.expr(level + 1)?;
            lhs = match func {
                // exprparse.y: a > b is "<"(b, a), a >= b is "<="(b, a)
                Func::Gt => Expr::Func(Func::Lt, vec![rhs, lhs]),
                Func::Ge => Expr::Func(Func::Le, vec![rhs, lhs]),
                f => Expr::Func(f, vec![lhs, rhs]),
            };
            // left-associative chains grow the tree without recursing here
            if depth(&lhs) > MAX_DEPTH {
                return Err(self.too_deep());
            }
            if level == CMP {
                // %nonassoc: a < b < c is a syntax error
                let t = self.peek()?;
                if binary(&t.tok).is_some_and(|(l, _)| l == CMP) {
                    let t = t.clone();
                    return Err(self.syntax_error(&t));
                }
            }
        }
        Ok(lhs)
    }

    /// After `IS`: `NULL`, `NOT NULL`, `TRUE|FALSE`, `NOT TRUE|FALSE`.
    fn is_tail(&mut self, lhs: Expr) -> Result<Expr, ExprError> {
        let mut t = self.next()?;
        let negate = t.tok == Tok::Not;
        if negate {
            t = self.next()?;
        }
        let e = match t.tok {
            Tok::Null if negate => Expr::Func(Func::IsNotNull, vec![lhs]),
            Tok::Null => Expr::Func(Func::IsNull, vec![lhs]),
            Tok::Bool(b) => {
                let is = Expr::Func(Func::Is, vec![lhs, Expr::Const(Value::Bool(b))]);
                if negate {
                    Expr::Func(Func::Not, vec![is])
                } else {
                    is
                }
            }
            _ => return Err(self.syntax_error(&t)),
        };
        Ok(e)
    }

    fn prefix(&mut self) -> Result<Expr, ExprError> {
        let t = self.next()?;
        Ok(match t.tok.clone() {
            Tok::LParen => {
                let e = self.expr(0)?;
                self.expect(Tok::RParen)?;
                e
            }
            Tok::Plus => self.expr(UNARY)?,
            Tok::Minus => {
                // '-' MAXINT_PLUS_ONE_CONST: the one way to write INT64_MIN
                if self.peek()?.tok == Tok::MaxIntPlusOne {
                    self.next()?;
                    int(i64::MIN)
                } else {
                    // unary minus is "0 - x"
                    let e = self.expr(UNARY)?;
                    Expr::Func(Func::Sub, vec![int(0), e])
                }
            }
            // "~x" is "-1 # x"; the rule has '~''s precedence
            Tok::Tilde => {
                let e = self.expr(BIT + 1)?;
                Expr::Func(Func::BitXor, vec![int(-1), e])
            }
            Tok::Not => {
                let e = self.expr(NOT + 1)?;
                Expr::Func(Func::Not, vec![e])
            }
            Tok::Null => Expr::Const(Value::Null),
            Tok::Bool(b) => Expr::Const(Value::Bool(b)),
            Tok::Int(i) => int(i),
            Tok::Double(d) => Expr::Const(Value::Double(d)),
            Tok::Var(name) => Expr::Var(name),
            Tok::Func(name) => self.call(&t, &name)?,
            Tok::Case => self.case()?,
            _ => return Err(self.syntax_error(&t)),
        })
    }

    /// `function '(' elist ')'`; the name is checked first (bison reduces `function: FUNCTION`
    /// before it looks further), the arguments' count at the `)`.
    fn call(&mut self, name_tok: &Token, name: &str) -> Result<Expr, ExprError> {
        let Some((func, arity, fname)) = function(name) else {
            return Err(ExprError {
                offset: name_tok.err_offset(),
                message: format!("unexpected function name ({name})"),
            });
        };
        self.expect(Tok::LParen)?;
        let mut args = Vec::new();
        let close = if self.peek()?.tok == Tok::RParen {
            self.next()?
        } else {
            loop {
                args.push(self.expr(0)?);
                let t = self.next()?;
                match t.tok {
                    Tok::Comma => continue,
                    Tok::RParen => break t,
                    _ => return Err(self.syntax_error(&t)),
                }
            }
        };
        let n = args.len();
        let arity_error = |message: &str| ExprError {
            offset: close.err_offset(),
            message: format!("{message} ({fname})"),
        };
        match arity {
            Arity::Exactly(k) if n != k => {
                return Err(arity_error("unexpected number of arguments"))
            }
            Arity::AtLeastOne if n == 0 => {
                return Err(arity_error("at least one argument expected"))
            }
            Arity::Hash if !(1..=2).contains(&n) => {
                return Err(arity_error("unexpected number of arguments"))
            }
            Arity::Permute if !(2..=3).contains(&n) => {
                return Err(arity_error("unexpected number of arguments"))
            }
            Arity::Hash if n == 1 => args.push(Expr::Var("default_seed".to_string())),
            Arity::Permute if n == 2 => args.push(Expr::Var("default_seed".to_string())),
            _ => {}
        }
        Ok(Expr::Func(func, args))
    }

    /// `CASE (WHEN e THEN e)+ [ELSE e] END`: arguments when, then, when, then…, else (NULL when
    /// absent).
    fn case(&mut self) -> Result<Expr, ExprError> {
        let mut args = Vec::new();
        self.expect(Tok::When)?;
        loop {
            args.push(self.expr(0)?);
            self.expect(Tok::Then)?;
            args.push(self.expr(0)?);
            let t = self.next()?;
            match t.tok {
                Tok::When => continue,
                Tok::Else => {
                    args.push(self.expr(0)?);
                    self.expect(Tok::End)?;
                    break;
                }
                Tok::End => {
                    args.push(Expr::Const(Value::Null));
                    break;
                }
                _ => return Err(self.syntax_error(&t)),
            }
        }
        Ok(Expr::Func(Func::Case, args))
    }
}
