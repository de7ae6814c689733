//! The traffic side of the benchmark: traces that do not repeat, a NIC that writes each
//! packet's frame into the batch's receive buffer, the sinks, and the check of every output
//! frame against the reference.

use super::cases::{Flow, Rng, Workload};
use super::frames::{FrameBytes, FRAME_LEN};
use super::reference::Verdict;
use dataplane::batch::{PacketBatch, PacketInEvent, PacketSink};
use dataplane::datapath::DatapathReader;

/// A trace: flow indices in a random order, each flow equally often.
///
/// `min_packets` or ten packets per flow, whichever is more, shuffled as a whole (Fisher-Yates),
/// so no flow's packets follow a pattern a branch predictor or a prefetcher could learn, and a
/// cache holds the flows only if it holds them all.
pub fn trace(flows: usize, min_packets: usize, rng: &mut Rng) -> Vec<u32> {
    let per_flow = min_packets.div_ceil(flows.max(1)).max(10);
    let mut t: Vec<u32> = (0..flows as u32)
        .flat_map(|f| std::iter::repeat_n(f, per_flow))
        .collect();
    for i in (1..t.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        t.swap(i, j);
    }
    t
}

/// What writes a batch's received frames from a trace, as a NIC writes its receive ring.
pub trait Fill {
    /// Fills `batch` (emptied first) with the trace's next packets, wrapping at its end.
    fn fill(&mut self, batch: &mut PacketBatch);
}

/// A trace's packets through a reader: the NIC fills a batch, the datapath consumes it.
pub struct Traffic<N, S> {
    pub nic: N,
    pub batch: PacketBatch,
    pub sink: S,
    /// The clock the datapath sees (meters, timeouts), stepped every 64 batches.
    batches: u64,
}

impl<N: Fill, S: PacketSink> Traffic<N, S> {
    pub fn new(nic: N, batch: PacketBatch, sink: S) -> Self {
        Traffic {
            nic,
            batch,
            sink,
            batches: 0,
        }
    }

    /// One batch through `reader`; returns its packets.
    #[inline(always)]
    pub fn step(&mut self, reader: &mut DatapathReader) -> u64 {
        self.nic.fill(&mut self.batch);
        let n = self.batch.len() as u64;
        self.batches += 1;
        reader.process(1 + (self.batches >> 6), &mut self.batch, &mut self.sink);
        n
    }
}

/// A frame on a cache line of its own, as a NIC's receive buffers are.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line(FrameBytes);

/// What a NIC would receive: each flow's frame and ingress port, written into the batch's
/// receive buffer packet by packet as the trace names the flows. The trace holds indices, so
/// the benchmark reads 4 bytes of trace and one line of frame per packet, not a frame per
/// packet of a trace as long as the run.
pub struct Nic<'t> {
    frames: Vec<Line>,
    in_ports: Vec<u32>,
    trace: &'t [u32],
    next: usize,
}

/// How far ahead in the trace the NIC starts loading a flow's frame.
const FRAME_AHEAD: usize = 16;

impl<'t> Nic<'t> {
    pub fn new(flows: &[Flow], trace: &'t [u32]) -> Self {
        Nic {
            frames: flows.iter().map(|f| Line(f.frame)).collect(),
            in_ports: flows.iter().map(|f| f.in_port).collect(),
            trace,
            next: 0,
        }
    }
}

impl Fill for Nic<'_> {
    #[inline(always)]
    fn fill(&mut self, batch: &mut PacketBatch) {
        batch.clear();
        for _ in 0..batch.capacity() {
            if let Some(&ahead) = self.trace.get(self.next + FRAME_AHEAD) {
                if let Some(line) = self.frames.get(ahead as usize) {
                    prefetch(line);
                }
            }
            let f = self.trace.get(self.next).map_or(0, |&f| f as usize);
            if let (Some(Line(frame)), Some(&port)) = (self.frames.get(f), self.in_ports.get(f)) {
                batch.push_with(port, |buf| match buf.first_chunk_mut::<FRAME_LEN>() {
                    Some(dst) => {
                        *dst = *frame;
                        FRAME_LEN
                    }
                    None => 0,
                });
            }
            // Wrapping by comparison: a division per packet would be the benchmark's own cost.
            self.next += 1;
            if self.next == self.trace.len() {
                self.next = 0;
            }
        }
    }
}

