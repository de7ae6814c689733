//! Wakes idle datapath threads when control work arrives for them (a packet-out, or anything
//! else the agent hands to the datapath): an eventfd in every thread's poll set, so no control
//! action waits for a poll timeout.
//!
//! Ordering: a thread [`Doorbell::clear`]s before it takes the queued work, and the agent
//! queues work before it [`Doorbell::ring`]s; so work queued after a thread looked is always
//! followed by a ring that thread has not cleared yet, and its next poll returns at once.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// A shared eventfd; clones ring the same bell.
#[derive(Clone)]
pub struct Doorbell(Arc<OwnedFd>);

impl Doorbell {
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd takes no pointers; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor this process owns and nothing else closes.
        Ok(Self(Arc::new(unsafe { OwnedFd::from_raw_fd(fd) })))
    }

    /// Wakes every thread sleeping on the bell (and the next one to sleep).
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own. A full counter
        // (EAGAIN) means the bell already rings, which is all a ring must achieve.
        unsafe {
            libc::write(
                self.fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            );
        }
    }

    /// Silences the bell before the caller takes the work it announced.
    pub fn clear(&self) {
        let mut count: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from an eventfd we own; EAGAIN (not rung)
        // leaves it untouched.
        unsafe {
            libc::read(
                self.fd(),
                (&mut count as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            );
        }
    }

    /// The descriptor to poll: readable while the bell rings.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(bell: &Doorbell) -> bool {
        let mut pollfd = libc::pollfd {
            fd: bell.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd that outlives the call; zero timeout.
        unsafe { libc::poll(&mut pollfd, 1, 0) == 1 }
    }

    #[test]
    fn a_ring_is_seen_until_cleared_by_every_clone() {
        let bell = Doorbell::new().unwrap();
        let other = bell.clone();
        assert!(!readable(&bell));
        other.ring();
        other.ring();
        assert!(readable(&bell) && readable(&other));
        bell.clear();
        assert!(!readable(&other));
        bell.clear();
        assert!(!readable(&bell));
    }
}
