//! The group table as the controller sees it (spec 1.3.5 section 5.6 and 6.5): validation,
//! chaining and loop detection. Flow entries that use a deleted group are removed by the caller.

use std::collections::BTreeMap;
use std::sync::Arc;

use dataplane::counters::GroupCounters;
use ofp::{Action, Bucket, GroupModFailedCode, GroupType, OfpError, OFPG_ANY, OFPG_MAX, OFPP_ANY};

/// One group with the time it was created (for duration in group stats).
#[derive(Clone, Debug)]
pub struct GroupEntry {
    pub group_type: GroupType,
    pub buckets: Vec<Bucket>,
    pub created_ns: u64,
    /// The datapath's group and bucket counters.
    pub counters: Arc<GroupCounters>,
}

impl GroupEntry {
    /// Groups this one forwards to through its buckets.
    pub fn chained(&self) -> impl Iterator<Item = u32> + '_ {
        self.buckets.iter().flat_map(|b| {
            b.actions.iter().filter_map(|a| match a {
                Action::Group(g) => Some(*g),
                _ => None,
            })
        })
    }
}

/// Highest number of groups the switch accepts (reported in group features).
pub const MAX_GROUPS: usize = 65_536;
/// Highest number of buckets per group.
pub const MAX_BUCKETS: usize = 1_024;

fn fail(code: GroupModFailedCode) -> Result<(), OfpError> {
    Err(OfpError::GroupModFailed(code))
}

#[derive(Debug, Default)]
pub struct GroupTable {
    groups: BTreeMap<u32, GroupEntry>,
}

impl GroupTable {
    pub fn get(&self, id: u32) -> Option<&GroupEntry> {
        self.groups.get(&id)
    }

