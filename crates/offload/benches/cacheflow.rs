//! Placement modes compared on the same rule sets and traffic (CacheFlow, Katta et al., SOSR
//! 2016, against seed 003's Algorithm 1): a ClassBench-style ACL with long dependency chains
//! (nested source and destination prefixes, more specific rules above wider ones, a tenth
//! of the rules with actions hardware cannot run, a default rule at the bottom) and
//! Zipf-skewed traffic over its rules. For each mode and each hardware capacity (a share of
//! the rule count) the `traffic` policy places rules from measured rates; then
//!
//! - the share of fresh traffic that hardware decides (every decided packet checked against
//!   the software pipeline's choice: a wrong one aborts the run), and
//! - hardware updates per rule change (random deletions and insertions, one at a time),
//!   logical entry changes and physical TCAM writes (moves included).
//!
//! `cargo bench -p offload --bench cacheflow` prints a table and writes JSON to
//! `$HAIRPIN_BENCH_OUT` (default `target/offload-cacheflow.json`); HAIRPIN_BENCH_QUICK=1 runs
//! a smaller rule set.

use std::collections::HashMap;
use std::sync::Arc;

use dataplane::counters::{FlowCounters, PortCounters, Shard};
use dataplane::ir::{Action, Instruction};
use dataplane::key::{Field, FieldValue, FlowKey, FlowMatch};
use dataplane::model::{FlowId, PortInfo};
use offload::image::{HwImage, ImagePort, Verdict};
use offload::placement::{Mode, Planner, Policy, TrafficParams};
use offload::profile::Profile;

const PROFILE: &str = r#"name = "acl"
device = "bench"
source = "bench"
line_rate_mbps = 1000
insert_us = 1
software_tables = true

[[table]]
name = "tcam"
openflow_table = 0
kind = "tcam"
when_full = "software"
unsupported = "software"
actions = ["output", "drop", "controller"]

[[table.structure]]
name = "acl"
fields = ["in_port", "eth_type", "ipv4_src", "ipv4_dst", "ip_proto", "tcp_dst", "udp_dst"]
masked = ["ipv4_src", "ipv4_dst"]
capacity = CAPACITY
"#;

/// xorshift64*: deterministic, fast.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Clone)]
struct Rule {
    priority: u16,
    m: FlowMatch,
    ins: Vec<Instruction>,
}

fn prefix_mask(len: u32) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

/// A prefix from a small tree of address blocks, so that prefixes nest and chains form.
fn prefix(rng: &mut Rng) -> (u32, u32) {
    let len = [0, 8, 16, 16, 24, 24, 24, 32][rng.below(8) as usize];
    let addr = 0x0a00_0000
        | (rng.below(4) as u32) << 16
        | (rng.below(8) as u32) << 8
        | rng.below(4) as u32;
    (addr & prefix_mask(len), len)
}

fn rule_set(rng: &mut Rng, n: usize) -> Vec<Rule> {
    let mut rules = Vec::with_capacity(n + 1);
    for _ in 0..n {
        let mut m = FlowMatch::any();
        m.set(Field::EthType, FieldValue::from(0x0800u16), None);
        let (src, sl) = prefix(rng);
        let (dst, dl) = prefix(rng);
        if sl > 0 {
            m.set(
                Field::Ipv4Src,
                FieldValue::from(src),
                Some(FieldValue::from(prefix_mask(sl))),
            );
        }
        if dl > 0 {
            m.set(
                Field::Ipv4Dst,
                FieldValue::from(dst),
                Some(FieldValue::from(prefix_mask(dl))),
            );
        }
        let mut specificity = sl + dl;
        if rng.below(2) == 0 {
            m.set(Field::IpProto, FieldValue::from(6u8), None);
            specificity += 8;
            if rng.below(2) == 0 {
                let port = [22u16, 80, 443, 8080][rng.below(4) as usize];
                m.set(Field::TcpDst, FieldValue::from(port), None);
                specificity += 16;
            }
        }
        let ins = match rng.below(10) {
            0 => vec![Instruction::ApplyActions(vec![
                Action::PopVlan,
                Action::Output {
                    port: 2,
                    max_len: 0,
                },
            ])],
            1..=2 => vec![],
            _ => vec![Instruction::ApplyActions(vec![Action::Output {
                port: 2 + rng.below(3) as u32,
                max_len: 0,
            }])],
        };
        // More specific above wider, with some noise (a firewall's ordering): sorted below.
        let order = (specificity * 10) as u16 + rng.below(40) as u16;
        rules.push(Rule {
            priority: order,
            m,
            ins,
        });
    }
    // Unique priorities, as an ordered rule list has them.
    rules.sort_by_key(|r| r.priority);
    for (i, r) in rules.iter_mut().enumerate() {
        r.priority = 1000 + i as u16;
    }
    let mut default = FlowMatch::any();
    default.set(Field::EthType, FieldValue::from(0x0800u16), None);
    rules.push(Rule {
        priority: 1,
        m: default,
        ins: vec![],
    });
    rules
}

