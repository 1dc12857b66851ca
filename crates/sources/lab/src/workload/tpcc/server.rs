//! `--server-side` on PostgreSQL: the five TPC-C transactions as PL/pgSQL functions installed in
//! the database ([`install`]), one call per transaction ([`Calls`], [`attempt`]), as HammerDB's
//! TPROC-C does on PostgreSQL by default (its `neword`, `payment`, `ostat`, `delivery`, `slev`).
//! A leaf of `tpcc`: the session uses it.
//!
//! Written for dbscope, with the semantics of the client-side transactions of `txn` (the same
//! inputs, drawn by [`Input::draw`]): New-Order's 1 % with an unused item raises
//! [`ROLLBACK_SQLSTATE`], which aborts the call's implicit transaction (a rollback in
//! `pg_stat_database`, as the client-side ROLLBACK is) and is counted as rolled back, not as an
//! error; Payment and Order-Status by last name take the ⌈n/2⌉-th customer of that name by first
//! name; Delivery skips a district with no new order or whose oldest one a concurrent Delivery
//! took. Each call runs in autocommit: one round trip (Bind/Execute/Sync) per transaction.

use dbscope_db::{ScriptSend, Session, StmtId, TargetResult};

use super::txn::{missing, money, Customer, Ended, Home, Input};

/// The SQLSTATE New-Order's functions raise for the unused item ("Item number is not valid",
/// clause 2.4.2.3): the transaction is rolled back, as the specification asks.
pub const ROLLBACK_SQLSTATE: &str = "TPCRB";

/// The functions, in one script (`CREATE OR REPLACE`: installing again replaces them).
pub const FUNCTIONS: &str = r#"
CREATE OR REPLACE FUNCTION dbscope_tpcc_neword(p_w int, p_d int, p_c int, p_items int[],
    p_supply int[], p_qty int[]) RETURNS numeric LANGUAGE plpgsql AS $f$
DECLARE
  v_discount numeric; v_last varchar; v_credit char(2); v_wtax numeric; v_dtax numeric;
  v_o int; v_n int := array_length(p_items, 1); v_all_local int := 1;
  v_price numeric; v_name varchar; v_idata varchar; v_sdata varchar; v_dist char(24);
  v_amount numeric; v_total numeric := 0;
BEGIN
  SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_wtax
    FROM customer, warehouse
   WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'TPC-C: no customer % in warehouse % district %', p_c, p_w, p_d;
  END IF;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d
    RETURNING d_next_o_id - 1, d_tax INTO v_o, v_dtax;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'TPC-C: no district % in warehouse %', p_d, p_w;
  END IF;
  FOR i IN 1..v_n LOOP
    IF p_supply[i] <> p_w THEN v_all_local := 0; END IF;
  END LOOP;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o, p_d, p_w, p_c, current_timestamp, NULL, v_n, v_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
  FOR i IN 1..v_n LOOP
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_idata FROM item WHERE i_id = p_items[i];
    IF NOT FOUND THEN
      RAISE EXCEPTION 'Item number is not valid' USING ERRCODE = 'TPCRB';
    END IF;
    UPDATE stock SET s_quantity = CASE WHEN s_quantity >= p_qty[i] + 10 THEN s_quantity - p_qty[i]
                                  ELSE s_quantity - p_qty[i] + 91 END,
                     s_ytd = s_ytd + p_qty[i], s_order_cnt = s_order_cnt + 1,
                     s_remote_cnt = s_remote_cnt + CASE WHEN p_supply[i] <> p_w THEN 1 ELSE 0 END
     WHERE s_i_id = p_items[i] AND s_w_id = p_supply[i]
    RETURNING s_data, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                      WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                      WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                      ELSE s_dist_10 END
      INTO v_sdata, v_dist;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'TPC-C: no stock of item % in warehouse %', p_items[i], p_supply[i];
    END IF;
    v_amount := p_qty[i] * v_price;
    v_total := v_total + v_amount;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      VALUES (v_o, p_d, p_w, i, p_items[i], p_supply[i], NULL, p_qty[i], v_amount, v_dist);
  END LOOP;
  -- The order's total as the terminal would show it (clause 2.4.2.2).
  RETURN v_total * (1 - v_discount) * (1 + v_wtax + v_dtax);
END
$f$;

CREATE OR REPLACE FUNCTION dbscope_tpcc_customer(p_w int, p_d int, p_c int, p_last varchar)
    RETURNS int LANGUAGE plpgsql AS $f$
