//! The I/O side of one connection: framing, batching, echo probes, and the connection's
//! [`Outbox`], through which its replies and every asynchronous message for it go out.
//!
//! Reading and handling the connection's input is a [`Connection`]'s business, done by
//! whichever thread gets there: the connection's task when the socket turns readable, or a
//! thread that is awake anyway and expects a controller's answer (a datapath thread after a
//! packet-in, through [`crate::Channels::serve_ready_input`]), which then handles a packet-out
//! without waking the task. A thread that never sleeps (a busy-polling datapath thread) takes
//! the input for a while ([`crate::Channels::take_input_until`]): the task then stops watching
//! the socket, so a controller's message wakes nobody. The input sits behind a lock that the
//! task takes and other threads only try; one read is handled under one lock of the switch
//! state, and the outbox batches meanwhile, so the replies (and anything other threads raise
//! for the connection in that time) leave in one write. While the socket cannot take more, the
//! task stops reading requests until the outbox drains. After answering a barrier request the
//! task reads on for a moment before it sleeps: a peer that waits for each barrier's reply
//! sends its next request soon after.
//!
//! Locks, in the order they are taken: a connection's input, the switch state, an outbox.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ofp::{Hello, Message, OFP_HEADER_LEN};
use tokio::io::unix::{AsyncFd, AsyncFdReadyGuard};
use tokio::io::Interest;
use tokio::time::Instant;

use crate::outbox::{Flushed, Outbox};
use crate::roles::{ConnId, Mastership};
use crate::session::{Outcome, Session};
use crate::{Channels, Shared};

/// Read buffer growth step; a burst of small flow-mods fills it in one syscall.
const READ_CHUNK: usize = 256 * 1024;
/// Most a thread other than the connection's task reads at once: a packet-out or a few,
/// not a burst of flow-mods that would hold a datapath thread for long (the task takes the
/// rest).
const SERVE_READ: usize = 16 * 1024;
/// How long the connection's task keeps reading after it answered a barrier request. A peer
/// that waits for each barrier's reply (`ovs-ofctl add-flows`, a controller that confirms
/// every flow-mod) sends its next request within tens of microseconds of reading it; a read
/// that finds it there saves the task a sleep and a wake-up on an idle core, which is most
/// of such a round trip. The runtime's other tasks wait meanwhile, a tenth of a millisecond
/// at most.
const AFTER_BARRIER_SPIN: Duration = Duration::from_micros(100);
/// xid of messages the switch starts (hello, echo probes, asynchronous messages).
pub(crate) const SWITCH_XID: u32 = 0;

fn encode_into(out: &mut Vec<u8>, xid: u32, msg: &Message) {
    if let Message::MultipartReply(reply) = msg {
        let mut parts = Vec::new();
        ofp::encode_multipart_reply_split(xid, &reply.body, &mut parts);
        for part in parts {
            out.extend_from_slice(&part);
        }
    } else {
        ofp::encode(xid, msg, out);
    }
}

/// A connection as the agent's threads share it: its outbox, and its input side, which
/// whichever thread is awake may serve (see [`Connection::try_serve_input`]).
pub(crate) struct Connection {
    pub(crate) outbox: Outbox,
    fd: RawFd,
    input: Mutex<Input>,
    /// Bumped by every read that brought bytes, for the task's inactivity probe.
    heard: AtomicU64,
    /// The input side saw the end of the stream (or must close): the task ends the connection.
    ended: AtomicBool,
    /// A configured controller (`--controller`), not a client of a listener.
    pub(crate) active: bool,
}

/// What reading and handling a connection's messages needs.
struct Input {
    session: Session,
    inbuf: Vec<u8>,
    channels: Channels,
    out: Vec<u8>,
    /// The last serving answered a barrier request.
    answered_barrier: bool,
}

/// What one serving of a connection's input did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Served {
    /// Nothing to read.
    Idle,
    /// Messages were read and handled.
    Handled,
    /// The connection ends (the peer left, its stream cannot be framed, a failed hello).
    End,
}

impl Connection {
    fn lock_input(&self) -> std::sync::MutexGuard<'_, Input> {
        // A panic while handling a message would be a bug; the input is still consistent.
        self.input.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves the input from a thread that is not the connection's task (a datapath thread
    /// awake anyway, waiting for a controller's answer): reads what the socket holds, if no
    /// other thread is serving it, and handles it. Returns whether messages were handled.
    pub(crate) fn try_serve_input(&self, shared: &Shared) -> bool {
        let Ok(mut input) = self.input.try_lock() else {
            return false;
        };
        if self.ended.load(Ordering::Acquire) || self.outbox.blocked() {
            return false;
        }
        let fd = self.fd;
        let served = self.serve(shared, &mut input, |buf| read_some(fd, buf, SERVE_READ));
        let left = input.holds_message();
        drop(input);
        if served == Served::End {
            self.end();
        } else if left {
            // The connection's task serves the rest once the peer reads.
            self.outbox.wake.notify_one();
        }
        served == Served::Handled
    }

