//! The I/O side of one connection: framing, batching, echo probes, and the asynchronous
//! messages the connection subscribes to.

use std::sync::atomic::Ordering;

use ofp::{Hello, Message, OFP_HEADER_LEN};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::roles::ConnId;
use crate::session::{Outcome, Session};
use crate::Shared;

/// Read buffer growth step; a burst of small flow-mods fills it in one syscall.
const READ_CHUNK: usize = 256 * 1024;
/// xid of messages the switch starts (hello, echo probes).
const SWITCH_XID: u32 = 0;

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

/// Decodes and handles every complete message at the front of `buf`, under one lock.
/// Returns how many bytes were consumed, or `None` when the stream cannot be framed any more.
fn handle_batch(
    shared: &Shared,
    session: &mut Session,
    buf: &[u8],
    out: &mut Vec<u8>,
    events: &mut Vec<crate::session::Event>,
    close: &mut bool,
) -> Option<usize> {
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
            for (xid, msg) in &outcome.replies {
                encode_into(out, *xid, msg);
            }
            return None;
        }
        let Some(raw) = rest.get(..len) else {
            break;
        };
        consumed += len;
        let now = switch_core::clock::now_ns();
        let outcome: Outcome = match ofp::decode(raw) {
            Ok((header, msg)) => {
                let state = state.get_or_insert_with(|| shared.lock());
                session.on_message(state, &header, msg, raw, now)
            }
            Err(e) => session.on_decode_error(e.xid, e.error, raw),
        };
        for (xid, msg) in &outcome.replies {
            encode_into(out, *xid, msg);
        }
        events.extend(outcome.events);
        if outcome.close {
            *close = true;
            break;
        }
    }
    Some(consumed)
}

/// Serves one connection until the peer leaves, fails the handshake, or stops answering.
pub(crate) async fn run<S>(shared: &Shared, conn: ConnId, stream: S, active: bool)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut reader, mut writer) = tokio::io::split(stream);
    let mut events_rx = shared.events.subscribe();
    let mut session = Session::new(conn);
    shared.lock().roles.connect(conn);

    let mut out = Vec::with_capacity(4096);
    ofp::encode(SWITCH_XID, &Message::Hello(Hello::v13()), &mut out);
    let mut inbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let probe = shared.config.inactivity_probe;
    let mut last_heard = Instant::now();
    let mut probed = false;
    let mut counted = false;

    'conn: loop {
        if !out.is_empty() {
            if writer.write_all(&out).await.is_err() {
                break;
            }
            out.clear();
        }
        if active && session.negotiated() && !counted {
            counted = true;
            shared.controllers.fetch_add(1, Ordering::Relaxed);
        }
        let deadline = last_heard + if probed { probe * 2 } else { probe };
        tokio::select! {
            read = reader.read_buf(&mut inbuf) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                last_heard = Instant::now();
                probed = false;
                let mut events = Vec::new();
                let mut close = false;
                let consumed = handle_batch(shared, &mut session, &inbuf, &mut out, &mut events, &mut close);
                for event in events {
                    let _ = shared.events.send(event);
                }
                match consumed {
                    Some(n) => { inbuf.drain(..n); }
                    None => close = true,
                }
                if close {
                    let _ = writer.write_all(&out).await;
                    break 'conn;
                }
                if inbuf.capacity() - inbuf.len() < OFP_HEADER_LEN {
                    inbuf.reserve(READ_CHUNK);
                }
            }
            event = events_rx.recv() => {
                match event {
                    Ok(event) => {
                        let role = shared.lock().roles.role(conn);
                        if session.wants(role, &event) {
                            ofp::encode(SWITCH_XID, &event.into_message(), &mut out);
                        }
                    }
                    // Lagging behind a packet-in storm drops the oldest events, as a
                    // congested OpenFlow channel would.
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => break,
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                if probed {
                    break;
                }
                probed = true;
                ofp::encode(SWITCH_XID, &Message::EchoRequest(Vec::new()), &mut out);
            }
        }
    }
    if counted {
        shared.controllers.fetch_sub(1, Ordering::Relaxed);
    }
    shared.lock().roles.disconnect(conn);
}
