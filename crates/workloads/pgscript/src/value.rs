//! [`Value`]: what an expression evaluates to and what a variable holds (pgbench's PgBenchValue),
//! with pgbench's conversions and its text form for substitution into SQL.

/// A value of the expression language.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL (`\gset` of a NULL column, or the `NULL` literal).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Double(f64),
}

impl Value {
    /// The text a variable holding this value is substituted as (pgbench: integers in decimal,
    /// doubles as `%.*g` with 15 digits, booleans `true`/`false`, NULL as the empty string).
    pub fn to_text(&self) -> String {
        todo!("helper")
    }
    /// A variable's text (from `-D`, `\gset`, `\setshell`) read as a value the way pgbench's
    /// `makeVariableValue` does (integer, else double, else boolean words; else an error message
    /// pgbench would print: `malformed variable "x" value: "abc"`).
    pub fn from_text(name: &str, text: &str) -> Result<Value, String> {
        let _ = (name, text);
        todo!("helper")
    }
}
