//! SQLCipher's side of the SQLite target: the key (from `--key-file` or `$DBSCOPE_SQLITE_KEY`,
//! never printed), the cipher pragmas passed through `--set`, and the settings read back for the
//! manifest. A leaf module: `sqlite` uses it, and it knows nothing of connections beyond a pragma.

use std::path::Path;

use crate::target::{TargetError, TargetResult};

/// The environment variable a `sqlcipher:` target's key is read from without `--key-file`.
pub const KEY_ENV: &str = "DBSCOPE_SQLITE_KEY";

/// Where `--aes-ni off`'s parent hands its child OpenSSL's unmasked AES rate (MB/s), which the
/// child records beside its own.
pub const UNMASKED_RATE_ENV: &str = "DBSCOPE_AES_PROBE_UNMASKED_MB_S";

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

/// The `OPENSSL_ia32cap` mask that turns off AES-NI and carry-less multiply (first word: bits 57
/// and 33 of CPUID(1) ECX:EDX) and VAES and VPCLMULQDQ (second word: bits 41 and 42, CPUID(7)
/// ECX bits 9 and 10) for OpenSSL in a process started with it.
pub const AES_NI_OFF_MASK: &str = "~0x200000200000000:~0x60000000000";

/// OpenSSL's AES-256-CBC decryption rate in this process, in MB/s (10^6 bytes), over about
/// `millis` ms of 1 MiB buffers: what SQLCipher's page decryption can reach at best. `None` in
/// a binary without SQLCipher (no libcrypto linked) or when OpenSSL refuses.
pub fn aes_probe_mb_s(millis: u64) -> Option<f64> {
    #[cfg(feature = "sqlcipher")]
    {
        probe::aes_256_cbc_decrypt_mb_s(millis)
    }
    #[cfg(not(feature = "sqlcipher"))]
    {
        let _ = millis;
        None
    }
}

/// OpenSSL's EVP interface, from the libcrypto SQLCipher links.
#[cfg(feature = "sqlcipher")]
#[allow(unsafe_code)]
mod probe {
    use std::ffi::{c_int, c_void};
    use std::time::{Duration, Instant};

    extern "C" {
        fn EVP_CIPHER_CTX_new() -> *mut c_void;
        fn EVP_CIPHER_CTX_free(ctx: *mut c_void);
        fn EVP_aes_256_cbc() -> *const c_void;
        fn EVP_DecryptInit_ex(
            ctx: *mut c_void,
            cipher: *const c_void,
            engine: *mut c_void,
            key: *const u8,
            iv: *const u8,
        ) -> c_int;
        fn EVP_CIPHER_CTX_set_padding(ctx: *mut c_void, pad: c_int) -> c_int;
        fn EVP_DecryptUpdate(
            ctx: *mut c_void,
            out: *mut u8,
            outl: *mut c_int,
            input: *const u8,
            inl: c_int,
        ) -> c_int;
    }

    pub fn aes_256_cbc_decrypt_mb_s(millis: u64) -> Option<f64> {
        const LEN: usize = 1 << 20;
        let key = [7u8; 32];
        let iv = [9u8; 16];
        let input: Vec<u8> = (0..LEN).map(|i| (i * 131 % 251) as u8).collect();
        // One block more than the input: EVP may hold back the last block without padding off.
        let mut out = vec![0u8; LEN + 32];
        // SAFETY: the context is created, used and freed here only; key and IV are 32 and 16
        // bytes as AES-256-CBC needs; `out` has room for the input plus a block; lengths fit c_int.
        unsafe {
            let ctx = EVP_CIPHER_CTX_new();
            if ctx.is_null() {
                return None;
            }
            let ok = EVP_DecryptInit_ex(
                ctx,
                EVP_aes_256_cbc(),
                std::ptr::null_mut(),
                key.as_ptr(),
                iv.as_ptr(),
            ) == 1
                && EVP_CIPHER_CTX_set_padding(ctx, 0) == 1;
            let mut bytes = 0u64;
            let started = Instant::now();
            let limit = Duration::from_millis(millis.max(1));
            let mut failed = !ok;
            while !failed && started.elapsed() < limit {
                let mut n: c_int = 0;
                failed =
                    EVP_DecryptUpdate(ctx, out.as_mut_ptr(), &mut n, input.as_ptr(), LEN as c_int)
                        != 1;
                bytes += LEN as u64;
            }
            let secs = started.elapsed().as_secs_f64();
            EVP_CIPHER_CTX_free(ctx);
            std::hint::black_box(&out);
            (!failed && secs > 0.0).then(|| bytes as f64 / 1e6 / secs)
        }
    }
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
