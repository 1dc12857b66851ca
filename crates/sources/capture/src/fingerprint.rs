//! A statement's fingerprint: its text with literals replaced by `?` and blanks collapsed, so the
//! same statement with other values (`WHERE aid = 17`, `WHERE aid = 4711`) is one statement in
//! profiles and comparisons, as `pg_stat_statements` groups them. Placeholders (`$1`) stay.

/// Longest fingerprint kept (a longer one is cut and ends in `…`).
pub const MAX_LEN: usize = 200;

/// The fingerprint of `sql`.
pub fn fingerprint(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len().min(MAX_LEN + 8));
    fingerprint_into(sql, &mut out);
    out
}

/// The fingerprint of `sql`, written into `out` (cleared first): the capture proxy names every
/// call it records, and reusing one buffer spares an allocation per call.
pub fn fingerprint_into(sql: &str, out: &mut String) {
    out.clear();
    let b = sql.as_bytes();
    let mut i = 0;
    let mut blank = false;
    let push = |out: &mut String, s: &str, blank: &mut bool| {
        if *blank && !out.is_empty() {
            out.push(' ');
        }
        *blank = false;
        out.push_str(s);
    };
    while i < b.len() && out.len() <= MAX_LEN {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                blank = true;
                i += 1;
            }
            // A comment to the end of the line.
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                blank = true;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(b.len());
                blank = true;
            }
            // A string literal ('' inside it is a quote), also E'…' and N'…'.
            b'\'' => {
                // Backslash escapes only in E'…' strings (standard_conforming_strings).
                let escapes = i > 0 && matches!(b[i - 1], b'E' | b'e');
                i += 1;
                while i < b.len() {
                    if b[i] == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    if escapes && b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i = (i + 1).min(b.len());
                push(out, "?", &mut blank);
            }
            // A dollar-quoted literal, `$$…$$` or `$tag$…$tag$` (issue 27: its text became part of
            // the name, a password with it), not a placeholder (`$1`) or a `$` inside a name.
            b'$' if !(i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
                && dollar_tag(&b[i..]).is_some() =>
            {
                i = dollar_literal_end(b, i).unwrap_or(b.len());
                push(out, "?", &mut blank);
            }
            // A negative number: a minus after an operator, a comma or a parenthesis, as
            // PostgreSQL folds it into the constant (so `+ -17` and `+ 17` are one statement).
            b'-' if b.get(i + 1).is_some_and(u8::is_ascii_digit)
                && !out.as_bytes().last().is_some_and(|&p| {
                    p.is_ascii_alphanumeric() || matches!(p, b')' | b'?' | b'_' | b'"' | b']')
                }) =>
            {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
                push(out, "?", &mut blank);
            }
            // A quoted identifier stays as it is.
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i = (i + 1).min(b.len());
                push(out, &sql[start..i], &mut blank);
            }
            // A number that is not part of a name or a placeholder.
            b'0'..=b'9' | b'.'
                if (c != b'.' || b.get(i + 1).is_some_and(u8::is_ascii_digit))
                    && !out.as_bytes().last().is_some_and(|&p| {
                        !blank && (p.is_ascii_alphanumeric() || p == b'_' || p == b'$')
                    }) =>
            {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
                push(out, "?", &mut blank);
            }
            // A run of letters and underscores at once (no branch above starts with one, and a
            // digit after one is part of the name, so cutting the run there changes nothing).
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
                    i += 1;
                }
                push(out, &sql[start..i], &mut blank);
            }
            _ => {
                let start = i;
                i += 1;
                while i < b.len() && !sql.is_char_boundary(i) {
                    i += 1;
                }
                push(out, &sql[start..i], &mut blank);
            }
        }
    }
    // A list of values in IN (…) or VALUES (…) stays as long as it was: the count can matter.
    if out.len() > MAX_LEN {
        let mut cut = MAX_LEN;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
}

