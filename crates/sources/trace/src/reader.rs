//! The 10046 reader: traces read one after the other (plain or gzip files, or any byte stream),
//! each cut into chunks, classified on all cores and accounted for in file order (see
//! `crate::state`), into one set of [`Tables`] and one [`Sink`].

use std::io::Read;
use std::path::Path;

use crate::error::{Result, TraceReadError};
use crate::input;
use crate::model::{SessionInfo, Tables, Warning};
use crate::pipeline::{self, Input};
use crate::sink::Sink;
use crate::state::{Accounting, Context};

/// Reader options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Stop at the first malformed line with an error.
    pub strict: bool,
    /// Keep wait parameters as text (for import).
    pub keep_params: bool,
    /// Inputs are cut into chunks of this many bytes, classified on all cores (see "How it runs
    /// in parallel" in docs/trace.md): plain files by the workers in parallel, streams (gzip
    /// files, pipes) in order. 0 reads plain files as a stream too, in chunks of the default
    /// size. The result is the same either way.
    pub chunk_bytes: usize,
}

impl Default for Options {
    /// Lenient, no parameters, 1 MiB chunks.
    fn default() -> Self {
        Options {
            strict: false,
            keep_params: false,
            chunk_bytes: pipeline::DEFAULT_CHUNK,
        }
    }
}

/// Reads 10046 traces one after the other into one set of [`Tables`] and one sink.
pub struct Reader<'s, S: Sink> {
    sink: &'s mut S,
    opts: Options,
    /// Names, statements, files, sessions seen so far.
    pub tables: Tables,
    /// Warnings kept (the first 1000).
    pub warnings: Vec<Warning>,
    /// All warnings, counted.
    pub warning_count: u64,
    /// Session names read before their session (see [`Context::pending_info`]).
    pending_info: SessionInfo,
}

impl<'s, S: Sink> Reader<'s, S> {
    /// A reader that hands records to `sink`.
    pub fn new(sink: &'s mut S, opts: Options) -> Self {
        Reader {
            sink,
            opts,
            tables: Tables::default(),
            warnings: Vec::new(),
            warning_count: 0,
            pending_info: SessionInfo::default(),
        }
    }

    /// Reads a file (plain or gzip): a plain file in chunks that workers cut in parallel (unless
    /// [`Options::chunk_bytes`] is 0), a gzip file (or a pipe) as a stream cut in order. `-` is
    /// standard input (named `stdin`), opened as `/dev/stdin` so that a file redirected to it is
    /// still read in parallel.
    pub fn read_path(&mut self, path: &Path) -> Result<()> {
        if path.as_os_str() == "-" {
            self.read_path_as(Path::new("/dev/stdin"), "stdin")
        } else {
            self.read_path_as(path, &path.display().to_string())
        }
    }

    /// [`Reader::read_path`] naming the input `shown` in warnings and errors.
    pub fn read_path_as(&mut self, path: &Path, shown: &str) -> Result<()> {
        let shown = shown.to_string();
        let io_err = |source| TraceReadError::Io {
            path: shown.clone(),
            source,
        };
        let len = match self.opts.chunk_bytes {
            0 => None,
            _ => input::plain_len(path).map_err(io_err)?,
        };
        let input = match len {
            Some(len) => Input::File { path, len },
            None => Input::Stream(input::open(path).map_err(io_err)?),
        };
        self.read_input(&shown, input)
    }

    /// Reads one trace from any reader (as a stream); `name` is used in warnings.
    pub fn read(&mut self, name: &str, input: impl Read + Send) -> Result<()> {
        self.read_input(name, Input::Stream(input))
    }

