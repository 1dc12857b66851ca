//! The columns of a table as Parquet types them: read from the catalog (`columns_sql`), each a
//! PostgreSQL type mapped to a Parquet physical and logical type (`Kind`).

use chrono::NaiveDate;
use parquet::basic::{
    DecimalType, IntType, LogicalType, Repetition, TimeUnit, TimestampType, Type as Physical,
};
use parquet::schema::types::Type;

/// The query that lists a table's columns for [`PqColumn::from_catalog`]: name, type name,
/// typmod, NOT NULL.
pub fn columns_sql(table: &str) -> String {
    format!(
        "SELECT a.attname, t.typname, a.atttypmod, a.attnotnull FROM pg_attribute a \
         JOIN pg_type t ON t.oid = a.atttypid \
         WHERE a.attrelid = '{table}'::regclass AND a.attnum > 0 AND NOT a.attisdropped \
         ORDER BY a.attnum"
    )
}

/// How a column is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// int2.
    Int16,
    /// int4.
    Int32,
    /// int8.
    Int64,
    /// numeric(p,s), 0 ≤ s ≤ p ≤ 38.
    Decimal {
        /// Precision.
        precision: u8,
        /// Scale.
        scale: u8,
    },
    /// float4.
    Float32,
    /// float8.
    Float64,
    /// date.
    Date,
    /// timestamp without time zone.
    Timestamp,
    /// timestamp with time zone (UTC).
    TimestampTz,
    /// bool.
    Bool,
    /// text, varchar, char and every other type's text form.
    Text,
}

/// One column of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct PqColumn {
    /// Column name.
    pub name: String,
    /// PostgreSQL type name (`pg_type.typname`).
    pub pg_type: String,
    /// Storage.
    pub kind: Kind,
    /// False for NOT NULL columns.
    pub nullable: bool,
}

impl PqColumn {
    /// A column from a row of [`columns_sql`].
    pub fn from_catalog(row: &[Option<String>]) -> Result<PqColumn, String> {
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let (name, typ) = (get(0), get(1));
        let typmod: i32 = get(2)
            .parse()
            .map_err(|_| format!("column {name}: bad typmod"))?;
        let kind = match typ.as_str() {
            "int2" => Kind::Int16,
            "int4" => Kind::Int32,
            "int8" => Kind::Int64,
            "float4" => Kind::Float32,
            "float8" => Kind::Float64,
            "date" => Kind::Date,
            "timestamp" => Kind::Timestamp,
            "timestamptz" => Kind::TimestampTz,
            "bool" => Kind::Bool,
            "numeric" if typmod >= 4 => {
                // numeric's typmod: precision in the high 16 bits, the scale (11 bits, signed
                // since PostgreSQL 15) in the low ones, both offset by VARHDRSZ.
                let m = typmod - 4;
                let p = (m >> 16) & 0xffff;
                let s = ((m & 0x7ff) ^ 1024) - 1024;
                if (1..=38).contains(&p) && (0..=p).contains(&s) {
                    Kind::Decimal {
                        precision: p as u8,
                        scale: s as u8,
                    }
                } else {
                    Kind::Text
                }
            }
            _ => Kind::Text,
        };
        Ok(PqColumn {
            name,
            pg_type: typ,
            kind,
            nullable: get(3) != "t",
        })
    }

    pub(super) fn parquet_type(&self) -> parquet::errors::Result<Type> {
        let (phys, logical, len) = match self.kind {
            Kind::Int16 => (
                Physical::INT32,
                Some(LogicalType::Integer(IntType {
                    bit_width: 16,
                    is_signed: true,
                })),
                None,
            ),
            Kind::Int32 => (Physical::INT32, None, None),
            Kind::Int64 => (Physical::INT64, None, None),
            Kind::Decimal { precision, scale } => (
                if precision <= 18 {
                    Physical::INT64
                } else {
                    Physical::FIXED_LEN_BYTE_ARRAY
                },
                Some(LogicalType::Decimal(DecimalType {
                    scale: scale as i32,
                    precision: precision as i32,
                })),
                (precision > 18).then_some(16),
            ),
            Kind::Float32 => (Physical::FLOAT, None, None),
            Kind::Float64 => (Physical::DOUBLE, None, None),
            Kind::Date => (Physical::INT32, Some(LogicalType::Date), None),
            Kind::Timestamp | Kind::TimestampTz => (
                Physical::INT64,
                Some(LogicalType::Timestamp(TimestampType {
                    is_adjusted_to_u_t_c: self.kind == Kind::TimestampTz,
                    unit: TimeUnit::MICROS,
                })),
                None,
            ),
            Kind::Bool => (Physical::BOOLEAN, None, None),
            Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String), None),
        };
        let mut b = Type::primitive_type_builder(&self.name, phys)
            .with_repetition(if self.nullable {
                Repetition::OPTIONAL
            } else {
                Repetition::REQUIRED
            })
            .with_logical_type(logical);
        if let Kind::Decimal { precision, scale } = self.kind {
            b = b.with_precision(precision as i32).with_scale(scale as i32);
        }
        if let Some(l) = len {
            b = b.with_length(l);
        }
        b.build()
    }
}

pub(super) const EPOCH: NaiveDate = NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid");
