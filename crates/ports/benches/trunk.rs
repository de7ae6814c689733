//! The per-frame cost of a trunk's logical ports (HARMLESS), in memory: what the receive path
//! adds to each frame (the VLAN map's lookup and the copy around the trunk tag) and what the
//! send path adds (the tag inserted in the copy), each beside the same copy without a trunk.
//!
//! Traffic: 64-byte frames on the wire, each on one of a trunk's logical ports chosen at
//! random per frame (12 ports, the paper's aggregation; 1 frame in 64 on a VLAN id no port has),
//! so neither the branch predictor nor the table's cache lines see a pattern they could learn.
//! The tag arrives as AF_PACKET gives it (in PACKET_AUXDATA, the bytes untagged) or as AF_XDP
//! does (in the bytes). Every result is checked against the expected port and bytes before
//! anything is timed; each figure is the median of 11 slices (CPU time of the thread), with the
//! best and the spread.
//!
//! `cargo bench -p ports --bench trunk` (`HAIRPIN_BENCH_QUICK=1`: short slices).
//! Results: `docs/bench/harmless.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ports::trunk::{vlan_tag, Refused, VlanMap};
use ports::{write_tagged, RxFrame, VlanTag};

/// Logical ports on the trunk (seed 000: 12 access ports per uplink).
const PORTS: u32 = 12;
const FIRST_VID: u16 = 101;
/// The VLAN of the frames no logical port takes.
const UNKNOWN_VID: u16 = 999;
/// Frames per batch: the daemon's receive burst.
const BATCH: usize = 256;
/// A batch slot (as the datapath's, for frames up to 2 KiB).
const SLOT: usize = 2048;
const TRACE: usize = 1 << 20;
const SLICES: usize = 11;

/// xorshift64*: a stream no predictor learns.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// One frame of the trace: its VLAN id on the trunk, and the untagged frame of its port.
#[derive(Clone, Copy)]
struct Arrival {
    vid: u16,
    template: usize,
}

/// The untagged 60-byte frame of logical port `i` (64 bytes on the wire with its tag).
fn template(i: usize) -> [u8; 60] {
    let mut f = [0u8; 60];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, i as u8]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 1, i as u8]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    for (j, b) in f[14..].iter_mut().enumerate() {
        *b = (i * 31 + j) as u8;
    }
    f
}

fn trace() -> Vec<Arrival> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..TRACE)
        .map(|_| {
            let r = rng.next();
            if r.is_multiple_of(64) {
                Arrival {
                    vid: UNKNOWN_VID,
                    template: PORTS as usize,
                }
            } else {
                let port = ((r >> 8) % u64::from(PORTS)) as usize;
                Arrival {
                    vid: FIRST_VID + port as u16,
                    template: port,
                }
            }
        })
        .collect()
}

fn vlan_map() -> VlanMap {
    let mut map = VlanMap::new();
    for i in 0..PORTS {
        map.insert(FIRST_VID + i as u16, i + 1).expect("free VLAN");
    }
    map
}

/// The frames as they arrive: untagged bytes with the tag beside them (AF_PACKET), and the
/// tagged bytes (AF_XDP).
struct Wire {
    untagged: Vec<[u8; 60]>,
    tagged: Vec<[u8; 64]>,
}

impl Wire {
    /// A template per logical port, and one more for the frames of an unknown VLAN.
    fn new() -> Self {
        let untagged: Vec<[u8; 60]> = (0..=PORTS as usize).map(template).collect();
        let tagged = untagged
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let vid = if i == PORTS as usize {
                    UNKNOWN_VID
                } else {
                    FIRST_VID + i as u16
                };
                let mut out = [0u8; 64];
                write_tagged(f, vlan_tag(vid), &mut out).expect("fits");
                out
            })
            .collect();
        Wire { untagged, tagged }
    }

    fn aux(&self, a: Arrival) -> RxFrame<'_> {
        RxFrame {
            data: &self.untagged[a.template],
            vlan: Some(vlan_tag(a.vid)),
            orig_len: 64,
        }
    }

    fn inline(&self, a: Arrival) -> RxFrame<'_> {
        RxFrame {
            data: &self.tagged[a.template],
            vlan: None,
            orig_len: 64,
        }
    }
}

