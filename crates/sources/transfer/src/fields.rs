//! Rows as the files hold them: PostgreSQL's text and CSV formats (COPY's), decoded into fields
//! (a transfer into SQLite or MariaDB/MySQL reads the files itself) and encoded from fields (a
//! transfer out of MariaDB/MySQL writes what COPY would have written for the same values).

use crate::config::{FileOptions, Format};

/// Splits one line of PostgreSQL's text format into fields (`None` for the NULL marker),
/// undoing its backslash escapes.
pub(crate) fn text_fields(line: &[u8], delim: u8, null: &[u8]) -> Vec<Option<Vec<u8>>> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut out = Vec::new();
    let (mut field, mut raw) = (Vec::new(), Vec::new());
    let mut i = 0;
    let mut push = |field: &mut Vec<u8>, raw: &mut Vec<u8>| {
        let f = std::mem::take(field);
        out.push((raw.as_slice() != null).then_some(f));
        raw.clear();
    };
    while i < line.len() {
        let b = line[i];
        if b == delim {
            push(&mut field, &mut raw);
            i += 1;
            continue;
        }
        if b != b'\\' || i + 1 == line.len() {
            field.push(b);
            raw.push(b);
            i += 1;
            continue;
        }
        let e = line[i + 1];
        raw.extend_from_slice(&line[i..i + 2]);
        i += 2;
        match e {
            b'b' => field.push(8),
            b'f' => field.push(12),
            b'n' => field.push(b'\n'),
            b'r' => field.push(b'\r'),
            b't' => field.push(b'\t'),
            b'v' => field.push(11),
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                for _ in 0..2 {
                    match line.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            raw.push(*d);
                            i += 1;
                        }
                        _ => break,
                    }
                }
                field.push(v as u8);
            }
            b'x' if line.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut v = 0u32;
                for _ in 0..2 {
                    match line.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            raw.push(line[i]);
                            i += 1;
                        }
                        None => break,
                    }
                }
                field.push(v as u8);
            }
            other => field.push(other),
        }
    }
    push(&mut field, &mut raw);
    out
}

/// Splits one CSV record (RFC 4180, PostgreSQL's CSV: an unquoted field equal to the NULL marker
/// is NULL, a quoted one never) into fields; `None` while a quoted field is still open (the
/// record goes on on the next line).
pub(crate) fn csv_fields(rec: &[u8], delim: u8, null: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
    let rec = rec.strip_suffix(b"\n").unwrap_or(rec);
    let rec = rec.strip_suffix(b"\r").unwrap_or(rec);
    let mut out = Vec::new();
    let (mut field, mut quoted, mut inq) = (Vec::new(), false, false);
    let mut i = 0;
    while i < rec.len() {
        let b = rec[i];
        if inq {
            if b == b'"' {
                if rec.get(i + 1) == Some(&b'"') {
                    field.push(b'"');
                    i += 1;
                } else {
                    inq = false;
                }
            } else {
                field.push(b);
            }
        } else if b == b'"' {
            inq = true;
            quoted = true;
        } else if b == delim {
            let f = std::mem::take(&mut field);
            out.push((quoted || f != null).then_some(f));
            quoted = false;
        } else {
            field.push(b);
        }
        i += 1;
    }
    if inq {
        return None;
    }
    out.push((quoted || field != null).then_some(field));
    Some(out)
}

/// How a transfer writes rows in a file's format ([`FileOptions`]): COPY's text format (`tbl`)
/// or CSV, with its delimiter, NULL marker and header, byte for byte as PostgreSQL's `COPY … TO
/// STDOUT` writes the same values.
pub(crate) struct RowFormat {
    csv: bool,
    delim: u8,
    null: Vec<u8>,
}

impl RowFormat {
    /// The format of `o` (tbl or csv; Parquet is not a text format: `None`).
    pub(crate) fn of(o: &FileOptions) -> Option<Self> {
        let csv = match o.format {
            Format::Tbl => false,
            Format::Csv => true,
            Format::Parquet => return None,
        };
        let delim = o
            .delimiter
            .map_or(if csv { b',' } else { b'|' }, |c| c as u8);
        let null = o
            .null
            .clone()
            .unwrap_or(if csv { String::new() } else { "\\N".into() });
        Some(RowFormat {
            csv,
            delim,
            null: null.into_bytes(),
        })
    }

    /// Whether the format is CSV.
    pub(crate) fn is_csv(&self) -> bool {
        self.csv
    }

    /// Decodes one line (text) or record (CSV; `None` while a quoted field is still open).
    pub(crate) fn decode(&self, rec: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
        if self.csv {
            csv_fields(rec, self.delim, &self.null)
        } else {
            Some(text_fields(rec, self.delim, &self.null))
        }
    }

