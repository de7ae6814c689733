//! Placement decisions one by one: seed 003's Algorithm 1 on the T1040's tables (MAC table or
//! ACL, copy-to-CPU, eviction of correlated rules, the ACL's reordering cost), CacheFlow's
//! cover-set against dependent-set, and the promotion policies' orders.

use std::path::Path;
use std::sync::Arc;

use dataplane::counters::{FlowCounters, ShardLeases};
use dataplane::ir::{Action, Instruction};
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::model::FlowId;
use offload::placement::{Mode, Planner, Policy, TrafficParams};
use offload::profile::Profile;

fn profile(name: &str) -> Arc<Profile> {
    Arc::new(Profile::builtin(name).expect("shipped").expect("parses"))
}

/// A TCAM of `capacity` entries on eth_type, ipv4_dst (masked) and in_port.
fn small(capacity: u32) -> Arc<Profile> {
    let text = format!(
        r#"name = "small"
device = "test"
source = "test"
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
name = "l3"
fields = ["in_port", "eth_type", "ipv4_dst"]
masked = ["ipv4_dst"]
capacity = {capacity}
"#
    );
    Arc::new(Profile::parse(Path::new("small.toml"), &text).expect("parses"))
}

fn out(port: u32) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(vec![Action::Output {
        port,
        max_len: 0,
    }])]
}

fn prefix(addr: u32, len: u32) -> FlowMatch {
    let mut m = FlowMatch::any();
    m.set(Field::EthType, FieldValue::from(0x0800u16), None);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    m.set(
        Field::Ipv4Dst,
        FieldValue::from(addr),
        Some(FieldValue::from(mask)),
    );
    m
}

fn mac_vlan(mac: u64, vid: u16) -> FlowMatch {
    let mut m = FlowMatch::any();
    m.set(Field::EthDst, FieldValue(u128::from(mac)), None);
    m.set(Field::VlanVid, FieldValue::from(0x1000 | vid), None);
    m
}

struct Table {
    planner: Planner,
    next: u64,
}

impl Table {
    fn new(profile: Arc<Profile>, mode: Mode, policy: Policy) -> Self {
        Table {
            planner: Planner::new(profile, mode, policy),
            next: 1,
        }
    }

    fn add(&mut self, priority: u16, m: FlowMatch, ins: &[Instruction]) -> FlowId {
        let id = FlowId(self.next);
        self.next += 1;
        self.planner
            .insert(0, id, priority, m, ins, FlowCounters::new());
        self.planner.check().expect("invariant");
        id
    }

    fn at(&self, id: FlowId) -> (&'static str, Option<String>) {
        let r = self.planner.rule(id).expect("known");
        let table = r
            .entry
            .as_ref()
            .map(|e| self.planner.profile.tables[e.table].name.clone());
        (r.location(), table)
    }
}

#[test]
fn algorithm1_puts_mac_rules_in_the_mac_table_and_the_rest_in_the_acl() {
    let mut t = Table::new(profile("nxp-t1040"), Mode::Algorithm1, Policy::Fcfs);
    let mac = t.add(100, mac_vlan(0x0200_0000_0001, 5), &out(2));
    assert_eq!(t.at(mac), ("hw", Some("mac".into())));
    // An IP rule on another VLAN does not overlap it: down to the ACL.
    let mut other_vlan = prefix(0x0a00_0000, 8);
    other_vlan.set(Field::VlanVid, FieldValue::from(0x1007u16), None);
    let acl = t.add(50, other_vlan, &out(3));
    assert_eq!(t.at(acl), ("hw", Some("acl".into())));
    // One that overlaps it below it cannot decide in the ACL, which the MAC table follows:
    // it would take the MAC rule's packets first.
    let under = t.add(50, prefix(0x0a00_0000, 8), &out(3));
    assert_eq!(t.at(under).0, "sw");
    // Supported match, unsupported actions: down with copy-to-CPU.
    let rewrite = vec![Instruction::ApplyActions(vec![
        Action::PopVlan,
        Action::Output {
            port: 1,
            max_len: 0,
        },
    ])];
    let cpu = t.add(60, prefix(0x0b00_0000, 8), &rewrite);
    assert_eq!(t.at(cpu), ("hw:cpu", Some("acl".into())));
}

