//! Masked TCP/UDP/SCTP port matches (bitwise port ranges, as ACL compilers emit them) in every
//! classifier structure: a direct array, one hash probe, the LPM family and tuple space search
//! each answer what a linear scan of the rules answers, across the port space, by single,
//! per-plan and batched lookup.

use dataplane::classifier::{Classifier, Kind};
use dataplane::key::{Field, FieldValue, FlowKey, FlowMatch};
use proptest::prelude::*;

/// One rule: priority, and the match.
type Rules = Vec<(u64, u16, FlowMatch)>;

fn reference(rules: &Rules, k: &FlowKey) -> Option<u16> {
    rules
        .iter()
        .filter(|(_, _, m)| m.matches(k))
        .map(|(_, p, _)| *p)
        .max()
}

/// Every lookup the classifier offers agrees with the linear reference on every key.
fn check(c: &Classifier<u64>, rules: &Rules, keys: &[FlowKey]) -> Result<(), String> {
    let mut batched = vec![0u32; keys.len()];
    c.lookup_batch(
        keys.len(),
        |i| keys[i].words(),
        &mut batched,
        &mut Default::default(),
    );
    for (k, slot) in keys.iter().zip(&batched) {
        let want = reference(rules, k);
        let single = c.lookup(k.words()).and_then(|s| c.rule(s));
        let planned = c.rule(c.lookup_one(k.words()));
        let batch = c.rule(*slot);
        for (how, got) in [
            ("lookup", single),
            ("lookup_one", planned),
            ("batch", batch),
        ] {
            if got.map(|r| r.priority) != want {
                return Err(format!(
                    "{how}: priority {:?}, want {want:?}, ports {}->{}",
                    got.map(|r| r.priority),
                    k.tp_src,
                    k.tp_dst
                ));
            }
            if let Some(r) = got {
                let m = &rules.iter().find(|(id, _, _)| *id == r.id).unwrap().2;
                if !m.matches(k) {
                    return Err(format!("{how}: rule {} does not match {k:?}", r.id));
                }
            }
        }
    }
    Ok(())
}

fn install(rules: &Rules) -> Classifier<u64> {
    let mut c = Classifier::default();
    for (id, priority, m) in rules {
        c.insert(*id, *priority, m, *id);
    }
    c
}

/// `ip_proto` (TCP, UDP or SCTP) with a masked destination port, and optionally more.
fn port_rule(proto: u8, dst: (u16, u16)) -> FlowMatch {
    let field = match proto {
        6 => Field::TcpDst,
        17 => Field::UdpDst,
        _ => Field::SctpDst,
    };
    let mut m = FlowMatch::any();
    m.set(Field::EthType, FieldValue::from(0x0800u16), None);
    m.set(Field::IpProto, FieldValue::from(proto), None);
    m.set(
        field,
        FieldValue::from(dst.0 & dst.1),
        Some(FieldValue::from(dst.1)),
    );
    m
}

/// Destination ports of IPv4 packets of `proto` (and a few of another protocol): every 7th
/// port (7 is odd, so the sample covers every value of the low bits and every high byte), and
/// both sides of every 256-port boundary.
fn every_port(proto: u8, ipv4_dst: u32) -> Vec<FlowKey> {
    (0..=u16::MAX)
        .step_by(7)
        .chain(
            (0..=u16::MAX)
                .step_by(256)
                .flat_map(|p| [p, p.wrapping_sub(1)]),
        )
        .map(|p| FlowKey {
            eth_type: 0x0800,
            ip_proto: proto,
            ipv4_dst,
            tp_src: 1234,
            tp_dst: p,
            ..FlowKey::default()
        })
        .chain((0..64u16).map(|p| FlowKey {
            eth_type: 0x0800,
            ip_proto: 99,
            ipv4_dst,
            tp_dst: p << 10,
            ..FlowKey::default()
        }))
        .collect()
}

#[test]
fn a_masked_port_alone_is_direct_indexed() {
    // Rules on the destination port alone, one mask: a single narrow field.
    let mut rules: Rules = (0..16u16)
        .map(|i| {
            let mut m = FlowMatch::any();
            m.set(
                Field::TcpDst,
                FieldValue::from(i << 8),
                Some(FieldValue::from(0x0f00u16)),
            );
            (u64::from(i), 10 + i % 3, m)
        })
        .collect();
    rules.push((100, 1, FlowMatch::any()));
    let c = install(&rules);
    assert_eq!(c.kind(), Kind::Direct);
    check(&c, &rules, &every_port(6, 0)).unwrap();
}

