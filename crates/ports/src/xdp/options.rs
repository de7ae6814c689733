//! What a caller can choose about an AF_XDP port, checked before anything is opened.

use std::io;

/// The headroom the kernel leaves in front of each received frame in a UMEM chunk
/// (XDP_PACKET_HEADROOM): a chunk holds `frame_size - 256` bytes of received frame.
pub(super) const RX_HEADROOM: u32 = 256;
/// Ethernet header plus one VLAN tag: what a frame adds to the MTU.
const L2_OVERHEAD: u32 = 18;

/// UMEM and ring sizes of an [`XdpPort`](crate::XdpPort).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpOptions {
    /// The receive queue of the interface the socket binds to. Generic XDP on veth
    /// delivers every frame on queue 0; on a multi-queue NIC, frames arriving on other
    /// queues are passed to the kernel stack instead.
    pub queue_id: u32,
    /// Size of one UMEM chunk: a power of two from 2048 to the page size. A received
    /// frame must fit in `frame_size - 256` bytes, so the MTU may be at most
    /// `frame_size - 274` (1774 with 2048-byte chunks); `open` refuses a larger one.
    pub frame_size: u32,
    /// Chunks lent to the kernel for receiving; also the fill and RX ring sizes
    /// (a power of two).
    pub rx_frames: u32,
    /// Chunks for transmitting; also the TX and completion ring sizes (a power of two).
    pub tx_frames: u32,
}

impl Default for XdpOptions {
    fn default() -> Self {
        XdpOptions {
            queue_id: 0,
            frame_size: 2048,
            rx_frames: 4096,
            tx_frames: 2048,
        }
    }
}

impl XdpOptions {
    /// Checks the sizes the kernel would otherwise refuse with a bare EINVAL.
    pub(super) fn validate(&self) -> io::Result<()> {
        let invalid = |msg: String| Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        let page = page_size();
        if !self.frame_size.is_power_of_two() || self.frame_size < 2048 || self.frame_size > page {
            return invalid(format!(
                "XDP frame_size {} must be a power of two from 2048 to the page size ({page})",
                self.frame_size
            ));
        }
        for (name, n) in [("rx_frames", self.rx_frames), ("tx_frames", self.tx_frames)] {
            if !n.is_power_of_two() || n < 64 {
                return invalid(format!("XDP {name} {n} must be a power of two >= 64"));
            }
        }
        Ok(())
    }

    /// Largest MTU whose frames fit a receive chunk.
    pub(super) fn max_mtu(&self) -> u32 {
        self.frame_size - RX_HEADROOM - L2_OVERHEAD
    }

    /// Total UMEM size in bytes: receive chunks first, then transmit chunks.
    pub(super) fn umem_bytes(&self) -> usize {
        (self.rx_frames as usize + self.tx_frames as usize) * self.frame_size as usize
    }
}

fn page_size() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(size).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_sizes_the_kernel_refuses() {
        assert!(XdpOptions::default().validate().is_ok());
        for bad in [
            XdpOptions {
                frame_size: 3000,
                ..XdpOptions::default()
            },
            XdpOptions {
                frame_size: 1024,
                ..XdpOptions::default()
            },
            XdpOptions {
                rx_frames: 1000,
                ..XdpOptions::default()
            },
            XdpOptions {
                tx_frames: 0,
                ..XdpOptions::default()
            },
        ] {
            let err = bad.validate().unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
        assert_eq!(XdpOptions::default().max_mtu(), 1774);
    }
}