    /// Reads with `read` and handles every whole message read, under one state lock; the
    /// outbox batches meanwhile.
    fn serve(
        &self,
        shared: &Shared,
        input: &mut Input,
        read: impl FnOnce(&mut Vec<u8>) -> io::Result<usize>,
    ) -> Served {
        input.answered_barrier = false;
        let mut inbuf = std::mem::take(&mut input.inbuf);
        // Requests left from a batch that stopped at the backlog limit are served before
        // anything more is read, so the input buffer stays bounded too.
        let got = if holds_message(&inbuf) {
            None
        } else {
            Some(read(&mut inbuf))
        };
        let served = match got {
            Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => Served::Idle,
            Some(Ok(0) | Err(_)) => Served::End,
            _ => {
                if got.is_some() {
                    self.heard.fetch_add(1, Ordering::Relaxed);
                }
                let mut close = false;
                self.outbox.begin_batch();
                match handle_batch(shared, self, input, &inbuf, &mut close) {
                    Some(n) => {
                        inbuf.drain(..n);
                    }
                    None => close = true,
                }
                let flushed = self.outbox.flush();
                if close || flushed == Flushed::Failed {
                    Served::End
                } else {
                    Served::Handled
                }
            }
        };
        if inbuf.capacity() > 4 * READ_CHUNK && inbuf.len() < READ_CHUNK {
            inbuf.shrink_to(READ_CHUNK);
        }
        input.inbuf = inbuf;
        served
    }

    /// Serves what the readable socket holds, for the connection's task; `would_block` tells
    /// whether it held nothing. After answering a barrier it keeps reading for
    /// [`AFTER_BARRIER_SPIN`].
    fn serve_readable(&self, shared: &Shared, would_block: &mut bool) -> Served {
        let mut input = self.lock_input();
        let mut served = self.serve(shared, &mut input, |buf| {
            let got = read_some(self.fd, buf, READ_CHUNK);
            *would_block = matches!(&got, Err(e) if e.kind() == io::ErrorKind::WouldBlock);
            got
        });
        while served == Served::Handled && input.answered_barrier {
            served = self.serve_within(shared, &mut input, AFTER_BARRIER_SPIN);
        }
        served
    }

    /// Serves the peer's next messages if they come within `spin`, polling the socket
    /// meanwhile instead of sleeping; returns [`Served::Idle`] if none came.
    fn serve_within(&self, shared: &Shared, input: &mut Input, spin: Duration) -> Served {
        let deadline = std::time::Instant::now() + spin;
        loop {
            if self.outbox.blocked() {
                return Served::Idle;
            }
            let served = self.serve(shared, input, |buf| read_some(self.fd, buf, READ_CHUNK));
            if served != Served::Idle || std::time::Instant::now() >= deadline {
                return served;
            }
            std::hint::spin_loop();
        }
    }

    /// Marks the connection ended and tells its task.
    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.outbox.wake.notify_one();
    }
}

impl Input {
    /// Whether requests wait in the input buffer: a batch stopped at the backlog limit.
    fn holds_message(&self) -> bool {
        holds_message(&self.inbuf)
    }

    /// Queues an outcome's replies on this connection and delivers its events to every
    /// connection (this one after the replies so far: the outbox is batching).
    fn emit(&mut self, outbox: &Outbox, outcome: Outcome) {
        self.out.clear();
        for (xid, msg) in &outcome.replies {
            encode_into(&mut self.out, *xid, msg);
        }
        outbox.reply(&self.out);
        for event in outcome.events {
            self.channels.queue(event);
        }
        self.channels.flush();
    }
}

