//! Hedge orders: the order gateway (a loopback server that acks), and the sender that keeps
//! a bounded, netted queue of orders while the gateway is away.
//!
//! # Protocol
//! An order is a [`FRAME`]-byte frame: magic `ORDR`, underlying, order id, quantity (f64
//! shares, signed). The gateway answers each with an `OACK` frame carrying the order's id, in
//! order. The sender writes every queued order, then reads one ack per order; an order whose
//! ack did not come back (the connection failed) goes back in the queue.
//!
//! # Bounded, never dropped
//! The queue holds at most one order per underlying: a new hedge for an underlying whose order
//! is still queued is **netted** into it (quantities add, the earliest tick stamp stays), and
//! counted. So the queue never exceeds the underlyings, and every hedge the desk decided is in
//! exactly one place: acked, queued, or netted into a queued or acked order. At shutdown,
//! orders the gateway never took are reported as pending, with the gateway's last error.

use super::feed::FRAME;
use gmprt::kernels::segmented::GreekSums;
use gmprt::net::{TcpListener, TcpStream};
use gmprt::runtime::time::sleep;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ORDER: u32 = u32::from_le_bytes(*b"ORDR");
/// The trace flow of the hedge a tick caused, from its risk update to its ack (bit 62 set, so
/// it never meets the tick's own flow, `feed::flow_id`).
pub fn order_flow_id(seq: u64) -> u64 {
    super::feed::flow_id(seq) | (1 << 62)
}

/// The `seq` of a hedge no tick caused (the desk's opening hedges): not in tick → ack.
pub const NO_TICK: u64 = u64::MAX;
const ACK: u32 = u32::from_le_bytes(*b"OACK");

/// One hedge order.
#[derive(Clone, Copy, Debug)]
pub struct Order {
    /// Order id (from 1).
    pub id: u64,
    /// Underlying.
    pub underlying: u32,
    /// Shares to buy (> 0) or sell (< 0).
    pub qty: f64,
    /// When the oldest tick behind this hedge arrived (tick → order acked counts from here).
    pub tick_arrival: Instant,
    /// That tick's sequence number (the trace's flow).
    pub seq: u64,
}

fn frame(magic: u32, underlying: u32, id: u64, qty: f64) -> [u8; FRAME] {
    let mut b = [0u8; FRAME];
    b[0..4].copy_from_slice(&magic.to_le_bytes());
    b[4..8].copy_from_slice(&underlying.to_le_bytes());
    b[8..16].copy_from_slice(&id.to_le_bytes());
    b[16..24].copy_from_slice(&qty.to_le_bytes());
    b
}

fn parse(b: &[u8], want: u32) -> Result<(u32, u64, f64), String> {
    let magic = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
    if magic != want {
        return Err(format!("bad magic {magic:#010x} (expected {want:#010x})"));
    }
    let und = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
    let id = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    let qty = f64::from_le_bytes(b[16..24].try_into().expect("8 bytes"));
    Ok((und, id, qty))
}

