//! InSP timer triggers on the datapath threads (crates/ofp/INSP.md, TIMER_MOD): the schedule
//! of the timers the switch core installed, the next deadline, and the packets that are due.
//!
//! The schedule is shared by the threads like the packet-out queue: whichever thread is
//! awake when a timer is due takes the schedule (`try_lock`, so no thread ever waits for
//! another) and sends the packet; a thread about to sleep bounds its poll(2) by the next
//! deadline, read from an atomic without the lock. The switch core's changes ring the
//! doorbell, so a sleeping thread recomputes its deadline at once.
//!
//! A late timer (every thread was busy, or the machine was) sends one packet and starts its
//! next period from now: it never catches up with a burst of the packets it missed, so the
//! switch's rate bound holds; the periods it skipped are counted.
//!
//! Cost: a thread's round reads one atomic; a due timer costs a pop and a push on a binary
//! heap (log of the timer count, at most [`switch_core::timers::MAX_TIMERS`]) whose storage
//! is reserved once, so sending a timer's packet never allocates. A changed or removed
//! timer leaves its old deadline in the heap, skipped when it comes up; the switch core's
//! changes rebuild the heap when such leftovers would outnumber the timers.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use switch_core::timers::{TimerJob, TimerQueue};

use super::doorbell::Doorbell;

/// One installed timer and what it has done.
struct Entry {
    job: TimerJob,
    due_ns: u64,
    sent: u64,
    /// Periods skipped because the timer fired late.
    missed: u64,
}

/// Deadlines the heap holds at most: each timer's, and as many left over from changes.
const HEAP_CAPACITY: usize = 2 * switch_core::timers::MAX_TIMERS + 2;

/// The timers by id, and their deadlines earliest first (with leftovers: a deadline whose
/// timer was removed or moved since).
struct Schedule {
    entries: BTreeMap<u32, Entry>,
    by_due: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Default for Schedule {
    fn default() -> Self {
        Self {
            entries: BTreeMap::new(),
            by_due: BinaryHeap::with_capacity(HEAP_CAPACITY),
        }
    }
}

impl Schedule {
    /// The earliest deadline; exact after [`Self::drop_stale_top`].
    fn next_due(&self) -> u64 {
        self.by_due
            .peek()
            .map_or(u64::MAX, |Reverse((due, _))| *due)
    }

    /// Whether the heap's `(due, id)` is a leftover.
    fn stale(&self, due: u64, id: u32) -> bool {
        self.entries.get(&id).is_none_or(|e| e.due_ns != due)
    }

    /// Pops leftovers off the top, so the top is a live deadline.
    fn drop_stale_top(&mut self) {
        while let Some(&Reverse((due, id))) = self.by_due.peek() {
            if !self.stale(due, id) {
                return;
            }
            self.by_due.pop();
        }
    }

    /// Rebuilds the heap from the timers when leftovers would fill its storage.
    fn compact(&mut self) {
        if self.by_due.len() + 1 < HEAP_CAPACITY {
            return;
        }
        self.by_due.clear();
        let live = self
            .entries
            .values()
            .map(|e| Reverse((e.due_ns, e.job.timer_id)));
        self.by_due.extend(live);
    }

    fn remove(&mut self, timer_id: u32) {
        self.entries.remove(&timer_id);
    }
}

/// A timer as `timers/list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerInfo {
    pub timer_id: u32,
    pub pkttmp_id: u32,
    pub period_ns: u64,
    pub in_port: u32,
    pub sent: u64,
    pub missed: u64,
    /// Nanoseconds until the next packet (0: due now).
    pub next_in_ns: u64,
}

struct Inner {
    schedule: Mutex<Schedule>,
    /// The schedule's earliest deadline (u64::MAX: none), read by threads without the lock.
    next_due: AtomicU64,
}

/// The timer schedule; clones share it. The switch core writes it through [`TimerQueue`],
/// the datapath threads run it.
#[derive(Clone)]
pub struct Timers {
    inner: Arc<Inner>,
    bell: Doorbell,
}