    pub fn contains(&self, id: u32) -> bool {
        self.groups.contains_key(&id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &GroupEntry)> {
        self.groups.iter().map(|(id, g)| (*id, g))
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// How many groups forward to `id`.
    pub fn references_to(&self, id: u32) -> u32 {
        self.groups
            .values()
            .map(|g| g.chained().filter(|c| *c == id).count() as u32)
            .sum()
    }

    /// Checks the shape of an add or modify of group `id` (bucket actions are checked by the
    /// caller with the action validator). `adding` tells add from modify.
    pub fn check_shape(
        &self,
        id: u32,
        group_type: GroupType,
        buckets: &[Bucket],
        adding: bool,
    ) -> Result<(), OfpError> {
        if id > OFPG_MAX {
            return fail(GroupModFailedCode::InvalidGroup);
        }
        match (adding, self.groups.contains_key(&id)) {
            (true, true) => return fail(GroupModFailedCode::GroupExists),
            (false, false) => return fail(GroupModFailedCode::UnknownGroup),
            _ => {}
        }
        if adding && self.groups.len() >= MAX_GROUPS {
            return fail(GroupModFailedCode::OutOfGroups);
        }
        if buckets.len() > MAX_BUCKETS {
            return fail(GroupModFailedCode::OutOfBuckets);
        }
        if group_type == GroupType::Indirect && buckets.len() != 1 {
            return fail(GroupModFailedCode::InvalidGroup);
        }
        for bucket in buckets {
            if group_type != GroupType::Select && bucket.weight != 0 {
                return fail(GroupModFailedCode::InvalidGroup);
            }
            let watches = bucket.watch_port != OFPP_ANY || bucket.watch_group != OFPG_ANY;
            if group_type == GroupType::FastFailover && !watches {
                return fail(GroupModFailedCode::BadWatch);
            }
            if bucket.watch_group != OFPG_ANY && !self.groups.contains_key(&bucket.watch_group) {
                return fail(GroupModFailedCode::BadWatch);
            }
        }
        if self.would_loop(id, buckets) {
            return fail(GroupModFailedCode::Loop);
        }
        Ok(())
    }

    /// Whether installing `buckets` as group `id` would let a packet reach `id` again.
    fn would_loop(&self, id: u32, buckets: &[Bucket]) -> bool {
        let mut stack: Vec<u32> = buckets
            .iter()
            .flat_map(|b| b.actions.iter())
            .filter_map(|a| match a {
                Action::Group(g) => Some(*g),
                _ => None,
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        while let Some(g) = stack.pop() {
            if g == id {
                return true;
            }
            if seen.insert(g) {
                if let Some(entry) = self.groups.get(&g) {
                    stack.extend(entry.chained());
                }
            }
        }
        false
    }

    pub fn insert(&mut self, id: u32, entry: GroupEntry) {
        self.groups.insert(id, entry);
    }

    /// Group ids a delete of `id` removes (OFPG_ALL: every group), or CHAINED_GROUP when
    /// another group that stays still forwards to one of them.
    pub fn deletion_set(&self, id: u32) -> Result<Vec<u32>, OfpError> {
        if id == ofp::OFPG_ALL {
            return Ok(self.groups.keys().copied().collect());
        }
        if !self.groups.contains_key(&id) {
            return Ok(Vec::new());
        }
        let chained_from_other = self
            .groups
            .iter()
            .any(|(other, g)| *other != id && g.chained().any(|c| c == id));
        if chained_from_other {
            return Err(OfpError::GroupModFailed(GroupModFailedCode::ChainedGroup));
        }
        Ok(vec![id])
    }

    pub fn remove(&mut self, id: u32) -> Option<GroupEntry> {
        self.groups.remove(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket_to_group(g: u32) -> Bucket {
        Bucket {
            weight: 0,
            watch_port: OFPP_ANY,
            watch_group: OFPG_ANY,
            actions: vec![Action::Group(g)],
        }
    }

    fn entry(buckets: Vec<Bucket>) -> GroupEntry {
        GroupEntry {
            counters: GroupCounters::new(buckets.len()),
            group_type: GroupType::All,
            buckets,
            created_ns: 0,
        }
    }

    #[test]
    fn detects_loops_through_chains() {
        let mut t = GroupTable::default();
        t.insert(1, entry(vec![]));
        t.insert(2, entry(vec![bucket_to_group(1)]));
        let modify_1 = [bucket_to_group(2)];
        assert_eq!(
            t.check_shape(1, GroupType::All, &modify_1, false),
            Err(OfpError::GroupModFailed(GroupModFailedCode::Loop))
        );
        assert_eq!(
            t.check_shape(3, GroupType::All, &[bucket_to_group(3)], true),
            Err(OfpError::GroupModFailed(GroupModFailedCode::Loop))
        );
        assert!(t
            .check_shape(3, GroupType::All, &[bucket_to_group(2)], true)
            .is_ok());
    }

    #[test]
    fn refuses_bad_shapes() {
        let mut t = GroupTable::default();
        t.insert(1, entry(vec![]));
        let err = |r: Result<(), OfpError>| match r {
            Err(OfpError::GroupModFailed(code)) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            err(t.check_shape(1, GroupType::All, &[], true)),
            GroupModFailedCode::GroupExists
        );
        assert_eq!(
            err(t.check_shape(9, GroupType::All, &[], false)),
            GroupModFailedCode::UnknownGroup
        );
        assert_eq!(
            err(t.check_shape(9, GroupType::Indirect, &[], true)),
            GroupModFailedCode::InvalidGroup
        );
        assert_eq!(
            err(t.check_shape(OFPG_MAX + 1, GroupType::All, &[], true)),
            GroupModFailedCode::InvalidGroup
        );
        let unwatched = Bucket {
            weight: 0,
            watch_port: OFPP_ANY,
            watch_group: OFPG_ANY,
            actions: vec![],
        };
        assert_eq!(
            err(t.check_shape(9, GroupType::FastFailover, &[unwatched], true)),
            GroupModFailedCode::BadWatch
        );
    }

    #[test]
    fn chained_group_cannot_be_deleted_alone() {
        let mut t = GroupTable::default();
        t.insert(1, entry(vec![]));
        t.insert(2, entry(vec![bucket_to_group(1)]));
        assert_eq!(
            t.deletion_set(1),
            Err(OfpError::GroupModFailed(GroupModFailedCode::ChainedGroup))
        );
        assert_eq!(t.deletion_set(2), Ok(vec![2]));
        assert_eq!(t.deletion_set(ofp::OFPG_ALL).map(|v| v.len()), Ok(2));
        assert_eq!(t.deletion_set(7), Ok(vec![]));
    }
}
