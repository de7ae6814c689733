//! Table 0 resolved once per ingress port and window, where its lookup reads nothing but the
//! ingress port (an in_port table, as in HARMLESS's pipelines): every packet from one port
//! finds the same entry, so when that entry only goes to another table, the packet starts
//! there. The entry's counters and the table's lookups are added once per port at the end of
//! the window, so such a packet costs no stage, lookup or rule load at table 0.

use super::Tally;
use crate::counters::{CounterCell, Shard};
use crate::key::FlowKey;
use crate::program::flag;
use crate::snapshot::{FlowEntry, FlowTable};

/// Ports remembered at once (by `in_port % PORTS`).
const PORTS: usize = 64;
/// No port: a packet from it finds `goto` 0 and takes the table-0 stage.
const UNSET: u32 = u32::MAX;

/// A window's ports: for each, the goto of its goto-only table-0 entry (0: none) and the
/// packets and bytes it sent there since its last flush.
#[derive(Debug)]
pub(super) struct ByPort {
    port: [u32; PORTS],
    goto: [u8; PORTS],
    cell: [Option<CounterCell>; PORTS],
    packets: [u64; PORTS],
    bytes: [u64; PORTS],
    /// Entries set since the last [`Self::flush`].
    set: u64,
}

impl Default for ByPort {
    fn default() -> Self {
        ByPort {
            port: [UNSET; PORTS],
            goto: [0; PORTS],
            cell: [None; PORTS],
            packets: [0; PORTS],
            bytes: [0; PORTS],
            set: 0,
        }
    }
}

impl ByPort {
    /// The table a packet with `key` and `len` bytes starts at: the goto of its port's
    /// entry in `table` (table 0, keyed by in_port alone) when that entry has nothing else,
    /// otherwise 0.
    #[inline(always)]
    pub(super) fn first_table(
        &mut self,
        table: &FlowTable,
        key: &FlowKey,
        len: u32,
        shard: Shard,
        tally: &mut Tally,
    ) -> u8 {
        let at = key.in_port as usize % PORTS;
        if self.port.get(at) != Some(&key.in_port) {
            self.learn(at, table, key, shard, tally);
        }
        match (
            self.goto.get(at),
            self.packets.get_mut(at),
            self.bytes.get_mut(at),
        ) {
            (Some(&goto), Some(packets), Some(bytes)) if goto != 0 => {
                *packets += 1;
                *bytes += u64::from(len);
                goto
            }
            _ => 0,
        }
    }

    /// Looks up the entry of `key`'s port into place `at` (counting the port it replaces).
    #[inline(never)]
    fn learn(
        &mut self,
        at: usize,
        table: &FlowTable,
        key: &FlowKey,
        shard: Shard,
        tally: &mut Tally,
    ) {
        self.count(at, shard, tally);
        let entry = table
            .payload(table.lookup_one(key.words()))
            .filter(|e| e.program.flags & flag::GOTO_ONLY != 0);
        self.place(at, key.in_port, entry);
        self.set |= 1 << at;
    }

    /// Puts `port` and its goto-only `entry` (or none) into place `at`.
    fn place(&mut self, at: usize, port: u32, entry: Option<&FlowEntry>) {
        if let (Some(p), Some(goto), Some(cell)) = (
            self.port.get_mut(at),
            self.goto.get_mut(at),
            self.cell.get_mut(at),
        ) {
            *p = port;
            *goto = entry.map_or(0, |e| e.program.goto);
            *cell = entry.map(|e| e.cell);
        }
    }

    /// Adds place `at`'s packets to its entry's counters and table 0's lookups.
    fn count(&mut self, at: usize, shard: Shard, tally: &mut Tally) {
        if let (Some(Some(cell)), Some(packets), Some(bytes)) = (
            self.cell.get(at),
            self.packets.get_mut(at),
            self.bytes.get_mut(at),
        ) {
            if *packets != 0 {
                cell.add(shard, *packets, *bytes);
                tally.lookups(0, *packets as usize);
            }
            (*packets, *bytes) = (0, 0);
        }
    }

    /// Counts every port's packets and forgets the ports (the next window may run another
    /// snapshot).
    pub(super) fn flush(&mut self, shard: Shard, tally: &mut Tally) {
        while self.set != 0 {
            let at = self.set.trailing_zeros() as usize;
            self.set &= self.set - 1;
            self.count(at, shard, tally);
            self.place(at, UNSET, None);
        }
    }
}
