//! Table II of seed 000 (HARMLESS) for this datapath: the four evaluation pipelines (L2 MAC
//! table, L3 routing with next-hop groups, load balancer + ACL, access gateway) at 100, 1K,
//! 10K and 100K flows, one core, 64-byte packets, in memory; then each pipeline at 10K flows
//! while another thread applies 10K flow-mods a second. Results: `docs/bench/table2.md`.
//!
//! What keeps the figures honest:
//! - flows are installed as a controller installs them: encoded flow-mods and group-mods,
//!   decoded and validated by the switch core (`switch_core::Switch`), which drives the
//!   datapath through its op sink;
//! - before anything is timed, every flow's packet, then a stretch of the trace, runs through
//!   the datapath and each batch's output frames are compared, whole, with what an
//!   independent reference computes ([`reference`]);
//! - traces do not repeat: at least 1M packets or ten per flow, whichever is more, over the
//!   flows in a random order ([`traffic::trace`]), written frame by frame into the batch's
//!   receive buffer as a NIC would ([`traffic::Nic`]); LB's and GW's traffic enters on
//!   several ports;
//! - each cell is judged on the median of 11 slices (packets per CPU-second of the datapath
//!   thread), with the best slice and the spread printed beside it.
//!
//! `cargo bench -p dataplane --bench table2`. Environment:
//! - `HAIRPIN_BENCH_QUICK=1`: short slices (CI: the check runs in full);
//! - `HAIRPIN_BENCH_JSON=path`: also write the results as JSON (one object per cell);
//! - `HAIRPIN_BENCH_ONLY=L2:100`: one cell (`LB,GW:100`: cases and cells; `churn`: only the
//!   run under flow-mods);
//! - `HAIRPIN_BENCH_TRACE_PACKETS=n`: the traces' minimum length (default 1M);
//! - `HAIRPIN_BENCH_BATCH=n`: the batch size (default `dataplane::batch::BURST`);
//! - `HAIRPIN_BENCH_ISA=baseline`: the pipeline's x86-64 baseline copy (`dataplane::isa`);
//! - `HAIRPIN_BENCH_PUBLISH_MS`: the barrier interval of the run under flow-mods (default 10);
//! - `HAIRPIN_BENCH_PACKETS=n`: run exactly `n` packets of each cell's trace, untimed and
//!   unchecked, for instruction counts under callgrind (see the results page).

#[path = "table2/cases.rs"]
mod cases;
#[path = "table2/frames.rs"]
mod frames;
#[path = "table2/install.rs"]
mod install;
#[path = "table2/reference.rs"]
mod reference;
#[path = "table2/timing.rs"]
mod timing;
#[path = "table2/traffic.rs"]
mod traffic;

use cases::{Case, Rng, Workload, CASES};
use dataplane::batch::{PacketBatch, PacketSink};
use dataplane::datapath::DatapathReader;
use dataplane::isa::Isa;
use install::{apply_message, install};
use reference::Verdict;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use timing::{loadavg, median, slice, Slice};
use traffic::{CountingSink, Fill, Nic};

/// Large tables on huge pages, as in the daemon.
#[global_allocator]
static ALLOC: dataplane::hugepages::HugePageAlloc = dataplane::hugepages::HugePageAlloc;

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
/// Timed slices per cell; the cell's figure is their median.
const SLICES: usize = 11;
/// Packets of the trace checked against the reference after every flow's first packet.
const CHECKED_TRACE: usize = 1 << 16;

/// The benchmark's settings, from the environment.
struct Options {
    quick: bool,
    batch: usize,
    isa: Isa,
    trace_packets: usize,
    /// The run's length per cell (warm-up, slices and the NIC's own measurement).
    cell: Duration,
    only: Option<String>,
    count: Option<u64>,
    publish: Duration,
}

/// A number from the environment variable `name`; `None` when unset or not a number.
fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

impl Options {
    fn from_env() -> Self {
        let quick = std::env::var("HAIRPIN_BENCH_QUICK").is_ok_and(|v| v != "0" && !v.is_empty());
        Options {
            quick,
            batch: env_number("HAIRPIN_BENCH_BATCH")
                .unwrap_or(dataplane::batch::BURST)
                .clamp(1, 256),
            isa: match std::env::var("HAIRPIN_BENCH_ISA").as_deref() {
                Ok("baseline") => Isa::Baseline,
                _ => Isa::detect(),
            },
            trace_packets: env_number("HAIRPIN_BENCH_TRACE_PACKETS").unwrap_or(1_000_000),
            cell: if quick {
                Duration::from_millis(250)
            } else {
                Duration::from_millis(2_500)
            },
            only: std::env::var("HAIRPIN_BENCH_ONLY").ok(),
            count: env_number("HAIRPIN_BENCH_PACKETS"),
            publish: Duration::from_millis(
                env_number("HAIRPIN_BENCH_PUBLISH_MS")
                    .unwrap_or(10u64)
                    .max(1),
            ),
        }
    }

