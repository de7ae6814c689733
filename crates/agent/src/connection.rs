//! The I/O side of one connection: framing, batching, echo probes, and the connection's
//! [`Outbox`], through which its replies and every asynchronous message for it go out.
//!
//! A wake-up reads what the socket holds and handles every whole message in it under one lock;
//! the outbox batches meanwhile, so the replies (and anything other threads raise for the
//! connection in that time) leave in one write. While the socket cannot take more, the task
//! stops reading requests until the outbox drains.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ofp::{Hello, Message, OFP_HEADER_LEN};
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

use crate::outbox::{Flushed, Outbox};
use crate::roles::ConnId;
use crate::session::{Outcome, Session};
use crate::{EventSender, Shared};

/// Read buffer growth step; a burst of small flow-mods fills it in one syscall.
const READ_CHUNK: usize = 256 * 1024;
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

/// One connection's state beside its session: where its bytes go and what it raises.
struct Link<'a> {
    shared: &'a Shared,
    outbox: &'a Outbox,
    events: EventSender,
    out: Vec<u8>,
}

impl Link<'_> {
    /// Queues an outcome's replies on this connection and delivers its events to every
    /// connection (this one after the replies so far: the outbox is batching).
    fn emit(&mut self, outcome: Outcome) {
        self.out.clear();
        for (xid, msg) in &outcome.replies {
            encode_into(&mut self.out, *xid, msg);
        }
        self.outbox.reply(&self.out);
        for event in outcome.events {
            self.events.queue(event);
        }
        self.events.flush();
    }
}

/// Decodes and handles every complete message at the front of `buf`, under one lock.
/// Returns how many bytes were consumed, or `None` when the stream cannot be framed any more.
fn handle_batch(
    link: &mut Link<'_>,
    session: &mut Session,
    buf: &[u8],
    close: &mut bool,
) -> Option<usize> {
    let shared = link.shared;
    let mut consumed = 0;
    let mut state = None;
    while let Some(rest) = buf.get(consumed..) {
        let Some(len) = ofp::peek_message_len(rest) else {
            break;
        };
        let declared = rest
            .get(2..4)
            .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        if declared < OFP_HEADER_LEN {
            // The length field cannot be trusted: no later message can be found.
            let xid = rest
                .get(4..8)
                .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            let outcome = session.on_decode_error(
                xid,
                ofp::OfpError::BadRequest(ofp::BadRequestCode::BadLen),
                rest.get(..OFP_HEADER_LEN).unwrap_or(rest),
            );
            link.emit(outcome);
            return None;
        }
        let Some(raw) = rest.get(..len) else {
            break;
        };
        consumed += len;
        let now = switch_core::clock::now_ns();
        let outcome: Outcome = match ofp::decode(raw) {
            Ok((header, msg)) => {
                let refilter = match msg {
                    Message::RoleRequest(_) => Some(true),
                    Message::Hello(_) | Message::SetAsync(_) => Some(false),
                    _ => None,
                };
                let state = state.get_or_insert_with(|| shared.lock());
                let outcome = session.on_message(state, &header, msg, raw, now);
                // Events this batch raises after it already see the connection's new filter.
                if let Some(roles_changed) = refilter {
                    if roles_changed {
                        shared.refresh_roles(&state.roles);
                    }
                    let role = state.roles.role(session.conn);
                    link.outbox.set_filter(session.filter(role));
                }
                outcome
            }
            Err(e) => session.on_decode_error(e.xid, e.error, raw),
        };
        let closing = outcome.close;
        link.emit(outcome);
        if closing {
            *close = true;
            break;
        }
    }
    Some(consumed)
}

