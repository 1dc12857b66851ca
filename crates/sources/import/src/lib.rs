//! `dbscope import csv`: latencies measured elsewhere (a column of numbers in a CSV file, with or
//! without a header, optionally with session and start-offset columns) become a run, so `report`,
//! `compare` and `export` work on them.
//!
//! Each data row becomes one successful event named [`CsvImport::event`]. Durations are converted to
//! nanoseconds from the given unit and rounded. Without a start column, each session's events are
//! laid end to end from offset 0 (so throughput is the sessions' busy time). A bad row is an error
//! naming its line, or with [`CsvImport::lenient`] is skipped and counted in the manifest.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use dbscope_core::manifest::WorkloadInfo;
use dbscope_core::run::{EVENTS_FILE, MANIFEST_FILE};
use dbscope_core::{Event, Manifest, Outcome, Recording};

/// Events per block written.
const BLOCK: usize = 1 << 13;
/// Bad-row messages kept for the summary when rows are skipped.
const KEEP_MESSAGES: usize = 5;

/// The unit of the numbers in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl Unit {
    /// Nanoseconds per unit.
    pub fn ns(&self) -> f64 {
        // 10^0 … 10^9 are exact in a double.
        10f64.powi(self.decimals() as i32)
    }

    /// Decimal digits of a nanosecond count per unit (10^digits nanoseconds a unit).
    fn decimals(&self) -> u32 {
        match self {
            Unit::Ns => 0,
            Unit::Us => 3,
            Unit::Ms => 6,
            Unit::S => 9,
        }
    }

    /// The unit's name as given on the command line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::S => "s",
        }
    }
}

/// What to import and where.
#[derive(Clone, Debug)]
pub struct CsvImport {
    /// The CSV file.
    pub file: PathBuf,
    /// Event name given to every row.
    pub event: String,
    /// Latency column: a header name or a 1-based number; `None` for a file with one column.
    pub column: Option<String>,
    /// Unit of the latency (and start) column.
    pub unit: Unit,
    /// Optional column of session numbers (non-negative integers).
    pub session_column: Option<String>,
    /// Optional column of start offsets, in `unit`, from any origin.
    pub start_column: Option<String>,
    /// Skip and count bad rows instead of stopping at the first.
    pub lenient: bool,
    /// Field delimiter (`,` by default).
    pub delimiter: u8,
    /// The run directory to create.
    pub out: PathBuf,
    /// Command line to record (secrets already redacted).
    pub command_line: Vec<String>,
}

/// What an import did.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportSummary {
    /// The run directory.
    pub dir: PathBuf,
    /// Events written.
    pub events: u64,
    /// Bad rows skipped (only with `lenient`).
    pub skipped: u64,
    /// The first few bad rows' messages.
    pub skipped_examples: Vec<String>,
    /// Whether the first line was taken as a header.
    pub header: bool,
}

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Reading the file or writing the run failed.
    #[error(transparent)]
    Run(#[from] dbscope_core::Error),
    /// The file is not what was described.
    #[error("{0}")]
    Input(String),
}

/// Resolves a column given by header name or 1-based number.
fn resolve(
    spec: &str,
    header: Option<&csv::ByteRecord>,
    file: &Path,
) -> Result<usize, ImportError> {
    if let Ok(n) = spec.parse::<usize>() {
        if n == 0 {
            return Err(ImportError::Input(format!(
                "column numbers start at 1, not 0 (--column {spec})"
            )));
        }
        return Ok(n - 1);
    }
    match header {
        Some(h) => h
            .iter()
            .position(|f| String::from_utf8_lossy(f).trim() == spec)
            .ok_or_else(|| {
                let names: Vec<String> = h
                    .iter()
                    .map(|f| format!("{:?}", String::from_utf8_lossy(f).trim()))
                    .collect();
                ImportError::Input(format!(
                    "{}: no column named {spec:?}; the header has {}",
                    file.display(),
                    names.join(", ")
                ))
            }),
        None => Err(ImportError::Input(format!(
            "{}: the first line is data, not a header, so column {spec:?} cannot be found by name; give its number (1 = first)",
            file.display()
        ))),
    }
}

fn field_str(rec: &csv::ByteRecord, i: usize) -> Option<String> {
    rec.get(i)
        .map(|f| String::from_utf8_lossy(f).trim().to_string())
}

