//! Made-up runs for tests: a run directory with a manifest as given and hand-made events, written
//! through the same format code as real runs, so reports, exports and comparisons can be checked
//! against known numbers.
//!
//! ```
//! use dbscope_core::fake::FakeRun;
//! let dir = tempfile::tempdir().unwrap();
//! let mut f = FakeRun::new(&dir.path().join("run"));
//! let commit = f.name("commit");
//! f.block(&[FakeRun::event(commit, 0, 1_000, 250_000)]);
//! let run = f.finish();
//! assert_eq!(run.manifest.workload.name, "");
//! ```

use std::path::Path;

use crate::counters::{CounterSection, RunCounters};
use crate::event::{Event, NameId, NameTable};
use crate::manifest::{Manifest, Outcome, WorkloadInfo};
use crate::run::{EventWriter, RunDir};

/// A run being made up. Panics on I/O errors: it is for tests.
#[derive(Debug)]
pub struct FakeRun {
    run: RunDir,
    names: NameTable,
    writer: EventWriter,
    counters: RunCounters,
}

impl FakeRun {
    /// A complete run of workload source `workload`, seed 1, created now, in `dir`.
    pub fn new(dir: &Path) -> Self {
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 1);
        m.outcome = Outcome::Complete;
        Self::with_manifest(dir, m)
    }

    /// A run with this manifest, written exactly as given (outcome `running` makes a run that
    /// looks killed).
    pub fn with_manifest(dir: &Path, manifest: Manifest) -> Self {
        let run = RunDir::create(dir, manifest).expect("creating a fake run");
        let names = NameTable::new();
        let path = run.path.join(&run.manifest.event_files[0]);
        let writer = EventWriter::create(&path, names.clone()).expect("creating its event file");
        FakeRun {
            run,
            names,
            writer,
            counters: RunCounters::default(),
        }
    }

    /// The id of an event name or error class (interned on first use).
    pub fn name(&self, name: &str) -> NameId {
        self.names.intern(name)
    }

    /// The id of an error class, as an event's outcome.
    pub fn outcome(&self, class: &str) -> u16 {
        self.names.intern_outcome(class)
    }

    /// The run's name table.
    pub fn names(&self) -> &NameTable {
        &self.names
    }

    /// A successful event of `name` in `session`.
    pub fn event(name: NameId, session: u32, start_ns: u64, duration_ns: u64) -> Event {
        Event {
            session,
            name,
            start_ns,
            duration_ns,
            ..Event::default()
        }
    }

    /// Appends one block of events.
    pub fn block(&mut self, events: &[Event]) -> &mut Self {
        self.writer
            .write_block(events)
            .expect("writing fake events");
        self
    }

    /// Starts another event file, `file`, listed in the manifest after the others: later names,
    /// outcomes and blocks go to it, with its own name table (ids are per event file).
    pub fn next_file(&mut self, file: &str) -> &mut Self {
        self.names = NameTable::new();
        self.writer = EventWriter::create(&self.run.path.join(file), self.names.clone())
            .expect("creating another event file");
        self.run.manifest.event_files.push(file.to_string());
        self
    }

    /// Adds a section of run-level counters.
    pub fn counters(&mut self, section: CounterSection) -> &mut Self {
        self.counters.put(section);
        self.counters
            .write(&self.run.path)
            .expect("writing fake counters");
        self
    }

    /// The manifest (changes are written by [`FakeRun::finish`]).
    pub fn manifest_mut(&mut self) -> &mut Manifest {
        &mut self.run.manifest
    }

    /// The run, with its manifest written again as it stands now.
    pub fn finish(self) -> RunDir {
        self.run.save_manifest().expect("writing the fake manifest");
        self.run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_run_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = FakeRun::new(&dir.path().join("r"));
        let c = f.name("commit");
        let e = f.outcome("pg:40P01");
        f.block(&[FakeRun::event(c, 1, 10, 20)]).block(&[Event {
            outcome: e,
            ..FakeRun::event(c, 2, 30, 5)
        }]);
        f.manifest_mut().seed = 9;
        let run = RunDir::open(&f.finish().path).unwrap();
        assert_eq!(run.manifest.seed, 9);
        let mut got = Vec::new();
        let (names, tail) = run.for_each_block(|_, b| got.extend_from_slice(b)).unwrap();
        assert_eq!(tail.events, 2);
        assert_eq!(names.name(got[1].outcome as u32), "pg:40P01");
    }

    #[test]
    fn a_second_event_file_has_its_own_names() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = FakeRun::new(&dir.path().join("r"));
        let a = f.name("a");
        f.block(&[FakeRun::event(a, 0, 0, 1)]);
        f.next_file("two.dsev");
        let b = f.name("b");
        assert_eq!(a, b, "ids start again in the new file");
        f.block(&[FakeRun::event(b, 0, 0, 2)]);
        let run = RunDir::open(&f.finish().path).unwrap();
        assert_eq!(run.manifest.event_files, ["events.dsev", "two.dsev"]);
        let mut got = Vec::new();
        run.for_each_block(|names, b| got.extend(b.iter().map(|e| names.name(e.name))))
            .unwrap();
        assert_eq!(got, ["a", "b"]);
    }
}
