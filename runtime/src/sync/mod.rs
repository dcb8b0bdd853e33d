//! Go's `sync` package for tasks: `WaitGroup`, `Mutex<T>` (with Go's starvation mode), `Once`.
//! (Being written; see issue 3.)
