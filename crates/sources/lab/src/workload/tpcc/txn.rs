//! The five TPC-C transactions of clauses 2.4–2.8 as client-side SQL: their inputs drawn as the
//! specification says ([`Input::draw`]), their statements prepared once per connection
//! ([`Stmts`]), and one try of a transaction ([`attempt`]). A leaf of `tpcc`: the session uses it.
//!
//! The statements follow HammerDB's TPROC-C (its PL/pgSQL `neword`, `payment`, `ostat`,
//! `delivery`, `slev`) sent from the client: the district's next order id taken with
//! `UPDATE … RETURNING`, the stock row updated in one statement, Delivery's ten districts in one
//! transaction, a district's oldest new order skipped when a concurrent Delivery took it.

use std::collections::HashMap;

use dbscope_core::{NameId, Recorder};
use dbscope_db::{Dialect, ScriptSend, Session, StmtId, StmtResult, TargetError, TargetResult};
use dbscope_tpcc::random::{last_name, Gen, NuConstants};
use dbscope_tpcc::{TxKind, CUSTOMERS, DISTRICTS, ITEMS};

/// Who a Payment or Order-Status is for: a customer number, or a last name (the middle one of
/// those of that name, by first name: clause 2.5.2.2).
#[derive(Clone, Debug, PartialEq)]
pub enum Customer {
    Id(i64),
    Last(String),
}

/// One order line of a New-Order: item, supplying warehouse, quantity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub item: i64,
    pub supply_w: i64,
    pub qty: i64,
}

/// A transaction's inputs, drawn before its first try so a retry sends the same ones.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    NewOrder {
        d: i64,
        c: i64,
        lines: Vec<Line>,
    },
    Payment {
        d: i64,
        c_w: i64,
        c_d: i64,
        customer: Customer,
        cents: i64,
    },
    OrderStatus {
        d: i64,
        customer: Customer,
    },
    Delivery {
        carrier: i64,
    },
    StockLevel {
        d: i64,
        threshold: i64,
    },
}

/// A session's home: its warehouse, how many there are, and its Stock-Level district (constant
/// per terminal, clause 2.8.1.2).
#[derive(Clone, Copy, Debug)]
pub struct Home {
    pub w: i64,
    pub warehouses: i64,
    pub stock_district: i64,
}

impl Home {
    /// A warehouse other than the home one, uniform (only called with 2 or more warehouses).
    fn other(&self, g: &mut Gen) -> i64 {
        let x = g.int(1, self.warehouses - 1);
        if x >= self.w {
            x + 1
        } else {
            x
        }
    }
}

/// 60 % by last name (NURand(255, 0, 999) syllables), else by NURand(1023, 1, 3000) number.
fn customer(g: &mut Gen, nu: &NuConstants) -> Customer {
    if g.int(1, 100) <= 60 {
        Customer::Last(last_name(g.nurand(255, 0, 999, nu)))
    } else {
        Customer::Id(g.nurand(1023, 1, CUSTOMERS, nu))
    }
}

