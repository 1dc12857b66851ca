//! Removing secrets (passwords in connection strings) from anything dbscope writes.

/// Replaces passwords in a connection string or command-line argument with `***`.
///
/// Covers every form libpq (and so dbscope) reads a password from: a URI's userinfo
/// (`postgres://user:secret@host`, where libpq lets the password hold `?` and dbscope also hides a
/// password holding `/`), a URI query parameter (`?password=secret`, also with a percent-encoded
/// name such as `pass%77ord`), and a key/value string (`password=secret`, `password = 'a b'`,
/// `postgres:password=a\ b`). `pass=` is hidden too. Anything else comes back unchanged; text
/// around a password may be hidden with it, never the other way round.
pub fn redact(s: &str) -> String {
    let out = redact_userinfo(s);
    let out = redact_query(&out);
    redact_keywords(&out)
}

/// Whether `key` (already percent-decoded) names a password.
fn is_password_key(key: &str) -> bool {
    key.eq_ignore_ascii_case("password") || key.eq_ignore_ascii_case("pass")
}

/// Masks `user:***@` in every `scheme://` of `s`.
fn redact_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(pos) = s[i..].find("://") {
        let rest_start = i + pos + 3;
        out.push_str(&s[i..rest_start]);
        i = rest_start;
        let rest = &s[rest_start..uri_end(s, rest_start)];
        // libpq takes the first '@' before the first '/' (so '?', spaces and all belong to the
        // password); a password holding an un-encoded '@', '/', '#' or '?' (issue 27) goes on to
        // the last '@' of the argument. Hide up to the farther: a query value holding '@' may be
        // hidden with the password, never a part of the password shown.
        let libpq_at = rest
            .find(['@', '/'])
            .filter(|&j| rest.as_bytes()[j] == b'@');
        let token_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let reader_at = rest[..token_end].rfind('@');
        let Some(at) = libpq_at.max(reader_at) else {
            continue;
        };
        let userinfo = &rest[..at];
        // '[' and ']' cannot appear in a URI's userinfo (RFC 3986): a bracketed placeholder such
        // as the help text's `[user[:password]@]` is no credential, and hiding it would garble it.
        if userinfo.contains(['[', ']']) || userinfo.contains("://") {
            continue;
        }
        if let Some(colon) = userinfo.find(':') {
            out.push_str(&userinfo[..colon]);
            out.push_str(":***");
            i = rest_start + at;
        }
    }
    out.push_str(&s[i..]);
    out
}

/// Masks the value of every password parameter in the query of every `scheme://…?…` of `s`. A
/// value ends at `&`, at a `"` (a URI quoted inside a message) or at the end: a URI argument may
/// hold spaces.
fn redact_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(pos) = s[i..].find("://") {
        let after = i + pos + 3;
        let uri_end = uri_end(s, after);
        let Some(q) = s[after..uri_end].find('?') else {
            out.push_str(&s[i..uri_end]);
            i = uri_end;
            continue;
        };
        let mut p = after + q + 1;
        out.push_str(&s[i..p]);
        let next_uri = s[p..uri_end].find("://").map_or(uri_end, |e| p + e);
        while p < next_uri {
            let end = s[p..next_uri].find('&').map_or(next_uri, |e| p + e);
            let param = &s[p..end];
            match param.split_once('=') {
                Some((k, _)) if is_password_key(&percent_decode_lossy(k)) => {
                    out.push_str(k);
                    out.push_str("=***");
                }
                _ => out.push_str(param),
            }
            p = end;
            if p < next_uri {
                out.push('&');
                p += 1;
            }
        }
        i = next_uri;
    }
    out.push_str(&s[i..]);
    out
}

/// Whether `b[j]` is a `"` that closes a quoted string in a message (`"postgres://…": why`)
/// rather than a character of a password: not escaped, and followed by the end, `:`, `,`, `)`
/// or white space.
fn closing_quote(b: &[u8], j: usize) -> bool {
    b[j] == b'"'
        && (j == 0 || b[j - 1] != b'\\')
        && b.get(j + 1)
            .is_none_or(|c| matches!(c, b':' | b',' | b')') || c.is_ascii_whitespace())
}

/// Where a URI starting at `from` ends: at a closing quote, or the end of `s`.
fn uri_end(s: &str, from: usize) -> usize {
    let b = s.as_bytes();
    (from..b.len())
        .find(|&j| closing_quote(b, j))
        .unwrap_or(b.len())
}

