//! dbscope's connection strings over libpq's: [`spec_body`] drops the `postgres:` prefix dbscope
//! puts before a key/value string. A leaf: [`connect_with`](crate::connect_with) and
//! [`connect_socket`](crate::connect_socket) both read a string through it, and so does the
//! capture proxy's check that its upstream is not itself.

/// A connection string without dbscope's `postgres:` prefix of key/value strings (URIs keep
/// their scheme).
pub fn spec_body(spec: &str) -> &str {
    let spec = spec.trim();
    match spec.strip_prefix("postgres:") {
        Some(kv) if !spec.starts_with("postgres://") => kv,
        _ => spec,
    }
}