impl Input {
    /// The inputs of a transaction of `kind` for a session at `home`, with the run's constants.
    pub fn draw(kind: TxKind, home: &Home, g: &mut Gen, nu: &NuConstants) -> Input {
        let remote = home.warehouses > 1;
        match kind {
            TxKind::NewOrder => {
                let d = g.int(1, DISTRICTS);
                let c = g.nurand(1023, 1, CUSTOMERS, nu);
                let n = g.int(5, 15);
                // 1 % of New-Orders name an unused item last and roll back (clause 2.4.1.4).
                let rollback = g.int(1, 100) == 1;
                let mut lines: Vec<Line> = (0..n)
                    .map(|i| {
                        let item = if rollback && i == n - 1 {
                            ITEMS + 1
                        } else {
                            g.nurand(8191, 1, ITEMS, nu)
                        };
                        // 1 % of lines from another warehouse (clause 2.4.1.5).
                        let supply_w = if remote && g.int(1, 100) == 1 {
                            home.other(g)
                        } else {
                            home.w
                        };
                        Line {
                            item,
                            supply_w,
                            qty: g.int(1, 10),
                        }
                    })
                    .collect();
                // Stock rows locked in one order by every session: no deadlock between two
                // New-Orders (HammerDB sorts them too). The unused item stays after the others
                // of its warehouse, so the rollback still comes after real work.
                lines.sort_by_key(|l| (l.supply_w, l.item));
                Input::NewOrder { d, c, lines }
            }
            TxKind::Payment => {
                let d = g.int(1, DISTRICTS);
                // 85 % at the home warehouse, 15 % a customer of another (clause 2.5.1.2).
                let (c_w, c_d) = if !remote || g.int(1, 100) <= 85 {
                    (home.w, d)
                } else {
                    (home.other(g), g.int(1, DISTRICTS))
                };
                Input::Payment {
                    d,
                    c_w,
                    c_d,
                    customer: customer(g, nu),
                    cents: g.int(100, 500_000),
                }
            }
            TxKind::OrderStatus => Input::OrderStatus {
                d: g.int(1, DISTRICTS),
                customer: customer(g, nu),
            },
            TxKind::Delivery => Input::Delivery {
                carrier: g.int(1, 10),
            },
            TxKind::StockLevel => Input::StockLevel {
                d: home.stock_district,
                threshold: g.int(10, 20),
            },
        }
    }
}

/// The transactions' statements, prepared on one connection.
pub struct Stmts {
    no_cust: StmtId,
    no_dist: StmtId,
    no_order: StmtId,
    no_new: StmtId,
    no_item: StmtId,
    /// Per district 1..=10: the stock update returning that district's S_DIST_xx.
    no_stock: Vec<StmtId>,
    no_line: StmtId,
    pay_w: StmtId,
    pay_d: StmtId,
    by_name: StmtId,
    pay_c: StmtId,
    pay_cdata: StmtId,
    pay_upd_bc: StmtId,
    pay_upd: StmtId,
    pay_hist: StmtId,
    os_c: StmtId,
    os_o: StmtId,
    os_ol: StmtId,
    dl_min: StmtId,
    dl_del: StmtId,
    dl_o: StmtId,
    dl_ol: StmtId,
    dl_sum: StmtId,
    dl_c: StmtId,
    sl_d: StmtId,
    sl_count: StmtId,
    /// MariaDB/MySQL, which has no `UPDATE … RETURNING`: what the PostgreSQL statements return,
    /// read with a SELECT (`FOR UPDATE` before the update when the value read is the one the
    /// update changes, so no other transaction changes it between the two).
    my: Option<MyReads>,
    /// Each statement's name in `--per-statement` events (`update_stock` …).
    labels: Vec<(StmtId, &'static str)>,
}

/// `--per-statement`: the event names of one transaction type, `<type>.<statement>`, by
/// statement (its [`StmtId`]), and its begin, commit and rollback.
#[derive(Clone, Debug, Default)]
pub struct StmtNames {
    pub by_stmt: HashMap<usize, NameId>,
    pub begin: NameId,
    pub commit: NameId,
    pub rollback: NameId,
}

impl StmtNames {
    /// The names of type `kind`'s statements, interned in `rec`.
    pub fn new(kind: TxKind, st: &Stmts, rec: &Recorder) -> StmtNames {
        let n = |what: &str| rec.name(&format!("{}.{what}", kind.name()));
        StmtNames {
            by_stmt: st.labels.iter().map(|(id, l)| (id.0, n(l))).collect(),
            begin: n("begin"),
            commit: n("commit"),
            rollback: n("rollback"),
        }
    }
}

/// Where one try's statements go: the session, and with `--per-statement` the recorder that
/// makes each of them an event of its own beside the transaction's.
pub struct Cx<'a> {
    pub sess: &'a mut dyn Session,
    pub events: Option<(&'a mut Recorder, &'a StmtNames)>,
}

