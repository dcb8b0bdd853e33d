//! [`NetworkLink`]: the cost of a message between two ranks (latency + bytes / bandwidth), and
//! when scattering a batch to other ranks pays ([`NetworkLink::scatter_crossover`]) — the
//! network's crossover, beside the PCIe one of [`CostModel::crossover`](super::CostModel::crossover).
//!
//! # The link
//!
//! One message of `b` bytes costs `latency_s + b / bandwidth_bytes_per_s` one way (Hockney's
//! model). A link is measured by a ping-pong between two ranks ([`NetworkLink::fit`]: the
//! latency is the smallest message's one-way time, the bandwidth the least-squares slope of the
//! rest through it), or built from published figures ([`NetworkLink::shared_memory_2core_vm`]
//! is this project's own measurement; [`NetworkLink::ethernet_25g`] and
//! [`NetworkLink::infiniband_hdr`] are published figures, labelled so, with their sources).
//!
//! # A scattered batch
//!
//! A batch of `n` items on `ranks` ranks, rank 0 holding the inputs: rank 0 sends each of the
//! other `ranks − 1` ranks its share `m = n / ranks` (one message each, one after the other on
//! rank 0's link), every rank computes its share, and each remote rank sends its outputs back
//! (`out_bytes` per item; 0 when the outputs are reduced to a few numbers, as the screener's
//! Greeks are: that message is one latency). So
//!
//! ```text
//! local(n)       = compute(n)
//! scattered(n)   = (ranks − 1) · (L + m · in_bytes / B)     rank 0's sends, in turn
//!                + compute(m)                                every rank's share, at once
//!                + L + m · out_bytes / B                     the last rank's outputs back
//! ```
//!
//! Scattering pays from the smallest `n` from which `scattered(n) < local(n)` for every larger
//! `n`. With `compute(n) = a + b·n` the gap is `n · [b · (1 − 1/ranks) − ((ranks − 1) · in +
//! out) / (ranks · B)] − ranks · L` plus what `a` adds: the per-item bracket decides whether it
//! ever pays (the compute saved per item must exceed the bytes per item on the wire), and the
//! latencies set n*. Assumed: the ranks compute at the same rate, rank 0's sends do not overlap
//! each other (a linear scatter; a tree would cost `log2(ranks)` sends instead), and a rank's
//! compute does not overlap its own messages. The search is the same as the PCIe crossover's:
//! the asymptote first, then a geometric grid and bisection.
use super::crossover::{search_crossover, Crossover, SEARCH_FROM_ITEMS};
use crate::error::OffloadError;

/// Where a link's figures come from.
///
/// ```
/// use gmprt_offload::model::{LinkSource, NetworkLink};
/// assert!(matches!(NetworkLink::infiniband_hdr().source, LinkSource::Published { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LinkSource {
    /// Measured by a ping-pong between two ranks; `on` says where (machine, MPI, transport).
    Measured {
        /// The machine and transport the ping-pong ran on.
        on: String,
    },
    /// Published figures, not measured here; `citation` says which and where from.
    Published {
        /// The figures and their sources.
        citation: String,
    },
}

/// A link between two ranks: a message of `b` bytes costs `latency_s + b /
/// bandwidth_bytes_per_s` one way.
///
/// ```
/// use gmprt_offload::model::NetworkLink;
/// let ib = NetworkLink::infiniband_hdr();
/// // 1 MB over HDR: 0.6 µs + 40 µs.
/// assert!((ib.message(1e6) - 40.6e-6).abs() < 1e-12);
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NetworkLink {
    /// What the link is, e.g. `InfiniBand HDR (200 Gb/s)`.
    pub label: String,
    /// One-way time of an empty message, in seconds.
    pub latency_s: f64,
    /// Bytes per second once a message streams.
    pub bandwidth_bytes_per_s: f64,
    /// Measured here, or published figures.
    pub source: LinkSource,
}

