//! Placeholder (issue 14).
fn main() {}