#[test]
fn a_mac_rule_above_an_overlapping_acl_entry_goes_to_the_acl() {
    // The MAC table has no priority and comes after the ACL: with a lower-priority ACL entry
    // overlapping it, the rule must sit in the ACL above that entry (seed 003 section 3.3).
    let mut t = Table::new(profile("nxp-t1040"), Mode::Algorithm1, Policy::Fcfs);
    let mut all_vlan5 = FlowMatch::any();
    all_vlan5.set(Field::VlanVid, FieldValue::from(0x1005u16), None);
    let low = t.add(10, all_vlan5, &out(4));
    assert_eq!(t.at(low), ("hw", Some("acl".into())));
    let mac = t.add(100, mac_vlan(0x0200_0000_0001, 5), &out(2));
    assert_eq!(t.at(mac), ("hw", Some("acl".into())));
}

#[test]
fn a_rule_hardware_cannot_match_evicts_the_rules_it_overlaps() {
    let mut t = Table::new(profile("nxp-t1040"), Mode::Algorithm1, Policy::Fcfs);
    let wide = t.add(10, prefix(0x0a00_0000, 8), &out(2));
    let other = t.add(10, prefix(0x0b00_0000, 8), &out(2));
    assert_eq!(t.at(wide).0, "hw");
    // ARP target addresses are not in the T1040's ACL: the rule stays in software, and the
    // hardware rule it overlaps must go (check_correlation).
    let mut arp_or_ip = FlowMatch::any();
    arp_or_ip.set(Field::EthType, FieldValue::from(0x0800u16), None);
    arp_or_ip.set(Field::IpEcn, FieldValue::from(1u8), None);
    let sw = t.add(20, arp_or_ip, &out(3));
    assert_eq!(t.at(sw).0, "sw");
    assert_eq!(t.at(wide).0, "sw", "evicted");
    assert_eq!(t.at(other).0, "sw", "evicted too: it overlaps as well");
    assert_eq!(t.planner.stats.evictions, 2);
}

#[test]
fn inserting_above_acl_entries_costs_a_move_of_each() {
    let n = 20u64;
    let mut up = Table::new(small(100), Mode::Algorithm1, Policy::Fcfs);
    for i in 0..n {
        up.add(
            10 + i as u16,
            prefix(0x0a00_0000 | (i as u32) << 8, 24),
            &out(2),
        );
    }
    assert_eq!(up.planner.stats.hw_writes, n + n * (n - 1) / 2);
    let mut down = Table::new(small(100), Mode::Algorithm1, Policy::Fcfs);
    for i in 0..n {
        down.add(
            100 - i as u16,
            prefix(0x0a00_0000 | (i as u32) << 8, 24),
            &out(2),
        );
    }
    assert_eq!(
        down.planner.stats.hw_writes, n,
        "appending at the bottom moves nothing"
    );
}

#[test]
fn cover_set_caches_a_rule_whose_parent_hardware_cannot_hold() {
    // The parent matches a field the TCAM lacks (ip_dscp): dependent-set cannot bring it
    // down, so the child stays in software; cover-set punts the parent's packets with a
    // wider cover (its match without ip_dscp) and caches the child.
    let mut parent = prefix(0x0a01_0000, 16);
    parent.set(Field::IpDscp, FieldValue::from(46u8), None);
    for (mode, expected) in [(Mode::DependentSet, "sw"), (Mode::CoverSet, "hw")] {
        let mut t = Table::new(small(10), mode, Policy::Fcfs);
        let p = t.add(20, parent, &out(3));
        let child = t.add(10, prefix(0x0a00_0000, 8), &out(2));
        assert_eq!(t.at(child).0, expected, "{mode:?}");
        if mode == Mode::CoverSet {
            let cover = t
                .planner
                .rule(p)
                .and_then(|r| r.entry.clone())
                .expect("cover");
            assert!(cover.cover && !cover.decides());
            assert!(!cover.match_.fields().contains(Field::IpDscp));
        }
    }
}

#[test]
fn dependent_set_brings_a_chain_down_cover_set_one_rule_and_a_cover() {
    // Nested prefixes: /24 above /16 above /8. Caching the /8 with dependent-set takes the
    // whole chain; cover-set takes the /8 and a cover for its one direct parent.
    let mut dep = Table::new(small(3), Mode::DependentSet, Policy::Fcfs);
    let mut cov = Table::new(small(3), Mode::CoverSet, Policy::Fcfs);
    for t in [&mut dep, &mut cov] {
        // Fill the table with unrelated rules first, then free it, so the chain waits.
        let fillers: Vec<FlowId> = (0..3)
            .map(|i| t.add(1, prefix(0x0c00_0000 | i << 16, 16), &out(2)))
            .collect();
        t.add(30, prefix(0x0a01_0100, 24), &out(4));
        t.add(20, prefix(0x0a01_0000, 16), &out(3));
        let wide = t.add(10, prefix(0x0a00_0000, 8), &out(2));
        assert_eq!(t.at(wide).0, "sw");
        for f in fillers {
            t.planner.remove(f);
        }
        t.planner.check().expect("invariant");
        assert_eq!(t.at(wide).0, "hw");
    }
    assert_eq!(
        dep.planner.entries_in(0),
        3,
        "the /8 with its two ancestors"
    );
    let deciding = cov
        .planner
        .rules()
        .filter(|r| r.entry.as_ref().is_some_and(|e| e.decides()))
        .count();
    assert!(
        deciding >= 2,
        "cover-set: the /8 decides beside its parents or their covers"
    );
}