/// The order gateway: acks every order, after refusing its first `refuse_first`
/// connections (closed at once, as a gateway that is not ready yet would). Runs until
/// `stop` is set and a connection closes; returns (orders acked, connections refused).
pub async fn serve_gateway(listener: TcpListener, refuse_first: u64, stop: Arc<AtomicBool>) -> (u64, u64) {
    let (mut acked, mut refused) = (0, 0);
    // Acquire: pairs with the desk's Release store once every order is settled.
    while !stop.load(Ordering::Acquire) {
        let Ok((s, _)) = listener.accept().await else { break };
        if refused < refuse_first {
            refused += 1;
            drop(s);
            continue;
        }
        let _ = s.set_nodelay(true);
        let mut buf = vec![0u8; 16 * 1024];
        let mut have = 0;
        loop {
            let n = match s.read(&mut buf[have..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            have += n;
            let whole = have / FRAME * FRAME;
            let mut acks = Vec::with_capacity(whole);
            for chunk in buf[..whole].chunks_exact(FRAME) {
                match parse(chunk, ORDER) {
                    Ok((u, id, qty)) => acks.extend_from_slice(&frame(ACK, u, id, qty)),
                    Err(_) => break,
                }
            }
            acked += (acks.len() / FRAME) as u64;
            buf.copy_within(whole..have, 0);
            have -= whole;
            if s.write_all(&acks).await.is_err() {
                break;
            }
        }
    }
    (acked, refused)
}

/// The sender's queue and what happened to the orders.
#[derive(Default)]
pub struct Orders {
    /// Queued order per underlying (at most one: see the module doc).
    pub queued: Vec<Option<Order>>,
    /// Underlyings with a queued order, oldest first.
    pub fifo: VecDeque<u32>,
    /// Next order id.
    pub next_id: u64,
    /// Counters.
    pub stats: OrderStats,
    /// Shares acked per underlying (the hedge position the risk engine adds to its delta).
    pub filled: Vec<f64>,
}

/// What the order path did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct OrderStats {
    /// Hedges the risk engine decided.
    pub decided: u64,
    /// Hedges netted into an order still queued.
    pub netted: u64,
    /// Orders acked by the gateway.
    pub acked: u64,
    /// Orders written but not acked, then queued again (connection lost).
    pub resent: u64,
    /// Connection attempts the gateway refused or failed.
    pub refused: u64,
    /// Orders still queued at shutdown, never acked.
    pub pending_at_end: u64,
    /// The gateway's last error, if any.
    pub last_error: Option<String>,
}

impl Orders {
    /// An empty queue for `underlyings`.
    pub fn new(underlyings: usize) -> Orders {
        Orders {
            queued: vec![None; underlyings],
            filled: vec![0.0; underlyings],
            next_id: 1,
            ..Default::default()
        }
    }

    /// Queues a hedge of `qty` shares for `underlying`, netting it into a queued one.
    pub fn hedge(&mut self, underlying: u32, qty: f64, tick_arrival: Instant, seq: u64) {
        self.stats.decided += 1;
        let u = underlying as usize;
        match &mut self.queued[u] {
            Some(o) => {
                o.qty += qty;
                self.stats.netted += 1;
            }
            slot => {
                *slot = Some(Order { id: self.next_id, underlying, qty, tick_arrival, seq });
                self.next_id += 1;
                self.fifo.push_back(underlying);
            }
        }
    }

    /// Shares queued (not yet acked) for `underlying`.
    pub fn queued_qty(&self, underlying: u32) -> f64 {
        self.queued[underlying as usize].map_or(0.0, |o| o.qty)
    }

    fn take_all(&mut self) -> Vec<Order> {
        let fifo = std::mem::take(&mut self.fifo);
        fifo.into_iter().filter_map(|u| self.queued[u as usize].take()).collect()
    }

    /// Puts orders that were not acked back, oldest first, netting any newer hedge into them;
    /// `written`: they had been written to the gateway (so they count as resent).
    fn requeue(&mut self, orders: &[Order], written: bool) {
        for o in orders.iter().rev() {
            let u = o.underlying as usize;
            self.stats.resent += u64::from(written);
            match &mut self.queued[u] {
                Some(newer) => {
                    newer.qty += o.qty;
                    newer.tick_arrival = newer.tick_arrival.min(o.tick_arrival);
                }
                slot => {
                    *slot = Some(*o);
                    self.fifo.push_front(o.underlying);
                }
            }
        }
    }
}

/// How long the sender waits for a batch's acks before it counts the gateway as failed: a
/// loopback gateway acks in tens of µs, so 1 s only ever fires on one that has stopped
/// answering (which must not hang the desk's shutdown).
const ACK_TIMEOUT: Duration = Duration::from_secs(1);

/// Sends queued orders to the gateway at `addr` until `done` is set and the queue is empty,
/// or the gateway has failed `final_tries` times after `done` (refused, dropped the
/// connection, or sent no ack within [`ACK_TIMEOUT`]). Acked orders'
/// tick → ack latencies go to `ack_us`.
pub async fn send_orders(
    addr: std::net::SocketAddr,
    orders: Arc<Mutex<Orders>>,
    wake: gmprt::runtime::chan::Receiver<()>,
    done: Arc<AtomicBool>,
    final_tries: u32,
    ack_us: Arc<Mutex<hdrhistogram::Histogram<u64>>>,
) {
    let mut conn: Option<TcpStream> = None;
    let mut tries_after_done = 0;
    let mut backoff = Duration::from_millis(1);
    let rec = gmprt::runtime::trace::current();
    loop {
        // Acquire: pairs with the desk's Release store after the last risk update.
        let finishing = done.load(Ordering::Acquire);
        let batch = orders.lock().unwrap().take_all();
        if batch.is_empty() {
            if finishing {
                return;
            }
            // Woken by a new hedge, or now and then to look at `done`.
            let _ = gmprt::runtime::time::timeout(Duration::from_millis(20), wake.recv()).await;
            continue;
        }
        // One attempt: connect if there is no connection, write the batch, read its acks.
        // `written` says whether the orders reached the wire (then they count as resent).
        let mut sent = None;
        let fresh = conn.is_none();
        let (result, written) = match connect(&mut conn, addr).await {
            Err(e) => (Err(e), false),
            Ok(s) => {
                if fresh {
                    backoff = Duration::from_millis(1);
                }
                sent = rec.as_ref().map(|r| r.now());
                let r = match gmprt::runtime::time::timeout(ACK_TIMEOUT, exchange(s, &batch)).await {
                    Ok(r) => r,
                    Err(_) => Err(format!("no ack within {ACK_TIMEOUT:?}")),
                };
                (r, true)
            }
        };
        match result {
            Ok(()) => {
                let now = Instant::now();
                if let (Some(r), Some(t)) = (&rec, sent) {
                    let l = r.lane("desk", "order sender");
                    let end = r.at(now);
                    r.slice(l, "orders acked", t, end, vec![("orders", batch.len().into())]);
                    for ord in batch.iter().filter(|o| o.seq != NO_TICK) {
                        r.flow_in(l, order_flow_id(ord.seq), t + (end - t) / 2);
                    }
                }
                let mut o = orders.lock().unwrap();
                let mut h = ack_us.lock().unwrap();
                for ord in &batch {
                    o.stats.acked += 1;
                    o.filled[ord.underlying as usize] += ord.qty;
                    if ord.seq != NO_TICK {
                        let _ = h.record(now.duration_since(ord.tick_arrival).as_micros().max(1) as u64);
                    }
                }
            }
            Err(e) => {
                conn = None;
                if finishing {
                    tries_after_done += 1;
                }
                let give_up = finishing && tries_after_done >= final_tries;
                {
                    let mut o = orders.lock().unwrap();
                    o.stats.refused += 1;
                    o.stats.last_error = Some(format!("gateway {addr}: {e}"));
                    o.requeue(&batch, written);
                    if give_up {
                        o.stats.pending_at_end = o.fifo.len() as u64;
                    }
                }
                if give_up {
                    return;
                }
                sleep(backoff).await;
                // Doubling, capped: a gateway that is down is not hammered, and one that comes
                // back is found within 50 ms.
                backoff = (backoff * 2).min(Duration::from_millis(50));
            }
        }
    }
}

/// The connection to the gateway, opened if there is none.
async fn connect(conn: &mut Option<TcpStream>, addr: std::net::SocketAddr) -> Result<&TcpStream, String> {
    if conn.is_none() {
        let s = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let _ = s.set_nodelay(true);
        *conn = Some(s);
    }
    Ok(conn.as_ref().expect("connected above"))
}

/// Writes `batch` and reads one ack per order, in order.
async fn exchange(s: &TcpStream, batch: &[Order]) -> Result<(), String> {
    let mut out = Vec::with_capacity(batch.len() * FRAME);
    for o in batch {
        out.extend_from_slice(&frame(ORDER, o.underlying, o.id, o.qty));
    }
    s.write_all(&out).await.map_err(|e| format!("writing orders: {e}"))?;
    let mut acks = vec![0u8; batch.len() * FRAME];
    s.read_exact(&mut acks).await.map_err(|e| format!("reading acks: {e}"))?;
    for (o, a) in batch.iter().zip(acks.chunks_exact(FRAME)) {
        let (_, id, _) = parse(a, ACK)?;
        if id != o.id {
            return Err(format!("ack for order {id} where {} was expected", o.id));
        }
    }
    Ok(())
}

/// Queues a hedge for every underlying in `moved` whose net delta (book, acked hedges and
/// queued hedges) is past `limit`; returns the sequence numbers of the ticks behind them.
pub fn hedge(
    risk: &[GreekSums],
    moved: &[(u32, Instant, u64)],
    orders: &Mutex<Orders>,
    limit: f64,
) -> Vec<u64> {
    let mut o = orders.lock().unwrap();
    let mut seqs = Vec::new();
    for &(u, arrival, seq) in moved {
        let net = risk[u as usize].delta + o.filled[u as usize] + o.queued_qty(u);
        if net.abs() > limit {
            o.hedge(u, -net.round(), arrival, seq);
            seqs.push(seq);
        }
    }
    seqs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hedges_net_per_underlying_and_requeued_orders_keep_their_place() {
        let t = Instant::now();
        let mut o = Orders::new(3);
        o.hedge(2, 100.0, t, 1);
        o.hedge(0, -50.0, t, 2);
        o.hedge(2, 25.0, t, 3);
        assert_eq!((o.stats.decided, o.stats.netted, o.fifo.len()), (3, 1, 2));
        assert_eq!(o.queued_qty(2), 125.0);
        let batch = o.take_all();
        assert_eq!(batch.iter().map(|b| b.underlying).collect::<Vec<_>>(), [2, 0]);
        o.hedge(0, -10.0, t, 4);
        o.requeue(&batch, true);
        assert_eq!(o.fifo.iter().copied().collect::<Vec<_>>(), [2, 0]);
        assert_eq!(o.queued_qty(0), -60.0, "the newer hedge is netted into the requeued order");
        assert_eq!(o.stats.resent, 2);
    }
}
