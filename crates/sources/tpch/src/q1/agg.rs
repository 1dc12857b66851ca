//! Q1's aggregation state and answer: exact sums and counts per group, and the finished rows.
//!
//! Groups are keyed by (l_returnflag, l_linestatus); partials merge in any order; rows print at
//! full precision or at the official answer's.

use crate::decimal::{div_round, exact_avg_f64, format_scaled, round_scaled};
use crate::lineitem::RowValues;

/// Exact Q1 aggregates of one group: sums and counts only, so partials combine in any order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agg {
    /// Σ l_quantity, scale 2.
    pub sum_qty: i64,
    /// Σ l_extendedprice, scale 2.
    pub sum_base_price: i64,
    /// Σ l_extendedprice × (1 − l_discount), scale 4 (i128: overflows i64 near SF 10 000).
    pub sum_disc_price: i128,
    /// Σ l_extendedprice × (1 − l_discount) × (1 + l_tax), scale 6 (i128: i64 overflows near SF 160).
    pub sum_charge: i128,
    /// Σ l_discount, scale 2.
    pub sum_disc: i64,
    /// Rows.
    pub count: u64,
}

impl Agg {
    /// Adds one row.
    #[inline]
    pub fn add(&mut self, r: &RowValues) {
        // One row's products fit in i64 for any TPC-H price; 128-bit only for absurd inputs.
        let (disc_price, charge) = match r
            .price
            .checked_mul(100 - r.disc)
            .and_then(|dp| Some((dp, dp.checked_mul(100 + r.tax)?)))
        {
            Some((dp, ch)) => (dp as i128, ch as i128),
            None => {
                let dp = r.price as i128 * (100 - r.disc) as i128;
                (dp, dp * (100 + r.tax) as i128)
            }
        };
        self.sum_qty += r.qty;
        self.sum_base_price += r.price;
        self.sum_disc_price += disc_price;
        self.sum_charge += charge;
        self.sum_disc += r.disc;
        self.count += 1;
    }

    /// Adds another partial.
    pub fn merge(&mut self, o: &Agg) {
        self.sum_qty += o.sum_qty;
        self.sum_base_price += o.sum_base_price;
        self.sum_disc_price += o.sum_disc_price;
        self.sum_charge += o.sum_charge;
        self.sum_disc += o.sum_disc;
        self.count += o.count;
    }
}

/// Partial aggregates keyed by (l_returnflag, l_linestatus). Q1 has four groups and consecutive
/// rows fall in different groups at random, so a row finds its group through a small direct-mapped
/// index — one compare that almost always hits — rather than a search whose branches the CPU cannot
/// predict (that search cost more than the arithmetic).
#[derive(Clone, Debug)]
pub struct Groups {
    groups: Vec<((u8, u8), Agg)>,
    /// At `slot(key)`: a key (`flag << 8 | status`; `u32::MAX` when empty) and its index in `groups`.
    index: [(u32, u32); 64],
}

impl Default for Groups {
    fn default() -> Self {
        Groups {
            groups: Vec::new(),
            index: [(u32::MAX, 0); 64],
        }
    }
}

/// The index slot of a key: Q1's four keys (A|F, N|F, N|O, R|F) land in four different slots.
#[inline(always)]
fn slot(key: u32) -> usize {
    ((key >> 8) * 8 + (key & 0xff)) as usize & 63
}

impl Groups {
    /// Adds a row to its group.
    #[inline(always)]
    pub fn add(&mut self, r: &RowValues) {
        let key = (r.flag as u32) << 8 | r.status as u32;
        let (k, i) = self.index[slot(key)];
        if k == key {
            if let Some((_, a)) = self.groups.get_mut(i as usize) {
                a.add(r);
                return;
            }
        }
        self.add_new_key(key, r);
    }

    /// A key not in its slot: find (or create) its group, and make the slot point to it.
    #[cold]
    #[inline(never)]
    fn add_new_key(&mut self, key: u32, r: &RowValues) {
        let k = ((key >> 8) as u8, key as u8);
        let i = match self.groups.iter().position(|(g, _)| *g == k) {
            Some(i) => i,
            None => {
                self.groups.push((k, Agg::default()));
                self.groups.len() - 1
            }
        };
        self.index[slot(key)] = (key, i as u32);
        self.groups[i].1.add(r);
    }

    /// Groups (records) held: what a combiner ships to the reducer.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// No group yet.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Merges another partial into this one.
    pub fn merge(&mut self, other: &Groups) {
        for (key, agg) in &other.groups {
            match self.groups.iter_mut().find(|(k, _)| k == key) {
                Some((_, a)) => a.merge(agg),
                None => self.groups.push((*key, *agg)),
            }
        }
    }

    /// The answer: groups sorted by (l_returnflag, l_linestatus).
    pub fn into_answer(mut self) -> Q1Answer {
        self.groups.sort_by_key(|(k, _)| *k);
        Q1Answer {
            rows: self
                .groups
                .into_iter()
                .map(|((flag, status), agg)| Q1Row {
                    returnflag: flag as char,
                    linestatus: status as char,
                    agg,
                })
                .collect(),
        }
    }
}

