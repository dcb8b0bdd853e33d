//! gmprt: Go's G/M/P scheduler rebuilt as a work-stealing green-task runtime, with an explicit
//! GPU offload layer beside it. This crate re-exports the workspace's three crates.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod gantt;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod net;

pub use gmprt_kernels as kernels;
pub use gmprt_offload as offload;
pub use gmprt_runtime as runtime;
pub use gmprt_runtime::{go, spawn, try_spawn, yield_now, JoinError, JoinHandle, Runtime};

/// The README's code blocks, compiled and run as doctests (`cargo test --doc -p gmprt`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
