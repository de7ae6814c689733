//! Packet-in buffer pool: a fixed set of slots holding packets sent to the controller by
//! buffer id, so a later packet-out can refer to them (OpenFlow 1.3 section 7.4.1).
//!
//! Ids encode a slot and a generation, so an id whose slot has since been reused is rejected
//! (`OFPBRC_BUFFER_UNKNOWN`) and a second take of the same id is `OFPBRC_BUFFER_EMPTY`.
//! A buffer older than the configured age may be reused by a new packet-in, so a storm of
//! packet-ins the controller never answers cannot exhaust the pool (seed 003 section 4.4).
//! Memory is allocated once, at creation.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Buffer id meaning "not buffered" (`OFP_NO_BUFFER`).
pub const NO_BUFFER: u32 = 0xffff_ffff;

/// Pool sizing and aging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferPoolConfig {
    /// Number of slots (1..=65535).
    pub slots: u16,
    /// Largest packet a slot holds; larger packets are not buffered.
    pub max_len: usize,
    /// A buffer at least this old may be reused for a new packet.
    pub max_age_ns: u64,
}

impl Default for BufferPoolConfig {
    fn default() -> Self {
        Self {
            slots: 256,
            max_len: 9216,
            max_age_ns: 1_000_000_000,
        }
    }
}

/// Why a buffer id cannot be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferError {
    /// No such buffer (never issued, or its slot was reused): `OFPBRC_BUFFER_UNKNOWN`.
    Unknown,
    /// The buffer was already used by an earlier packet-out: `OFPBRC_BUFFER_EMPTY`.
    Empty,
}

/// Pool counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Packets stored.
    pub stored: u64,
    /// Store refused: every slot busy and younger than the age limit.
    pub full: u64,
    /// Store refused: packet longer than `max_len`.
    pub too_long: u64,
    /// Unclaimed buffers overwritten after aging out.
    pub aged_out: u64,
    /// Successful takes.
    pub taken: u64,
}

struct Slot {
    generation: u16,
    /// `Some(stored_at_ns)` while the slot holds an unclaimed packet.
    stored_at: Option<u64>,
    /// The port the packet arrived on: a flow-mod or packet-out releasing it runs it through
    /// the tables as received there (spec 6.4).
    in_port: u32,
    len: usize,
    data: Box<[u8]>,
}

struct Inner {
    slots: Vec<Slot>,
    free: Vec<u16>,
    /// Occupied slots in store order (oldest first) with the generation stored; entries whose
    /// generation no longer matches, or whose slot was taken, are skipped lazily, and purged
    /// when the queue reaches [`Inner::order_limit`], so it never grows past twice the slots.
    order: VecDeque<(u16, u16)>,
    stats: BufferStats,
}

/// The packet-in buffer pool; shared by reference between datapath threads and the core.
pub struct BufferPool {
    config: BufferPoolConfig,
    inner: Mutex<Inner>,
}