/// Decodes and handles every complete message at the front of `buf`, under one lock.
/// Returns how many bytes were consumed, or `None` when the stream cannot be framed any more.
fn handle_batch(
    shared: &Shared,
    conn: &Connection,
    input: &mut Input,
    buf: &[u8],
    close: &mut bool,
) -> Option<usize> {
    let outbox = &conn.outbox;
    let mut consumed = 0;
    let mut state = None;
    while let Some(rest) = buf.get(consumed..) {
        let Some(len) = ofp::peek_message_len(rest) else {
            break;
        };
        if consumed > 0 && outbox.backlogged() {
            // A peer that asks without reading: the rest waits in the input buffer.
            break;
        }
        let declared = rest
            .get(2..4)
            .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        if declared < OFP_HEADER_LEN {
            // The length field cannot be trusted: no later message can be found.
            let xid = rest
                .get(4..8)
                .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            let outcome = input.session.on_decode_error(
                xid,
                ofp::OfpError::BadRequest(ofp::BadRequestCode::BadLen),
                rest.get(..OFP_HEADER_LEN).unwrap_or(rest),
            );
            input.emit(outbox, outcome);
            return None;
        }
        let Some(raw) = rest.get(..len) else {
            break;
        };
        consumed += len;
        let now = switch_core::clock::now_ns();
        let outcome: Outcome = match ofp::decode(raw) {
            Ok((header, msg)) => {
                input.answered_barrier |= matches!(msg, Message::BarrierRequest);
                let refilter = match msg {
                    Message::RoleRequest(_) => Some(true),
                    Message::Hello(_) | Message::SetAsync(_) => Some(false),
                    _ => None,
                };
                let state = state.get_or_insert_with(|| shared.lock());
                let outcome = input.session.on_message(state, &header, msg, raw, now);
                // Events this batch raises after it already see the connection's new filter.
                if let Some(roles_changed) = refilter {
                    if roles_changed {
                        shared.refresh_roles(&state.roles);
                    }
                    let role = state.roles.role(input.session.conn);
                    outbox.set_filter(input.session.filter(role));
                }
                outcome
            }
            Err(e) => input.session.on_decode_error(e.xid, e.error, raw),
        };
        let closing = outcome.close;
        input.emit(outbox, outcome);
        if closing {
            *close = true;
            break;
        }
    }
    Some(consumed)
}

/// Whether `buf` starts with a whole message.
fn holds_message(buf: &[u8]) -> bool {
    ofp::peek_message_len(buf).is_some_and(|len| buf.len() >= len)
}

/// Reads what the (non-blocking) socket holds into `buf`, `max` bytes at most; `Ok(0)` means
/// the peer closed.
fn read_some(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    if buf.capacity() - buf.len() < OFP_HEADER_LEN {
        buf.reserve(READ_CHUNK);
    }
    let spare = buf.spare_capacity_mut();
    let len = spare.len().min(max);
    let spare = &mut spare[..len];
    // SAFETY: reads at most `spare.len()` bytes into the vector's spare capacity, which stays
    // allocated for the call; only the bytes the kernel wrote are then marked initialised.
    // `fd` is open: the connection's task keeps the socket until the connection is gone from
    // the registry and every reader of it has let go of its input lock.
    let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), spare.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel initialised `n` bytes past the old length.
    unsafe { buf.set_len(buf.len() + n as usize) };
    Ok(n as usize)
}

/// Serves one connection until the peer leaves, fails the handshake, or stops answering.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    conn: ConnId,
    socket: OwnedFd,
    active: bool,
    mastership: Mastership,
) {
    let fd = socket.as_raw_fd();
    let connection = Arc::new(Connection {
        outbox: Outbox::new(conn, fd),
        fd,
        input: Mutex::new(Input {
            session: Session::new(conn),
            inbuf: Vec::with_capacity(READ_CHUNK),
            channels: Channels::new(Arc::clone(shared)),
            out: Vec::with_capacity(4096),
            answered_barrier: false,
        }),
        heard: AtomicU64::new(0),
        ended: AtomicBool::new(false),
        active,
    });
    if let Some(limit) = shared.config.packet_in_limit {
        connection.outbox.set_packet_in_limit(limit);
    }
    let mut hello = Vec::new();
    ofp::encode(SWITCH_XID, &Message::Hello(Hello::v13()), &mut hello);
    connection.outbox.reply(&hello);
    shared.lock().roles.connect(conn, mastership);
    shared.register(Arc::clone(&connection));
    let counted = serve(shared, &connection, &socket, active).await;
    connection.outbox.close();
    shared.unregister(conn);
    // No other thread serves the input once it holds the lock after the connection left the
    // registry and was marked ended.
    connection.ended.store(true, Ordering::Release);
    drop(connection.lock_input());
    if counted {
        shared.controllers.fetch_sub(1, Ordering::Relaxed);
    }
    shared.lock().roles.disconnect(conn);
    // `socket` closes here, after every writer and reader of it stopped.
}

/// Waits (a second at most) until the outbox is sent.
async fn drain(socket: &OwnedFd, outbox: &Outbox) {
    let deadline = Instant::now() + std::time::Duration::from_secs(1);
    while outbox.flush() == Flushed::Blocked {
        let room = tokio::time::timeout_at(deadline, writable(socket)).await;
        if !matches!(room, Ok(Ok(()))) {
            return;
        }
    }
}

