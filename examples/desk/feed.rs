//! The desk's market data: the wire format, the feed server, and the feed handler that
//! conflates ticks into per-underlying state.
//!
//! # Wire format
//! Every frame is [`FRAME`] bytes, little-endian: a 4-byte magic, a 4-byte underlying index, an
//! 8-byte sequence number and an 8-byte f64 spot, then 8 reserved bytes. `TICK` frames carry
//! one tick each; the feed's last frame is `TEND`, whose sequence field is the number of
//! sequence numbers the feed used (`0..total`). A frame with another magic means the stream
//! lost its framing: the handler drops the connection and reconnects.
//!
//! # Accounting
//! Every sequence number in `0..total` ends in exactly one bucket:
//! * **processed**: the tick's spot was the one a risk update priced;
//! * **conflated**: a later tick of the same underlying replaced it before pricing took it
//!   (what real desks do when pricing falls behind: price the latest, count the rest);
//! * **rejected**: the frame arrived but its payload was bad (an underlying out of range, a
//!   spot that is not a positive finite number);
//! * **gap**: the number never arrived (the handler sees the sequence jump).
//!
//! The per-underlying state is bounded by the underlyings: a tick never waits in a queue.

use gmprt::net::{TcpListener, TcpStream};
use gmprt::runtime::time::{sleep, sleep_until};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes per frame.
pub const FRAME: usize = 32;
const TICK: u32 = u32::from_le_bytes(*b"TICK");
const END: u32 = u32::from_le_bytes(*b"TEND");

/// One frame of the feed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Frame {
    /// A new spot for one underlying.
    Tick { seq: u64, underlying: u32, spot: f64 },
    /// The feed is over; it used sequence numbers `0..total`.
    End { total: u64 },
}

/// The frame's bytes.
pub fn encode(f: &Frame) -> [u8; FRAME] {
    let mut b = [0u8; FRAME];
    let (magic, und, seq, spot) = match *f {
        Frame::Tick { seq, underlying, spot } => (TICK, underlying, seq, spot),
        Frame::End { total } => (END, 0, total, 0.0),
    };
    b[0..4].copy_from_slice(&magic.to_le_bytes());
    b[4..8].copy_from_slice(&und.to_le_bytes());
    b[8..16].copy_from_slice(&seq.to_le_bytes());
    b[16..24].copy_from_slice(&spot.to_le_bytes());
    b
}

/// The frame in `b`, or why the stream lost its framing.
pub fn decode(b: &[u8]) -> Result<Frame, String> {
    let word = |r: std::ops::Range<usize>| -> [u8; 8] {
        let mut w = [0u8; 8];
        w[..r.len()].copy_from_slice(&b[r]);
        w
    };
    if b.len() != FRAME {
        return Err(format!("a frame is {FRAME} bytes, got {}", b.len()));
    }
    let magic = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
    let underlying = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
    let seq = u64::from_le_bytes(word(8..16));
    let spot = f64::from_le_bytes(word(16..24));
    match magic {
        TICK => Ok(Frame::Tick { seq, underlying, spot }),
        END => Ok(Frame::End { total: seq }),
        m => Err(format!("bad magic {m:#010x} (expected TICK or TEND): the stream lost its framing")),
    }
}

/// Faults the feed server injects, for the tests (each 0 = never).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Faults {
    /// Every k-th tick carries a NaN spot (the handler rejects it).
    pub malformed_every: u64,
    /// Every k-th sequence number is skipped (the handler reports a gap).
    pub gap_every: u64,
    /// The server closes the connection after every k frames it wrote on it (the handler
    /// reconnects and the feed goes on where it stopped).
    pub disconnect_every: u64,
}

/// What the feed server sends.
#[derive(Clone, Debug)]
pub struct FeedConfig {
    /// Underlyings' starting spots (the walk starts here).
    pub spots: Vec<f64>,
    /// Sequence numbers to use in all (ticks plus gaps).
    pub ticks: u64,
    /// Mean ticks per second (Poisson arrivals); 0 sends as fast as the socket takes them.
    pub rate: f64,
    /// Every this many ticks a burst of [`FeedConfig::burst_len`] arrives at once.
    pub burst_every: u64,
    /// Ticks in a burst.
    pub burst_len: u64,
    /// The seed of the walk, the arrivals and the underlyings drawn.
    pub seed: u64,
    /// Injected faults.
    pub faults: Faults,
}

