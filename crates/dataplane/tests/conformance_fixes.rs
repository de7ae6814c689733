//! Regression tests for datapath defects found by the os-ken OpenFlow 1.3 switch test tool.

mod common;
use common::*;
use dataplane::counters::GroupCounters;
use dataplane::datapath::{Bucket, Group, GroupType, Op};
use dataplane::ir::{port, Action, GROUP_ANY};
use dataplane::key::{Field, Match};

fn lcg(s: &mut u64) -> u64 {
    *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *s >> 16
}

#[test]
fn select_random_macs() {
    let (mut w, mut r) = datapath(3);
    let buckets = vec![
        Bucket { weight: 1, watch_port: port::ANY, watch_group: GROUP_ANY, actions: vec![out(2)] },
        Bucket { weight: 1, watch_port: port::ANY, watch_group: GROUP_ANY, actions: vec![out(3)] },
    ];
    let counters = GroupCounters::new(2);
    w.apply(Op::SetGroup { id: 0, group: Group { kind: GroupType::Select, buckets, counters } });
    add_flow(&mut w, 0, 1, 1, m(&[(Field::InPort, 1)]), vec![apply(vec![Action::Group(0)])]);
    w.publish();
    let mut s = 1u64;
    let mut on2 = 0;
    for _ in 0..1000 {
        let mut p = udp4(1, 2, 3, 4, 64, 1500);
        let a = lcg(&mut s).to_be_bytes();
        let b = lcg(&mut s).to_be_bytes();
        p[0..6].copy_from_slice(&a[2..8]);
        p[6..12].copy_from_slice(&b[2..8]);
        p[6] &= 0xfe;
        let rec = send(&mut r, 1, &[(1, p)]);
        assert_eq!(rec.out.len(), 1);
        on2 += rec.ports().iter().filter(|&&p| p == 2).count();
    }
    let _ = Match::any();
    panic!("on2 = {on2}");
}