    /// Whether the cell `name:flows` is selected.
    fn selected(&self, name: &str, flows: usize) -> bool {
        self.only.as_deref().is_none_or(|o| {
            o.split(',')
                .any(|c| c == name || c == format!("{name}:{flows}"))
        })
    }

    fn churn_selected(&self) -> bool {
        self.count.is_none()
            && self
                .only
                .as_deref()
                .is_none_or(|o| o.split(',').any(|c| c == "churn"))
    }
}

/// The trace through a reader, as this benchmark feeds it.
type Traffic<'t> = traffic::Traffic<Nic<'t>, CountingSink>;

/// The traffic of `trace` over `w`'s flows in batches of `batch`.
fn traffic<'t>(w: &Workload, trace: &'t [u32], batch: usize) -> Traffic<'t> {
    Traffic::new(
        Nic::new(&w.flows, trace),
        PacketBatch::new(batch, 2048),
        CountingSink::default(),
    )
}

/// A cell's figures.
struct Cell {
    median: f64,
    best: f64,
    worst: f64,
    wall_median: f64,
    /// CPU ns per packet the NIC's writing of frames takes alone (part of every figure).
    nic_ns: f64,
    outputs_per_packet: f64,
}

/// Times a cell: a tenth of its time warms up, a tenth measures the NIC alone, the rest is
/// [`SLICES`] slices of trace through the reader.
fn measure(w: &Workload, trace: &[u32], reader: &mut DatapathReader, o: &Options) -> Cell {
    let mut t = traffic(w, trace, o.batch);
    slice(o.cell / 10, || t.step(reader));
    let (out0, in0) = (t.sink.outputs, t.sink.packet_ins);
    let slices: Vec<Slice> = (0..SLICES)
        .map(|_| slice(o.cell * 8 / 10 / SLICES as u32, || t.step(reader)))
        .collect();
    std::hint::black_box(t.sink.sum);
    let packets: u64 = slices.iter().map(|s| s.packets).sum();
    let outputs = t.sink.outputs + t.sink.packet_ins - out0 - in0;
    let nic_alone = slice(o.cell / 10, || {
        t.nic.fill(&mut t.batch);
        t.batch.len() as u64
    });
    t.batch.clear();
    let rates: Vec<f64> = slices.iter().map(Slice::mpps).collect();
    Cell {
        median: median(rates.clone()),
        best: rates.iter().copied().fold(0.0, f64::max),
        worst: rates.iter().copied().fold(f64::INFINITY, f64::min),
        wall_median: median(
            slices
                .iter()
                .map(|s| s.packets as f64 / s.wall_s / 1e6)
                .collect(),
        ),
        nic_ns: 1e3 / nic_alone.mpps(),
        outputs_per_packet: outputs as f64 / packets as f64,
    }
}

/// Checks every flow's packet, then the trace's first [`CHECKED_TRACE`] packets, against the
/// reference; returns the number of packets checked.
fn check(
    w: &Workload,
    trace: &[u32],
    reader: &mut DatapathReader,
    o: &Options,
) -> Result<u64, String> {
    let expected: Vec<Verdict> = w
        .flows
        .iter()
        .map(|f| w.reference.forward(f.in_port, &f.frame))
        .collect();
    let mut process = |batch: &mut PacketBatch, sink: &mut dyn PacketSink| {
        reader.process(1, batch, &mut DynSink(sink));
    };
    let every_flow = 0..w.flows.len() as u32;
    let a = traffic::check(w, &expected, every_flow, o.batch, &mut process)?;
    let stretch = trace.iter().copied().take(CHECKED_TRACE);
    let b = traffic::check(w, &expected, stretch, o.batch, &mut process)?;
    Ok(a + b)
}

/// A `&mut dyn PacketSink` as a sized sink.
struct DynSink<'a>(&'a mut dyn PacketSink);

impl PacketSink for DynSink<'_> {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.0.output(port, frame);
    }

    fn packet_in(&mut self, ev: &dataplane::batch::PacketInEvent<'_>) {
        self.0.packet_in(ev);
    }
}

