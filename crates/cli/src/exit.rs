//! Exit codes and the error that carries one: what every command returns to `main`.

/// Exit code for bad input (arguments, connection strings, unreadable runs).
pub const EXIT_USAGE: u8 = 2;
/// Exit code when the run ended as failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code when the run was interrupted (as a shell reports SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// An error that should exit with a given code.
#[derive(Debug)]
pub struct Exit(pub u8, pub anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for Exit {
    fn from(e: E) -> Self {
        Exit(EXIT_USAGE, e.into())
    }
}
