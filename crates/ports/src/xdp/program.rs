//! The XDP program that steers an interface's frames into an AF_XDP socket, loaded
//! with aya from the object build.rs compiled; attached in generic (SKB) mode and
//! detached when dropped.

use std::error::Error;
use std::io;
use std::os::fd::RawFd;

use aya::maps::XskMap;
use aya::programs::{Xdp, XdpMode};
use aya::Ebpf;

/// The compiled `bpf/xsk_redirect.c`; empty when build.rs could not compile it.
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk_redirect.o"));
/// Why the object is empty (build.rs's message), or empty when it was built.
static BUILD_FAILURE: &str = include_str!(concat!(env!("OUT_DIR"), "/xsk_redirect.unavailable"));

const PROGRAM: &str = "hairpin_xsk_redirect";
const MAP: &str = "xsks";

/// A loaded redirect program; dropping it detaches it and frees the program and map.
pub(super) struct RedirectProgram {
    ebpf: Ebpf,
}

/// An aya error with its causes, which carry the errno.
fn describe(what: &str, err: &dyn Error) -> io::Error {
    let mut text = format!("{what}: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    io::Error::other(text)
}

impl RedirectProgram {
    /// Loads the program and its socket map into the kernel, not yet attached.
    pub(super) fn load() -> io::Result<Self> {
        if OBJECT.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("AF_XDP unavailable: the XDP program was not built ({BUILD_FAILURE})"),
            ));
        }
        let mut ebpf = Ebpf::load(OBJECT).map_err(|e| describe("load XDP object", &e))?;
        let program: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| io::Error::other(format!("XDP object lacks program {PROGRAM}")))?
            .try_into()
            .map_err(|e| describe("XDP program type", &e))?;
        program
            .load()
            .map_err(|e| describe("load XDP program (verifier)", &e))?;
        Ok(RedirectProgram { ebpf })
    }

    /// Sends frames of receive queue `queue` to the socket `fd`.
    pub(super) fn register_socket(&mut self, queue: u32, fd: RawFd) -> io::Result<()> {
        let map = self
            .ebpf
            .map_mut(MAP)
            .ok_or_else(|| io::Error::other(format!("XDP object lacks map {MAP}")))?;
        let mut xsks = XskMap::try_from(map).map_err(|e| describe("XSK map", &e))?;
        xsks.set(queue, fd, 0)
            .map_err(|e| describe(&format!("register socket for queue {queue}"), &e))
    }

    /// Attaches the program to `ifindex` in generic (SKB) mode.
    pub(super) fn attach(&mut self, ifindex: u32, ifname: &str) -> io::Result<()> {
        let program: &mut Xdp = self
            .ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| io::Error::other(format!("XDP object lacks program {PROGRAM}")))?
            .try_into()
            .map_err(|e| describe("XDP program type", &e))?;
        program
            .attach_to_if_index(ifindex, XdpMode::Skb)
            .map(drop)
            .map_err(|e| describe(&format!("attach XDP (generic mode) to {ifname}"), &e))
    }
}