/// A random packet inside rule `r`'s match.
fn packet_in(rng: &mut Rng, r: &Rule) -> FlowKey {
    let mut k = FlowKey {
        in_port: 1,
        eth_type: 0x0800,
        ..FlowKey::default()
    };
    let pick = |rng: &mut Rng, f: Field| -> u128 {
        let key = f.get(&r.m.key).0;
        let mask = f.get(&r.m.mask).0;
        let random = u128::from(rng.next()) & f.full_mask().0;
        (key & mask) | (random & !mask)
    };
    k.ipv4_src = pick(rng, Field::Ipv4Src) as u32;
    k.ipv4_dst = pick(rng, Field::Ipv4Dst) as u32;
    let proto_fixed = Field::IpProto.get(&r.m.mask).0 != 0;
    k.ip_proto = if proto_fixed {
        6
    } else {
        [6u8, 17][rng.below(2) as usize]
    };
    let port_fixed = Field::TcpDst.get(&r.m.mask).0 != 0;
    k.tp_dst = if port_fixed {
        Field::TcpDst.get(&r.m.key).0 as u16
    } else {
        [22u16, 80, 443, 8080, 53][rng.below(5) as usize]
    };
    k
}

/// Zipf sampler over `n` ranks.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut acc = 0.0;
        let cdf = (1..=n)
            .map(|k| {
                acc += 1.0 / (k as f64).powf(s);
                acc
            })
            .collect::<Vec<_>>();
        let total = acc;
        Zipf {
            cdf: cdf.into_iter().map(|c| c / total).collect(),
        }
    }
    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|c| *c < u).min(self.cdf.len() - 1)
    }
}

/// The rule software picks for `k` (index into `by_priority`).
fn software_choice(by_priority: &[(FlowId, &Rule)], k: &FlowKey) -> Option<FlowId> {
    by_priority
        .iter()
        .find(|(_, r)| r.m.matches(k))
        .map(|(id, _)| *id)
}

struct Outcome {
    mode: Mode,
    capacity: usize,
    share: f64,
    entries: usize,
    updates_per_change: f64,
    writes_per_change: f64,
}

fn ports() -> HashMap<u32, ImagePort> {
    (1..=4)
        .map(|p| {
            (
                p,
                ImagePort {
                    info: PortInfo {
                        live: true,
                        ..PortInfo::default()
                    },
                    counters: Arc::new(PortCounters::default()),
                },
            )
        })
        .collect()
}

