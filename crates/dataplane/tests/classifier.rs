//! The classifier against a brute-force linear reference: random rules with overlapping
//! masks, random packets, inserts and removals; and the structure each kind of table gets.

use dataplane::classifier::{Classifier, Kind};
use dataplane::key::{Field, FieldValue, FlowKey, FlowMatch};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct RuleSpec {
    priority: u16,
    in_port: Option<u32>,
    eth_type: Option<u16>,
    dst: Option<(u32, u8)>,
    src: Option<(u32, u8)>,
    tp_dst: Option<u16>,
}

impl RuleSpec {
    fn to_match(&self) -> FlowMatch {
        let mut m = FlowMatch::any();
        if let Some(p) = self.in_port {
            m.set(Field::InPort, FieldValue::from(p), None);
        }
        if let Some(t) = self.eth_type {
            m.set(Field::EthType, FieldValue::from(t), None);
        }
        if let Some((a, len)) = self.dst {
            m.set(
                Field::Ipv4Dst,
                FieldValue::from(a),
                Some(FieldValue::from(prefix(len))),
            );
        }
        if let Some((a, len)) = self.src {
            m.set(
                Field::Ipv4Src,
                FieldValue::from(a),
                Some(FieldValue::from(prefix(len))),
            );
        }
        if let Some(p) = self.tp_dst {
            m.set(Field::TcpDst, FieldValue::from(p), None);
        }
        m
    }
}

