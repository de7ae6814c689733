//! The queue of packet-outs from the agent to the datapath threads. Whichever thread is awake
//! takes them; the doorbell wakes the threads that sleep, so a packet-out on an idle switch
//! leaves at once.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};

use switch_core::{PacketOutJob, PacketOutQueue};

use super::doorbell::Doorbell;

/// Packet-outs waiting for a datapath thread; beyond this the agent's queue refuses more,
/// as a full OpenFlow channel would.
const PACKET_OUT_QUEUE: usize = 4096;

/// The agent's end of the queue.
pub struct PacketOutSender {
    jobs: SyncSender<PacketOutJob>,
    bell: Doorbell,
}

/// The datapath threads' end, shared by them all.
#[derive(Clone)]
pub struct PacketOutReceiver {
    jobs: Arc<Mutex<Receiver<PacketOutJob>>>,
    bell: Doorbell,
}

/// A queue whose sender rings `bell` for every packet-out.
pub fn queue(bell: Doorbell) -> (PacketOutSender, PacketOutReceiver) {
    let (tx, rx) = sync_channel(PACKET_OUT_QUEUE);
    (
        PacketOutSender {
            jobs: tx,
            bell: bell.clone(),
        },
        PacketOutReceiver {
            jobs: Arc::new(Mutex::new(rx)),
            bell,
        },
    )
}

impl PacketOutQueue for PacketOutSender {
    fn submit(&mut self, job: PacketOutJob) {
        // A full queue drops the packet-out, as a congested OpenFlow channel would.
        if self.jobs.try_send(job).is_ok() {
            self.bell.ring();
        }
    }
}

impl PacketOutReceiver {
    /// Runs `f` on every queued packet-out; returns how many. Returns 0 at once when another
    /// thread is taking them.
    pub fn drain(&self, mut f: impl FnMut(PacketOutJob)) -> usize {
        let Ok(jobs) = self.jobs.try_lock() else {
            return 0;
        };
        self.bell.clear();
        let mut done = 0;
        loop {
            match jobs.try_recv() {
                Ok(job) => {
                    f(job);
                    done += 1;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return done,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(in_port: u32) -> PacketOutJob {
        PacketOutJob {
            in_port,
            actions: Vec::new(),
            frame: vec![0; 60],
        }
    }

    #[test]
    fn every_packet_out_rings_and_is_taken_once() {
        let bell = Doorbell::new().unwrap();
        let (mut tx, rx) = queue(bell.clone());
        let other = rx.clone();
        tx.submit(job(1));
        tx.submit(job(2));
        let mut seen = Vec::new();
        assert_eq!(rx.drain(|j| seen.push(j.in_port)), 2);
        assert_eq!(seen, [1, 2]);
        assert_eq!(other.drain(|_| panic!("taken twice")), 0);
    }
}