fn percent_decode_lossy(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |j: usize| b.get(j).and_then(|c| (*c as char).to_digit(16));
        match (b[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi << 4 | lo) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Masks `password = value` pairs of libpq key/value strings: the name at the start, after
/// white space, `:` (`postgres:password=…`) or a quote; white space allowed around `=`; the value
/// a word with backslash escapes or a single-quoted string.
fn redact_keywords(s: &str) -> String {
    let b = s.as_bytes();
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut from = 0;
    while from < s.len() {
        let Some(pos) = ["password", "pass"]
            .iter()
            .filter_map(|k| lower[from..].find(k).map(|p| (from + p, k.len())))
            .min_by_key(|&(start, len)| (start, std::cmp::Reverse(len)))
        else {
            break;
        };
        let (start, len) = pos;
        from = start + len;
        let at_boundary = start == 0
            || matches!(b[start - 1], b':' | b'"' | b'\'' | b'=')
            || b[start - 1].is_ascii_whitespace();
        let mut p = start + len;
        while p < b.len() && b[p].is_ascii_whitespace() {
            p += 1;
        }
        if !at_boundary || b.get(p) != Some(&b'=') {
            continue;
        }
        p += 1;
        while p < b.len() && b[p].is_ascii_whitespace() {
            p += 1;
        }
        let value_start = p;
        if b.get(p) == Some(&b'\'') {
            p += 1;
            while p < b.len() && b[p] != b'\'' {
                p += if b[p] == b'\\' { 2 } else { 1 };
            }
            p = (p + 1).min(b.len());
        } else {
            while p < b.len() && !b[p].is_ascii_whitespace() && !closing_quote(b, p) {
                p += if b[p] == b'\\' { 2 } else { 1 };
            }
            p = p.min(b.len());
        }
        if value_start == p || s[value_start..p].starts_with("***") && p - value_start == 3 {
            continue;
        }
        out.push_str(&s[i..value_start]);
        out.push_str("***");
        i = p;
        from = p;
    }
    out.push_str(&s[i..]);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn uri_passwords_are_removed() {
        assert_eq!(
            redact("postgres://bench:s3cr%40t@db.example:5433/app"),
            "postgres://bench:***@db.example:5433/app"
        );
        assert_eq!(
            redact("postgresql://u@h/db?password=hunter2&sslmode=off"),
            "postgresql://u@h/db?password=***&sslmode=off"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
    }

    #[test]
    fn issue_13_the_target_help_hint_is_not_garbled() {
        let hint =
            "expected sqlite:PATH, postgres://[user[:password]@][host][:port][/db][?param=value…]";
        assert_eq!(redact(hint), hint);
        assert_eq!(
            redact("postgres://u:pw@h/db and postgres://[user[:password]@][host]"),
            "postgres://u:***@h/db and postgres://[user[:password]@][host]"
        );
    }

    /// Issue 13: every form the connection-string parser reads a password from is hidden, in an
    /// argument on its own and quoted inside a message.
    #[test]
    fn issue_13_every_password_form_is_removed() {
        let cases = [
            ("postgres://u:a?b@h/db", "postgres://u:***@h/db"),
            ("postgres://u:pa/ss@h/db", "postgres://u:***@h/db"),
            (
                "postgres://u:a b@h/db?port=1",
                "postgres://u:***@h/db?port=1",
            ),
            ("postgres://u:a@b@h/db", "postgres://u:***@h/db"),
            (
                "postgresql://h/db?pass%77ord=x&sslmode=disable",
                "postgresql://h/db?pass%77ord=***&sslmode=disable",
            ),
            ("postgres://h/db?PASSWORD=x", "postgres://h/db?PASSWORD=***"),
            (
                "postgres://h/db?password=a b",
                "postgres://h/db?password=***",
            ),
            (
                "postgres://h/db?a=1&password=x#y&b=2",
                "postgres://h/db?a=1&password=***&b=2",
            ),
            (
                "postgres:password=secret host=/tmp",
                "postgres:password=*** host=/tmp",
            ),
            ("--target=password=secret", "--target=password=***"),
            (
                "host=/tmp password = 'a b\\'c' user=x",
                "host=/tmp password = *** user=x",
            ),
            ("password=a\\ b host=h", "password=*** host=h"),
            ("password=a\"b host=h", "password=*** host=h"),
            (
                "connection string \"postgres://u:pw@h:abc/db\": invalid integer value",
                "connection string \"postgres://u:***@h:abc/db\": invalid integer value",
            ),
            (
                "string \"host=x password=abc\": invalid connection option \"foo\"",
                "string \"host=x password=***\": invalid connection option \"foo\"",
            ),
            (
                "string \"postgres://h?password=abc\": invalid",
                "string \"postgres://h?password=***\": invalid",
            ),
            (
                "postgres://a:1@h postgres://b:2@g",
                "postgres://a:***@h postgres://b:***@g",
            ),
        ];
        for (s, want) in cases {
            assert_eq!(redact(s), want, "{s:?}");
        }
        for s in [
            "postgres://u@h/db?host=/tmp&port=5",
            "postgres://u@/db?host=/tmp/sock&port=5999",
            "passfile=/x host=y",
            "cannot connect to PostgreSQL at postgres://u@h:5432/db: connection refused",
        ] {
            assert_eq!(redact(s), s);
        }
    }

    #[test]
    fn issue_27_a_password_with_an_unencoded_at_sign_is_hidden_whole() {
        let uri = "postgres://weird1:Pw@In:X/9#Q?z&k@host/db";
        let r = redact(uri);
        assert_eq!(r, "postgres://weird1:***@host/db");
        for part in ["Pw", "In:X", "9#Q", "z&k"] {
            assert!(!r.contains(part), "{part} shown in {r}");
        }
        let msg = format!("cannot connect to \"{uri}\": no such host");
        assert_eq!(
            redact(&msg),
            "cannot connect to \"postgres://weird1:***@host/db\": no such host"
        );
        // A '@' in a query value: hidden with the password, nothing of it shown.
        assert_eq!(
            redact("postgres://u:pw@h/db?application_name=a@b"),
            "postgres://u:***@b"
        );
    }

    #[test]
    fn key_value_passwords_are_removed() {
        assert_eq!(
            redact("host=/tmp user=x password='a b\\'c' dbname=y"),
            "host=/tmp user=x password=*** dbname=y"
        );
        assert_eq!(redact("password=abc"), "password=***");
        assert_eq!(redact("--set=mypassword=1"), "--set=mypassword=1");
        assert_eq!(redact("sqlite:/tmp/x.db"), "sqlite:/tmp/x.db");
    }
}