/// splitmix64: small, seedable, good enough for synthetic market data.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit().max(1e-300), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// Relative size of one tick's move: 0.1% of the spot (a liquid underlying's tick, scaled so
/// that a few thousand ticks move the book enough to hedge).
const TICK_VOL: f64 = 1e-3;

/// The feed server's state, kept across connections so a reconnect resumes the feed.
struct Walk {
    cfg: FeedConfig,
    rng: Rng,
    spots: Vec<f64>,
    next_seq: u64,
    /// When the next tick is due (paced feeds).
    due: Instant,
}

impl Walk {
    /// The next frame to send (ticks, then one `End`), and whether it is due now.
    fn next_frame(&mut self) -> Frame {
        loop {
            if self.next_seq >= self.cfg.ticks {
                return Frame::End { total: self.cfg.ticks };
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            let f = &self.cfg.faults;
            if f.gap_every > 0 && seq % f.gap_every == f.gap_every - 1 {
                continue; // never sent: the handler sees the jump
            }
            let u = (self.rng.next_u64() % self.spots.len() as u64) as usize;
            self.spots[u] *= (TICK_VOL * self.rng.normal()).exp();
            let mut spot = self.spots[u];
            if f.malformed_every > 0 && seq % f.malformed_every == f.malformed_every - 1 {
                spot = f64::NAN;
            }
            return Frame::Tick { seq, underlying: u as u32, spot };
        }
    }

    /// Advances `due` past one tick: an exponential gap, or none inside a burst.
    fn advance_clock(&mut self) {
        if self.cfg.rate <= 0.0 {
            return;
        }
        let in_burst = self.cfg.burst_every > 0 && self.next_seq % self.cfg.burst_every < self.cfg.burst_len;
        if !in_burst {
            let gap = -self.rng.unit().max(1e-12).ln() / self.cfg.rate;
            self.due += Duration::from_secs_f64(gap);
        }
    }
}

/// Serves the feed on `listener` until its `End` frame has been written, one connection at a
/// time; returns the number of connections it served.
pub async fn serve(listener: TcpListener, cfg: FeedConfig) -> std::io::Result<u64> {
    let seed = cfg.seed;
    let spots = cfg.spots.clone();
    let mut w = Walk { cfg, rng: Rng(seed ^ 0xFEED), spots, next_seq: 0, due: Instant::now() };
    let mut connections = 0;
    let mut pending: Option<Frame> = None;
    loop {
        let (s, _) = listener.accept().await?;
        s.set_nodelay(true)?;
        connections += 1;
        if w.cfg.rate > 0.0 && connections == 1 {
            w.due = Instant::now();
        }
        let mut written_here = 0u64;
        let mut buf = Vec::with_capacity(64 * FRAME);
        loop {
            // Everything due now goes in one write (a paced feed at a high rate sends batches).
            let now = Instant::now();
            let mut end = false;
            while buf.len() < 64 * FRAME && (w.cfg.rate <= 0.0 || w.due <= now) {
                let f = pending.take().unwrap_or_else(|| w.next_frame());
                buf.extend_from_slice(&encode(&f));
                written_here += 1;
                if matches!(f, Frame::End { .. }) {
                    end = true;
                    break;
                }
                w.advance_clock();
                let d = w.cfg.faults.disconnect_every;
                if d > 0 && written_here.is_multiple_of(d) {
                    break;
                }
            }
            if !buf.is_empty() {
                if let Err(e) = s.write_all(&buf).await {
                    return Err(std::io::Error::new(e.kind(), format!("feed: writing to the desk: {e}")));
                }
                buf.clear();
            }
            if end {
                return Ok(connections);
            }
            let d = w.cfg.faults.disconnect_every;
            if d > 0 && written_here > 0 && written_here.is_multiple_of(d) {
                break; // the injected disconnect: close, and resume on the next connection
            }
            if w.cfg.rate > 0.0 && w.due > Instant::now() {
                sleep_until(w.due).await;
            }
        }
    }
}

/// The tick arrivals a risk update has not priced yet, per underlying.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// When the oldest unpriced tick of this underlying arrived (tick → risk counts from here).
    pub first_arrival: Instant,
    /// The latest tick's sequence number.
    pub seq: u64,
}

