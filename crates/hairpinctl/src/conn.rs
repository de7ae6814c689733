//! An OpenFlow 1.3 connection to the switch: HELLO handshake, requests with replies,
//! multipart replies reassembled across REPLY_MORE messages, barriers that collect the
//! errors of everything sent before them, and echo requests answered on the way.

use std::io::{self, BufWriter, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread;
use std::time::Duration;

use ofp::{
    Header, Hello, Message, MultipartReplyBody, MultipartRequest, MultipartRequestBody, OfpError,
    OFP13_VERSION_BIT, OFPMPF_REPLY_MORE, OFP_HEADER_LEN, OFP_VERSION,
};

use crate::error::CtlError;
use crate::target::{Stream, Target};

/// A frame read by the reader thread, or why reading stopped.
type Frame = io::Result<Vec<u8>>;

/// An open, handshaken connection.
pub struct Connection {
    writer: BufWriter<Stream>,
    incoming: Receiver<Frame>,
    next_xid: u32,
    timeout: Duration,
}

impl Drop for Connection {
    /// Closes the socket so the reader thread ends and the switch sees the close.
    fn drop(&mut self) {
        let _ = self.writer.flush();
        let _ = self.writer.get_ref().shutdown();
    }
}

/// Reads whole OpenFlow frames until the stream ends or the receiver goes away.
fn read_frames(mut stream: Stream, frames: Sender<Frame>) {
    loop {
        let mut header = [0u8; OFP_HEADER_LEN];
        if let Err(e) = stream.read_exact(&mut header) {
            let _ = frames.send(Err(e));
            return;
        }
        let len = ofp::peek_message_len(&header).unwrap_or(OFP_HEADER_LEN);
        let mut frame = header.to_vec();
        frame.resize(len, 0);
        let body = frame.get_mut(OFP_HEADER_LEN..).unwrap_or_default();
        if let Err(e) = stream.read_exact(body) {
            let _ = frames.send(Err(e));
            return;
        }
        if frames.send(Ok(frame)).is_err() {
            return;
        }
    }
}

/// Appends a continuation of a multipart reply to what came before.
fn append_part(acc: &mut MultipartReplyBody, part: MultipartReplyBody) -> Result<(), CtlError> {
    use MultipartReplyBody as B;
    match (acc, part) {
        (B::Flow(a), B::Flow(b)) => a.extend(b),
        (B::Table(a), B::Table(b)) => a.extend(b),
        (B::PortStats(a), B::PortStats(b)) => a.extend(b),
        (B::Queue(a), B::Queue(b)) => a.extend(b),
        (B::Group(a), B::Group(b)) => a.extend(b),
        (B::GroupDesc(a), B::GroupDesc(b)) => a.extend(b),
        (B::Meter(a), B::Meter(b)) => a.extend(b),
        (B::MeterConfig(a), B::MeterConfig(b)) => a.extend(b),
        (B::TableFeatures(a), B::TableFeatures(b)) => a.extend(b),
        (B::PortDesc(a), B::PortDesc(b)) => a.extend(b),
        (B::Experimenter { data: a, .. }, B::Experimenter { data: b, .. }) => a.extend(b),
        (acc, part) => {
            return Err(CtlError::Protocol(format!(
                "multipart reply of type {} continued with type {}",
                acc.multipart_type(),
                part.multipart_type()
            )))
        }
    }
    Ok(())
}

impl Connection {
    /// Connects to `target` and completes the HELLO exchange.
    pub fn open(target: &Target, timeout: Duration) -> Result<Connection, CtlError> {
        let stream = Stream::connect(target)
            .map_err(|e| CtlError::Io(format!("cannot connect to {target}: {e}")))?;
        Connection::handshake(stream, timeout)
    }

    /// Starts the reader thread on `stream` and exchanges HELLOs.
    pub fn handshake(stream: Stream, timeout: Duration) -> Result<Connection, CtlError> {
        let reader = stream
            .try_clone()
            .map_err(|e| CtlError::Io(format!("cannot clone the connection: {e}")))?;
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || read_frames(reader, tx));
        let mut conn = Connection {
            writer: BufWriter::with_capacity(64 * 1024, stream),
            incoming: rx,
            next_xid: 1,
            timeout,
        };
        conn.send(&Message::Hello(Hello::v13()))?;
        conn.flush()?;
        loop {
            let (header, msg) = conn.receive()?;
            match msg {
                Message::Hello(hello) => {
                    let speaks_13 = match hello.version_bitmap() {
                        Some(words) => words.first().is_some_and(|w| w & OFP13_VERSION_BIT != 0),
                        None => header.version >= OFP_VERSION,
                    };
                    if !speaks_13 {
                        return Err(CtlError::Protocol(format!(
                            "the switch does not speak OpenFlow 1.3 (its HELLO has version {})",
                            header.version
                        )));
                    }
                    return Ok(conn);
                }
                Message::Error(e) => return Err(CtlError::switch(e.error)),
                _ => {}
            }
        }
    }

    fn io_error(e: io::Error) -> CtlError {
        CtlError::Io(format!("connection to the switch failed: {e}"))
    }

    /// Queues `msg` with a fresh xid, which it returns. Call [`Connection::flush`] to send.
    pub fn send(&mut self, msg: &Message) -> Result<u32, CtlError> {
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        self.send_with_xid(xid, msg)?;
        Ok(xid)
    }

    fn send_with_xid(&mut self, xid: u32, msg: &Message) -> Result<(), CtlError> {
        self.writer
            .write_all(&ofp::encode_to_vec(xid, msg))
            .map_err(Connection::io_error)
    }

    pub fn flush(&mut self) -> Result<(), CtlError> {
        self.writer.flush().map_err(Connection::io_error)
    }

    /// Decodes a frame, answering an echo request on the spot (then `None`).
    fn accept(&mut self, frame: Frame) -> Result<Option<(Header, Message)>, CtlError> {
        let frame = frame.map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => CtlError::Io("the switch closed the connection".into()),
            _ => Connection::io_error(e),
        })?;
        let (header, msg) = ofp::decode(&frame)
            .map_err(|e| CtlError::Protocol(format!("undecodable message from the switch: {e}")))?;
        if let Message::EchoRequest(data) = msg {
            self.send_with_xid(header.xid, &Message::EchoReply(data))?;
            self.flush()?;
            return Ok(None);
        }
        Ok(Some((header, msg)))
    }

    /// The next message other than an echo request, waiting at most the timeout.
    fn receive(&mut self) -> Result<(Header, Message), CtlError> {
        loop {
            let frame = match self.incoming.recv_timeout(self.timeout) {
                Ok(frame) => frame,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CtlError::Timeout(format!(
                        "no answer from the switch within {:?}",
                        self.timeout
                    )))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CtlError::Io("the connection reader stopped".into()))
                }
            };
            if let Some(message) = self.accept(frame)? {
                return Ok(message);
            }
        }
    }

    /// Sends `msg` and returns the reply with the same xid; OFPT_ERROR becomes an error.
    pub fn request(&mut self, msg: &Message) -> Result<Message, CtlError> {
        let xid = self.send(msg)?;
        self.flush()?;
        loop {
            let (header, reply) = self.receive()?;
            if header.xid != xid {
                continue;
            }
            return match reply {
                Message::Error(e) => Err(CtlError::switch(e.error)),
                reply => Ok(reply),
            };
        }
    }

    /// Sends a multipart request and returns the whole reply, joined across REPLY_MORE parts.
    pub fn multipart(
        &mut self,
        body: MultipartRequestBody,
    ) -> Result<MultipartReplyBody, CtlError> {
        let xid = self.send(&Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body,
        }))?;
        self.flush()?;
        let mut joined: Option<MultipartReplyBody> = None;
        loop {
            let (header, reply) = self.receive()?;
            if header.xid != xid {
                continue;
            }
            let part = match reply {
                Message::MultipartReply(part) => part,
                Message::Error(e) => return Err(CtlError::switch(e.error)),
                other => {
                    return Err(CtlError::Protocol(format!(
                        "expected a multipart reply, got message type {}",
                        other.msg_type()
                    )))
                }
            };
            let more = part.flags & OFPMPF_REPLY_MORE != 0;
            match joined.as_mut() {
                Some(acc) => append_part(acc, part.body)?,
                None => joined = Some(part.body),
            }
            if !more {
                return joined.ok_or_else(|| CtlError::Protocol("empty multipart reply".into()));
            }
        }
    }

    /// Errors that have already arrived, without waiting (for long batches).
    pub fn pending_errors(&mut self) -> Result<Vec<(u32, OfpError)>, CtlError> {
        let mut errors = Vec::new();
        loop {
            match self.incoming.try_recv() {
                Ok(frame) => {
                    if let Some((header, Message::Error(e))) = self.accept(frame)? {
                        errors.push((header.xid, e.error));
                    }
                }
                Err(TryRecvError::Empty) => return Ok(errors),
                Err(TryRecvError::Disconnected) => {
                    return Err(CtlError::Io("the connection reader stopped".into()))
                }
            }
        }
    }

    /// Sends a barrier and waits for its reply; returns the errors (with their xids) that
    /// arrived before it, i.e. those of the messages sent before the barrier.
    pub fn barrier(&mut self) -> Result<Vec<(u32, OfpError)>, CtlError> {
        let xid = self.send(&Message::BarrierRequest)?;
        self.flush()?;
        let mut errors = Vec::new();
        loop {
            match self.receive()? {
                (header, Message::BarrierReply) if header.xid == xid => return Ok(errors),
                (header, Message::Error(e)) if header.xid == xid => {
                    return Err(CtlError::switch(e.error))
                }
                (header, Message::Error(e)) => errors.push((header.xid, e.error)),
                _ => {}
            }
        }
    }
}
