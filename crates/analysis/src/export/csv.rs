//! The CSV writer of an export: a header line, then one RFC 4180 record per row, into any
//! `io::Write` (the export's file manager hands it the output file).

use std::fmt::{self, Write as _};
use std::io::Write;

use super::row::{Row, StringPool, COLUMNS};

/// Writes rows as CSV into `W`.
pub(super) struct CsvWriter<W: Write> {
    writer: csv::Writer<W>,
    record: csv::ByteRecord,
    scratch: String,
}

impl<W: Write> CsvWriter<W> {
    /// Starts the output with the header line.
    pub(super) fn new(out: W) -> Result<Self, csv::Error> {
        let mut w = CsvWriter {
            writer: csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(out),
            record: csv::ByteRecord::new(),
            scratch: String::new(),
        };
        w.writer.write_record(COLUMNS)?;
        Ok(w)
    }

    /// Writes one row.
    pub(super) fn push(&mut self, row: &Row, strings: &StringPool) -> Result<(), csv::Error> {
        self.record.clear();
        let ts = chrono::DateTime::from_timestamp_nanos(row.start_utc_ns);
        let (rec, s) = (&mut self.record, &mut self.scratch);
        push_display(rec, s, row.session);
        rec.push_field(strings.get(row.event).data());
        push_display(rec, s, ts.format("%Y-%m-%dT%H:%M:%S%.9fZ"));
        push_display(rec, s, row.start_ns);
        push_display(rec, s, row.duration_ns);
        match row.intended_start_ns {
            Some(v) => push_display(rec, s, v),
            None => rec.push_field(b""),
        }
        rec.push_field(strings.get(row.outcome).data());
        push_display(rec, s, row.rows);
        rec.push_field(if row.warmup { b"true" } else { b"false" });
        for v in std::iter::once(row.obj).chain(row.p) {
            match v {
                Some(v) => push_display(rec, s, v),
                None => rec.push_field(b""),
            }
        }
        for name in row.p_names {
            match name {
                Some(i) => rec.push_field(strings.get(i).data()),
                None => rec.push_field(b""),
            }
        }
        self.writer.write_byte_record(&self.record)
    }

    /// Flushes what is buffered and gives the output back.
    pub(super) fn finish(self) -> Result<W, std::io::Error> {
        self.writer.into_inner().map_err(|e| e.into_error())
    }
}

/// Appends the text of `v` as a field, reusing `scratch`.
fn push_display(rec: &mut csv::ByteRecord, scratch: &mut String, v: impl fmt::Display) {
    scratch.clear();
    // Formatting into a String cannot fail.
    let _ = write!(scratch, "{v}");
    rec.push_field(scratch.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::{Event, EventParams, NameTable, EVENT_WARMUP};

    #[test]
    fn rows_become_exact_bytes() {
        let names = NameTable::new();
        let mut pool = StringPool::default();
        let ev = |name: &str, outcome: u16, intended, flags| Event {
            session: 3,
            name: names.intern(name),
            start_ns: 1_500,
            duration_ns: 250,
            intended_start_ns: intended,
            outcome,
            flags,
            rows: 2,
        };
        let err = names.intern_outcome("pg:40P01");
        let wait = EventParams {
            obj: Some(-1),
            p: [Some(4), None, Some(0)],
            p_names: [names.intern("file#"), 0, 0],
        };
        let mut w = CsvWriter::new(Vec::new()).unwrap();
        for (e, p) in [
            (ev("commit", 0, None, EVENT_WARMUP), EventParams::default()),
            (ev("a, \"b\"", err, Some(1_000), 0), wait),
        ] {
            let row = Row::new(&e, &p, 1_000_000_000, &names, &mut pool).unwrap();
            w.push(&row, &pool).unwrap();
        }
        let bytes = w.finish().unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "session,event,start_utc,start_ns,duration_ns,intended_start_ns,outcome,rows,warmup,\
             obj,p1,p2,p3,p1_name,p2_name,p3_name\n\
             3,commit,1970-01-01T00:00:01.000001500Z,1500,250,,ok,2,true,,,,,,,\n\
             3,\"a, \"\"b\"\"\",1970-01-01T00:00:01.000001500Z,1500,250,1000,pg:40P01,2,false,\
             -1,4,,0,file#,,\n"
        );
    }
}
