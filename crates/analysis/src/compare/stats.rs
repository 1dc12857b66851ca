//! The statistical tests of one event name in both runs.
//!
//! Summaries, Welch's t-test, the rank-sum test and the Hodges–Lehmann shift, bootstrap quantile
//! differences, counts over a threshold.

use dbscope_core::stats::{
    hodges_lehmann, over_threshold, quantile_diff, welch_t_test, wilcoxon_rank_sum, Durations,
    Sample,
};

use super::model::{CompareError, CompareOptions, EventComparison, SideSummary};
use super::verdict::verdict;
use crate::summary::SummaryUs;

fn side_summary(s: &Sample) -> SideSummary {
    let m = s.summary();
    SideSummary {
        n: m.n,
        summary: SummaryUs::from_six(m.six()),
        sd: m.sd,
    }
}

pub(super) fn compare_event(
    name: String,
    mut da: Durations,
    mut db: Durations,
    opts: &CompareOptions,
) -> Result<EventComparison, CompareError> {
    // In memory: the sorted values (8 bytes each), the Hodges–Lehmann selection's row bounds
    // (16 bytes per value of A) and its last candidates (at most twice as many as both sides
    // hold, 8 bytes each), within half the budget (the other half is the process itself and the
    // other names' durations read so far). When that does not fit, or a side is already on disk,
    // both sides are sorted on disk: the shift is then computed from both files.
    let both = da.len() + db.len();
    let need = 8 * both + 16 * da.len() + 16 * both;
    if da.is_spilled() || db.is_spilled() || need > opts.memory_bytes / 2 {
        da.spill().map_err(CompareError::spill)?;
        db.spill().map_err(CompareError::spill)?;
    }
    // Sorting dominates: do A and B at the same time.
    let (sa, sb) = std::thread::scope(|s| {
        let h = s.spawn(|| Sample::from_durations(da, 1000.0));
        let sb = Sample::from_durations(db, 1000.0);
        (h.join().expect("sorting does not panic"), sb)
    });
    let (sa, sb) = (sa?, sb?);
    let (welch, welch_note) = match welch_t_test(&sb, &sa) {
        Ok(w) => (Some(w), None),
        Err(e) => (None, Some(e.to_string())),
    };
    // The rank test runs beside the shift, whose sampling steps leave a core idle.
    let (rank_test, hl_shift_us) = std::thread::scope(|s| {
        let h = s.spawn(|| wilcoxon_rank_sum(&sb, &sa));
        let hl = hodges_lehmann(&sb, &sa);
        (h.join().expect("the rank test does not panic"), hl)
    });
    let hl_shift_us = hl_shift_us?;
    let quantiles = opts
        .quantiles
        .iter()
        .map(|&p| quantile_diff(&sa, &sb, p, &opts.bootstrap))
        .collect::<Result<Vec<_>, _>>()?;
    let outliers = opts.outlier_us.map(|t| {
        [
            over_threshold(sa.ascending(), t),
            over_threshold(sb.ascending(), t),
        ]
    });
    sa.check()?;
    sb.check()?;
    let verdict = verdict(&sa, &sb, welch.as_ref(), &quantiles, opts.noise);
    Ok(EventComparison {
        name,
        a: side_summary(&sa),
        b: side_summary(&sb),
        welch,
        welch_note,
        rank_test,
        hl_shift_us,
        quantiles,
        outliers,
        throughput_per_s: [None, None],
        errors: Default::default(),
        verdict,
    })
}