/// The JSON object of a cell.
fn cell_json(case: &Case, flows: usize, trace: usize, checked: u64, c: &Cell) -> String {
    format!(
        "{{\"case\":\"{}\",\"flows\":{flows},\"trace_packets\":{trace},\"checked_packets\":{checked},\
         \"median_mpps\":{:.3},\"best_mpps\":{:.3},\"worst_mpps\":{:.3},\"spread_percent\":{:.1},\
         \"target_mpps\":{},\"met\":{},\"ns_per_packet\":{:.2},\"nic_ns_per_packet\":{:.2},\
         \"wall_median_mpps\":{:.3},\"outputs_per_packet\":{:.3}}}",
        case.name,
        c.median,
        c.best,
        c.worst,
        spread(c),
        case.target_mpps,
        c.median >= case.target_mpps,
        1e3 / c.median,
        c.nic_ns,
        c.wall_median,
        c.outputs_per_packet,
    )
}

/// The slices' range as a share of the median, in percent.
fn spread(c: &Cell) -> f64 {
    (c.best - c.worst) / c.median * 100.0
}

/// Throughput with and without flow-mods, in alternating slices of one run: another thread
/// decodes and applies `rate` flow-mods a second through the switch core (publishing, the
/// barrier, every `publish`) during the "on" slices and idles during the "off" ones.
struct Churn {
    base: f64,
    under: f64,
    /// One minus the median ratio of a slice with flow-mods to the slice without just before
    /// it (neighbouring slices see the same load from the rest of the machine).
    loss_percent: f64,
    flow_mods: u64,
}

fn measure_churn(mut w: Workload, o: &Options, rate: u64) -> Result<Churn, String> {
    const PAIRS: usize = 16;
    let trace = traffic::trace(w.flows.len(), o.trace_packets, &mut Rng(7));
    let (mut switch, readers) = install(&w)?;
    let mut reader = readers.reader();
    reader.set_isa(o.isa);
    let active = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (active_w, stop_w) = (Arc::clone(&active), Arc::clone(&stop));
    let churn = std::mem::take(&mut w.churn);
    let publish = o.publish;
    let writer = std::thread::spawn(move || -> Result<u64, String> {
        let (mut done, mut owed, mut next) = (0u64, 0f64, 0usize);
        let mut installed = std::collections::VecDeque::new();
        let mut last = Instant::now();
        while !stop_w.load(Ordering::Relaxed) {
            let elapsed = last.elapsed().as_secs_f64();
            last = Instant::now();
            if !active_w.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            owed += elapsed * rate as f64;
            while owed >= 1.0 {
                if installed.len() >= 1000 {
                    if let Some(k) = installed.pop_front() {
                        let (_, delete): &(Vec<u8>, Vec<u8>) = &churn[k];
                        apply_message(&mut switch, delete)?;
                    }
                } else {
                    apply_message(&mut switch, &churn[next].0)?;
                    installed.push_back(next);
                    next = (next + 1) % churn.len();
                }
                owed -= 1.0;
                done += 1;
            }
            switch.publish();
            std::thread::sleep(publish);
        }
        Ok(done)
    });
    let mut t = traffic(&w, &trace, o.batch);
    let dur = o.cell * 2;
    slice(dur / 10, || t.step(&mut reader));
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        active.store(false, Ordering::Relaxed);
        off.push(slice(dur / PAIRS as u32 / 2, || t.step(&mut reader)).mpps());
        active.store(true, Ordering::Relaxed);
        on.push(slice(dur / PAIRS as u32 / 2, || t.step(&mut reader)).mpps());
    }
    std::hint::black_box(t.sink.sum);
    stop.store(true, Ordering::Relaxed);
    let flow_mods = writer
        .join()
        .map_err(|_| "the flow-mod thread failed".to_string())??;
    let ratios = off.iter().zip(&on).map(|(a, b)| b / a).collect();
    Ok(Churn {
        base: median(off),
        under: median(on),
        loss_percent: ((1.0 - median(ratios)) * 100.0).max(0.0),
        flow_mods,
    })
}