/// One ping-pong measurement: a message of `bytes` went there and back in `round_trip_s`
/// seconds (a median over repeats).
///
/// ```
/// use gmprt_offload::model::PingPong;
/// let p = PingPong { bytes: 8.0, round_trip_s: 2e-6 };
/// assert_eq!(p.one_way(), 1e-6);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PingPong {
    /// Message size, in bytes.
    pub bytes: f64,
    /// Seconds there and back.
    pub round_trip_s: f64,
}

impl PingPong {
    /// Half the round trip: the one-way time of the message.
    pub fn one_way(&self) -> f64 {
        self.round_trip_s / 2.0
    }
}

/// Bytes each item of a scattered batch puts on the link: its inputs (rank 0 → a rank) and
/// its outputs (back; 0 when a rank's outputs are reduced to a few numbers).
///
/// ```
/// use gmprt_offload::model::ItemBytes;
/// // Black-Scholes: 6 input words of 4 bytes; the Greeks are summed per rank, not returned.
/// let b = ItemBytes { in_bytes: 24.0, out_bytes: 0.0 };
/// assert_eq!(b.in_bytes + b.out_bytes, 24.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ItemBytes {
    /// Input bytes per item, sent by rank 0.
    pub in_bytes: f64,
    /// Output bytes per item, sent back to rank 0.
    pub out_bytes: f64,
}

/// One batch of `n` items, computed on rank 0 alone or scattered over `ranks` ranks (see the
/// module docs), in seconds.
///
/// ```
/// use gmprt_offload::model::{ItemBytes, NetworkLink};
/// let link = NetworkLink::ethernet_25g();
/// let b = ItemBytes { in_bytes: 24.0, out_bytes: 0.0 };
/// let s = link.scatter_time(1e6, 2, b, |n| 20e-9 * n).unwrap();
/// assert_eq!(s.scattered, s.sends + s.share_compute + s.back);
/// assert!((s.local - 20e-3).abs() < 1e-12); // 1e6 items at 20 ns
/// // Half the items cross the link: 12 MB at 3.125 GB/s is 3.84 ms, less than the 10 ms saved.
/// assert!(s.scattered < s.local);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Scatter {
    /// Items in the batch.
    pub n: f64,
    /// Ranks it is spread over (rank 0 included).
    pub ranks: usize,
    /// The batch on rank 0 alone.
    pub local: f64,
    /// Rank 0's sends of the other ranks' shares, one after the other.
    pub sends: f64,
    /// One share's compute (every rank at once).
    pub share_compute: f64,
    /// The last share's outputs back to rank 0.
    pub back: f64,
    /// `sends + share_compute + back`.
    pub scattered: f64,
}

impl NetworkLink {
    /// Published figures: InfiniBand HDR, one 4x port (NVIDIA ConnectX-6).
    ///
    /// Sources: bandwidth, 200 Gb/s = 25 GB/s, the HDR 4x data rate (InfiniBand Trade
    /// Association, HDR: 50 Gb/s per lane); latency 0.6 µs, the "sub 600 ns" of the NVIDIA
    /// (Mellanox) ConnectX-6 VPI adapter product brief. Both are the hardware's figures: MPI over
    /// them reaches a little less bandwidth and a little more latency.
    ///
    /// ```
    /// use gmprt_offload::model::NetworkLink;
    /// let l = NetworkLink::infiniband_hdr();
    /// assert_eq!((l.latency_s, l.bandwidth_bytes_per_s), (0.6e-6, 25e9));
    /// assert!(l.describe().contains("published"));
    /// ```
    pub fn infiniband_hdr() -> NetworkLink {
        NetworkLink {
            label: "InfiniBand HDR (200 Gb/s)".into(),
            latency_s: 0.6e-6,
            bandwidth_bytes_per_s: 25e9,
            source: LinkSource::Published {
                citation: "200 Gb/s: the IBTA's HDR 4x data rate; 0.6 µs: NVIDIA ConnectX-6 VPI product \
                           brief, 'sub 600 ns latency'"
                    .into(),
            },
        }
    }

