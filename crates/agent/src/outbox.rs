//! A connection's outgoing bytes, written by whichever thread has a message for it: the
//! connection's task its replies, a datapath thread its packet-ins, housekeeping its
//! flow-removed messages.
//!
//! A writer that finds nothing waiting sends straight to the socket (non-blocking), so a
//! packet-in reaches the controller from the datapath thread that raised it, without waking
//! the agent. Bytes the socket cannot take at once wait in `pending`, in order, and the
//! connection's task sends them when the socket turns writable. While the task handles a batch
//! of requests the outbox is *batching*: replies, and whatever other threads raise meanwhile,
//! are queued and go out in one write when the batch ends.
//!
//! Ordering: every byte passes under `inner`'s lock and a writer sends directly only when
//! nothing is pending, so the controller receives messages in the order they were queued.
//! Closing: the task marks the outbox closed under the lock before it closes the socket, so no
//! thread ever writes to a descriptor number the process may have given to another file.
//! Locks: an outbox's lock is taken after the agent's state lock, never before it.

use std::io;
use std::os::fd::RawFd;
use std::sync::{Mutex, MutexGuard};

use ofp::{AsyncConfig, ControllerRole};

use crate::limit::{PacketInLimit, TokenBucket};
use crate::roles::{default_async_config, mask_index, ConnId};

/// Asynchronous messages (packet-ins, flow-removed, port-status) stop queueing for a connection
/// whose socket has this many bytes waiting; further ones are dropped, as a congested OpenFlow
/// channel would. Replies are never dropped.
pub const PENDING_LIMIT: usize = 4 << 20;

/// The kinds of asynchronous message, each with its own async-config mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    PacketIn,
    FlowRemoved,
    PortStatus,
}

impl EventKind {
    /// The kind's bit in a set of kinds.
    pub(crate) fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// Which asynchronous messages a connection receives (spec 7.3.10): none before the
/// handshake, then those whose reason its role's half of the async configuration enables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filter {
    pub negotiated: bool,
    pub role: ControllerRole,
    pub config: AsyncConfig,
}

impl Filter {
    /// A fresh connection's: nothing until the handshake, the default configuration.
    pub fn new() -> Self {
        Self {
            negotiated: false,
            role: ControllerRole::Equal,
            config: default_async_config(),
        }
    }

    pub fn wants(&self, kind: EventKind, reason: u8) -> bool {
        if !self.negotiated {
            return false;
        }
        let masks = match kind {
            EventKind::PacketIn => &self.config.packet_in_mask,
            EventKind::FlowRemoved => &self.config.flow_removed_mask,
            EventKind::PortStatus => &self.config.port_status_mask,
        };
        let bit = 1u32.checked_shl(u32::from(reason)).unwrap_or(0);
        masks[mask_index(self.role)] & bit != 0
    }
}

impl Default for Filter {
    fn default() -> Self {
        Self::new()
    }
}

struct Inner {
    pending: Vec<u8>,
    /// The task is handling a batch and writes everything queued when it ends.
    batching: bool,
    closed: bool,
    filter: Filter,
    /// Asynchronous messages dropped at [`PENDING_LIMIT`].
    dropped: u64,
    /// The packet-in limit, when one is set ...
    packet_in_limit: Option<TokenBucket>,
    /// ... and the packet-ins it dropped.
    limited: u64,
    /// Packet-ins handed to the socket or queued for it.
    packet_ins: u64,
}

impl Inner {
    /// Whether the connection takes a message of `kind` it wants now: a packet-in only while
    /// the limit allows.
    fn admit(&mut self, kind: EventKind, now_ns: u64) -> bool {
        match (&mut self.packet_in_limit, kind) {
            (Some(bucket), EventKind::PacketIn) => {
                let admitted = bucket.admit(now_ns);
                self.limited += u64::from(!admitted);
                admitted
            }
            _ => true,
        }
    }
}

/// One connection's outgoing side.
pub struct Outbox {
    pub conn: ConnId,
    fd: RawFd,
    inner: Mutex<Inner>,
    /// Tells the connection's task that bytes wait for the socket to turn writable.
    pub(crate) wake: tokio::sync::Notify,
}