DECLARE v_n int; v_c int;
BEGIN
  IF coalesce(p_last, '') = '' THEN RETURN p_c; END IF;
  SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
  IF v_n = 0 THEN
    RAISE EXCEPTION 'TPC-C: no customer named % in warehouse % district %', p_last, p_w, p_d;
  END IF;
  SELECT c_id INTO v_c FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last
   ORDER BY c_first OFFSET (v_n + 1) / 2 - 1 LIMIT 1;
  RETURN v_c;
END
$f$;

CREATE OR REPLACE FUNCTION dbscope_tpcc_payment(p_w int, p_d int, p_c_w int, p_c_d int, p_c int,
    p_last varchar, p_amount numeric) RETURNS int LANGUAGE plpgsql AS $f$
DECLARE v_wname varchar; v_dname varchar; v_c int; r record; v_data varchar;
BEGIN
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w RETURNING w_name INTO v_wname;
  IF NOT FOUND THEN RAISE EXCEPTION 'TPC-C: no warehouse %', p_w; END IF;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d
    RETURNING d_name INTO v_dname;
  IF NOT FOUND THEN RAISE EXCEPTION 'TPC-C: no district % in warehouse %', p_d, p_w; END IF;
  v_c := dbscope_tpcc_customer(p_c_w, p_c_d, p_c, p_last);
  SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone,
         c_since, c_credit, c_credit_lim, c_discount, c_balance INTO r
    FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'TPC-C: no customer % in warehouse % district %', v_c, p_c_w, p_c_d;
  END IF;
  IF r.c_credit = 'BC' THEN
    -- Bad credit: the payment's details go in front of C_DATA, kept to 500 characters.
    SELECT c_data INTO v_data FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    v_data := substr(format('%s %s %s %s %s %s|%s', v_c, p_c_d, p_c_w, p_d, p_w, p_amount, v_data),
                     1, 500);
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1, c_data = v_data
     WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  ELSE
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1
     WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c, p_c_d, p_c_w, p_d, p_w, current_timestamp, p_amount, v_wname || '    ' || v_dname);
  RETURN v_c;
END
$f$;

CREATE OR REPLACE FUNCTION dbscope_tpcc_ostat(p_w int, p_d int, p_c int, p_last varchar)
    RETURNS int LANGUAGE plpgsql AS $f$
DECLARE v_c int; r record; v_o int; v_carrier int; v_entry timestamp; v_lines int := 0; l record;
BEGIN
  v_c := dbscope_tpcc_customer(p_w, p_d, p_c, p_last);
  SELECT c_balance, c_first, c_middle, c_last INTO r
    FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  SELECT o_id, o_carrier_id, o_entry_d INTO v_o, v_carrier, v_entry FROM orders
   WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'TPC-C: no order of customer % in warehouse % district %', v_c, p_w, p_d;
  END IF;
  FOR l IN SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
            WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o LOOP
    v_lines := v_lines + 1;
  END LOOP;
  RETURN v_lines;
END
$f$;

CREATE OR REPLACE FUNCTION dbscope_tpcc_delivery(p_w int, p_carrier int) RETURNS int
    LANGUAGE plpgsql AS $f$
DECLARE v_o int; v_c int; v_total numeric; v_skipped int := 0;
BEGIN
  FOR v_d IN 1..10 LOOP
    SELECT min(no_o_id) INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d;
    IF v_o IS NULL THEN v_skipped := v_skipped + 1; CONTINUE; END IF;
    DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
    -- A concurrent Delivery of the same warehouse took it: skip the district.
    IF NOT FOUND THEN v_skipped := v_skipped + 1; CONTINUE; END IF;
    UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o
      RETURNING o_c_id INTO v_c;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'TPC-C: no order % in warehouse % district %', v_o, p_w, v_d;
    END IF;
    UPDATE order_line SET ol_delivery_d = current_timestamp
     WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
    SELECT sum(ol_amount) INTO v_total FROM order_line
     WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
    UPDATE customer SET c_balance = c_balance + coalesce(v_total, 0),
                        c_delivery_cnt = c_delivery_cnt + 1
     WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
  END LOOP;
  RETURN v_skipped;
END
$f$;

CREATE OR REPLACE FUNCTION dbscope_tpcc_slev(p_w int, p_d int, p_threshold int) RETURNS bigint
    LANGUAGE plpgsql AS $f$
