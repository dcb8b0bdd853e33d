//! gmprt-kernels: each compute kernel twice, with the same math — a CUDA C source compiled at
//! run time by NVRTC and a vectorised CPU version — plus f64 references for tests.
//!
//! This crate is a placeholder until the kernels/offload issue fills it in; it depends on no
//! crate of ours (see `DESIGN.md`).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]
