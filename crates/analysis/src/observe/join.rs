//! Active-session samples: joined to the client events, and counted into the top timed events.
//!
//! [`SampleJoin`] attributes each sample to the client events in flight while a report reads the
//! events; [`top_wait_event`] gives the top one of a run or of a window of it.

use std::collections::BTreeMap;

use dbscope_core::observe::{
    read_lines, SampleLine, TimedWait, WaitLine, SAMPLES_FILE, WAITS_FILE,
};
use dbscope_core::RunDir;

use super::model::{During, TopEvents, TopRow, NO_CLIENT_EVENT};

/// Joins a run's active-session samples (PostgreSQL) and timed waits (`--waits history`,
/// MariaDB/MySQL) to its client events while the events are read (one pass, shared with the rest
/// of the report): a sample or a wait is attributed to every event of its session whose span
/// contains its time (a wait's start). Cost: one binary search per event in the session's sorted
/// times.
pub struct SampleJoin {
    /// The samples and their join (`None`: the run has none).
    samples: Option<(Vec<SampleLine>, InFlight)>,
    /// The waits and their join (`None`: the run has no `waits.jsonl`).
    waits: Option<Waits>,
    names: Vec<String>,
    index: std::collections::HashMap<String, u32>,
}

/// The waits of `waits.jsonl` placed on the run's clock (with a session and `start_ns`), their
/// join, and how many others than idle could not be placed (no calibration, no session).
struct Waits {
    placed: Vec<TimedWait>,
    joined: InFlight,
    unplaced: u64,
}

/// Times of one session each, and per time the client events in flight (ids into the join's
/// names).
struct InFlight {
    /// Per session: (time, index of the line) by time.
    by_session: Vec<Vec<(u64, u32)>>,
    /// Per line: the client events in flight.
    during: Vec<Vec<u32>>,
}

impl InFlight {
    fn new(n: usize, points: impl Iterator<Item = (u32, u64, u32)>) -> InFlight {
        let mut by_session: Vec<Vec<(u64, u32)>> = Vec::new();
        for (session, t, i) in points {
            let k = session as usize;
            if k >= by_session.len() {
                if k > 1_000_000 {
                    continue;
                }
                by_session.resize_with(k + 1, Vec::new);
            }
            by_session[k].push((t, i));
        }
        for v in &mut by_session {
            v.sort_unstable();
        }
        InFlight {
            by_session,
            during: vec![Vec::new(); n],
        }
    }

    fn add_block(
        &mut self,
        names: &dbscope_core::NameTable,
        events: &[dbscope_core::Event],
        mut id_of: impl FnMut(String) -> u32,
    ) {
        for e in events {
            let Some(v) = self.by_session.get(e.session as usize) else {
                continue;
            };
            let end = e.start_ns.saturating_add(e.duration_ns);
            let lo = v.partition_point(|x| x.0 < e.start_ns);
            for &(t, line) in &v[lo..] {
                if t > end {
                    break;
                }
                let id = id_of(names.name(e.name));
                let d = &mut self.during[line as usize];
                if !d.contains(&id) {
                    d.push(id);
                }
            }
        }
    }
}

/// The joined waits: the waits, per wait the client events in flight, the events' names, and
/// the number of waits that could not be placed.
pub(super) type JoinedWaits = (Vec<TimedWait>, Vec<Vec<u32>>, Vec<String>, u64);

impl SampleJoin {
    /// Reads the run's samples and waits; `None` when it has neither or they cannot be read (the
    /// report notes the latter when it reads them again).
    pub fn load(run: &RunDir) -> Option<SampleJoin> {
        let lines: Option<Vec<SampleLine>> = read_lines(&run.path, SAMPLES_FILE).ok().flatten();
        let waits: Option<Vec<WaitLine>> = read_lines(&run.path, WAITS_FILE).ok().flatten();
        if lines.is_none() && waits.is_none() {
            return None;
        }
        let mut j = SampleJoin {
            samples: lines.map(samples_in_flight),
            waits: None,
            names: Vec::new(),
            index: std::collections::HashMap::new(),
        };
        if let Some(w) = waits {
            j.set_waits(w.into_iter().map(|WaitLine::Wait(w)| w).collect());
        }
        Some(j)
    }

    /// For samples already read.
    pub fn from_lines(lines: Vec<SampleLine>) -> SampleJoin {
        SampleJoin {
            samples: Some(samples_in_flight(lines)),
            waits: None,
            names: Vec::new(),
            index: std::collections::HashMap::new(),
        }
    }