    /// Reads one trace: its chunks classified on all cores, accounted for in file order here.
    fn read_input<R: Read + Send>(&mut self, name: &str, input: Input<'_, R>) -> Result<()> {
        let mut file = Accounting::begin(
            Context {
                sink: &mut *self.sink,
                tables: &mut self.tables,
                warnings: &mut self.warnings,
                warning_count: &mut self.warning_count,
                pending_info: &mut self.pending_info,
                strict: self.opts.strict,
                keep_params: self.opts.keep_params,
            },
            name,
        );
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunk = match self.opts.chunk_bytes {
            0 => pipeline::DEFAULT_CHUNK,
            c => c,
        };
        let (lines, bytes) =
            pipeline::for_each_chunk(input, name, chunk, workers, |c, first| file.chunk(c, first))?;
        file.end(lines, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AccountedCall, AccountedWait, TraceError};

    #[derive(Default)]
    struct Rec {
        calls: Vec<AccountedCall>,
        waits: Vec<AccountedWait>,
        errors: Vec<TraceError>,
    }

    impl Sink for Rec {
        fn call(&mut self, _t: &Tables, c: &AccountedCall) {
            self.calls.push(*c);
        }
        fn wait(&mut self, _t: &Tables, w: &AccountedWait) {
            self.waits.push(w.clone());
        }
        fn error(&mut self, _t: &Tables, e: &TraceError) {
            self.errors.push(*e);
        }
    }

    fn read(text: &str) -> (Rec, Tables, Vec<Warning>) {
        let mut rec = Rec::default();
        let (tables, warnings) = {
            let mut r = Reader::new(&mut rec, Options::default());
            r.read("t.trc", text.as_bytes()).expect("reads");
            (r.tables, r.warnings)
        };
        (rec, tables, warnings)
    }

    #[test]
    fn children_and_waits_are_attributed() {
        let (rec, _, w) = read(
            "PARSING IN CURSOR #1 len=1 dep=0 uid=0 oct=3 lid=0 tim=0 hv=1 ad='0' sqlid='a'\nselect 1\nEND OF STMT\n\
             WAIT #1: nam='SQL*Net message from client' ela= 50 p1=0 p2=0 p3=0 obj#=-1 tim=100\n\
             EXEC #2:c=5,e=30,p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=4,plh=0,tim=150\n\
             WAIT #1: nam='db file sequential read' ela= 20 file#=1 block#=2 blocks=1 obj#=9 tim=180\n\
             EXEC #1:c=40,e=90,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=200\n",
        );
        assert!(w.is_empty(), "{w:?}");
        let parent = rec.calls.iter().find(|c| c.dep == 0).unwrap();
        assert!(parent.root);
        assert_eq!(
            (parent.children_e, parent.children_c, parent.waits_ela),
            (30, 5, 20)
        );
        // Own e 60, own c 35, own waits 20: 5 µs unaccounted for.
        assert_eq!(parent.unaccounted(), 5);
        let child = rec.calls.iter().find(|c| c.dep == 1).unwrap();
        assert!(!child.root);
        assert_eq!(child.parent_stmt, parent.stmt);
        let idle = rec.waits.iter().find(|w| w.ela == 50).unwrap();
        assert!(!idle.in_call, "ended at 100, before the EXEC began at 110");
        assert!(rec.waits.iter().find(|w| w.ela == 20).unwrap().in_call);
    }

    #[test]
    fn cursor_reuse_and_missing_end_of_stmt() {
        let (rec, t, w) = read(
            "PARSING IN CURSOR #7 len=1 dep=0 uid=0 oct=3 lid=0 tim=0 hv=1 ad='0' sqlid='first'\nselect 1\n\
             EXEC #7:c=1,e=1,dep=0,tim=10\n\
             CLOSE #7:c=0,e=1,dep=0,type=0,tim=20\n\
             PARSING IN CURSOR #7 len=1 dep=0 uid=0 oct=3 lid=0 tim=30 hv=2 ad='0' sqlid='second'\nselect\n  2\nEND OF STMT\n\
             EXEC #7:c=1,e=1,dep=0,tim=40\n\
             ERROR #7:err=942 tim=41\n",
        );
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, 1);
        assert!(w[0].msg.contains("END OF STMT"));
        let names: Vec<&str> = rec
            .calls
            .iter()
            .map(|c| t.statements[c.stmt.unwrap() as usize].sqlid.as_str())
            .collect();
        assert_eq!(names, ["first", "first", "second"]);
        assert_eq!(t.statements[1].text, "select 2");
        assert_eq!(rec.errors[0].err, 942);
        assert_eq!(rec.errors[0].stmt, Some(1));
    }

    #[test]
    fn wall_clock_is_anchored_per_session() {
        let (rec, t, _) = read(
            "*** SESSION ID:(1.1) 2024-01-01T00:00:00.000000+00:00\n\
             WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=5000\n\
             *** SESSION ID:(2.2) 2024-01-01T00:00:10.000000+00:00\n\
             WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=900\n\
             *** SESSION ID:(1.1)\n\
             WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=6000\n",
        );
        assert_eq!(t.sessions.len(), 2);
        let base = 1_704_067_200_000_000i64;
        let walls: Vec<i64> = rec
            .waits
            .iter()
            .map(|w| w.wall_end_us.unwrap() - base)
            .collect();
        // Session 1's offset survives the switch to session 2 and back.
        let mut sorted = walls.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1000, 10_000_000]);
    }

    /// Reads `data`, then fails.
    struct Failing<'d>(&'d [u8]);

    impl Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::Error::other("the disk is on fire"));
            }
            let n = buf.len().min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// A stream that fails is an error naming the input; what comes before it in the stream is
    /// accounted for first, so an earlier malformed line under --strict is the error reported.
    #[test]
    fn errors_come_in_file_order() {
        let text = "WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=5000\n\
                    EXEC #1:c=1,e=x,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1\n\
                    WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=6000\n";
        for (strict, want) in [
            (false, "t.trc: the disk is on fire"),
            (true, "t.trc:2: a db call field is not a number (--strict)"),
        ] {
            let mut rec = Rec::default();
            let opts = Options {
                strict,
                chunk_bytes: 16,
                ..Options::default()
            };
            let mut r = Reader::new(&mut rec, opts);
            let err = r.read("t.trc", Failing(text.as_bytes())).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }
}