impl Cx<'_> {
    /// Runs `f` on the session, an event named `name` when statements are recorded.
    fn timed<T>(
        &mut self,
        name: impl Fn(&StmtNames) -> Option<NameId>,
        rows: impl Fn(&T) -> u64,
        f: impl FnOnce(&mut dyn Session) -> TargetResult<T>,
    ) -> TargetResult<T> {
        let Some((rec, names)) = self.events.as_mut() else {
            return f(&mut *self.sess);
        };
        let start = rec.now();
        let r = f(&mut *self.sess);
        let end = rec.now();
        if let Some(name) = name(names) {
            let (outcome, n) = match &r {
                Ok(v) => (0, rows(v)),
                Err(e) => (rec.outcome(&e.class), 0),
            };
            // The transaction's event carries the operation's schedule; its statements do not.
            rec.push_unpaced(name, start, end, outcome, n);
        }
        r
    }

    fn begin(&mut self) -> TargetResult<()> {
        self.timed(|n| Some(n.begin), |_| 0, |s| s.begin())
    }

    fn commit(&mut self) -> TargetResult<()> {
        self.timed(|n| Some(n.commit), |_| 0, |s| s.commit())
    }

    fn rollback(&mut self) -> TargetResult<()> {
        self.timed(|n| Some(n.rollback), |_| 0, |s| s.rollback())
    }
}

/// The reads MariaDB/MySQL's New-Order, Payment and Delivery make beside their updates.
struct MyReads {
    /// District's next order id and tax, `FOR UPDATE`, before the increment.
    no_dist: StmtId,
    /// Per district 1..=10: the stock row's S_DATA and S_DIST_xx, `FOR UPDATE`.
    no_stock: Vec<StmtId>,
    /// Warehouse's and district's names and addresses, after their YTD updates.
    pay_w: StmtId,
    pay_d: StmtId,
    /// The delivered order's customer, after its carrier update.
    dl_o: StmtId,
}

