//! Sockets in other network namespaces. Every host and the switch live in namespaces of their
//! own; one process opens a socket in each (a socket stays in the namespace it was made in).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

fn enter(ns: &File) -> io::Result<()> {
    // SAFETY: setns takes a descriptor we hold open for the call and a constant flag; it
    // changes only the calling thread's network namespace.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `f` with the calling thread in network namespace `name` (as `ip netns` names it),
/// then returns the thread to the namespace it was in.
pub fn within<T>(name: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let home = File::open("/proc/thread-self/ns/net")?;
    let path = Path::new("/run/netns").join(name);
    let target = File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    enter(&target)?;
    let result = f();
    enter(&home)?;
    result
}
