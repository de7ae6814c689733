//! The LB pipeline written by hand for its own rules: what code compiled for these tables
//! (ESwitch's approach) could approach, measured on the same traces and batches as the
//! datapath. It is a bound, not a switch: it knows there are three tables of these shapes,
//! keeps a key of five fields, and has no priorities, table-miss entries, action sets,
//! packet-ins or other readers. It does count every rule, table and port the datapath counts,
//! rewrites the frame and hands it to the same sink.

use super::{lb_backend, lb_service, CountingSink, ACCESS_PORTS, EXTERNAL, LB_SERVICES};
use dataplane::batch::{PacketBatch, PacketSink};

/// A packet and byte count.
#[derive(Clone, Copy, Debug, Default)]
struct Count {
    packets: u64,
    bytes: u64,
}

impl Count {
    #[inline(always)]
    fn hit(&mut self, bytes: u64) {
        self.packets += 1;
        self.bytes += bytes;
    }
}

/// An open-addressing index of 64-bit keys (linear probing, a quarter full at most).
struct ExactIndex {
    keys: Vec<u64>,
    values: Vec<u32>,
}

/// A key no entry holds: the end of a probe.
const EMPTY: u64 = u64::MAX;

impl ExactIndex {
    fn new(entries: impl IntoIterator<Item = (u64, u32)>) -> Self {
        let entries: Vec<_> = entries.into_iter().collect();
        let size = (entries.len() * 4).next_power_of_two();
        let mut index = ExactIndex {
            keys: vec![EMPTY; size],
            values: vec![u32::MAX; size],
        };
        for (key, value) in entries {
            let mut at = index.home(key);
            while index.keys[at] != EMPTY {
                at = (at + 1) & (size - 1);
            }
            index.keys[at] = key;
            index.values[at] = value;
        }
        index
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h ^ (h >> 29)) as usize & (self.keys.len() - 1)
    }

    #[inline(always)]
    fn get(&self, key: u64) -> Option<u32> {
        let mut at = self.home(key);
        loop {
            match *self.keys.get(at)? {
                k if k == key => return self.values.get(at).copied(),
                EMPTY => return None,
                _ => at = (at + 1) & (self.keys.len() - 1),
            }
        }
    }
}

/// The five fields LB's rules read.
struct Key {
    ipv4: bool,
    proto: u8,
    src: u32,
    dst: u32,
    dst_port: u16,
}

/// Untagged Ethernet II, IPv4 without options and not a fragment, TCP or UDP ports;
/// `ipv4` false for anything else.
#[inline(always)]
fn parse(frame: &[u8]) -> Key {
    let Some(h) = frame.first_chunk::<38>() else {
        return Key {
            ipv4: false,
            proto: 0,
            src: 0,
            dst: 0,
            dst_port: 0,
        };
    };
    let proto = h[23];
    let ports = proto == 6 || proto == 17;
    Key {
        ipv4: h[12] == 0x08 && h[13] == 0 && h[14] == 0x45 && h[20] & 0x3f == 0 && h[21] == 0,
        proto,
        src: u32::from_be_bytes([h[26], h[27], h[28], h[29]]),
        dst: u32::from_be_bytes([h[30], h[31], h[32], h[33]]),
        dst_port: if ports {
            u16::from_be_bytes([h[36], h[37]])
        } else {
            0
        },
    }
}

/// The balancer's key: the service and the top bit of the source.
fn backend_key(dst: u32, src: u32) -> u64 {
    (u64::from(dst) << 1) | u64::from(src >> 31)
}

/// The three tables, their counters and the ports' counters.
pub struct HandLb {
    /// The ACL's services by address (the rest of its match, IPv4 TCP to port 80, is tested
    /// before the lookup).
    acl: ExactIndex,
    backends: ExactIndex,
    /// Each backend's MAC address and port.
    targets: Vec<([u8; 6], u32)>,
    /// Table 0's rules by ingress port (the access ports and EXTERNAL).
    ingress: Vec<Count>,
    /// Table 1's rules (one per service), its catch-all last.
    web: Vec<Count>,
    /// Table 2's rules (one per backend), its catch-all last.
    balanced: Vec<Count>,
    /// Lookups of tables 0, 1 and 2.
    lookups: [u64; 3],
    rx: Vec<Count>,
    tx: Vec<Count>,
    dropped: u64,
}