impl Timers {
    pub fn new(bell: Doorbell) -> Self {
        Self {
            inner: Arc::new(Inner {
                schedule: Mutex::new(Schedule::default()),
                next_due: AtomicU64::new(u64::MAX),
            }),
            bell,
        }
    }

    /// The earliest deadline (u64::MAX when there is no timer).
    pub fn next_due(&self) -> u64 {
        self.inner.next_due.load(Ordering::Acquire)
    }

    /// Runs `send` on every timer due at `now_ns`, once each; returns how many. Returns 0 at
    /// once when nothing is due or another thread holds the schedule.
    pub fn run_due(&self, now_ns: u64, mut send: impl FnMut(&TimerJob)) -> usize {
        if now_ns < self.next_due() {
            return 0;
        }
        let Ok(mut schedule) = self.inner.schedule.try_lock() else {
            return 0;
        };
        let mut sent = 0;
        while let Some(&Reverse((due, id))) = schedule.by_due.peek().filter(|r| r.0 .0 <= now_ns) {
            schedule.by_due.pop();
            let Some(entry) = schedule.entries.get_mut(&id).filter(|e| e.due_ns == due) else {
                continue;
            };
            send(&entry.job);
            entry.sent += 1;
            sent += 1;
            let period = entry.job.period_ns.max(1);
            let next = due.saturating_add(period);
            entry.due_ns = if next > now_ns {
                next
            } else {
                entry.missed += (now_ns - due) / period;
                now_ns.saturating_add(period)
            };
            let key = Reverse((entry.due_ns, id));
            schedule.by_due.push(key);
        }
        schedule.drop_stale_top();
        self.inner
            .next_due
            .store(schedule.next_due(), Ordering::Release);
        sent
    }

