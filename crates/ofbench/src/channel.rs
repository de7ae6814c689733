//! The controller's end of one OpenFlow 1.3 connection: accept, handshake, send several
//! messages in one write, and receive messages with the kernel's arrival timestamp. Echo
//! requests are answered inside [`Channel::recv`], so callers see only what they asked for.

use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use ofp::{Header, Hello, Message};

use crate::clock::{self, Nanos};

/// How long a blocking receive waits before [`Channel::recv`] returns `None`, so loops can
/// look at their stop flag.
const POLL: Duration = Duration::from_millis(100);

/// One message and the time its last byte arrived at the controller's socket.
pub struct Received {
    pub header: Header,
    pub msg: Message,
    pub at: Nanos,
}

/// Receive buffer size: a burst of packet-ins fits many times over.
const BUF: usize = 4 << 20;

pub struct Channel {
    stream: TcpStream,
    buf: Box<[u8]>,
    /// `buf[start..end]` holds bytes received and not yet handed out as messages.
    start: usize,
    end: usize,
    /// Kernel timestamp of the last read.
    stamp: Nanos,
    next_xid: u32,
}

impl Channel {
    /// Waits up to `wait` for the switch to connect.
    pub fn accept(listener: &TcpListener, wait: Duration) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let deadline = Instant::now() + wait;
        let stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the switch did not connect to the controller",
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        };
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        clock::enable_rx_timestamps(stream.as_raw_fd())?;
        clock::set_recv_timeout(stream.as_raw_fd(), POLL)?;
        Ok(Self {
            stream,
            buf: vec![0; BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            stamp: 0,
            next_xid: 1,
        })
    }

    /// HELLO and FEATURES; returns the datapath id.
    pub fn handshake(&mut self) -> io::Result<u64> {
        let mut out = Vec::new();
        self.encode(&Message::Hello(Hello::v13()), &mut out);
        self.encode(&Message::FeaturesRequest, &mut out);
        self.send(&out)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(r) = self.recv()? {
                if let Message::FeaturesReply(f) = r.msg {
                    return Ok(f.datapath_id);
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no FEATURES_REPLY from the switch",
        ))
    }

    /// Appends `msg` with a fresh xid to `out`.
    pub fn encode(&mut self, msg: &Message, out: &mut Vec<u8>) {
        ofp::encode(self.next_xid, msg, out);
        self.next_xid = self.next_xid.wrapping_add(1);
    }

    /// Writes `bytes` (any number of messages) at once.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends `msgs` and a barrier, and waits for the barrier's reply; an error reply to any
    /// of them fails.
    pub fn transact(&mut self, msgs: &[Message]) -> io::Result<()> {
        let mut out = Vec::new();
        for msg in msgs {
            self.encode(msg, &mut out);
        }
        let xid = self.next_xid;
        self.encode(&Message::BarrierRequest, &mut out);
        self.send(&out)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            match self.recv()? {
                Some(Received {
                    msg: Message::Error(e),
                    ..
                }) => {
                    return Err(io::Error::other(format!("the switch refused: {e:?}")));
                }
                Some(r) if r.header.xid == xid && matches!(r.msg, Message::BarrierReply) => {
                    return Ok(());
                }
                _ => {}
            }
        }
        Err(io::Error::new(io::ErrorKind::TimedOut, "no BARRIER_REPLY"))
    }

    /// Whether a whole message waits in the buffer (the next [`Self::recv`] will not block).
    pub fn has_buffered(&self) -> bool {
        let rest = &self.buf[self.start..self.end];
        ofp::peek_message_len(rest).is_some_and(|len| len <= rest.len())
    }

    /// The next message, or `None` when nothing arrived for a short while. Echo requests are
    /// answered here.
    pub fn recv(&mut self) -> io::Result<Option<Received>> {
        loop {
            if let Some(r) = self.take()? {
                if let Message::EchoRequest(data) = r.msg {
                    let mut out = Vec::new();
                    ofp::encode(r.header.xid, &Message::EchoReply(data), &mut out);
                    self.send(&out)?;
                    continue;
                }
                return Ok(Some(r));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Decodes the message at the front of the buffer, if it is whole.
    fn take(&mut self) -> io::Result<Option<Received>> {
        let rest = &self.buf[self.start..self.end];
        let Some(len) = ofp::peek_message_len(rest).filter(|&len| len <= rest.len()) else {
            return Ok(None);
        };
        if len < ofp::OFP_HEADER_LEN {
            return Err(io::Error::other(
                "the switch sent a message shorter than its header",
            ));
        }
        let decoded = ofp::decode(&rest[..len]);
        self.start += len;
        match decoded {
            Ok((header, msg)) => Ok(Some(Received {
                header,
                msg,
                at: self.stamp,
            })),
            Err(e) => Err(io::Error::other(format!(
                "the switch sent a message that does not decode: {e}"
            ))),
        }
    }

    /// Reads more bytes; false when the read timed out.
    fn fill(&mut self) -> io::Result<bool> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end > BUF / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        match clock::recv_stamped(self.stream.as_raw_fd(), &mut self.buf[self.end..]) {
            Ok((0, _)) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the switch closed the connection",
            )),
            Ok((n, stamp)) => {
                self.end += n;
                self.stamp = stamp;
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}
