//! InSP timer triggers (our extension, crates/ofp/INSP.md "TIMER_MOD"): a packet generated
//! from a template every period, without a triggering packet, which seed 001 leaves to future
//! work. This module validates TIMER_MOD against the switch's rate bound and its templates;
//! the daemon's datapath threads keep the schedule and send the packets ([`TimerQueue`]).
//!
//! The rate bound protects the switch and the network from a controller that asks for a
//! flood: no timer fires more often than every [`MIN_PERIOD_US`], all timers together send
//! at most [`MAX_TOTAL_RATE`] packets per second, and at most [`MAX_TIMERS`] exist. A timer
//! counts for `ceil(1,000,000 / period_us)` packets per second.

use std::collections::BTreeMap;

use dataplane::ir;
use ofp::{insp_error, OfpError, TimerCommand, TimerMod, TIMER_ALL};

/// Shortest period: 1 ms, so one timer sends at most 1,000 packets per second.
pub const MIN_PERIOD_US: u32 = 1_000;
/// Packets per second all timers together may send.
pub const MAX_TOTAL_RATE: u64 = 10_000;
/// Most timers a switch holds.
pub const MAX_TIMERS: usize = 1_024;

/// A timer as the datapath threads run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerJob {
    pub timer_id: u32,
    pub pkttmp_id: u32,
    pub period_ns: u64,
    /// The generated packet's ingress port, as a packet-out's.
    pub in_port: u32,
    pub actions: Vec<ir::Action>,
}

/// Where timer changes go: the daemon's datapath threads, which send the packets.
pub trait TimerQueue: Send {
    /// Installs or replaces a timer; its first packet leaves at once.
    fn set(&mut self, job: TimerJob);
    /// Removes a timer (unknown ids are ignored).
    fn remove(&mut self, timer_id: u32);
}

pub(crate) fn failed() -> OfpError {
    ofp::insp_error(insp_error::TIMER_MOD_FAILED)
}

fn rate_exceeded() -> OfpError {
    ofp::insp_error(insp_error::TIMER_RATE_EXCEEDED)
}

/// Packets per second a timer of `period_us` sends, rounded up.
fn rate(period_us: u32) -> u64 {
    1_000_000u64.div_ceil(u64::from(period_us.max(1)))
}

/// What the controller installed, by timer id.
#[derive(Default)]
pub struct TimerTable {
    entries: BTreeMap<u32, TimerMod>,
}

/// What a validated TIMER_MOD changes.
#[derive(Debug, PartialEq, Eq)]
pub enum TimerChange {
    /// Install or replace this timer.
    Set(TimerMod),
    /// Remove these timers.
    Remove(Vec<u32>),
    /// Nothing (an ADD repeating an installed timer).
    None,
}

impl TimerTable {
    /// Timers whose template is `pkttmp_id`.
    pub fn uses_of(&self, pkttmp_id: u32) -> usize {
        self.entries
            .values()
            .filter(|t| t.pkttmp_id == pkttmp_id)
            .count()
    }

    /// Whether a timer's actions send to group `group_id`.
    pub fn sends_to_group(&self, group_id: u32) -> bool {
        self.entries.values().any(|t| {
            t.actions
                .iter()
                .any(|a| matches!(a, ofp::Action::Group(g) if *g == group_id))
        })
    }

    /// Every installed timer, by id.
    pub fn list(&self) -> impl Iterator<Item = &TimerMod> {
        self.entries.values()
    }

    /// Packets per second of every timer but `except` together.
    fn total_rate(&self, except: u32) -> u64 {
        self.entries
            .values()
            .filter(|t| t.timer_id != except)
            .map(|t| rate(t.period_us))
            .sum()
    }

