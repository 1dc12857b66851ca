//! SQLCipher's side of the SQLite target: the key (from `--key-file` or `$DBSCOPE_SQLITE_KEY`,
//! never printed), the cipher pragmas passed through `--set`, and the settings read back for the
//! manifest. A leaf module: `sqlite` uses it, and it knows nothing of connections beyond a pragma.

use std::path::Path;

use crate::target::{TargetError, TargetResult};

/// The environment variable a `sqlcipher:` target's key is read from without `--key-file`.
pub const KEY_ENV: &str = "DBSCOPE_SQLITE_KEY";

/// True when this binary was built with SQLCipher (the `sqlcipher` feature).
pub const BUILT_WITH_SQLCIPHER: bool = cfg!(feature = "sqlcipher");

/// The cipher pragmas `--set` passes to a `sqlcipher:` target, applied right after the key and
/// before the first read (SQLCipher ignores them later).
pub const CIPHER_PRAGMAS: [&str; 7] = [
    "cipher_page_size",
    "kdf_iter",
    "cipher_use_hmac",
    "cipher_hmac_algorithm",
    "cipher_kdf_algorithm",
    "cipher_plaintext_header_size",
    "cipher_memory_security",
];

/// What is read back from a keyed connection into the manifest (besides SQLite's own).
pub const CIPHER_REPORTED: [&str; 8] = [
    "cipher_version",
    "cipher_provider",
    "cipher_provider_version",
    "cipher_page_size",
    "kdf_iter",
    "cipher_use_hmac",
    "cipher_hmac_algorithm",
    "cipher_kdf_algorithm",
];

/// A key: its text is never formatted (`Debug` and errors say `<key>`).
#[derive(Clone)]
pub struct Key(String);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

impl Key {
    /// The key from `key_file` when given, else from `$DBSCOPE_SQLITE_KEY`; one trailing newline
    /// of a file is not part of it. Errors name the file or the variable, never the key.
    pub fn load(key_file: Option<&Path>) -> TargetResult<Key> {
        let text = match key_file {
            Some(p) => {
                let raw = std::fs::read(p).map_err(|e| {
                    TargetError::config(format!("--key-file {}: cannot read it: {e}", p.display()))
                })?;
                let mut s = String::from_utf8(raw).map_err(|_| {
                    TargetError::config(format!(
                        "--key-file {}: the key must be UTF-8 text (a passphrase, or x'64 hex \
                         digits' for a raw key)",
                        p.display()
                    ))
                })?;
                if s.ends_with('\n') {
                    s.pop();
                    if s.ends_with('\r') {
                        s.pop();
                    }
                }
                if s.is_empty() {
                    return Err(TargetError::config(format!(
                        "--key-file {}: the file is empty",
                        p.display()
                    )));
                }
                s
            }
            None => match std::env::var(KEY_ENV) {
                Ok(s) if !s.is_empty() => s,
                Ok(_) | Err(std::env::VarError::NotPresent) => {
                    return Err(TargetError::config(format!(
                        "a sqlcipher: target needs a key: --key-file FILE, or ${KEY_ENV} \
                         (never on the command line)"
                    )))
                }
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(TargetError::config(format!("${KEY_ENV} is not UTF-8 text")))
                }
            },
        };
        if text.contains('\0') {
            return Err(TargetError::config(
                "the key contains a NUL byte, which SQLCipher's PRAGMA key cannot take",
            ));
        }
        Ok(Key(text))
    }

    /// The `PRAGMA key` statement (the key as an SQL string literal). Never logged: callers
    /// replace any error it gives by their own message.
    pub(crate) fn pragma(&self) -> String {
        format!("PRAGMA key = '{}'", self.0.replace('\'', "''"))
    }

    /// The key's text, for tests that look for it where it must not be.
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.0
    }
}

/// Checks a `--set` name given to a `sqlcipher:` target: `cipher` is refused with the reason.
pub fn check_cipher_setting(name: &str) -> TargetResult<()> {
    if name == "cipher" {
        return Err(TargetError::config(
            "--set cipher=…: SQLCipher 4 has one cipher, AES-256-CBC (PRAGMA cipher was removed \
             in 4.0); its settings are cipher_page_size, kdf_iter, cipher_use_hmac, \
             cipher_hmac_algorithm, cipher_kdf_algorithm",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_is_read_trimmed_and_never_shown() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("k");
        std::fs::write(&f, "s3cret-'quoted'\n").unwrap();
        let k = Key::load(Some(&f)).unwrap();
        assert_eq!(k.text(), "s3cret-'quoted'");
        assert!(!format!("{k:?}").contains("s3cret"));
        assert_eq!(k.pragma(), "PRAGMA key = 's3cret-''quoted'''");
        std::fs::write(&f, "\n").unwrap();
        let e = Key::load(Some(&f)).unwrap_err();
        assert!(e.message.contains("is empty"), "{e}");
        let e = Key::load(Some(&d.path().join("missing"))).unwrap_err();
        assert!(e.message.contains("cannot read it"), "{e}");
        assert!(check_cipher_setting("cipher").is_err());
        assert!(check_cipher_setting("kdf_iter").is_ok());
    }
}