    /// Appends one row, newline included, as COPY writes it: text escapes backslash, the
    /// delimiter and the control characters COPY escapes; CSV quotes a field holding the
    /// delimiter, a quote, CR or LF, or equal to the NULL marker (doubling its quotes).
    pub(crate) fn encode(&self, fields: &[Option<&[u8]>], out: &mut Vec<u8>) {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push(self.delim);
            }
            let Some(f) = f else {
                out.extend_from_slice(&self.null);
                continue;
            };
            if self.csv {
                let quote = *f == self.null.as_slice()
                    || f.iter()
                        .any(|&b| b == self.delim || b == b'"' || b == b'\n' || b == b'\r')
                    || (fields.len() == 1 && *f == b"\\.");
                if quote {
                    out.push(b'"');
                    for &b in *f {
                        if b == b'"' {
                            out.push(b'"');
                        }
                        out.push(b);
                    }
                    out.push(b'"');
                } else {
                    out.extend_from_slice(f);
                }
                continue;
            }
            for &b in *f {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    8 => out.extend_from_slice(b"\\b"),
                    11 => out.extend_from_slice(b"\\v"),
                    12 => out.extend_from_slice(b"\\f"),
                    d if d == self.delim => {
                        out.push(b'\\');
                        out.push(d);
                    }
                    b => out.push(b),
                }
            }
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: &[Option<&str>]) -> Vec<Option<Vec<u8>>> {
        v.iter().map(|o| o.map(|s| s.as_bytes().to_vec())).collect()
    }

    #[test]
    fn text_format_fields() {
        assert_eq!(
            text_fields(b"1|a\\|b|\\N|x\\\\y\\n\\tz\\101\\x41\n", b'|', b"\\N"),
            f(&[Some("1"), Some("a|b"), None, Some("x\\y\n\tzAA")])
        );
        assert_eq!(text_fields(b"|\n", b'|', b"\\N"), f(&[Some(""), Some("")]));
        assert_eq!(text_fields(b"NULL|a", b'|', b"NULL"), f(&[None, Some("a")]));
    }

    #[test]
    fn rows_encode_as_copy_writes_them_and_decode_back() {
        let opts = |format, null: Option<&str>| FileOptions {
            format,
            delimiter: None,
            header: false,
            null: null.map(String::from),
            compress: crate::files::Compress::None,
        };
        let row: [Option<&[u8]>; 5] = [
            Some(b"1"),
            Some(b"a|b,c\"q\""),
            None,
            Some(b""),
            Some(b"x\\y\n\tz\x08\x0b\x0c\r"),
        ];
        let tbl = RowFormat::of(&opts(Format::Tbl, None)).unwrap();
        let mut out = Vec::new();
        tbl.encode(&row, &mut out);
        // What COPY … TO STDOUT (FORMAT text, DELIMITER '|') sends for these values.
        assert_eq!(out, b"1|a\\|b,c\"q\"|\\N||x\\\\y\\n\\tz\\b\\v\\f\\r\n");
        let csv = RowFormat::of(&opts(Format::Csv, None)).unwrap();
        let mut c = Vec::new();
        csv.encode(&row, &mut c);
        assert_eq!(
            c,
            b"1,\"a|b,c\"\"q\"\"\",,\"\",\"x\\y\n\tz\x08\x0b\x0c\r\"\n"
        );
        let owned: Vec<Option<Vec<u8>>> = row.iter().map(|f| f.map(<[u8]>::to_vec)).collect();
        assert_eq!(tbl.decode(&out), Some(owned.clone()));
        assert_eq!(csv.decode(&c), Some(owned));
        assert!(RowFormat::of(&opts(Format::Parquet, None)).is_none());
        let marked = RowFormat::of(&opts(Format::Csv, Some("NULL"))).unwrap();
        let mut m = Vec::new();
        marked.encode(&[None, Some(b"NULL"), Some(b"")], &mut m);
        assert_eq!(m, b"NULL,\"NULL\",\n");
    }

    #[test]
    fn csv_records() {
        assert_eq!(
            csv_fields(b"1,\"a,\"\"b\"\"\",,\"\"\n", b',', b""),
            Some(f(&[Some("1"), Some("a,\"b\""), None, Some("")]))
        );
        assert_eq!(csv_fields(b"1,\"a\n", b',', b""), None);
        assert_eq!(
            csv_fields(b"1,\"a\nb\"\n", b',', b""),
            Some(f(&[Some("1"), Some("a\nb")]))
        );
    }
}
