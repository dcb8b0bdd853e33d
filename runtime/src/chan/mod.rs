//! Go's channels: `chan::<T>(cap)`, `send`/`recv`/`try_send`/`try_recv`/`close`, and `select!`.
//! (Being written; see issue 3.)
