//! Timers: `sleep`, `sleep_until`, `timeout`, `interval`, on per-P timer heaps.
//! (Being written; see issue 3.)
