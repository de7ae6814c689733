//! Times on one clock: CLOCK_REALTIME, the clock of the kernel's receive timestamps
//! (SO_TIMESTAMPNS), so a time taken by one socket's owner and a timestamp the kernel put on
//! another socket's packet can be subtracted.

use std::io;
use std::os::fd::RawFd;

/// Nanoseconds since the epoch on CLOCK_REALTIME.
pub type Nanos = u64;

fn nanos(ts: &libc::timespec) -> Nanos {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Now, read just before a send (a user-space time: it includes nothing of the send).
pub fn now() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live local.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    nanos(&ts)
}

/// Asks the kernel to stamp every packet `fd` receives with its arrival time.
pub fn enable_rx_timestamps(fd: RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: passes a live c_int and its size to setsockopt.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One receive with its kernel timestamp (of the last packet the read took, for a stream).
/// Returns the bytes read and the timestamp (0 when the kernel gave none).
pub fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Nanos)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one control message carrying a timespec, aligned as cmsghdr wants.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: `msg` points at `iov` (over `buf`) and `control`, all live for the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = 0;
    // SAFETY: the CMSG_* walk stays inside `msg.msg_control`/`msg_controllen`, which the
    // kernel filled; a SCM_TIMESTAMPNS message carries one timespec (read unaligned).
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                stamp = nanos(&ts);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

/// Sets how long a blocking receive on `fd` waits before failing with `WouldBlock`.
pub fn set_recv_timeout(fd: RawFd, timeout: std::time::Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: libc::suseconds_t::from(timeout.subsec_micros() as i32),
    };
    // SAFETY: passes a live timeval and its size to setsockopt.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