impl Stmts {
    /// Prepares every statement on `sess` (PostgreSQL `$n`; SQLite `?n`; MariaDB/MySQL `$n`,
    /// which its session rewrites as `?`, and without `RETURNING`).
    pub fn prepare(sess: &mut dyn Session, dialect: Dialect) -> TargetResult<Stmts> {
        let mysql = dialect == Dialect::Mysql;
        // `RETURNING …` where the dialect has it; MySQL reads the same columns in `MyReads`.
        let ret = |cols: &str| match mysql {
            true => String::new(),
            false => format!(" RETURNING {cols}"),
        };
        let mut labels = Vec::new();
        let mut p = |label: &'static str, sql: &str| {
            let sql = match dialect {
                Dialect::Sqlite => sql.replace('$', "?"),
                _ => sql.to_string(),
            };
            let id = sess.prepare(&sql)?;
            labels.push((id, label));
            Ok::<_, TargetError>(id)
        };
        let mut no_stock = Vec::with_capacity(DISTRICTS as usize);
        for d in 1..=DISTRICTS {
            no_stock.push(p(
                "update_stock",
                &format!(
                "UPDATE stock SET s_quantity = CASE WHEN s_quantity >= $1 + 10 THEN s_quantity - $1 \
                 ELSE s_quantity - $1 + 91 END, s_ytd = s_ytd + $1, s_order_cnt = s_order_cnt + 1, \
                 s_remote_cnt = s_remote_cnt + $2 WHERE s_i_id = $3 AND s_w_id = $4{}",
                    ret(&format!("s_data, s_dist_{d:02}"))
                ),
            )?);
        }
        let my = match mysql {
            false => None,
            true => Some(MyReads {
                no_dist: p(
                    "select_district_for_update",
                    "SELECT d_next_o_id, d_tax FROM district \
                            WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE",
                )?,
                no_stock: (1..=DISTRICTS)
                    .map(|d| {
                        p(
                            "select_stock_for_update",
                            &format!(
                                "SELECT s_data, s_dist_{d:02} FROM stock \
                             WHERE s_i_id = $1 AND s_w_id = $2 FOR UPDATE"
                            ),
                        )
                    })
                    .collect::<TargetResult<_>>()?,
                pay_w: p(
                    "select_warehouse",
                    "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip \
                          FROM warehouse WHERE w_id = $1",
                )?,
                pay_d: p(
                    "select_district",
                    "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip \
                          FROM district WHERE d_w_id = $1 AND d_id = $2",
                )?,
                dl_o: p(
                    "select_order_customer",
                    "SELECT o_c_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3",
                )?,
            }),
        };
        let mut st = Stmts {
            labels: Vec::new(),
            my,
            no_cust: p(
                "select_customer_warehouse",
                "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
                        WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3",
            )?,
            no_dist: p(
                "update_district",
                &format!(
                    "UPDATE district SET d_next_o_id = d_next_o_id + 1 \
                 WHERE d_w_id = $1 AND d_id = $2{}",
                    ret("d_next_o_id - 1, d_tax")
                ),
            )?,
            no_order: p(
                "insert_orders",
                "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, \
                         o_carrier_id, o_ol_cnt, o_all_local) \
                         VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, NULL, $5, $6)",
            )?,
            no_new: p(
                "insert_new_order",
                "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)",
            )?,
            no_item: p(
                "select_item",
                "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1",
            )?,
            no_stock,
            no_line: p(
                "insert_order_line",
                "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, \
                        ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) \
                        VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9)",
            )?,
            pay_w: p(
                "update_warehouse",
                &format!(
                    "UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2{}",
                    ret("w_name, w_street_1, w_street_2, w_city, w_state, w_zip")
                ),
            )?,
            pay_d: p(
                "update_district",
                &format!(
                    "UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3{}",
                    ret("d_name, d_street_1, d_street_2, d_city, d_state, d_zip")
                ),
            )?,
            by_name: p(
                "select_customer_by_name",
                "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 \
                        AND c_last = $3 ORDER BY c_first",
            )?,
            pay_c: p(
                "select_customer",
                "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, \
                      c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance \
                      FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            )?,
            pay_cdata: p(
                "select_customer_data",
                "SELECT c_data FROM customer \
                          WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            )?,
            pay_upd_bc: p(
                "update_customer_bad_credit",
                "UPDATE customer SET c_balance = c_balance - $1, \
                           c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1, \
                           c_data = $2 WHERE c_w_id = $3 AND c_d_id = $4 AND c_id = $5",
            )?,
            pay_upd: p(
                "update_customer",
                "UPDATE customer SET c_balance = c_balance - $1, \
                        c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1 \
                        WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
            )?,
            pay_hist: p(
                "insert_history",
                "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, \
                         h_date, h_amount, h_data) \
                         VALUES ($1, $2, $3, $4, $5, CURRENT_TIMESTAMP, $6, $7)",
            )?,
            os_c: p(
                "select_customer",
                "SELECT c_balance, c_first, c_middle, c_last FROM customer \
                     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            )?,
            os_o: p(
                "select_last_order",
                "SELECT o_id, o_carrier_id, o_entry_d FROM orders \
                     WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1",
            )?,
            os_ol: p(
                "select_order_lines",
                "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d \
                      FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            )?,
            dl_min: p(
                "select_oldest_new_order",
                "SELECT min(no_o_id) FROM new_order WHERE no_w_id = $1 AND no_d_id = $2",
            )?,
            dl_del: p(
                "delete_new_order",
                "DELETE FROM new_order \
                       WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3",
            )?,
            dl_o: p(
                "update_orders",
                &format!(
                    "UPDATE orders SET o_carrier_id = $1 \
                 WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4{}",
                    ret("o_c_id")
                ),
            )?,
            dl_ol: p(
                "update_order_lines",
                "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP \
                      WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            )?,
            dl_sum: p(
                "select_order_lines_sum",
                "SELECT sum(ol_amount) FROM order_line \
                       WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            )?,
            dl_c: p(
                "update_customer",
                "UPDATE customer SET c_balance = c_balance + $1, \
                     c_delivery_cnt = c_delivery_cnt + 1 \
                     WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
            )?,
            sl_d: p(
                "select_district",
                "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2",
            )?,
            sl_count: p(
                "count_low_stock",
                "SELECT count(DISTINCT s_i_id) FROM order_line, stock \
                         WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 \
                         AND ol_o_id >= $3 - 20 AND s_w_id = $1 AND s_i_id = ol_i_id \
                         AND s_quantity < $4",
            )?,
        };
        st.labels = labels;
        Ok(st)
    }
}

/// How a transaction that did not fail ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Ended {
    /// A New-Order that named the unused item and was rolled back, as the specification asks.
    pub rolled_back: bool,
    /// Delivery: districts with no undelivered order (or whose oldest one a concurrent Delivery
    /// took), skipped.
    pub skipped: u64,
}

/// Runs one prepared statement with `params`; its rows.
fn q(cx: &mut Cx, id: StmtId, params: &[&str]) -> TargetResult<StmtResult> {
    cx.timed(
        |n| n.by_stmt.get(&id.0).copied(),
        |r: &StmtResult| match r.rows.len() {
            0 => r.affected,
            n => n as u64,
        },
        |s| {
            let mut r = s.script(ScriptSend::Prepared(id), params, true)?;
            Ok(r.pop().unwrap_or_default())
        },
    )
}

/// `q` with parameters of any displayable type.
macro_rules! run {
    ($cx:expr, $id:expr $(, $p:expr)+) => {{
        let owned = [$($p.to_string()),+];
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        q($cx, $id, &refs)
    }};
}

/// An answer the transaction cannot go on with (a row missing): a `check:tpcc` failure.
pub(super) fn missing(what: &str) -> TargetError {
    TargetError {
        class: "check:tpcc".into(),
        sqlstate: None,
        mysql_code: None,
        message: format!("TPC-C: {what}"),
        connection_lost: false,
    }
}

/// Row `row`, column `col` of `r` as text (`None` for NULL); an error when the row is missing.
fn cell<'a>(
    r: &'a StmtResult,
    row: usize,
    col: usize,
    what: &str,
) -> TargetResult<Option<&'a str>> {
    r.rows
        .get(row)
        .and_then(|x| x.get(col))
        .map(|v| v.as_deref())
        .ok_or_else(|| missing(what))
}

fn int(r: &StmtResult, row: usize, col: usize, what: &str) -> TargetResult<i64> {
    let v = cell(r, row, col, what)?.unwrap_or("");
    v.parse()
        .map_err(|_| missing(&format!("{what}: expected a whole number, got {v:?}")))
}

fn num(r: &StmtResult, row: usize, col: usize, what: &str) -> TargetResult<f64> {
    let v = cell(r, row, col, what)?.unwrap_or("");
    v.parse()
        .map_err(|_| missing(&format!("{what}: expected a number, got {v:?}")))
}

/// Cents as a decimal with two digits (`123.45`).
pub(super) fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

/// The customer number of `who` in warehouse `w` district `d`: by last name, the one at
/// position ⌈n/2⌉ of those of that name ordered by first name (clause 2.5.2.2).
fn customer_id(cx: &mut Cx, st: &Stmts, w: i64, d: i64, who: &Customer) -> TargetResult<i64> {
    match who {
        Customer::Id(c) => Ok(*c),
        Customer::Last(name) => {
            let r = run!(cx, st.by_name, w, d, name)?;
            let n = r.rows.len();
            if n == 0 {
                return Err(missing(&format!(
                    "no customer named {name} in warehouse {w} district {d}"
                )));
            }
            int(&r, n.div_ceil(2) - 1, 0, "customer by last name")
        }
    }
}

/// One try of `input` in a transaction of its own at `home`: committed, rolled back (the 1 % of
/// New-Orders), or the failure (the caller rolls back).
pub fn attempt(cx: &mut Cx, st: &Stmts, home: &Home, input: &Input) -> TargetResult<Ended> {
    cx.begin()?;
    let w = home.w;
    let ended = match input {
        Input::NewOrder { d, c, lines } => new_order(cx, st, w, *d, *c, lines)?,
        Input::Payment {
            d,
            c_w,
            c_d,
            customer,
            cents,
        } => {
            let amount = money(*cents);
            let mut wh = run!(cx, st.pay_w, amount, w)?;
            if let Some(my) = &st.my {
                wh = run!(cx, my.pay_w, w)?;
            }
            let w_name = cell(&wh, 0, 0, "warehouse")?.unwrap_or("").to_string();
            let mut di = run!(cx, st.pay_d, amount, w, d)?;
            if let Some(my) = &st.my {
                di = run!(cx, my.pay_d, w, d)?;
            }
            let d_name = cell(&di, 0, 0, "district")?.unwrap_or("").to_string();
            let c = customer_id(cx, st, *c_w, *c_d, customer)?;
            let cu = run!(cx, st.pay_c, c_w, c_d, c)?;
            let credit = cell(&cu, 0, 10, "customer")?.unwrap_or("").to_string();
            if credit == "BC" {
                // Bad credit: the payment's details go in front of C_DATA, kept to 500 characters.
                let old = run!(cx, st.pay_cdata, c_w, c_d, c)?;
                let old = cell(&old, 0, 0, "customer's data")?.unwrap_or("");
                let mut data = format!("{c} {c_d} {c_w} {d} {w} {amount}|{old}");
                if let Some((cut, _)) = data.char_indices().nth(500) {
                    data.truncate(cut);
                }
                run!(cx, st.pay_upd_bc, amount, data, c_w, c_d, c)?;
            } else {
                run!(cx, st.pay_upd, amount, c_w, c_d, c)?;
            }
            let h_data = format!("{w_name}    {d_name}");
            run!(cx, st.pay_hist, c, c_d, c_w, d, w, amount, h_data)?;
            Ended::default()
        }
        Input::OrderStatus { d, customer } => {
            let c = customer_id(cx, st, w, *d, customer)?;
            run!(cx, st.os_c, w, d, c)?;
            let o = run!(cx, st.os_o, w, d, c)?;
            let o_id = int(&o, 0, 0, "the customer's last order")?;
            run!(cx, st.os_ol, w, d, o_id)?;
            Ended::default()
        }
        Input::Delivery { carrier } => {
            let mut skipped = 0;
            for d in 1..=DISTRICTS {
                let m = run!(cx, st.dl_min, w, d)?;
                let Some(o_id) = cell(&m, 0, 0, "oldest new order")? else {
                    skipped += 1;
                    continue;
                };
                let o_id: i64 = o_id
                    .parse()
                    .map_err(|_| missing(&format!("oldest new order {o_id:?}")))?;
                // A concurrent Delivery of the same warehouse may have taken it: skip the district.
                if run!(cx, st.dl_del, w, d, o_id)?.affected == 0 {
                    skipped += 1;
                    continue;
                }
                let mut o = run!(cx, st.dl_o, carrier, w, d, o_id)?;
                if let Some(my) = &st.my {
                    o = run!(cx, my.dl_o, w, d, o_id)?;
                }
                let c = int(&o, 0, 0, "the delivered order")?;
                run!(cx, st.dl_ol, w, d, o_id)?;
                let s = run!(cx, st.dl_sum, w, d, o_id)?;
                let total = cell(&s, 0, 0, "the order's lines")?
                    .unwrap_or("0")
                    .to_string();
                run!(cx, st.dl_c, total, w, d, c)?;
            }
            Ended {
                rolled_back: false,
                skipped,
            }
        }
        Input::StockLevel { d, threshold } => {
            let r = run!(cx, st.sl_d, w, d)?;
            let next = int(&r, 0, 0, "district")?;
            run!(cx, st.sl_count, w, d, next, threshold)?;
            Ended::default()
        }
    };
    if ended.rolled_back {
        cx.rollback()?;
    } else {
        cx.commit()?;
    }
    Ok(ended)
}

/// New-Order (clause 2.4.2): the order, its lines and stock; rolled back at the unused item.
fn new_order(
    cx: &mut Cx,
    st: &Stmts,
    w: i64,
    d: i64,
    c: i64,
    lines: &[Line],
) -> TargetResult<Ended> {
    let cw = run!(cx, st.no_cust, w, d, c)?;
    let discount = num(&cw, 0, 0, "customer and warehouse")?;
    let w_tax = num(&cw, 0, 3, "customer and warehouse")?;
    // The order id: PostgreSQL's and SQLite's update returns the number it took; MySQL reads it
    // with FOR UPDATE first (the same number: the row stays locked until the commit).
    let dr = match &st.my {
        Some(my) => {
            let r = run!(cx, my.no_dist, w, d)?;
            run!(cx, st.no_dist, w, d)?;
            r
        }
        None => run!(cx, st.no_dist, w, d)?,
    };
    let o_id = int(&dr, 0, 0, "district")?;
    let d_tax = num(&dr, 0, 1, "district")?;
    let all_local = i64::from(lines.iter().all(|l| l.supply_w == w));
    run!(cx, st.no_order, o_id, d, w, c, lines.len(), all_local)?;
    run!(cx, st.no_new, o_id, d, w)?;
    let mut total_cents = 0i64;
    for (n, l) in lines.iter().enumerate() {
        let it = run!(cx, st.no_item, l.item)?;
        if it.rows.is_empty() {
            // The unused item: "Item number is not valid", the whole order rolled back.
            return Ok(Ended {
                rolled_back: true,
                skipped: 0,
            });
        }
        let price = num(&it, 0, 0, "item")?;
        let remote = i64::from(l.supply_w != w);
        let read = match &st.my {
            Some(my) => Some(run!(cx, my.no_stock[(d - 1) as usize], l.item, l.supply_w)?),
            None => None,
        };
        let s = run!(
            cx,
            st.no_stock[(d - 1) as usize],
            l.qty,
            remote,
            l.item,
            l.supply_w
        )?;
        let s = read.unwrap_or(s);
        let dist_info = cell(&s, 0, 1, "stock")?.unwrap_or("").to_string();
        let amount = (l.qty as f64 * price * 100.0).round() as i64;
        total_cents += amount;
        run!(
            cx,
            st.no_line,
            o_id,
            d,
            w,
            n + 1,
            l.item,
            l.supply_w,
            l.qty,
            money(amount),
            dist_info
        )?;
    }
    // The order's total as the terminal would show it (clause 2.4.2.2); not stored.
    let _total = total_cents as f64 * (1.0 - discount) * (1.0 + w_tax + d_tax);
    Ok(Ended::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_follow_the_specification() {
        let home = Home {
            w: 2,
            warehouses: 3,
            stock_district: 4,
        };
        let mut g = Gen::new(5);
        let nu = NuConstants::draw(&mut g);
        let (mut rollbacks, mut by_name, mut payments, mut remote) = (0, 0, 0, 0);
        for _ in 0..20_000 {
            match Input::draw(TxKind::NewOrder, &home, &mut g, &nu) {
                Input::NewOrder { d, c, lines } => {
                    assert!((1..=10).contains(&d) && (1..=3000).contains(&c));
                    assert!((5..=15).contains(&lines.len()));
                    assert!(lines
                        .iter()
                        .all(|l| (1..=10).contains(&l.qty) && (1..=3).contains(&l.supply_w)));
                    rollbacks += lines.iter().filter(|l| l.item == ITEMS + 1).count();
                }
                other => panic!("{other:?}"),
            }
            match Input::draw(TxKind::Payment, &home, &mut g, &nu) {
                Input::Payment {
                    c_w,
                    customer,
                    cents,
                    ..
                } => {
                    payments += 1;
                    assert!((100..=500_000).contains(&cents));
                    remote += i32::from(c_w != 2);
                    by_name += i32::from(matches!(customer, Customer::Last(_)));
                }
                other => panic!("{other:?}"),
            }
        }
        // 1 % rolled back, 60 % by name, 15 % remote: within a few standard deviations.
        assert!((140..=260).contains(&rollbacks), "{rollbacks}");
        assert!(
            (11_600..=12_400).contains(&by_name),
            "{by_name} of {payments}"
        );
        assert!((2_700..=3_300).contains(&remote), "{remote}");
        for _ in 0..100 {
            match Input::draw(TxKind::StockLevel, &home, &mut g, &nu) {
                Input::StockLevel { d, threshold } => {
                    assert_eq!(d, 4, "the session's own district");
                    assert!((10..=20).contains(&threshold));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn money_has_two_digits() {
        assert_eq!(money(12345), "123.45");
        assert_eq!(money(5), "0.05");
        assert_eq!(money(-150), "-1.50");
    }
}
