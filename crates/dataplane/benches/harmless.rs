//! Table II of seed 000 in HARMLESS form, beside the same cells without a trunk, in one run:
//! the four pipelines of the `table2` benchmark (its workloads, traces, reference, installation
//! and timing, shared through `#[path]`) at 100 to 100K flows, one core, 64-byte packets, in
//! memory. Then the Fig. 9 analogue: L3/100K and LB/10K with one and two datapath threads.
//! Results: `docs/bench/harmless.md`.
//!
//! Three forms of the same datapath, installed once per cell, differing only in the trunk:
//! - direct: each packet's frame sits in a NIC receive buffer as it arrived on its port's own
//!   interface (64 bytes) and is copied into the batch as the daemon's receive path copies it
//!   (`RxFrame::copy_restored`); each output frame is copied into a transmit buffer, as the
//!   daemon copies it into a ring;
//! - HARMLESS, every port a logical port of one trunk (port p is VLAN 100 + p), the tag beside
//!   the frame: AF_PACKET's kernel (or a NIC that strips VLAN tags) took it off and reports
//!   it; the trunk's VLAN map names the port (`ports::trunk::VlanMap::receive`);
//! - HARMLESS, the tag in the frame (as AF_XDP delivers it): 68 bytes, spanning two cache
//!   lines, copied into the batch around the tag.
//!
//! In both HARMLESS forms each output is copied into the transmit buffer with its port's tag
//! inserted (`ports::write_tagged`). The direct form's copies are the daemon's, so its figures
//! sit below `table2`'s, whose NIC writes a fixed 64 bytes and whose sink copies nothing.
//!
//! What keeps the comparison honest:
//! - every form runs the same installed pipeline over the same trace, with the same transmit
//!   buffer and the same per-port lookup of the tag to push (none, for the direct form);
//! - before timing, every flow's packet and a stretch of the trace go through each form, and
//!   each output leaving the transmit buffer is decoded (a HARMLESS one through the trunk's
//!   VLAN map, as the legacy switch would) and compared whole with the reference;
//! - slices alternate between the forms (41 rounds of one 50 ms slice per form, the forms in
//!   a rotating order), so the rest of the machine loads them alike; a cell's ratio is the
//!   median of the rounds' ratios, judged against 95%;
//! - the packets' ports and stripped tags come with the trace, as a receive ring's descriptors
//!   bring them, so no form pays a lookup per flow that the others do not.
//!
//! `cargo bench -p dataplane --bench harmless`. Environment: `HAIRPIN_BENCH_QUICK=1` (short
//! slices), `HAIRPIN_BENCH_ONLY=LB:10000` (cells, as in `table2`; `threads` for only the
//! Fig. 9 runs), `HAIRPIN_BENCH_JSON=path`, `HAIRPIN_BENCH_TRACE_PACKETS=n`;
//! `HAIRPIN_BENCH_PACKETS=n` with `HAIRPIN_BENCH_FORM=direct|beside|in-frame` runs exactly `n`
//! packets of each selected cell in one form, untimed and unchecked, for instruction counts.

#[path = "table2/cases.rs"]
#[allow(dead_code)] // shared with table2, which uses all of it
mod cases;
#[path = "table2/frames.rs"]
#[allow(dead_code)]
mod frames;
#[path = "table2/install.rs"]
mod install;
#[path = "table2/reference.rs"]
#[allow(dead_code)]
mod reference;
#[path = "table2/timing.rs"]
mod timing;
#[path = "table2/traffic.rs"]
#[allow(dead_code)]
mod traffic;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use cases::{Flow, Rng, Workload, CASES};
use dataplane::batch::{PacketBatch, PacketInEvent, PacketSink, BURST};
use dataplane::datapath::{DatapathReader, DatapathReaderFactory};
use frames::FRAME_LEN;
use install::install;
use ports::trunk::{vlan_tag, VlanMap};
use ports::{write_tagged, RxFrame, VlanTag};
use reference::{Verdict, EXTERNAL};
use timing::{loadavg, median, slice, Slice};
use traffic::Fill;

