//! Reads a script file: SQL commands (one per line, or spanning lines up to an unquoted `;`,
//! `\;` joining compound statements), `:name` variables, and the meta-commands. Checks the
//! structure (`\if` balanced, pipelines closed, `\gset` only after SQL) and reports problems with
//! file, line and column.

use crate::error::ScriptError;
use crate::expr::{self, Expr};

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
    /// The SQL with each `:name` replaced by `$1`, `$2`… in order (extended and prepared
    /// modes). As pgbench's `parseQuery`, every occurrence gets its own number: `:aid` used
    /// twice is `$1` and `$2`, both with `aid`.
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
    ///
    /// As pgbench's `ParseScript`: SQL is split where psql's lexer ends a command (an unquoted
    /// `;` outside parentheses, or a backslash), meta-commands are read with pgbench's rules and
    /// checks, `\gset`/`\aset` are merged into the SQL command before them; then an empty script
    /// and unbalanced `\if`s are refused (`addScript`, `CheckConditional`).
    pub fn parse(file: &str, name: &str, text: &str, weight: u32) -> Result<Script, ScriptError> {
        let mut p = Parser::new(file, text);
        p.run()?;
        if p.commands.is_empty() {
            // pgbench: `empty command list for script "%s"` (addScript)
            return Err(p.error(0, format!("empty command list for script \"{file}\"")));
        }
        p.link_conditionals()?;
        p.check_pipelines()?;
        Ok(Script {
            name: name.to_string(),
            weight,
            commands: p.commands,
        })
    }
}

