//! Just enough rtnetlink to follow links: a dump request and a bounds-checked parser
//! for RTM_NEWLINK / RTM_DELLINK messages.

const HEADER_LEN: usize = 16;
const IFINFO_LEN: usize = 16;
const ATTR_HEADER_LEN: usize = 4;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;

/// One link as a netlink message describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LinkMessage {
    pub(super) removed: bool,
    pub(super) ifindex: u32,
    pub(super) flags: u32,
    pub(super) ifname: String,
    pub(super) mtu: u32,
}

/// What one message in a netlink datagram says.
pub(super) enum Message {
    Link(LinkMessage),
    /// End of a dump (NLMSG_DONE) or an error answer to our request.
    Done,
    Other,
}

fn align4(len: usize) -> usize {
    (len + 3) & !3
}

fn u16_at(buf: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(buf.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

/// An RTM_GETLINK dump request for every link.
pub(super) fn dump_request(seq: u32) -> [u8; HEADER_LEN + IFINFO_LEN] {
    let mut req = [0u8; HEADER_LEN + IFINFO_LEN];
    req[0..4].copy_from_slice(&((HEADER_LEN + IFINFO_LEN) as u32).to_ne_bytes());
    req[4..6].copy_from_slice(&libc::RTM_GETLINK.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    req[6..8].copy_from_slice(&flags.to_ne_bytes());
    req[8..12].copy_from_slice(&seq.to_ne_bytes());
    req
}

/// Calls `f` for each message in one datagram; stops at the first malformed header.
pub(super) fn for_each_message(mut buf: &[u8], mut f: impl FnMut(Message)) {
    while let (Some(len), Some(kind)) = (u32_at(buf, 0), u16_at(buf, 4)) {
        let len = len as usize;
        let Some(body) = buf.get(HEADER_LEN..len) else {
            return;
        };
        f(match i32::from(kind) {
            libc::NLMSG_DONE | libc::NLMSG_ERROR => Message::Done,
            _ if kind == libc::RTM_NEWLINK || kind == libc::RTM_DELLINK => {
                parse_link(body, kind == libc::RTM_DELLINK).map_or(Message::Other, Message::Link)
            }
            _ => Message::Other,
        });
        buf = buf.get(align4(len)..).unwrap_or_default();
    }
}

fn parse_link(body: &[u8], removed: bool) -> Option<LinkMessage> {
    // Only AF_UNSPEC messages describe the link itself (AF_BRIDGE ones describe ports).
    if *body.first()? != 0 {
        return None;
    }
    let ifindex = u32_at(body, 4)?;
    let flags = u32_at(body, 8)?;
    let mut msg = LinkMessage {
        removed,
        ifindex,
        flags,
        ifname: String::new(),
        mtu: 0,
    };
    let mut attrs = body.get(IFINFO_LEN..)?;
    while let (Some(len), Some(kind)) = (u16_at(attrs, 0), u16_at(attrs, 2)) {
        let len = usize::from(len);
        let Some(payload) = attrs.get(ATTR_HEADER_LEN..len) else {
            break;
        };
        match kind {
            IFLA_IFNAME => {
                let name = payload.split(|&b| b == 0).next().unwrap_or_default();
                msg.ifname = String::from_utf8_lossy(name).into_owned();
            }
            IFLA_MTU => msg.mtu = u32_at(payload, 0).unwrap_or(0),
            _ => {}
        }
        attrs = attrs
            .get(align4(len.max(ATTR_HEADER_LEN))..)
            .unwrap_or_default();
    }
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link_message(kind: u16, ifindex: u32, flags: u32, name: &str, mtu: u32) -> Vec<u8> {
        let mut attrs = Vec::new();
        let name_len = ATTR_HEADER_LEN + name.len() + 1;
        attrs.extend_from_slice(&(name_len as u16).to_ne_bytes());
        attrs.extend_from_slice(&IFLA_IFNAME.to_ne_bytes());
        attrs.extend_from_slice(name.as_bytes());
        attrs.push(0);
        attrs.resize(align4(attrs.len()), 0);
        attrs.extend_from_slice(&8u16.to_ne_bytes());
        attrs.extend_from_slice(&IFLA_MTU.to_ne_bytes());
        attrs.extend_from_slice(&mtu.to_ne_bytes());
        let total = HEADER_LEN + IFINFO_LEN + attrs.len();
        let mut msg = Vec::new();
        msg.extend_from_slice(&(total as u32).to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&[0; 10]);
        msg.extend_from_slice(&[0, 0, 1, 0]);
        msg.extend_from_slice(&ifindex.to_ne_bytes());
        msg.extend_from_slice(&flags.to_ne_bytes());
        msg.extend_from_slice(&[0; 4]);
        msg.extend_from_slice(&attrs);
        msg
    }

    fn collect(buf: &[u8]) -> Vec<LinkMessage> {
        let mut out = Vec::new();
        for_each_message(buf, |m| {
            if let Message::Link(link) = m {
                out.push(link);
            }
        });
        out
    }

    #[test]
    fn parses_two_messages() {
        let mut buf = link_message(libc::RTM_NEWLINK, 7, 0x41, "veth0", 1500);
        buf.extend(link_message(libc::RTM_DELLINK, 8, 0, "veth1", 9000));
        let links = collect(&buf);
        assert_eq!(links.len(), 2);
        assert_eq!(
            links[0],
            LinkMessage {
                removed: false,
                ifindex: 7,
                flags: 0x41,
                ifname: "veth0".into(),
                mtu: 1500
            }
        );
        assert!(links[1].removed);
        assert_eq!(links[1].ifname, "veth1");
        assert_eq!(links[1].mtu, 9000);
    }

    #[test]
    fn truncated_input_never_panics() {
        let buf = link_message(libc::RTM_NEWLINK, 7, 0x41, "veth0", 1500);
        for cut in 0..buf.len() {
            let _ = collect(&buf[..cut]);
        }
        let mut bad_len = buf.clone();
        bad_len[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(collect(&bad_len).is_empty());
        let mut bad_attr = buf;
        let attr_at = HEADER_LEN + IFINFO_LEN;
        bad_attr[attr_at..attr_at + 2].copy_from_slice(&0u16.to_ne_bytes());
        assert_eq!(collect(&bad_attr)[0].ifname, "");
    }
}