impl HandLb {
    pub fn new() -> Self {
        let services = 0..LB_SERVICES;
        let backends = services
            .clone()
            .flat_map(|s| (0..2).map(move |half| (s, half)));
        let ports = (EXTERNAL + 1) as usize;
        HandLb {
            acl: ExactIndex::new(services.clone().map(|s| (u64::from(lb_service(s)), s))),
            backends: ExactIndex::new(
                backends
                    .clone()
                    .enumerate()
                    .map(|(b, (s, half))| (backend_key(lb_service(s), half << 31), b as u32)),
            ),
            targets: backends.map(|(s, half)| lb_backend(s, half)).collect(),
            ingress: vec![Count::default(); ports],
            web: vec![Count::default(); LB_SERVICES as usize + 1],
            balanced: vec![Count::default(); 2 * LB_SERVICES as usize + 1],
            lookups: [0; 3],
            rx: vec![Count::default(); ports],
            tx: vec![Count::default(); ports],
            dropped: 0,
        }
    }

    /// Runs each packet of the batch through the three tables in turn and empties the
    /// batch, as the datapath does (and, like it, out of line: one call per batch).
    #[inline(never)]
    pub fn process(&mut self, batch: &mut PacketBatch, sink: &mut CountingSink) {
        for i in 0..batch.len() {
            let Some((in_port, frame)) = batch.packet_mut(i) else {
                continue;
            };
            self.packet(in_port, frame, sink);
        }
        batch.clear();
    }

    #[inline(always)]
    fn packet(&mut self, in_port: u32, frame: &mut [u8], sink: &mut CountingSink) {
        let len = frame.len() as u64;
        let at = in_port as usize;
        if let Some(c) = self.rx.get_mut(at) {
            c.hit(len);
        }
        let key = parse(frame);
        // Table 0: the access ports go out of EXTERNAL, EXTERNAL goes to the ACL.
        self.lookups[0] += 1;
        match self.ingress.get_mut(at) {
            Some(c) if (1..=ACCESS_PORTS).contains(&in_port) || in_port == EXTERNAL => c.hit(len),
            _ => return self.dropped += 1,
        }
        if in_port != EXTERNAL {
            return self.send(EXTERNAL, frame, sink);
        }
        // Table 1: web traffic to a service continues; the catch-all's output is the ingress.
        self.lookups[1] += 1;
        let web = key.ipv4 && key.proto == 6 && key.dst_port == 80;
        let service = web.then(|| self.acl.get(u64::from(key.dst))).flatten();
        let Some(service) = service else {
            if let Some(c) = self.web.last_mut() {
                c.hit(len);
            }
            return self.dropped += 1;
        };
        if let Some(c) = self.web.get_mut(service as usize) {
            c.hit(len);
        }
        // Table 2: the backend of the service and the source's half.
        self.lookups[2] += 1;
        let backend = self.backends.get(backend_key(key.dst, key.src));
        let target = backend.and_then(|b| Some((b, *self.targets.get(b as usize)?)));
        let Some((b, (mac, port))) = target else {
            if let Some(c) = self.balanced.last_mut() {
                c.hit(len);
            }
            return self.dropped += 1;
        };
        if let Some(c) = self.balanced.get_mut(b as usize) {
            c.hit(len);
        }
        if let Some(dst) = frame.first_chunk_mut::<6>() {
            *dst = mac;
        }
        self.send(port, frame, sink);
    }

    #[inline(always)]
    fn send(&mut self, port: u32, frame: &[u8], sink: &mut CountingSink) {
        if let Some(c) = self.tx.get_mut(port as usize) {
            c.hit(frame.len() as u64);
        }
        sink.output(port, frame);
    }

    /// Everything counted, so that no count is optimised away.
    pub fn total(&self) -> u64 {
        let counts = [&self.ingress, &self.web, &self.balanced, &self.rx, &self.tx];
        let rules: u64 = counts
            .iter()
            .flat_map(|t| t.iter())
            .map(|c| c.packets ^ c.bytes)
            .sum();
        rules + self.lookups.iter().sum::<u64>() + self.dropped
    }
}