#[test]
fn fcfs_promotes_the_longest_waiting_rule_priority_the_highest() {
    for (policy, expected) in [(Policy::Fcfs, "first"), (Policy::Priority, "high")] {
        let mut t = Table::new(small(2), Mode::CoverSet, policy);
        let a = t.add(5, prefix(0x0a00_0000, 16), &out(2));
        t.add(5, prefix(0x0a01_0000, 16), &out(2));
        let first = t.add(1, prefix(0x0b00_0000, 16), &out(2));
        let high = t.add(3, prefix(0x0b01_0000, 16), &out(2));
        assert_eq!(
            (t.at(first).0, t.at(high).0),
            ("sw", "sw"),
            "{policy:?}: full"
        );
        t.planner.remove(a);
        t.planner.check().expect("invariant");
        let promoted = if t.at(first).0 == "hw" {
            "first"
        } else {
            "high"
        };
        assert_eq!(promoted, expected, "{policy:?}");
    }
}

#[test]
fn priority_displaces_a_lower_rule_fcfs_does_not() {
    for (policy, displaced) in [(Policy::Fcfs, false), (Policy::Priority, true)] {
        let mut t = Table::new(small(1), Mode::Algorithm1, policy);
        let low = t.add(1, prefix(0x0a00_0000, 16), &out(2));
        let high = t.add(9, prefix(0x0b00_0000, 16), &out(2));
        assert_eq!(t.at(high).0 == "hw", displaced, "{policy:?}");
        assert_eq!(t.at(low).0 == "sw", displaced, "{policy:?}");
    }
}

#[test]
fn traffic_swaps_a_cold_rule_for_a_hot_one_past_the_hysteresis() {
    let params = TrafficParams {
        hysteresis: 2.0,
        min_pps: 1.0,
        max_updates_per_sec: 100,
    };
    let shard = Arc::new(ShardLeases::default()).lease();
    let run = |cold_pps: u64, hot_pps: u64| {
        let mut t = Table::new(small(1), Mode::CoverSet, Policy::Traffic(params));
        let cold = t.add(5, prefix(0x0a00_0000, 16), &out(2));
        let hot = t.add(5, prefix(0x0b00_0000, 16), &out(2));
        let counters = |id| Arc::clone(&t.planner.rule(id).expect("known").counters);
        let (c, h) = (counters(cold), counters(hot));
        t.planner.tick(1_000_000_000);
        c.add(shard.shard(), cold_pps, cold_pps * 100);
        h.add(shard.shard(), hot_pps, hot_pps * 100);
        t.planner.tick(2_000_000_000);
        t.planner.check().expect("invariant");
        (t.at(cold).0, t.at(hot).0)
    };
    assert_eq!(
        run(100, 150),
        ("hw", "sw"),
        "within the hysteresis: no swap"
    );
    assert_eq!(run(100, 250), ("sw", "hw"), "hot up, cold down");
    assert_eq!(run(0, 0), ("hw", "sw"), "no traffic: nothing moves");
}

#[test]
fn traffic_moves_at_most_its_budget_per_second() {
    let params = TrafficParams {
        hysteresis: 1.0,
        min_pps: 1.0,
        max_updates_per_sec: 4,
    };
    let shard = Arc::new(ShardLeases::default()).lease();
    let mut t = Table::new(small(50), Mode::CoverSet, Policy::Traffic(params));
    // 50 cold rules fill the table; 50 hot ones wait.
    for i in 0..50 {
        t.add(5, prefix(0x0a00_0000 | i << 8, 24), &out(2));
    }
    let hot: Vec<FlowId> = (0..50)
        .map(|i| t.add(5, prefix(0x0b00_0000 | i << 8, 24), &out(2)))
        .collect();
    t.planner.tick(1_000_000_000);
    for id in &hot {
        t.planner
            .rule(*id)
            .expect("known")
            .counters
            .add(shard.shard(), 1000, 64_000);
    }
    let before = t.planner.stats.entry_updates;
    t.planner.tick(2_000_000_000);
    let moved = t.planner.stats.entry_updates - before;
    assert!(moved > 0 && moved <= 4 + 2, "{moved} updates in one second");
}