    /// Published figures: 25 Gigabit Ethernet with an operating-system-bypass MPI transport.
    ///
    /// Sources: bandwidth, 25 Gb/s = 3.125 GB/s, the IEEE 802.3by data rate (an upper bound:
    /// Ethernet, IP and MPI headers take a few percent); latency 1.93 µs, the half round trip of
    /// Open MPI over Cisco's usNIC (OS bypass over UDP, 40 GbE NICs back to back; J. Squyres, "MPI
    /// over 40Gb Ethernet", Cisco blogs, 2014) — the latency of the Ethernet NIC and MPI stack,
    /// which 25 GbE shares. MPI over the kernel's TCP pays more latency; the bandwidth term, which
    /// decides large batches, is the same.
    ///
    /// ```
    /// use gmprt_offload::model::NetworkLink;
    /// let l = NetworkLink::ethernet_25g();
    /// assert_eq!((l.latency_s, l.bandwidth_bytes_per_s), (1.93e-6, 3.125e9));
    /// ```
    pub fn ethernet_25g() -> NetworkLink {
        NetworkLink {
            label: "25 GbE".into(),
            latency_s: 1.93e-6,
            bandwidth_bytes_per_s: 3.125e9,
            source: LinkSource::Published {
                citation: "25 Gb/s: IEEE 802.3by data rate; 1.93 µs: Open MPI half round trip over \
                           OS-bypass Ethernet (Cisco usNIC, 'MPI over 40Gb Ethernet', Cisco blogs, 2014)"
                    .into(),
            },
        }
    }

    /// Measured here: Open MPI's shared-memory transport between two ranks on this project's
    /// 2-core VM (`mpi_screener --calibrate`, 2 ranks oversubscribed on 2 cores, hand-off
    /// waits; the README's "Past one machine" has the run). Two ranks of one machine: the
    /// "link" is a copy through shared memory.
    ///
    /// ```
    /// use gmprt_offload::model::{LinkSource, NetworkLink};
    /// let l = NetworkLink::shared_memory_2core_vm();
    /// assert!(matches!(l.source, LinkSource::Measured { .. }));
    /// assert!(l.latency_s < 10e-6 && l.bandwidth_bytes_per_s > 1e9);
    /// ```
    pub fn shared_memory_2core_vm() -> NetworkLink {
        NetworkLink {
            label: "shared memory (2 ranks, one 2-core VM)".into(),
            latency_s: SHM_LATENCY_S,
            bandwidth_bytes_per_s: SHM_BANDWIDTH,
            source: LinkSource::Measured {
                on: "the 2-core VM, Open MPI 4.1.4 shared memory (vader), mpi_screener --calibrate".into(),
            },
        }
    }

    /// The published and measured links of this module: shared memory (measured here), 25 GbE
    /// and InfiniBand HDR (published).
    pub fn presets() -> Vec<NetworkLink> {
        vec![
            NetworkLink::shared_memory_2core_vm(),
            NetworkLink::ethernet_25g(),
            NetworkLink::infiniband_hdr(),
        ]
    }