/// Large tables on huge pages, as in the daemon.
#[global_allocator]
static ALLOC: dataplane::hugepages::HugePageAlloc = dataplane::hugepages::HugePageAlloc;

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
/// Timed slices per form and cell, in pairs (one of each form, in turns first).
const SLICES: usize = 41;
/// Packets of the trace checked after every flow's own.
const CHECKED_TRACE: usize = 1 << 14;
/// A tagged frame's length on the trunk.
const TAGGED_LEN: usize = FRAME_LEN + 4;
/// What a HARMLESS cell must reach of its direct cell (seed 000: 90-95%).
const TARGET_RATIO: f64 = 0.95;
/// Transmit buffer slots (one batch's outputs).
const TX_SLOTS: usize = BURST;
const TX_SLOT: usize = 128;

/// Port `p`'s VLAN on the trunk.
fn vid(port: u32) -> u16 {
    100 + port as u16
}

/// The trunk's VLAN map: every port of the pipelines, VLAN 100 + p.
fn trunk_map() -> VlanMap {
    let mut map = VlanMap::new();
    for port in 1..=EXTERNAL {
        map.insert(vid(port), port).expect("one VLAN per port");
    }
    map
}

struct Options {
    quick: bool,
    trace_packets: usize,
    slice: Duration,
    only: Option<String>,
    /// Run exactly this many packets of each selected cell in one form, untimed (for
    /// instruction counts under callgrind).
    count: Option<(u64, Form)>,
}

impl Options {
    fn from_env() -> Self {
        let quick = std::env::var("HAIRPIN_BENCH_QUICK").is_ok_and(|v| v != "0" && !v.is_empty());
        Options {
            quick,
            trace_packets: std::env::var("HAIRPIN_BENCH_TRACE_PACKETS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1_000_000),
            slice: Duration::from_millis(if quick { 5 } else { 50 }),
            only: std::env::var("HAIRPIN_BENCH_ONLY").ok(),
            count: std::env::var("HAIRPIN_BENCH_PACKETS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(|n| {
                    let form = match std::env::var("HAIRPIN_BENCH_FORM").as_deref() {
                        Ok("beside") => Form::TagBeside,
                        Ok("in-frame") => Form::TagInFrame,
                        _ => Form::Direct,
                    };
                    (n, form)
                }),
        }
    }

    fn selected(&self, name: &str) -> bool {
        self.only.as_deref().is_none_or(|o| {
            o.split(',')
                .any(|c| c == name || c.split(':').next() == Some(name))
        })
    }

    fn cell_selected(&self, name: &str, flows: usize) -> bool {
        self.only.as_deref().is_none_or(|o| {
            o.split(',')
                .any(|c| c == name || c == format!("{name}:{flows}"))
        })
    }
}

/// How frames reach the datapath thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Each port an interface of its own.
    Direct,
    /// Every port a VLAN of one trunk, the tag beside the frame: AF_PACKET (the kernel removed
    /// it and reports it in PACKET_AUXDATA), or a NIC that strips VLAN tags into its receive
    /// descriptors.
    TagBeside,
    /// Every port a VLAN of one trunk, the tag in the frame's bytes (AF_XDP): 68 bytes that
    /// the receive path copies around the tag.
    TagInFrame,
}

const FORMS: [Form; 3] = [Form::Direct, Form::TagBeside, Form::TagInFrame];

impl Form {
    fn trunk(self) -> bool {
        self != Form::Direct
    }

    fn name(self) -> &'static str {
        match self {
            Form::Direct => "direct",
            Form::TagBeside => "tag beside",
            Form::TagInFrame => "tag in frame",
        }
    }
}