/// One row of the Q1 answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Q1Row {
    /// l_returnflag.
    pub returnflag: char,
    /// l_linestatus.
    pub linestatus: char,
    /// The exact sums and count.
    pub agg: Agg,
}

/// Column names of Q1's result, in order.
pub const COLUMNS: [&str; 10] = [
    "l_returnflag",
    "l_linestatus",
    "sum_qty",
    "sum_base_price",
    "sum_disc_price",
    "sum_charge",
    "avg_qty",
    "avg_price",
    "avg_disc",
    "count_order",
];

impl Q1Row {
    /// The ten columns at full precision: sums exact at their scale (2, 2, 4, 6 decimals), averages
    /// as the correctly rounded `f64` of the exact quotient (shortest representation).
    pub fn exact_fields(&self) -> [String; 10] {
        let a = &self.agg;
        [
            self.returnflag.to_string(),
            self.linestatus.to_string(),
            format_scaled(a.sum_qty as i128, 2),
            format_scaled(a.sum_base_price as i128, 2),
            format_scaled(a.sum_disc_price, 4),
            format_scaled(a.sum_charge, 6),
            exact_avg_f64(a.sum_qty as i128, 2, a.count).to_string(),
            exact_avg_f64(a.sum_base_price as i128, 2, a.count).to_string(),
            exact_avg_f64(a.sum_disc as i128, 2, a.count).to_string(),
            a.count.to_string(),
        ]
    }

    /// The eight numeric columns rounded half away from zero to hundredths (the official answer
    /// set's precision), then the count.
    pub fn rounded_cents(&self) -> [i128; 8] {
        let a = &self.agg;
        let avg = |sum: i128| div_round(sum * 100, a.count.max(1) as i128 * 100);
        [
            a.sum_qty as i128,
            a.sum_base_price as i128,
            round_scaled(a.sum_disc_price, 4, 2),
            round_scaled(a.sum_charge, 6, 2),
            avg(a.sum_qty as i128),
            avg(a.sum_base_price as i128),
            avg(a.sum_disc as i128),
            a.count as i128,
        ]
    }
}

/// Q1's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Q1Answer {
    /// Rows sorted by (l_returnflag, l_linestatus).
    pub rows: Vec<Q1Row>,
}

impl Q1Answer {
    /// Pipe-delimited table (header line, then one line per group) at full precision.
    pub fn to_table(&self) -> String {
        let mut s = COLUMNS.join("|");
        s.push('\n');
        for r in &self.rows {
            s.push_str(&r.exact_fields().join("|"));
            s.push('\n');
        }
        s
    }

    /// Rows scanned into the groups (rows that passed the filter).
    pub fn rows_aggregated(&self) -> u64 {
        self.rows.iter().map(|r| r.agg.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q1::parse::{cutoff, parse_line};
    use crate::q1::testdata::LINES;

    #[test]
    fn huge_values_take_the_128_bit_path() {
        let r = RowValues {
            flag: b'A',
            status: b'F',
            qty: 100,
            price: 900_000_000_000_000_000,
            disc: 4,
            tax: 8,
        };
        let mut a = Agg::default();
        a.add(&r);
        assert_eq!(a.sum_disc_price, 900_000_000_000_000_000i128 * 96);
        assert_eq!(a.sum_charge, 900_000_000_000_000_000i128 * 96 * 108);
    }

    #[test]
    fn groups_with_colliding_index_slots_stay_exact() {
        // 60 keys in a 64-slot direct-mapped index: many share a slot and evict each other.
        let mut g = Groups::default();
        let mut want: std::collections::BTreeMap<(u8, u8), Agg> = Default::default();
        for i in 0..20_000u64 {
            let r = RowValues {
                flag: b"ANRXYZabcdefghijklmn"[(i * 7 % 20) as usize],
                status: b"FO\xff"[(i * 13 % 3) as usize],
                qty: (i % 50) as i64 * 100,
                price: (i * 7919 % 100_000) as i64,
                disc: (i % 11) as i64,
                tax: (i % 9) as i64,
            };
            g.add(&r);
            want.entry((r.flag, r.status)).or_default().add(&r);
        }
        let got: Vec<((u8, u8), Agg)> = g
            .into_answer()
            .rows
            .iter()
            .map(|r| ((r.returnflag as u8, r.linestatus as u8), r.agg))
            .collect();
        assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn aggregates_are_exact() {
        let cut = cutoff(90);
        let mut g = Groups::default();
        for l in LINES.lines() {
            if let Some(r) = parse_line(l.as_bytes(), cut).unwrap() {
                g.add(&r);
            }
        }
        let a = g.into_answer();
        assert_eq!(a.rows.len(), 2);
        assert_eq!((a.rows[0].returnflag, a.rows[0].linestatus), ('N', 'O'));
        let f = a.rows[0].exact_fields();
        assert_eq!(f[2], "53.00");
        assert_eq!(f[3], "67151.39");
        // 21168.23*0.96 + 45983.16*0.91 = 20321.5008 + 41844.6756
        assert_eq!(f[4], "62166.1764");
        // 20321.5008*1.02 + 41844.6756*1.06 = 20727.930816 + 44355.356136
        assert_eq!(f[5], "65083.286952");
        assert_eq!(f[9], "2");
        assert_eq!(a.rows[1].exact_fields()[9], "1");
    }
}