fn prefix(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

/// Addresses from a small space so prefixes overlap often.
fn addr() -> impl Strategy<Value = u32> {
    (0u32..4, 0u32..4, 0u32..4).prop_map(|(a, b, c)| 0x0a00_0000 | (a << 16) | (b << 8) | c)
}

fn rule_spec() -> impl Strategy<Value = RuleSpec> {
    (
        0u16..6,
        prop::option::of(1u32..3),
        prop::option::of(prop::sample::select(vec![0x0800u16, 0x86dd])),
        prop::option::of((
            addr(),
            prop::sample::select(vec![0u8, 8, 16, 23, 24, 30, 32]),
        )),
        prop::option::of((addr(), prop::sample::select(vec![8u8, 24, 32]))),
        prop::option::of(80u16..82),
    )
        .prop_map(|(priority, in_port, eth_type, dst, src, tp_dst)| RuleSpec {
            priority,
            in_port,
            eth_type,
            dst,
            src,
            tp_dst,
        })
}

fn packet() -> impl Strategy<Value = FlowKey> {
    (
        1u32..3,
        prop::sample::select(vec![0x0800u16, 0x86dd, 0x0806]),
        addr(),
        addr(),
        79u16..82,
    )
        .prop_map(|(p, t, d, s, tp)| FlowKey {
            in_port: p,
            eth_type: t,
            ipv4_dst: d,
            ipv4_src: s,
            tp_dst: tp,
            ..FlowKey::default()
        })
}

/// Highest priority of any live rule matching `k`.
fn reference(rules: &[(u64, u16, FlowMatch)], k: &FlowKey) -> Option<u16> {
    rules
        .iter()
        .filter(|(_, _, m)| m.matches(k))
        .map(|(_, p, _)| *p)
        .max()
}

fn check(
    c: &Classifier<u64>,
    live: &[(u64, u16, FlowMatch)],
    packets: &[FlowKey],
) -> Result<(), TestCaseError> {
    for k in packets {
        let one = c.rule(c.lookup_one(k.words()));
        let got = c.lookup(k.words()).and_then(|s| c.rule(s));
        prop_assert_eq!(
            one.map(|r| r.id),
            got.map(|r| r.id),
            "the plan's single lookup for {:?}",
            k
        );
        match (got, reference(live, k)) {
            (None, None) => {}
            (Some(r), Some(p)) => {
                prop_assert_eq!(r.priority, p, "wrong priority for {:?}", k);
                let m = &live
                    .iter()
                    .find(|(id, _, _)| *id == r.id)
                    .expect("returned rule is live")
                    .2;
                prop_assert!(m.matches(k), "returned rule does not match");
            }
            (got, want) => prop_assert!(false, "got {:?} want {:?}", got.map(|r| r.id), want),
        }
    }
    // The datapath classifies whole batches: the batched lookup must agree too.
    let mut out = vec![0u32; packets.len()];
    let mut scratch = Default::default();
    c.lookup_batch(
        packets.len(),
        |i| packets[i].words(),
        &mut out,
        &mut scratch,
    );
    for (k, slot) in packets.iter().zip(&out) {
        let got = c.rule(*slot).map(|r| r.priority);
        prop_assert_eq!(got, reference(live, k), "batched lookup for {:?}", k);
        if let Some(r) = c.rule(*slot) {
            let m = &live
                .iter()
                .find(|(id, _, _)| *id == r.id)
                .expect("returned rule is live")
                .2;
            prop_assert!(
                m.matches(k),
                "batched lookup returned a rule that does not match"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn matches_linear_reference(
        specs in prop::collection::vec(rule_spec(), 1..40),
        removals in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
        packets in prop::collection::vec(packet(), 1..60),
    ) {
        let mut c: Classifier<_> = Classifier::default();
        let mut live = Vec::new();
        for (id, s) in specs.iter().enumerate() {
            let m = s.to_match();
            c.insert(id as u64, s.priority, &m, id as u64);
            live.push((id as u64, s.priority, m));
        }
        check(&c, &live, &packets)?;
        for r in removals {
            if live.is_empty() {
                break;
            }
            let (id, _, _) = live.remove(r.index(live.len()));
            prop_assert_eq!(c.remove(id), Some((id, ())));
            check(&c, &live, &packets)?;
        }
        prop_assert_eq!(c.len(), live.len());
    }

    /// Tables whose every rule names an ingress port (a port-based pipeline's table 0) are
    /// searched by port, and agree with the reference through inserts and removals.
    #[test]
    fn port_tables_are_searched_by_port_and_agree(
        specs in prop::collection::vec(rule_spec(), 1..24),
        ports in prop::collection::vec(1u32..5, 24),
        catch_all in prop::option::of(0u16..3),
        removals in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
        packets in prop::collection::vec((packet(), 0u32..6), 1..60),
    ) {
        let packets: Vec<FlowKey> = packets
            .into_iter()
            .map(|(k, port)| FlowKey { in_port: port, ..k })
            .collect();
        let mut c: Classifier<_> = Classifier::default();
        let mut live = Vec::new();
        for (id, (s, port)) in specs.iter().zip(&ports).enumerate() {
            let m = RuleSpec { in_port: Some(*port), ..s.clone() }.to_match();
            c.insert(id as u64, s.priority, &m, id as u64);
            live.push((id as u64, s.priority, m));
        }
        if let Some(p) = catch_all {
            c.insert(1000, p, &FlowMatch::any(), 1000);
            live.push((1000, p, FlowMatch::any()));
        }
        // Within the plan's limits (here: at most 8 rules a port) and without a catch-all
        // above some rules, the table is searched by port (or direct-indexed, for one
        // narrow mask, or by longest prefix, for routes on one port).
        let most_on_a_port = (1..5)
            .map(|p| ports.iter().take(specs.len()).filter(|&&q| q == p).count())
            .max()
            .unwrap_or(0);
        if most_on_a_port <= 8 && catch_all.is_none_or(|p| specs.iter().all(|s| s.priority >= p)) {
            let kind = c.kind();
            prop_assert!(matches!(kind, Kind::Ports | Kind::Direct | Kind::Lpm), "{:?}", kind);
        }
        check(&c, &live, &packets)?;
        for r in removals {
            if live.is_empty() {
                break;
            }
            let (id, _, _) = live.remove(r.index(live.len()));
            prop_assert_eq!(c.remove(id), Some((id, ())));
            check(&c, &live, &packets)?;
        }
    }

    #[test]
    fn routing_tables_use_lpm_and_agree(
        routes in prop::collection::vec((addr(), 0u8..=32), 2..60),
        catch_all in prop::option::of(0u16..=140),
        removals in prop::collection::vec(any::<prop::sample::Index>(), 0..30),
        packets in prop::collection::vec(packet(), 1..60),
    ) {
        let mut c: Classifier<_> = Classifier::default();
        let mut live: Vec<(u64, u16, FlowMatch)> = Vec::new();
        for (id, (a, len)) in routes.iter().enumerate() {
            let spec = RuleSpec { priority: 100 + u16::from(*len), in_port: None, eth_type: Some(0x0800), dst: Some((*a, *len)), src: None, tp_dst: None };
            let m = spec.to_match();
            c.insert(id as u64, spec.priority, &m, id as u64);
            live.push((id as u64, spec.priority, m));
        }
        // A table-miss style rule beside the routes, below, among or above their priorities.
        if let Some(priority) = catch_all {
            let id = routes.len() as u64;
            c.insert(id, priority, &FlowMatch::any(), id);
            live.push((id, priority, FlowMatch::any()));
        }
        let lengths: std::collections::BTreeSet<u8> = routes.iter().map(|r| r.1).collect();
        if lengths.len() >= 2 {
            prop_assert_eq!(c.kind(), Kind::Lpm);
        }
        check(&c, &live, &packets)?;
        for r in removals {
            if live.is_empty() {
                break;
            }
            let (id, _, _) = live.remove(r.index(live.len()));
            c.remove(id);
            check(&c, &live, &packets)?;
        }
    }
}

fn mac_rule(i: u32) -> FlowMatch {
    let mut m = FlowMatch::any();
    let b = i.to_be_bytes();
    m.set(
        Field::EthDst,
        FieldValue::mac([2, 0, b[0], b[1], b[2], b[3]]),
        None,
    );
    m
}

#[test]
fn exact_table_is_one_hash() {
    let mut c: Classifier<_> = Classifier::default();
    for i in 0..1000u32 {
        c.insert(u64::from(i), 10, &mac_rule(i), i);
    }
    assert_eq!(c.kind(), Kind::Hash);
    for i in (0..1000u32).step_by(7) {
        let mut k = FlowKey::default();
        let b = i.to_be_bytes();
        k.eth_dst = [2, 0, b[0], b[1], b[2], b[3]];
        let slot = c.lookup(k.words()).expect("hit");
        assert_eq!(c.rule(slot).map(|r| *r.payload), Some(i));
    }
}

/// What the owner keeps with a rule (apart from the payload a lookup returns) follows the
/// rule through replacement, slot reuse and removal.
#[test]
fn kept_values_stay_with_their_rules() {
    let mut c: Classifier<u32, String> = Classifier::default();
    for i in 0..100u32 {
        c.insert_with(u64::from(i), 10, &mac_rule(i), i, format!("rule {i}"));
    }
    c.insert_with(7, 10, &mac_rule(7), 707, "replaced".to_string());
    assert_eq!(c.remove(3), Some((3, "rule 3".to_string())));
    assert_eq!(c.remove(3), None);
    c.insert_with(
        1000,
        10,
        &mac_rule(1000),
        1000,
        "in a reused slot".to_string(),
    );
    for r in c.rules() {
        let expect = match r.id {
            7 => "replaced".to_string(),
            1000 => "in a reused slot".to_string(),
            id => format!("rule {id}"),
        };
        assert_eq!(
            (r.extra, u64::from(*r.payload) % 100),
            (&expect, r.id % 100)
        );
    }
    assert_eq!(c.rules().count(), 100);
    let k = FlowKey {
        eth_dst: [2, 0, 0, 0, 3, 0xe8],
        ..FlowKey::default()
    };
    let slot = c.lookup(k.words()).expect("the rule in the reused slot");
    assert_eq!(c.rule(slot).map(|r| (r.id, *r.payload)), Some((1000, 1000)));
}

/// An in_port table (the first table of the L3 and load-balancer pipelines) is an array
/// indexed by port, the catch-all filling the gaps, until a value is too large for one.
#[test]
fn narrow_field_table_is_direct_indexed() {
    let port_rule = |p: u32| {
        let mut m = FlowMatch::any();
        m.set(Field::InPort, FieldValue::from(p), None);
        m
    };
    let mut c: Classifier<_> = Classifier::default();
    for p in 1..=48u32 {
        c.insert(u64::from(p), 10, &port_rule(p), p);
    }
    assert_eq!(c.kind(), Kind::Direct);
    c.insert(100, 0, &FlowMatch::any(), 100);
    assert_eq!(c.kind(), Kind::Direct);
    // A higher-priority duplicate of port 7 and a lower-priority one of port 8.
    c.insert(107, 20, &port_rule(7), 107);
    c.insert(108, 5, &port_rule(8), 108);
    let expect = |p: u32| match p {
        7 => 107,
        1..=48 => p,
        _ => 100,
    };
    let keys: Vec<FlowKey> = (0..=60u32)
        .chain([4095, 4096, u32::MAX])
        .map(|p| FlowKey {
            in_port: p,
            ..FlowKey::default()
        })
        .collect();
    let mut out = vec![0u32; keys.len()];
    c.lookup_batch(
        keys.len(),
        |i| keys[i].words(),
        &mut out,
        &mut Default::default(),
    );
    for (k, slot) in keys.iter().zip(&out) {
        assert_eq!(c.rule(*slot).map(|r| *r.payload), Some(expect(k.in_port)));
        let one = c.lookup(k.words()).and_then(|s| c.rule(s));
        assert_eq!(one.map(|r| *r.payload), Some(expect(k.in_port)));
    }
    // A catch-all above the rules takes everything: no longer a tuple with a catch-all below.
    c.insert(101, 30, &FlowMatch::any(), 101);
    assert_eq!(c.kind(), Kind::TupleSpace);
    c.remove(101);
    assert_eq!(c.kind(), Kind::Direct);
    c.insert(4097, 10, &port_rule(4097), 4097);
    assert_ne!(c.kind(), Kind::Direct, "port 4097 is beyond a direct array");
    let k = FlowKey {
        in_port: 4097,
        ..FlowKey::default()
    };
    let hit = c.lookup(k.words()).and_then(|s| c.rule(s));
    assert_eq!(hit.map(|r| *r.payload), Some(4097));
}

#[test]
fn kind_follows_contents() {
    let mut c: Classifier<_> = Classifier::default();
    assert_eq!(c.kind(), Kind::Empty);
    let route = |a: u32, len: u8| {
        RuleSpec {
            priority: u16::from(len),
            in_port: None,
            eth_type: Some(0x0800),
            dst: Some((a, len)),
            src: None,
            tp_dst: None,
        }
        .to_match()
    };
    c.insert(1, 24, &route(0x0a00_0100, 24), 1);
    assert_eq!(c.kind(), Kind::Hash);
    c.insert(2, 16, &route(0x0a00_0000, 16), 2);
    assert_eq!(c.kind(), Kind::Lpm);
    // A catch-all below the routes keeps the LPM family, probed first.
    c.insert(3, 0, &FlowMatch::any(), 3);
    assert_eq!(c.kind(), Kind::Lpm);
    let k = FlowKey {
        eth_type: 0x0800,
        ipv4_dst: 0x0a00_0105,
        ..FlowKey::default()
    };
    assert_eq!(
        c.lookup(k.words()).and_then(|s| c.rule(s)).map(|r| r.id),
        Some(1)
    );
    let k = FlowKey {
        eth_type: 0x0800,
        ipv4_dst: 0x0a00_0505,
        ..FlowKey::default()
    };
    assert_eq!(
        c.lookup(k.words()).and_then(|s| c.rule(s)).map(|r| r.id),
        Some(2)
    );
    let k = FlowKey {
        eth_type: 0x0806,
        ..FlowKey::default()
    };
    assert_eq!(
        c.lookup(k.words()).and_then(|s| c.rule(s)).map(|r| r.id),
        Some(3)
    );
    // A priority that contradicts prefix length forces tuple space search.
    c.insert(4, 30, &route(0x0a00_0000, 8), 4);
    assert_eq!(c.kind(), Kind::TupleSpace);
    let k = FlowKey {
        eth_type: 0x0800,
        ipv4_dst: 0x0a00_0105,
        ..FlowKey::default()
    };
    assert_eq!(
        c.lookup(k.words()).and_then(|s| c.rule(s)).map(|r| r.id),
        Some(4)
    );
    c.remove(4);
    c.remove(3);
    assert_eq!(c.kind(), Kind::Lpm);
}

#[test]
fn batch_lookup_equals_single_lookup() {
    let mut c: Classifier<_> = Classifier::default();
    for i in 0..300u32 {
        c.insert(u64::from(i), (i % 7) as u16, &mac_rule(i % 150), i);
    }
    c.insert(1000, 3, &FlowMatch::any(), 1000);
    let keys: Vec<FlowKey> = (0..200u32)
        .map(|i| {
            let b = i.to_be_bytes();
            FlowKey {
                eth_dst: [2, 0, b[0], b[1], b[2], b[3]],
                ..FlowKey::default()
            }
        })
        .collect();
    let mut out = vec![0u32; keys.len()];
    let mut scratch = Default::default();
    c.lookup_batch(keys.len(), |i| keys[i].words(), &mut out, &mut scratch);
    for (k, o) in keys.iter().zip(&out) {
        let single = c
            .lookup(k.words())
            .unwrap_or(dataplane::classifier::NO_RULE);
        assert_eq!(
            c.rule(*o).map(|r| r.priority),
            c.rule(single).map(|r| r.priority)
        );
    }
}

/// Every probe strategy of `lookup_batch` (one small tuple with or without a catch-all,
/// direct probing of small indexes, hash-then-prefetch for large ones, masks wider than the
/// unrolled probes, the match-all shortcut) agrees with a linear scan of the rules, including
/// a catch-all whose priority lies among the other rules' priorities.
#[test]
fn batch_lookup_agrees_with_linear_scan_at_every_size() {
    for (rules, two_masks, catch_all, wide) in [
        (200u32, true, 0u16, false),
        (5000, true, 0, false),
        (200, false, 3, false),
        (200, false, 0, false),
        (5000, false, 3, false),
        (200, false, 3, true),
        (5000, false, 0, true),
    ] {
        let mut c: Classifier<_> = Classifier::default();
        let mut installed = Vec::new();
        for i in 0..rules {
            let mut m = mac_rule(i % (rules / 2));
            if two_masks && i % 3 == 0 {
                m.set(Field::EthType, FieldValue::from(0x0800u16), None);
            }
            if wide {
                // Five mask words: in_port, tunnel_id, eth_dst, ipv4_dst, tcp_dst.
                m.set(Field::InPort, FieldValue::from(1u32), None);
                m.set(Field::TunnelId, FieldValue::from(7u64), None);
                m.set(Field::Ipv4Dst, FieldValue::from(0x0a00_0001u32), None);
                m.set(Field::TcpDst, FieldValue::from(80u16), None);
            }
            let priority = (i % 5) as u16 + 1;
            c.insert(u64::from(i), priority, &m, i);
            installed.push((priority, m));
        }
        c.insert(u64::from(rules), catch_all, &FlowMatch::any(), rules);
        installed.push((catch_all, FlowMatch::any()));
        let keys: Vec<FlowKey> = (0..rules)
            .step_by(3)
            .map(|i| {
                let b = i.to_be_bytes();
                FlowKey {
                    in_port: 1,
                    tunnel_id: if i % 4 == 1 { 8 } else { 7 },
                    eth_dst: [2, 0, b[0], b[1], b[2], b[3]],
                    eth_type: if i % 2 == 0 { 0x0800 } else { 0x86dd },
                    ipv4_dst: 0x0a00_0001,
                    tp_dst: 80,
                    ..FlowKey::default()
                }
            })
            .collect();
        let mut out = vec![0u32; keys.len()];
        let mut scratch = Default::default();
        c.lookup_batch(keys.len(), |i| keys[i].words(), &mut out, &mut scratch);
        for (k, o) in keys.iter().zip(&out) {
            let expected = installed
                .iter()
                .filter(|(_, m)| m.matches(k))
                .map(|(p, _)| *p)
                .max();
            assert_eq!(
                c.rule(*o).map(|r| r.priority),
                expected,
                "{rules} rules, two masks {two_masks}, catch-all {catch_all}"
            );
        }
    }
}

/// Subtables whose rules all name an ingress port are skipped for packets from other ports;
/// the filter follows inserts and removals, so a port's packets find its rules as soon as
/// one exists and fall through once none is left.
#[test]
fn subtables_keyed_on_in_port_are_skipped_for_other_ports() {
    let rule = |p: u32, ty: Option<u16>| {
        let mut m = FlowMatch::any();
        m.set(Field::InPort, FieldValue::from(p), None);
        if let Some(t) = ty {
            m.set(Field::EthType, FieldValue::from(t), None);
        }
        m
    };
    let mut c: Classifier<_> = Classifier::default();
    c.insert(1, 10, &rule(1, Some(0x0800)), 1);
    c.insert(2, 10, &rule(2, None), 2);
    c.insert(3, 0, &FlowMatch::any(), 3);
    // Port 65 shares port 1's bucket of the 64-bucket filter: the probe decides.
    c.insert(65, 10, &rule(65, Some(0x0806)), 65);
    assert_eq!(c.kind(), Kind::Ports);
    let key = |p: u32, ty: u16| FlowKey {
        in_port: p,
        eth_type: ty,
        ..FlowKey::default()
    };
    let find = |c: &Classifier<u64>, k: &FlowKey| {
        let mut out = [0u32];
        c.lookup_batch(1, |_| k.words(), &mut out, &mut Default::default());
        let batch = c.rule(out[0]).map(|r| *r.payload);
        assert_eq!(
            c.lookup(k.words())
                .and_then(|s| c.rule(s))
                .map(|r| *r.payload),
            batch
        );
        batch
    };
    assert_eq!(find(&c, &key(1, 0x0800)), Some(1));
    assert_eq!(find(&c, &key(1, 0x0806)), Some(3));
    assert_eq!(find(&c, &key(65, 0x0806)), Some(65));
    assert_eq!(find(&c, &key(2, 0x0806)), Some(2));
    assert_eq!(find(&c, &key(7, 0x0800)), Some(3));
    c.remove(2);
    assert_eq!(find(&c, &key(2, 0x0806)), Some(3));
    c.insert(7, 10, &rule(7, None), 7);
    assert_eq!(find(&c, &key(7, 0x0800)), Some(7));
    c.remove(1);
    assert_eq!(find(&c, &key(1, 0x0800)), Some(3));
    assert_eq!(find(&c, &key(65, 0x0806)), Some(65));
}

/// An ACL-like table whose rules all name one protocol and port: a key with another protocol
/// or port misses without a probe (the subtable's guard), and once a rule with another port
/// joins, keys with that port find it, also after a large table's two-pass probe, and the
/// rules that remain keep matching after removals.
#[test]
fn a_lane_every_rule_shares_turns_other_keys_away_until_a_rule_differs() {
    let acl = |dst: u32, port: u16| {
        let mut m = FlowMatch::any();
        m.set(Field::EthType, FieldValue::from(0x0800u16), None);
        m.set(Field::IpProto, FieldValue::from(6u8), None);
        m.set(Field::Ipv4Dst, FieldValue::from(dst), None);
        m.set(Field::TcpDst, FieldValue::from(port), None);
        m
    };
    let key = |dst: u32, port: u16| FlowKey {
        eth_type: 0x0800,
        ip_proto: 6,
        ipv4_dst: dst,
        tp_dst: port,
        ..FlowKey::default()
    };
    let batch = |c: &Classifier<u32>, keys: &[FlowKey]| -> Vec<Option<u32>> {
        let mut out = vec![0u32; keys.len()];
        let mut scratch = Default::default();
        c.lookup_batch(keys.len(), |i| keys[i].words(), &mut out, &mut scratch);
        out.iter().map(|&s| c.payload(s).copied()).collect()
    };
    for rules in [100u32, 5000] {
        let mut c: Classifier<u32> = Classifier::default();
        for i in 0..rules {
            c.insert(u64::from(i), 10, &acl(i, 80), i);
        }
        let keys = [key(7, 80), key(7, 53), key(rules + 1, 80)];
        assert_eq!(batch(&c, &keys), vec![Some(7), None, None], "{rules} rules");

        c.insert(u64::from(rules), 10, &acl(7, 53), rules);
        assert_eq!(
            batch(&c, &keys),
            vec![Some(7), Some(rules), None],
            "{rules} rules"
        );

        c.remove(7);
        assert_eq!(
            batch(&c, &keys),
            vec![None, Some(rules), None],
            "{rules} rules"
        );
        assert_eq!(batch(&c, &[key(8, 80)]), vec![Some(8)], "{rules} rules");
        for (k, got) in keys.iter().zip(batch(&c, &keys)) {
            assert_eq!(c.lookup(k.words()).and_then(|s| c.payload(s).copied()), got);
        }
    }
}
