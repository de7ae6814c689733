//! The controllet's OpenFlow 1.3 channel to its switch: a connection like any controller's
//! (its own role and async configuration), started by the controllet over the unix socket or
//! TCP address hairpind gives it.
//!
//! The channel splits into a [`Sender`] (cloneable; one write per message, no batching delay)
//! and a [`Receiver`] that decodes what the switch sends and answers its echo requests itself,
//! so a controllet that is busy on the bus is never dropped as dead.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use ofp::{Header, Hello, Message, SwitchFeatures, OFP_HEADER_LEN};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

use crate::env::Channel;
use crate::socket;

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// Sends messages to the switch; clones share the connection and the xid counter.
#[derive(Clone)]
pub struct Sender {
    writer: Arc<Mutex<Writer>>,
    next_xid: Arc<AtomicU32>,
}

impl Sender {
    /// A fresh transaction id.
    pub fn xid(&self) -> u32 {
        self.next_xid.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `msg` with a fresh xid, which it returns.
    pub async fn send(&self, msg: &Message) -> io::Result<u32> {
        let xid = self.xid();
        self.send_xid(xid, msg).await?;
        Ok(xid)
    }

    /// Sends `msg` with `xid` (a reply to the switch, or a caller's own numbering).
    pub async fn send_xid(&self, xid: u32, msg: &Message) -> io::Result<()> {
        let mut out = Vec::with_capacity(128);
        ofp::encode(xid, msg, &mut out);
        self.send_raw(&out).await
    }

    /// Sends several messages in one write (each with a fresh xid).
    pub async fn send_all(&self, msgs: &[Message]) -> io::Result<()> {
        let mut out = Vec::with_capacity(128 * msgs.len());
        for msg in msgs {
            ofp::encode(self.xid(), msg, &mut out);
        }
        self.send_raw(&out).await
    }

    /// Writes already-encoded messages.
    pub async fn send_raw(&self, bytes: &[u8]) -> io::Result<()> {
        let mut writer = self.writer.lock().await;
        writer.write_all(bytes).await?;
        writer.flush().await
    }
}

/// Receives and decodes the switch's messages.
pub struct Receiver {
    reader: Reader,
    buf: Vec<u8>,
    /// Bytes of `buf` already handed out.
    start: usize,
    echo: Sender,
}

impl Receiver {
    /// The next message from the switch; echo requests are answered here and not returned.
    /// `Ok(None)` when the switch closed the channel.
    pub async fn recv(&mut self) -> io::Result<Option<(Header, Message)>> {
        loop {
            match self.next_frame()? {
                Some((header, Message::EchoRequest(data))) => {
                    self.echo
                        .send_xid(header.xid, &Message::EchoReply(data))
                        .await?;
                }
                Some(message) => return Ok(Some(message)),
                None => {
                    if self.start > 0 {
                        self.buf.drain(..self.start);
                        self.start = 0;
                    }
                    if self.reader.read_buf(&mut self.buf).await? == 0 {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The next whole message in the buffer, decoded.
    fn next_frame(&mut self) -> io::Result<Option<(Header, Message)>> {
        let rest = self.buf.get(self.start..).unwrap_or_default();
        let Some(len) = ofp::peek_message_len(rest) else {
            return Ok(None);
        };
        let Some(frame) = rest.get(..len) else {
            self.buf.reserve(len);
            return Ok(None);
        };
        self.start += len;
        ofp::decode(frame).map(Some).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("from the switch: {e}"))
        })
    }
}

/// A connected channel: the switch's features, and its two halves.
pub struct Switch {
    pub features: SwitchFeatures,
    pub sender: Sender,
    pub receiver: Receiver,
}

impl Switch {
    /// Connects to `channel`, exchanges HELLO (OpenFlow 1.3) and reads the switch's features.
    pub async fn connect(channel: &Channel) -> io::Result<Switch> {
        let stream = match channel {
            Channel::Unix(path) => {
                socket::Stream::Unix(tokio::net::UnixStream::connect(path).await?.into_std()?)
            }
            Channel::Tcp(addr) => {
                let stream = tokio::net::TcpStream::connect(addr.as_str()).await?;
                stream.set_nodelay(true)?;
                socket::Stream::Tcp(stream.into_std()?)
            }
        };
        let (reader, writer) = socket::split(stream)?;
        Self::handshake(Box::new(reader), Box::new(writer)).await
    }

    /// HELLO both ways, then FEATURES_REQUEST; messages before the reply are dropped (the
    /// switch sends nothing asynchronous before the handshake ends).
    pub async fn handshake(reader: Reader, writer: Writer) -> io::Result<Switch> {
        let sender = Sender {
            writer: Arc::new(Mutex::new(writer)),
            next_xid: Arc::new(AtomicU32::new(1)),
        };
        let mut receiver = Receiver {
            reader,
            buf: Vec::with_capacity(64 * 1024),
            start: 0,
            echo: sender.clone(),
        };
        sender.send(&Message::Hello(Hello::v13())).await?;
        let xid = sender.send(&Message::FeaturesRequest).await?;
        loop {
            let Some((header, msg)) = receiver.recv().await? else {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the switch closed the channel during the handshake",
                ));
            };
            match msg {
                Message::FeaturesReply(features) if header.xid == xid => {
                    return Ok(Switch {
                        features,
                        sender,
                        receiver,
                    })
                }
                Message::Error(e) => {
                    return Err(io::Error::other(format!(
                        "the switch refused the handshake: {e:?}"
                    )))
                }
                _ => {}
            }
        }
    }
}

/// Bytes of an OpenFlow header, for callers that frame messages themselves.
pub const HEADER_LEN: usize = OFP_HEADER_LEN;

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake switch on the other end of a socket pair: answers HELLO and FEATURES, sends an
    /// echo request and a port status, and records what the controllet sent.
    #[tokio::test]
    async fn handshake_echo_and_messages() {
        let (ours, theirs) = tokio::net::UnixStream::pair().unwrap();
        let fake = tokio::spawn(async move {
            let (mut r, mut w) = theirs.into_split();
            let mut out = Vec::new();
            ofp::encode(0, &Message::Hello(Hello::v13()), &mut out);
            w.write_all(&out).await.unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0u8; 4096];
            let mut replied = false;
            loop {
                let n = r.read(&mut buf).await.unwrap();
                if n == 0 {
                    return got;
                }
                got.extend_from_slice(&buf[..n]);
                let mut rest = &got[..];
                let mut msgs = Vec::new();
                while let Some(len) = ofp::peek_message_len(rest).filter(|&l| l <= rest.len()) {
                    msgs.push(ofp::decode(&rest[..len]).unwrap());
                    rest = &rest[len..];
                }
                let features = msgs
                    .iter()
                    .find(|(_, m)| matches!(m, Message::FeaturesRequest));
                if let (Some((h, _)), false) = (features, replied) {
                    replied = true;
                    let mut out = Vec::new();
                    let reply = SwitchFeatures {
                        datapath_id: 0x2a,
                        n_buffers: 0,
                        n_tables: 254,
                        auxiliary_id: 0,
                        capabilities: 0,
                        reserved: 0,
                    };
                    ofp::encode(h.xid, &Message::FeaturesReply(reply), &mut out);
                    ofp::encode(77, &Message::EchoRequest(b"ping".to_vec()), &mut out);
                    ofp::encode(0, &Message::BarrierReply, &mut out);
                    w.write_all(&out).await.unwrap();
                }
                if msgs
                    .iter()
                    .any(|(h, m)| h.xid == 77 && matches!(m, Message::EchoReply(d) if d == b"ping"))
                {
                    return got;
                }
            }
        });
        let (r, w) = ours.into_split();
        let mut switch = Switch::handshake(Box::new(r), Box::new(w)).await.unwrap();
        assert_eq!(switch.features.datapath_id, 0x2a);
        // The echo request is answered inside recv; the barrier reply comes out.
        let (_, msg) = switch.receiver.recv().await.unwrap().unwrap();
        assert!(matches!(msg, Message::BarrierReply), "{msg:?}");
        fake.await.unwrap();
    }
}
