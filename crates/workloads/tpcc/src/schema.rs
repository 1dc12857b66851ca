//! The nine tables of clause 1.3 with their primary keys, and the two secondary indexes the
//! transactions need (customer by last name for Payment and Order-Status; orders by customer for
//! Order-Status), as HammerDB creates them.

/// Which SQL the schema is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Sqlite,
    /// MariaDB/MySQL: InnoDB tables, DATETIME for TIMESTAMP (a TIMESTAMP column there may
    /// default to updating itself on every UPDATE of its row).
    Mysql,
}

/// The tables, in the order they are created (and dropped in reverse).
pub const TABLES: [&str; 9] = [
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "item",
    "stock",
];

const DDL: &str = "
CREATE TABLE warehouse (w_id INTEGER NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20),
  w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax NUMERIC(4,4),
  w_ytd NUMERIC(12,2), PRIMARY KEY (w_id));
CREATE TABLE district (d_id INTEGER NOT NULL, d_w_id INTEGER NOT NULL, d_name VARCHAR(10),
  d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9),
  d_tax NUMERIC(4,4), d_ytd NUMERIC(12,2), d_next_o_id INTEGER, PRIMARY KEY (d_w_id, d_id));
CREATE TABLE customer (c_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_w_id INTEGER NOT NULL,
  c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20),
  c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16),
  c_since TIMESTAMP, c_credit CHAR(2), c_credit_lim NUMERIC(12,2), c_discount NUMERIC(4,4),
  c_balance NUMERIC(12,2), c_ytd_payment NUMERIC(12,2), c_payment_cnt INTEGER,
  c_delivery_cnt INTEGER, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE TABLE history (h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER,
  h_w_id INTEGER, h_date TIMESTAMP, h_amount NUMERIC(6,2), h_data VARCHAR(24));
CREATE TABLE new_order (no_o_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL,
  no_w_id INTEGER NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id));
CREATE TABLE orders (o_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL, o_w_id INTEGER NOT NULL,
  o_c_id INTEGER, o_entry_d TIMESTAMP, o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER,
  PRIMARY KEY (o_w_id, o_d_id, o_id));
CREATE TABLE order_line (ol_o_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL,
  ol_w_id INTEGER NOT NULL, ol_number INTEGER NOT NULL, ol_i_id INTEGER, ol_supply_w_id INTEGER,
  ol_delivery_d TIMESTAMP, ol_quantity INTEGER, ol_amount NUMERIC(6,2), ol_dist_info CHAR(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
CREATE TABLE item (i_id INTEGER NOT NULL, i_im_id INTEGER, i_name VARCHAR(24), i_price NUMERIC(5,2),
  i_data VARCHAR(50), PRIMARY KEY (i_id));
CREATE TABLE stock (s_i_id INTEGER NOT NULL, s_w_id INTEGER NOT NULL, s_quantity INTEGER,
  s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24),
  s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24),
  s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd NUMERIC(8,0), s_order_cnt INTEGER,
  s_remote_cnt INTEGER, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id));
";

const INDEXES: &str = "
CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
";

/// The statements that create the tables (before the load). PostgreSQL and SQLite take the same
/// SQL (SQLite gives NUMERIC columns numeric affinity, which stores the money columns as REAL);
/// MariaDB/MySQL's tables are InnoDB, with DATETIME for TIMESTAMP.
pub fn create_tables(dialect: Dialect) -> Vec<String> {
    let mut s = statements(DDL);
    if dialect == Dialect::Mysql {
        for t in &mut s {
            *t = format!("{} ENGINE=InnoDB", t.replace("TIMESTAMP", "DATETIME"));
        }
    }
    s
}

/// The statements that create the secondary indexes (after the load, which is faster).
pub fn create_indexes(_dialect: Dialect) -> Vec<String> {
    statements(INDEXES)
}

/// The statements that drop the nine tables (for `--fresh`).
pub fn drop_tables() -> Vec<String> {
    TABLES
        .iter()
        .rev()
        .map(|t| format!("DROP TABLE IF EXISTS {t}"))
        .collect()
}

fn statements(sql: &str) -> Vec<String> {
    sql.split(';')
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nine_tables_two_indexes() {
        let t = create_tables(Dialect::Postgres);
        assert_eq!(t.len(), 9);
        for (stmt, name) in t.iter().zip(TABLES) {
            assert!(
                stmt.starts_with(&format!("CREATE TABLE {name} (")),
                "{stmt}"
            );
        }
        assert_eq!(create_indexes(Dialect::Sqlite).len(), 2);
        let my = create_tables(Dialect::Mysql);
        assert!(my.iter().all(|t| t.ends_with(") ENGINE=InnoDB")), "{my:?}");
        assert!(my[2].contains("c_since DATETIME") && !my[2].contains("TIMESTAMP"));
        assert_eq!(drop_tables()[0], "DROP TABLE IF EXISTS stock");
    }
}