/// One packet of a trace as a receive ring's descriptor gives it: its flow (whose frame sits in
/// a receive buffer), the port it arrived on (the ring's, for a port of its own) and the tag
/// the NIC or kernel took off (for a trunk that strips tags). Read in order, as a ring is.
#[derive(Clone, Copy)]
struct Arrival {
    flow: u32,
    port: u16,
    tci: u16,
}

/// The trace's packets as descriptors.
fn arrivals(flows: &[Flow], order: impl Iterator<Item = u32>) -> Vec<Arrival> {
    order
        .map(|f| {
            let port = flows.get(f as usize).map_or(0, |flow| flow.in_port);
            Arrival {
                flow: f,
                port: port as u16,
                tci: vid(port),
            }
        })
        .collect()
}

/// One flow's frame in a receive buffer of the NIC, as it arrived: 64 bytes, or 68 with the
/// trunk's tag in it (which then span two cache lines).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct RxBuffer([u8; 128]);

/// A NIC's receive buffers and the daemon's receive path over them, the same for every form
/// but for the trunk: each frame is copied into the batch as `ports` hands it over (a
/// variable-length copy), on its port's own interface or, through the trunk's VLAN map,
/// without the trunk tag.
struct WireNic<'t> {
    buffers: Vec<RxBuffer>,
    form: Form,
    /// A frame's length in its buffer.
    len: usize,
    vlans: VlanMap,
    trace: &'t [Arrival],
    next: usize,
    /// Trunk frames that reached no port (stays 0: every flow's port is on the trunk).
    dropped: u64,
}

impl<'t> WireNic<'t> {
    fn new(flows: &[Flow], trace: &'t [Arrival], form: Form, start: usize) -> Self {
        let buffers = flows
            .iter()
            .map(|f| {
                let mut buffer = RxBuffer([0; 128]);
                if form == Form::TagInFrame {
                    write_tagged(&f.frame, vlan_tag(vid(f.in_port)), &mut buffer.0).expect("fits");
                } else {
                    buffer.0[..FRAME_LEN].copy_from_slice(&f.frame);
                }
                buffer
            })
            .collect();
        WireNic {
            buffers,
            form,
            len: if form == Form::TagInFrame {
                TAGGED_LEN
            } else {
                FRAME_LEN
            },
            vlans: trunk_map(),
            trace,
            next: start % trace.len().max(1),
            dropped: 0,
        }
    }

    /// Receives the packet `a` describes into `batch`.
    #[inline(always)]
    fn receive(&mut self, batch: &mut PacketBatch, a: Arrival) {
        let Some(buffer) = self.buffers.get(a.flow as usize) else {
            return;
        };
        let data = buffer.0.get(..self.len).unwrap_or_default();
        let vlan = match self.form {
            Form::Direct => {
                let frame = RxFrame {
                    data,
                    vlan: None,
                    orig_len: self.len as u32,
                };
                batch.push_with(u32::from(a.port), |buf| {
                    frame.copy_restored(buf).unwrap_or(0)
                });
                return;
            }
            Form::TagBeside => Some(vlan_tag(a.tci)),
            Form::TagInFrame => None,
        };
        let frame = RxFrame {
            data,
            vlan,
            orig_len: TAGGED_LEN as u32,
        };
        let (vlans, dropped) = (&self.vlans, &mut self.dropped);
        batch.push_from(|buf| {
            let entered = vlans.receive(&frame, buf).ok();
            *dropped += u64::from(entered.is_none());
            entered
        });
    }
}

impl Fill for WireNic<'_> {
    #[inline(always)]
    fn fill(&mut self, batch: &mut PacketBatch) {
        batch.clear();
        for _ in 0..batch.capacity() {
            let ahead = self.trace.get(self.next + 16);
            if let Some(buffer) = ahead.and_then(|a| self.buffers.get(a.flow as usize)) {
                prefetch(buffer, self.len);
            }
            if let Some(&a) = self.trace.get(self.next) {
                self.receive(batch, a);
            }
            self.next += 1;
            if self.next == self.trace.len() {
                self.next = 0;
            }
        }
    }
}