/// A plain decimal (`123`, `123.456`, `.5`; ASCII blanks around it) of at most `decimals`
/// fraction digits as an exact count of 10^-decimals units, when that count is below 2^50; None
/// for anything else, which then goes the way of [`parse_number`].
///
/// The same number as `(text.parse::<f64>() * 10^decimals).round()`, several times faster: the
/// count N is an integer, the parsed double is within N·2^-53 of it and the product within
/// another N·2^-53, so below 2^50 the product rounds to N.
fn plain_decimal(field: &[u8], decimals: u32) -> Option<u64> {
    // The line scanner's rules on the trimmed field, which must hold no newline of its own.
    let f = field.trim_ascii();
    match plain_line(f, decimals) {
        (len, v) if len == f.len() => v,
        _ => None,
    }
}

/// The fast path's line: its length up to the newline (or the end), and its value when the line
/// is only digits and at most one point, with at most 16 digits and `decimals` after the point:
/// the count of 10^-decimals units, when below 2^50 (see [`plain_decimal`], which applies these
/// rules to a trimmed field). Anything else, spaces included, is left to the general path: None.
#[inline]
fn plain_line(b: &[u8], decimals: u32) -> (usize, Option<u64>) {
    let (mut n, mut digits, mut frac, mut dot, mut plain) = (0u64, 0u32, 0u32, false, true);
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\n' => break,
            b'0'..=b'9' => {
                // Past 16 digits the value is refused below; stop accumulating before it wraps.
                if digits < 17 {
                    n = n * 10 + u64::from(c - b'0');
                }
                digits += 1;
                frac += u32::from(dot);
            }
            b'.' if !dot => dot = true,
            _ => plain = false,
        }
        i += 1;
    }
    if !plain || digits == 0 || digits > 16 || frac > decimals {
        return (i, None);
    }
    let Some(n) = n.checked_mul(10u64.pow(decimals - frac)) else {
        return (i, None);
    };
    (i, (n < 1 << 50).then_some(n))
}

/// A file read whole: mapped (guarded against the file shrinking under the map), or read in.
enum Whole {
    Mapped(dbscope_core::mapped::Mapped),
    Read(Vec<u8>),
}

impl Whole {
    fn bytes(&self) -> &[u8] {
        match self {
            Whole::Mapped(m) => m,
            Whole::Read(v) => v,
        }
    }
}

/// The error for a mapped file that changed while it was read: it shrank under the map (whose
/// pages then read as zeros) or its length is not the one it was opened with.
fn changed(whole: Option<&Whole>, path: &Path, size: u64) -> Option<ImportError> {
    let Some(Whole::Mapped(m)) = whole else {
        return None;
    };
    let now = std::fs::metadata(path).map(|m| m.len()).ok();
    (m.faulted() || now != Some(size)).then(|| {
        ImportError::Input(format!(
            "{}: the file changed while it was read ({size} bytes when opened, {} now): nothing \
             was imported",
            path.display(),
            now.map_or_else(|| "gone".to_string(), |n| format!("{n} bytes"))
        ))
    })
}

fn parse_number(rec: &csv::ByteRecord, i: usize) -> Option<f64> {
    let f = rec.get(i)?;
    std::str::from_utf8(f).ok()?.trim().parse::<f64>().ok()
}

/// Whether every non-empty line is one field: only the latency column is read, and there is no
/// delimiter, quote or carriage return anywhere in the file.
fn fast_path_applies(
    bytes: &[u8],
    delimiter: u8,
    col: usize,
    session_col: Option<usize>,
    start_col: Option<usize>,
) -> bool {
    col == 0
        && session_col.is_none()
        && start_col.is_none()
        && memchr::memchr3(delimiter, b'"', b'\r', bytes).is_none()
}

/// 1-based line numbers of records from their byte offsets, counted in the file's bytes when it
/// was read whole (else the CSV reader's count).
struct LineCounter<'a> {
    bytes: Option<&'a [u8]>,
    newline: u8,
    at: usize,
    newlines: u64,
}

