//! The offload fast path (`bpf/offload.c`): an XDP program holding hardware tables in BPF
//! maps, an ordered ACL (kept as a tuple space: a hash per mask, entries ranked) and a MAC
//! table, that forwards what they decide with XDP_REDIRECT and passes the rest up to the
//! daemon's AF_PACKET ports. This module loads and attaches it
//! and reads and writes its maps; what goes into them is the offload planner's business
//! (the daemon translates its image into [`AclRule`]s and MAC entries).
//!
//! Attachment tries native (driver) mode first, then generic (SKB) mode; [`attach`] says
//! which one the kernel took. On veth, native mode needs the receiving peer of a redirected
//! frame to run NAPI (an XDP program or GRO on the peer).
//!
//! [`attach`]: OffloadProgram::attach

use std::error::Error;
use std::io;

use aya::maps::{Array, DevMapHash, HashMap, MapData, PerCpuArray};
use aya::programs::{Xdp, XdpMode};
use aya::{Ebpf, Pod};

/// The compiled `bpf/offload.c`; empty when build.rs could not compile it.
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/offload.o"));
static BUILD_FAILURE: &str = include_str!(concat!(env!("OUT_DIR"), "/offload.unavailable"));

const PROGRAM: &str = "hairpin_offload";
/// Entries of one ACL half, as compiled into the program.
pub const ACL_MAX: usize = 4096;
/// Distinct masks of one ACL half.
pub const TUPLES_MAX: usize = 32;
/// Entries of the MAC table.
pub const MAC_MAX: usize = 65_536;
/// Counter slots (one per entry).
pub const SLOTS: u32 = (ACL_MAX * 2 + MAC_MAX) as u32;
/// Port numbers the fast path forwards between are below this.
pub const PORTS_MAX: u32 = 256;
/// Key words of an ACL entry.
pub const KEY_WORDS: usize = 5;

/// What an entry does with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastAction {
    /// Up to the daemon.
    Pass,
    /// Out of this OpenFlow port.
    Forward(u32),
    Drop,
}

impl FastAction {
    fn encode(self) -> (u32, u32) {
        match self {
            FastAction::Pass => (0, 0),
            FastAction::Forward(port) => (1, port),
            FastAction::Drop => (2, 0),
        }
    }
}

/// An ACL entry: key words under a mask (see `bpf/offload.c` for their layout), the action
/// and the counter slot. Its rank is its place in the list given to [`OffloadProgram::set_acl`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclRule {
    pub key: [u64; KEY_WORDS],
    pub mask: [u64; KEY_WORDS],
    pub action: FastAction,
    pub slot: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
struct AclKey {
    half: u32,
    tuple: u32,
    w: [u64; KEY_WORDS],
}

// SAFETY: repr(C): two u32 then five u64, 48 bytes, no padding.
unsafe impl Pod for AclKey {}

#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct AclValue {
    rank: u32,
    action: u32,
    port: u32,
    slot: u32,
}

// SAFETY: repr(C), four u32.
unsafe impl Pod for AclValue {}

#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct AclMask {
    w: [u64; KEY_WORDS],
}

// SAFETY: repr(C), five u64.
unsafe impl Pod for AclMask {}

/// A MAC table key: destination MAC and VLAN id as OXM has it (with the present bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct MacKey {
    pub eth_dst: [u8; 6],
    pub vlan_vid: u16,
}

// SAFETY: repr(C), 6 bytes and a u16 at offset 6: 8 bytes, no padding.
unsafe impl Pod for MacKey {}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
struct MacValue {
    action: u32,
    port: u32,
    slot: u32,
    pad: u32,
}

// SAFETY: repr(C), four u32.
unsafe impl Pod for MacValue {}

#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Counter {
    packets: u64,
    bytes: u64,
}

// SAFETY: repr(C), two u64.
unsafe impl Pod for Counter {}

#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct PortCounter {
    rx_packets: u64,
    rx_bytes: u64,
    tx_packets: u64,
    tx_bytes: u64,
}

// SAFETY: repr(C), four u64.
unsafe impl Pod for PortCounter {}

/// Receive and transmit counts of one port, over every CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounts {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// How the program runs on an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachMode {
    /// In the driver (native XDP).
    Native,
    /// On the socket buffer (generic XDP).
    Generic,
}

