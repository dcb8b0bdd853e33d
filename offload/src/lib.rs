//! gmprt-offload: the explicit path from green tasks to a GPU (Device, Batcher, cost model).
//!
//! This crate is a placeholder until the kernels/offload issue fills it in. It is built on the
//! runtime's public API only: the runtime never moves a task to a GPU by itself.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub use gmprt_runtime as runtime;
