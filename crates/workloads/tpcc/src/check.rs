//! The consistency conditions of clause 3.3.2.1–3.3.2.4 as SQL that lists the warehouses (and
//! districts) where a condition fails, so a report can name them. Each query returns rows of
//! (warehouse, district, what was found); no rows means the condition holds. District is 0 for a
//! warehouse-level condition.

/// One condition: its clause, what it says, and the query that finds where it fails.
#[derive(Clone, Copy, Debug)]
pub struct Condition {
    pub clause: &'static str,
    pub says: &'static str,
    pub sql: &'static str,
}

/// Where a condition failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub clause: &'static str,
    pub warehouse: i64,
    pub district: i64,
    pub found: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cond = CONDITIONS
            .iter()
            .find(|c| c.clause == self.clause)
            .map_or("", |c| c.says);
        if self.district == 0 {
            write!(
                f,
                "condition {} ({cond}) fails for warehouse {}: {}",
                self.clause, self.warehouse, self.found
            )
        } else {
            write!(
                f,
                "condition {} ({cond}) fails for warehouse {} district {}: {}",
                self.clause, self.warehouse, self.district, self.found
            )
        }
    }
}

/// The conditions, in clause order. Money is compared to within half a cent: SQLite stores
/// NUMERIC fractions as REAL, so sums of cents are not exact there.
pub const CONDITIONS: [Condition; 4] = [
    Condition {
        clause: "3.3.2.1",
        says: "W_YTD = sum(D_YTD)",
        sql: "SELECT w_id, 0, 'W_YTD ' || CAST(w_ytd AS TEXT) || ' but sum(D_YTD) ' || CAST(s AS TEXT)
              FROM warehouse JOIN (SELECT d_w_id, sum(d_ytd) AS s FROM district GROUP BY d_w_id) d
                ON d.d_w_id = w_id
              WHERE abs(w_ytd - s) > 0.005 ORDER BY w_id",
    },
    Condition {
        clause: "3.3.2.2",
        says: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
        sql: "SELECT d_w_id, d_id, 'D_NEXT_O_ID - 1 = ' || CAST(d_next_o_id - 1 AS TEXT)
                || ', max(O_ID) = ' || COALESCE(CAST(mo AS TEXT), 'none')
                || ', max(NO_O_ID) = ' || COALESCE(CAST(mno AS TEXT), 'none')
              FROM district
              LEFT JOIN (SELECT o_w_id, o_d_id, max(o_id) AS mo FROM orders GROUP BY o_w_id, o_d_id) o
                ON o.o_w_id = d_w_id AND o.o_d_id = d_id
              LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) AS mno FROM new_order
                         GROUP BY no_w_id, no_d_id) n
                ON n.no_w_id = d_w_id AND n.no_d_id = d_id
              WHERE mo IS NULL OR d_next_o_id - 1 <> mo
                 OR (mno IS NOT NULL AND d_next_o_id - 1 <> mno)
              ORDER BY d_w_id, d_id",
    },
    Condition {
        clause: "3.3.2.3",
        says: "max(NO_O_ID) - min(NO_O_ID) + 1 = count of NEW-ORDER rows",
        sql: "SELECT no_w_id, no_d_id, 'max - min + 1 = ' || CAST(max(no_o_id) - min(no_o_id) + 1 AS TEXT)
                || ' but ' || CAST(count(*) AS TEXT) || ' rows'
              FROM new_order GROUP BY no_w_id, no_d_id
              HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*)
              ORDER BY no_w_id, no_d_id",
    },
    Condition {
        clause: "3.3.2.4",
        says: "sum(O_OL_CNT) = count of ORDER-LINE rows",
        sql: "SELECT o.o_w_id, o.o_d_id, 'sum(O_OL_CNT) = ' || CAST(o.s AS TEXT)
                || ' but ' || CAST(COALESCE(l.n, 0) AS TEXT) || ' order lines'
              FROM (SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o
              LEFT JOIN (SELECT ol_w_id, ol_d_id, count(*) AS n FROM order_line
                         GROUP BY ol_w_id, ol_d_id) l
                ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id
              WHERE o.s <> COALESCE(l.n, 0)
              ORDER BY o.o_w_id, o.o_d_id",
    },
];