    /// A link from ping-pong measurements: the latency is the one-way time of the smallest
    /// message; the bandwidth is the least-squares slope, through that point, of the one-way
    /// times of the others (`bytes / (t − latency)` weighted by size: the large messages decide
    /// it, as they should). Needs two sizes or more with positive, finite times.
    ///
    /// ```
    /// use gmprt_offload::model::{NetworkLink, PingPong};
    /// // 1 µs + 1 GB/s, there and back.
    /// let s: Vec<PingPong> = [8.0, 1e3, 1e5, 1e6]
    ///     .iter()
    ///     .map(|&b| PingPong { bytes: b, round_trip_s: 2.0 * (1e-6 + b / 1e9) })
    ///     .collect();
    /// let l = NetworkLink::fit(&s, "here", "a VM").unwrap();
    /// assert!((l.latency_s - 1.008e-6).abs() < 1e-12); // the 8-byte message
    /// assert!((l.bandwidth_bytes_per_s / 1e9 - 1.0).abs() < 1e-6);
    /// assert!(NetworkLink::fit(&s[..1], "here", "a VM").is_err());
    /// ```
    ///
    /// # Errors
    /// [`OffloadError::Config`] with fewer than two distinct sizes, a non-finite or negative
    /// time, or times that do not grow with size (no bandwidth to fit).
    pub fn fit(samples: &[PingPong], label: &str, on: &str) -> Result<NetworkLink, OffloadError> {
        let bad = |why: String| OffloadError::Config(format!("NetworkLink::fit: {why}"));
        if let Some(s) = samples.iter().find(|s| !(s.bytes.is_finite() && s.bytes >= 0.0)) {
            return Err(bad(format!("a message size must be a finite number of bytes, not {}", s.bytes)));
        }
        if let Some(s) = samples.iter().find(|s| !(s.round_trip_s.is_finite() && s.round_trip_s > 0.0)) {
            return Err(bad(format!(
                "the {} B round trip took {} s; times must be positive and finite",
                s.bytes, s.round_trip_s
            )));
        }
        let smallest = samples
            .iter()
            .min_by(|a, b| a.bytes.total_cmp(&b.bytes))
            .ok_or_else(|| bad("no samples; run a ping-pong over two sizes or more".into()))?;
        let (x0, lat) = (smallest.bytes, smallest.one_way());
        // Least squares of (t − lat) = (x − x0) / B through the smallest message's point.
        let (mut sxx, mut sxt) = (0.0, 0.0);
        for s in samples.iter().filter(|s| s.bytes > x0) {
            let dx = s.bytes - x0;
            sxx += dx * dx;
            sxt += dx * (s.one_way() - lat);
        }
        if sxx == 0.0 {
            return Err(bad(format!(
                "{} sample(s), all of {x0} B: a bandwidth needs two sizes or more",
                samples.len()
            )));
        }
        if sxt <= 0.0 {
            return Err(bad(
                "the larger messages were no slower than the smallest: no bandwidth to fit (too few \
                 repeats, or sizes too small to stream)"
                    .into(),
            ));
        }
        Ok(NetworkLink {
            label: label.to_string(),
            latency_s: lat,
            bandwidth_bytes_per_s: sxx / sxt,
            source: LinkSource::Measured { on: on.to_string() },
        })
    }

    /// One message of `bytes`, one way, in seconds.
    pub fn message(&self, bytes: f64) -> f64 {
        self.latency_s + bytes / self.bandwidth_bytes_per_s
    }

    /// `InfiniBand HDR (200 Gb/s): 0.60 µs + 25.00 GB/s [published: …]`.
    ///
    /// ```
    /// use gmprt_offload::model::NetworkLink;
    /// assert_eq!(
    ///     NetworkLink::ethernet_25g().describe().split(" [").next().unwrap(),
    ///     "25 GbE: 1.93 µs + 3.12 GB/s"
    /// );
    /// ```
    pub fn describe(&self) -> String {
        let src = match &self.source {
            LinkSource::Measured { on } => format!("measured on {on}"),
            LinkSource::Published { citation } => format!("published figures, not measured: {citation}"),
        };
        format!(
            "{}: {} + {:.2} GB/s [{src}]",
            self.label,
            super::units::secs(self.latency_s),
            self.bandwidth_bytes_per_s / 1e9
        )
    }

    /// A batch of `n` items on rank 0 alone and scattered over `ranks` ranks (module docs);
    /// `compute(k)` is the seconds one rank takes for `k` items.
    ///
    /// # Errors
    /// [`OffloadError::Config`] for `ranks` 0, a negative or non-finite `n`, or a link without a
    /// positive bandwidth.
    pub fn scatter_time(
        &self,
        n: f64,
        ranks: usize,
        bytes: ItemBytes,
        compute: impl Fn(f64) -> f64,
    ) -> Result<Scatter, OffloadError> {
        self.check(ranks)?;
        if !(n.is_finite() && n >= 0.0) {
            return Err(OffloadError::Config(format!("scatter_time: n must be a finite count, not {n}")));
        }
        Ok(self.scatter_unchecked(n, ranks, bytes, &compute))
    }

