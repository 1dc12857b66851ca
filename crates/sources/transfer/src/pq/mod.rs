//! Parquet files of `transfer`: the rows of a table's `COPY … TO STDOUT (FORMAT text)` stream
//! written as one Parquet file per mapper, typed from the catalog (`columns_sql`), and Parquet
//! files turned back into COPY text for `COPY … FROM STDIN`.
//!
//! Types (PostgreSQL → Parquet → what Arrow readers such as pyarrow make of it): `int2` → INT32
//! (INT(16)) → int16; `int4` → INT32 → int32; `int8` → INT64 → int64; `numeric(p,s)` with
//! 0 ≤ s ≤ p ≤ 38 → DECIMAL(p,s) on INT64 (p ≤ 18) or FIXED_LEN_BYTE_ARRAY(16) → decimal128(p,s);
//! `float4`/`float8` → FLOAT/DOUBLE → float/double; `text`, `varchar`, `char` → BYTE_ARRAY
//! (STRING) → string; `date` → INT32 (DATE) → date32; `timestamp` → INT64 (TIMESTAMP(MICROS,
//! false)) → timestamp[us]; `timestamptz` → INT64 (TIMESTAMP(MICROS, true)) → timestamp[us, UTC];
//! `bool` → BOOLEAN → bool. Everything else — unconstrained `numeric` (any precision, NaN and
//! ±Infinity: no Decimal128 holds them all), numeric scales outside 0..=p, domains, arrays, json,
//! bytea, intervals, … — is a STRING column holding PostgreSQL's text form, which loads back
//! exactly. NOT NULL columns are `required`, the others `optional` (NULLs kept).
//!
//! Modules: `columns` (the catalog's columns and their Parquet types), `write` (COPY text →
//! Parquet), `read` (Parquet → COPY text).

mod columns;
mod read;
mod write;

pub use columns::{columns_sql, PqColumn};
pub use read::PqRows;
pub use write::PqWriter;

#[cfg(test)]
mod tests {
    use super::columns::Kind;
    use super::read::{be_i128, escape, write_date, write_decimal};
    use super::write::{parse_date, parse_decimal, parse_timestamp, unescape};
    use super::*;

    #[test]
    fn text_forms_parse_and_print_back() {
        assert_eq!(parse_decimal("-123.45", 2), Ok(-12345));
        assert_eq!(parse_decimal("7", 3), Ok(7000));
        assert!(parse_decimal("1.234", 2).is_err());
        assert!(parse_decimal("NaN", 2).is_err());
        let mut o = Vec::new();
        write_decimal(&mut o, -5, 2);
        o.push(b' ');
        write_decimal(&mut o, 12345, 2);
        assert_eq!(o, b"-0.05 123.45");
        assert_eq!(parse_date("1970-01-02"), Ok(1));
        assert_eq!(
            parse_date("0001-01-01 BC"),
            parse_date("0001-01-01").map(|d| d - 366)
        );
        let mut o = Vec::new();
        write_date(&mut o, parse_date("0044-03-15 BC").unwrap() as i64);
        assert_eq!(o, b"0044-03-15 BC");
        assert_eq!(parse_timestamp("1970-01-01 00:00:01.5+00"), Ok(1_500_000));
        assert_eq!(parse_timestamp("1970-01-01 02:00:00+02"), Ok(0));
        assert_eq!(parse_timestamp("1969-12-31 23:59:59"), Ok(-1_000_000));
        assert!(parse_timestamp("infinity").is_err());
        let mut u = Vec::new();
        unescape(b"a\\tb\\\\c\\nd\\101\\x41", &mut u);
        assert_eq!(u, b"a\tb\\c\nd\x41\x41");
        let mut e = Vec::new();
        escape(&mut e, b"a\tb\\c\nd");
        assert_eq!(e, b"a\\tb\\\\c\\nd");
        assert_eq!(be_i128(&(-2i128).to_be_bytes()), -2);
        assert_eq!(be_i128(&[0xff, 0xfe]), -2);
    }

    #[test]
    fn numeric_typmods_map_to_decimals_or_text() {
        let col = |typ: &str, typmod: i32| {
            PqColumn::from_catalog(&[
                Some("c".into()),
                Some(typ.into()),
                Some(typmod.to_string()),
                Some("f".into()),
            ])
            .unwrap()
            .kind
        };
        // numeric(12,2): ((12 << 16) | 2) + 4.
        assert_eq!(
            col("numeric", (12 << 16 | 2) + 4),
            Kind::Decimal {
                precision: 12,
                scale: 2
            }
        );
        assert_eq!(col("numeric", -1), Kind::Text);
        assert_eq!(col("numeric", (50 << 16) + 4), Kind::Text);
        // numeric(5,-2) (PostgreSQL 15): a negative scale has no Parquet DECIMAL.
        assert_eq!(col("numeric", (5 << 16 | (-2i32 & 0x7ff)) + 4), Kind::Text);
        assert_eq!(col("jsonb", -1), Kind::Text);
        assert_eq!(col("int2", -1), Kind::Int16);
    }
}
