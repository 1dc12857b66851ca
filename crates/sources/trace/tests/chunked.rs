//! Every way into the reader gives the same result: a plain file cut into chunks by parallel
//! workers, the same file as a stream, gzipped, or through a pipe give the same profile
//! (text and JSON), the same import run, the same warnings and `--strict` errors, on every fixture
//! and on awkward synthetic files, with chunk sizes small enough that borders fall inside PARSING …
//! END OF STMT blocks, BINDS blocks, the header and single lines.

use std::io::Write;
use std::path::{Path, PathBuf};

use dbscope_trace::import::import_files_chunked;
use dbscope_trace::profile::{profile_files, render_text, ProfileOptions};

/// Chunk sizes to try: tiny (a border on nearly every line, most file chunks empty), odd, a page,
/// and the default.
const SIZES: [usize; 6] = [7, 64, 100, 333, 4096, 4 << 20];

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v = Vec::new();
    for sub in ["oracle-10046", "handmade"] {
        for e in std::fs::read_dir(root.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "trc") {
                v.push(p);
            }
        }
    }
    v.sort();
    assert!(v.len() >= 13, "fixtures found: {v:?}");
    v
}

/// Text and JSON of the profile of `paths`, or the error, read with chunks of `chunk` bytes (0:
/// plain files as a stream).
fn profile(paths: &[&Path], chunk: usize, strict: bool) -> String {
    let opts = ProfileOptions {
        chunk_bytes: chunk,
        strict,
        ..ProfileOptions::default()
    };
    match profile_files(paths, &opts) {
        Ok(p) => format!(
            "{}\n{}",
            render_text(&p, usize::MAX),
            serde_json::to_string_pretty(&p).unwrap()
        ),
        Err(e) => format!("error: {e}"),
    }
}

/// Every file of the run an import writes, but the manifest's import time.
fn import(paths: &[&Path], chunk: usize) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let s = import_files_chunked(paths, &out, vec!["test".into()], false, chunk).unwrap();
    let summary = format!(
        "{} events, {} sessions, {} warnings: {:?}",
        s.events, s.sessions, s.warning_count, s.warnings
    );
    let mut files = vec![("summary".to_string(), summary.into_bytes())];
    let mut names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for n in names {
        let mut bytes = std::fs::read(out.join(&n)).unwrap();
        if n == "manifest.json" {
            let mut m: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let o = m.as_object_mut().unwrap();
            for volatile in ["host", "created_utc", "ended_utc", "run_id"] {
                o.remove(volatile);
            }
            bytes = serde_json::to_vec_pretty(&m).unwrap();
        }
        files.push((n, bytes));
    }
    files
}

/// Copies of `paths` in a temporary directory (same file names), so that they can be gzipped in
/// place: the reader tells gzip by its content, and a file's path is part of the output.
fn copies(paths: &[&Path]) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let copies = paths
        .iter()
        .map(|p| {
            let c = dir.path().join(p.file_name().unwrap());
            std::fs::copy(p, &c).unwrap();
            c
        })
        .collect();
    (dir, copies)
}

fn gzip_in_place(paths: &[PathBuf]) {
    for p in paths {
        let data = std::fs::read(p).unwrap();
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(p).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(&data).unwrap();
        gz.finish().unwrap();
    }
}

fn same_everywhere(paths: &[&Path], what: &str) {
    same_with(paths, what, &SIZES);
}

