//! Test data for Q1's unit tests: real lineitem lines and a generated file of varied ones.

use super::split::Input;

/// Four lineitem lines as dbgen writes them: groups N|O and R|F; the last ships after DELTA 90's
/// cutoff.
pub(super) const LINES: &str = "\
1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|
1|67310|7311|2|36|45983.16|0.09|0.06|N|O|1996-04-12|1996-02-28|1996-04-20|TAKE BACK RETURN|MAIL|ly final dependencies: slyly bold |
3|4297|1798|1|45|54058.05|0.06|0.00|R|F|1994-02-02|1994-01-04|1994-02-23|NONE|AIR|ongside of the furiously brave acco|
3|19036|6540|2|49|46796.47|0.10|0.00|R|F|1998-11-09|1993-12-20|1993-11-24|TAKE BACK RETURN|RAIL| unusual accounts. eve|
";

/// A file of `n` varied lineitem lines (all four groups, some filtered out).
pub(super) fn sample_file(n: usize) -> (tempfile::TempDir, Vec<Input>) {
    let d = tempfile::tempdir().unwrap();
    let mut text = String::new();
    let flags = [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")];
    for i in 0..n {
        let (f, st) = flags[i * 7 % 4];
        let comment = "x".repeat(i * 13 % 40);
        text.push_str(&format!(
            "{}|{}|{}|{}|{}|{}.{:02}|0.{:02}|0.{:02}|{f}|{st}|1998-{:02}-{:02}|1996-02-12|1996-03-22|NONE|AIR|{comment}|\n",
            i / 4 + 1,
            i * 31 % 200_000,
            i % 10_000,
            i % 7 + 1,
            i % 50 + 1,
            900 + i * 37 % 100_000,
            i % 100,
            i % 11,
            i % 9,
            i % 12 + 1,
            i % 28 + 1,
        ));
    }
    let path = d.path().join("lineitem.tbl");
    std::fs::write(&path, &text).unwrap();
    let len = text.len() as u64;
    (
        d,
        vec![Input {
            path,
            len,
            parquet: None,
        }],
    )
}