impl BufferPool {
    /// Allocates every slot up front. A `slots` of 0 is raised to 1.
    pub fn new(config: BufferPoolConfig) -> Self {
        let n = config.slots.clamp(1, u16::MAX);
        let slots = (0..n)
            .map(|_| Slot {
                generation: 0,
                stored_at: None,
                in_port: 0,
                len: 0,
                data: vec![0; config.max_len].into_boxed_slice(),
            })
            .collect();
        Self {
            config: BufferPoolConfig { slots: n, ..config },
            inner: Mutex::new(Inner {
                slots,
                free: (0..n).rev().collect(),
                order: VecDeque::with_capacity(2 * usize::from(n)),
                stats: BufferStats::default(),
            }),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> BufferPoolConfig {
        self.config
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a slot half-written in a way that
        // matters (ids are checked on take), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores a copy of `pkt`; `None` when it is too long or no slot is free or aged out
    /// (the packet-in then carries the whole packet with [`NO_BUFFER`]).
    pub fn store(&self, pkt: &[u8], in_port: u32, now_ns: u64) -> Option<u32> {
        let mut inner = self.lock();
        if pkt.len() > self.config.max_len {
            inner.stats.too_long += 1;
            return None;
        }
        let slot_no = match inner.free.pop() {
            Some(s) => s,
            None => match inner.reclaim_oldest(now_ns, self.config.max_age_ns) {
                Some(s) => {
                    inner.stats.aged_out += 1;
                    s
                }
                None => {
                    inner.stats.full += 1;
                    return None;
                }
            },
        };
        if inner.order.len() >= inner.order_limit() {
            inner.drop_released_from_order();
        }
        let Inner {
            slots,
            order,
            stats,
            ..
        } = &mut *inner;
        let slot = slots.get_mut(usize::from(slot_no))?;
        slot.generation = next_generation(slot.generation);
        slot.stored_at = Some(now_ns);
        slot.in_port = in_port;
        slot.len = pkt.len();
        slot.data.get_mut(..pkt.len())?.copy_from_slice(pkt);
        order.push_back((slot_no, slot.generation));
        stats.stored += 1;
        Some(encode(slot_no, slot.generation))
    }

    /// Takes the buffered packet, handing its ingress port and bytes to `f` without copying
    /// them out of the pool.
    pub fn take_with<R>(&self, id: u32, f: impl FnOnce(u32, &[u8]) -> R) -> Result<R, BufferError> {
        let mut inner = self.lock();
        let slot_no = inner.holding(id)?;
        let slot = inner
            .slots
            .get_mut(usize::from(slot_no))
            .ok_or(BufferError::Unknown)?;
        slot.stored_at = None;
        let result = f(slot.in_port, slot.data.get(..slot.len).unwrap_or_default());
        inner.free.push(slot_no);
        inner.stats.taken += 1;
        Ok(result)
    }

    /// Whether `id` could be taken now.
    pub fn check(&self, id: u32) -> Result<(), BufferError> {
        self.lock().holding(id).map(|_| ())
    }

    /// Takes the buffered packet's ingress port and a copy of its bytes (control path).
    pub fn take(&self, id: u32) -> Result<(u32, Vec<u8>), BufferError> {
        self.take_with(id, |in_port, data| (in_port, data.to_vec()))
    }

    /// Counters so far.
    pub fn stats(&self) -> BufferStats {
        self.lock().stats
    }

    /// Buffers currently holding an unclaimed packet.
    pub fn in_use(&self) -> usize {
        let inner = self.lock();
        inner.slots.len() - inner.free.len()
    }
}

impl Inner {
    /// The slot holding buffer `id`'s packet: unknown if the id was never issued or its slot
    /// was reused since, empty if it was taken.
    fn holding(&self, id: u32) -> Result<u16, BufferError> {
        let (slot_no, generation) = decode(id).ok_or(BufferError::Unknown)?;
        let slot = self
            .slots
            .get(usize::from(slot_no))
            .filter(|s| s.generation == generation)
            .ok_or(BufferError::Unknown)?;
        slot.stored_at.map(|_| slot_no).ok_or(BufferError::Empty)
    }

    /// The store-order queue's bound: twice the slots, so a purge (which leaves at most one
    /// entry per occupied slot) happens at most once per `slots` stores.
    fn order_limit(&self) -> usize {
        2 * self.slots.len()
    }

    /// Drops the entries of buffers taken or reused since they were queued. Without it a
    /// controller that answers every buffered packet-in would grow the queue by one entry per
    /// packet-in, since only a store into a full pool pops entries.
    fn drop_released_from_order(&mut self) {
        let slots = &self.slots;
        self.order.retain(|&(slot_no, generation)| {
            slots
                .get(usize::from(slot_no))
                .is_some_and(|s| s.generation == generation && s.stored_at.is_some())
        });
    }

    /// Frees the oldest unclaimed buffer if it is at least `max_age_ns` old.
    fn reclaim_oldest(&mut self, now_ns: u64, max_age_ns: u64) -> Option<u16> {
        while let Some(&(slot_no, generation)) = self.order.front() {
            let slot = self.slots.get_mut(usize::from(slot_no))?;
            match slot.stored_at {
                Some(at) if slot.generation == generation => {
                    if now_ns.saturating_sub(at) < max_age_ns {
                        return None;
                    }
                    slot.stored_at = None;
                    self.order.pop_front();
                    return Some(slot_no);
                }
                _ => {
                    self.order.pop_front();
                }
            }
        }
        None
    }
}

/// Generations run 1..=0xffff so an id is never 0 and never [`NO_BUFFER`] (slot < 0xffff).
fn next_generation(g: u16) -> u16 {
    if g == u16::MAX {
        1
    } else {
        g + 1
    }
}

fn encode(slot: u16, generation: u16) -> u32 {
    (u32::from(generation) << 16) | u32::from(slot)
}

fn decode(id: u32) -> Option<(u16, u16)> {
    let generation = (id >> 16) as u16;
    (id != NO_BUFFER && generation != 0).then_some((id as u16, generation))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(slots: u16, max_age_ns: u64) -> BufferPool {
        BufferPool::new(BufferPoolConfig {
            slots,
            max_len: 64,
            max_age_ns,
        })
    }

    #[test]
    fn store_then_take_returns_the_packet_once() {
        let p = pool(4, 1000);
        let id = p.store(&[1, 2, 3], 1, 0).unwrap_or(NO_BUFFER);
        assert_ne!(id, NO_BUFFER);
        assert_eq!(p.in_use(), 1);
        assert_eq!(p.take(id), Ok((1, vec![1, 2, 3])));
        assert_eq!(p.take(id), Err(BufferError::Empty));
        assert_eq!(p.in_use(), 0);
        assert_eq!(p.take(NO_BUFFER), Err(BufferError::Unknown));
        assert_eq!(
            p.take(0x0001_0009),
            Err(BufferError::Unknown),
            "slot out of range"
        );
        assert_eq!(
            p.take(5),
            Err(BufferError::Unknown),
            "generation 0 is never issued"
        );
    }

    #[test]
    fn ids_are_distinct_and_stale_ids_are_rejected_after_reuse() {
        let p = pool(1, 1000);
        let a = p.store(&[1], 1, 0).unwrap_or(NO_BUFFER);
        assert_eq!(p.take(a), Ok((1, vec![1])));
        let b = p.store(&[2], 1, 1).unwrap_or(NO_BUFFER);
        assert_ne!(a, b, "same slot, new generation");
        assert_eq!(a & 0xffff, b & 0xffff);
        assert_eq!(p.take(a), Err(BufferError::Unknown));
        assert_eq!(p.take(b), Ok((1, vec![2])));
    }

    #[test]
    fn exhaustion_then_aging_reuses_the_oldest() {
        let p = pool(3, 100);
        let ids: Vec<u32> = (0..3)
            .map(|i| p.store(&[i], 1, u64::from(i) * 10).unwrap_or(NO_BUFFER))
            .collect();
        assert!(ids.iter().all(|&id| id != NO_BUFFER));
        assert_eq!(p.store(&[9], 1, 50), None, "all young: full");
        assert_eq!(p.stats().full, 1);
        let reused = p.store(&[9], 1, 100).unwrap_or(NO_BUFFER);
        assert_ne!(reused, NO_BUFFER);
        assert_eq!(reused & 0xffff, ids[0] & 0xffff, "oldest slot reused");
        assert_eq!(p.take(ids[0]), Err(BufferError::Unknown));
        assert_eq!(
            p.take(ids[1]),
            Ok((1, vec![1])),
            "aged but not reused stays valid"
        );
        assert_eq!(p.take(reused), Ok((1, vec![9])));
        let s = p.stats();
        assert_eq!((s.stored, s.aged_out, s.taken), (4, 1, 2));
    }

    #[test]
    fn a_storm_never_exhausts_the_pool_for_long() {
        let p = pool(8, 1_000);
        let mut refused = 0;
        for t in 0..10_000u64 {
            if p.store(&[t as u8; 60], 1, t * 200).is_none() {
                refused += 1;
            }
        }
        // One packet every 200 ns with 8 slots aging at 1 us: 5 per us fit, never refused.
        assert_eq!(refused, 0);
        assert_eq!(p.in_use(), 8);
    }

    #[test]
    fn taken_slots_are_skipped_when_reclaiming() {
        let p = pool(2, 10);
        let a = p.store(&[1], 1, 0).unwrap_or(NO_BUFFER);
        let b = p.store(&[2], 1, 1).unwrap_or(NO_BUFFER);
        assert_eq!(p.take(a), Ok((1, vec![1])));
        let c = p.store(&[3], 1, 2).unwrap_or(NO_BUFFER);
        assert_eq!(c & 0xffff, a & 0xffff, "free slot before aging");
        assert_eq!(p.store(&[4], 1, 5), None);
        let d = p.store(&[4], 1, 11).unwrap_or(NO_BUFFER);
        assert_eq!(d & 0xffff, b & 0xffff);
        assert_eq!(p.take(c), Ok((1, vec![3])));
    }

    #[test]
    fn answered_packet_ins_do_not_grow_the_store_order() {
        let p = pool(4, 1_000);
        let kept = p.store(&[7], 2, 0).unwrap_or(NO_BUFFER);
        for t in 1..100_000u64 {
            let id = p.store(&[t as u8], 1, t).unwrap_or(NO_BUFFER);
            assert_eq!(p.take(id), Ok((1, vec![t as u8])));
            let queued = p.lock().order.len();
            assert!(
                queued <= 8,
                "store order holds {queued} entries for 4 slots"
            );
        }
        for t in 0..3u64 {
            assert!(p.store(&[9], 1, 100_000 + t).is_some());
        }
        let reused = p.store(&[9], 1, 200_000).unwrap_or(NO_BUFFER);
        assert_eq!(
            reused & 0xffff,
            kept & 0xffff,
            "the unanswered buffer is still the oldest"
        );
        assert_eq!(p.take(kept), Err(BufferError::Unknown));
    }

    #[test]
    fn concurrent_store_and_take() {
        let p = std::sync::Arc::new(pool(64, 1_000_000));
        let workers: Vec<_> = (0..4u8)
            .map(|w| {
                let p = std::sync::Arc::clone(&p);
                std::thread::spawn(move || {
                    let mut ok = 0;
                    for i in 0..2000u64 {
                        if let Some(id) = p.store(&[w, i as u8], 1, i) {
                            ok += usize::from(p.take(id) == Ok((1, vec![w, i as u8])));
                        }
                    }
                    ok
                })
            })
            .collect();
        let total: usize = workers.into_iter().map(|h| h.join().unwrap_or(0)).sum();
        assert_eq!(
            total, 8000,
            "every stored packet comes back intact to its owner"
        );
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn too_long_packets_are_not_buffered() {
        let p = pool(2, 10);
        assert_eq!(p.store(&[0; 65], 1, 0), None);
        assert_eq!(p.stats().too_long, 1);
        assert!(p.store(&[0; 64], 1, 0).is_some());
        let zero = BufferPool::new(BufferPoolConfig {
            slots: 0,
            ..BufferPoolConfig::default()
        });
        assert_eq!(zero.config().slots, 1);
    }

    #[test]
    fn generation_wraps_without_issuing_reserved_ids() {
        assert_eq!(next_generation(u16::MAX), 1);
        assert_eq!(decode(encode(0xfffe, 0xffff)), Some((0xfffe, 0xffff)));
        let p = pool(1, 0);
        for _ in 0..70_000 {
            let id = p.store(&[1], 1, 0).unwrap_or(NO_BUFFER);
            assert_ne!(id, NO_BUFFER);
            assert_ne!(id >> 16, 0);
        }
    }
}
