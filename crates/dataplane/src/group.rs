//! Group semantics: which buckets execute (OpenFlow 1.3 section 5.6), from the liveness
//! [`crate::snapshot::Snapshot`] keeps per bucket.

use crate::classifier::hash::{hash_masked, Seed};
use crate::key::{FlowKey, KEY_WORDS};
use crate::model::{GroupBucket, GroupType};
use crate::snapshot::GroupEntry;

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
pub(crate) fn choose(entry: &GroupEntry, key: &FlowKey) -> Choice {
    let group = &*entry.group;
    match group.kind {
        GroupType::All => Choice::All,
        GroupType::Indirect if group.buckets.is_empty() => Choice::Nothing,
        GroupType::Indirect => Choice::One(0),
        GroupType::FastFailover => match entry.buckets.iter().position(|b| b.live) {
            Some(i) => Choice::One(i),
            None => Choice::Nothing,
        },
        GroupType::Select => select(entry, key),
    }
}

/// SELECT: a bucket by flow hash, in proportion to the weights of the live buckets. A bucket
/// of weight 0 takes no share while any live bucket has a weight (as in Open vSwitch); when
/// every live bucket has weight 0 (a controller that left the weights unset, as os-ken's
/// `OFPBucket` default does) they share equally, where Open vSwitch would send everything to
/// its last live bucket.
fn select(entry: &GroupEntry, key: &FlowKey) -> Choice {
    let (mut live, mut weighted) = (0u64, 0u64);
    for (b, _) in live_buckets(entry) {
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
    for (b, i) in live_buckets(entry) {
        let w = share(b);
        if point < w {
            return Choice::One(i);
        }
        point -= w;
    }
    Choice::Nothing
}

/// The live buckets of a group with their positions.
fn live_buckets(entry: &GroupEntry) -> impl Iterator<Item = (&GroupBucket, usize)> {
    let flags = entry.buckets.iter().map(|b| b.live);
    entry
        .group
        .buckets
        .iter()
        .zip(flags)
        .enumerate()
        .filter_map(|(i, (b, live))| live.then_some((b, i)))
}