/// The plain files streamed are the reference; the plain files in chunks of `sizes` (cut by the
/// workers) and the gzipped files in chunks of `sizes` (cut as a stream) must give the same.
fn same_with(paths: &[&Path], what: &str, sizes: &[usize]) {
    let (_dir, files) = copies(paths);
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let want: Vec<String> = [false, true]
        .iter()
        .map(|&strict| profile(&paths, 0, strict))
        .collect();
    let want_import = import(&paths, 0);
    let check = |how: &str| {
        for &chunk in sizes {
            for (strict, want) in [false, true].into_iter().zip(&want) {
                let got = profile(&paths, chunk, strict);
                assert!(
                    got == *want,
                    "{what}: {how} in chunks of {chunk} bytes (strict {strict}) differ from the stream:\n{}",
                    first_difference(want, &got)
                );
            }
            let got = import(&paths, chunk);
            assert_eq!(want_import.len(), got.len(), "{what}: import files");
            for ((n, a), (_, b)) in want_import.iter().zip(&got) {
                assert!(
                    a == b,
                    "{what}: import {n} differs, {how} in chunks of {chunk} bytes"
                );
            }
        }
    };
    check("plain");
    gzip_in_place(&files);
    check("gzipped");
}

fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  stream:  {x}\n  chunked: {y}", i + 1);
        }
    }
    format!("lengths {} and {}", a.len(), b.len())
}

#[test]
fn every_fixture_reads_the_same_in_chunks() {
    for f in fixtures() {
        same_everywhere(&[f.as_path()], &f.display().to_string());
    }
}

#[test]
fn several_files_at_once_read_the_same_in_chunks() {
    let all = fixtures();
    let paths: Vec<&Path> = all.iter().map(|p| p.as_path()).collect();
    same_everywhere(&paths, "all fixtures");
}

/// A pipe (as stdin is) is read as a stream, with the same result as the plain file.
#[cfg(unix)]
#[test]
fn a_pipe_reads_as_the_file() {
    use std::os::fd::AsRawFd;
    let fx = fixtures();
    let file = fx
        .iter()
        .find(|p| p.ends_with("jkstill__ora-binds__js122a1_ora_9039_GEN-BINDS.trc"))
        .unwrap();
    let want = profile(&[file.as_path()], 100, false);
    let (reader, mut writer) = std::io::pipe().unwrap();
    let data = std::fs::read(file).unwrap();
    let feed = std::thread::spawn(move || writer.write_all(&data).unwrap());
    // Opened again by path, as `dbscope trace profile /dev/stdin` does.
    let pipe = PathBuf::from(format!("/dev/fd/{}", reader.as_raw_fd()));
    let got = profile(&[pipe.as_path()], 100, false);
    feed.join().unwrap();
    drop(reader);
    // The input's name is part of the output.
    let got = got.replace(pipe.to_str().unwrap(), file.to_str().unwrap());
    assert!(got == want, "{}", first_difference(&want, &got));
}