/// Hints the CPU to load the lines of a buffer's first `len` bytes.
#[inline(always)]
fn prefetch(buffer: &RxBuffer, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults and changes nothing observable.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = core::ptr::from_ref(buffer).cast::<i8>();
        _mm_prefetch::<_MM_HINT_T0>(p);
        if len > 64 {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
        }
    }
}

/// Where outputs go in every form: copied into a transmit buffer, with the port's tag when
/// it has one (looked up per output, as the daemon's ports do).
struct TxSink {
    tags: Vec<Option<VlanTag>>,
    slots: Box<[u8]>,
    next: usize,
    outputs: u64,
    packet_ins: u64,
    sum: u64,
    /// Every output as it left (the datapath's port, the buffer's bytes), when checking.
    record: Option<Vec<(u32, Vec<u8>)>>,
}

impl TxSink {
    fn new(trunk: bool) -> Self {
        let tags = (0..=EXTERNAL)
            .map(|p| (trunk && p > 0).then(|| vlan_tag(vid(p))))
            .collect();
        TxSink {
            tags,
            slots: vec![0; TX_SLOTS * TX_SLOT].into_boxed_slice(),
            next: 0,
            outputs: 0,
            packet_ins: 0,
            sum: 0,
            record: None,
        }
    }
}

impl PacketSink for TxSink {
    #[inline(always)]
    fn output(&mut self, port: u32, frame: &[u8]) {
        let at = self.next * TX_SLOT;
        self.next = if self.next + 1 == TX_SLOTS {
            0
        } else {
            self.next + 1
        };
        let Some(slot) = self.slots.get_mut(at..at + TX_SLOT) else {
            return;
        };
        let len = match self.tags.get(port as usize).copied().flatten() {
            Some(tag) => write_tagged(frame, tag, slot).unwrap_or(0),
            None => match slot.get_mut(..frame.len()) {
                Some(out) => {
                    out.copy_from_slice(frame);
                    frame.len()
                }
                None => 0,
            },
        };
        self.outputs += 1;
        self.sum = self
            .sum
            .rotate_left(5)
            .wrapping_add(u64::from(port) ^ len as u64);
        if let Some(record) = &mut self.record {
            record.push((port, slot[..len].to_vec()));
        }
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        self.packet_ins += 1;
        self.sum = self.sum.wrapping_add(u64::from(ev.total_len));
    }
}

/// One form's traffic through a reader.
type Traffic<'t> = traffic::Traffic<WireNic<'t>, TxSink>;

/// The traffic of `trace` in `form`, starting at packet `start`.
fn traffic<'t>(flows: &[Flow], trace: &'t [Arrival], form: Form, start: usize) -> Traffic<'t> {
    Traffic::new(
        WireNic::new(flows, trace, form, start),
        PacketBatch::new(BURST, 2048),
        TxSink::new(form.trunk()),
    )
}

