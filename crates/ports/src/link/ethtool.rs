//! Link speed through the ethtool ioctl: ETHTOOL_GLINKSETTINGS, falling back to the
//! older ETHTOOL_GSET for drivers that only implement that.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::sys::{self, IfReq};

const ETHTOOL_GSET: u32 = 0x1;
const ETHTOOL_GLINKSETTINGS: u32 = 0x4c;
/// `struct ethtool_link_settings` without its trailing mask words.
const LINK_SETTINGS_HEADER: usize = 48;
/// Byte offset of `link_mode_masks_nwords` in that structure.
const NWORDS_OFFSET: usize = 11;
/// `nwords` is a signed byte: at most 127 words for each of the three masks.
const MAX_MASK_BYTES: usize = 3 * 127 * 4;
/// `struct ethtool_cmd` size and the offsets of its two speed halves.
const ETHTOOL_CMD_LEN: usize = 44;
const GSET_SPEED_LO: usize = 12;
const GSET_SPEED_HI: usize = 28;
const SPEED_UNKNOWN: u32 = u32::MAX;

/// A buffer the kernel reads the command from and writes the answer into.
#[repr(C, align(8))]
struct EthtoolBuf([u8; LINK_SETTINGS_HEADER + MAX_MASK_BYTES]);

impl EthtoolBuf {
    fn u32_at(&self, at: usize) -> u32 {
        let mut word = [0u8; 4];
        word.copy_from_slice(&self.0[at..at + 4]);
        u32::from_ne_bytes(word)
    }
}

/// Issues one ethtool command; the kernel reads and writes `buf` in place.
fn ethtool(fd: &OwnedFd, ifname: &str, buf: &mut EthtoolBuf) -> bool {
    let Ok(mut req) = IfReq::new(ifname) else {
        return false;
    };
    req.data.ptr = buf.0.as_mut_ptr().cast();
    // The buffer is large enough for any answer to the two commands sent here.
    sys::ioctl_ifreq(fd.as_raw_fd(), sys::SIOCETHTOOL, &mut req, "SIOCETHTOOL").is_ok()
}

fn known(speed: u32) -> Option<u32> {
    (speed != 0 && speed != SPEED_UNKNOWN).then_some(speed)
}

/// The link speed in Mb/s, or `None` when the driver does not report one.
pub(super) fn speed_mbps(fd: &OwnedFd, ifname: &str) -> Option<u32> {
    let mut buf = Box::new(EthtoolBuf([0; LINK_SETTINGS_HEADER + MAX_MASK_BYTES]));
    // Handshake: with nwords = 0 the kernel answers with -(words it needs).
    buf.0[..4].copy_from_slice(&ETHTOOL_GLINKSETTINGS.to_ne_bytes());
    if ethtool(fd, ifname, &mut buf) {
        let needed = (buf.0[NWORDS_OFFSET] as i8).unsigned_abs();
        if needed > 0 {
            buf.0.fill(0);
            buf.0[..4].copy_from_slice(&ETHTOOL_GLINKSETTINGS.to_ne_bytes());
            buf.0[NWORDS_OFFSET] = needed;
            if ethtool(fd, ifname, &mut buf) {
                return known(buf.u32_at(4));
            }
        }
    }
    buf.0[..ETHTOOL_CMD_LEN].fill(0);
    buf.0[..4].copy_from_slice(&ETHTOOL_GSET.to_ne_bytes());
    if !ethtool(fd, ifname, &mut buf) {
        return None;
    }
    let lo = u32::from(u16::from_ne_bytes([
        buf.0[GSET_SPEED_LO],
        buf.0[GSET_SPEED_LO + 1],
    ]));
    let hi = u32::from(u16::from_ne_bytes([
        buf.0[GSET_SPEED_HI],
        buf.0[GSET_SPEED_HI + 1],
    ]));
    known(hi << 16 | lo)
}
