#!/usr/bin/env python3
"""TPC-H Query 1 computed by DuckDB over a lineitem.tbl file, printed in `dbscope tpch q1`'s format.

DuckDB reads the DECIMAL(15,2) columns as decimals, so the sums are exact (sum_disc_price to 4 and
sum_charge to 6 decimals); its averages are DOUBLEs. Used to make the committed reference answers:

    dbscope tpch gen --sf 0.01 --table lineitem --out /tmp/sf001
    python3 reference/tpch/q1_duckdb.py /tmp/sf001/lineitem.tbl > reference/tpch/q1_sf0.01.duckdb.out

Usage: q1_duckdb.py LINEITEM_TBL [DELTA_DAYS] [THREADS]
"""
import sys

import duckdb

COLUMNS = {
    "l_orderkey": "BIGINT", "l_partkey": "BIGINT", "l_suppkey": "BIGINT", "l_linenumber": "INTEGER",
    "l_quantity": "DECIMAL(15,2)", "l_extendedprice": "DECIMAL(15,2)", "l_discount": "DECIMAL(15,2)",
    "l_tax": "DECIMAL(15,2)", "l_returnflag": "VARCHAR", "l_linestatus": "VARCHAR",
    "l_shipdate": "DATE", "l_commitdate": "DATE", "l_receiptdate": "DATE",
    "l_shipinstruct": "VARCHAR", "l_shipmode": "VARCHAR", "l_comment": "VARCHAR", "l_end": "VARCHAR",
}


def q1_sql(path, delta):
    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    return f"""
    select l_returnflag, l_linestatus,
           sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
           sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
           sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
           avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
           count(*) as count_order
    from read_csv('{path}', delim='|', header=false, columns={{{cols}}})
    where l_shipdate <= date '1998-12-01' - interval '{delta}' day
    group by l_returnflag, l_linestatus
    order by l_returnflag, l_linestatus"""


def main():
    path = sys.argv[1]
    delta = int(sys.argv[2]) if len(sys.argv) > 2 else 90
    con = duckdb.connect()
    if len(sys.argv) > 3:
        con.execute(f"SET threads={int(sys.argv[3])}")
    rows = con.execute(q1_sql(path, delta)).fetchall()
    print("l_returnflag|l_linestatus|sum_qty|sum_base_price|sum_disc_price|sum_charge|avg_qty|avg_price|avg_disc|count_order")
    for r in rows:
        print("|".join([r[0], r[1], str(r[2]), str(r[3]), str(r[4]), str(r[5]),
                        repr(r[6]), repr(r[7]), repr(r[8]), str(r[9])]))


if __name__ == "__main__":
    main()