DECLARE v_next int; v_n bigint;
BEGIN
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  IF NOT FOUND THEN RAISE EXCEPTION 'TPC-C: no district % in warehouse %', p_d, p_w; END IF;
  SELECT count(DISTINCT s_i_id) INTO v_n FROM order_line, stock
   WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
     AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  RETURN v_n;
END
$f$;
"#;

/// Installs (or replaces) the functions on `sess`.
pub fn install(sess: &mut dyn Session) -> TargetResult<()> {
    sess.batch(FUNCTIONS)
}

/// The five calls, prepared on one connection.
pub struct Calls {
    neword: StmtId,
    payment: StmtId,
    ostat: StmtId,
    delivery: StmtId,
    slev: StmtId,
}

impl Calls {
    pub fn prepare(sess: &mut dyn Session) -> TargetResult<Calls> {
        Ok(Calls {
            neword: sess.prepare("SELECT dbscope_tpcc_neword($1, $2, $3, $4, $5, $6)")?,
            payment: sess.prepare("SELECT dbscope_tpcc_payment($1, $2, $3, $4, $5, $6, $7)")?,
            ostat: sess.prepare("SELECT dbscope_tpcc_ostat($1, $2, $3, $4)")?,
            delivery: sess.prepare("SELECT dbscope_tpcc_delivery($1, $2)")?,
            slev: sess.prepare("SELECT dbscope_tpcc_slev($1, $2, $3)")?,
        })
    }
}

/// A PostgreSQL array literal of whole numbers (`{1,2,3}`).
fn array(xs: impl Iterator<Item = i64>) -> String {
    let v: Vec<String> = xs.map(|x| x.to_string()).collect();
    format!("{{{}}}", v.join(","))
}

/// A customer as the functions take it: a number and an empty name, or 0 and a last name.
fn who(c: &Customer) -> (String, &str) {
    match c {
        Customer::Id(c) => (c.to_string(), ""),
        Customer::Last(name) => ("0".to_string(), name.as_str()),
    }
}

/// One call in autocommit (its own transaction); the first row's first column.
fn call(sess: &mut dyn Session, id: StmtId, params: &[&str]) -> TargetResult<String> {
    let mut r = sess.script(ScriptSend::Prepared(id), params, true)?;
    let r = r.pop().unwrap_or_default();
    Ok(r.rows
        .first()
        .and_then(|row| row.first())
        .and_then(|v| v.clone())
        .unwrap_or_default())
}

/// One try of `input` at `home`: one function call, committed, or rolled back (New-Order's
/// unused item, [`ROLLBACK_SQLSTATE`]), or the failure.
pub fn attempt(
    sess: &mut dyn Session,
    calls: &Calls,
    home: &Home,
    input: &Input,
) -> TargetResult<Ended> {
    let w = home.w.to_string();
    let result = match input {
        Input::NewOrder { d, c, lines } => {
            let items = array(lines.iter().map(|l| l.item));
            let supply = array(lines.iter().map(|l| l.supply_w));
            let qty = array(lines.iter().map(|l| l.qty));
            let (d, c) = (d.to_string(), c.to_string());
            call(sess, calls.neword, &[&w, &d, &c, &items, &supply, &qty])
        }
        Input::Payment {
            d,
            c_w,
            c_d,
            customer,
            cents,
        } => {
            let (c, last) = who(customer);
            let amount = money(*cents);
            let (d, c_w, c_d) = (d.to_string(), c_w.to_string(), c_d.to_string());
            call(
                sess,
                calls.payment,
                &[&w, &d, &c_w, &c_d, &c, last, &amount],
            )
        }
        Input::OrderStatus { d, customer } => {
            let (c, last) = who(customer);
            let d = d.to_string();
            call(sess, calls.ostat, &[&w, &d, &c, last])
        }
        Input::Delivery { carrier } => {
            let carrier = carrier.to_string();
            let skipped = call(sess, calls.delivery, &[&w, &carrier])?;
            let skipped = skipped
                .parse()
                .map_err(|_| missing(&format!("Delivery's skipped districts: {skipped:?}")))?;
            return Ok(Ended {
                rolled_back: false,
                skipped,
            });
        }
        Input::StockLevel { d, threshold } => {
            let (d, t) = (d.to_string(), threshold.to_string());
            call(sess, calls.slev, &[&w, &d, &t])
        }
    };
    match result {
        Ok(_) => Ok(Ended::default()),
        Err(e) if e.sqlstate.is_some_and(|s| s.as_str() == ROLLBACK_SQLSTATE) => Ok(Ended {
            rolled_back: true,
            skipped: 0,
        }),
        Err(e) => Err(e),
    }
}
