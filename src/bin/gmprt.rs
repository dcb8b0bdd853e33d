//! The `gmprt` command (filled in by the CLI work of issue 14).
fn main() {}
