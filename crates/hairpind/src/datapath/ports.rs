//! One datapath thread's side of the logical-port layer ([`crate::portmap`]): its socket on
//! every interface, and the logical ports over them. Receiving on a trunk hands each frame to
//! the pipeline on its VLAN's port, without the trunk tag; sending to a logical port puts its
//! tag back in the copy into the transmit ring. OpenFlow port numbers reach their port
//! through an index (one load for the usual small numbers), never a search.
//!
//! Counters: the pipeline counts every logical port's packets and bytes. What happens below
//! it is counted here and reported to the switch core's port stats about once a second: a
//! port that is its interface gets its socket's losses; a logical port on a trunk gets the
//! frames its sends lost; the trunk's receive losses and frames of no logical port go to the
//! trunk's own counters ([`TrunkCounters`]).

use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::SystemTime;

use agent::Agent;
use dataplane::batch::PacketBatch;
use ports::trunk::{Refused, VlanMap};
use ports::{AnyPort, PacketPort, PcapWriter, SocketCounters, VlanTag};
use switch_core::ports::IoCounters;

use crate::portmap::{PortMap, Role, TrunkCounters, TrunkStats};

/// A thread's socket on one interface.
struct Socket {
    io: AnyPort,
    ingress: Ingress,
    /// Its counters as last reported.
    reported: SocketCounters,
    /// Frames it gave that the batch could not take, since the last report: the segments
    /// of a GSO frame beyond the batch's free slots, frames longer than a slot.
    refused: u64,
}

/// Where an interface's received frames go.
enum Ingress {
    /// All to one logical port.
    Port(u32),
    /// Each to its VLAN's logical port.
    Trunk(TrunkIngress),
}

struct TrunkIngress {
    vlans: VlanMap,
    counters: Arc<TrunkCounters>,
    /// Frames no logical port takes, since the last report.
    unknown_vlan: u64,
    untagged: u64,
}

/// A logical port as a thread sends to it.
struct Port {
    port_no: u32,
    /// Index into `ThreadPorts::sockets`.
    socket: usize,
    /// The tag its frames carry on the wire.
    tag: Option<VlanTag>,
    /// Whether its socket is a trunk's (its losses are then counted per frame, here).
    on_trunk: bool,
    /// Frames its sends lost since the last report (logical ports on a trunk).
    tx_lost: u64,
    /// Debug capture (`--pcap`): every frame it received or sent, as the pipeline sees it.
    capture: Option<PcapWriter>,
}

/// OpenFlow port numbers to indexes of `ThreadPorts::ports`.
#[derive(Default)]
struct PortIndex {
    /// By port number below [`DENSE_PORTS`]; `u16::MAX` where there is none.
    dense: Vec<u16>,
    /// The others (LOCAL), sorted.
    sparse: Vec<(u32, u16)>,
}

/// Port numbers below this are found by index.
const DENSE_PORTS: u32 = 4096;
const NO_PORT: u16 = u16::MAX;

impl PortIndex {
    fn insert(&mut self, port_no: u32, index: u16) {
        if port_no < DENSE_PORTS {
            let at = port_no as usize;
            if self.dense.len() <= at {
                self.dense.resize(at + 1, NO_PORT);
            }
            self.dense[at] = index;
        } else {
            match self.sparse.binary_search_by_key(&port_no, |(n, _)| *n) {
                Ok(i) => self.sparse[i].1 = index,
                Err(i) => self.sparse.insert(i, (port_no, index)),
            }
        }
    }

    #[inline]
    fn get(&self, port_no: u32) -> Option<usize> {
        let index = if port_no < DENSE_PORTS {
            *self.dense.get(port_no as usize)?
        } else {
            let i = self
                .sparse
                .binary_search_by_key(&port_no, |(n, _)| *n)
                .ok()?;
            self.sparse.get(i)?.1
        };
        (index != NO_PORT).then_some(usize::from(index))
    }
}

/// A thread's sockets and logical ports.
pub struct ThreadPorts {
    sockets: Vec<Socket>,
    ports: Vec<Port>,
    index: PortIndex,
    /// Whether any port is captured (so receive looks for captures only then).
    captures: bool,
}