/// Registers a duplicate of `socket`'s descriptor for `interest` alone (a registration
/// for both would wake a unix socket's reader each time its peer reads). A fresh
/// registration reports a socket that is ready already.
fn watch(socket: &OwnedFd, interest: Interest) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` owns the duplicate, so it stays open for as long as it is
    // registered.
    unsafe { AsyncFd::register_with_interest(socket.try_clone()?, interest) }
        .map_err(io::Error::from)
}

/// Waits until the socket can take more bytes, watching it for as long as the wait lasts.
async fn writable(socket: &OwnedFd) -> io::Result<()> {
    watch(socket, Interest::WRITABLE)?
        .writable()
        .await?
        .retain_ready();
    Ok(())
}

/// Waits until the watched socket has input; never, while nothing watches it.
async fn readable(
    watching: Option<&AsyncFd<OwnedFd>>,
) -> io::Result<AsyncFdReadyGuard<'_, OwnedFd>> {
    match watching {
        Some(socket) => socket.readable().await,
        None => std::future::pending().await,
    }
}

/// The connection's loop; returns whether it was counted as a connected controller.
async fn serve(
    shared: &Arc<Shared>,
    connection: &Connection,
    socket: &OwnedFd,
    active: bool,
) -> bool {
    let outbox = &connection.outbox;
    let probe = shared.config.inactivity_probe;
    let mut last_heard = Instant::now();
    let mut heard = connection.heard.load(Ordering::Relaxed);
    let mut probed = false;
    let mut counted = false;
    // The socket, watched for input while no thread that never sleeps serves it.
    let mut watching: Option<AsyncFd<OwnedFd>> = None;

    while !connection.ended.load(Ordering::Acquire) {
        if active && !counted && connection.lock_input().session.negotiated() {
            counted = true;
            shared.controllers.fetch_add(1, Ordering::Relaxed);
        }
        let blocked = outbox.blocked();
        if !blocked && connection.lock_input().holds_message() {
            // Requests left when a batch stopped at the backlog limit, here or on a datapath
            // thread: served from the input buffer, nothing read.
            let served = connection.serve(shared, &mut connection.lock_input(), |_| {
                Err(io::ErrorKind::WouldBlock.into())
            });
            if served == Served::End {
                drain(socket, outbox).await;
                break;
            }
            continue;
        }
        let deadline = last_heard + if probed { probe * 2 } else { probe };
        let now = switch_core::clock::now_ns();
        let taken = shared.input_taken(now);
        if taken.is_some() {
            watching = None;
        } else if watching.is_none() {
            let Ok(watched) = watch(socket, Interest::READABLE) else {
                break;
            };
            watching = Some(watched);
        }
        let handback = Instant::now() + Duration::from_nanos(taken.map_or(0, |until| until - now));
        tokio::select! {
            ready = readable(watching.as_ref()), if !blocked && taken.is_none() => {
                let Ok(mut guard) = ready else { break };
                if shared.input_taken(switch_core::clock::now_ns()).is_some() {
                    // Taken while the task waited: the thread that took it reads it.
                    continue;
                }
                let mut would_block = false;
                let served = connection.serve_readable(shared, &mut would_block);
                if would_block {
                    // Nothing there (another thread read it first): wait for the next edge.
                    guard.clear_ready();
                }
                if served == Served::End {
                    // The last replies (a failed hello's error) go out before the close.
                    drain(socket, outbox).await;
                    break;
                }
            }
            ready = writable(socket), if blocked => {
                if ready.is_err() || outbox.flush() == Flushed::Failed {
                    break;
                }
            }
            // Another thread left bytes the socket could not take, or ended the connection:
            // look again.
            _ = outbox.wake.notified() => {}
            // The thread that took the input stops serving it soon: watch the socket again.
            _ = tokio::time::sleep_until(handback), if taken.is_some() => {}
            _ = tokio::time::sleep_until(deadline) => {
                let now_heard = connection.heard.load(Ordering::Relaxed);
                if now_heard != heard {
                    // Another thread read from the peer meanwhile.
                    heard = now_heard;
                    last_heard = Instant::now();
                    probed = false;
                    continue;
                }
                if probed {
                    break;
                }
                probed = true;
                let mut echo = Vec::new();
                ofp::encode(SWITCH_XID, &Message::EchoRequest(Vec::new()), &mut echo);
                outbox.reply(&echo);
            }
        }
        let now_heard = connection.heard.load(Ordering::Relaxed);
        if now_heard != heard {
            heard = now_heard;
            last_heard = Instant::now();
            probed = false;
        }
    }
    // Ended by another thread: what is queued (a failed hello's error) still goes out.
    drain(socket, outbox).await;
    counted
}
