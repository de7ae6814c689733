//! Thin, documented wrappers around the raw system calls the ports need.
//!
//! Every `unsafe` block of the crate that talks to the kernel lives here (the ring
//! accessors in `afpacket` are the only other place), and every failure becomes an
//! `io::Error` that names the operation and the interface it concerned.

use std::ffi::c_void;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

/// `ioctl` request numbers from `<linux/sockios.h>` (identical on every Linux architecture).
pub(crate) const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
pub(crate) const SIOCSIFFLAGS: libc::c_ulong = 0x8914;
pub(crate) const SIOCGIFMTU: libc::c_ulong = 0x8921;
pub(crate) const SIOCGIFHWADDR: libc::c_ulong = 0x8927;
pub(crate) const SIOCGIFINDEX: libc::c_ulong = 0x8933;
pub(crate) const SIOCETHTOOL: libc::c_ulong = 0x8946;

/// Wraps the current `errno` with a description of what was being attempted.
pub(crate) fn last_error(what: impl std::fmt::Display) -> io::Error {
    with_context(io::Error::last_os_error(), what)
}

/// Adds context to an error while keeping its kind (and so `raw_os_error` users can
/// still match on the kind).
pub(crate) fn with_context(err: io::Error, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

/// Creates a socket with close-on-exec set.
pub(crate) fn socket(domain: i32, ty: i32, protocol: i32, what: &str) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes plain integers; a non-negative result is a fresh fd we own.
    let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, protocol) };
    if fd < 0 {
        return Err(last_error(what));
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens a file path with the given flags (close-on-exec added).
pub(crate) fn open(path: &std::ffi::CStr, flags: i32, what: &str) -> io::Result<OwnedFd> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last_error(what));
    }
    // SAFETY: fresh fd returned by the kernel, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Marker for C structures that the kernel reads or fills in by value: plain data with
/// no pointers to Rust memory and for which every bit pattern is a valid value.
///
/// # Safety
/// Implement only for `#[repr(C)]` integer-only structures (or integers).
pub(crate) unsafe trait Plain: Copy {}
// SAFETY: an integer.
unsafe impl Plain for libc::c_int {}
// SAFETY: a repr(C) struct of four u32s.
unsafe impl Plain for libc::tpacket_req3 {}
// SAFETY: a repr(C) struct of three u32s.
unsafe impl Plain for libc::tpacket_stats_v3 {}
// SAFETY: a repr(C) struct of integers and a byte array (the multicast address).
unsafe impl Plain for libc::packet_mreq {}
// SAFETY: a repr(C) struct of integers and a byte array (the hardware address).
unsafe impl Plain for libc::sockaddr_ll {}
// SAFETY: a repr(C) struct of integers (family, padding, port id, groups).
unsafe impl Plain for libc::sockaddr_nl {}

/// `setsockopt` with a by-value option structure.
pub(crate) fn setsockopt<T: Plain>(
    fd: RawFd,
    level: i32,
    name: i32,
    value: &T,
    what: &str,
) -> io::Result<()> {
    // SAFETY: `value` points to `size_of::<T>()` readable bytes of plain data.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast::<c_void>(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(last_error(what));
    }
    Ok(())
}

/// `getsockopt` into a plain option structure, starting from `initial`.
pub(crate) fn getsockopt<T: Plain>(
    fd: RawFd,
    level: i32,
    name: i32,
    initial: T,
    what: &str,
) -> io::Result<T> {
    let mut value = initial;
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a writable `T` of `len` bytes; any bit pattern is valid for `T`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut T).cast::<c_void>(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(last_error(what));
    }
    Ok(value)
}