    /// Every timer, by id.
    pub fn list(&self, now_ns: u64) -> Vec<TimerInfo> {
        let schedule = self.lock();
        schedule
            .entries
            .values()
            .map(|e| TimerInfo {
                timer_id: e.job.timer_id,
                pkttmp_id: e.job.pkttmp_id,
                period_ns: e.job.period_ns,
                in_port: e.job.in_port,
                sent: e.sent,
                missed: e.missed,
                next_in_ns: e.due_ns.saturating_sub(now_ns),
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Schedule> {
        // A thread that panicked while holding the schedule left it consistent: every
        // change to it is a single insert or remove.
        self.inner
            .schedule
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies `change` to the schedule, publishes the new deadline and wakes the threads.
    fn change(&self, change: impl FnOnce(&mut Schedule)) {
        let mut schedule = self.lock();
        change(&mut schedule);
        schedule.drop_stale_top();
        self.inner
            .next_due
            .store(schedule.next_due(), Ordering::Release);
        drop(schedule);
        self.bell.ring();
    }

    fn set_at(&self, job: TimerJob, now_ns: u64) {
        self.change(|schedule| {
            schedule.remove(job.timer_id);
            schedule.compact();
            schedule.by_due.push(Reverse((now_ns, job.timer_id)));
            let entry = Entry {
                job,
                due_ns: now_ns,
                sent: 0,
                missed: 0,
            };
            schedule.entries.insert(entry.job.timer_id, entry);
        });
    }
}

impl TimerQueue for Timers {
    fn set(&mut self, job: TimerJob) {
        self.set_at(job, switch_core::clock::now_ns());
    }

    fn remove(&mut self, timer_id: u32) {
        self.change(|schedule| schedule.remove(timer_id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn job(timer_id: u32, period_ns: u64) -> TimerJob {
        TimerJob {
            timer_id,
            pkttmp_id: 7,
            period_ns,
            in_port: ofp::OFPP_CONTROLLER,
            actions: Vec::new(),
        }
    }

    fn fired(timers: &Timers, now_ns: u64) -> Vec<u32> {
        let mut ids = Vec::new();
        timers.run_due(now_ns, |job| ids.push(job.timer_id));
        ids
    }

    fn readable(bell: &Doorbell) -> bool {
        let mut pollfd = libc::pollfd {
            fd: bell.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd that outlives the call; zero timeout.
        unsafe { libc::poll(&mut pollfd, 1, 0) == 1 }
    }

    #[test]
    fn timers_fire_at_once_then_every_period_in_deadline_order() {
        let bell = Doorbell::new().unwrap();
        let timers = Timers::new(bell.clone());
        assert_eq!(timers.next_due(), u64::MAX);
        timers.set_at(job(1, 10 * MS), 100 * MS);
        assert!(readable(&bell), "a change wakes sleeping threads");
        timers.set_at(job(2, 4 * MS), 101 * MS);
        assert_eq!(timers.next_due(), 100 * MS);
        assert_eq!(fired(&timers, 99 * MS), [] as [u32; 0]);
        assert_eq!(fired(&timers, 101 * MS), [1, 2]);
        assert_eq!(timers.next_due(), 105 * MS);
        assert_eq!(fired(&timers, 105 * MS), [2]);
        assert_eq!(fired(&timers, 109 * MS), [2]);
        assert_eq!(fired(&timers, 110 * MS), [1]);
        assert_eq!(timers.next_due(), 113 * MS);
        let list = timers.list(110 * MS);
        let sent: Vec<_> = list
            .iter()
            .map(|t| (t.timer_id, t.sent, t.missed))
            .collect();
        assert_eq!(sent, [(1, 2, 0), (2, 3, 0)]);
        assert_eq!(list[0].next_in_ns, 10 * MS);
    }

    #[test]
    fn a_late_timer_sends_once_and_counts_what_it_missed() {
        let timers = Timers::new(Doorbell::new().unwrap());
        timers.set_at(job(1, 10 * MS), 0);
        assert_eq!(fired(&timers, 0), [1]);
        // Every thread was busy for 55 ms: one packet, not five, and the next period
        // starts now.
        assert_eq!(fired(&timers, 55 * MS), [1]);
        assert_eq!(timers.next_due(), 65 * MS);
        assert_eq!(timers.list(55 * MS)[0].missed, 4);
    }

    #[test]
    fn replaced_and_removed_timers_leave_the_schedule() {
        let timers = Timers::new(Doorbell::new().unwrap());
        let mut queue = timers.clone();
        timers.set_at(job(1, 10 * MS), 0);
        timers.set_at(job(1, 20 * MS), 5 * MS);
        assert_eq!(fired(&timers, 5 * MS), [1]);
        assert_eq!(timers.next_due(), 25 * MS, "the replacement's period");
        queue.remove(1);
        queue.remove(9);
        assert_eq!(timers.next_due(), u64::MAX);
        assert_eq!(fired(&timers, 100 * MS), [] as [u32; 0]);
        assert!(timers.list(0).is_empty());
    }

    #[test]
    fn changes_and_firings_never_grow_the_heap() {
        const HOUR: u64 = 3_600_000 * MS;
        let bell = Doorbell::new().expect("eventfd");
        let timers = Timers::new(bell);
        let capacity = timers.lock().by_due.capacity();
        for id in 0..100 {
            timers.set_at(job(id, MS), 0);
        }
        for round in 1..=5_000u64 {
            // Between firings of 100 timers a millisecond apart, a controller replaces an
            // hourly timer: each replacement leaves its old deadline, an hour ahead, behind
            // the live ones.
            timers.set_at(job(500, HOUR), round * MS);
            assert_eq!(fired(&timers, round * MS).len(), 101, "round {round}");
            let schedule = timers.lock();
            assert_eq!(schedule.by_due.capacity(), capacity, "round {round}");
        }
        let due_later = fired(&timers, 5_001 * MS + HOUR);
        assert_eq!(due_later.len(), 101, "each timer fires once when due");
    }

    #[test]
    fn a_thread_holding_the_schedule_makes_others_pass() {
        let timers = Timers::new(Doorbell::new().unwrap());
        timers.set_at(job(1, 10 * MS), 0);
        let other = timers.clone();
        let mut inner = 0;
        timers.run_due(0, |_| inner = other.run_due(0, |_| panic!("sent twice")));
        assert_eq!(inner, 0);
    }
}