    /// The timed waits to join: those placed on the run's clock (a session and `start_ns`).
    pub fn set_waits(&mut self, all: Vec<TimedWait>) {
        // Idle waits (the client's time) may have no start on the run's clock: not counted.
        let is_placed = |w: &TimedWait| w.session.is_some() && w.start_ns.is_some();
        let unplaced = all
            .iter()
            .filter(|w| !is_placed(w) && w.name != "idle")
            .count() as u64;
        let placed: Vec<TimedWait> = all.into_iter().filter(is_placed).collect();
        let joined = InFlight::new(
            placed.len(),
            placed
                .iter()
                .enumerate()
                .filter_map(|(i, w)| Some((w.session?, w.start_ns?, i as u32))),
        );
        self.waits = Some(Waits {
            placed,
            joined,
            unplaced,
        });
    }

    /// Attributes the samples and waits that fall inside `events`.
    pub fn add_block(&mut self, names: &dbscope_core::NameTable, events: &[dbscope_core::Event]) {
        let (ids, index) = (&mut self.names, &mut self.index);
        let mut id_of = |name: String| match index.get(&name) {
            Some(&id) => id,
            None => {
                let id = ids.len() as u32;
                ids.push(name.clone());
                index.insert(name, id);
                id
            }
        };
        if let Some((_, j)) = self.samples.as_mut() {
            j.add_block(names, events, &mut id_of);
        }
        if let Some(w) = self.waits.as_mut() {
            w.joined.add_block(names, events, &mut id_of);
        }
    }

    /// The samples (`None`: none), joined; the waits, joined (`None`: no `waits.jsonl`).
    pub(super) fn into_parts(
        self,
    ) -> (Option<Vec<SampleLine>>, Option<Joined>, Option<JoinedWaits>) {
        let waits = self
            .waits
            .map(|w| (w.placed, w.joined.during, self.names.clone(), w.unplaced));
        match self.samples {
            Some((lines, j)) => (Some(lines), Some((j.during, self.names)), waits),
            None => (None, None, waits),
        }
    }
}

/// The active samples of `lines`, ready to be joined.
fn samples_in_flight(lines: Vec<SampleLine>) -> (Vec<SampleLine>, InFlight) {
    let joined = InFlight::new(
        lines.len(),
        lines.iter().enumerate().filter_map(|(i, l)| match l {
            SampleLine::Sample(s) if s.state == "active" => Some((s.session, s.t_ns, i as u32)),
            _ => None,
        }),
    );
    (lines, joined)
}

/// The top wait event of a run (or of the part of it between `window_ns.0` and `window_ns.1`,
/// run-clock ns, both included): the (wait event, class) with the most active samples, `CPU*`
/// for active samples without a wait event. `None` when the run has no samples (not
/// PostgreSQL, `--sample-hz 0`) or none active in the window. Reads `samples.jsonl` only.
pub fn top_wait_event(
    run: &RunDir,
    window_ns: Option<(u64, u64)>,
) -> Result<Option<TopRow>, dbscope_core::Error> {
    let Some(lines) = read_lines::<SampleLine>(&run.path, SAMPLES_FILE)? else {
        return Ok(None);
    };
    Ok(top_from_samples(&lines, window_ns, None)
        .rows
        .into_iter()
        .next())
}

pub(super) type Joined = (Vec<Vec<u32>>, Vec<String>);

/// The client events in flight during `n` samples or waits of one wait event (counts by name id
/// into `names`, `outside` for those in none), most first.
pub(super) fn shares(
    during: &BTreeMap<u32, u64>,
    outside: u64,
    n: u64,
    names: &[String],
) -> Vec<During> {
    let mut v: Vec<During> = during
        .iter()
        .map(|(&id, &k)| (names.get(id as usize).cloned().unwrap_or_default(), k))
        .chain((outside > 0).then(|| (NO_CLIENT_EVENT.to_string(), outside)))
        .map(|(event, k)| During {
            event,
            samples: k,
            pct: 100.0 * k as f64 / n.max(1) as f64,
        })
        .collect();
    v.sort_by(|x, y| y.samples.cmp(&x.samples).then(x.event.cmp(&y.event)));
    v
}

