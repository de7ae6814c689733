//! Group semantics: bucket liveness and selection (OpenFlow 1.3 section 5.6).

use crate::classifier::hash::{hash_masked, Seed};
use crate::ir::{port, GROUP_ANY};
use crate::key::{FlowKey, KEY_WORDS};
use crate::model::{Group, GroupBucket, GroupType};
use crate::snapshot::Snapshot;

/// Watch chains deeper than this count as dead (the core rejects loops; this bounds work).
const MAX_WATCH_DEPTH: u8 = 8;

/// Key words that identify a flow for SELECT: everything after in_port, metadata and
/// tunnel_id (Ethernet, VLAN, IP, transport). Word positions, all bits.
const FLOW_WORDS: [u8; KEY_WORDS - 3] = {
    let mut w = [0u8; KEY_WORDS - 3];
    let mut i = 0;
    while i < w.len() {
        w[i] = (i + 3) as u8;
        i += 1;
    }
    w
};

/// A hash of the packet's headers, stable for the life of the process, so every packet of a
/// flow picks the same SELECT bucket.
pub(crate) fn flow_hash(key: &FlowKey) -> u64 {
    hash_masked(
        Seed::process(),
        key.words(),
        &[u64::MAX; KEY_WORDS],
        &FLOW_WORDS,
    )
}

fn port_live(state: &Snapshot, port_no: u32) -> bool {
    port_no == port::ANY
        || state
            .ports
            .get(port_no)
            .is_some_and(|p| p.info.live && !p.info.config.down)
}

/// Whether a bucket's watched port and group are live.
pub(crate) fn bucket_live(state: &Snapshot, bucket: &GroupBucket, depth: u8) -> bool {
    port_live(state, bucket.watch_port)
        && (bucket.watch_group == GROUP_ANY || group_live(state, bucket.watch_group, depth + 1))
}

/// A group is live when any of its buckets is.
pub(crate) fn group_live(state: &Snapshot, id: u32, depth: u8) -> bool {
    if depth > MAX_WATCH_DEPTH {
        return false;
    }
    state
        .groups
        .get(id)
        .is_some_and(|g| g.group.buckets.iter().any(|b| bucket_live(state, b, depth)))
}

/// Which buckets of a group execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Every bucket, in order (ALL).
    All,
    /// One bucket (INDIRECT, SELECT, FAST_FAILOVER).
    One(usize),
    /// No live bucket.
    Nothing,
}

/// The buckets to execute for a packet with `key`.
pub(crate) fn choose(state: &Snapshot, group: &Group, key: &FlowKey) -> Choice {
    match group.kind {
        GroupType::All => Choice::All,
        GroupType::Indirect if group.buckets.is_empty() => Choice::Nothing,
        GroupType::Indirect => Choice::One(0),
        GroupType::FastFailover => {
            match group.buckets.iter().position(|b| bucket_live(state, b, 0)) {
                Some(i) => Choice::One(i),
                None => Choice::Nothing,
            }
        }
        GroupType::Select => select(state, group, key),
    }
}

/// SELECT: a bucket by flow hash, in proportion to the weights of the live buckets. A bucket
/// of weight 0 takes no share while any live bucket has a weight (as in Open vSwitch); when
/// every live bucket has weight 0 (a controller that left the weights unset, as os-ken's
/// `OFPBucket` default does) they share equally, where Open vSwitch would send everything to
/// its last live bucket.
fn select(state: &Snapshot, group: &Group, key: &FlowKey) -> Choice {
    let (mut live, mut weighted) = (0u64, 0u64);
    for b in group.buckets.iter().filter(|b| bucket_live(state, b, 0)) {
        live += 1;
        weighted += u64::from(b.weight);
    }
    if live == 0 {
        return Choice::Nothing;
    }
    let share = |b: &GroupBucket| {
        if weighted == 0 {
            1
        } else {
            u64::from(b.weight)
        }
    };
    let total = if weighted == 0 { live } else { weighted };
    // Multiply-shift maps the hash uniformly onto [0, total).
    let mut point = ((u128::from(flow_hash(key)) * u128::from(total)) >> 64) as u64;
    for (i, b) in group.buckets.iter().enumerate() {
        if !bucket_live(state, b, 0) {
            continue;
        }
        let w = share(b);
        if point < w {
            return Choice::One(i);
        }
        point -= w;
    }
    Choice::Nothing
}