/// Checks a form end to end: the given flows' packets (every flow's, then a stretch of the
/// trace) in batches, each output decoded from the transmit buffer (through the trunk's map for
/// the HARMLESS form) and compared whole with the reference, as a multiset per batch.
fn check(
    w: &Workload,
    trace: &[Arrival],
    reader: &mut DatapathReader,
    form: Form,
) -> Result<u64, String> {
    let expected: Vec<Verdict> = w
        .flows
        .iter()
        .map(|f| w.reference.forward(f.in_port, &f.frame))
        .collect();
    let vlans = trunk_map();
    let order = arrivals(
        &w.flows,
        (0..w.flows.len() as u32).chain(trace.iter().map(|a| a.flow).take(CHECKED_TRACE)),
    );
    let mut nic = WireNic::new(&w.flows, &order, form, 0);
    let mut batch = PacketBatch::new(BURST, 2048);
    let mut checked = 0;
    for chunk in order.chunks(BURST) {
        batch.clear();
        let mut want = Vec::new();
        let mut want_packet_ins = 0;
        for &a in chunk {
            nic.receive(&mut batch, a);
            match &expected[a.flow as usize] {
                Verdict::Output(port, frame) => want.push((*port, frame.to_vec())),
                Verdict::Controller => want_packet_ins += 1,
                Verdict::Drop => {}
            }
        }
        if batch.len() != chunk.len() {
            return Err(format!(
                "{} of {} packets entered",
                batch.len(),
                chunk.len()
            ));
        }
        let mut sink = TxSink::new(form.trunk());
        sink.record = Some(Vec::new());
        reader.process(1, &mut batch, &mut sink);
        let mut got = Vec::new();
        for (port, bytes) in sink.record.take().unwrap_or_default() {
            if !form.trunk() {
                got.push((port, bytes));
                continue;
            }
            // As the legacy switch reads it: the tag names the access port.
            let frame = RxFrame {
                data: &bytes,
                vlan: None,
                orig_len: bytes.len() as u32,
            };
            let mut untagged = vec![0u8; bytes.len()];
            let Ok((tagged, n)) = vlans.receive(&frame, &mut untagged) else {
                return Err(format!(
                    "an output to port {port} left without a port's tag"
                ));
            };
            if tagged != port {
                return Err(format!(
                    "an output to port {port} left tagged for port {tagged}"
                ));
            }
            untagged.truncate(n);
            got.push((tagged, untagged));
        }
        want.sort();
        got.sort();
        if got != want || sink.packet_ins != want_packet_ins {
            let missing = want.iter().find(|o| !got.contains(o));
            let extra = got.iter().find(|o| !want.contains(o));
            return Err(format!(
                "{} outputs expected, {} sent, packet-ins {want_packet_ins}/{}; first missing \
                 {missing:02x?}, first extra {extra:02x?}",
                want.len(),
                got.len(),
                sink.packet_ins
            ));
        }
        checked += chunk.len() as u64;
    }
    if nic.dropped != 0 {
        return Err(format!("{} trunk frames reached no port", nic.dropped));
    }
    Ok(checked)
}

/// A cell in every form.
struct Cell {
    /// Median Mpps per form, in the order of [`FORMS`].
    mpps: [f64; 3],
    /// Median of the rounds' ratios to the direct form (trunk forms).
    ratio: [f64; 3],
    /// The slices' spread, (best - worst) / median, per form, in percent.
    spread: [f64; 3],
}

fn spread(v: &[f64]) -> f64 {
    let best = v.iter().copied().fold(0.0, f64::max);
    let worst = v.iter().copied().fold(f64::INFINITY, f64::min);
    (best - worst) / median(v.to_vec()) * 100.0
}

/// Times every form over the same reader: rounds of one slice per form, the forms in a
/// rotating order, so that a load rising or falling through a round favours none.
fn measure(w: &Workload, trace: &[Arrival], reader: &mut DatapathReader, o: &Options) -> Cell {
    let mut traffic: Vec<Traffic<'_>> = FORMS
        .iter()
        .map(|&form| traffic(&w.flows, trace, form, 0))
        .collect();
    for t in &mut traffic {
        slice(o.slice, || t.step(reader));
    }
    let mut rates = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..SLICES {
        let mut this = [0.0; 3];
        for k in 0..FORMS.len() {
            let f = (round + k) % FORMS.len();
            let t = &mut traffic[f];
            this[f] = slice(o.slice, || t.step(reader)).mpps();
        }
        for (f, rate) in this.into_iter().enumerate() {
            rates[f].push(rate);
        }
    }
    std::hint::black_box(traffic.iter().map(|t| t.sink.sum).sum::<u64>());
    let ratio = |f: usize| median(rates[f].iter().zip(&rates[0]).map(|(h, d)| h / d).collect());
    Cell {
        mpps: [0, 1, 2].map(|f| median(rates[f].clone())),
        ratio: [1.0, ratio(1), ratio(2)],
        spread: [0, 1, 2].map(|f| spread(&rates[f])),
    }
}