pub(super) fn top_from_samples(
    lines: &[SampleLine],
    window_ns: Option<(u64, u64)>,
    during: Option<&Joined>,
) -> TopEvents {
    let mut t = TopEvents {
        source: "pg_stat_activity samples".into(),
        ..TopEvents::default()
    };
    let inside = |ns: u64| window_ns.is_none_or(|(a, b)| a <= ns && ns <= b);
    #[derive(Default)]
    struct Acc {
        n: u64,
        queries: BTreeMap<String, u64>,
        during: BTreeMap<u32, u64>,
        outside: u64,
    }
    let mut by: BTreeMap<(String, String), Acc> = BTreeMap::new();
    for (i, l) in lines.iter().enumerate() {
        match l {
            SampleLine::Header { hz, .. } => t.hz = Some(*hz),
            SampleLine::Gap(g) => {
                if inside(g.from_ns) || inside(g.to_ns) {
                    t.gaps += 1;
                    t.gap_s += g.to_ns.saturating_sub(g.from_ns) as f64 / 1e9;
                }
            }
            SampleLine::Tick { .. } => {}
            SampleLine::Sample(s) => {
                if !inside(s.t_ns) {
                    continue;
                }
                t.samples += 1;
                if s.state != "active" {
                    continue;
                }
                t.db_time_samples += 1;
                let key = match (&s.wait_class, &s.wait_event) {
                    (Some(c), Some(e)) => (e.clone(), c.clone()),
                    _ => ("CPU*".to_string(), "CPU".to_string()),
                };
                let e = by.entry(key).or_default();
                e.n += 1;
                if let Some(q) = &s.query {
                    *e.queries.entry(q.clone()).or_default() += 1;
                }
                if let Some((d, _)) = during {
                    let names = d.get(i).map_or(&[][..], |v| v.as_slice());
                    if names.is_empty() {
                        e.outside += 1;
                    }
                    for &n in names {
                        *e.during.entry(n).or_default() += 1;
                    }
                }
            }
        }
    }
    let hz = t.hz.unwrap_or(1.0);
    t.db_time_s = t.db_time_samples as f64 / hz;
    let active = t.db_time_samples.max(1) as f64;
    t.rows = by
        .into_iter()
        .map(|((event, class), a)| {
            let names = during.map_or(&[][..], |d| d.1.as_slice());
            let shares = shares(&a.during, a.outside, a.n, names);
            TopRow {
                event,
                class,
                samples: a.n,
                est_s: a.n as f64 / hz,
                pct_db_time: 100.0 * a.n as f64 / active,
                top_statement: a
                    .queries
                    .into_iter()
                    .max_by_key(|(_, c)| *c)
                    .map(|(q, _)| q),
                during: shares,
            }
        })
        .collect();
    t.rows
        .sort_by(|a, b| b.samples.cmp(&a.samples).then(a.event.cmp(&b.event)));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::observe::Sample;
    use dbscope_core::{Event, NameTable};

    fn sample(t_ns: u64, session: u32, event: Option<&str>) -> SampleLine {
        SampleLine::Sample(Sample {
            t_ns,
            session,
            state: "active".into(),
            wait_class: event.map(|_| "IO".into()),
            wait_event: event.map(Into::into),
            query_id: None,
            query: None,
            op: None,
            pid: None,
        })
    }

    #[test]
    fn samples_are_attributed_to_the_events_of_their_session_in_flight() {
        let names = NameTable::new();
        let (update, commit) = (names.intern("update"), names.intern("commit"));
        let ev = |name, session, start_ns, duration_ns| Event {
            session,
            name,
            start_ns,
            duration_ns,
            ..Event::default()
        };
        let mut j = SampleJoin::from_lines(vec![
            sample(150, 0, Some("WALSync")),
            sample(160, 1, Some("WALSync")),
            sample(250, 0, Some("WALSync")),
            sample(500, 0, Some("WALSync")),
            sample(120, 0, None),
        ]);
        // Session 0: update 100..200, commit 200..300; session 1: commit 100..200.
        j.add_block(
            &names,
            &[
                ev(update, 0, 100, 100),
                ev(commit, 0, 200, 100),
                ev(commit, 1, 100, 100),
            ],
        );
        let (lines, joined, _) = j.into_parts();
        let t = top_from_samples(&lines.unwrap(), None, joined.as_ref());
        let wal = &t.rows[0];
        assert_eq!((wal.event.as_str(), wal.samples), ("WALSync", 4));
        let shares: Vec<(&str, u64)> = wal
            .during
            .iter()
            .map(|d| (d.event.as_str(), d.samples))
            .collect();
        assert_eq!(
            shares,
            [("commit", 2), (NO_CLIENT_EVENT, 1), ("update", 1)],
            "{wal:?}"
        );
        assert_eq!(wal.during[0].pct, 50.0);
        let cpu = &t.rows[1];
        assert_eq!(cpu.event, "CPU*");
        assert_eq!(cpu.during[0].event, "update");
    }

    #[test]
    fn the_top_wait_event_of_a_window_counts_only_its_samples() {
        let lines = vec![
            sample(100, 0, Some("WALSync")),
            sample(200, 0, Some("WALSync")),
            sample(300, 0, Some("transactionid")),
            sample(400, 0, Some("transactionid")),
            sample(500, 0, Some("transactionid")),
        ];
        let all = top_from_samples(&lines, None, None);
        assert_eq!(all.rows[0].event, "transactionid");
        let early = top_from_samples(&lines, Some((0, 250)), None);
        assert_eq!(early.rows[0].event, "WALSync");
        assert_eq!(early.db_time_samples, 2);
        assert!(early.rows[0].during.is_empty());
        assert!(top_from_samples(&lines, Some((600, 700)), None)
            .rows
            .is_empty());
    }
}
