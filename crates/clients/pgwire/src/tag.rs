//! Command tags (`UPDATE 3`, `INSERT 0 5`, `SELECT 10`): the row count a server reports, read the
//! same way by the client, the capture proxy and replay's divergence check.

/// The row count at the end of a command tag (`UPDATE 1`, `SELECT 10`, `INSERT 0 5`), if the
/// command reports one.
pub fn tag_rows(tag: &str) -> Option<u64> {
    let verb = tag.split(' ').next()?;
    matches!(
        verb,
        "INSERT" | "UPDATE" | "DELETE" | "SELECT" | "MERGE" | "FETCH" | "MOVE" | "COPY"
    )
    .then(|| tag.rsplit(' ').next()?.parse().ok())
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_with_and_without_a_count() {
        assert_eq!(tag_rows("UPDATE 1"), Some(1));
        assert_eq!(tag_rows("INSERT 0 5"), Some(5));
        assert_eq!(tag_rows("SELECT 10"), Some(10));
        assert_eq!(tag_rows("COPY 2001000"), Some(2001000));
        assert_eq!(tag_rows("BEGIN"), None);
        assert_eq!(tag_rows("CREATE TABLE"), None);
        assert_eq!(tag_rows(""), None);
    }
}