/// Fig. 9: `threads` datapath threads on one installed datapath, each with its own reader,
/// NIC (at its own place in the trace), batch and transmit buffer, for `dur`; (the sum of the
/// threads' Mpps per CPU-second, the Mpps of all together per wall-clock second).
fn threaded(
    flows: &[Flow],
    trace: &[Arrival],
    readers: &DatapathReaderFactory,
    threads: usize,
    form: Form,
    dur: Duration,
) -> (f64, f64) {
    let start = Arc::new(Barrier::new(threads));
    let results: Vec<Slice> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mut reader = readers.reader();
                let start = Arc::clone(&start);
                scope.spawn(move || {
                    let mut traffic = traffic(flows, trace, form, trace.len() * t / threads);
                    slice(dur / 10, || traffic.step(&mut reader));
                    start.wait();
                    let r = slice(dur, || traffic.step(&mut reader));
                    std::hint::black_box(traffic.sink.sum);
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or(Slice {
                    packets: 0,
                    cpu_s: 1.0,
                    wall_s: 1.0,
                })
            })
            .collect()
    });
    let cpu_rate: f64 = results.iter().map(Slice::mpps).sum();
    let packets: u64 = results.iter().map(|r| r.packets).sum();
    let wall = results.iter().map(|r| r.wall_s).fold(0.0, f64::max);
    (cpu_rate, packets as f64 / wall / 1e6)
}