/// The length of the opening `$tag$` of a dollar-quoted literal at the start of `b` (`$$`, or a
/// tag of letters, digits, `_` and non-ASCII bytes not starting with a digit), if it is one.
fn dollar_tag(b: &[u8]) -> Option<usize> {
    let tag_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    if b.first() != Some(&b'$') || b.get(1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let end = 1 + b[1..].iter().take_while(|&&c| tag_char(c)).count();
    (b.get(end) == Some(&b'$')).then_some(end + 1)
}

/// Where the dollar-quoted literal starting at `b[i]` ends (after its closing tag; the end of
/// `b` when it is never closed); `None` when no `$tag$` opens there.
pub(crate) fn dollar_literal_end(b: &[u8], i: usize) -> Option<usize> {
    let len = dollar_tag(&b[i..])?;
    let (tag, body) = (&b[i..i + len], i + len);
    let close = b[body..].windows(len).position(|w| w == tag);
    Some(close.map_or(b.len(), |p| body + p + len))
}

/// The first keyword of a statement, upper-cased (empty when it starts with something else).
fn first_keyword(sql: &str) -> String {
    sql.trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_uppercase()
}

/// True when PostgreSQL's `PREPARE` can take the statement: a `SELECT` (with `WITH`, `TABLE`,
/// `VALUES`), `INSERT`, `UPDATE`, `DELETE` or `MERGE` (its grammar's PreparableStmt). Anything
/// else (`TRUNCATE`, `COPY`, `SHOW`…) is a syntax error there, which the server logs.
pub fn preparable(sql: &str) -> bool {
    matches!(
        first_keyword(sql).as_str(),
        "SELECT" | "WITH" | "TABLE" | "VALUES" | "INSERT" | "UPDATE" | "DELETE" | "MERGE"
    )
}

/// What a statement does, by its first keyword: `read`, `write`, `transaction` or `other`.
pub fn class(sql: &str) -> &'static str {
    let first = first_keyword(sql);
    match first.as_str() {
        "SELECT" | "WITH" | "SHOW" | "TABLE" | "VALUES" | "FETCH" | "EXPLAIN" => "read",
        "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "COPY" | "TRUNCATE" => "write",
        "BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" | "PREPARE"
        | "ABORT" => "transaction",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_dollar_quoted_literals_become_a_placeholder() {
        assert_eq!(fingerprint("select $$NewSecretPw42$$"), "select ?");
        assert_eq!(
            fingerprint("SELECT $tag$a $$ b$tag$, $1, x FROM t WHERE y = $q$z$q$"),
            "SELECT ?, $1, x FROM t WHERE y = ?"
        );
        assert_eq!(
            fingerprint("select $$one$$"),
            fingerprint("select $$another$$")
        );
        // Placeholders and `$` inside names stay; an unclosed quote runs to the end.
        assert_eq!(
            fingerprint("SELECT a$b, $2 FROM t"),
            "SELECT a$b, $2 FROM t"
        );
        assert_eq!(fingerprint("select $$never closed"), "select ?");
        assert_eq!(fingerprint("DO $body$ BEGIN PERFORM 1; END $body$"), "DO ?");
    }

    #[test]
    fn literals_become_placeholders() {
        assert_eq!(
            fingerprint("UPDATE pgbench_accounts SET abalance = abalance + -4711 WHERE aid = 17;"),
            "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?;"
        );
        assert_eq!(
            fingerprint("SELECT x-1, 5 - 3, f(-2), a = -1.5"),
            "SELECT x-?, ? - ?, f(?), a = ?"
        );
        assert_eq!(
            fingerprint("select  *\n from t1 where name = 'O''Brien' and x=1.5e3"),
            "select * from t1 where name = ? and x=?"
        );
        assert_eq!(
            fingerprint("SELECT abalance FROM pgbench_accounts WHERE aid = $1"),
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
        );
        assert_eq!(
            fingerprint("select \"Col1\", t2.c3 from t2 -- why\n"),
            "select \"Col1\", t2.c3 from t2"
        );
        assert_eq!(fingerprint("select /* hint */ 1"), "select ?");
        // Same statement, other values: one fingerprint.
        assert_eq!(
            fingerprint("SELECT * FROM t WHERE id = 1"),
            fingerprint("SELECT * FROM t WHERE id = 99999")
        );
    }

    /// Names are taken a run of letters at a time: digits inside them, the `E` of an escape
    /// string and a `$` after them stay as they were; a reused buffer gives the same text.
    #[test]
    fn names_stay_whole_and_a_reused_buffer_changes_nothing() {
        let sql = "SELECT col1, t_2x, a$b FROM s3.t4 WHERE e = E'a\\'b' AND x=e'1' AND y=z-2";
        let want = "SELECT col1, t_2x, a$b FROM s3.t4 WHERE e = E? AND x=e? AND y=z-?";
        assert_eq!(fingerprint(sql), want);
        let mut out = String::from("left over from the last call");
        fingerprint_into(sql, &mut out);
        assert_eq!(out, want);
        fingerprint_into("", &mut out);
        assert_eq!(out, "");
    }

    #[test]
    fn long_and_odd_text_is_cut_not_broken() {
        let long = format!("select {}", "ünïcode_column, ".repeat(40));
        let f = fingerprint(&long);
        assert!(f.ends_with('…'));
        assert!(f.len() <= MAX_LEN + '…'.len_utf8());
        assert_eq!(fingerprint("select 'unterminated"), "select ?");
        assert_eq!(fingerprint(""), "");
    }

    #[test]
    fn issue_34_only_what_prepare_takes_is_preparable() {
        for sql in [
            "SELECT 1",
            " (select 1)",
            "with x as (select 1) insert into t select * from x",
            "TABLE t",
            "values (1)",
            "insert into t values (1)",
            "UPDATE t SET a = 1",
            "delete from t",
            "MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE",
        ] {
            assert!(preparable(sql), "{sql}");
        }
        for sql in [
            "truncate pgbench_history",
            "TRUNCATE TABLE t",
            "COPY t FROM STDIN",
            "SHOW work_mem",
            "FETCH 1 FROM c",
            "EXPLAIN SELECT 1",
            "BEGIN",
            "",
        ] {
            assert!(!preparable(sql), "{sql}");
        }
    }

    #[test]
    fn classes() {
        assert_eq!(class("  select 1"), "read");
        assert_eq!(class("(SELECT 1) UNION (SELECT 2)"), "read");
        assert_eq!(class("update t set x=1"), "write");
        assert_eq!(class("BEGIN;"), "transaction");
        assert_eq!(class("create table t(x int)"), "other");
    }
}