/// Parses `-f FILE[@WEIGHT]` / `-b NAME[@WEIGHT]`: the name and the weight (default 1). A weight
/// that is not a non-negative integer is an error naming the argument.
///
/// pgbench's `parseScriptWeight`: the last `@` separates the weight, read by `strtol` (leading
/// blanks and a sign allowed, nothing after the digits), in 0 ..= `INT_MAX`.
pub fn split_weight(arg: &str) -> Result<(&str, u32), String> {
    let Some(at) = arg.rfind('@') else {
        return Ok((arg, 1));
    };
    let (name, spec) = (&arg[..at], &arg[at..]);
    let digits = spec[1..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (negative, digits) = match digits.as_bytes().first() {
        Some(b'-') => (true, &digits[1..]),
        Some(b'+') => (false, &digits[1..]),
        _ => (false, digits),
    };
    let invalid = || format!("invalid weight specification: {spec}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    // strtol's range is a C long (64 bits here): beyond it errno is ERANGE, which pgbench reports
    // as an invalid specification.
    let magnitude: i64 = digits.parse().map_err(|_| invalid())?;
    let value = if negative { -magnitude } else { magnitude };
    if !(0..=i64::from(i32::MAX)).contains(&value) {
        return Err(format!(
            "weight specification out of range (0 .. {}): {value}",
            i32::MAX
        ));
    }
    Ok((name, value as u32))
}

/// Whether `name` can name a variable (pgbench's `valid_variable_name`): ASCII letters, `_` or
/// any non-ASCII character, then those or digits.
pub fn valid_variable_name(name: &str) -> bool {
    let b = name.as_bytes();
    match b.first() {
        Some(&c) if is_var_start(c) => b[1..].iter().all(|&c| is_var_char(c)),
        _ => false,
    }
}

fn is_var_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_var_char(c: u8) -> bool {
    is_var_start(c) || c.is_ascii_digit()
}

/// pgbench's `parseVariable`: the length in bytes of the variable name after the `:` at
/// `text[0]`, if one follows.
fn variable_at(text: &[u8]) -> Option<usize> {
    match text.get(1) {
        Some(&c) if is_var_start(c) => {
            Some(1 + text[1..].iter().take_while(|&&c| is_var_char(c)).count())
        }
        _ => None,
    }
}

impl Sql {
    /// Cuts `text` at its `:name` references the way pgbench's `parseQuery` and
    /// `assignVariables` do: every `:` followed by a variable name, wherever it is (pgbench does
    /// not look at quotes); a run of colons that is not (`::int`) is kept as it is.
    fn new(text: &str) -> Sql {
        let b = text.as_bytes();
        let mut pieces = Vec::new();
        let mut params: Vec<String> = Vec::new();
        let mut parameterized = String::with_capacity(text.len());
        let mut literal_from = 0;
        let mut i = 0;
        while i < b.len() {
            if b[i] != b':' {
                i += 1;
                continue;
            }
            match variable_at(&b[i..]) {
                Some(len) => {
                    if literal_from < i {
                        pieces.push(Piece::Text(text[literal_from..i].to_string()));
                    }
                    parameterized.push_str(&text[literal_from..i]);
                    let name = &text[i + 1..i + len];
                    pieces.push(Piece::Var(name.to_string()));
                    params.push(name.to_string());
                    parameterized.push('$');
                    parameterized.push_str(&params.len().to_string());
                    i += len;
                    literal_from = i;
                }
                None => {
                    while i < b.len() && b[i] == b':' {
                        i += 1;
                    }
                }
            }
        }
        if literal_from < b.len() {
            pieces.push(Piece::Text(text[literal_from..].to_string()));
        }
        parameterized.push_str(&text[literal_from..]);
        Sql {
            parameterized,
            params,
            pieces,
            gset: None,
        }
    }
}

/// Why psql's lexer stopped.
enum Scan {
    /// A command-ending `;` (echoed).
    Semicolon,
    /// A backslash starting a meta-command (consumed).
    Backslash,
    /// The end of the text.
    End,
}

/// A meta-command read by [`Parser::backslash`].
enum Meta {
    Command(CommandKind),
    Gset { all: bool, prefix: String },
}

/// The script reader: psql's SQL lexer (`psqlscan.l`, as pgbench sets it up: standard strings,
/// one scanner for the whole file) and pgbench's backslash-command lexer (`exprscan.l`).
struct Parser<'a> {
    file: &'a str,
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    line_starts: Vec<usize>,
    // psqlscan's state, kept across commands as pgbench keeps one scanner
    paren_depth: u32,
    begin_depth: u32,
    identifier_count: u32,
    identifiers: [u8; 4],
    commands: Vec<Command>,
    /// Byte offset where each command starts (its backslash for meta-commands), for errors.
    offsets: Vec<usize>,
}

impl<'a> Parser<'a> {
    fn new(file: &'a str, src: &'a str) -> Parser<'a> {
        let mut line_starts = vec![0];
        line_starts.extend(
            src.bytes()
                .enumerate()
                .filter(|&(_, c)| c == b'\n')
                .map(|(i, _)| i + 1),
        );
        Parser {
            file,
            src,
            b: src.as_bytes(),
            pos: 0,
            line_starts,
            paren_depth: 0,
            begin_depth: 0,
            identifier_count: 0,
            identifiers: [0; 4],
            commands: Vec::new(),
            offsets: Vec::new(),
        }
    }

    /// 0-based line index and 1-based character column of byte `offset`.
    fn locate(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.b.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let column = 1 + String::from_utf8_lossy(&self.b[start..offset])
            .chars()
            .count();
        (line, column)
    }

    fn line_text(&self, line: usize) -> &'a str {
        let start = self.line_starts[line];
        let end = self
            .line_starts
            .get(line + 1)
            .map_or(self.b.len(), |&e| e - 1);
        let text = self.src.get(start..end).unwrap_or("");
        text.strip_suffix('\r').unwrap_or(text)
    }

    fn error(&self, offset: usize, message: String) -> ScriptError {
        let (line, column) = self.locate(offset);
        ScriptError {
            file: self.file.to_string(),
            line: line as u32 + 1,
            column: column as u32,
            message,
            context: format!(
                "  {}\n  {}^",
                self.line_text(line),
                " ".repeat(column.saturating_sub(1))
            ),
        }
    }

    /// pgbench's `syntax_error` wording: `MSG[ (MORE)] in command "NAME"`.
    fn syntax_error(
        &self,
        offset: usize,
        msg: &str,
        more: Option<&str>,
        command: &str,
    ) -> ScriptError {
        let mut message = msg.to_string();
        if let Some(more) = more {
            message.push_str(&format!(" ({more})"));
        }
        if !command.is_empty() {
            message.push_str(&format!(" in command \"{command}\""));
        }
        self.error(offset, message)
    }

    fn push(&mut self, offset: usize, text: String, kind: CommandKind) {
        let (line, _) = self.locate(offset);
        self.commands.push(Command {
            line: line as u32 + 1,
            text,
            kind,
        });
        self.offsets.push(offset);
    }

    /// pgbench's `ParseScript` loop.
    fn run(&mut self) -> Result<(), ScriptError> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let mut start = None;
            let scan = self.scan_sql(&mut buf, &mut start);
            self.sql_command(&buf, start.unwrap_or(self.pos));
            match scan {
                Scan::End => return Ok(()),
                Scan::Semicolon => {}
                Scan::Backslash => {
                    let backslash = self.pos - 1;
                    match self.backslash(backslash)? {
                        None => {}
                        Some(Meta::Gset { all, prefix }) => {
                            self.merge_gset(backslash, all, prefix)?
                        }
                        Some(Meta::Command(kind)) => {
                            let text = self.first_line(backslash);
                            self.push(backslash, text, kind);
                        }
                    }
                }
            }
        }
    }

    /// The source line from `offset` to its end, trimmed (a meta-command's `first_line`).
    fn first_line(&self, offset: usize) -> String {
        let rest = &self.src[offset..];
        let end = rest.find('\n').unwrap_or(rest.len());
        rest[..end].trim().to_string()
    }

    /// pgbench's `create_sql_command` + `postprocess_sql_command`: what the lexer collected, less
    /// leading blanks and `--` comments, is a command unless nothing is left.
    fn sql_command(&mut self, buf: &[u8], start: usize) {
        let mut skip = 0;
        loop {
            if skip < buf.len() && (buf[skip].is_ascii_whitespace() || buf[skip] == 0x0b) {
                skip += 1;
            } else if buf[skip..].starts_with(b"--") {
                match buf[skip..].iter().position(|&c| c == b'\n') {
                    Some(nl) => skip += nl + 1,
                    None => return,
                }
            } else {
                break;
            }
        }
        if skip >= buf.len() {
            return;
        }
        let text = String::from_utf8_lossy(&buf[skip..]).into_owned();
        // first_line: at most 127 bytes of the first line (pgbench's 128-byte buffer)
        let mut first = &text[..text.find(['\n', '\r']).unwrap_or(text.len())];
        if first.len() > 127 {
            let mut cut = 127;
            while !first.is_char_boundary(cut) {
                cut -= 1;
            }
            first = &first[..cut];
        }
        let first = first.trim().to_string();
        let sql = Sql::new(&text);
        self.push(start, first, CommandKind::Sql(sql));
    }

    /// `\gset`/`\aset` joins the SQL command before it (pgbench: "\gset must follow an SQL
    /// command", also said for `\aset`).
    fn merge_gset(
        &mut self,
        backslash: usize,
        all: bool,
        prefix: String,
    ) -> Result<(), ScriptError> {
        let err = |more: Option<&str>| {
            self.syntax_error(backslash, "\\gset must follow an SQL command", more, "")
        };
        let Some(last) = self.commands.last() else {
            return Err(err(None));
        };
        match &last.kind {
            CommandKind::Sql(sql) if sql.gset.is_none() => {}
            _ => return Err(err(Some(&last.text))),
        }
        if let Some(Command {
            kind: CommandKind::Sql(sql),
            ..
        }) = self.commands.last_mut()
        {
            sql.gset = Some(Gset { prefix, all });
        }
        Ok(())
    }

    fn echo(&self, buf: &mut Vec<u8>, start: &mut Option<usize>, from: usize, to: usize) {
        if buf.is_empty() && start.is_none() {
            *start = Some(from);
        }
        buf.extend_from_slice(&self.b[from..to]);
    }

    /// psql_scan: collects SQL text into `buf` until a command-ending `;`, a backslash, or the
    /// end. `start` gets the offset of the first byte collected.
    fn scan_sql(&mut self, buf: &mut Vec<u8>, start: &mut Option<usize>) -> Scan {
        let b = self.b;
        while self.pos < b.len() {
            let p = self.pos;
            let c = b[p];
            let next = b.get(p + 1).copied();
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0c => {
                    let end = p + b[p..]
                        .iter()
                        .take_while(|&&c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0c))
                        .count();
                    // leading whitespace is not collected
                    if !buf.is_empty() {
                        self.echo(buf, start, p, end);
                    }
                    self.pos = end;
                }
                // a `--` comment is collected as whitespace is, once the command has begun
                // (psql 15 and later send comments; pgbench 15's --debug log shows them)
                b'-' if next == Some(b'-') => {
                    let end = p + b[p..]
                        .iter()
                        .position(|&c| c == b'\n' || c == b'\r')
                        .unwrap_or(b.len() - p);
                    if !buf.is_empty() {
                        self.echo(buf, start, p, end);
                    }
                    self.pos = end;
                }
                b'/' if next == Some(b'*') => {
                    let end = self.comment_end(p + 2);
                    self.echo(buf, start, p, end);
                    self.pos = end;
                }
                b'\'' => {
                    let end = self.string_end(p + 1, false);
                    self.echo(buf, start, p, end);
                    self.pos = end;
                }
                b'"' => {
                    let end = self.identifier_end(p + 1);
                    self.echo(buf, start, p, end);
                    self.pos = end;
                }
                b'$' => {
                    let end = self.dollar_end(p);
                    self.echo(buf, start, p, end);
                    self.pos = end;
                }
                b'(' => {
                    self.paren_depth += 1;
                    self.echo(buf, start, p, p + 1);
                    self.pos = p + 1;
                }
                b')' => {
                    self.paren_depth = self.paren_depth.saturating_sub(1);
                    self.echo(buf, start, p, p + 1);
                    self.pos = p + 1;
                }
                b';' => {
                    self.echo(buf, start, p, p + 1);
                    self.pos = p + 1;
                    if self.paren_depth == 0 && self.begin_depth == 0 {
                        self.identifier_count = 0;
                        return Scan::Semicolon;
                    }
                }
                b'\\' => {
                    if let Some(escaped @ (b';' | b':')) = next {
                        // `\;` and `\:` put a plain `;` or `:` into the command
                        self.echo(buf, start, p + 1, p + 2);
                        if escaped == b';' {
                            self.identifier_count = 0;
                        }
                        self.pos = p + 2;
                    } else {
                        self.pos = p + 1;
                        return Scan::Backslash;
                    }
                }
                b'0'..=b'9' => {
                    let end = p + b[p..].iter().take_while(|c| c.is_ascii_digit()).count();
                    self.echo(buf, start, p, end);
                    self.pos = end;
                }
                c if is_var_start(c) => {
                    let end = self.word_token(p);
                    self.echo(buf, start, p, end);
                    self.pos = end;
                }
                _ => {
                    self.echo(buf, start, p, p + 1);
                    self.pos = p + 1;
                }
            }
        }
        Scan::End
    }

    /// After `/*` at `from - 2`: the end of the (nested) comment, or the end of the text.
    fn comment_end(&self, mut i: usize) -> usize {
        let b = self.b;
        let mut depth = 0u32;
        while i < b.len() {
            if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                depth += 1;
                i += 2;
            } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                if depth == 0 {
                    return i + 2;
                }
                depth -= 1;
                i += 2;
            } else {
                i += 1;
            }
        }
        b.len()
    }

    /// After an opening `'` at `i - 1`: the end of the string literal (with SQL's continuation
    /// of a literal across a newline), or the end of the text. `escapes`: an `E'…'` string,
    /// where a backslash escapes the next character.
    fn string_end(&self, mut i: usize, escapes: bool) -> usize {
        let b = self.b;
        loop {
            while i < b.len() && b[i] != b'\'' {
                i += if escapes && b[i] == b'\\' { 2 } else { 1 };
            }
            if i >= b.len() {
                return b.len();
            }
            i += 1; // the closing quote
                    // `''` is a quote inside the string; a newline-separated `'` continues it (xqs)
            if b.get(i) == Some(&b'\'') {
                i += 1;
                continue;
            }
            match self.quote_continuation(i) {
                Some(next) => i = next,
                None => return i,
            }
        }
    }

    /// psqlscan's `{quotecontinue}`: blanks with at least one newline, then `'`. Returns the
    /// offset after that quote.
    fn quote_continuation(&self, mut i: usize) -> Option<usize> {
        let b = self.b;
        let skip_comment = |i: usize| -> usize {
            i + b[i..]
                .iter()
                .take_while(|&&c| c != b'\n' && c != b'\r')
                .count()
        };
        // horizontal blanks and comments
        loop {
            match b.get(i) {
                Some(b' ' | b'\t' | 0x0c) => i += 1,
                Some(b'-') if b.get(i + 1) == Some(&b'-') => i = skip_comment(i),
                _ => break,
            }
        }
        if !matches!(b.get(i), Some(b'\n' | b'\r')) {
            return None;
        }
        i += 1;
        loop {
            match b.get(i) {
                Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0c) => i += 1,
                Some(b'-') if b.get(i + 1) == Some(&b'-') => {
                    i = skip_comment(i);
                    if !matches!(b.get(i), Some(b'\n' | b'\r')) {
                        return None;
                    }
                }
                Some(b'\'') => return Some(i + 1),
                _ => return None,
            }
        }
    }

    /// After an opening `"` at `i - 1`: the end of the quoted identifier.
    fn identifier_end(&self, mut i: usize) -> usize {
        let b = self.b;
        loop {
            match b[i.min(b.len())..].iter().position(|&c| c == b'"') {
                None => return b.len(),
                Some(q) => {
                    i += q + 1;
                    if b.get(i) == Some(&b'"') {
                        i += 1;
                    } else {
                        return i;
                    }
                }
            }
        }
    }

    /// At a `$`: the end of a dollar-quoted string (`$tag$…$tag$`), or just past the `$` when
    /// it does not open one (a parameter `$1`, or `$word` without a closing `$`).
    fn dollar_end(&self, p: usize) -> usize {
        let b = self.b;
        let tag_len = b[p + 1..]
            .iter()
            .enumerate()
            .take_while(|&(k, &c)| {
                if k == 0 {
                    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
                } else {
                    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
                }
            })
            .count();
        if b.get(p + 1 + tag_len) != Some(&b'$') {
            return p + 1;
        }
        let delim = &b[p..p + tag_len + 2];
        let body = p + delim.len();
        match b[body..].windows(delim.len()).position(|w| w == delim) {
            Some(k) => body + k + delim.len(),
            None => b.len(),
        }
    }

    /// At a letter (or `_`, or a non-ASCII byte): a string with a prefix (`E'…'`, `B'…'`,
    /// `X'…'`, `N'…'`, `U&'…'`, `U&"…"`) or an identifier, tracking psqlscan's
    /// `CREATE [OR REPLACE] FUNCTION|PROCEDURE … BEGIN … END` depth so that semicolons inside
    /// a SQL-standard function body do not end the command.
    fn word_token(&mut self, p: usize) -> usize {
        let b = self.b;
        let next = b.get(p + 1).copied();
        match (b[p], next) {
            (b'e' | b'E', Some(b'\'')) => return self.string_end(p + 2, true),
            (b'b' | b'B' | b'x' | b'X' | b'n' | b'N', Some(b'\'')) => {
                return self.string_end(p + 2, false)
            }
            (b'u' | b'U', Some(b'&')) => match b.get(p + 2) {
                Some(b'\'') => return self.string_end(p + 3, false),
                Some(b'"') => return self.identifier_end(p + 3),
                _ => return p + 1,
            },
            _ => {}
        }
        let end = p + b[p..]
            .iter()
            .take_while(|&&c| is_var_char(c) || c == b'$')
            .count();
        let word = &self.src.as_bytes()[p..end];
        if self.identifier_count == 0 {
            self.identifiers = [0; 4];
        }
        let lower = |w: &[u8], s: &str| w.eq_ignore_ascii_case(s.as_bytes());
        if ["create", "function", "procedure", "or", "replace"]
            .iter()
            .any(|k| lower(word, k))
        {
            if let Some(slot) = self.identifiers.get_mut(self.identifier_count as usize) {
                *slot = word[0].to_ascii_lowercase();
            }
        }
        self.identifier_count = self.identifier_count.saturating_add(1);
        let ids = self.identifiers;
        let in_routine = ids[0] == b'c'
            && (ids[1] == b'f'
                || ids[1] == b'p'
                || (ids[1] == b'o' && ids[2] == b'r' && (ids[3] == b'f' || ids[3] == b'p')));
        if in_routine && self.paren_depth == 0 {
            if lower(word, "begin") {
                self.begin_depth += 1;
            } else if lower(word, "case") {
                if self.begin_depth >= 1 {
                    self.begin_depth += 1;
                }
            } else if lower(word, "end") {
                self.begin_depth = self.begin_depth.saturating_sub(1);
            }
        }
        end
    }

    /// exprscan's INITIAL state: the next blank-separated word of a meta-command, as
    /// (start, end) offsets; `None` at the end of the command (a newline, consumed, or the end
    /// of the text). `\` + newline continues the command on the next line.
    fn word(&mut self, ended: &mut bool) -> Option<(usize, usize)> {
        if *ended {
            return None;
        }
        let b = self.b;
        loop {
            match b.get(self.pos) {
                None => {
                    *ended = true;
                    return None;
                }
                Some(b'\n') => {
                    self.pos += 1;
                    *ended = true;
                    return None;
                }
                Some(b' ' | b'\t' | b'\r' | 0x0b | 0x0c) => self.pos += 1,
                Some(b'\\') if b.get(self.pos + 1) == Some(&b'\n') => self.pos += 2,
                Some(_) => break,
            }
        }
        let start = self.pos;
        let mut end = start
            + b[start..]
                .iter()
                .take_while(|&&c| !matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c | b'\n'))
                .count();
        self.pos = end;
        if end > start + 1 && b[end - 1] == b'\\' && b.get(end) == Some(&b'\n') {
            // `word\` + newline: the word, and the command goes on
            end -= 1;
            self.pos += 1;
        }
        Some((start, end))
    }

    /// The rest of a `\set`/`\if`/`\elif` line (continued by `\` + newline) as the text given to
    /// the expression parser; consumes it and its newline. Continuations become two blanks and
    /// `\r`, `\v`, `\f` one, so offsets in the text are offsets in the source (an error at the
    /// end of the text, offset = its length, is on the newline, where pgbench shows it).
    fn expression_text(&mut self) -> (usize, String) {
        let b = self.b;
        let start = self.pos;
        let mut i = start;
        while i < b.len() {
            if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                i += 2;
            } else if b[i] == b'\n' {
                break;
            } else {
                i += 1;
            }
        }
        let mut text = Vec::with_capacity(i - start);
        let mut k = start;
        while k < i {
            if b[k] == b'\\' && b.get(k + 1) == Some(&b'\n') {
                text.extend_from_slice(b"  ");
                k += 2;
            } else {
                text.push(match b[k] {
                    b'\r' | 0x0b | 0x0c => b' ',
                    c => c,
                });
                k += 1;
            }
        }
        self.pos = (i + 1).min(b.len());
        (start, String::from_utf8_lossy(&text).into_owned())
    }

    fn expression(&mut self, command: &str) -> Result<Expr, ScriptError> {
        let (start, text) = self.expression_text();
        expr::parse(&text).map_err(|e| {
            self.syntax_error(start + e.offset.min(text.len()), &e.message, None, command)
        })
    }

    /// pgbench's `process_backslash_command`, the backslash at `backslash` already consumed.
    fn backslash(&mut self, backslash: usize) -> Result<Option<Meta>, ScriptError> {
        let mut ended = false;
        let Some((s, e)) = self.word(&mut ended) else {
            return Ok(None);
        };
        let name = &self.src[s..e];
        let lower = name.to_ascii_lowercase();
        let kind = match lower.as_str() {
            "set" => {
                let Some((vs, ve)) = self.word(&mut ended) else {
                    return Err(self.syntax_error(backslash, "missing argument", None, name));
                };
                let var = self.src[vs..ve].to_string();
                if !valid_variable_name(&var) {
                    // pgbench finds this when it assigns; said here, once, before the run
                    return Err(self.syntax_error(
                        vs,
                        &format!("invalid variable name: \"{var}\""),
                        None,
                        name,
                    ));
                }
                let expr = self.expression(name)?;
                CommandKind::Set { var, expr }
            }
            "if" | "elif" => {
                let cond = self.expression(name)?;
                if lower == "if" {
                    CommandKind::If { cond, next: 0 }
                } else {
                    CommandKind::Elif {
                        cond,
                        next: 0,
                        end: 0,
                    }
                }
            }
            _ => {
                let mut args = Vec::new();
                while let Some(w) = self.word(&mut ended) {
                    args.push(w);
                }
                return self.other_meta(backslash, name, &lower, &args).map(Some);
            }
        };
        Ok(Some(Meta::Command(kind)))
    }

    /// The meta-commands whose arguments are words, with pgbench's checks.
    fn other_meta(
        &self,
        backslash: usize,
        name: &str,
        lower: &str,
        args: &[(usize, usize)],
    ) -> Result<Meta, ScriptError> {
        let word = |k: usize| &self.src[args[k].0..args[k].1];
        let no_arguments = |kind: CommandKind| {
            if args.is_empty() {
                Ok(Meta::Command(kind))
            } else {
                Err(self.syntax_error(backslash, "unexpected argument", None, name))
            }
        };
        let shell_arg = |k: usize| {
            let w = word(k);
            match (w.as_bytes().first(), w.as_bytes().get(1)) {
                (Some(b':'), Some(b':')) => Arg::Text(w[1..].to_string()),
                (Some(b':'), _) => Arg::Var(w[1..].to_string()),
                _ => Arg::Text(w.to_string()),
            }
        };
        match lower {
            "sleep" => self.sleep(backslash, name, args),
            "setshell" => {
                if args.len() < 2 {
                    return Err(self.syntax_error(backslash, "missing argument", None, name));
                }
                let var = word(0).to_string();
                if !valid_variable_name(&var) {
                    return Err(self.syntax_error(
                        args[0].0,
                        &format!("invalid variable name: \"{var}\""),
                        None,
                        name,
                    ));
                }
                Ok(Meta::Command(CommandKind::SetShell {
                    var,
                    argv: (1..args.len()).map(shell_arg).collect(),
                }))
            }
            "shell" => {
                if args.is_empty() {
                    return Err(self.syntax_error(backslash, "missing command", None, name));
                }
                Ok(Meta::Command(CommandKind::Shell {
                    argv: (0..args.len()).map(shell_arg).collect(),
                }))
            }
            "else" => no_arguments(CommandKind::Else { end: 0 }),
            "endif" => no_arguments(CommandKind::Endif),
            "startpipeline" => no_arguments(CommandKind::StartPipeline),
            "syncpipeline" => no_arguments(CommandKind::SyncPipeline),
            "endpipeline" => no_arguments(CommandKind::EndPipeline),
            "gset" | "aset" => {
                if args.len() > 1 {
                    return Err(self.syntax_error(backslash, "too many arguments", None, name));
                }
                Ok(Meta::Gset {
                    all: lower == "aset",
                    prefix: args
                        .first()
                        .map(|_| word(0).to_string())
                        .unwrap_or_default(),
                })
            }
            _ => Err(self.syntax_error(backslash, "invalid command", None, name)),
        }
    }

    /// `\sleep N [us|ms|s]`, `\sleep Nms`, `\sleep :var [unit]` (pgbench's checks).
    fn sleep(
        &self,
        backslash: usize,
        name: &str,
        args: &[(usize, usize)],
    ) -> Result<Meta, ScriptError> {
        if args.is_empty() {
            return Err(self.syntax_error(backslash, "missing argument", None, name));
        }
        if args.len() > 2 {
            return Err(self.syntax_error(args[2].0, "too many arguments", None, name));
        }
        let first = &self.src[args[0].0..args[0].1];
        let mut unit: Option<(usize, &str)> = args.get(1).map(|&(s, e)| (s, &self.src[s..e]));
        let amount = if let Some(var) = first.strip_prefix(':') {
            Arg::Var(var.to_string())
        } else {
            // the number: a sign and digits; what follows is the unit when no unit word follows
            let b = first.as_bytes();
            let sign = usize::from(matches!(b[0], b'+' | b'-'));
            let digits = b[sign..].iter().take_while(|c| c.is_ascii_digit()).count();
            let number_end = sign + digits;
            if number_end < b.len() {
                if args.len() == 1 && digits > 0 {
                    unit = Some((args[0].0 + number_end, &first[number_end..]));
                } else {
                    return Err(self.syntax_error(
                        args[0].0,
                        "invalid sleep time, must be an integer",
                        Some(first),
                        name,
                    ));
                }
            }
            Arg::Text(first[..number_end].to_string())
        };
        let unit_us = match unit {
            None => 1_000_000,
            Some((_, u)) if u.eq_ignore_ascii_case("us") => 1,
            Some((_, u)) if u.eq_ignore_ascii_case("ms") => 1_000,
            Some((_, u)) if u.eq_ignore_ascii_case("s") => 1_000_000,
            Some((at, u)) => {
                return Err(self.syntax_error(
                    at,
                    "unrecognized time unit, must be us, ms or s",
                    Some(u),
                    name,
                ))
            }
        };
        Ok(Meta::Command(CommandKind::Sleep { amount, unit_us }))
    }

    /// pgbench's `CheckConditional`, filling in where each branch jumps.
    fn link_conditionals(&mut self) -> Result<(), ScriptError> {
        // per open \if: its branches (the \if, \elif…, \else) and whether \else was seen
        let mut stack: Vec<(Vec<usize>, bool)> = Vec::new();
        let err = |p: &Parser, i: usize, msg: &str| p.error(p.offsets[i], msg.to_string());
        for i in 0..self.commands.len() {
            match self.commands[i].kind {
                CommandKind::If { .. } => stack.push((vec![i], false)),
                CommandKind::Elif { .. } | CommandKind::Else { .. } => {
                    let is_else = matches!(self.commands[i].kind, CommandKind::Else { .. });
                    let word = if is_else { "\\else" } else { "\\elif" };
                    let Some((branches, seen_else)) = stack.last_mut() else {
                        return Err(err(self, i, &format!("{word} without matching \\if")));
                    };
                    if *seen_else {
                        return Err(err(self, i, &format!("{word} after \\else")));
                    }
                    *seen_else = is_else;
                    branches.push(i);
                }
                CommandKind::Endif => {
                    let Some((branches, _)) = stack.pop() else {
                        return Err(err(self, i, "\\endif without matching \\if"));
                    };
                    let mut targets = branches[1..].iter().copied().chain([i]);
                    for &b in &branches {
                        let next = targets.next().unwrap_or(i);
                        match &mut self.commands[b].kind {
                            CommandKind::If { next: n, .. } => *n = next,
                            CommandKind::Elif { next: n, end, .. } => {
                                *n = next;
                                *end = i;
                            }
                            CommandKind::Else { end } => *end = i,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some((branches, _)) = stack.last() {
            return Err(err(self, branches[0], "\\if without matching \\endif"));
        }
        Ok(())
    }

    /// What pgbench finds only while running, found before: a pipeline opened twice, closed or
    /// synced when not open, left open at the end, or `\gset`/`\aset` inside one. Scripts with
    /// `\if` are left to the run's checks (a pipeline may open in one branch only).
    fn check_pipelines(&self) -> Result<(), ScriptError> {
        if self
            .commands
            .iter()
            .any(|c| matches!(c.kind, CommandKind::If { .. }))
        {
            return Ok(());
        }
        let mut open: Option<usize> = None;
        for (i, c) in self.commands.iter().enumerate() {
            let at = self.offsets[i];
            match &c.kind {
                CommandKind::StartPipeline if open.is_some() => {
                    return Err(self.syntax_error(
                        at,
                        "already in pipeline mode",
                        None,
                        "startpipeline",
                    ))
                }
                CommandKind::StartPipeline => open = Some(i),
                CommandKind::SyncPipeline | CommandKind::EndPipeline if open.is_none() => {
                    let name = if matches!(c.kind, CommandKind::SyncPipeline) {
                        "syncpipeline"
                    } else {
                        "endpipeline"
                    };
                    return Err(self.syntax_error(at, "not in pipeline mode", None, name));
                }
                CommandKind::EndPipeline => open = None,
                CommandKind::Sql(Sql { gset: Some(g), .. }) if open.is_some() => {
                    let (word, name) = if g.all {
                        ("\\aset", "aset")
                    } else {
                        ("\\gset", "gset")
                    };
                    return Err(self.syntax_error(
                        at,
                        &format!("{word} is not allowed in pipeline mode"),
                        None,
                        name,
                    ));
                }
                _ => {}
            }
        }
        match open {
            Some(i) => Err(self.error(
                self.offsets[i],
                "end of script reached with pipeline open".to_string(),
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Script {
        Script::parse("t.sql", "t", text, 1).unwrap_or_else(|e| panic!("{e}"))
    }

    fn sql(c: &Command) -> &Sql {
        match &c.kind {
            CommandKind::Sql(s) => s,
            other => panic!("not SQL: {other:?}"),
        }
    }

    /// The SQL text pgbench would send in simple mode with the variables left in.
    fn text(c: &Command) -> String {
        sql(c)
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Var(v) => format!(":{v}"),
            })
            .collect()
    }

    #[test]
    fn sql_ends_where_psql_ends_it() {
        let s = parse(concat!(
            "-- a comment; not a command\n",
            "\n",
            "SELECT 'a;b', E'c\\';d', \"e;f\" /* g; /* h; */ i; */\n",
            "  FROM t -- j;\n",
            "  WHERE x = $q$k;$q$ AND y = $$l;$$ AND (m; n);\n",
            "SELECT 1; SELECT 2 \\; SELECT 3;\n",
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END;\n",
            "SELECT 'a'\n",
            "  'b';\n",
            "SELECT 'no end",
        ));
        let texts: Vec<String> = s.commands.iter().map(text).collect();
        assert_eq!(
            texts,
            [
                // -- comments inside a command are kept, as psql 15 keeps them
                "SELECT 'a;b', E'c\\';d', \"e;f\" /* g; /* h; */ i; */\n  FROM t -- j;\n  WHERE x = $q$k;$q$ AND y = $$l;$$ AND (m; n);",
                "SELECT 1;",
                "SELECT 2 ; SELECT 3;",
                "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END;",
                "SELECT 'a'\n  'b';",
                "SELECT 'no end",
            ]
        );
        let lines: Vec<u32> = s.commands.iter().map(|c| c.line).collect();
        assert_eq!(lines, [3, 6, 6, 7, 8, 10]);
        assert_eq!(
            s.commands[0].text,
            "SELECT 'a;b', E'c\\';d', \"e;f\" /* g; /* h; */ i; */"
        );
    }

    #[test]
    fn variables_become_parameters_as_pgbench_does() {
        let s = parse("SELECT :aid, :aid::int, x::text, :名前, ':q', :1, a := :b_2\n");
        let q = sql(&s.commands[0]);
        assert_eq!(
            q.parameterized,
            "SELECT $1, $2::int, x::text, $3, '$4', :1, a := $5\n"
        );
        assert_eq!(q.params, ["aid", "aid", "名前", "q", "b_2"]);
        assert_eq!(
            q.pieces[..4],
            [
                Piece::Text("SELECT ".into()),
                Piece::Var("aid".into()),
                Piece::Text(", ".into()),
                Piece::Var("aid".into()),
            ]
        );
        assert_eq!(
            text(&s.commands[0]),
            "SELECT :aid, :aid::int, x::text, :名前, ':q', :1, a := :b_2\n"
        );
    }

    #[test]
    fn gset_and_aset_join_the_sql_before_them() {
        let s = parse(
            "SELECT 1 AS a \\gset p_\nSELECT 2 AS b;\n\\aset\nSELECT 3 \\; SELECT 4 \\gset\n",
        );
        let g: Vec<Option<Gset>> = s.commands.iter().map(|c| sql(c).gset.clone()).collect();
        assert_eq!(
            g,
            [
                Some(Gset {
                    prefix: "p_".into(),
                    all: false
                }),
                Some(Gset {
                    prefix: String::new(),
                    all: true
                }),
                Some(Gset {
                    prefix: String::new(),
                    all: false
                }),
            ]
        );
        assert_eq!(text(&s.commands[0]), "SELECT 1 AS a ");
        assert_eq!(text(&s.commands[2]), "SELECT 3 ; SELECT 4 ");
    }

    #[test]
    fn meta_commands_read_their_words() {
        let s = parse(concat!(
            "\\sleep 10ms\n",
            "\\SLEEP 2 S\n",
            "\\sleep :d us\n",
            "\\sleep 3\n",
            "\\setshell v echo :x ::y \\\n  z\n",
            "\\shell true\n",
            "\\startpipeline\nSELECT 1;\n\\syncpipeline\n\\endpipeline\n",
        ));
        let kinds: Vec<String> = s.commands.iter().map(|c| format!("{:?}", c.kind)).collect();
        assert_eq!(kinds[0], r#"Sleep { amount: Text("10"), unit_us: 1000 }"#);
        assert_eq!(kinds[1], r#"Sleep { amount: Text("2"), unit_us: 1000000 }"#);
        assert_eq!(kinds[2], r#"Sleep { amount: Var("d"), unit_us: 1 }"#);
        assert_eq!(kinds[3], r#"Sleep { amount: Text("3"), unit_us: 1000000 }"#);
        assert_eq!(
            kinds[4],
            r#"SetShell { var: "v", argv: [Text("echo"), Var("x"), Text(":y"), Text("z")] }"#
        );
        assert_eq!(kinds[5], r#"Shell { argv: [Text("true")] }"#);
        assert_eq!(
            kinds[6..],
            [
                "StartPipeline",
                kinds[7].as_str(),
                "SyncPipeline",
                "EndPipeline"
            ]
        );
        assert_eq!(s.commands[4].text, "\\setshell v echo :x ::y \\");
        assert_eq!(s.commands[5].line, 7);
    }

    #[test]
    fn windows_line_ends_are_blanks() {
        let s = parse("\\set a 1\r\nSELECT :a;\r\n\\sleep 2 ms\r\nSELECT 1 \\gset\r\n");
        assert_eq!(s.commands.len(), 4);
        assert_eq!(s.commands[0].text, "\\set a 1");
        assert_eq!(text(&s.commands[1]), "SELECT :a;");
        assert_eq!(
            format!("{:?}", s.commands[2].kind),
            r#"Sleep { amount: Text("2"), unit_us: 1000 }"#
        );
        assert!(sql(&s.commands[3]).gset.is_some());
    }

    /// pgbench 15's errors for the scripts of tests/data/errors (made by its make.sh).
    fn pgbench_errors() -> Vec<(String, String)> {
        let dir = format!("{}/tests/data/errors", env!("CARGO_MANIFEST_DIR"));
        let expected = std::fs::read_to_string(format!("{dir}/expected.txt")).unwrap();
        expected
            .split("== ")
            .filter(|c| !c.is_empty())
            .map(|c| {
                let (file, out) = c.split_once('\n').unwrap();
                (file.to_string(), out.to_string())
            })
            .collect()
    }

    /// Our error for a file of tests/data/errors against pgbench's output: the same message and
    /// line, and, where pgbench draws a caret, the same column.
    fn check_against_pgbench(file: &str, pgbench: &str) {
        let dir = format!("{}/tests/data/errors", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        let err = Script::parse(file, file, &text, 1).expect_err(file);
        let first = pgbench
            .lines()
            .next()
            .unwrap()
            .trim_start_matches("pgbench: error: ");
        if let Some(rest) =
            first.strip_prefix(&format!("condition error in script \"{file}\" command "))
        {
            let (_, msg) = rest.split_once(": ").unwrap();
            assert_eq!(err.message, msg, "{file}");
        } else if first.starts_with("empty command list") {
            assert_eq!(err.message, first, "{file}");
        } else {
            let rest = first.strip_prefix(&format!("{file}:")).unwrap();
            let (line, msg) = rest.split_once(": ").unwrap();
            assert_eq!(
                (err.line.to_string(), err.message.as_str()),
                (line.to_string(), msg),
                "{file}"
            );
            if let Some(caret) = pgbench.lines().nth(2) {
                // the scripts start their meta-commands at column 1, where pgbench's line starts
                let column = caret.find('^').unwrap() + 1;
                assert_eq!(err.column as usize, column, "{file}: {err}");
            }
        }
    }

    #[test]
    fn errors_are_pgbench_s() {
        let cases = pgbench_errors();
        assert!(cases.len() >= 20);
        for (file, out) in &cases {
            // the expression parser's own cases are in expression_errors_are_pgbench_s
            if !file.starts_with("expr")
                && ![
                    "else_else.sql",
                    "unbalanced.sql",
                    "elif_else.sql",
                    "elif.sql",
                ]
                .contains(&file.as_str())
            {
                check_against_pgbench(file, out);
            }
        }
    }

    #[test]
    fn expression_and_conditional_errors_are_pgbench_s() {
        for (file, out) in &pgbench_errors() {
            if file.starts_with("expr")
                || [
                    "else_else.sql",
                    "unbalanced.sql",
                    "elif_else.sql",
                    "elif.sql",
                ]
                .contains(&file.as_str())
            {
                check_against_pgbench(file, out);
            }
        }
    }

    #[test]
    fn errors_show_the_line_and_a_caret() {
        let err = Script::parse("f.sql", "f", "SELECT 1;\n  \\sleep 5 xs\n", 1).unwrap_err();
        assert_eq!((err.line, err.column), (2, 12));
        assert_eq!(err.context, "    \\sleep 5 xs\n             ^");
        assert_eq!(
            err.to_string(),
            "f.sql:2:12: unrecognized time unit, must be us, ms or s (xs) in command \"sleep\"\n    \\sleep 5 xs\n             ^"
        );
        let err = Script::parse("f.sql", "f", "\n\n", 1).unwrap_err();
        assert_eq!(err.message, "empty command list for script \"f.sql\"");
    }

    #[test]
    fn pipelines_are_checked_before_the_run() {
        let err = |t: &str| Script::parse("p", "p", t, 1).unwrap_err().message;
        assert_eq!(
            err("\\startpipeline\nSELECT 1;\n"),
            "end of script reached with pipeline open"
        );
        assert_eq!(
            err("\\endpipeline\n"),
            "not in pipeline mode in command \"endpipeline\""
        );
        assert_eq!(
            err("\\startpipeline\nSELECT 1 \\gset\n\\endpipeline\n"),
            "\\gset is not allowed in pipeline mode in command \"gset\""
        );
    }

    #[test]
    fn weights_split_as_pgbench() {
        assert_eq!(split_weight("a.sql"), Ok(("a.sql", 1)));
        assert_eq!(split_weight("a@b.sql@7"), Ok(("a@b.sql", 7)));
        assert_eq!(split_weight("x@ +2"), Ok(("x", 2)));
        assert_eq!(split_weight("x@0"), Ok(("x", 0)));
        // pgbench 15's messages, from tests/data/errors/make.sh's neighbour runs
        assert_eq!(
            split_weight("x@"),
            Err("invalid weight specification: @".into())
        );
        assert_eq!(
            split_weight("x@abc"),
            Err("invalid weight specification: @abc".into())
        );
        assert_eq!(
            split_weight("x@2x"),
            Err("invalid weight specification: @2x".into())
        );
        assert_eq!(
            split_weight("x@-1"),
            Err("weight specification out of range (0 .. 2147483647): -1".into())
        );
        assert_eq!(
            split_weight("x@3000000000"),
            Err("weight specification out of range (0 .. 2147483647): 3000000000".into())
        );
    }

    #[test]
    fn builtins_parse() {
        for name in crate::builtin::NAMES {
            let (_, text) = crate::builtin::find(name).unwrap();
            let s = Script::parse(&format!("builtin:{name}"), name, text, 1).unwrap();
            assert!(s.commands.len() >= 2, "{name}");
        }
    }

    #[test]
    fn conditionals_are_linked() {
        let s = parse("\\if 1\nSELECT 1;\n\\elif 2\n\\if 3\n\\endif\n\\else\nSELECT 2;\n\\endif\n");
        let k: Vec<String> = s
            .commands
            .iter()
            .map(|c| match &c.kind {
                CommandKind::If { next, .. } => format!("if->{next}"),
                CommandKind::Elif { next, end, .. } => format!("elif->{next}/{end}"),
                CommandKind::Else { end } => format!("else/{end}"),
                CommandKind::Endif => "endif".into(),
                _ => "sql".into(),
            })
            .collect();
        assert_eq!(
            k,
            [
                "if->2",
                "sql",
                "elif->5/7",
                "if->4",
                "endif",
                "else/7",
                "sql",
                "endif"
            ]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Any text, and any mix of script fragments, is read or refused without a panic.
        #[test]
        fn parsing_never_panics(
            noise in "(?s).{0,200}",
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "SELECT 1", ";", "\\;", "'", "\"", "$$", "$a$", "(", ")", "/*", "*/", "--", "\n",
                "\\", "\\set x 1 + :y", "\\set", "\\if :x", "\\elif", "\\else", "\\endif",
                "\\sleep", " 5", "ms", ":v", "::", "\\gset", "\\aset p", "\\shell", "\\setshell",
                "\\startpipeline", "\\endpipeline", "\\syncpipeline", "é", "\r", "\\\n", " ",
                "BEGIN", "CREATE FUNCTION", "E'\\'", "U&'", "@",
            ]), 0..40),
        ) {
            let _ = Script::parse("p", "p", &noise, 1);
            let _ = Script::parse("p", "p", &parts.concat(), 1);
            let _ = split_weight(&noise);
        }
    }
}
