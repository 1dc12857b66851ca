//! `dbscope capture log FILE… --out CAP`: a capture read from PostgreSQL's own server logs, written
//! with `log_min_duration_statement = 0`, `log_connections` and `log_disconnections` (as pgreplay
//! reads them), in csvlog, jsonlog (15+) or stderr format with a known `log_line_prefix`.
//!
//! Each `duration: … statement:` line is a simple-protocol call, each `duration: … execute …:` line
//! an extended-protocol call with the values of its `parameters:` detail (the `parse` and `bind`
//! lines before it move its start earlier); an `ERROR` with its statement is a failed call. The log
//! says when a statement ended (to the millisecond in csvlog and stderr) and how long it took (to
//! the microsecond), so a call starts at its end minus its duration. It does not say how many rows
//! a statement touched nor its command tag, nor the transaction state: calls from a log are marked
//! `from_log` (a replay then compares errors only), and the state is inferred from `BEGIN`/`COMMIT`.
//!
//! Modules: `options` (format and prefix), `records` (each format's records, cut ones counted),
//! `capture` (records into a capture).

mod capture;
mod options;
mod records;

pub use capture::{capture_log, LogSummary};
pub use options::{LogFormat, LogOptions, DEFAULT_PREFIX};

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::capture::{duration_line, parameters};
    use super::records::{parse_time, read_csv, read_stderr};
    use super::*;

    #[test]
    fn parameters_and_durations() {
        assert_eq!(
            parameters("parameters: $1 = '-17', $2 = NULL, $3 = 'it''s, $4 = x'"),
            vec![Some("-17".into()), None, Some("it's, $4 = x".into())]
        );
        assert_eq!(
            parameters("no parameters here"),
            Vec::<Option<String>>::new()
        );
        assert_eq!(
            duration_line("duration: 0.123 ms  execute S_1: SELECT 1"),
            Some((0.123, "execute S_1", "SELECT 1"))
        );
        assert_eq!(
            duration_line("duration: 1.5 ms  statement: BEGIN;"),
            Some((1.5, "statement", "BEGIN;"))
        );
        assert_eq!(duration_line("connection authorized: user=x"), None);
    }

    #[test]
    fn times() {
        assert_eq!(
            parse_time("2024-05-01 12:00:00.123 UTC"),
            Some(1_714_564_800_123_000_000)
        );
        assert_eq!(
            parse_time("2024-05-01 14:00:00.123 +02"),
            Some(1_714_564_800_123_000_000)
        );
        assert_eq!(
            parse_time("2024-05-01T12:00:00.123+00:00"),
            Some(1_714_564_800_123_000_000)
        );
        assert_eq!(parse_time("yesterday"), None);
    }

    /// Found by the `log` fuzz target (issue 27): a log whose times lie centuries apart, or whose
    /// duration is absurd, made the time arithmetic overflow (a panic; in release a wrapped time).
    #[test]
    fn far_apart_times_and_absurd_durations_do_not_overflow() {
        let dir = std::env::temp_dir().join(format!("dbscope-log-far-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("pg.log");
        std::fs::write(
            &log,
            "1720-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 0.100 ms  statement: SELECT 1\n\
             2024-05-01 12:00:00.200 UTC [42] bob@db1 LOG:  duration: 0.500 ms  statement: SELECT 2\n\
             2024-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 99999999999999999999 ms  statement: SELECT 3\n",
        )
        .unwrap();
        let opts = LogOptions {
            format: None,
            prefix: "%m [%p] %q%u@%d ".into(),
            database: None,
        };
        let out = dir.join("cap");
        let summary = capture_log(&[log], &out, &opts, vec![]).unwrap();
        assert_eq!(summary.calls, 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stderr log with the default prefix: a statement over two lines, parameters in a DETAIL
    /// line, an error with its STATEMENT line, a line of another process, and a torn last line.
    #[test]
    fn stderr_records() {
        let log = "2024-05-01 12:00:00.100 UTC [42] bob@db1 LOG:  connection authorized: user=bob database=db1\n\
                   2024-05-01 12:00:00.200 UTC [42] bob@db1 LOG:  duration: 0.500 ms  statement: SELECT 1\n\
                   \tFROM t\n\
                   2024-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 0.100 ms  execute <unnamed>: UPDATE t SET x = $1\n\
                   2024-05-01 12:00:00.300 UTC [42] bob@db1 DETAIL:  parameters: $1 = '7'\n\
                   2024-05-01 12:00:00.400 UTC [42] bob@db1 ERROR:  division by zero\n\
                   2024-05-01 12:00:00.400 UTC [42] bob@db1 STATEMENT:  SELECT 1/0\n\
                   2024-05-01 12:00:00.500 UTC [7] LOG:  checkpoint starting: time\n\
                   2024-05-01 12:00:00.600 UTC [42] bob@db1 LOG:  duration: 0.1";
        let mut bad = 0;
        let r = read_stderr(
            log.as_bytes(),
            Path::new("x.log"),
            "%m [%p] %q%u@%d ",
            &mut bad,
        )
        .unwrap();
        // The torn last line is counted, not read as a record (issue 27).
        assert_eq!(bad, 1);
        assert_eq!(r.len(), 5);
        assert_eq!(
            r[1].message,
            "duration: 0.500 ms  statement: SELECT 1\nFROM t"
        );
        assert_eq!(
            (
                r[1].user.as_str(),
                r[1].database.as_str(),
                r[1].session.as_str()
            ),
            ("bob", "db1", "42")
        );
        assert_eq!(r[2].detail, "parameters: $1 = '7'");
        assert_eq!(
            (r[3].severity.as_str(), r[3].statement.as_str()),
            ("ERROR", "SELECT 1/0")
        );
        assert_eq!(r[4].user, "", "%q: no user for a non-session process");
    }

    const STDERR_LOG: &str = "2024-05-01 12:00:00.200 UTC [42] bob@db1 LOG:  duration: 0.500 ms  statement: SELECT 1\n\
        2024-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 0.100 ms  execute <unnamed>: UPDATE t SET x = $1\n\
        2024-05-01 12:00:00.300 UTC [42] bob@db1 DETAIL:  parameters: $1 = '7'\n\
        2024-05-01 12:00:00.400 UTC [42] bob@db1 LOG:  duration: 0.200 ms  statement: alter system reset all\n\
        \tand more\n";

    /// Issue 27: a stderr log cut at any byte of its last record (an `execute` and its
    /// parameters, a statement over two lines) reads every whole record and counts the cut one.
    #[test]
    fn issue_27_a_stderr_log_cut_anywhere_in_a_record_counts_it() {
        let read = |text: &[u8]| {
            let mut bad = 0;
            let r = read_stderr(text, Path::new("x.log"), "%m [%p] %q%u@%d ", &mut bad).unwrap();
            (r, bad)
        };
        let whole = STDERR_LOG.as_bytes();
        let (all, bad) = read(whole);
        assert_eq!((all.len(), bad), (3, 0));
        assert_eq!(
            all[2].message,
            "duration: 0.200 ms  statement: alter system reset all\nand more"
        );
        // Where each record starts: a cut after it leaves the records before whole.
        let starts: Vec<usize> = [0, 1, 3]
            .iter()
            .map(|&line| {
                whole
                    .split_inclusive(|&b| b == b'\n')
                    .take(line)
                    .map(<[u8]>::len)
                    .sum()
            })
            .collect();
        for cut in 1..whole.len() {
            let (r, bad) = read(&whole[..cut]);
            if whole[cut - 1] == b'\n' {
                // Cut at a line end: no line is torn (a record may end early: that is no damage
                // a reader can see).
                assert_eq!(bad, 0, "cut at {cut}");
                continue;
            }
            // The records begun before the cut: the cut one is never read, the others are read
            // whole or counted (the one before a cut line that cannot be read is dropped too).
            let begun = starts.iter().filter(|&&s| s < cut).count();
            assert!(r.len() < begun, "cut at {cut}: {r:?}");
            assert_eq!(r[..], all[..r.len()], "cut at {cut}");
            assert!(
                bad >= 1 && r.len() as u64 + bad >= begun as u64,
                "cut at {cut}: {bad}"
            );
        }
    }

    /// Issue 27: the same for csvlog, cut at every byte of its last record (a quoted statement).
    #[test]
    fn issue_27_a_csvlog_cut_anywhere_in_its_last_record_counts_it() {
        let row = |t: &str, sql: &str| {
            format!(
                "{t},bob,db1,42,[local],6630a2f0.2a,1,SELECT,2024-05-01 12:00:00 UTC,3/4,0,LOG,00000,\
                 \"duration: 0.100 ms  statement: {sql}\",,,,,,,,,psql,client backend,,0\n"
            )
        };
        let first = row("2024-05-01 12:00:00.100 UTC", "SELECT 1");
        let last = row("2024-05-01 12:00:00.200 UTC", "alter system reset all");
        let whole = format!("{first}{last}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        let read = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let mut bad = 0;
            let r = read_csv(std::fs::File::open(&path).unwrap(), &mut bad).unwrap();
            (r, bad)
        };
        let (all, bad) = read(&whole);
        assert_eq!((all.len(), bad), (2, 0));
        for cut in first.len() + 1..whole.len() {
            let (r, bad) = read(&whole[..cut]);
            assert_eq!(r, all[..1], "cut at {cut}");
            assert_eq!(bad, 1, "cut at {cut}");
        }
    }
}
