//! What the forwarding benchmarks share: CPU pinning, CPU time, kernel interface counters
//! and the frame generator. Included by each bench with `#[path]`.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ports::{AfPacketPort, SocketCounters};

use crate::common::test_frame;

pub const BURST: usize = 256;

pub fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; the calls only change this thread's affinity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "could not pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// (rx_packets, rx_dropped) of an interface from the namespace's /proc/net/dev.
pub fn kernel_rx(ifname: &str) -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap_or_default();
    text.lines()
        .find_map(|line| {
            let (name, rest) = line.split_once(':')?;
            (name.trim() == ifname).then(|| {
                let cols: Vec<u64> = rest
                    .split_whitespace()
                    .filter_map(|c| c.parse().ok())
                    .collect();
                (
                    cols.get(1).copied().unwrap_or(0),
                    cols.get(3).copied().unwrap_or(0),
                )
            })
        })
        .unwrap_or((0, 0))
}

/// (user, system) CPU seconds the calling thread has used.
pub fn thread_cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / hz
    };
    (field(11), field(12))
}

pub fn generate(mut port: AfPacketPort, stop: Arc<AtomicBool>) -> SocketCounters {
    pin_to_cpu(0);
    let frame = test_frame(1, 60);
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..BURST {
            if !port.send(&frame) {
                break;
            }
        }
        let _ = port.flush();
    }
    port.stats()
}
