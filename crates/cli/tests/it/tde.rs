//! Encrypted SQLite (issue 31): `sqlcipher:PATH` targets, their key kept out of everything
//! recorded, and the `scan` workload. The SQLCipher tests need `--features sqlcipher`.

use std::path::Path;

use crate::cli::*;

/// Every file under `dir` (recursively), read as bytes.
#[cfg(feature = "sqlcipher")]
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// Asserts `needle` is in no file under `dir` nor in `texts`.
#[cfg(feature = "sqlcipher")]
fn assert_nowhere(needle: &str, dir: &Path, texts: &[&str]) {
    for (p, bytes) in files_under(dir) {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "the key is in {}",
            p.display()
        );
    }
    for t in texts {
        assert!(!t.contains(needle), "the key is in: {t}");
    }
}

#[cfg(not(feature = "sqlcipher"))]
#[test]
fn sqlcipher_without_the_feature_says_how_to_build_it() {
    let dir = tempdir();
    std::fs::write(dir.path().join("k"), "k-123\n").unwrap();
    fails(
        dir.path(),
        &[
            "run",
            "commit",
            "--target",
            "sqlcipher:x.db",
            "--key-file",
            "k",
            "--ops",
            "1",
        ],
        2,
        &["--features sqlcipher"],
    );
}

#[test]
fn a_key_file_for_a_clear_target_is_refused() {
    let dir = tempdir();
    std::fs::write(dir.path().join("k"), "k-123\n").unwrap();
    let err = fails(
        dir.path(),
        &[
            "run",
            "commit",
            "--target",
            "sqlite:x.db",
            "--key-file",
            "k",
            "--ops",
            "1",
        ],
        2,
        &["--key-file is the key of a sqlcipher:PATH target"],
    );
    assert!(!err.contains("k-123"));
}

#[cfg(feature = "sqlcipher")]
#[test]
fn commit_runs_encrypted_and_the_key_is_in_no_file_report_or_error() {
    const KEY: &str = "tde-key-7f3a9c";
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("key"), format!("{KEY}\n")).unwrap();
    let common = [
        "run",
        "commit",
        "--target",
        "sqlcipher:enc.db",
        "--ops",
        "50",
        "--sessions",
        "2",
        "--set",
        "kdf_iter=10000",
        "-q",
    ];
    let mut a = common.to_vec();
    a.extend(["--key-file", "key", "--out", "a"]);
    ok(d, &a);
    let ra = join(d, "a");
    let m = manifest(&ra);
    let eff = &m["target"]["settings_effective"];
    assert_eq!(eff["kdf_iter"], "10000", "{eff}");
    assert!(
        eff["cipher_version"].as_str().unwrap().starts_with('4'),
        "{eff}"
    );
    assert_eq!(eff["encryption"], "SQLCipher (keyed)");
    let report = ok(d, &["report", s(&ra)]);
    let report_json = ok(d, &["report", s(&ra), "--json"]);
    // The key from the environment works the same.
    let mut b = common.to_vec();
    b.extend(["--out", "b"]);
    let out = dbscope(d)
        .env("DBSCOPE_SQLITE_KEY", KEY)
        .args(&b)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A wrong key: a clear error, exit 4 (the database refused), no key in it.
    std::fs::write(d.join("wrong"), "not-the-key-0001\n").unwrap();
    let mut c = common.to_vec();
    c.extend(["--key-file", "wrong", "--out", "c"]);
    let err = fails(
        d,
        &c,
        4,
        &["the key does not open this file", "sqlcipher:enc.db"],
    );
    assert!(!err.contains("not-the-key-0001"));
    // No key at all.
    let mut n = common.to_vec();
    n.extend(["--out", "n"]);
    fails(d, &n, 2, &["needs a key", "DBSCOPE_SQLITE_KEY"]);
    assert_nowhere(KEY, &ra, &[&report, &report_json, &err]);
    assert_nowhere(KEY, &join(d, "b"), &[]);
    let db = std::fs::read(d.join("enc.db")).unwrap();
    assert!(!db.starts_with(b"SQLite format 3"), "the file is encrypted");
}

/// `dbscope run scan` on `target` (with the environment's key) into `out`; its report.
fn scan(dir: &Path, target: &str, cache: &str, out: &str, key: Option<&str>) -> serde_json::Value {
    let args = [
        "run", "scan", "--target", target, "--rows", "20000", "--cache", cache, "--ops", "3",
        "--out", out, "-q",
    ];
    let mut c = dbscope(dir);
    if let Some(k) = key {
        c.env("DBSCOPE_SQLITE_KEY", k);
    }
    let o = c.args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    report_json(dir, &join(dir, out))
}

/// The per-scan rows of a scan run's report.
fn scans(r: &serde_json::Value) -> Vec<serde_json::Value> {
    r["scan"]["scans"].as_array().unwrap().clone()
}

