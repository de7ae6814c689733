//! The model backend's hardware lookup: packets of random destinations classified against a
//! full `hp-3500yl-of10` image (1526 exact IPv4 rules, one mask) and counted as the pipeline
//! would; prints nanoseconds per packet (median of 7 rounds, min and max beside it). Checks
//! every verdict against the rule the packet was made for before timing.
//!
//! `cargo bench -p offload --bench model` (HAIRPIN_BENCH_QUICK=1: fewer packets).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use dataplane::counters::{FlowCounters, PortCounters, Shard};
use dataplane::ir::{Action, Instruction};
use dataplane::key::{Field, FieldValue, FlowKey, FlowMatch};
use dataplane::model::{FlowId, PortInfo};
use offload::image::{HwImage, ImagePort, Verdict};
use offload::placement::{Mode, Planner, Policy};
use offload::profile::Profile;

fn main() {
    let quick = std::env::var_os("HAIRPIN_BENCH_QUICK").is_some();
    let packets = if quick { 200_000 } else { 2_000_000 };
    let profile = Arc::new(
        Profile::builtin("hp-3500yl-of10")
            .expect("shipped")
            .expect("parses"),
    );
    let mut planner = Planner::new(profile, Mode::Algorithm1, Policy::Fcfs);
    let out = [Instruction::ApplyActions(vec![Action::Output {
        port: 2,
        max_len: 0,
    }])];
    let rules = 1526u32;
    for i in 0..rules {
        let mut m = FlowMatch::any();
        m.set(Field::EthType, FieldValue::from(0x0800u16), None);
        m.set(Field::Ipv4Dst, FieldValue::from(0x0a00_0000 | i), None);
        planner.insert(
            0,
            FlowId(u64::from(i) + 1),
            100,
            m,
            &out,
            FlowCounters::new(),
        );
    }
    assert_eq!(planner.entries_in(0), rules as usize);
    let ports: HashMap<u32, ImagePort> = (1..=2)
        .map(|p| {
            let info = PortInfo {
                live: true,
                ..PortInfo::default()
            };
            (
                p,
                ImagePort {
                    info,
                    counters: Arc::new(PortCounters::default()),
                },
            )
        })
        .collect();
    let image = HwImage::build(&planner, ports);
    let (writer, _readers) = dataplane::datapath::new(Default::default());
    let shared = Arc::clone(writer.shared());
    // Destinations that no branch predictor or cache line can memorise: a random walk.
    let mut x = 0x9e37_79b9u32;
    let keys: Vec<FlowKey> = (0..65_536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            FlowKey {
                in_port: 1,
                eth_type: 0x0800,
                ipv4_dst: 0x0a00_0000 | (x % rules),
                ..FlowKey::default()
            }
        })
        .collect();
    for k in &keys[..1000] {
        let Verdict::Decided { path, len } = image.classify(k) else {
            panic!("not decided");
        };
        let e = image.entry(path[len - 1]).expect("entry");
        assert_eq!(e.id, FlowId(u64::from(k.ipv4_dst & 0xffff) + 1));
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut rounds = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        let mut decided = 0u64;
        for i in 0..packets {
            let k = &keys[i % keys.len()];
            if let Verdict::Decided { path, len } = image.classify(k) {
                decided += image
                    .count(Shard::shared(), &shared, 1, &path[..len], 60)
                    .len() as u64;
            }
        }
        assert_eq!(decided, packets as u64);
        rounds.push(start.elapsed().as_secs_f64() * 1e9 / packets as f64);
    }
    rounds.sort_by(f64::total_cmp);
    println!(
        "model hardware lookup + merged counting, {rules} entries: {:.1} ns/packet (median of 7; {:.1}-{:.1}); loadavg {}",
        rounds[3],
        rounds[0],
        rounds[6],
        load.trim()
    );
}