/// Where frames land: a batch's slots (receive) or a transmit ring's (send).
struct Slots(Vec<u8>);

impl Slots {
    fn new() -> Self {
        Slots(vec![0; BATCH * SLOT])
    }

    fn slot(&mut self, i: usize) -> &mut [u8] {
        let at = (i % BATCH) * SLOT;
        &mut self.0[at..at + SLOT]
    }
}

/// A plain port's receive: the frame copied into its slot as it was on the wire.
#[inline(always)]
fn rx_plain(wire: &Wire, _: &VlanMap, slots: &mut Slots, i: usize, a: Arrival) -> u64 {
    let frame = RxFrame {
        data: &wire.untagged[a.template],
        vlan: None,
        orig_len: 60,
    };
    frame.copy_restored(slots.slot(i)).unwrap_or(0) as u64
}

#[inline(always)]
fn rx_trunk(frame: RxFrame<'_>, map: &VlanMap, slots: &mut Slots, i: usize) -> u64 {
    match map.receive(&frame, slots.slot(i)) {
        Ok((port, n)) => u64::from(port) << 16 | n as u64,
        Err(Refused::UnknownVid(v)) => u64::from(v),
        Err(_) => 1,
    }
}

/// A trunk's receive through AF_PACKET: the tag in auxdata.
#[inline(always)]
fn rx_trunk_aux(wire: &Wire, map: &VlanMap, slots: &mut Slots, i: usize, a: Arrival) -> u64 {
    rx_trunk(wire.aux(a), map, slots, i)
}

/// A trunk's receive through AF_XDP: the tag in the bytes.
#[inline(always)]
fn rx_trunk_inline(wire: &Wire, map: &VlanMap, slots: &mut Slots, i: usize, a: Arrival) -> u64 {
    rx_trunk(wire.inline(a), map, slots, i)
}

/// A plain port's send: the frame copied into a transmit slot.
#[inline(always)]
fn tx_plain(wire: &Wire, _: &VlanMap, slots: &mut Slots, i: usize, a: Arrival) -> u64 {
    let frame = &wire.untagged[a.template];
    let out = &mut slots.slot(i)[..frame.len()];
    out.copy_from_slice(frame);
    out.len() as u64
}

/// A logical port's send: its tag (looked up per frame, as the daemon reads it from the
/// port) inserted in the copy.
#[inline(always)]
fn tx_trunk(wire: &Wire, _: &VlanMap, slots: &mut Slots, i: usize, a: Arrival) -> u64 {
    let tag = black_box(VlanTag {
        tpid: 0x8100,
        tci: a.vid,
    });
    write_tagged(&wire.untagged[a.template], tag, slots.slot(i)).unwrap_or(0) as u64
}

/// Checks every receive of the first `n` frames of the trace: the right port and bytes.
fn check(wire: &Wire, map: &VlanMap, trace: &[Arrival], n: usize) -> Result<(), String> {
    let mut slots = Slots::new();
    for (i, a) in trace.iter().take(n).enumerate() {
        let known = (FIRST_VID..FIRST_VID + PORTS as u16).contains(&a.vid);
        for (form, frame) in [("aux", wire.aux(*a)), ("inline", wire.inline(*a))] {
            match map.receive(&frame, slots.slot(i)) {
                Ok((port, len)) if known => {
                    if port != u32::from(a.vid - FIRST_VID) + 1 {
                        return Err(format!("{form} frame {i}: VLAN {} to port {port}", a.vid));
                    }
                    if slots.slot(i)[..len] != wire.untagged[a.template] {
                        return Err(format!("{form} frame {i}: bytes differ"));
                    }
                }
                Err(Refused::UnknownVid(v)) if !known && v == a.vid => {}
                other => return Err(format!("{form} frame {i}: {other:?} for VLAN {}", a.vid)),
            }
        }
        if known {
            let len = tx_trunk(wire, map, &mut slots, i, *a) as usize;
            if slots.slot(i)[..len] != wire.tagged[a.template][..] {
                return Err(format!("send {i}: bytes differ from the tagged frame"));
            }
        }
    }
    Ok(())
}