#[test]
fn scan_cache_states_read_what_they_should() {
    let dir = tempdir();
    let d = dir.path();
    let engine = scan(d, "sqlite:c.db", "engine", "engine", None);
    let pages = engine["scan"]["file_pages"].as_u64().unwrap();
    let s = scans(&engine);
    assert_eq!(s.len(), 3);
    assert!(s[0]["pages_read"].as_u64().unwrap() + 5 >= pages, "{s:?}");
    for later in &s[1..] {
        assert_eq!(
            later["pages_read"], 0,
            "the engine cache holds the table: {s:?}"
        );
        assert_eq!(later["bytes_read"], 0);
    }
    assert_eq!(
        event(&engine, "open")["count"],
        1,
        "one connection of its own"
    );

    let os = scan(d, "sqlite:c.db", "os", "os", None);
    for sc in scans(&os) {
        assert!(
            sc["pages_read"].as_u64().unwrap() + 5 >= pages,
            "every scan misses: {sc}"
        );
    }
    let cold = scan(d, "sqlite:c.db", "cold", "cold", None);
    assert_eq!(
        event(&cold, "open")["count"],
        3,
        "a new connection per scan"
    );
    let file_bytes = cold["scan"]["file_bytes"].as_u64().unwrap();
    for sc in scans(&cold) {
        assert!(sc["pages_read"].as_u64().unwrap() + 5 >= pages, "{sc}");
        // Where the machine counts storage reads (/proc/self/io), a cold scan reads the file.
        let os_read = sc["os_read_bytes"].as_u64().unwrap_or(0);
        if os_read > 0 {
            assert!(
                os_read as f64 >= 0.9 * file_bytes as f64,
                "{sc}, file {file_bytes}"
            );
        }
    }
    // The table is reused, and every scan gave setup's answer.
    assert_eq!(event(&cold, "scan")["errors"], 0);
}

#[test]
fn scan_refuses_postgres_and_several_sessions() {
    let dir = tempdir();
    fails(
        dir.path(),
        &[
            "run",
            "scan",
            "--target",
            "sqlite:x.db",
            "--sessions",
            "2",
            "--ops",
            "1",
        ],
        2,
        &["--sessions 1"],
    );
}

#[cfg(feature = "sqlcipher")]
#[test]
fn encrypted_scans_answer_as_clear_ones_and_time_the_key_derivation() {
    const KEY: &str = "scan-key-91b2";
    let dir = tempdir();
    let d = dir.path();
    let clear = scan(d, "sqlite:c.db", "cold", "clear", None);
    let enc = scan(d, "sqlcipher:e.db", "cold", "enc", Some(KEY));
    let answer = |r: &serde_json::Value| r["scan"]["answer"].as_str().unwrap().to_string();
    assert!(
        answer(&clear).starts_with("20000 200010000 "),
        "{}",
        answer(&clear)
    );
    assert_eq!(answer(&clear), answer(&enc));
    assert_eq!(event(&enc, "scan")["errors"], 0);
    // A new connection per cold scan: a key derivation each, inside its open.
    assert_eq!(event(&enc, "key_derivation")["count"], 3);
    for sc in scans(&enc) {
        assert!(sc["key_derivation_ms"].as_f64().unwrap() > 0.0, "{sc}");
    }
    let db = std::fs::read(d.join("e.db")).unwrap();
    assert!(
        !db.windows(12).any(|w| w == b"dbscope-row-"),
        "no row readable in the file"
    );
    let clear_db = std::fs::read(d.join("c.db")).unwrap();
    assert!(clear_db.windows(12).any(|w| w == b"dbscope-row-"));
    let engine = scan(d, "sqlcipher:e.db", "engine", "engine", Some(KEY));
    assert_eq!(scans(&engine)[2]["pages_read"], 0);
    assert_nowhere(KEY, &join(d, "enc"), &[]);
}

#[cfg(not(feature = "sqlcipher"))]
#[test]
fn aes_ni_off_without_sqlcipher_says_how_to_build_it() {
    let dir = tempdir();
    fails(
        dir.path(),
        &[
            "run",
            "scan",
            "--target",
            "sqlite:x.db",
            "--ops",
            "1",
            "--aes-ni",
            "off",
        ],
        2,
        &["--features sqlcipher"],
    );
}