/// Hints the CPU to load `p`'s cache line.
#[inline(always)]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults and changes nothing observable.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(core::ptr::from_ref(p).cast::<i8>());
    }
}

/// Counts what comes out and folds where it went into a sum (which also keeps the outputs
/// from being optimised away). The timed runs use it; the check uses [`Recorder`].
#[derive(Default)]
pub struct CountingSink {
    pub outputs: u64,
    pub packet_ins: u64,
    pub sum: u64,
}

impl PacketSink for CountingSink {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.outputs += 1;
        let head = frame
            .first_chunk::<8>()
            .map_or(0, |h| u64::from_le_bytes(*h));
        self.sum = self.sum.rotate_left(5).wrapping_add(u64::from(port) ^ head);
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        self.packet_ins += 1;
        self.sum = self.sum.wrapping_add(u64::from(ev.total_len));
    }
}

/// Keeps every output whole, for the check.
#[derive(Default)]
struct Recorder {
    outputs: Vec<(u32, Vec<u8>)>,
    packet_ins: usize,
}

impl PacketSink for Recorder {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.outputs.push((port, frame.to_vec()));
    }

    fn packet_in(&mut self, _ev: &PacketInEvent<'_>) {
        self.packet_ins += 1;
    }
}

/// Runs the flows `order` names through `process`, a batch at a time, and compares each
/// batch's outputs, as a multiset of (port, whole frame), and its packet-ins with what the
/// reference says of its flows. The datapath runs a batch table by table, so outputs leave
/// in another order than the packets came.
pub fn check(
    w: &Workload,
    expected: &[Verdict],
    order: impl Iterator<Item = u32>,
    batch_size: usize,
    process: &mut impl FnMut(&mut PacketBatch, &mut dyn PacketSink),
) -> Result<u64, String> {
    let order: Vec<u32> = order.collect();
    let mut batch = PacketBatch::new(batch_size, 2048);
    let mut checked = 0u64;
    for chunk in order.chunks(batch_size) {
        batch.clear();
        let mut want = Vec::new();
        let mut want_packet_ins = 0;
        for &f in chunk {
            let flow = &w.flows[f as usize];
            batch.push(flow.in_port, &flow.frame);
            match &expected[f as usize] {
                Verdict::Output(port, frame) => want.push((*port, frame.to_vec())),
                Verdict::Controller => want_packet_ins += 1,
                Verdict::Drop => {}
            }
        }
        let mut got = Recorder::default();
        process(&mut batch, &mut got);
        let mut got_outputs = got.outputs;
        want.sort();
        got_outputs.sort();
        if got_outputs != want || got.packet_ins != want_packet_ins {
            return Err(describe_mismatch(
                &want,
                &got_outputs,
                want_packet_ins,
                got.packet_ins,
            ));
        }
        checked += chunk.len() as u64;
    }
    Ok(checked)
}

fn describe_mismatch(
    want: &[(u32, Vec<u8>)],
    got: &[(u32, Vec<u8>)],
    want_packet_ins: usize,
    got_packet_ins: usize,
) -> String {
    let missing = want.iter().find(|o| !got.contains(o));
    let extra = got.iter().find(|o| !want.contains(o));
    let show = |o: Option<&(u32, Vec<u8>)>| {
        o.map_or("none".to_string(), |(port, frame)| {
            let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
            format!("port {port}: {hex}")
        })
    };
    format!(
        "{} outputs expected, {} sent; {want_packet_ins} packet-ins expected, {got_packet_ins} \
         sent\n  first expected output not sent: {}\n  first output sent but not expected: {}",
        want.len(),
        got.len(),
        show(missing),
        show(extra)
    )
}