/// The feed handler's shared state: the latest spot and the unpriced ticks of each
/// underlying, and the accounting.
pub struct Market {
    /// Latest spot per underlying.
    pub spots: Vec<f64>,
    /// Unpriced ticks per underlying.
    pub pending: Vec<Option<Pending>>,
    /// Underlyings with a pending tick, in arrival order.
    pub dirty: Vec<u32>,
    /// The accounting (module doc).
    pub acct: Accounting,
    /// The next sequence number expected.
    pub expect: u64,
    /// The feed's total, once its `End` arrived.
    pub total: Option<u64>,
}

/// Where every sequence number went, and what went wrong on the way.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Accounting {
    /// Priced.
    pub processed: u64,
    /// Replaced by a later tick of the same underlying before pricing.
    pub conflated: u64,
    /// Bad payload.
    pub rejected: u64,
    /// Never arrived.
    pub gaps: u64,
    /// Connections the feed closed before its end.
    pub disconnects: u64,
    /// Connections dropped because the stream lost its framing.
    pub framing_errors: u64,
    /// The first few problems, in words.
    pub messages: Vec<String>,
}

impl Accounting {
    fn note(&mut self, m: String) {
        // A handful is enough to say what went wrong; the counters say how often.
        if self.messages.len() < 8 {
            self.messages.push(m);
        }
    }
}

impl Market {
    /// A market at `spots`, nothing pending.
    pub fn new(spots: Vec<f64>) -> Market {
        let n = spots.len();
        Market {
            spots,
            pending: vec![None; n],
            dirty: Vec::new(),
            acct: Accounting::default(),
            expect: 0,
            total: None,
        }
    }

    /// Applies one decoded frame that arrived at `at`; true if a risk update is now needed.
    pub fn apply(&mut self, f: Frame, at: Instant) -> bool {
        match f {
            Frame::End { total } => {
                if total > self.expect {
                    self.acct.gaps += total - self.expect;
                    self.acct.note(format!("gap: sequence numbers {}..{total} never arrived", self.expect));
                    self.expect = total;
                }
                self.total = Some(total);
                false
            }
            Frame::Tick { seq, underlying, spot } => {
                if seq < self.expect {
                    self.acct.note(format!(
                        "tick {seq} arrived after {} (out of order): ignored",
                        self.expect - 1
                    ));
                    return false;
                }
                if seq > self.expect {
                    self.acct.gaps += seq - self.expect;
                    self.acct.note(format!("gap: sequence numbers {}..{seq} never arrived", self.expect));
                }
                self.expect = seq + 1;
                let u = underlying as usize;
                if u >= self.spots.len() || !spot.is_finite() || spot <= 0.0 {
                    self.acct.rejected += 1;
                    self.acct.note(format!(
                        "tick {seq} rejected: underlying {underlying} (of {}), spot {spot}",
                        self.spots.len()
                    ));
                    return false;
                }
                self.spots[u] = spot;
                match &mut self.pending[u] {
                    Some(p) => {
                        self.acct.conflated += 1;
                        p.seq = seq;
                        false
                    }
                    slot => {
                        *slot = Some(Pending { first_arrival: at, seq });
                        self.dirty.push(underlying);
                        true
                    }
                }
            }
        }
    }

    /// Takes every pending underlying (for one risk update): their indices, spots and
    /// pending ticks; each counts as one processed tick.
    pub fn take_dirty(&mut self) -> Vec<(u32, f64, Pending)> {
        let dirty = std::mem::take(&mut self.dirty);
        let mut out = Vec::with_capacity(dirty.len());
        for u in dirty {
            let p = self.pending[u as usize].take().expect("a dirty underlying has a pending tick");
            self.acct.processed += 1;
            out.push((u, self.spots[u as usize], p));
        }
        out
    }
}

/// How the handler reaches the feed.
pub struct Handler {
    /// The feed's address.
    pub addr: std::net::SocketAddr,
    /// The shared market state.
    pub market: Arc<Mutex<Market>>,
    /// Woken (a token, capacity 1) when an underlying turns dirty and when the feed ends.
    pub wake: gmprt::runtime::chan::Sender<()>,
    /// Reconnect attempts in a row before the handler gives up.
    pub max_retries: u32,
}

