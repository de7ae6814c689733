//! Placement cost: 100K flow-mods (`ip,nw_dst=10.x.y.z/32,actions=output:N`, priority 100)
//! into one table, in process (decode, validation, tables, the datapath's incremental update,
//! a publish every 1,000), with hardware offload off and on (hp-3500yl-of10: the first 1526
//! rules go to hardware, the rest wait in software). Runs alternate off/on so both see the
//! same machine; prints each run, the medians and their ratio. Target: on within 2x of off.
//!
//! `cargo bench -p offload --bench flowmod` (HAIRPIN_BENCH_QUICK=1: 10K flow-mods, 1 run).

use std::sync::Arc;
use std::time::Instant;

use dataplane::datapath::DatapathConfig;
use offload::placement::{Mode, Planner, Policy};
use offload::profile::Profile;
use offload::sink::{Offload, OffloadSink};
use ofp::Message;
use switch_core::{DiscardPacketOuts, Switch};
use testkit::flow_mods::host_route;
use testkit::process_cpu_seconds;

/// One ingest; returns (wall seconds, CPU seconds) and the rules placed in hardware.
fn ingest(wire: &[Vec<u8>], offload: Option<Mode>) -> (f64, f64, usize) {
    let hw = offload.map(|mode| {
        let profile = Profile::builtin("hp-3500yl-of10")
            .expect("shipped")
            .expect("parses");
        Offload::new(Planner::new(Arc::new(profile), mode, Policy::Fcfs))
    });
    let (mut switch, readers) = Switch::with_datapath(
        1,
        DatapathConfig::default(),
        |writer| match &hw {
            Some(o) => Box::new(OffloadSink::new(Box::new(writer), Arc::clone(o))),
            None => Box::new(writer),
        },
        Box::new(DiscardPacketOuts),
    );
    let _reader = readers.reader();
    let start = Instant::now();
    let cpu_start = process_cpu_seconds();
    for (i, bytes) in wire.iter().enumerate() {
        let Ok((_, Message::FlowMod(fm))) = ofp::decode(bytes) else {
            panic!("flow-mod {i} does not decode");
        };
        switch.flow_mod(fm, 0).expect("valid flow-mod");
        if (i + 1) % 1_000 == 0 {
            switch.publish();
        }
    }
    switch.publish();
    let wall = start.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu_start;
    assert_eq!(switch.flow_count(), wire.len());
    let placed = hw.map_or(0, |o| o.state().planner.entries_in(0));
    (wall, cpu, placed)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::var_os("HAIRPIN_BENCH_QUICK").is_some();
    let (n, runs) = if quick {
        (10_000u32, 1)
    } else {
        (100_000u32, 5)
    };
    let wire: Vec<Vec<u8>> = (0..n).map(host_route).collect();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{n} flow-mods into one table, {runs} runs each; loadavg {}",
        load.trim()
    );
    for mode in [Mode::Algorithm1, Mode::CoverSet] {
        let (mut off_cpu, mut on_cpu, mut off_wall, mut on_wall) = (vec![], vec![], vec![], vec![]);
        for run in 0..runs {
            let (w0, c0, _) = ingest(&wire, None);
            let (w1, c1, placed) = ingest(&wire, Some(mode));
            assert_eq!(placed, 1526.min(n as usize), "the hardware table fills");
            println!(
                "  run {run}: off {:.3} s wall {:.3} s CPU | on ({}) {:.3} s wall {:.3} s CPU",
                w0,
                c0,
                mode.name(),
                w1,
                c1
            );
            off_wall.push(w0);
            off_cpu.push(c0);
            on_wall.push(w1);
            on_cpu.push(c1);
        }
        let (ow, oc, nw, nc) = (
            median(off_wall),
            median(off_cpu),
            median(on_wall),
            median(on_cpu),
        );
        println!(
            "placement {}: off {:.0} flow-mods/s ({:.2} us CPU each), on {:.0} flow-mods/s \
             ({:.2} us CPU each); on/off CPU {:.2}x, wall {:.2}x (median of {runs})",
            mode.name(),
            f64::from(n) / ow,
            oc * 1e6 / f64::from(n),
            f64::from(n) / nw,
            nc * 1e6 / f64::from(n),
            nc / oc,
            nw / ow
        );
    }
}