fn main() {
    let o = Options::from_env();
    let load_start = loadavg();
    println!(
        "Table II in HARMLESS form (seed 000): one core, 64-byte packets, batch {BURST}, traces \
         of at least {} packets in random order; every port a VLAN of one trunk; load \
         average {load_start}",
        o.trace_packets,
    );
    println!(
        "Mpps per CPU-second of the datapath thread, median of {SLICES} slices per form (in \
         rounds of one slice each); ratio = median of the rounds' trunk / direct; spread = \
         (best - worst) / median. beside: the tag beside the frame (AF_PACKET, a NIC's VLAN \
         stripping); in frame: the tag in the bytes (AF_XDP)."
    );
    println!(
        "{:<4} {:>7} {:>8} {:>8} {:>7} {:>9} {:>7} {:>7} {:>7} {:>7}",
        "case",
        "flows",
        "direct",
        "beside",
        "ratio",
        "in frame",
        "ratio",
        "spr-d",
        "spr-b",
        "spr-f"
    );
    let mut json = Vec::new();
    let mut failed = false;
    let mut below = 0;
    for case in &CASES {
        for n in SIZES {
            if !o.cell_selected(case.name, n) {
                continue;
            }
            let w = (case.build)(n, &mut Rng(n as u64));
            let order = traffic::trace(n, o.trace_packets, &mut Rng(n as u64 ^ 0x5eed));
            let trace = arrivals(&w.flows, order.into_iter());
            let (_switch, readers) = install(&w).unwrap_or_else(|e| {
                eprintln!("{} {n}: {e}", case.name);
                std::process::exit(1);
            });
            let mut reader = readers.reader();
            if let Some((packets, form)) = o.count {
                let mut t = traffic(&w.flows, &trace, form, 0);
                let mut done = 0;
                while done < packets {
                    done += t.step(&mut reader);
                }
                println!(
                    "{} {n}: ran {done} packets, {} outputs",
                    case.name, t.sink.outputs
                );
                continue;
            }
            for form in FORMS {
                if let Err(e) = check(&w, &trace, &mut reader, form) {
                    eprintln!(
                        "{} {n} {}: output differs from the reference: {e}",
                        case.name,
                        form.name()
                    );
                    failed = true;
                }
            }
            if failed {
                continue;
            }
            let c = measure(&w, &trace, &mut reader, &o);
            let mark = if c.ratio.iter().all(|&r| r >= TARGET_RATIO) {
                ""
            } else {
                below += 1;
                " (below 95%)"
            };
            println!(
                "{:<4} {n:>7} {:>8.2} {:>8.2} {:>6.1}% {:>9.2} {:>6.1}% {:>6.1}% {:>6.1}% {:>6.1}%{mark}",
                case.name,
                c.mpps[0],
                c.mpps[1],
                c.ratio[1] * 100.0,
                c.mpps[2],
                c.ratio[2] * 100.0,
                c.spread[0],
                c.spread[1],
                c.spread[2]
            );
            json.push(format!(
                "{{\"case\":\"{}\",\"flows\":{n},\"direct_mpps\":{:.3},\"tag_beside_mpps\":{:.3},\
                 \"tag_beside_ratio\":{:.4},\"tag_in_frame_mpps\":{:.3},\"tag_in_frame_ratio\":{:.4},\
                 \"met\":{},\"spread_percent\":[{:.1},{:.1},{:.1}]}}",
                case.name,
                c.mpps[0],
                c.mpps[1],
                c.ratio[1],
                c.mpps[2],
                c.ratio[2],
                mark.is_empty(),
                c.spread[0],
                c.spread[1],
                c.spread[2]
            ));
        }
    }
    if failed {
        std::process::exit(1);
    }
    let mut fig9 = Vec::new();
    if o.count.is_none() && (o.selected("threads") || o.only.is_none()) {
        println!();
        println!(
            "Fig. 9 analogue: datapath threads on one datapath (2 cores, shared with other \
             jobs); Mpps summed over the threads per CPU-second each, and all together per \
             wall-clock second:"
        );
        println!(
            "{:<4} {:>7} {:>7} {:>12} {:>8} {:>8} {:>12} {:>8} {:>8}",
            "case", "flows", "threads", "form", "cpu", "wall", "form", "cpu", "wall"
        );
        for (name, n) in [("L3", 100_000), ("LB", 10_000)] {
            let Some(case) = CASES.iter().find(|c| c.name == name) else {
                continue;
            };
            let w = (case.build)(n, &mut Rng(n as u64));
            let order = traffic::trace(n, o.trace_packets, &mut Rng(n as u64 ^ 0x5eed));
            let trace = arrivals(&w.flows, order.into_iter());
            let Ok((_switch, readers)) = install(&w) else {
                std::process::exit(1);
            };
            for threads in [1, 2] {
                let dur = o.slice * 20;
                let mut line = format!("{name:<4} {n:>7} {threads:>7}");
                for form in [Form::Direct, Form::TagInFrame] {
                    let (cpu, wall) = threaded(&w.flows, &trace, &readers, threads, form, dur);
                    line += &format!(" {:>12} {cpu:>8.2} {wall:>8.2}", form.name());
                    fig9.push(format!(
                        "{{\"case\":\"{name}\",\"flows\":{n},\"threads\":{threads},\"form\":\"{}\",\
                         \"cpu_mpps\":{cpu:.3},\"wall_mpps\":{wall:.3}}}",
                        form.name()
                    ));
                }
                println!("{line}");
            }
        }
    }
    let load_end = loadavg();
    println!("load average at the end: {load_end}; cells below 95%: {below}");
    if let Ok(path) = std::env::var("HAIRPIN_BENCH_JSON") {
        let doc = format!(
            "{{\"benchmark\":\"harmless\",\"quick\":{},\"trace_min_packets\":{},\
             \"slices\":{SLICES},\"load_start\":\"{load_start}\",\"load_end\":\"{load_end}\",\
             \"cells\":[{}],\"threads\":[{}]}}\n",
            o.quick,
            o.trace_packets,
            json.join(","),
            fig9.join(",")
        );
        if let Err(e) = std::fs::write(&path, doc) {
            eprintln!("cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
}
