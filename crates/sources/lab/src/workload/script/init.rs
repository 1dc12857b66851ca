//! `--init tpcb`: pgbench's four tables created and filled as `pgbench -i` does (PostgreSQL 15–17,
//! default steps `dtgvp`: drop, create, generate client-side with COPY, vacuum analyze, primary
//! keys). SQLite gets the same tables and rows through its fastest path (one transaction of
//! `INSERT … SELECT` from a recursive CTE), with the keys declared up front.

use std::time::{Duration, Instant};

use dbscope_db::{Dialect, Target, TargetError, TargetResult};

/// pgbench's tables, in the order pgbench drops them.
pub const PGBENCH_TABLES: [&str; 4] = [
    "pgbench_accounts",
    "pgbench_branches",
    "pgbench_history",
    "pgbench_tellers",
];

/// Tellers and accounts per branch (pgbench's `ntellers`, `naccounts`).
const TELLERS: u64 = 10;
const ACCOUNTS: u64 = 100_000;

/// What `--init` did.
#[derive(Clone, Debug)]
pub struct InitReport {
    /// The scale.
    pub scale: u32,
    /// Accounts created.
    pub accounts: u64,
    /// How long it took.
    pub elapsed: Duration,
    /// How rows were loaded.
    pub method: &'static str,
}

/// Drops and creates pgbench's tables at `scale` on `target`, as `pgbench -i -s scale` does.
pub fn init_tpcb(target: &dyn Target, scale: u32) -> TargetResult<InitReport> {
    if target.dialect() == Dialect::Mysql {
        return Err(TargetError::not_on_mysql("the script workload's -i"));
    }
    let started = Instant::now();
    let mut s = target.connect()?;
    let scale64 = scale.max(1) as u64;
    // pgbench switches aid to bigint at scale 20 000.
    let aid = if scale64 >= 20_000 { "bigint" } else { "int" };
    s.batch(&format!(
        "DROP TABLE IF EXISTS {}",
        PGBENCH_TABLES.join(", ")
    ))
    .or_else(|_| {
        PGBENCH_TABLES
            .iter()
            .try_for_each(|t| s.batch(&format!("DROP TABLE IF EXISTS {t}")))
    })?;
    let method = match target.dialect() {
        Dialect::Postgres => {
            s.batch(&format!(
                "CREATE TABLE pgbench_history(tid int, bid int, aid {aid}, delta int, mtime timestamp, filler char(22));
                 CREATE TABLE pgbench_tellers(tid int not null, bid int, tbalance int, filler char(84));
                 CREATE TABLE pgbench_accounts(aid {aid} not null, bid int, abalance int, filler char(84));
                 CREATE TABLE pgbench_branches(bid int not null, bbalance int, filler char(88))"
            ))?;
            s.begin()?;
            copy_rows(s.as_mut(), "pgbench_branches", scale64, |i, out| {
                push_row(out, &[i + 1])
            })?;
            copy_rows(
                s.as_mut(),
                "pgbench_tellers",
                scale64 * TELLERS,
                |i, out| push_row(out, &[i + 1, i / TELLERS + 1]),
            )?;
            copy_rows(
                s.as_mut(),
                "pgbench_accounts",
                scale64 * ACCOUNTS,
                |i, out| push_row(out, &[i + 1, i / ACCOUNTS + 1]),
            )?;
            s.commit()?;
            s.batch("VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history")?;
            s.batch(
                "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
                 ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
                 ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid)",
            )?;
            "COPY, client-side generation (as pgbench -i), vacuum analyze, primary keys"
        }
        Dialect::Sqlite => {
            let series = |n: u64| {
                format!(
                    "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {n})"
                )
            };
            s.batch(&format!(
                "CREATE TABLE pgbench_history(tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
                 CREATE TABLE pgbench_tellers(tid integer not null primary key, bid int, tbalance int, filler char(84));
                 CREATE TABLE pgbench_accounts(aid integer not null primary key, bid int, abalance int, filler char(84));
                 CREATE TABLE pgbench_branches(bid integer not null primary key, bbalance int, filler char(88));
                 BEGIN;
                 INSERT INTO pgbench_branches {} SELECT i + 1, 0, '' FROM k;
                 INSERT INTO pgbench_tellers {} SELECT i + 1, i / {TELLERS} + 1, 0, '' FROM k;
                 INSERT INTO pgbench_accounts {} SELECT i + 1, i / {ACCOUNTS} + 1, 0, '' FROM k;
                 COMMIT;
                 ANALYZE",
                series(scale64),
                series(scale64 * TELLERS),
                series(scale64 * ACCOUNTS),
            ))?;
            "INSERT … SELECT in one transaction, keys declared up front"
        }
        Dialect::Null => "nothing (the null target keeps no tables)",
        Dialect::Mysql => return Err(TargetError::not_on_mysql("the script workload's -i")),
    };
    Ok(InitReport {
        scale: scale.max(1),
        accounts: scale64 * ACCOUNTS,
        elapsed: started.elapsed(),
        method,
    })
}

/// One COPY text row as pgbench writes it: the keys, the balance 0 and an empty filler
/// (`1\t1\t0\t\n`).
fn push_row(out: &mut Vec<u8>, ints: &[u64]) {
    let mut b = itoa::Buffer::new();
    for v in ints {
        out.extend_from_slice(b.format(*v).as_bytes());
        out.push(b'\t');
    }
    out.extend_from_slice(b"0\t\n");
}

/// COPY `n` rows made by `row` into `table`, in chunks.
fn copy_rows(
    s: &mut dyn dbscope_db::Session,
    table: &str,
    n: u64,
    row: impl Fn(u64, &mut Vec<u8>),
) -> TargetResult<u64> {
    let mut next = 0u64;
    s.copy_in(&format!("COPY {table} FROM STDIN"), &mut |buf| {
        let end = (next + 8192).min(n);
        while next < end {
            row(next, buf);
            next += 1;
        }
        Ok(next < n)
    })
}
