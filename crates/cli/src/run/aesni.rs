//! `run --aes-ni off`: the run in a child process whose OpenSSL has AES-NI, carry-less multiply
//! and VAES masked (`OPENSSL_ia32cap`), the mask verified inside the child by OpenSSL's own AES
//! rate against the parent's (seed 000's "hardware acceleration off").

use std::ffi::OsString;
use std::process::Command;

use anyhow::anyhow;
use dbscope_db::cipher::{
    aes_probe_mb_s, AES_NI_OFF_MASK, BUILT_WITH_SQLCIPHER, UNMASKED_RATE_ENV,
};

use crate::exit::Exit;

/// Set in the child, so that it verifies the mask instead of starting another child.
const CHILD_ENV: &str = "DBSCOPE_AES_NI_CHILD";

/// How long each AES probe runs.
const PROBE_MS: u64 = 200;

/// With the mask, OpenSSL's AES must run at most this fraction of the unmasked rate: AES-NI
/// decrypts CBC 5 to 10 times faster than OpenSSL's vector-permutation software AES.
const MASKED_AT_MOST: f64 = 0.5;

/// What `--aes-ni` asks of this process.
pub enum AesNi {
    /// Run here, as is.
    Here,
    /// Run here: this is `--aes-ni off`'s child and the mask was verified.
    MaskedChild,
    /// The run went in a child: exit with its code.
    RanInChild(u8),
}

/// Runs the child for `--aes-ni off` or, in the child, verifies the mask; `off` is the flag.
pub fn handle(off: bool) -> Result<AesNi, Exit> {
    if std::env::var_os(CHILD_ENV).is_some() {
        return verify_in_child().map(|()| AesNi::MaskedChild);
    }
    if !off {
        return Ok(AesNi::Here);
    }
    if !BUILT_WITH_SQLCIPHER {
        return Err(anyhow!(
            "--aes-ni off masks OpenSSL's AES-NI for SQLCipher: this dbscope was built without \
             it (cargo build --release --features sqlcipher; docs/tde.md)"
        )
        .into());
    }
    let flags = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| dbscope_core::manifest::parse_cpu_flags(&t))
        .unwrap_or_default();
    if !flags.iter().any(|f| f == "aes") {
        eprintln!(
            "dbscope: note: this CPU has no AES-NI (no `aes` flag in /proc/cpuinfo): OpenSSL \
             already runs AES in software; --aes-ni off changes nothing and the run goes on here"
        );
        return Ok(AesNi::Here);
    }
    let unmasked = aes_probe_mb_s(PROBE_MS)
        .ok_or_else(|| anyhow!("--aes-ni off: OpenSSL's AES-256-CBC probe failed"))?;
    let exe = std::env::current_exe()
        .map_err(|e| anyhow!("--aes-ni off: cannot find this program to run it again: {e}"))?;
    // Ctrl-C is the child's to handle (it keeps what it recorded): this process waits for it.
    let _ = ctrlc::set_handler(|| {});
    let status = Command::new(exe)
        .args(without_aes_ni(std::env::args_os().skip(1)))
        .env("OPENSSL_ia32cap", AES_NI_OFF_MASK)
        .env(CHILD_ENV, "1")
        .env(UNMASKED_RATE_ENV, format!("{unmasked:.0}"))
        .status()
        .map_err(|e| anyhow!("--aes-ni off: cannot start the child process: {e}"))?;
    Ok(AesNi::RanInChild(match status.code() {
        Some(c) => c.clamp(0, 255) as u8,
        None => crate::exit::EXIT_FAILED,
    }))
}

/// The child's check: OpenSSL's AES here (masked) against the parent's (unmasked).
fn verify_in_child() -> Result<(), Exit> {
    let unmasked: f64 = std::env::var(UNMASKED_RATE_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("--aes-ni off: the child got no unmasked AES rate"))?;
    let masked = aes_probe_mb_s(PROBE_MS)
        .ok_or_else(|| anyhow!("--aes-ni off: OpenSSL's AES-256-CBC probe failed"))?;
    if masked > MASKED_AT_MOST * unmasked {
        return Err(anyhow!(
            "--aes-ni off: the mask did not take effect: OpenSSL decrypts AES-256-CBC at {masked:.0} \
             MB/s with OPENSSL_ia32cap={AES_NI_OFF_MASK} and {unmasked:.0} MB/s without (expected \
             at most {:.0}%)",
            MASKED_AT_MOST * 100.0
        )
        .into());
    }
    Ok(())
}

/// The arguments without `--aes-ni VALUE` / `--aes-ni=VALUE`.
fn without_aes_ni(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in args {
        if skip_value {
            skip_value = false;
            continue;
        }
        match a.to_str() {
            Some("--aes-ni") => skip_value = true,
            Some(s) if s.starts_with("--aes-ni=") => {}
            _ => out.push(a),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_taken_out() {
        let args = [
            "run",
            "scan",
            "--aes-ni",
            "off",
            "--ops",
            "3",
            "--aes-ni=off",
        ]
        .map(OsString::from);
        assert_eq!(
            without_aes_ni(args.into_iter()),
            ["run", "scan", "--ops", "3"].map(OsString::from)
        );
    }
}