/// Synthetic files: CRLF, a truncated last line, binary garbage, lines longer than 1 MiB (cut),
/// blank runs, an empty file.
#[test]
fn awkward_files_read_the_same_in_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let fx = fixtures();
    let base = std::fs::read(&fx[0]).unwrap();
    let small = std::fs::read(
        fx.iter()
            .find(|p| p.ends_with("priitp2__trctools__lobs.trc"))
            .unwrap(),
    )
    .unwrap();
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    cases.push(("empty", Vec::new()));
    cases.push((
        "crlf",
        base.iter()
            .flat_map(|&b| {
                if b == b'\n' {
                    vec![b'\r', b'\n']
                } else {
                    vec![b]
                }
            })
            .collect(),
    ));
    cases.push(("truncated", base[..base.len() - 37].to_vec()));
    let mut garbage = small.clone();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        garbage.push((x >> 24) as u8);
    }
    garbage.extend_from_slice(&small);
    cases.push(("garbage", garbage));
    let mut long = small.clone();
    long.extend(std::iter::repeat_n(b'x', (1 << 20) + 5000));
    long.push(b'\n');
    long.extend_from_slice(b"WAIT #1: nam='x' ela= 5 p1=0 obj#=-1 tim=1");
    long.extend(std::iter::repeat_n(b'y', 3 << 20));
    long.extend_from_slice(b"\n\n   \n");
    long.extend_from_slice(&small);
    long.extend(std::iter::repeat_n(b' ', (1 << 20) + 1));
    long.extend_from_slice(b"\r\n");
    long.extend(std::iter::repeat_n(b'z', 1 << 20));
    long.extend_from_slice(b"\r\n");
    long.extend(std::iter::repeat_n(b'z', (1 << 20) + 1));
    cases.push(("long lines", long));
    // Numbers at the edges of what the workers pack (32-bit counts, u64::MAX as tim or hv).
    let mut edges = small.clone();
    edges.extend_from_slice(
        b"PARSING IN CURSOR #9 len=1 dep=0 uid=0 oct=3 lid=0 tim=18446744073709551615 hv=18446744073709551615 ad='0' sqlid='a'\n\
          select 1\nEND OF STMT\n\
          WAIT #9: nam='x' ela= 4294967296 p1=0 obj#=-9223372036854775807 tim=18446744073709551615\n\
          WAIT #9: nam='x' ela= 4294967295 p1=0 obj#=9223372036854775807 tim=18446744073709551614\n\
          EXEC #9:c=4294967296,e=4294967295,p=0,cr=0,cu=0,mis=0,r=18446744073709551615,dep=0,og=1,plh=0,tim=18446744073709551615\n\
          FETCH #9:c=1,e=2,p=0,cr=0,cu=0,mis=0,r=0,dep=4294967295,og=1,plh=0,tim=5\n\
          LOBREAD: type=PERSISTENT LOB,bytes=4294967296,c=1,e=4294967296,p=0,cr=0,cu=0,tim=7\n",
    );
    edges.extend_from_slice(&small);
    cases.push(("packing edges", edges));
    for (what, bytes) in cases {
        let p = dir.path().join(format!("{}.trc", what.replace(' ', "_")));
        std::fs::write(&p, &bytes).unwrap();
        // Files of megabytes in 7-byte chunks would take long: a 4 KiB chunk already puts the
        // long lines on the cut path (a file chunk longer than 4 chunks, a stream piece longer
        // than 1 MiB).
        if bytes.len() > 1 << 20 {
            same_with(&[p.as_path()], what, &[4096, 100_000, 4 << 20]);
        } else {
            same_everywhere(&[p.as_path()], what);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Spliced real lines, random bytes and long lines, in random chunk sizes: chunked, gzipped
    /// and streamed reads agree (and none panics).
    #[test]
    fn spliced_and_random_input_reads_the_same_in_chunks(
        pieces in proptest::collection::vec((0usize..400, 0usize..120, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)), 1..80),
        chunk in 1usize..600,
    ) {
        let real = include_str!("fixtures/oracle-10046/jkstill__ora-binds__js122a1_ora_9039_GEN-BINDS.trc");
        let lines: Vec<&str> = real.lines().collect();
        let mut text = Vec::new();
        for (i, cut, noise) in pieces {
            let l = lines[i % lines.len()].as_bytes();
            text.extend_from_slice(&l[..cut.min(l.len())]);
            if cut % 7 == 0 {
                text.extend_from_slice(&noise);
            }
            if cut % 11 != 0 {
                text.push(b'\n');
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("spliced.trc");
        std::fs::write(&p, &text).unwrap();
        let paths = [p.clone()];
        let want: Vec<String> = [false, true].iter().map(|&s| profile(&[p.as_path()], 0, s)).collect();
        for (strict, want) in [false, true].into_iter().zip(&want) {
            let got = profile(&[p.as_path()], chunk, strict);
            proptest::prop_assert!(got == *want, "chunks of {}: {}", chunk, first_difference(want, &got));
        }
        gzip_in_place(&paths);
        for (strict, want) in [false, true].into_iter().zip(&want) {
            let got = profile(&[p.as_path()], chunk, strict);
            proptest::prop_assert!(got == *want, "gzipped, chunks of {}: {}", chunk, first_difference(want, &got));
        }
    }
}
