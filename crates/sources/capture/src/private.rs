//! What a capture holds is private: SQL text, bound values, role passwords. Capture and replay
//! directories are made readable by their owner only (0700) and the files dbscope writes there
//! with personal data in them are created 0600, as PostgreSQL keeps its own logs; a password
//! literal of `CREATE/ALTER ROLE|USER … PASSWORD '…'` is not written at all.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// What replaces a password literal in a captured statement.
pub const REDACTED_PASSWORD: &str = "'dbscope:redacted'";

/// Makes `dir` (already created) readable, writable and searchable by its owner only.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Creates (or truncates) `path` readable and writable by its owner only (also when it exists
/// already with a wider mode).
pub fn create_private(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

/// `sql` with the password literal of a `CREATE|ALTER ROLE|USER … PASSWORD '…'` statement
/// replaced by [`REDACTED_PASSWORD`]; `None` when it has none (most statements: only their first
/// words are looked at).
pub fn redact_password(sql: &str) -> Option<String> {
    // Looked at for every call the proxy records: no allocation unless it is a role's DDL.
    let mut words = sql.split_whitespace();
    let (Some(verb), Some(what)) = (words.next(), words.next()) else {
        return None;
    };
    if !(verb.eq_ignore_ascii_case("CREATE") || verb.eq_ignore_ascii_case("ALTER"))
        || !(what.eq_ignore_ascii_case("ROLE") || what.eq_ignore_ascii_case("USER"))
    {
        return None;
    }
    let lower = sql.to_ascii_lowercase();
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut from = 0;
    let mut at = 0;
    let mut changed = false;
    while let Some(k) = lower[at..].find("password") {
        let kw = at + k;
        at = kw + "password".len();
        // The keyword alone (not `encrypted_password_x`), then blanks, then a literal.
        let alone = (kw == 0 || !is_word(b[kw - 1])) && b.get(at).is_none_or(|&c| !is_word(c));
        let lit = at + (sql[at..].len() - sql[at..].trim_start().len());
        if !alone || lit == at {
            continue;
        }
        let Some(end) = literal_end(b, lit) else {
            continue;
        };
        out.push_str(&sql[from..lit]);
        out.push_str(REDACTED_PASSWORD);
        from = end;
        at = end;
        changed = true;
    }
    changed.then(|| {
        out.push_str(&sql[from..]);
        out
    })
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where the string literal starting at `b[i]` ends (after its closing quote): `'…'` with `''`
/// inside, `E'…'` with backslash escapes, `$tag$…$tag$`; `None` when none starts there.
fn literal_end(b: &[u8], i: usize) -> Option<usize> {
    let (quote, escapes) = match b.get(i)? {
        b'\'' => (i, false),
        b'E' | b'e' if b.get(i + 1) == Some(&b'\'') => (i + 1, true),
        b'$' => return crate::fingerprint::dollar_literal_end(b, i),
        _ => return None,
    };
    let mut j = quote + 1;
    while j < b.len() {
        match b[j] {
            b'\\' if escapes => j += 2,
            b'\'' if b.get(j + 1) == Some(&b'\'') => j += 2,
            b'\'' => return Some(j + 1),
            _ => j += 1,
        }
    }
    // Unterminated: the rest is the literal.
    Some(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_role_passwords_are_not_kept() {
        let r = |s: &str| redact_password(s);
        assert_eq!(
            r("ALTER USER bob PASSWORD 'NewSecretPw42'").unwrap(),
            "ALTER USER bob PASSWORD 'dbscope:redacted'"
        );
        assert_eq!(
            r("create role x with login password 'a''b' valid until 'infinity'").unwrap(),
            "create role x with login password 'dbscope:redacted' valid until 'infinity'"
        );
        assert_eq!(
            r("ALTER ROLE x ENCRYPTED PASSWORD E'p\\'w'").unwrap(),
            "ALTER ROLE x ENCRYPTED PASSWORD 'dbscope:redacted'"
        );
        assert_eq!(
            r("alter user \"Bob\"\n  PASSWORD $pw$Secret$$x$pw$").unwrap(),
            "alter user \"Bob\"\n  PASSWORD 'dbscope:redacted'"
        );
        assert_eq!(
            r("ALTER USER bob PASSWORD 'SCRAM-SHA-256$4096:abc'").unwrap(),
            "ALTER USER bob PASSWORD 'dbscope:redacted'"
        );
        for kept in [
            "ALTER USER bob PASSWORD NULL",
            "ALTER USER bob RENAME TO password",
            "SELECT 'PASSWORD ''x'''",
            "UPDATE users SET password = 'x'",
            "ALTER TABLE t ADD password text",
        ] {
            assert_eq!(r(kept), None, "{kept}");
        }
    }

    #[test]
    fn private_files_and_directories() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("cap");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let f = dir.join("f");
        std::fs::write(&f, "x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        create_private(&f).unwrap();
        assert_eq!(mode(&f), 0o600);
        assert_eq!(std::fs::read(&f).unwrap(), b"");
    }
}
