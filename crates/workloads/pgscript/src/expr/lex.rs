//! The tokens of the expression language, as pgbench's `exprscan.l` (EXPR state) cuts them.

use super::ast::ExprError;
use crate::value::c_strtod;

/// A token.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Eq,
    Ne,
    Le,
    Ge,
    Ls,
    Rs,
    Lt,
    Gt,
    Pipe,
    Amp,
    Hash,
    Tilde,
    LParen,
    RParen,
    Comma,
    And,
    Or,
    Not,
    Is,
    IsNull,
    NotNull,
    Case,
    When,
    Then,
    Else,
    End,
    Null,
    Bool(bool),
    /// `9223372036854775808`, legal only after a unary minus.
    MaxIntPlusOne,
    Int(i64),
    Double(f64),
    Var(String),
    Func(String),
    Eof,
}

/// A token and where it is: `start..end` in bytes.
#[derive(Clone, Debug)]
pub(super) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// Where pgbench's caret points for an error at this token: its last byte.
    pub fn err_offset(&self) -> usize {
        self.end.saturating_sub(1).max(self.start.min(self.end))
    }
}

/// exprscan.l's `{alpha}`: ASCII letters, `_`, and every byte with the high bit set.
fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

/// exprscan.l's `{alnum}`.
fn is_alnum(c: u8) -> bool {
    is_alpha(c) || c.is_ascii_digit()
}

pub(super) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Lexer<'a> {
        Lexer { text, pos: 0 }
    }

    fn err(&self, offset: usize, message: String) -> ExprError {
        ExprError { offset, message }
    }

    /// The next token; lexical errors are reported when the parser asks for the token, as
    /// flex does.
    pub fn next(&mut self) -> Result<Token, ExprError> {
        let b = self.text.as_bytes();
        // {space}, {continuation} and {newline}: the caller gives one logical line
        while self.pos < b.len() {
            match b[self.pos] {
                b' ' | b'\t' | b'\r' | 0x0c | 0x0b | b'\n' => self.pos += 1,
                b'\\' if b.get(self.pos + 1) == Some(&b'\n') => self.pos += 2,
                b'\\'
                    if b.get(self.pos + 1) == Some(&b'\r')
                        && b.get(self.pos + 2) == Some(&b'\n') =>
                {
                    self.pos += 3
                }
                _ => break,
            }
        }
        let start = self.pos;
        if start >= b.len() {
            return Ok(Token {
                tok: Tok::Eof,
                start,
                end: start,
            });
        }
        let c = b[start];
        let two = b.get(start..start + 2);
        let (tok, len) = match (c, two) {
            (_, Some(b"<>")) | (_, Some(b"!=")) => (Tok::Ne, 2),
            (_, Some(b"<=")) => (Tok::Le, 2),
            (_, Some(b">=")) => (Tok::Ge, 2),
            (_, Some(b"<<")) => (Tok::Ls, 2),
            (_, Some(b">>")) => (Tok::Rs, 2),
            (b'+', _) => (Tok::Plus, 1),
            (b'-', _) => (Tok::Minus, 1),
            (b'*', _) => (Tok::Star, 1),
            (b'/', _) => (Tok::Slash, 1),
            (b'%', _) => (Tok::Percent, 1),
            (b'=', _) => (Tok::Eq, 1),
            (b'<', _) => (Tok::Lt, 1),
            (b'>', _) => (Tok::Gt, 1),
            (b'|', _) => (Tok::Pipe, 1),
            (b'&', _) => (Tok::Amp, 1),
            (b'#', _) => (Tok::Hash, 1),
            (b'~', _) => (Tok::Tilde, 1),
            (b'(', _) => (Tok::LParen, 1),
            (b')', _) => (Tok::RParen, 1),
            (b',', _) => (Tok::Comma, 1),
            (b':', _) if b.get(start + 1).is_some_and(|&n| is_alnum(n)) => {
                let n = b[start + 1..].iter().take_while(|&&x| is_alnum(x)).count();
                (
                    Tok::Var(self.text[start + 1..start + 1 + n].to_string()),
                    1 + n,
                )
            }
            (d, _)
                if d.is_ascii_digit()
                    || (d == b'.' && b.get(start + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                return self.number(start);
            }
            (a, _) if is_alpha(a) => {
                let n = b[start..].iter().take_while(|&&x| is_alnum(x)).count();
                let word = &self.text[start..start + n];
                (
                    keyword(word).unwrap_or_else(|| Tok::Func(word.to_string())),
                    n,
                )
            }
            _ => {
                // flex's "." rule: one byte (only ASCII gets here: high bytes are {alpha})
                let ch = self.text[start..].chars().next().unwrap_or('?');
                return Err(self.err(start, format!("unexpected character ({ch})")));
            }
        };
        self.pos = start + len;
        Ok(Token {
            tok,
            start,
            end: self.pos,
        })
    }

    /// `{digit}+` (an integer, or the special `9223372036854775808`), or a double:
    /// `{digit}+(\.{digit}*)?([eE][-+]?{digit}+)?` or `\.{digit}+([eE][-+]?{digit}+)?`, the
    /// longest match winning and the integer rule winning ties.
    fn number(&mut self, start: usize) -> Result<Token, ExprError> {
        let b = self.text.as_bytes();
        let digits = |from: usize| {
            b[from.min(b.len())..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count()
        };
        let mut i = start + digits(start);
        let mut double = false;
        if b.get(i) == Some(&b'.') {
            double = true;
            i += 1;
            i += digits(i);
        }
        if matches!(b.get(i), Some(b'e') | Some(b'E')) {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'+') | Some(b'-')) {
                j += 1;
            }
            let n = digits(j);
            if n > 0 {
                double = true;
                i = j + n;
            }
        }
        let text = &self.text[start..i];
        self.pos = i;
        let tok = if double {
            match c_strtod(text) {
                Some(d) => Tok::Double(d),
                None => return Err(self.err(i - 1, format!("double constant overflow ({text})"))),
            }
        } else if text == "9223372036854775808" {
            Tok::MaxIntPlusOne
        } else {
            match text.parse::<i64>() {
                Ok(v) => Tok::Int(v),
                Err(_) => return Err(self.err(i - 1, format!("bigint constant overflow ({text})"))),
            }
        };
        Ok(Token { tok, start, end: i })
    }
}

/// exprscan.l's keywords, matched case-insensitively on a whole `{alpha}{alnum}*` word.
fn keyword(word: &str) -> Option<Tok> {
    let w = word.to_ascii_lowercase();
    Some(match w.as_str() {
        "and" => Tok::And,
        "or" => Tok::Or,
        "not" => Tok::Not,
        "is" => Tok::Is,
        "isnull" => Tok::IsNull,
        "notnull" => Tok::NotNull,
        "case" => Tok::Case,
        "when" => Tok::When,
        "then" => Tok::Then,
        "else" => Tok::Else,
        "end" => Tok::End,
        "null" => Tok::Null,
        "true" => Tok::Bool(true),
        "false" => Tok::Bool(false),
        _ => return None,
    })
}