impl<'a> LineCounter<'a> {
    fn new(bytes: Option<&'a [u8]>) -> Self {
        // Old Mac files end lines with a bare CR.
        let newline = match bytes {
            Some(b) if !b.contains(&b'\n') && b.contains(&b'\r') => b'\r',
            _ => b'\n',
        };
        LineCounter {
            bytes,
            newline,
            at: 0,
            newlines: 0,
        }
    }

    fn line(&mut self, pos: Option<&csv::Position>) -> u64 {
        let Some(pos) = pos else {
            return self.newlines + 1;
        };
        match self.bytes {
            Some(b) => {
                // Inclusive: after a CRLF the reader puts the next record's start on the LF.
                let to = (pos.byte() as usize + 1).min(b.len());
                if to > self.at {
                    let nl = self.newline;
                    self.newlines += b[self.at..to].iter().filter(|&&c| c == nl).count() as u64;
                    self.at = to;
                }
                self.newlines + 1
            }
            None => pos.line(),
        }
    }
}

/// Imports a CSV file as a new run. On error nothing is left behind in `out`.
pub fn import_csv(opts: &CsvImport) -> Result<ImportSummary, ImportError> {
    if opts.event.is_empty() {
        return Err(ImportError::Input(
            "the event name must not be empty".into(),
        ));
    }
    if opts.out.join(MANIFEST_FILE).exists() || opts.out.join(EVENTS_FILE).exists() {
        return Err(dbscope_core::Error::RunExists(opts.out.clone()).into());
    }
    let io_err = |e| dbscope_core::Error::io(&opts.file, e);
    let file = std::fs::File::open(&opts.file).map_err(io_err)?;
    // Files up to 1 GiB are read whole: plain ones take the fast path, and line numbers are
    // counted exactly (the CSV reader's own count skips blank lines).
    let size = file.metadata().map_err(io_err)?.len();
    // Mapped where the file can be (no copy into a fresh buffer: a fifth of a 4 M-line import's
    // time), else read in.
    let whole: Option<Whole> = if size <= 1 << 30 {
        Some(match dbscope_core::mapped::map_from(&file, 0) {
            Some(m) if m.len() as u64 == size => Whole::Mapped(m),
            _ => Whole::Read(std::fs::read(&opts.file).map_err(io_err)?),
        })
    } else {
        None
    };
    let whole_bytes = whole.as_ref().map(Whole::bytes);
    let input: Box<dyn std::io::Read + '_> = match whole_bytes {
        Some(b) => Box::new(b),
        None => Box::new(file),
    };
    let mut lines = LineCounter::new(whole_bytes);
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(opts.delimiter)
        .buffer_capacity(1 << 20)
        .from_reader(input);
    let mut first = csv::ByteRecord::new();
    let read_err = |e: csv::Error| {
        let line = e.position().map(|p| p.line()).unwrap_or(0);
        ImportError::Input(format!("{}:{line}: {e}", opts.file.display()))
    };
    if !rdr.read_byte_record(&mut first).map_err(read_err)? {
        return Err(ImportError::Input(format!(
            "{}: the file is empty; expected a column of latencies",
            opts.file.display()
        )));
    }
    // The first line is a header when the latency column there is not a number.
    let guess_col = match &opts.column {
        Some(c) => c.parse::<usize>().ok().map(|n| n.saturating_sub(1)),
        None => Some(0),
    };
    let header = match guess_col {
        Some(i) => parse_number(&first, i).is_none(),
        None => true,
    };
    let hdr = header.then_some(&first);
    let col = match &opts.column {
        Some(c) => resolve(c, hdr, &opts.file)?,
        None => {
            if first.len() != 1 {
                return Err(ImportError::Input(format!(
                    "{}: line 1 has {} columns; say which holds the latencies with --column NAME or --column NUMBER",
                    opts.file.display(),
                    first.len()
                )));
            }
            0
        }
    };
    let session_col = opts
        .session_column
        .as_deref()
        .map(|c| resolve(c, hdr, &opts.file))
        .transpose()?;
    let start_col = opts
        .start_column
        .as_deref()
        .map(|c| resolve(c, hdr, &opts.file))
        .transpose()?;
    let col_name = |i: usize| match hdr.and_then(|h| field_str(h, i)) {
        Some(n) if !n.is_empty() => format!("column {} ({n:?})", i + 1),
        _ => format!("column {}", i + 1),
    };

    let created = !opts.out.exists();
    let mut params = BTreeMap::new();
    params.insert(
        "file".to_string(),
        serde_json::json!(opts.file.display().to_string()),
    );
    params.insert("event".to_string(), serde_json::json!(opts.event));
    params.insert("column".to_string(), serde_json::json!(col_name(col)));
    params.insert("unit".to_string(), serde_json::json!(opts.unit.as_str()));
    params.insert("header".to_string(), serde_json::json!(header));
    if let Some(c) = session_col {
        params.insert("session_column".to_string(), serde_json::json!(col_name(c)));
    }
    if let Some(c) = start_col {
        params.insert("start_column".to_string(), serde_json::json!(col_name(c)));
    }
    let mut manifest = Manifest::new(
        "import",
        WorkloadInfo {
            name: "csv".into(),
            params,
        },
        0,
    );
    manifest.command_line = opts.command_line.clone();
    let result = (|| {
        let mut w = Recording::begin(&opts.out, manifest)?;
        // The catalogue's figures as the blocks go by, up to 64 MiB of durations, instead of
        // reading the run back at the end (a quarter of the import's time).
        w.gather_headline(8 << 20);
        // No fsync at the end: the run can be made again from the file, and a tail lost to a
        // crash is still detected (the manifest records how many events were written).
        w.skip_final_sync();
        let id = w.names().intern(&opts.event);
        let mut skipped = 0u64;
        let mut examples = Vec::new();
        // Blocks are encoded and written on a thread of their own while the next lines are
        // parsed. A failed write closes the channel: parsing stops and the write's error is the
        // import's.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Event>>(4);
        let writing = &mut w;
        std::thread::scope(|s| -> Result<(), ImportError> {
            let writer = s.spawn(move || -> Result<(), dbscope_core::Error> {
                for block in rx {
                    writing.write_block(&block)?;
                }
                Ok(())
            });
            let parsing = (|| -> Result<(), ImportError> {
                let mut block: Vec<Event> = Vec::with_capacity(BLOCK);
                // Session clocks: a plain vector indexed by session number for the common small
                // numbers.
                let mut clocks: Vec<u64> = Vec::new();
                let mut far_clocks: HashMap<u32, u64> = HashMap::new();
                let scale = opts.unit.ns();
                let decimals = opts.unit.decimals();
                let unit = opts.unit.as_str();
                let mut rec = first.clone();
                let mut pending_first = !header;
                let mut line = lines.line(first.position());
                // Fast path for the common file, one plain number per line: split lines directly
                // instead of running the CSV state machine (about three times faster). Files with
                // the delimiter, quotes or carriage returns anywhere take the CSV reader.
                let fast = whole_bytes
                    .filter(|b| fast_path_applies(b, opts.delimiter, col, session_col, start_col));
                let (mut fast_pos, mut fast_line, mut fast_skip) = (0usize, 0u64, header);
                if fast.is_some() {
                    pending_first = false;
                }
                loop {
                    // A plain number read by the fast path, without the CSV record.
                    let mut plain = None;
                    if let Some(b) = &fast {
                        let mut got = false;
                        while fast_pos < b.len() {
                            let (len, value) = plain_line(&b[fast_pos..], decimals);
                            let l = &b[fast_pos..fast_pos + len];
                            fast_pos += len + 1;
                            fast_line += 1;
                            if l.is_empty() {
                                continue;
                            }
                            if fast_skip {
                                fast_skip = false;
                                continue;
                            }
                            plain = value;
                            if plain.is_none() {
                                rec.clear();
                                rec.push_field(l);
                            }
                            line = fast_line;
                            got = true;
                            break;
                        }
                        if !got {
                            break;
                        }
                    } else if pending_first {
                        pending_first = false;
                    } else {
                        if !rdr.read_byte_record(&mut rec).map_err(read_err)? {
                            break;
                        }
                        line = lines.line(rec.position());
                    }
                    let parsed = (|| -> Result<Event, String> {
                        let ns = |i: usize, what: &str| -> Result<u64, String> {
                            if let Some(n) = rec.get(i).and_then(|f| plain_decimal(f, decimals)) {
                                return Ok(n);
                            }
                            let v = parse_number(&rec, i).ok_or_else(|| {
                                format!(
                                    "{}: expected {what} in {unit}, found {:?}",
                                    col_name(i),
                                    field_str(&rec, i).unwrap_or_else(|| "(missing)".into())
                                )
                            })?;
                            let n = (v * scale).round();
                            if !(n.is_finite() && n >= 0.0 && n < u64::MAX as f64) {
                                return Err(format!(
                                    "{}: {v} {unit} is not a non-negative duration",
                                    col_name(i)
                                ));
                            }
                            Ok(n as u64)
                        };
                        let duration_ns = match plain {
                            Some(n) => n,
                            None => ns(col, "a latency")?,
                        };
                        let session = match session_col {
                            Some(i) => {
                                let s = field_str(&rec, i).unwrap_or_default();
                                s.parse::<u32>().map_err(|_| {
                                    format!(
                                        "{}: expected a session number (0, 1, 2, …), found {s:?}",
                                        col_name(i)
                                    )
                                })?
                            }
                            None => 0,
                        };
                        let start_ns = match start_col {
                            Some(i) => ns(i, "a start offset")?,
                            None => {
                                let c = if (session as usize) < 4096 {
                                    if clocks.len() <= session as usize {
                                        clocks.resize(session as usize + 1, 0);
                                    }
                                    &mut clocks[session as usize]
                                } else {
                                    far_clocks.entry(session).or_insert(0)
                                };
                                let s = *c;
                                *c = c.saturating_add(duration_ns);
                                s
                            }
                        };
                        Ok(Event {
                            session,
                            name: id,
                            start_ns,
                            duration_ns,
                            ..Event::default()
                        })
                    })();
                    match parsed {
                        Ok(e) => {
                            block.push(e);
                            if block.len() == BLOCK {
                                let full = std::mem::replace(&mut block, Vec::with_capacity(BLOCK));
                                if tx.send(full).is_err() {
                                    // The writer stopped: its error is returned below.
                                    return Ok(());
                                }
                            }
                        }
                        Err(msg) => {
                            let msg = format!("{}:{line}: {msg}", opts.file.display());
                            if !opts.lenient {
                                return Err(ImportError::Input(format!(
                                    "{msg} (pass --lenient to skip bad rows and count them)"
                                )));
                            }
                            skipped += 1;
                            if examples.len() < KEEP_MESSAGES {
                                examples.push(msg);
                            }
                        }
                    }
                }
                let _ = tx.send(block);
                Ok(())
            })();
            drop(tx);
            writer.join().expect("writing blocks does not panic")?;
            parsing
        })?;
        if let Some(e) = changed(whole.as_ref(), &opts.file, size) {
            return Err(e);
        }
        let events = w.events_written();
        if events == 0 {
            return Err(ImportError::Input(format!(
                "{}: no data rows{}",
                opts.file.display(),
                if skipped > 0 {
                    format!(" could be read ({skipped} bad rows skipped)")
                } else {
                    String::new()
                }
            )));
        }
        let params = &mut w.manifest_mut().workload.params;
        params.insert("rows".into(), serde_json::json!(events));
        params.insert("skipped_rows".into(), serde_json::json!(skipped));
        // What the import read, for `report` to say (issue 34: it printed a made-up rate).
        params.insert("bytes".into(), serde_json::json!(size));
        w.finish(Outcome::Complete, None)?;
        Ok(ImportSummary {
            dir: opts.out.clone(),
            events,
            skipped,
            skipped_examples: examples,
            header,
        })
    })();
    // A parse error in a file that shrank under its map is the zeros read instead: say what
    // happened.
    let result = match result {
        Err(e) => Err(changed(whole.as_ref(), &opts.file, size).unwrap_or(e)),
        ok => ok,
    };
    if result.is_err() {
        // Leave nothing half-made behind.
        let _ = std::fs::remove_file(opts.out.join(EVENTS_FILE));
        let _ = std::fs::remove_file(opts.out.join(MANIFEST_FILE));
        if created {
            let _ = std::fs::remove_dir(&opts.out);
        }
        // Its first manifest entered it in the catalogue as running; it is gone (issue 33).
        dbscope_core::run::catalog_forget(&opts.out);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::RunDir;

    /// A mapped file whose length changed is reported as changed, naming both lengths; an
    /// unchanged one, or one read into memory, is not.
    #[test]
    fn a_mapped_file_that_changed_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.csv");
        std::fs::write(&path, "1\n2\n3\n".repeat(2000)).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let size = file.metadata().unwrap().len();
        let Some(map) = dbscope_core::mapped::map_from(&file, 0) else {
            eprintln!("skipped: this machine cannot map the file");
            return;
        };
        let whole = Whole::Mapped(map);
        assert!(changed(Some(&whole), &path, size).is_none());
        assert!(changed(Some(&Whole::Read(vec![b'1'])), &path, size).is_none());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(100)
            .unwrap();
        let e = changed(Some(&whole), &path, size)
            .expect("changed")
            .to_string();
        assert!(
            e.contains("changed while it was read")
                && e.contains("12000 bytes when opened, 100 bytes now"),
            "{e}"
        );
    }

    /// The fast decimal path gives the number the double path gives, wherever it applies.
    #[test]
    fn plain_decimals_equal_the_parsed_double_scaled() {
        let slow = |t: &str, d: u32| {
            let v: f64 = t.trim().parse().unwrap();
            (v * 10f64.powi(d as i32)).round() as u64
        };
        let mut seed = 0x853c_49e6_748f_ea9bu64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut checked, mut lines) = (0, 0);
        for case in 0..200_000u64 {
            let d = [0, 3, 6, 9][(case % 4) as usize];
            let int = next() % [10, 1000, 1_000_000, 10_000_000_000][(case / 4 % 4) as usize];
            let fd = (next() % (u64::from(d) + 1)) as usize;
            let frac: String = (0..fd)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            let t = match (case % 5, fd) {
                (0, _) | (_, 0) => format!("{int}"),
                (1, _) => format!(" {int}.{frac}\t"),
                (2, _) if int == 0 => format!(".{frac}"),
                _ => format!("{int}.{frac}"),
            };
            if let Some(n) = plain_decimal(t.as_bytes(), d) {
                assert_eq!(n, slow(&t, d), "{t:?} at 10^-{d}");
                checked += 1;
            }
            // The line scanner ends the line at the newline and, where it reads a value, reads
            // plain_decimal's (it leaves lines with spaces to the general path).
            let (len, v) = plain_line(format!("{t}\n7\n").as_bytes(), d);
            assert_eq!(len, t.len(), "{t:?}");
            if let Some(v) = v {
                assert_eq!(Some(v), plain_decimal(t.as_bytes(), d), "{t:?} at 10^-{d}");
                lines += 1;
            }
            assert_eq!(plain_line(t.as_bytes(), d).1, v, "{t:?} without a newline");
        }
        assert!(checked > 150_000, "the fast path applied to only {checked}");
        assert!(lines > 110_000, "the line scanner read only {lines}");
        let scales = [Unit::Ns, Unit::Us, Unit::Ms, Unit::S].map(|u| u.ns());
        assert_eq!(scales, [1.0, 1e3, 1e6, 1e9]);
        assert_eq!(plain_decimal(b"5.", 3), Some(5000));
        assert_eq!(
            plain_decimal(b"0.0005", 3),
            None,
            "more digits than the unit: rounding"
        );
        for other in [
            &b""[..],
            b".",
            b"-1",
            b"+1",
            b"1e3",
            b"1.2.3",
            b"nan",
            b"12 3",
            b"1,5",
        ] {
            assert_eq!(
                plain_decimal(other, 3),
                None,
                "{:?}",
                String::from_utf8_lossy(other)
            );
            assert_eq!(plain_line(other, 3).1, None);
        }
        assert_eq!(
            plain_decimal(b"99999999999999999", 9),
            None,
            "too many digits"
        );
        assert_eq!(plain_decimal(b"9999999999999999", 9), None, "beyond 2^50");
        assert_eq!(plain_line(b"99999999999999999", 9).1, None);
        assert_eq!(plain_line(b"9999999999999999", 9).1, None);
        assert_eq!(plain_line(b"123456789012345678901234567890", 0).1, None);
    }

    fn opts(dir: &Path, text: &str) -> CsvImport {
        let file = dir.join("in.csv");
        std::fs::write(&file, text).unwrap();
        CsvImport {
            file,
            event: "log file sync".into(),
            column: None,
            unit: Unit::Us,
            session_column: None,
            start_column: None,
            lenient: false,
            delimiter: b',',
            out: dir.join("run"),
            command_line: vec![],
        }
    }

    fn events(dir: &Path) -> Vec<Event> {
        let run = RunDir::open(dir).unwrap();
        let mut all = Vec::new();
        run.for_each_block(|_, e| all.extend_from_slice(e)).unwrap();
        all
    }

    #[test]
    fn plain_column_without_header() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(dir.path(), "452\n500.5\n\n3999\n");
        let s = import_csv(&o).unwrap();
        assert_eq!((s.events, s.skipped, s.header), (3, 0, false));
        let ev = events(&o.out);
        assert_eq!(
            ev.iter().map(|e| e.duration_ns).collect::<Vec<_>>(),
            [452_000, 500_500, 3_999_000]
        );
        assert_eq!(ev[2].start_ns, 952_500);
        let run = RunDir::open(&o.out).unwrap();
        assert_eq!(run.manifest.source, "import");
        assert_eq!(run.manifest.outcome, Outcome::Complete);
    }

    #[test]
    fn header_and_named_columns() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path(), "sid,t,wait_ms\n3,10,1.5\n4,11,2\n");
        o.column = Some("wait_ms".into());
        o.unit = Unit::Ms;
        o.session_column = Some("sid".into());
        o.start_column = Some("2".into());
        let s = import_csv(&o).unwrap();
        assert!(s.header);
        let ev = events(&o.out);
        assert_eq!(
            (ev[0].session, ev[0].start_ns, ev[0].duration_ns),
            (3, 10_000_000, 1_500_000)
        );
        assert_eq!((ev[1].session, ev[1].duration_ns), (4, 2_000_000));
    }

    #[test]
    fn bad_rows_error_with_line_or_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path(), "latency\n1\n2\nabc\n-4\n5\n");
        let e = import_csv(&o).unwrap_err().to_string();
        assert!(
            e.contains("in.csv:4: column 1 (\"latency\"): expected a latency in us, found \"abc\""),
            "{e}"
        );
        assert!(!o.out.exists(), "nothing left behind");
        o.lenient = true;
        let s = import_csv(&o).unwrap();
        assert_eq!((s.events, s.skipped), (3, 2));
        assert!(
            s.skipped_examples[1].contains(":5: "),
            "{:?}",
            s.skipped_examples
        );
        let run = RunDir::open(&o.out).unwrap();
        assert_eq!(run.manifest.workload.params["skipped_rows"], 2);
    }

    #[test]
    fn fast_path_and_csv_reader_agree() {
        // LF only takes the fast path; CRLF the CSV reader. Same events, same bad-row lines.
        let body = "\nwait\n1.5\n\n2\nx\n1e3\n0.0004\n";
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Vec::new();
        for (i, text) in [body.to_string(), body.replace('\n', "\r\n")]
            .iter()
            .enumerate()
        {
            let sub = dir.path().join(i.to_string());
            std::fs::create_dir(&sub).unwrap();
            let mut o = opts(&sub, text);
            let e = import_csv(&o).unwrap_err().to_string();
            assert!(
                e.contains("in.csv:6: column 1 (\"wait\"): expected a latency in us, found \"x\""),
                "{e}"
            );
            o.lenient = true;
            let s = import_csv(&o).unwrap();
            assert_eq!((s.events, s.skipped, s.header), (4, 1, true));
            runs.push(events(&o.out));
        }
        assert_eq!(runs[0], runs[1]);
        assert_eq!(
            runs[0].iter().map(|e| e.duration_ns).collect::<Vec<_>>(),
            [1500, 2000, 1_000_000, 0]
        );
    }

    #[test]
    fn ambiguous_or_missing_columns_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(dir.path(), "1,2\n3,4\n");
        let e = import_csv(&o).unwrap_err().to_string();
        assert!(e.contains("has 2 columns"), "{e}");
        let mut o = opts(dir.path(), "a,b\n3,4\n");
        o.column = Some("c".into());
        let e = import_csv(&o).unwrap_err().to_string();
        assert!(
            e.contains("no column named \"c\"; the header has \"a\", \"b\""),
            "{e}"
        );
        let o = opts(dir.path(), "");
        assert!(import_csv(&o).unwrap_err().to_string().contains("empty"));
    }
}