/// What [`Outbox::flush`] left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flushed {
    /// Everything was sent.
    Empty,
    /// The socket is full: wait until it is writable, then flush again.
    Blocked,
    /// The peer is gone (or the socket failed): the connection ends.
    Failed,
}

/// Sends what the socket takes now; `Ok(0)` with a non-empty `bytes` means it is full.
fn send_now(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: sends from a live slice of the given length; `fd` is open while the outbox is
    // not closed, which the caller checked under the outbox's lock it still holds.
    let n = unsafe {
        libc::send(
            fd,
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock => Ok(0),
        io::ErrorKind::Interrupted => send_now(fd, bytes),
        _ => Err(e),
    }
}

impl Outbox {
    /// An outbox writing to `fd`, which the caller keeps open until [`Self::close`] returns.
    pub fn new(conn: ConnId, fd: RawFd) -> Self {
        Self {
            conn,
            fd,
            inner: Mutex::new(Inner {
                pending: Vec::new(),
                batching: false,
                closed: false,
                filter: Filter::new(),
                dropped: 0,
                packet_in_limit: None,
                limited: 0,
                packet_ins: 0,
            }),
            wake: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing under this lock panics; a poisoned lock still holds consistent bytes.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends or queues a reply (whole messages): every connection gets its replies, and none
    /// is dropped.
    pub fn reply(&self, bytes: &[u8]) {
        let inner = self.lock();
        if !inner.closed {
            self.write_or_queue(inner, bytes);
        }
    }

    /// Sends or queues the asynchronous messages laid back to back in `wire` (`marks`: each
    /// one's kind, reason and end in `wire`) that this connection wants, in one write;
    /// `picked` is scratch for when it wants only some of them.
    pub fn events(&self, wire: &[u8], marks: &[(EventKind, u8, usize)], picked: &mut Vec<u8>) {
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        let filter = inner.filter;
        let (mut wanted, mut packet_ins) = (0, 0);
        for &(kind, reason, _) in marks {
            if filter.wants(kind, reason) {
                wanted += 1;
                packet_ins += u64::from(kind == EventKind::PacketIn);
            }
        }
        if wanted == 0 {
            return;
        }
        if inner.pending.len() >= PENDING_LIMIT {
            inner.dropped += wanted as u64;
            return;
        }
        if wanted == marks.len() && inner.packet_in_limit.is_none() {
            inner.packet_ins += packet_ins;
            return self.write_or_queue(inner, wire);
        }
        let now = if inner.packet_in_limit.is_some() {
            switch_core::clock::now_ns()
        } else {
            0
        };
        // Copies only once a message is left out: until then `wire` itself is the answer.
        picked.clear();
        let mut copying = false;
        let mut taken = 0;
        let mut start = 0;
        for &(kind, reason, end) in marks {
            if filter.wants(kind, reason) && inner.admit(kind, now) {
                taken += 1;
                inner.packet_ins += u64::from(kind == EventKind::PacketIn);
                if copying {
                    picked.extend_from_slice(wire.get(start..end).unwrap_or_default());
                }
            } else if !copying {
                copying = true;
                picked.extend_from_slice(wire.get(..start).unwrap_or_default());
            }
            start = end;
        }
        if taken == 0 {
            return;
        }
        let bytes = if copying { &picked[..] } else { wire };
        self.write_or_queue(inner, bytes);
    }

    /// Limits the packet-ins this connection receives.
    pub fn set_packet_in_limit(&self, limit: PacketInLimit) {
        self.lock().packet_in_limit = Some(TokenBucket::new(limit));
    }

    /// Packet-ins dropped by the limit.
    pub fn limited(&self) -> u64 {
        self.lock().limited
    }

    fn write_or_queue(&self, mut inner: MutexGuard<'_, Inner>, bytes: &[u8]) {
        if inner.batching || !inner.pending.is_empty() {
            // The task writes these: at the end of its batch, or when the socket drains.
            inner.pending.extend_from_slice(bytes);
            return;
        }
        let sent = match send_now(self.fd, bytes) {
            Ok(n) => n,
            // The task sees the failure on its own next read or write and ends.
            Err(_) => bytes.len(),
        };
        if let Some(rest) = bytes.get(sent..).filter(|rest| !rest.is_empty()) {
            inner.pending.extend_from_slice(rest);
            drop(inner);
            self.wake.notify_one();
        }
    }

    /// Starts a batch: until [`Self::flush`], everything for this connection is queued.
    pub(crate) fn begin_batch(&self) {
        self.lock().batching = true;
    }

    /// Ends any batch and sends what is pending, as far as the socket takes it.
    pub(crate) fn flush(&self) -> Flushed {
        let mut inner = self.lock();
        inner.batching = false;
        if inner.closed {
            return Flushed::Failed;
        }
        while !inner.pending.is_empty() {
            match send_now(self.fd, &inner.pending) {
                Ok(0) => return Flushed::Blocked,
                Ok(n) => {
                    inner.pending.drain(..n);
                }
                Err(_) => return Flushed::Failed,
            }
        }
        // A burst's worth of capacity stays; a huge reply's does not.
        if inner.pending.capacity() > PENDING_LIMIT {
            inner.pending = Vec::new();
        }
        Flushed::Empty
    }

    /// Whether bytes wait for the socket (the task then stops reading requests).
    pub(crate) fn blocked(&self) -> bool {
        !self.lock().pending.is_empty()
    }

    /// Whether the bytes waiting for the socket reached [`PENDING_LIMIT`]: the connection
    /// handles no more requests until the peer reads (replies are never dropped, so this
    /// is what bounds them).
    pub(crate) fn backlogged(&self) -> bool {
        self.lock().pending.len() >= PENDING_LIMIT
    }

    pub fn set_filter(&self, filter: Filter) {
        self.lock().filter = filter;
    }

    pub(crate) fn set_role(&self, role: ControllerRole) {
        self.lock().filter.role = role;
    }

    pub(crate) fn role(&self) -> ControllerRole {
        self.lock().filter.role
    }

    /// Asynchronous messages dropped because the controller did not read fast enough.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Packet-ins sent (or queued to send) to this connection.
    pub fn packet_ins(&self) -> u64 {
        self.lock().packet_ins
    }

    /// Whether the hello exchange is done.
    pub(crate) fn negotiated(&self) -> bool {
        self.lock().filter.negotiated
    }

    /// No more writes: after this returns the socket may be closed.
    pub(crate) fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        inner.pending = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    fn negotiated() -> Filter {
        Filter {
            negotiated: true,
            ..Filter::new()
        }
    }

    fn read_all(peer: &mut UnixStream) -> Vec<u8> {
        peer.set_nonblocking(true).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 65536];
        while let Ok(n) = peer.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    }

    /// Delivers one asynchronous message.
    fn event(outbox: &Outbox, kind: EventKind, reason: u8, bytes: &[u8]) {
        outbox.events(bytes, &[(kind, reason, bytes.len())], &mut Vec::new());
    }

    #[test]
    fn writes_at_once_queues_in_a_batch_and_keeps_the_order() {
        let (ours, mut peer) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let outbox = Outbox::new(1, ours.as_raw_fd());
        outbox.set_filter(negotiated());
        outbox.reply(b"first");
        assert_eq!(read_all(&mut peer), b"first", "sent without a flush");
        outbox.begin_batch();
        outbox.reply(b"reply;");
        event(&outbox, EventKind::PacketIn, ofp::OFPR_NO_MATCH, b"event;");
        assert_eq!(read_all(&mut peer), b"", "held until the batch ends");
        assert_eq!(outbox.flush(), Flushed::Empty);
        assert_eq!(read_all(&mut peer), b"reply;event;");
    }

    #[test]
    fn a_full_socket_keeps_the_rest_for_the_task_and_drops_events_beyond_the_limit() {
        let (ours, mut peer) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let outbox = Outbox::new(1, ours.as_raw_fd());
        outbox.set_filter(negotiated());
        let chunk = vec![7u8; 64 * 1024];
        let packet_in = |bytes: &[u8]| event(&outbox, EventKind::PacketIn, ofp::OFPR_ACTION, bytes);
        let mut queued = 0;
        while !outbox.blocked() {
            packet_in(&chunk);
            queued += chunk.len();
        }
        while outbox.lock().pending.len() < PENDING_LIMIT {
            packet_in(&chunk);
            queued += chunk.len();
        }
        packet_in(&chunk);
        assert_eq!(outbox.dropped(), 1, "an event beyond the limit is dropped");
        outbox.reply(b"reply");
        assert_eq!(outbox.dropped(), 1, "a reply is never dropped");
        let mut got = Vec::new();
        loop {
            got.extend(read_all(&mut peer));
            if outbox.flush() == Flushed::Empty {
                got.extend(read_all(&mut peer));
                break;
            }
        }
        assert_eq!(got.len(), queued + 5);
        assert!(got.ends_with(b"reply"));
    }

    #[test]
    fn the_filter_follows_handshake_role_and_async_config() {
        let (ours, mut peer) = UnixStream::pair().unwrap();
        let outbox = Outbox::new(1, ours.as_raw_fd());
        let no_match =
            |bytes: &[u8]| event(&outbox, EventKind::PacketIn, ofp::OFPR_NO_MATCH, bytes);
        no_match(b"before the handshake;");
        outbox.set_filter(negotiated());
        no_match(b"equal;");
        event(&outbox, EventKind::PacketIn, ofp::OFPR_INVALID_TTL, b"ttl;");
        outbox.set_role(ControllerRole::Slave);
        no_match(b"slave;");
        event(&outbox, EventKind::PortStatus, ofp::OFPPR_ADD, b"port;");
        outbox.close();
        outbox.reply(b"closed;");
        assert_eq!(read_all(&mut peer), b"equal;port;");
    }

    #[test]
    fn the_packet_in_limit_drops_and_counts_packet_ins_only() {
        let (ours, mut peer) = UnixStream::pair().unwrap();
        let outbox = Outbox::new(1, ours.as_raw_fd());
        outbox.set_filter(negotiated());
        outbox.set_packet_in_limit(PacketInLimit { rate: 1, burst: 2 });
        let wire = b"a;b;removed;c;";
        let marks = [
            (EventKind::PacketIn, ofp::OFPR_NO_MATCH, 2),
            (EventKind::PacketIn, ofp::OFPR_NO_MATCH, 4),
            (EventKind::FlowRemoved, ofp::OFPRR_DELETE, 12),
            (EventKind::PacketIn, ofp::OFPR_NO_MATCH, 14),
        ];
        outbox.events(wire, &marks, &mut Vec::new());
        assert_eq!(read_all(&mut peer), b"a;b;removed;");
        assert_eq!(outbox.limited(), 1);
        event(&outbox, EventKind::PacketIn, ofp::OFPR_NO_MATCH, b"d;");
        event(&outbox, EventKind::PortStatus, ofp::OFPPR_ADD, b"port;");
        assert_eq!(read_all(&mut peer), b"port;");
        assert_eq!(outbox.limited(), 2);
        assert_eq!(outbox.dropped(), 0, "the limit is not congestion");
    }

    #[test]
    fn a_batch_of_events_goes_out_filtered_in_one_piece() {
        let (ours, mut peer) = UnixStream::pair().unwrap();
        let outbox = Outbox::new(1, ours.as_raw_fd());
        outbox.set_filter(negotiated());
        let wire = b"miss;ttl;action;removed;";
        let marks = [
            (EventKind::PacketIn, ofp::OFPR_NO_MATCH, 5),
            (EventKind::PacketIn, ofp::OFPR_INVALID_TTL, 9),
            (EventKind::PacketIn, ofp::OFPR_ACTION, 16),
            (EventKind::FlowRemoved, ofp::OFPRR_DELETE, 24),
        ];
        outbox.events(wire, &marks, &mut Vec::new());
        assert_eq!(read_all(&mut peer), b"miss;action;removed;");
        // Packet-ins sent are counted; the one the async config filters out is not.
        assert_eq!(outbox.packet_ins(), 2);
    }
}