impl ThreadPorts {
    /// The thread's ports over `sockets`, its socket on each of `map`'s interfaces in order.
    pub fn new(map: &PortMap, sockets: Vec<AnyPort>) -> Self {
        let mut ports = Self {
            sockets: Vec::with_capacity(sockets.len()),
            ports: Vec::with_capacity(map.ports.len()),
            index: PortIndex::default(),
            captures: false,
        };
        for (socket, (interface, io)) in map.interfaces.iter().zip(sockets).enumerate() {
            let ingress = match &interface.role {
                Role::Port(port_no) => {
                    ports.add_port(*port_no, socket, None, false);
                    Ingress::Port(*port_no)
                }
                Role::Trunk(trunk) => {
                    for port in map.ports_on(socket) {
                        ports.add_port(port.port_no, socket, port.tag(), true);
                    }
                    Ingress::Trunk(TrunkIngress {
                        vlans: trunk.vlans.clone(),
                        counters: Arc::clone(&trunk.counters),
                        unknown_vlan: 0,
                        untagged: 0,
                    })
                }
            };
            ports.sockets.push(Socket {
                io,
                ingress,
                reported: SocketCounters::default(),
                refused: 0,
            });
        }
        ports
    }

    fn add_port(&mut self, port_no: u32, socket: usize, tag: Option<VlanTag>, on_trunk: bool) {
        let index = self.ports.len();
        self.ports.push(Port {
            port_no,
            socket,
            tag,
            on_trunk,
            tx_lost: 0,
            capture: None,
        });
        self.index
            .insert(port_no, u16::try_from(index).unwrap_or(NO_PORT));
    }

    /// Adds a port that is an interface of its own, opened apart (the LOCAL TAP device).
    pub fn push(&mut self, port_no: u32, io: AnyPort) {
        let socket = self.sockets.len();
        self.add_port(port_no, socket, None, false);
        self.sockets.push(Socket {
            io,
            ingress: Ingress::Port(port_no),
            reported: SocketCounters::default(),
            refused: 0,
        });
    }

    /// Captures port `port_no`'s traffic into `writer`.
    pub fn capture(&mut self, port_no: u32, writer: PcapWriter) {
        if let Some(i) = self.index.get(port_no) {
            self.ports[i].capture = Some(writer);
            self.captures = true;
        }
    }

    /// How many sockets the thread receives from.
    pub fn len(&self) -> usize {
        self.sockets.len()
    }

    /// Receives up to `max` frames of the `i`-th socket into `batch` (emptied first), each on
    /// its logical port; returns how many frames the socket gave (those no port takes
    /// included).
    pub fn receive(&mut self, i: usize, batch: &mut PacketBatch, max: usize) -> usize {
        batch.clear();
        let Some(Socket {
            io,
            ingress,
            refused,
            ..
        }) = self.sockets.get_mut(i)
        else {
            return 0;
        };
        let received = match ingress {
            Ingress::Port(port_no) => {
                let port_no = *port_no;
                io.recv_burst(max, |frame| {
                    let taken =
                        batch.push_with(port_no, |buf| frame.copy_restored(buf).unwrap_or(0));
                    *refused += u64::from(!taken);
                })
            }
            Ingress::Trunk(trunk) => io.recv_burst(max, |frame| {
                let TrunkIngress {
                    vlans,
                    unknown_vlan,
                    untagged,
                    ..
                } = trunk;
                let mut counted = false;
                let taken = batch.push_from(|buf| match vlans.receive(&frame, buf) {
                    Ok(entered) => Some(entered),
                    Err(Refused::UnknownVid(_)) => {
                        *unknown_vlan += 1;
                        counted = true;
                        None
                    }
                    Err(Refused::Untagged) => {
                        *untagged += 1;
                        counted = true;
                        None
                    }
                    Err(Refused::TooLong) => None,
                });
                *refused += u64::from(!taken && !counted);
            }),
        };
        if self.captures {
            self.record_batch(batch);
        }
        received
    }

    fn record_batch(&mut self, batch: &PacketBatch) {
        for j in 0..batch.len() {
            if let Some((port_no, frame)) = batch.packet(j) {
                if let Some(i) = self.index.get(port_no) {
                    record(&mut self.ports[i].capture, frame);
                }
            }
        }
    }

