//! `tpch q1 --explain`: the job's dataflow plan, Pig-style, phase by phase.
//!
//! It shows this run's inputs, splits, mappers, cutoff date and shuffle.

use super::job::{Q1Config, CHANNEL_CAPACITY, ROWS_PER_MESSAGE};
use super::parse::cutoff;
use super::scan::CHUNK;
use super::split::{plan_splits, Input};

/// The dataflow plan, Pig-style: what each phase does.
pub fn explain(inputs: &[Input], config: &Q1Config) -> String {
    let mut s = format!(
        "TPC-H Q1 as map/combine/reduce (DELTA = {} days)\n",
        config.delta_days
    );
    s.push_str(&input_phase(inputs, config));
    s.push_str(&map_phase(config));
    s.push_str(&shuffle_phase(config));
    s.push_str("  reduce ×1 merge     partials by (l_returnflag, l_linestatus)\n");
    s.push_str(
        "            finalize  avg_qty, avg_price, avg_disc = SUM / COUNT (exact quotient)\n",
    );
    s.push_str("  sort      by l_returnflag, l_linestatus\n");
    s
}

/// The input line: files, bytes and splits.
fn input_phase(inputs: &[Input], config: &Q1Config) -> String {
    let splits = plan_splits(
        inputs,
        config.mappers.max(1) * config.splits_per_mapper.max(1),
    );
    let bytes: u64 = inputs.iter().map(|f| f.len).sum();
    format!(
        "  input     {} file(s), {} bytes → {} split(s): byte ranges aligned to line starts\n",
        inputs.len(),
        bytes,
        splits.len()
    )
}

/// The map phase: scan, parse, filter (with the cutoff date), project, combine.
fn map_phase(config: &Q1Config) -> String {
    let cut = cutoff(config.delta_days);
    let date = format!("{}-{:02}-{:02}", cut / 10000, cut / 100 % 100, cut % 100);
    let how = if config.mmap {
        "each split in place through a memory map".to_string()
    } else {
        format!("read each split in {} MiB chunks", CHUNK >> 20)
    };
    let mut s = format!(
        "  map ×{}    scan      {how}; lines that start in the range\n",
        config.mappers.max(1),
    );
    s.push_str("            parse     fields 5–11 from bytes (l_quantity … l_shipdate), decimals as hundredths\n");
    s.push_str(&format!(
        "            filter    l_shipdate <= date '1998-12-01' - interval '{}' day  (= {date})\n",
        config.delta_days
    ));
    s.push_str("            project   l_returnflag, l_linestatus, qty, price, disc, price×(1−disc), price×(1−disc)×(1+tax)\n");
    if config.combiner {
        s.push_str("            combine   partial aggregate by (l_returnflag, l_linestatus): SUMs and COUNT only (i128)\n");
    } else {
        s.push_str(
            "            combine   off (--no-combiner): every row's values go to the reducer\n",
        );
    }
    s
}

/// The shuffle: one partial per split (combiner) or batches of rows, through the bounded channel.
fn shuffle_phase(config: &Q1Config) -> String {
    if config.combiner {
        format!(
            "  shuffle   one partial per split → reducer (bounded channel, {CHANNEL_CAPACITY} messages)\n"
        )
    } else {
        format!(
            "  shuffle   rows in batches of {ROWS_PER_MESSAGE} → reducer (bounded channel, {CHANNEL_CAPACITY} messages)\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q1::testdata::sample_file;

    #[test]
    fn explain_shows_every_phase() {
        let (_d, inputs) = sample_file(10);
        let plan = explain(&inputs, &Q1Config::default());
        for phase in [
            "scan",
            "parse",
            "filter",
            "project",
            "combine",
            "shuffle",
            "merge",
            "sort",
            "1998-09-02",
        ] {
            assert!(plan.contains(phase), "{phase} in {plan}");
        }
    }
}
