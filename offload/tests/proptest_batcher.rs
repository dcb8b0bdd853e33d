//! Arbitrary interleavings of submits, flushes and a shutdown from many green tasks: every
//! task gets exactly its own results (or `Closed` for what was submitted after shutdown, or
//! the batch error when a poison item shared its batch), no batch exceeds `max_batch`, and the
//! timelines account for every accepted item and every failed one.
use gmprt_offload::cuda::{CudaJob, LaunchCtx};
use gmprt_offload::runtime::Runtime;
use gmprt_offload::{BatchKernel, Batcher, BatcherConfig, Device, Job, OffloadError};
use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Duration;

/// Item `(task, x)` → `(task, x ^ SALT)`: a result that names whose it is.
struct Tag;

const SALT: u32 = 0x5A5A_0F0F;
/// An item that makes its whole batch fail.
const POISON: u32 = u32::MAX;

impl Job for Tag {
    fn name(&self) -> &'static str {
        "tag"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        if input.len() != 2 * n || output.len() != 2 * n {
            return Err("bad lengths".into());
        }
        if input[n..].contains(&POISON) {
            return Err("poison".into());
        }
        output[..n].copy_from_slice(&input[..n]);
        for (o, &x) in output[n..].iter_mut().zip(&input[n..]) {
            *o = x ^ SALT;
        }
        Ok(())
    }
}

impl CudaJob for Tag {
    fn launch_cuda(&self, _ctx: &mut LaunchCtx<'_>, _n: usize) -> Result<(), OffloadError> {
        Err(OffloadError::Config("host only".into()))
    }
}

impl BatchKernel for Tag {
    type Item = (u32, u32);
    type Output = (u32, u32);
    fn in_words(&self) -> usize {
        2
    }
    fn out_words(&self) -> usize {
        2
    }
    fn validate(&self, _item: &(u32, u32), _index: usize) -> Result<(), OffloadError> {
        Ok(())
    }
    fn stage(&self, items: &[(u32, u32)], input: &mut [u32]) {
        let n = items.len();
        for (i, &(t, x)) in items.iter().enumerate() {
            input[i] = t;
            input[n + i] = x;
        }
    }
    fn gather(&self, n: usize, output: &[u32], i: usize) -> (u32, u32) {
        (output[i], output[n + i])
    }
}

/// One submit's item and what it got.
type Outcome = (u32, Result<(u32, u32), OffloadError>);

fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| Runtime::builder().procs(2).build().expect("runtime"))
}

/// What one task does with each of its items.
#[derive(Clone, Debug)]
enum Step {
    /// Submit and await at once.
    Await(u32),
    /// Submit, await later (at the end of the task).
    Later(u32),
    /// Submit a poison item and await it later: its batch fails.
    Poison,
    /// Flush the open batch.
    Flush,
    /// Shut the Batcher down (the first one wins; the rest are no-ops).
    Shutdown,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        40 => (0..POISON).prop_map(Step::Await),
        40 => (0..POISON).prop_map(Step::Later),
        2 => Just(Step::Poison),
        5 => Just(Step::Flush),
        // Rare, so that about half the cases run to the end without one.
        1 => Just(Step::Shutdown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_task_gets_its_own_results(
        tasks in prop::collection::vec(prop::collection::vec(step(), 0..24), 1..10),
        max_batch in 1usize..9,
        delay_us in prop_oneof![Just(0u64), Just(50), Just(500)],
        in_flight in 1usize..4,
    ) {
        let config = BatcherConfig { max_batch, max_delay: Duration::from_micros(delay_us), in_flight, ..BatcherConfig::default() };
        let b = Batcher::new(Tag, &Device::host(), config).unwrap();
        let b2 = b.clone();
        // Per task: (item, got) for every submit.
        let outcomes: Vec<Vec<Outcome>> = runtime().block_on(async move {
            let hs: Vec<_> = tasks
                .into_iter()
                .enumerate()
                .map(|(t, steps)| {
                    let b = b2.clone();
                    gmprt_offload::runtime::spawn(async move {
                        let t = t as u32;
                        let mut out = Vec::new();
                        let mut later = Vec::new();
                        for s in steps {
                            match s {
                                Step::Await(x) => out.push((x, b.submit((t, x)).await)),
                                Step::Later(x) => later.push((x, b.submit((t, x)))),
                                Step::Poison => later.push((POISON, b.submit((t, POISON)))),
                                Step::Flush => b.flush(),
                                Step::Shutdown => b.shutdown(),
                            }
                        }
                        for (x, f) in later {
                            out.push((x, f.await));
                        }
                        (t, out)
                    })
                })
                .collect();
            let mut all = Vec::new();
            for h in hs {
                let (t, out) = h.await.expect("task");
                // Each task's own results carry its own tag and item.
                for (x, r) in &out {
                    if let Ok(v) = r {
                        assert_eq!(*v, (t, x ^ SALT), "task {t} got someone else's result");
                    }
                }
                all.push(out);
            }
            all
        });
        let tl = b.timelines();
        let failed_batches: Vec<u64> = tl.iter().filter(|t| !t.ok).map(|t| t.batch).collect();
        let (mut accepted, mut failed, mut closed) = (0u64, 0u64, 0u64);
        for (x, r) in outcomes.iter().flatten() {
            match r {
                Ok(_) => {
                    prop_assert!(*x != POISON, "a poison item succeeded");
                    accepted += 1;
                }
                Err(OffloadError::Closed) => {
                    prop_assert!(b.is_closed(), "Closed for {x} without shutdown");
                    closed += 1;
                }
                Err(OffloadError::Batch { batch, msg, .. }) => {
                    prop_assert!(failed_batches.contains(batch) && msg == "poison", "item {x}: batch {batch}: {msg}");
                    accepted += 1;
                    failed += 1;
                }
                Err(e) => prop_assert!(false, "item {x}: {e}"),
            }
        }
        prop_assert!(tl.iter().all(|t| t.n >= 1 && t.n <= max_batch));
        prop_assert_eq!(tl.iter().map(|t| t.n as u64).sum::<u64>(), accepted);
        prop_assert_eq!(tl.iter().filter(|t| !t.ok).map(|t| t.n as u64).sum::<u64>(), failed);
        let s = b.stats();
        prop_assert_eq!((s.items, s.failed_items, s.rejected_closed), (accepted, failed, closed));
        prop_assert_eq!(b.occupancy().open_items, 0);
    }
}