    /// n* from which scattering a batch over `ranks` ranks beats computing it on rank 0 alone
    /// (`compute(k)`: one rank's seconds for `k` items), or why never: the asymptote first (the
    /// compute a rank saves per item against the bytes per item on the link), then the largest
    /// size at which scattering does not pay, on a geometric grid and refined by bisection.
    /// One rank never pays (`Never`).
    ///
    /// ```
    /// use gmprt_offload::model::{Crossover, ItemBytes, NetworkLink};
    /// let b = ItemBytes { in_bytes: 24.0, out_bytes: 0.0 };
    /// let cpu = |n: f64| 20e-9 * n; // 20 ns per item on one rank
    /// // HDR: 24 B at 25 GB/s is ~1 ns, far below the 10 ns a second rank saves per item.
    /// let Crossover::At { n } = NetworkLink::infiniband_hdr().scatter_crossover(2, b, cpu).unwrap() else {
    ///     panic!()
    /// };
    /// assert!((n - 127.0).abs() <= 1.0, "{n}"); // 2 × 0.6 µs / (10 − 0.48) ns
    /// // At 2 ns per item the link costs more than a rank saves.
    /// let c = NetworkLink::ethernet_25g().scatter_crossover(2, b, |n| 2e-9 * n).unwrap();
    /// assert!(matches!(c, Crossover::Never { .. }), "{c:?}");
    /// ```
    ///
    /// # Errors
    /// As [`NetworkLink::scatter_time`].
    pub fn scatter_crossover(
        &self,
        ranks: usize,
        bytes: ItemBytes,
        compute: impl Fn(f64) -> f64,
    ) -> Result<Crossover, OffloadError> {
        self.check(ranks)?;
        if ranks == 1 {
            return Ok(Crossover::Never {
                reason: "one rank has no other rank to scatter to".into(),
                wins_below: None,
            });
        }
        let k = ranks as f64;
        // The asymptote: per item, the compute saved against the bytes on the link.
        let x = SEARCH_FROM_ITEMS;
        let per_item = (compute(2.0 * x) - compute(x)) / x;
        let saved = per_item * (1.0 - 1.0 / k);
        let wire = ((k - 1.0) * bytes.in_bytes + bytes.out_bytes) / (k * self.bandwidth_bytes_per_s);
        if saved <= wire {
            return Ok(Crossover::Never {
                reason: format!(
                    "link-bound: per item, {} ranks save {} of compute ({} per item on one rank) but \
                     {} B in and {} B out at {:.2} GB/s cost {}",
                    ranks,
                    super::units::secs(saved),
                    super::units::secs(per_item),
                    num(bytes.in_bytes),
                    num(bytes.out_bytes),
                    self.bandwidth_bytes_per_s / 1e9,
                    super::units::secs(wire)
                ),
                wins_below: None,
            });
        }
        // f(n) < 0: scattering pays at n.
        let f = |n: f64| {
            let s = self.scatter_unchecked(n, ranks, bytes, &compute);
            s.scattered - s.local
        };
        Ok(search_crossover(f, SEARCH_FROM_ITEMS, |limit| {
            format!("the latencies are not repaid below n = {limit:e}")
        }))
    }

    fn check(&self, ranks: usize) -> Result<(), OffloadError> {
        if ranks == 0 {
            return Err(OffloadError::Config("a scatter needs at least 1 rank".into()));
        }
        if !(self.bandwidth_bytes_per_s.is_finite() && self.bandwidth_bytes_per_s > 0.0) {
            return Err(OffloadError::Config(format!(
                "link `{}`: bandwidth must be positive and finite, not {} B/s",
                self.label, self.bandwidth_bytes_per_s
            )));
        }
        if !(self.latency_s.is_finite() && self.latency_s >= 0.0) {
            return Err(OffloadError::Config(format!(
                "link `{}`: latency must be a finite number of seconds ≥ 0, not {}",
                self.label, self.latency_s
            )));
        }
        Ok(())
    }