#[cfg(feature = "sqlcipher")]
#[test]
fn aes_ni_off_runs_masked_in_a_child_and_the_probe_shows_it() {
    let dir = tempdir();
    let d = dir.path();
    let cpu_has_aes = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == "aes"));
    let out = dbscope(d)
        .env("DBSCOPE_SQLITE_KEY", "aes-off-key")
        .args([
            "run",
            "scan",
            "--target",
            "sqlcipher:e.db",
            "--rows",
            "2000",
            "--ops",
            "2",
            "--aes-ni",
            "off",
            "--out",
            "off",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = manifest(&join(d, "off"));
    let eff = &m["target"]["settings_effective"];
    if !cpu_has_aes {
        assert!(String::from_utf8_lossy(&out.stderr).contains("this CPU has no AES-NI"));
        return;
    }
    assert_eq!(
        eff["openssl_ia32cap"], "~0x200000200000000:~0x60000000000",
        "{eff}"
    );
    let rate = |k: &str| eff[k].as_str().unwrap().parse::<f64>().unwrap();
    let (masked, unmasked) = (rate("aes_probe_mb_s"), rate("aes_probe_unmasked_mb_s"));
    assert!(
        masked < 0.5 * unmasked,
        "masked {masked} MB/s, unmasked {unmasked} MB/s"
    );
    assert!(m["host"]["cpu_flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "aes"));
}

#[test]
fn scan_reads_an_existing_table_as_it_is_and_never_drops_it() {
    let dir = tempdir();
    let d = dir.path();
    let db = d.join("mine.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE orders (o_id INTEGER PRIMARY KEY, note TEXT, qty INTEGER);
         WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 3000)
         INSERT INTO orders SELECT i, printf('order %d', i), i % 7 FROM k;",
    )
    .unwrap();
    drop(conn);
    let target = format!("sqlite:{}", s(&db));
    let args = |out: &'static str| {
        [
            "run", "scan", "--target", &target, "--table", "orders", "--cache", "engine", "--ops",
            "2", "--out", out, "-q",
        ]
        .map(String::from)
    };
    let a = args("a");
    ok(d, &a.iter().map(String::as_str).collect::<Vec<_>>());
    let r = report_json(d, &join(d, "a"));
    assert!(
        r["scan"]["answer"].as_str().unwrap().starts_with("3000 "),
        "{}",
        r["scan"]
    );
    assert_eq!(scans(&r)[1]["pages_read"], 0);
    let mut f: Vec<String> = args("b").to_vec();
    f.push("--fresh".into());
    fails(
        d,
        &f.iter().map(String::as_str).collect::<Vec<_>>(),
        2,
        &["--fresh would drop table orders, which dbscope did not make"],
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM orders", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3000, "the user's table is untouched");
}

#[cfg(feature = "sqlcipher")]
#[test]
fn the_matrix_makes_twelve_runs_and_the_seeds_table() {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("key"), "matrix-key-55\n").unwrap();
    let out = ok(
        d,
        &[
            "run",
            "scan",
            "--matrix",
            "--target",
            "sqlcipher:m.db",
            "--key-file",
            "key",
            "--rows",
            "2000",
            "--ops",
            "3",
            "--out",
            "mx",
        ],
    );
    for kind in ["clear", "encrypted"] {
        for aes in ["on", "off"] {
            for cache in ["cold", "os", "engine"] {
                let run = join(d, &format!("mx/{kind}-aesni-{aes}-{cache}"));
                let m = manifest(&run);
                assert_eq!(m["outcome"], "complete", "{}", run.display());
                assert_eq!(m["workload"]["params"]["cache"], cache);
                let eff = &m["target"]["settings_effective"];
                assert_eq!(
                    eff.get("encryption").is_some(),
                    kind == "encrypted",
                    "{eff}"
                );
            }
        }
    }
    for row in ["cold", "os", "engine"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(line.matches('x').count(), 2, "two ratios: {line}");
        assert!(!line.contains(" - "), "every cell measured: {line}");
    }
    assert!(
        d.join("m-clear.db").exists(),
        "the clear twin beside the encrypted file"
    );
    assert_nowhere("matrix-key-55", &join(d, "mx"), &[&out]);
}

/// `tpch load` takes `--key-file` as `run` does: a clear target refuses it (no key in the
/// message); with SQLCipher the lineitem table is loaded into an encrypted file that only the
/// key opens.
#[test]
fn tpch_load_takes_the_key_file() {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("k"), "tpch-key-5521\n").unwrap();
    let gen = [
        "tpch", "gen", "--sf", "0.01", "--table", "lineitem", "--out", "data", "-q",
    ];
    ok(d, &gen);
    let clear = [
        "tpch",
        "load",
        "data",
        "--target",
        "sqlite:c.db",
        "--key-file",
        "k",
    ];
    let err = fails(
        d,
        &clear,
        2,
        &["--key-file is the key of a sqlcipher:PATH target"],
    );
    assert!(!err.contains("tpch-key-5521"));
    #[cfg(feature = "sqlcipher")]
    {
        let enc = [
            "tpch",
            "load",
            "data",
            "--target",
            "sqlcipher:e.db",
            "--key-file",
            "k",
        ];
        let out = ok(d, &enc);
        assert!(!out.contains("tpch-key-5521"), "{out}");
        let db = std::fs::read(d.join("e.db")).unwrap();
        assert!(!db.starts_with(b"SQLite format 3"), "the file is encrypted");
        std::fs::write(d.join("wrong"), "wrong-key\n").unwrap();
        let wrong = [
            "tpch",
            "load",
            "data",
            "--target",
            "sqlcipher:e.db",
            "--key-file",
            "wrong",
        ];
        fails(d, &wrong, 4, &["the key does not open this file"]);
    }
}
