//! Removing secrets (passwords in connection strings) from anything dbscope writes.

/// Replaces passwords in a connection string or command-line argument with `***`.
///
/// Handles URIs (`postgres://user:secret@host`), `password=` / `pass=` query parameters, and
/// libpq key/value strings (`host=x password=secret`). Anything else comes back unchanged.
pub fn redact(s: &str) -> String {
    let mut out = redact_userinfo(s);
    for key in ["password=", "pass="] {
        out = redact_key(&out, key);
    }
    out
}

fn redact_userinfo(s: &str) -> String {
    let Some(scheme_end) = s.find("://") else {
        return s.to_string();
    };
    let rest = &s[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return s.to_string();
    };
    let userinfo = &authority[..at];
    // '[' and ']' cannot appear in a URI's userinfo (RFC 3986): a bracketed placeholder such as
    // the help text's `[user[:password]@]` is no credential, and redacting it would garble the hint.
    if userinfo.contains(['[', ']']) {
        return s.to_string();
    }
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &s[..scheme_end + 3],
            &userinfo[..colon],
            &s[scheme_end + 3 + at..]
        ),
        None => s.to_string(),
    }
}

fn redact_key(s: &str, key: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(pos) = lower[i..].find(key) {
        let start = i + pos;
        let at_boundary =
            start == 0 || matches!(s.as_bytes()[start - 1], b' ' | b'?' | b'&' | b'\t');
        let value_start = start + key.len();
        out.push_str(&s[i..value_start]);
        if !at_boundary {
            i = value_start;
            continue;
        }
        let bytes = s.as_bytes();
        let mut end = value_start;
        if bytes.get(end) == Some(&b'\'') {
            end += 1;
            while end < bytes.len() && bytes[end] != b'\'' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            end = (end + 1).min(bytes.len());
        } else {
            while end < bytes.len() && !matches!(bytes[end], b' ' | b'&' | b'#' | b'\t') {
                end += 1;
            }
        }
        out.push_str("***");
        i = end;
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