    /// Checks a TIMER_MOD against the table and the rate bound (the caller has checked the
    /// template, ports and actions); returns the change without making it.
    ///
    /// ADD installs a timer or replaces the one under its id (as a flow-mod ADD replaces an
    /// identical entry), so a controller pushes the state it wants without asking first; an
    /// ADD repeating the installed timer changes nothing and keeps its phase. DELETE removes
    /// one timer, or every timer for [`TIMER_ALL`].
    pub fn check(&self, m: &TimerMod) -> Result<TimerChange, OfpError> {
        let installed = self.entries.get(&m.timer_id);
        match m.command {
            TimerCommand::Delete if m.timer_id == TIMER_ALL => {
                Ok(TimerChange::Remove(self.entries.keys().copied().collect()))
            }
            TimerCommand::Delete => match installed {
                Some(_) => Ok(TimerChange::Remove(vec![m.timer_id])),
                None => Err(failed()),
            },
            TimerCommand::Add => {
                if installed == Some(m) {
                    return Ok(TimerChange::None);
                }
                let full = installed.is_none() && self.entries.len() >= MAX_TIMERS;
                if full || m.timer_id == TIMER_ALL {
                    return Err(failed());
                }
                if m.period_us < MIN_PERIOD_US
                    || self.total_rate(m.timer_id) + rate(m.period_us) > MAX_TOTAL_RATE
                {
                    return Err(rate_exceeded());
                }
                Ok(TimerChange::Set(m.clone()))
            }
        }
    }

    /// Makes a change [`Self::check`] returned.
    pub fn apply(&mut self, change: &TimerChange) {
        match change {
            TimerChange::Set(m) => {
                self.entries.insert(m.timer_id, m.clone());
            }
            TimerChange::Remove(ids) => {
                for id in ids {
                    self.entries.remove(id);
                }
            }
            TimerChange::None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(command: TimerCommand, timer_id: u32, period_us: u32) -> TimerMod {
        TimerMod {
            command,
            timer_id,
            pkttmp_id: 9,
            period_us,
            in_port: ofp::OFPP_CONTROLLER,
            actions: vec![],
        }
    }

    fn install(table: &mut TimerTable, m: &TimerMod) -> Result<(), OfpError> {
        let change = table.check(m)?;
        table.apply(&change);
        Ok(())
    }

    #[test]
    fn the_rate_bound_counts_every_timer() {
        let mut table = TimerTable::default();
        assert_eq!(
            table.check(&timer(TimerCommand::Add, 1, MIN_PERIOD_US - 1)),
            Err(rate_exceeded())
        );
        // Ten timers at 1,000 packets per second fill the bound: not one packet more fits.
        for id in 0..10 {
            install(&mut table, &timer(TimerCommand::Add, id, MIN_PERIOD_US)).unwrap();
        }
        let slow = timer(TimerCommand::Add, 10, 1_000_000);
        assert_eq!(table.check(&slow), Err(rate_exceeded()));
        // Slowing one down makes room: a replacement counts the timer it replaces once.
        install(&mut table, &timer(TimerCommand::Add, 3, 2_000)).unwrap();
        install(&mut table, &slow).unwrap();
        assert_eq!(table.total_rate(TIMER_ALL), 10_000 - 500 + 1);
    }

    #[test]
    fn add_installs_or_replaces_delete_removes() {
        let mut table = TimerTable::default();
        let t = timer(TimerCommand::Add, 1, 50_000);
        install(&mut table, &t).unwrap();
        assert_eq!(
            table.check(&t),
            Ok(TimerChange::None),
            "the same timer again"
        );
        install(&mut table, &timer(TimerCommand::Add, 1, 60_000)).unwrap();
        assert_eq!(
            table.list().map(|t| t.period_us).collect::<Vec<_>>(),
            [60_000]
        );
        install(&mut table, &timer(TimerCommand::Add, 2, 60_000)).unwrap();
        assert_eq!(table.uses_of(9), 2);
        assert_eq!(
            table.check(&timer(TimerCommand::Delete, 3, 0)),
            Err(failed())
        );
        assert_eq!(
            table.check(&timer(TimerCommand::Delete, TIMER_ALL, 0)),
            Ok(TimerChange::Remove(vec![1, 2]))
        );
        assert_eq!(
            table.check(&timer(TimerCommand::Add, TIMER_ALL, 60_000)),
            Err(failed())
        );
    }

    #[test]
    fn the_table_holds_at_most_max_timers() {
        let mut table = TimerTable::default();
        for id in 0..MAX_TIMERS as u32 {
            install(&mut table, &timer(TimerCommand::Add, id, 1_000_000)).unwrap();
        }
        let one_more = timer(TimerCommand::Add, MAX_TIMERS as u32, 1_000_000);
        assert_eq!(table.check(&one_more), Err(failed()));
        let replacement = timer(TimerCommand::Add, 0, 2_000_000);
        assert!(
            table.check(&replacement).is_ok(),
            "a full table still replaces"
        );
    }
}