impl Handler {
    /// Reads the feed until its `End` frame, reconnecting after a disconnect; `Err` says why
    /// it gave up.
    pub async fn run(self) -> Result<(), String> {
        let mut failures = 0;
        loop {
            let s = match TcpStream::connect(self.addr).await {
                Ok(s) => s,
                Err(e) => {
                    failures += 1;
                    if failures > self.max_retries {
                        return Err(format!(
                            "feed {}: {failures} connection attempts in a row failed: {e}",
                            self.addr
                        ));
                    }
                    sleep(Duration::from_millis(1 << failures.min(6))).await;
                    continue;
                }
            };
            failures = 0;
            let _ = s.set_nodelay(true);
            match self.read_stream(&s).await {
                Ok(true) => {
                    let _ = self.wake.try_send(());
                    return Ok(());
                }
                Ok(false) => self.market.lock().unwrap().acct.disconnects += 1,
                Err(m) => {
                    let mut mk = self.market.lock().unwrap();
                    mk.acct.framing_errors += 1;
                    mk.acct.note(m);
                }
            }
        }
    }

    /// Reads one connection: `Ok(true)` at the feed's end, `Ok(false)` if it closed first.
    async fn read_stream(&self, s: &TcpStream) -> Result<bool, String> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut have = 0;
        let rec = gmprt::runtime::trace::current();
        let lane = rec.as_ref().map(|r| r.lane("desk", "feed handler"));
        loop {
            let n = s.read(&mut buf[have..]).await.map_err(|e| format!("feed: read: {e}"))?;
            if n == 0 {
                if have > 0 {
                    return Err(format!("feed closed {have} bytes into a frame"));
                }
                return Ok(false);
            }
            have += n;
            let at = Instant::now();
            let whole = have / FRAME * FRAME;
            let mut wake = false;
            let mut end = false;
            let mut first_seq = None;
            {
                let mut m = self.market.lock().unwrap();
                for chunk in buf[..whole].chunks_exact(FRAME) {
                    let f = decode(chunk)?;
                    if let (Some(r), Some(l), Frame::Tick { seq, .. }) = (&rec, lane, &f) {
                        // A tick's flow starts at the socket read that brought it and ends in
                        // the risk update that priced it (a conflated tick's flow ends nowhere).
                        r.flow_out(l, flow_id(*seq), r.at(at));
                        first_seq.get_or_insert(*seq);
                    }
                    end |= matches!(f, Frame::End { .. });
                    wake |= m.apply(f, at);
                }
            }
            if let (Some(r), Some(l)) = (&rec, lane) {
                let args = vec![("frames", (whole / FRAME).into()), ("first_seq", first_seq.into())];
                r.slice(l, "ticks read", r.at(at), r.now(), args);
            }
            buf.copy_within(whole..have, 0);
            have -= whole;
            if wake {
                let _ = self.wake.try_send(());
            }
            if end {
                return Ok(true);
            }
        }
    }
}

/// A tick's trace flow id: high bit set, so it never meets the runtime's own flow ids.
pub fn flow_id(seq: u64) -> u64 {
    (1 << 63) | seq
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_bad_magic_is_a_framing_error() {
        for f in [Frame::Tick { seq: 7, underlying: 3, spot: 101.25 }, Frame::End { total: 99 }] {
            assert_eq!(decode(&encode(&f)).unwrap(), f);
        }
        let mut b = encode(&Frame::End { total: 1 });
        b[0] = b'X';
        assert!(decode(&b).unwrap_err().contains("bad magic"));
        assert!(decode(&b[..31]).unwrap_err().contains("32 bytes"));
    }

    #[test]
    fn every_sequence_number_lands_in_one_bucket() {
        let t = Instant::now();
        let mut m = Market::new(vec![100.0; 3]);
        let tick = |seq, underlying, spot| Frame::Tick { seq, underlying, spot };
        assert!(m.apply(tick(0, 0, 101.0), t));
        assert!(!m.apply(tick(1, 0, 102.0), t), "conflated into the pending tick");
        assert!(!m.apply(tick(2, 9, 1.0), t), "underlying out of range");
        assert!(!m.apply(tick(3, 1, f64::NAN), t), "NaN spot");
        assert!(m.apply(tick(5, 1, 99.0), t), "after a gap of one");
        let taken = m.take_dirty();
        assert_eq!(taken.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(), [(0, 102.0), (1, 99.0)]);
        m.apply(Frame::End { total: 8 }, t);
        let a = &m.acct;
        assert_eq!((a.processed, a.conflated, a.rejected, a.gaps), (2, 1, 2, 3));
        assert_eq!(a.processed + a.conflated + a.rejected + a.gaps, 8);
    }
}
