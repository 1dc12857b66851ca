//! The figures users of HammerDB and go-tpc read first for a `tpcc` run: NOPM (new orders per
//! minute from the schema's `sum(d_next_o_id)`), TPM (the database's commits and rollbacks per
//! minute), tpmC and efficiency (go-tpc's), the New-Orders committed and rolled back, and whether
//! the consistency conditions held. Read from the run's counter sections `tpcc` and `tpcc_check`.

use serde::Serialize;

use dbscope_core::{CounterSection, CounterValue};

use crate::text::{thousands, thousands_f1};

/// The headline figures of a tpcc run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpccFigures {
    /// New orders per minute, from `sum(d_next_o_id)` before and after (HammerDB's NOPM).
    pub nopm: Option<f64>,
    /// Transactions per minute as the database counts them (HammerDB's TPM).
    pub tpm: Option<f64>,
    /// Where TPM's count comes from.
    pub tpm_source: Option<String>,
    /// New-Orders dbscope saw commit per minute (go-tpc's tpmC).
    pub tpmc: Option<f64>,
    /// tpmC against 12.86 per warehouse, in percent (go-tpc's efficiency).
    pub efficiency_pct: Option<f64>,
    /// New orders by the schema.
    pub new_orders: Option<i64>,
    /// New-Orders dbscope saw commit.
    pub new_orders_committed: Option<i64>,
    /// New-Orders rolled back for the unused item (not errors).
    pub new_orders_rolled_back: Option<i64>,
    /// Whether the consistency conditions held after the run; `None` when not checked.
    pub consistent: Option<bool>,
}

fn find<'a>(s: &'a CounterSection, key: &str) -> Option<&'a CounterValue> {
    s.counters.iter().find(|c| c.key == key).map(|c| &c.value)
}

fn float(s: &CounterSection, key: &str) -> Option<f64> {
    match find(s, key)? {
        CounterValue::Float(v) => Some(*v),
        CounterValue::Int(v) => Some(*v as f64),
        _ => None,
    }
}

fn int(s: &CounterSection, key: &str) -> Option<i64> {
    match find(s, key)? {
        CounterValue::Int(v) => Some(*v),
        _ => None,
    }
}

impl TpccFigures {
    /// The figures of a run whose counters hold section `tpcc`; `None` for other runs.
    pub fn from_counters(sections: &[CounterSection]) -> Option<TpccFigures> {
        let s = sections.iter().find(|s| s.key == "tpcc")?;
        let consistent = sections
            .iter()
            .find(|s| s.key == "tpcc_check")
            .and_then(|c| match find(c, "held") {
                Some(CounterValue::Bool(b)) => Some(*b),
                _ => None,
            });
        Some(TpccFigures {
            nopm: float(s, "nopm"),
            tpm: float(s, "tpm"),
            tpm_source: match find(s, "tpm_source") {
                Some(CounterValue::Text(t)) => Some(t.clone()),
                _ => None,
            },
            tpmc: float(s, "tpmc"),
            efficiency_pct: float(s, "efficiency_pct"),
            new_orders: int(s, "new_orders"),
            new_orders_committed: int(s, "new_orders_committed"),
            new_orders_rolled_back: int(s, "new_orders_rolled_back"),
            consistent,
        })
    }

    /// The figures as the report's first lines.
    pub fn render(&self) -> String {
        let per_min = |v: Option<f64>| v.map_or("-".to_string(), |v| thousands(v.round() as u64));
        let n = |v: Option<i64>| v.map_or("-".to_string(), |v| thousands(v.max(0) as u64));
        let mut out = format!(
            "TPC-C     NOPM {}   TPM {}",
            per_min(self.nopm),
            per_min(self.tpm)
        );
        if let Some(c) = self.tpmc {
            out.push_str(&format!("   tpmC {}", thousands_f1(c)));
        }
        if let Some(e) = self.efficiency_pct {
            out.push_str(&format!("   efficiency {e:.2} %"));
        }
        out.push('\n');
        out.push_str(&format!(
            "          new orders {} (schema) = {} committed; {} rolled back (unused item, not errors)\n",
            n(self.new_orders),
            n(self.new_orders_committed),
            n(self.new_orders_rolled_back)
        ));
        if let Some(src) = &self.tpm_source {
            out.push_str(&format!("          TPM from {src}\n"));
        }
        out.push_str(match self.consistent {
            Some(true) => "          consistency conditions 3.3.2.1-3.3.2.4 hold\n",
            Some(false) => {
                "          CONSISTENCY CONDITIONS FAILED after the run (section tpcc_check)\n"
            }
            None => "          consistency not checked\n",
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::Counter;

    #[test]
    fn figures_from_the_sections() {
        let tpcc = CounterSection {
            key: "tpcc".into(),
            counters: vec![
                Counter::new("nopm", "NOPM", CounterValue::Float(12_324.4), ""),
                Counter::new("tpm", "TPM", CounterValue::Float(30_441.6), ""),
                Counter::new("new_orders", "", CounterValue::Int(1059), ""),
                Counter::new("new_orders_committed", "", CounterValue::Int(1059), ""),
                Counter::new("new_orders_rolled_back", "", CounterValue::Int(6), ""),
            ],
            ..Default::default()
        };
        let check = CounterSection {
            key: "tpcc_check".into(),
            counters: vec![Counter::new("held", "", CounterValue::Bool(false), "")],
            ..Default::default()
        };
        let f = TpccFigures::from_counters(&[tpcc.clone(), check]).unwrap();
        assert_eq!(f.nopm, Some(12_324.4));
        assert_eq!(f.consistent, Some(false));
        let text = f.render();
        assert!(
            text.starts_with("TPC-C     NOPM 12,324   TPM 30,442\n"),
            "{text}"
        );
        assert!(
            text.contains("1,059 (schema) = 1,059 committed; 6 rolled back"),
            "{text}"
        );
        assert!(text.contains("FAILED"), "{text}");
        assert_eq!(
            TpccFigures::from_counters(&[tpcc]).unwrap().consistent,
            None
        );
        assert!(TpccFigures::from_counters(&[]).is_none());
    }
}
