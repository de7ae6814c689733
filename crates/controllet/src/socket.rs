//! The channel's socket, registered with the runtime for readability alone.
//!
//! Tokio's own streams register for readability and writability. On a unix socket the kernel
//! then signals writability each time the switch reads what the controllet wrote, which wakes
//! the controllet's thread for nothing after every packet-out; on a core the controllet
//! shares with a polling datapath thread, that wake-up preempts the switch between reading
//! the packet-out and sending its frame. Here a write goes straight to the socket, and only a
//! writer the socket cannot take registers (a duplicate of the descriptor) for writability,
//! for as long as it waits.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// A connected, non-blocking stream socket.
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => (&*s).read(buf),
            Stream::Tcp(s) => (&*s).read(buf),
        }
    }

    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => (&*s).write(buf),
            Stream::Tcp(s) => (&*s).write(buf),
        }
    }

    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    fn shutdown_write(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// Splits `stream` (non-blocking) into its reading and writing halves.
pub fn split(stream: Stream) -> io::Result<(ReadHalf, WriteHalf)> {
    let socket = Arc::new(register(stream, Interest::READABLE)?);
    Ok((
        ReadHalf(Arc::clone(&socket)),
        WriteHalf {
            socket,
            waiter: None,
        },
    ))
}

fn register(stream: Stream, interest: Interest) -> io::Result<AsyncFd<Stream>> {
    // SAFETY: the `AsyncFd` owns the socket, so its descriptor stays open and the same for
    // as long as it is registered.
    unsafe { AsyncFd::register_with_interest(stream, interest) }.map_err(io::Error::from)
}

/// Reads as the runtime reports the socket readable.
pub struct ReadHalf(Arc<AsyncFd<Stream>>);

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard.try_io(|socket| socket.get_ref().read(unfilled)) {
                Ok(read) => {
                    buf.advance(read?);
                    return Poll::Ready(Ok(()));
                }
                Err(_would_block) => continue,
            }
        }
    }
}

/// Writes straight to the socket; waits for room only when the socket has none.
pub struct WriteHalf {
    socket: Arc<AsyncFd<Stream>>,
    /// The registration for writability while a write waits for room.
    waiter: Option<AsyncFd<Stream>>,
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.socket.get_ref().write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                written => {
                    self.waiter = None;
                    return Poll::Ready(written);
                }
            }
            if self.waiter.is_none() {
                // A fresh registration reports a socket that has room already.
                let dup = self.socket.get_ref().try_clone()?;
                self.waiter = Some(register(dup, Interest::WRITABLE)?);
            }
            if let Some(waiter) = &self.waiter {
                ready!(waiter.poll_write_ready(cx))?.clear_ready();
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.socket.get_ref().shutdown_write())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A write larger than the socket's buffer waits for the peer to read, then completes;
    /// every byte arrives in order.
    #[tokio::test]
    async fn a_write_the_socket_cannot_take_waits_for_room() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        theirs.set_nonblocking(true).unwrap();
        let (_, mut writer) = split(Stream::Unix(ours)).unwrap();
        let (mut reader, _keep) = split(Stream::Unix(theirs)).unwrap();
        let sent: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
        let expected = sent.clone();
        let writing = tokio::spawn(async move {
            writer.write_all(&sent).await.unwrap();
            writer.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        reader.read_to_end(&mut got).await.unwrap();
        writing.await.unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected);
    }
}