/// Reads what the socket holds into `buf`; `Ok(0)` means the peer closed.
fn read_some(fd: &OwnedFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    if buf.capacity() - buf.len() < OFP_HEADER_LEN {
        buf.reserve(READ_CHUNK);
    }
    let spare = buf.spare_capacity_mut();
    // SAFETY: reads at most `spare.len()` bytes into the vector's spare capacity, which stays
    // allocated for the call; only the bytes the kernel wrote are then marked initialised.
    let n = unsafe { libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel initialised `n` bytes past the old length.
    unsafe { buf.set_len(buf.len() + n as usize) };
    Ok(n as usize)
}

/// Serves one connection until the peer leaves, fails the handshake, or stops answering.
pub(crate) async fn run(shared: &Arc<Shared>, conn: ConnId, socket: OwnedFd, active: bool) {
    let outbox = Arc::new(Outbox::new(conn, socket.as_raw_fd()));
    // SAFETY: the `OwnedFd` moves into the `AsyncFd`, so the descriptor stays open for as
    // long as it is registered.
    let Ok(socket) = (unsafe { AsyncFd::register(socket) }) else {
        return;
    };
    shared.lock().roles.connect(conn);
    shared.register(Arc::clone(&outbox));
    let counted = serve(shared, &outbox, &socket, active).await;
    outbox.close();
    shared.unregister(conn);
    if counted {
        shared.controllers.fetch_sub(1, Ordering::Relaxed);
    }
    shared.lock().roles.disconnect(conn);
    // `socket` closes here, after the outbox stopped every writer.
}

/// Waits (a second at most) until the outbox is sent.
async fn drain(socket: &AsyncFd<OwnedFd>, outbox: &Outbox) {
    let deadline = Instant::now() + std::time::Duration::from_secs(1);
    while outbox.flush() == Flushed::Blocked {
        let writable = tokio::time::timeout_at(deadline, socket.writable()).await;
        match writable {
            Ok(Ok(mut guard)) => guard.clear_ready(),
            _ => return,
        }
    }
}

/// The connection's loop; returns whether it was counted as a connected controller.
async fn serve(
    shared: &Arc<Shared>,
    outbox: &Outbox,
    socket: &AsyncFd<OwnedFd>,
    active: bool,
) -> bool {
    let mut session = Session::new(outbox.conn);
    let mut link = Link {
        shared,
        outbox,
        events: crate::EventSender::new(Arc::clone(shared)),
        out: Vec::with_capacity(4096),
    };
    let mut hello = Vec::new();
    ofp::encode(SWITCH_XID, &Message::Hello(Hello::v13()), &mut hello);
    outbox.reply(&hello);
    let mut inbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let probe = shared.config.inactivity_probe;
    let mut last_heard = Instant::now();
    let mut probed = false;
    let mut counted = false;

    loop {
        if active && session.negotiated() && !counted {
            counted = true;
            shared.controllers.fetch_add(1, Ordering::Relaxed);
        }
        let blocked = outbox.blocked();
        let deadline = last_heard + if probed { probe * 2 } else { probe };
        tokio::select! {
            ready = socket.readable(), if !blocked => {
                let Ok(mut guard) = ready else { break };
                let read = match guard.try_io(|fd| read_some(fd.get_ref(), &mut inbuf)) {
                    Ok(read) => read,
                    Err(_would_block) => continue,
                };
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                last_heard = Instant::now();
                probed = false;
                let mut close = false;
                outbox.begin_batch();
                let consumed = handle_batch(&mut link, &mut session, &inbuf, &mut close);
                match consumed {
                    Some(n) => { inbuf.drain(..n); }
                    None => close = true,
                }
                let flushed = outbox.flush();
                if close {
                    // The last replies (a failed hello's error) go out before the close.
                    drain(socket, outbox).await;
                    break;
                }
                if flushed == Flushed::Failed {
                    break;
                }
                if inbuf.capacity() > 4 * READ_CHUNK && inbuf.len() < READ_CHUNK {
                    inbuf.shrink_to(READ_CHUNK);
                }
            }
            ready = socket.writable(), if blocked => {
                let Ok(mut guard) = ready else { break };
                match outbox.flush() {
                    Flushed::Empty => {}
                    Flushed::Blocked => guard.clear_ready(),
                    Flushed::Failed => break,
                }
            }
            // Another thread left bytes the socket could not take: look at `blocked` again.
            _ = outbox.wake.notified() => {}
            _ = tokio::time::sleep_until(deadline) => {
                if probed {
                    break;
                }
                probed = true;
                let mut echo = Vec::new();
                ofp::encode(SWITCH_XID, &Message::EchoRequest(Vec::new()), &mut echo);
                outbox.reply(&echo);
            }
        }
    }
    counted
}
