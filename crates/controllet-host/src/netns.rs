//! A network namespace of a controllet's own: only loopback, in which the host itself binds
//! the listeners the controllet may use (the bus relay, the OpenFlow channel over TCP). The
//! controllet joins it before exec, as root, so it owns nothing in it: inside its user
//! namespace it holds no capability over this network, and opens no raw socket here either.
//!
//! A thread of the daemon enters a new namespace with unshare(2), brings loopback up, binds
//! the sockets and keeps a descriptor of the namespace; the sockets stay in the namespace they
//! were made in after the thread is gone.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};

/// A controllet's network namespace and the listeners bound in it.
#[derive(Debug)]
pub struct PrivateNet {
    ns: OwnedFd,
    /// Bound on 127.0.0.1 inside the namespace, one per requested port.
    pub listeners: Vec<TcpListener>,
}

impl PrivateNet {
    /// A new namespace with loopback up and a listener on 127.0.0.1 at each of `ports`.
    pub fn create(ports: &[u16]) -> io::Result<PrivateNet> {
        let ports = ports.to_vec();
        std::thread::Builder::new()
            .name("hairpin-netns".into())
            .spawn(move || -> io::Result<PrivateNet> {
                // SAFETY: unshare(2) affects only this thread, which exits right after.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                loopback_up()?;
                let listeners = ports
                    .iter()
                    .map(|&p| TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, p))))
                    .collect::<io::Result<Vec<_>>>()?;
                let ns = File::open("/proc/thread-self/ns/net")?.into();
                Ok(PrivateNet { ns, listeners })
            })?
            .join()
            .map_err(|_| io::Error::other("the namespace thread panicked"))?
    }

    /// The namespace's descriptor, for setns(2) in the child.
    pub fn fd(&self) -> i32 {
        self.ns.as_raw_fd()
    }
}

/// Brings `lo` up in the calling thread's namespace (SIOCSIFFLAGS).
fn loopback_up() -> io::Result<()> {
    // SAFETY: a plain datagram socket for the interface ioctls, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: ifreq is plain old data; zero is a valid value for every field.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: `req` names an interface and outlives both calls; SIOCGIFFLAGS fills
    // ifru_flags, which SIOCSIFFLAGS then reads.
    let result = unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) < 0 {
            -1
        } else {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &req)
        }
    };
    let err = io::Error::last_os_error();
    // SAFETY: `fd` is the socket opened above, closed once.
    unsafe { libc::close(fd) };
    if result < 0 {
        return Err(err);
    }
    Ok(())
}

/// Joins the namespace `fd` from the child between fork and exec (no allocation).
pub fn enter(fd: i32) -> io::Result<()> {
    // SAFETY: setns(2) on a namespace descriptor the parent holds open.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_namespace_has_its_own_loopback() {
        if !testkit::root("netns::a_private_namespace_has_its_own_loopback") {
            return;
        }
        // A port the host namespace also uses: the two do not collide.
        let host = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = host.local_addr().unwrap().port();
        let net = PrivateNet::create(&[port]).unwrap();
        assert_eq!(net.listeners.len(), 1);
        // From the host namespace, 127.0.0.1:port reaches the host's listener, not the
        // namespace's.
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        net.listeners[0].set_nonblocking(true).unwrap();
        assert!(
            net.listeners[0].accept().is_err(),
            "reached the private namespace"
        );
        assert!(host.accept().is_ok());
    }
}