fn run(mode: Mode, capacity: usize, rules: &[Rule], samples: usize, seed: u64) -> Outcome {
    let text = PROFILE.replace("CAPACITY", &capacity.to_string());
    let profile =
        Arc::new(Profile::parse(std::path::Path::new("acl.toml"), &text).expect("parses"));
    let params = TrafficParams {
        hysteresis: 1.2,
        min_pps: 1.0,
        max_updates_per_sec: 100_000,
    };
    let mut planner = Planner::new(profile, mode, Policy::Traffic(params));
    let mut rng = Rng(seed);
    // Insert in random order.
    let mut order: Vec<usize> = (0..rules.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut counters: HashMap<FlowId, Arc<FlowCounters>> = HashMap::new();
    for &i in &order {
        let id = FlowId(i as u64 + 1);
        let c = FlowCounters::new();
        counters.insert(id, Arc::clone(&c));
        planner.insert(0, id, rules[i].priority, rules[i].m, &rules[i].ins, c);
    }
    let mut by_priority: Vec<(FlowId, &Rule)> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| (FlowId(i as u64 + 1), r))
        .collect();
    by_priority.sort_by_key(|(id, r)| (std::cmp::Reverse(r.priority), *id));
    // Popularity: a random permutation of the rules under a Zipf law.
    let mut popular: Vec<usize> = (0..rules.len() - 1).collect();
    for i in (1..popular.len()).rev() {
        popular.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let zipf = Zipf::new(popular.len(), 1.1);
    let shard = Shard::shared();
    let traffic = |rng: &mut Rng| -> FlowKey {
        let r = &rules[popular[zipf.sample(rng)]];
        packet_in(rng, r)
    };
    // Measured traffic, then placement from its rates; a few rounds to settle.
    for second in 1..=6u64 {
        for _ in 0..samples {
            let k = traffic(&mut rng);
            if let Some(id) = software_choice(&by_priority, &k) {
                counters[&id].add(shard, 1, 64);
            }
        }
        planner.tick(second * 1_000_000_000);
    }
    planner.check().expect("invariant");
    let image = HwImage::build(&planner, ports());
    let mut decided = 0usize;
    for _ in 0..samples {
        let k = traffic(&mut rng);
        if let Verdict::Decided { path, len } = image.classify(&k) {
            let hw = image.entry(path[len - 1]).expect("entry").id;
            assert_eq!(
                Some(hw),
                software_choice(&by_priority, &k),
                "hardware took a packet software gives another rule"
            );
            decided += 1;
        }
    }
    let entries = planner.entries_in(0);
    // Rule changes: delete a random rule, insert a fresh one, one at a time.
    let changes = 200;
    let fresh = rule_set(&mut Rng(seed ^ 0x5555), changes);
    let (u0, w0) = (planner.stats.entry_updates, planner.stats.hw_writes);
    for (next_id, r) in (rules.len() as u64 + 1..).zip(fresh.iter().take(changes / 2)) {
        let victim = FlowId(1 + rng.below(rules.len() as u64 - 1));
        planner.remove(victim);
        planner.insert(
            0,
            FlowId(next_id),
            r.priority,
            r.m,
            &r.ins,
            FlowCounters::new(),
        );
    }
    planner.check().expect("invariant after changes");
    let (u1, w1) = (planner.stats.entry_updates, planner.stats.hw_writes);
    Outcome {
        mode,
        capacity,
        share: decided as f64 / samples as f64,
        entries,
        updates_per_change: (u1 - u0) as f64 / changes as f64,
        writes_per_change: (w1 - w0) as f64 / changes as f64,
    }
}

fn main() {
    let quick = std::env::var_os("HAIRPIN_BENCH_QUICK").is_some();
    let (n, samples) = if quick { (300, 3000) } else { (1000, 20_000) };
    let rules = rule_set(&mut Rng(0x00c0_ffee), n);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{} rules (default included), Zipf 1.1 traffic, {samples} packets per measure; loadavg {}",
        rules.len(),
        load.trim()
    );
    println!(
        "{:<14} {:>8} {:>10} {:>8} {:>14} {:>14}",
        "mode", "capacity", "hw share", "entries", "updates/change", "writes/change"
    );
    let mut json = Vec::new();
    for mode in [Mode::DependentSet, Mode::CoverSet, Mode::Algorithm1] {
        for percent in [1, 2, 5, 10, 20, 50] {
            let capacity = (n * percent / 100).max(4);
            let o = run(mode, capacity, &rules, samples, 0x1234);
            println!(
                "{:<14} {:>8} {:>9.1}% {:>8} {:>14.2} {:>14.2}",
                o.mode.name(),
                o.capacity,
                o.share * 100.0,
                o.entries,
                o.updates_per_change,
                o.writes_per_change
            );
            json.push(format!(
                "{{\"mode\":\"{}\",\"capacity\":{},\"capacity_percent\":{percent},\"share\":{:.4},\"entries\":{},\"updates_per_change\":{:.3},\"writes_per_change\":{:.3}}}",
                o.mode.name(), o.capacity, o.share, o.entries, o.updates_per_change, o.writes_per_change
            ));
        }
    }
    let out = std::env::var("HAIRPIN_BENCH_OUT").unwrap_or_else(|_| {
        let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        target.join("offload-cacheflow.json").display().to_string()
    });
    let body = format!(
        "{{\"rules\":{},\"samples\":{samples},\"results\":[{}]}}\n",
        rules.len(),
        json.join(",")
    );
    if let Err(e) = std::fs::write(&out, body) {
        eprintln!("cannot write {out}: {e}");
    } else {
        println!("JSON: {out}");
    }
}