/// CPU time this thread has run, in ns (Linux schedstat): the machine is shared, so each
/// figure is per CPU-nanosecond the thread got, what a dedicated core would do.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// CPU ns per frame of `step` (a frame's handling, returning something to fold so nothing
/// is optimised away; generic, so it is inlined into the loop as the daemon's receive closure
/// is): median, best and worst of the slices.
fn measure(
    mut step: impl FnMut(&mut Slots, usize, Arrival) -> u64,
    trace: &[Arrival],
    slice: Duration,
) -> (f64, f64, f64) {
    let mut slots = Slots::new();
    let mut fold = 0u64;
    let mut next = 0usize;
    let mut run = |dur: Duration, fold: &mut u64| -> f64 {
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        let mut frames = 0u64;
        while start.elapsed() < dur {
            for i in 0..BATCH {
                let a = trace[next];
                next = if next + 1 == trace.len() { 0 } else { next + 1 };
                *fold = fold.wrapping_add(step(&mut slots, i, a));
            }
            frames += BATCH as u64;
        }
        let ns = match (cpu_start, thread_cpu_ns()) {
            (Some(a), Some(b)) if b > a => (b - a) as f64,
            _ => start.elapsed().as_nanos() as f64,
        };
        ns / frames as f64
    };
    run(slice, &mut fold);
    let mut ns: Vec<f64> = (0..SLICES).map(|_| run(slice, &mut fold)).collect();
    black_box(fold);
    ns.sort_by(f64::total_cmp);
    (ns[SLICES / 2], ns[0], ns[SLICES - 1])
}

fn main() {
    let quick = std::env::var("HAIRPIN_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let slice = Duration::from_millis(if quick { 20 } else { 200 });
    let (wire, map, trace) = (Wire::new(), vlan_map(), trace());
    if let Err(e) = check(&wire, &map, &trace, TRACE) {
        eprintln!("trunk bench: check failed: {e}");
        std::process::exit(1);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "trunk logical ports, {PORTS} ports, 64-byte frames, {TRACE} frames checked; load {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:<34} {:>9} {:>9} {:>8} {:>10}",
        "path", "ns/frame", "best", "spread", "added"
    );
    let rows: [(&str, Option<usize>); 5] = [
        ("receive, plain port (copy)", None),
        ("receive, trunk, tag in auxdata", Some(0)),
        ("receive, trunk, tag in the bytes", Some(0)),
        ("send, plain port (copy)", None),
        ("send, logical port (tag inserted)", Some(3)),
    ];
    let mut medians = Vec::new();
    for (row, (name, base)) in rows.into_iter().enumerate() {
        let w = &wire;
        let m = &map;
        let (median, best, worst) = match row {
            0 => measure(|s, i, a| rx_plain(w, m, s, i, a), &trace, slice),
            1 => measure(|s, i, a| rx_trunk_aux(w, m, s, i, a), &trace, slice),
            2 => measure(|s, i, a| rx_trunk_inline(w, m, s, i, a), &trace, slice),
            3 => measure(|s, i, a| tx_plain(w, m, s, i, a), &trace, slice),
            _ => measure(|s, i, a| tx_trunk(w, m, s, i, a), &trace, slice),
        };
        let added = base.map_or(String::new(), |b: usize| {
            format!("{:+.2} ns", median - medians[b])
        });
        println!(
            "{name:<34} {median:>9.2} {best:>9.2} {:>7.1}% {added:>10}",
            (worst - best) / median * 100.0
        );
        medians.push(median);
    }
}
