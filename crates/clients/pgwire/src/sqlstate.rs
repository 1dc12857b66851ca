//! A server error's SQLSTATE kept as data: five characters, their class the first two, so that
//! callers decide by code (retry a serialization failure, reconnect after a session ended) instead
//! of matching text.

use std::fmt;

/// A SQLSTATE: five ASCII letters or digits, e.g. `40P01` (deadlock detected). The first two are
/// the class (`40`: transaction rollback, `57`: operator intervention, …); PostgreSQL's codes are
/// listed in its manual, appendix A.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SqlState([u8; 5]);

impl SqlState {
    /// `XX000` internal_error: what a server error without a valid SQLSTATE is taken as (every
    /// PostgreSQL error carries one; a server that omits it is not following the protocol).
    pub const INTERNAL_ERROR: SqlState = SqlState(*b"XX000");
    /// `40001` serialization_failure.
    pub const SERIALIZATION_FAILURE: SqlState = SqlState(*b"40001");
    /// `40P01` deadlock_detected.
    pub const DEADLOCK_DETECTED: SqlState = SqlState(*b"40P01");
    /// `53300` too_many_connections.
    pub const TOO_MANY_CONNECTIONS: SqlState = SqlState(*b"53300");

    /// The code if `s` is five ASCII letters or digits; `None` otherwise.
    pub fn parse(s: &str) -> Option<SqlState> {
        let b: [u8; 5] = s.as_bytes().try_into().ok()?;
        b.iter()
            .all(u8::is_ascii_alphanumeric)
            .then_some(SqlState(b))
    }

    /// The code as text, e.g. `"40P01"`.
    pub fn as_str(&self) -> &str {
        // Checked to be ASCII on construction.
        std::str::from_utf8(&self.0).unwrap_or("XX000")
    }

    /// The class: the code's first two characters, e.g. `"40"`.
    pub fn class(&self) -> &str {
        &self.as_str()[..2]
    }

    /// `40001` or `40P01`: the transaction was rolled back because it conflicted with another;
    /// running it again may succeed.
    pub fn is_serialization_failure(&self) -> bool {
        *self == Self::SERIALIZATION_FAILURE || *self == Self::DEADLOCK_DETECTED
    }

    /// `57P01`…`57P05` (admin shutdown, crash shutdown, cannot connect now, database dropped,
    /// idle session timeout): the server ended the session; the connection is gone.
    pub fn ends_session(&self) -> bool {
        self.0.starts_with(b"57P")
    }

    /// Class `28` (invalid authorization specification: wrong password, no such role).
    pub fn is_authentication(&self) -> bool {
        self.class() == "28"
    }
}

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SqlState({})", self.as_str())
    }
}

impl PartialEq<str> for SqlState {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SqlState {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_five_letters_or_digits_only() {
        let s = SqlState::parse("40P01").unwrap();
        assert_eq!(s.as_str(), "40P01");
        assert_eq!(s.to_string(), "40P01");
        assert_eq!(format!("{s:?}"), "SqlState(40P01)");
        assert_eq!(s.class(), "40");
        assert_eq!(s, "40P01");
        for bad in ["", "4000", "400011", "40 01", "40é1"] {
            assert_eq!(SqlState::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn classes() {
        let code = |s| SqlState::parse(s).unwrap();
        assert!(code("40001").is_serialization_failure());
        assert!(code("40P01").is_serialization_failure());
        assert!(!code("40002").is_serialization_failure());
        for s in ["57P01", "57P02", "57P03", "57P04", "57P05"] {
            assert!(code(s).ends_session(), "{s}");
        }
        assert!(
            !code("57014").ends_session(),
            "query_canceled keeps the session"
        );
        assert!(code("28P01").is_authentication());
        assert!(!code("3D000").is_authentication());
    }
}