fn main() {
    let o = Options::from_env();
    let load_start = loadavg();
    println!(
        "Table II (seed 000) for the Hairpin dataplane: one core, 64-byte packets, batch {}, {:?} \
         pipeline, traces of at least {} packets in random order; load average {load_start}",
        o.batch, o.isa, o.trace_packets
    );
    println!(
        "Mpps per CPU-second of the datapath thread: median of {SLICES} slices (judged), best, \
         and spread (best - worst) / median; nic = the NIC's share of each packet's ns."
    );
    println!(
        "{:<4} {:>7} {:>9} {:>8} {:>8} {:>7} {:>7} {:>6} {:>7} {:>7}",
        "case", "flows", "trace", "median", "best", "spread", "ns/pkt", "nic", "target", "out/pkt"
    );
    let mut cells = Vec::new();
    let mut failed = false;
    for case in &CASES {
        for n in SIZES {
            if !o.selected(case.name, n) {
                continue;
            }
            let w = (case.build)(n, &mut Rng(n as u64));
            let trace = traffic::trace(n, o.trace_packets, &mut Rng(n as u64 ^ 0x5eed));
            let (_switch, readers) = match install(&w) {
                Ok(installed) => installed,
                Err(e) => {
                    eprintln!("{} {n}: {e}", case.name);
                    std::process::exit(1);
                }
            };
            let mut reader = readers.reader();
            reader.set_isa(o.isa);
            if let Some(packets) = o.count {
                let mut t = traffic(&w, &trace, o.batch);
                let mut done = 0;
                while done < packets {
                    done += t.step(&mut reader);
                }
                println!(
                    "{:<4} {n:>7} ran {done} packets, {} outputs",
                    case.name, t.sink.outputs
                );
                continue;
            }
            let checked = match check(&w, &trace, &mut reader, &o) {
                Ok(checked) => checked,
                Err(e) => {
                    eprintln!("{} {n}: output differs from the reference: {e}", case.name);
                    failed = true;
                    continue;
                }
            };
            let c = measure(&w, &trace, &mut reader, &o);
            let mark = if c.median >= case.target_mpps {
                ""
            } else {
                " (below target)"
            };
            println!(
                "{:<4} {n:>7} {:>9} {:>8.2} {:>8.2} {:>6.1}% {:>7.1} {:>6.1} {:>7.0} {:>7.2}{mark}",
                case.name,
                trace.len(),
                c.median,
                c.best,
                spread(&c),
                1e3 / c.median,
                c.nic_ns,
                case.target_mpps,
                c.outputs_per_packet
            );
            cells.push(cell_json(case, n, trace.len(), checked, &c));
        }
    }
    if failed {
        std::process::exit(1);
    }
    let mut churn = Vec::new();
    if o.churn_selected() {
        println!();
        println!(
            "Under 10K flow-mods/s (10K flows, publish every {} ms), slices with and without \
             flow-mods alternating in one run; loss = 1 - median ratio of neighbouring slices:",
            o.publish.as_millis()
        );
        println!(
            "{:<4} {:>9} {:>9} {:>10} {:>7}",
            "case", "base", "churn", "flow-mods", "loss%"
        );
        for case in &CASES {
            let w = (case.build)(10_000, &mut Rng(10_000));
            let c = match measure_churn(w, &o, 10_000) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{} under flow-mods: {e}", case.name);
                    std::process::exit(1);
                }
            };
            println!(
                "{:<4} {:>9.2} {:>9.2} {:>10} {:>7.1}",
                case.name, c.base, c.under, c.flow_mods, c.loss_percent
            );
            churn.push(format!(
                "{{\"case\":\"{}\",\"flows\":10000,\"base_mpps\":{:.3},\"churn_mpps\":{:.3},\
                 \"flow_mods\":{},\"loss_percent\":{:.2}}}",
                case.name, c.base, c.under, c.flow_mods, c.loss_percent
            ));
        }
    }
    if o.count.is_some() {
        return;
    }
    let doc = format!(
        "{{\"benchmark\":\"table2\",\"batch\":{},\"isa\":\"{:?}\",\"quick\":{},\"trace_min_packets\":{},\
         \"slices\":{SLICES},\"load_start\":\"{load_start}\",\"load_end\":\"{}\",\"publish_ms\":{},\
         \"cells\":[{}],\"churn\":[{}]}}\n",
        o.batch,
        o.isa,
        o.quick,
        o.trace_packets,
        loadavg(),
        o.publish.as_millis(),
        cells.join(","),
        churn.join(",")
    );
    println!("load average at the end: {}", loadavg());
    if let Ok(path) = std::env::var("HAIRPIN_BENCH_JSON") {
        if let Err(e) = std::fs::write(&path, &doc) {
            eprintln!("cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
}