    fn scatter_unchecked(
        &self,
        n: f64,
        ranks: usize,
        bytes: ItemBytes,
        compute: &dyn Fn(f64) -> f64,
    ) -> Scatter {
        let k = ranks as f64;
        let m = n / k;
        let local = compute(n);
        let (sends, back) = if ranks > 1 {
            ((k - 1.0) * self.message(m * bytes.in_bytes), self.message(m * bytes.out_bytes))
        } else {
            (0.0, 0.0)
        };
        let share_compute = compute(m);
        Scatter { n, ranks, local, sends, share_compute, back, scattered: sends + share_compute + back }
    }
}

/// `24`, `0.003`: whole numbers without decimals, others with 3.
fn num(x: f64) -> String {
    if x == x.round() {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// [`NetworkLink::shared_memory_2core_vm`]'s latency (seconds): the one-way time of an 8-byte
/// message, median of the 3 `--calibrate` runs in `benches/results/mpi-2core-issue29.txt`
/// (315.5 ns in each).
const SHM_LATENCY_S: f64 = 315.5e-9;
/// [`NetworkLink::shared_memory_2core_vm`]'s bandwidth (bytes per second): the fitted slope,
/// median of the same 3 runs (11.52, 11.98, 12.33 GB/s).
const SHM_BANDWIDTH: f64 = 11.98e9;

#[cfg(test)]
mod tests {
    use super::*;

    fn b24() -> ItemBytes {
        ItemBytes { in_bytes: 24.0, out_bytes: 0.0 }
    }

    fn link(lat: f64, bw: f64) -> NetworkLink {
        NetworkLink {
            label: "test".into(),
            latency_s: lat,
            bandwidth_bytes_per_s: bw,
            source: LinkSource::Measured { on: "a unit test".into() },
        }
    }

    /// With a linear compute the crossover has a closed form: the gap is
    /// n·[b(1 − 1/k) − ((k − 1)·in + out)/(k·B)] − k·L (no intercept), zero at n* = k·L / [...].
    #[test]
    fn crossover_matches_the_closed_form() {
        for (lat, bw, per_item, ranks, out) in [
            (1e-6, 5e9, 20e-9, 2, 0.0),
            (0.6e-6, 25e9, 5e-9, 4, 8.0),
            (20e-6, 1e9, 100e-9, 8, 48.0),
            (1.93e-6, 3.125e9, 30e-9, 3, 0.0),
        ] {
            let l = link(lat, bw);
            let bytes = ItemBytes { in_bytes: 24.0, out_bytes: out };
            let k = ranks as f64;
            let slope = per_item * (1.0 - 1.0 / k) - ((k - 1.0) * 24.0 + out) / (k * bw);
            let want = k * lat / slope;
            let Crossover::At { n } = l.scatter_crossover(ranks, bytes, |n| per_item * n).unwrap() else {
                panic!("{lat} {bw} {per_item} {ranks}")
            };
            assert!(n >= want && n <= want.ceil() + 1.0, "n* {n}, closed form {want}");
            // Just below n* scattering does not pay; at n* it does.
            let at = l.scatter_time(n, ranks, bytes, |n| per_item * n).unwrap();
            assert!(at.scattered < at.local, "{at:?}");
            let below = l.scatter_time(n - 2.0, ranks, bytes, |n| per_item * n).unwrap();
            assert!(below.scattered >= below.local, "{below:?}");
        }
    }

    /// A compute intercept (a fixed cost per call, paid by each rank) moves n* down: each rank
    /// pays it once, at the same time, so scattering does not add it.
    #[test]
    fn a_fixed_compute_cost_is_paid_once_per_rank() {
        let l = link(10e-6, 1e9);
        let plain = l.scatter_crossover(2, b24(), |n| 50e-9 * n).unwrap();
        let fixed = l.scatter_crossover(2, b24(), |n| 5e-6 + 50e-9 * n).unwrap();
        let (Crossover::At { n: a }, Crossover::At { n: b }) = (plain, fixed) else { panic!() };
        assert_eq!(a, b, "the intercept is paid once on either side");
    }

    #[test]
    fn link_bound_kernels_never_pay_and_say_why() {
        // 24 B at 1 GB/s = 24 ns on the wire; 2 ranks save 10 ns of a 20 ns item.
        let c = link(1e-6, 1e9).scatter_crossover(2, b24(), |n| 20e-9 * n).unwrap();
        let Crossover::Never { reason, .. } = c else { panic!("{c:?}") };
        assert!(reason.starts_with("link-bound: per item, 2 ranks save 10.000 ns"), "{reason}");
        assert!(reason.contains("24 B in and 0 B out at 1.00 GB/s cost 12.000 ns"), "{reason}");
        let one = link(1e-6, 1e9).scatter_crossover(1, b24(), |n| n).unwrap();
        assert!(matches!(one, Crossover::Never { .. }));
    }

    #[test]
    fn a_free_link_pays_from_the_first_items() {
        let c = link(0.0, 1e30).scatter_crossover(2, b24(), |n| 1e-9 * n).unwrap();
        assert_eq!(c, Crossover::Always);
    }

    #[test]
    fn faster_links_pay_sooner() {
        let cpu = |n: f64| 20e-9 * n;
        let n = |l: NetworkLink| match l.scatter_crossover(2, b24(), cpu).unwrap() {
            Crossover::At { n } => n,
            c => panic!("{c:?}"),
        };
        let (eth, ib) = (n(NetworkLink::ethernet_25g()), n(NetworkLink::infiniband_hdr()));
        assert!(ib < eth, "HDR {ib} vs 25 GbE {eth}");
    }

    #[test]
    fn fit_recovers_latency_and_bandwidth() {
        let s: Vec<PingPong> = [0.0, 64.0, 4096.0, 65536.0, 1048576.0]
            .iter()
            .map(|&b| PingPong { bytes: b, round_trip_s: 2.0 * (3e-6 + b / 4e9) })
            .collect();
        let l = NetworkLink::fit(&s, "loopback", "a test").unwrap();
        assert!((l.latency_s - 3e-6).abs() < 1e-15);
        assert!((l.bandwidth_bytes_per_s - 4e9).abs() < 1.0);
        assert_eq!(l.source, LinkSource::Measured { on: "a test".into() });
    }

    #[test]
    fn bad_inputs_are_clear_errors() {
        let ok = PingPong { bytes: 8.0, round_trip_s: 1e-6 };
        for (s, want) in [
            (vec![], "no samples"),
            (vec![ok, ok], "all of 8 B"),
            (vec![ok, PingPong { bytes: 1e6, round_trip_s: f64::NAN }], "positive and finite"),
            (vec![ok, PingPong { bytes: -1.0, round_trip_s: 1.0 }], "finite number of bytes"),
            (vec![ok, PingPong { bytes: 1e6, round_trip_s: 0.5e-6 }], "no slower than the smallest"),
        ] {
            let e = NetworkLink::fit(&s, "x", "y").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let e = link(1e-6, 0.0).scatter_crossover(2, b24(), |n| n).unwrap_err().to_string();
        assert!(e.contains("bandwidth must be positive"), "{e}");
        let e = link(1e-6, 1e9).scatter_crossover(0, b24(), |n| n).unwrap_err().to_string();
        assert!(e.contains("at least 1 rank"), "{e}");
        let e = link(1e-6, 1e9).scatter_time(f64::NAN, 2, b24(), |n| n).unwrap_err().to_string();
        assert!(e.contains("finite count"), "{e}");
    }

    #[test]
    fn the_presets_say_where_their_figures_come_from() {
        let p = NetworkLink::presets();
        assert_eq!(p.len(), 3);
        for l in &p[1..] {
            assert!(l.describe().contains("published figures, not measured"), "{}", l.describe());
        }
        assert!(p[0].describe().contains("measured on"), "{}", p[0].describe());
    }
}
