//! Property tests of the comparison statistics: ordering, invariance and reproducibility.

use proptest::prelude::*;

use super::quantile_ci::{quantile_diff, BootstrapOptions};
use super::rank::{hodges_lehmann, wilcoxon_rank_sum};
use super::sample::Sample;
use super::ttest::welch_t_test;

/// Latency-like integer values (µs), with repeats, at least two.
fn values() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(0u32..5000, 2..300).prop_map(|v| v.into_iter().map(f64::from).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn quantiles_are_ordered(x in values(), mut ps in prop::collection::vec(0.0f64..=1.0, 1..20)) {
        let s = Sample::new(x).unwrap();
        ps.sort_by(f64::total_cmp);
        let qs: Vec<f64> = ps.iter().map(|&p| s.quantile(p)).collect();
        for w in qs.windows(2) {
            prop_assert!(w[0] <= w[1], "{qs:?}");
        }
        let m = s.summary();
        prop_assert!(m.min <= m.q1 && m.q1 <= m.median && m.median <= m.q3 && m.q3 <= m.max);
        prop_assert!(m.min <= m.mean && m.mean <= m.max);
    }

    #[test]
    fn a_sample_against_itself_shows_no_difference(x in values(), seed in any::<u64>()) {
        let s = Sample::new(x).unwrap();
        if let Ok(w) = welch_t_test(&s, &s) {
            prop_assert_eq!(w.diff, 0.0);
            prop_assert!(w.ci_low <= 0.0 && w.ci_high >= 0.0);
            prop_assert!(w.p_value == 1.0);
        }
        prop_assert_eq!(hodges_lehmann(&s, &s).unwrap(), 0.0);
        prop_assert!(wilcoxon_rank_sum(&s, &s).p_value > 0.9);
        let o = BootstrapOptions { replicates: 200, seed, ..BootstrapOptions::default() };
        for p in [0.5, 0.9, 0.99] {
            let d = quantile_diff(&s, &s, p, &o).unwrap();
            prop_assert_eq!(d.diff, 0.0);
            prop_assert!(d.diff_low <= 0.0 && d.diff_high >= 0.0, "{:?}", d);
        }
    }

    #[test]
    fn shifting_b_moves_hl_and_mean_difference_by_the_shift(
        a in values(), b in values(), c in -2000i32..2000
    ) {
        let (sa, sb) = (Sample::new(a).unwrap(), Sample::new(b.clone()).unwrap());
        let shifted = Sample::new(b.iter().map(|v| v + c as f64).collect()).unwrap();
        let c = c as f64;
        // Integer data: every difference is exact, so the HL shift moves by exactly c.
        prop_assert_eq!(
            hodges_lehmann(&shifted, &sa).unwrap(),
            hodges_lehmann(&sb, &sa).unwrap() + c
        );
        if let (Ok(w0), Ok(w1)) = (welch_t_test(&sb, &sa), welch_t_test(&shifted, &sa)) {
            prop_assert!((w1.diff - (w0.diff + c)).abs() <= 1e-9 * (1.0 + c.abs() + w0.diff.abs()));
            prop_assert!((w1.df - w0.df).abs() <= 1e-9 * w0.df);
        }
    }

    #[test]
    fn bootstrap_with_the_same_seed_gives_the_same_interval(
        a in values(), b in values(), seed in any::<u64>(), p in 0.0f64..=1.0
    ) {
        let (sa, sb) = (Sample::new(a).unwrap(), Sample::new(b).unwrap());
        let o = BootstrapOptions { replicates: 100, seed, ..BootstrapOptions::default() };
        prop_assert_eq!(quantile_diff(&sa, &sb, p, &o).unwrap(), quantile_diff(&sa, &sb, p, &o).unwrap());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any doubles (NaN, infinities, subnormals, extremes) format without panicking, in one width.
    #[test]
    fn format_never_panics(x in prop::collection::vec(any::<f64>(), 0..8), digits in 0usize..25) {
        let f = super::format::format_r(&x, digits);
        prop_assert_eq!(f.len(), x.len());
        if let Some(w) = f.first().map(|s| s.len()) {
            prop_assert!(f.iter().all(|s| s.len() == w), "{f:?}");
        }
        let six: [f64; 6] = std::array::from_fn(|i| x.get(i).copied().unwrap_or(1.0));
        let _ = super::format::r_summary_lines(six);
        let _ = super::ld::mean_r(|| x.iter().copied());
    }
}