/// `bind` to a plain socket address structure.
pub(crate) fn bind<T: Plain>(fd: RawFd, addr: &T, what: &str) -> io::Result<()> {
    // SAFETY: `addr` points to a complete sockaddr structure of the stated size.
    let rc = unsafe {
        libc::bind(
            fd,
            (addr as *const T).cast::<libc::sockaddr>(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(last_error(what));
    }
    Ok(())
}

/// `read` into `buf`; `Ok(None)` when a non-blocking fd has nothing waiting.
pub(crate) fn read_some(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is a valid writable region of `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast::<c_void>(), buf.len()) };
    if n < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(err),
        };
    }
    Ok(Some(n as usize))
}

/// `write` of one whole buffer; returns the byte count the kernel accepted.
pub(crate) fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid readable region of `buf.len()` bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast::<c_void>(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `send` of one buffer (used for netlink requests).
pub(crate) fn send(fd: RawFd, buf: &[u8], what: &str) -> io::Result<()> {
    // SAFETY: `buf` is a valid readable region of `buf.len()` bytes.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast::<c_void>(), buf.len(), 0) };
    if n < 0 {
        return Err(last_error(what));
    }
    Ok(())
}

/// Asks the kernel to transmit every frame marked ready in a socket's TX ring, without
/// waiting for completion.
pub(crate) fn kick_tx(fd: RawFd) -> io::Result<()> {
    // SAFETY: a zero-length send with null buffer and address is the documented way to
    // flush a PACKET_TX_RING; no memory is read from user space.
    let rc = unsafe {
        libc::sendto(
            fd,
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The `union ifreq` payload in the forms this crate uses.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union IfReqData {
    pub(crate) int: libc::c_int,
    pub(crate) flags: libc::c_short,
    pub(crate) hwaddr: libc::sockaddr,
    pub(crate) ptr: *mut c_void,
    /// Pads the union to the kernel's 24-byte size.
    pub(crate) raw: [u8; 24],
}

/// `struct ifreq`: an interface name and one payload.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IfReq {
    pub(crate) name: [u8; libc::IFNAMSIZ],
    pub(crate) data: IfReqData,
}

impl IfReq {
    /// Builds a request for `ifname`, rejecting names the kernel could not hold.
    pub(crate) fn new(ifname: &str) -> io::Result<Self> {
        let bytes = ifname.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid interface name {ifname:?}"),
            ));
        }
        let mut name = [0u8; libc::IFNAMSIZ];
        name[..bytes.len()].copy_from_slice(bytes);
        Ok(IfReq {
            name,
            data: IfReqData { raw: [0; 24] },
        })
    }
}

/// Runs an interface `ioctl` that reads or writes `req`.
pub(crate) fn ioctl_ifreq(
    fd: RawFd,
    request: libc::c_ulong,
    req: &mut IfReq,
    what: &str,
) -> io::Result<()> {
    // SAFETY: `req` is a complete, writable `struct ifreq`; the request numbers used in
    // this crate read and write only within it (or, for SIOCETHTOOL, through the
    // `ptr` member that the caller points at a live buffer).
    let rc = unsafe { libc::ioctl(fd, request as _, req as *mut IfReq) };
    if rc < 0 {
        return Err(last_error(what));
    }
    Ok(())
}

/// A shared memory mapping of a socket's packet rings, unmapped on drop.
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; access discipline is enforced by the
// ring code that owns it (one owner, `&mut self` for every access).
unsafe impl Send for Mmap {}

impl Mmap {
    /// Maps `len` bytes of the socket's rings, populated up front.
    pub(crate) fn socket_rings(fd: &OwnedFd, len: usize, what: &str) -> io::Result<Self> {
        // SAFETY: requesting a fresh shared mapping of the socket; the kernel validates
        // the length against the rings it set up.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(last_error(what));
        }
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mmap { ptr, len })
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe exactly the mapping created in `socket_rings`,
        // and no borrow of it can outlive `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast::<c_void>(), self.len);
        }
    }
}

/// Non-blocking `recv` of one datagram; `Ok(None)` when the queue is empty.
pub(crate) fn recv_dontwait(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is a valid writable region of `buf.len()` bytes.
    let n = unsafe {
        libc::recv(
            fd,
            buf.as_mut_ptr().cast::<c_void>(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(err),
        };
    }
    Ok(Some(n as usize))
}