#[test]
fn an_acl_of_port_ranges_is_one_hash() {
    // 1024-port blocks of TCP destinations to each of 16 servers: one mask.
    let mut rules = Rules::new();
    for server in 0..16u32 {
        for block in [0u16, 3, 17, 63] {
            let mut m = port_rule(6, (block << 10, 0xfc00));
            m.set(Field::Ipv4Dst, FieldValue::from(0x0a00_0000 + server), None);
            rules.push((rules.len() as u64, 100, m));
        }
    }
    let c = install(&rules);
    assert_eq!(c.kind(), Kind::Hash);
    for server in [5u32, 16] {
        check(&c, &rules, &every_port(6, 0x0a00_0000 + server)).unwrap();
    }
}

#[test]
fn routes_sharing_a_port_range_are_one_lpm_family() {
    // A routing table for UDP 0x8000-0x80ff only: the masked port is the same in every route.
    let route = |dst: u32, len: u8| {
        let mut m = port_rule(17, (0x8000, 0xff00));
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        m.set(
            Field::Ipv4Dst,
            FieldValue::from(dst & mask),
            Some(FieldValue::from(mask)),
        );
        (
            u64::from(dst) << 8 | u64::from(len),
            100 + u16::from(len),
            m,
        )
    };
    let rules: Rules = vec![
        route(0x0a00_0000, 8),
        route(0x0a01_0000, 16),
        route(0x0a01_0200, 24),
        route(0x0a01_0203, 32),
    ];
    let c = install(&rules);
    assert_eq!(c.kind(), Kind::Lpm);
    for dst in [
        0x0a01_0203,
        0x0a01_0204,
        0x0a01_0504,
        0x0a05_0504,
        0x0b00_0001,
    ] {
        check(&c, &rules, &every_port(17, dst)).unwrap();
    }
}

#[test]
fn overlapping_ranges_of_several_masks_are_searched_by_priority() {
    let rules: Rules = vec![
        (1, 50, port_rule(6, (0x0050, 0xffff))),
        (2, 40, port_rule(6, (0x0040, 0xfff0))),
        (3, 30, port_rule(6, (0x0000, 0xfc00))),
        (4, 20, port_rule(6, (0x8000, 0x8000))),
        (5, 45, port_rule(6, (0x0001, 0x0001))),
        (6, 10, port_rule(17, (0x0035, 0xffff))),
        (7, 5, port_rule(132, (0x0000, 0x0000))),
    ];
    let c = install(&rules);
    assert_eq!(c.kind(), Kind::TupleSpace);
    for proto in [6, 17, 132] {
        check(&c, &rules, &every_port(proto, 0)).unwrap();
    }
}

/// A random port range as an ACL compiler writes it: a value under a prefix mask, or any
/// bit pattern.
fn port_mask() -> impl Strategy<Value = (u16, u16)> {
    prop_oneof![
        (any::<u16>(), 0u32..=16).prop_map(|(v, len)| {
            let mask = (0xffff_u32 << (16 - len)) as u16;
            (v & mask, mask)
        }),
        (any::<u16>(), any::<u16>()).prop_map(|(v, m)| (v & m, m)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_port_ranges_match_as_a_linear_scan_does(
        specs in prop::collection::vec(
            (0u16..8, prop::sample::select(vec![6u8, 17, 132]), port_mask(), prop::option::of(port_mask())),
            1..24,
        ),
        removals in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        probes in prop::collection::vec(any::<u16>(), 64),
    ) {
        let mut rules = Rules::new();
        for (id, (priority, proto, dst, src)) in specs.iter().enumerate() {
            let mut m = port_rule(*proto, *dst);
            if let Some(src) = src {
                let field = match proto { 6 => Field::TcpSrc, 17 => Field::UdpSrc, _ => Field::SctpSrc };
                m.set(field, FieldValue::from(src.0), Some(FieldValue::from(src.1)));
            }
            rules.push((id as u64, *priority, m));
        }
        // Keys near every rule's range (its value, the edges of its mask) and at random.
        let mut ports: Vec<(u16, u16)> = probes.chunks(2).map(|p| (p[0], p[1])).collect();
        for (_, _, dst, src) in &specs {
            let s = src.map_or(0, |s| s.0);
            ports.extend([(s, dst.0), (s, dst.0 | !dst.1), (s, dst.0.wrapping_sub(1)), (!s, dst.0)]);
        }
        let keys: Vec<FlowKey> = ports
            .iter()
            .flat_map(|&(src, dst)| [6u8, 17, 132].map(|proto| FlowKey {
                eth_type: 0x0800,
                ip_proto: proto,
                tp_src: src,
                tp_dst: dst,
                ..FlowKey::default()
            }))
            .collect();
        let mut c = install(&rules);
        prop_assert_eq!(check(&c, &rules, &keys), Ok(()));
        for r in removals {
            if rules.is_empty() {
                break;
            }
            let (id, _, _) = rules.remove(r.index(rules.len()));
            c.remove(id);
            prop_assert_eq!(check(&c, &rules, &keys), Ok(()));
        }
    }
}