/// A loaded offload program; dropping it detaches it everywhere.
pub struct OffloadProgram {
    ebpf: Ebpf,
    /// The ACL half in use.
    active: u32,
    /// The ACL keys written into each half, to clear before it is written again.
    written: [Vec<AclKey>; 2],
}

fn describe(what: &str, err: &dyn Error) -> io::Error {
    let mut text = format!("{what}: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    io::Error::other(text)
}

impl OffloadProgram {
    /// Loads the program and its maps (empty: every frame passes) into the kernel.
    pub fn load() -> io::Result<Self> {
        if OBJECT.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("the XDP offload program was not built ({BUILD_FAILURE})"),
            ));
        }
        let mut ebpf = Ebpf::load(OBJECT).map_err(|e| describe("load XDP offload object", &e))?;
        let program: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| io::Error::other(format!("XDP object lacks program {PROGRAM}")))?
            .try_into()
            .map_err(|e| describe("XDP program type", &e))?;
        program
            .load()
            .map_err(|e| describe("load XDP offload program (verifier)", &e))?;
        Ok(OffloadProgram {
            ebpf,
            active: 0,
            written: [Vec::new(), Vec::new()],
        })
    }

    /// Attaches to interface `ifname`: natively if `native` and the driver takes it, else
    /// generically.
    pub fn attach(&mut self, ifname: &str, native: bool) -> io::Result<AttachMode> {
        let program: &mut Xdp = self
            .ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| io::Error::other(format!("XDP object lacks program {PROGRAM}")))?
            .try_into()
            .map_err(|e| describe("XDP program type", &e))?;
        let mut native_error = String::new();
        if native {
            match program.attach(ifname, XdpMode::Driver) {
                Ok(_) => return Ok(AttachMode::Native),
                Err(e) => native_error = format!(" (native: {e})"),
            }
        }
        program
            .attach(ifname, XdpMode::Skb)
            .map(|_| AttachMode::Generic)
            .map_err(|e| describe(&format!("attach XDP offload to {ifname}{native_error}"), &e))
    }

    fn map(&mut self, name: &str) -> io::Result<&mut aya::maps::Map> {
        self.ebpf
            .map_mut(name)
            .ok_or_else(|| io::Error::other(format!("XDP object lacks map {name}")))
    }

    /// Sets what the fast path knows of a port: whether frames arriving on interface
    /// `ifindex` are its to look up (`receives`), and whether it may send out of it
    /// (`forwards`).
    pub fn set_port(
        &mut self,
        port_no: u32,
        ifindex: u32,
        receives: bool,
        forwards: bool,
    ) -> io::Result<()> {
        let mut in_ports: HashMap<&mut MapData, u32, u32> =
            HashMap::try_from(self.map("in_ports")?).map_err(|e| describe("in_ports", &e))?;
        if receives && port_no < PORTS_MAX {
            in_ports
                .insert(ifindex, port_no, 0)
                .map_err(|e| describe("in_ports insert", &e))?;
        } else {
            let _ = in_ports.remove(&ifindex);
        }
        let mut out_ports =
            DevMapHash::try_from(self.map("out_ports")?).map_err(|e| describe("out_ports", &e))?;
        if forwards && port_no < PORTS_MAX {
            out_ports
                .insert(port_no, ifindex, None, 0)
                .map_err(|e| describe("out_ports insert", &e))?;
        } else {
            let _ = out_ports.remove(port_no);
        }
        Ok(())
    }

    /// Forgets a port.
    pub fn remove_port(&mut self, port_no: u32, ifindex: u32) -> io::Result<()> {
        self.set_port(port_no, ifindex, false, false)
    }

    /// Replaces the ACL: writes the half not in use, then switches to it, so that a frame
    /// meets either the old list or the new one whole. The program holds [`TUPLES_MAX`]
    /// masks: a list with more is cut before the first entry that needs one more (a cut in
    /// rank order keeps the meaning of what stays). Returns how many entries it took.
    pub fn set_acl(&mut self, rules: &[AclRule]) -> io::Result<usize> {
        let next = self.active ^ 1;
        let mut masks: Vec<[u64; KEY_WORDS]> = Vec::new();
        let mut entries: Vec<(AclKey, AclValue)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut taken = 0;
        for (rank, r) in rules.iter().enumerate().take(ACL_MAX) {
            let tuple = match masks.iter().position(|m| *m == r.mask) {
                Some(t) => t,
                None if masks.len() < TUPLES_MAX => {
                    masks.push(r.mask);
                    masks.len() - 1
                }
                None => break,
            };
            taken = rank + 1;
            let mut w = [0; KEY_WORDS];
            for (i, word) in w.iter_mut().enumerate() {
                *word = r.key[i] & r.mask[i];
            }
            let key = AclKey {
                half: next,
                tuple: tuple as u32,
                w,
            };
            // Within a mask the first of equal keys is the only one that can match first.
            if !seen.insert(key) {
                continue;
            }
            let (action, port) = r.action.encode();
            entries.push((
                key,
                AclValue {
                    rank: rank as u32,
                    action,
                    port,
                    slot: r.slot,
                },
            ));
        }
        let old = std::mem::take(&mut self.written[next as usize]);
        let mut acl: HashMap<&mut MapData, AclKey, AclValue> =
            HashMap::try_from(self.map("acl")?).map_err(|e| describe("acl", &e))?;
        for key in old {
            let _ = acl.remove(&key);
        }
        for (key, value) in &entries {
            acl.insert(*key, *value, 0)
                .map_err(|e| describe("acl insert", &e))?;
        }
        self.written[next as usize] = entries.iter().map(|(k, _)| *k).collect();
        let mut acl_masks: Array<&mut MapData, AclMask> =
            Array::try_from(self.map("acl_masks")?).map_err(|e| describe("acl_masks", &e))?;
        for (t, m) in masks.iter().enumerate() {
            acl_masks
                .set(next * TUPLES_MAX as u32 + t as u32, AclMask { w: *m }, 0)
                .map_err(|e| describe("acl_masks set", &e))?;
        }
        let mut config: Array<&mut MapData, u32> =
            Array::try_from(self.map("config")?).map_err(|e| describe("config", &e))?;
        config
            .set(1 + next, masks.len() as u32, 0)
            .map_err(|e| describe("config set", &e))?;
        config
            .set(0, next, 0)
            .map_err(|e| describe("config set", &e))?;
        self.active = next;
        Ok(taken)
    }

    /// Adds or replaces a MAC table entry.
    pub fn set_mac(&mut self, key: MacKey, action: FastAction, slot: u32) -> io::Result<()> {
        let (action, port) = action.encode();
        let mut mac: HashMap<&mut MapData, MacKey, MacValue> =
            HashMap::try_from(self.map("mac")?).map_err(|e| describe("mac", &e))?;
        mac.insert(
            key,
            MacValue {
                action,
                port,
                slot,
                pad: 0,
            },
            0,
        )
        .map_err(|e| describe("mac insert", &e))
    }

    pub fn remove_mac(&mut self, key: &MacKey) -> io::Result<()> {
        let mut mac: HashMap<&mut MapData, MacKey, MacValue> =
            HashMap::try_from(self.map("mac")?).map_err(|e| describe("mac", &e))?;
        match mac.remove(key) {
            Ok(()) => Ok(()),
            Err(e) => Err(describe("mac remove", &e)),
        }
    }

    /// Packets and bytes counted in `slot`, over every CPU.
    pub fn slot(&mut self, slot: u32) -> io::Result<(u64, u64)> {
        let stats: PerCpuArray<&mut MapData, Counter> =
            PerCpuArray::try_from(self.map("stats")?).map_err(|e| describe("stats", &e))?;
        let values = stats.get(&slot, 0).map_err(|e| describe("stats get", &e))?;
        Ok(values
            .iter()
            .fold((0, 0), |(p, b), c| (p + c.packets, b + c.bytes)))
    }

    /// Counts of port `port_no`, over every CPU.
    pub fn port(&mut self, port_no: u32) -> io::Result<PortCounts> {
        let stats: PerCpuArray<&mut MapData, PortCounter> =
            PerCpuArray::try_from(self.map("port_stats")?)
                .map_err(|e| describe("port_stats", &e))?;
        let values = stats
            .get(&port_no, 0)
            .map_err(|e| describe("port_stats get", &e))?;
        Ok(values
            .iter()
            .fold(PortCounts::default(), |acc, c| PortCounts {
                rx_packets: acc.rx_packets + c.rx_packets,
                rx_bytes: acc.rx_bytes + c.rx_bytes,
                tx_packets: acc.tx_packets + c.tx_packets,
                tx_bytes: acc.tx_bytes + c.tx_bytes,
            }))
    }
}

/// The index of interface `ifname`.
pub fn ifindex(ifname: &str) -> io::Result<u32> {
    let name = std::ffi::CString::new(ifname)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name with NUL"))?;
    // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(index)
}
