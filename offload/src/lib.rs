//! gmprt-offload: the explicit path from green tasks to a GPU.
//!
//! The runtime never moves a task to a GPU by itself. This crate does it explicitly: a
//! [`Device`] (CUDA through cudarc, the Host stand-in, or a GPU simulated from a profile), a [`Batcher`] that coalesces many
//! tasks' `submit(item).await` into one launch per batch (or, by explicit [`Placement`], a
//! CPU run or a cost-model decision per batch), and per-batch timelines. It is built
//! on the runtime's public API only.
//!
//! Modules: [`device`] chooses and wraps a [`Backend`] — [`cuda`], [`host`] or [`sim`] (the
//! Host slot body paced by a profile) — whose [`Slot`]s run a [`Job`] ([`job`] defines it and
//! its [`CudaJob`] side, which a GPU slot launches, as a leaf both `backend` and `cuda` use;
//! [`jobs`] has this crate's); [`pool`] is the persistent thread pool
//! the Host and simulated bulk helpers run on; [`batcher`] coalesces submits into batches;
//! [`model`] is the cost model (fits, profiles, predictions: a leaf that runs nothing) and
//! [`calibrate`](mod@calibrate) measures a profile on the device at hand; [`timeline`] holds
//! what each batch did.
//!
//! # Examples
//!
//! ```
//! use gmprt_offload::model::{CostModel, Crossover, DeviceProfile, Residency};
//! use gmprt_offload::runtime::Runtime;
//! use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
//!
//! // The Host stand-in runs anywhere (`Device::detect()` picks CUDA where it is usable).
//! let rt = Runtime::builder().procs(2).build().unwrap();
//! let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
//! assert_eq!(rt.block_on(b.submit_many(vec![(1.0, 1.0); 100])).unwrap(), vec![3.0; 100]);
//! // Whether moving the work pays, in numbers: SAXPY from host memory never does on an H100,
//! // 12 B per element over PCIe costs more than the CPU takes.
//! let m = CostModel::new(DeviceProfile::published_h100());
//! assert!(matches!(m.crossover("saxpy", Residency::Host).unwrap(), Crossover::Never { .. }));
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub use gmprt_kernels as kernels;
pub use gmprt_runtime as runtime;

pub mod backend;
pub mod batcher;
pub mod calibrate;
pub mod cuda;
pub mod device;
mod devices;
pub mod error;
pub mod host;
pub mod job;
pub mod jobs;
pub mod model;
pub mod pool;
mod segments;
pub mod sim;
pub mod timeline;
mod upload;

pub use backend::{Available, Backend, MemoryNeed, MemoryParts, PhaseTimes, Phases, Slot};
pub use batcher::{Batcher, BatcherConfig, DeviceShare, Occupancy, Placement, PricedDevice, Submit};
pub use cuda::{loaded_libraries, CudaJob, FirstUse, LaunchCosts, LoadedLib, SyncMode};
pub use device::{Device, DeviceKind, PROFILE_ENV};
pub use error::OffloadError;
pub use host::HostBackend;
pub use job::Job;
pub use jobs::{BatchKernel, BlackScholes, Saxpy, SmallSgemm};
pub use sim::SimBackend;
pub use timeline::{BatchTimeline, BatcherStats, CloseReason, ModelError, PlacementDecision, Report, Side};