    /// Sends `frame` on logical port `port_no` (with its tag, if it has one).
    #[inline]
    pub fn transmit(&mut self, port_no: u32, frame: &[u8]) {
        let Some(port) = self.index.get(port_no).and_then(|i| self.ports.get_mut(i)) else {
            return;
        };
        let Some(socket) = self.sockets.get_mut(port.socket) else {
            return;
        };
        let sent = match port.tag {
            Some(tag) => socket.io.send_tagged(frame, tag),
            None => socket.io.send(frame),
        };
        if !sent && port.on_trunk {
            port.tx_lost += 1;
        }
        if port.capture.is_some() {
            record(&mut port.capture, frame);
        }
    }

    /// Kicks every socket with queued frames (the others return at once). Done after each
    /// batch, so a transmit ring holds at most one batch's outputs between kicks, however
    /// many ports send to it in a round.
    pub fn kick(&mut self) {
        for socket in &mut self.sockets {
            let _ = socket.io.flush();
        }
    }

    pub fn flush(&mut self) {
        self.kick();
        for port in &mut self.ports {
            if let Some(writer) = &mut port.capture {
                let _ = writer.flush();
            }
        }
    }

    pub fn fds(&self) -> Vec<RawFd> {
        self.sockets.iter().map(|s| s.io.fd()).collect()
    }

    /// Reports what the sockets and trunks saw since the last report: losses of a port that
    /// is its interface, and of each logical port's sends on a trunk, to the switch core's
    /// port stats; a trunk's own counts to its [`TrunkCounters`].
    pub fn report_io(&mut self, agent: &Agent) {
        let mut deltas: Vec<(u32, IoCounters)> = Vec::new();
        for socket in &mut self.sockets {
            let now = socket.io.stats();
            let last = std::mem::replace(&mut socket.reported, now);
            let refused = std::mem::take(&mut socket.refused);
            let delta = |a: u64, b: u64| a.saturating_sub(b);
            match &mut socket.ingress {
                Ingress::Port(port_no) => deltas.push((
                    *port_no,
                    IoCounters {
                        rx_dropped: delta(now.rx_dropped, last.rx_dropped) + refused,
                        tx_dropped: delta(now.tx_dropped, last.tx_dropped),
                        rx_errors: 0,
                        tx_errors: delta(now.tx_errors, last.tx_errors),
                    },
                )),
                Ingress::Trunk(trunk) => {
                    trunk.counters.add(&TrunkStats {
                        rx_packets: delta(now.rx_packets, last.rx_packets),
                        rx_bytes: delta(now.rx_bytes, last.rx_bytes),
                        tx_packets: delta(now.tx_packets, last.tx_packets),
                        tx_bytes: delta(now.tx_bytes, last.tx_bytes),
                        rx_unknown_vlan: std::mem::take(&mut trunk.unknown_vlan),
                        rx_untagged: std::mem::take(&mut trunk.untagged),
                        rx_dropped: delta(now.rx_dropped, last.rx_dropped) + refused,
                        tx_dropped: delta(now.tx_dropped, last.tx_dropped),
                        tx_errors: delta(now.tx_errors, last.tx_errors),
                    });
                }
            }
        }
        for port in &mut self.ports {
            let lost = std::mem::take(&mut port.tx_lost);
            if lost > 0 {
                deltas.push((
                    port.port_no,
                    IoCounters {
                        tx_dropped: lost,
                        ..IoCounters::default()
                    },
                ));
            }
        }
        deltas.retain(|(_, d)| *d != IoCounters::default());
        if deltas.is_empty() {
            return;
        }
        agent.with_switch(|s| {
            for (port_no, delta) in deltas {
                s.record_port_io(port_no, delta);
            }
        });
    }
}

/// Writes `frame` to a port's capture; a capture that fails to write (disk full) stops,
/// forwarding does not.
fn record(capture: &mut Option<PcapWriter>, frame: &[u8]) {
    if let Some(writer) = capture {
        if writer
            .write_frame(SystemTime::now(), frame, frame.len() as u32)
            .is_err()
        {
            *capture = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_finds_dense_and_sparse_numbers() {
        let mut index = PortIndex::default();
        index.insert(1, 0);
        index.insert(4095, 1);
        index.insert(ofp::OFPP_LOCAL, 2);
        index.insert(70_000, 3);
        assert_eq!(index.get(1), Some(0));
        assert_eq!(index.get(4095), Some(1));
        assert_eq!(index.get(ofp::OFPP_LOCAL), Some(2));
        assert_eq!(index.get(70_000), Some(3));
        for missing in [0, 2, 4094, 4096, 69_999, u32::MAX] {
            assert_eq!(index.get(missing), None, "{missing}");
        }
    }
}
