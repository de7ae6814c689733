//! Linux interfaces as OpenFlow ports: their descriptions, their sockets, and the netlink
//! monitor that turns link changes into PORT_STATUS messages (a trunk's, through its legacy
//! ports: [`crate::legacy`]).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use agent::session::Event;
use agent::Agent;
use ofp::{Port, PortConfig, PortState};
use ports::{
    link_info, open_port, set_link_up, AnyPort, LinkChange, LinkMonitor, PortKind, PortOptions,
    RingKind, TapPort, XdpOptions,
};

use crate::config::{PortIo, RxRing};
use crate::datapath::ports::ThreadPorts;
use crate::legacy::LegacyLinks;
use crate::portmap::{PortMap, Role};

/// Fanout group of the threads' sockets on the daemon's `interface`-th interface. The kernel
/// binds a group to one interface, so each interface needs its own id; ids are per network
/// namespace, so they are drawn from the process id to differ from other daemons'.
fn fanout_group(interface: usize) -> u16 {
    (std::process::id() as u16)
        .wrapping_mul(61)
        .wrapping_add(interface as u16)
}

/// The OpenFlow description of interface `ifname` as port `port_no`.
pub fn describe(port_no: u32, ifname: &str) -> io::Result<Port> {
    let info = link_info(ifname).map_err(|e| io::Error::new(e.kind(), format!("{ifname}: {e}")))?;
    let (features, kbps) = match info.speed_mbps {
        Some(mbps) => (
            ofp::speed_feature(mbps) | ofp::OFPPF_COPPER,
            mbps.saturating_mul(1000),
        ),
        None => (0, 0),
    };
    Ok(Port {
        port_no,
        hw_addr: info.mac,
        name: ifname.to_string(),
        config: if info.up {
            PortConfig::default()
        } else {
            PortConfig::PORT_DOWN
        },
        state: if info.up && info.running {
            PortState::LIVE
        } else {
            PortState::LINK_DOWN
        },
        curr: features,
        advertised: 0,
        supported: features,
        peer: 0,
        curr_speed: kbps,
        max_speed: kbps,
    })
}

/// Announces every configured port to the switch core: interfaces as they are, legacy
/// ports as `legacy` describes them.
pub fn add_ports(agent: &Agent, map: &PortMap, legacy: &LegacyLinks) -> io::Result<()> {
    let now = switch_core::clock::now_ns();
    let mut descs = legacy.descriptions();
    for (port_no, port) in &map.ports {
        if port.legacy.is_none() {
            descs.push(describe(*port_no, &map.interfaces[port.interface].ifname)?);
        }
    }
    agent.with_switch(|s| {
        for desc in descs {
            s.add_port(desc, now);
        }
        s.publish();
    });
    Ok(())
}

/// Opens one datapath thread's socket on every interface of `map` (in a fanout group when
/// several threads share the interfaces).
pub fn open_ports(map: &PortMap, threads: usize, ring: RxRing) -> io::Result<ThreadPorts> {
    let mut open = Vec::with_capacity(map.interfaces.len());
    for (index, interface) in map.interfaces.iter().enumerate() {
        let afpacket = PortOptions {
            fanout_group: (threads > 1).then(|| fanout_group(index)),
            ring: match ring {
                RxRing::Frames => RingKind::Frames,
                RxRing::Blocks => RingKind::Blocks,
            },
            ..PortOptions::default()
        };
        let ifname = &interface.ifname;
        let what = match &interface.role {
            Role::Port(port_no) => format!("port {port_no}"),
            Role::Trunk(trunk) => format!("trunk {}", trunk.name),
        };
        let kind = match interface.io {
            PortIo::AfPacket => PortKind::AfPacket(afpacket),
            PortIo::Xdp => PortKind::Xdp {
                xdp: XdpOptions::default(),
                fallback: afpacket,
            },
        };
        let (port, fell_back) = open_port(ifname, &kind)
            .map_err(|e| io::Error::new(e.kind(), format!("{what} ({ifname}): {e}")))?;
        if let Some(reason) = fell_back {
            crate::log!(
                crate::log::Level::Warn,
                "{what} ({ifname}): AF_XDP unavailable ({reason}), using AF_PACKET"
            );
        }
        open.push(port);
    }
    Ok(ThreadPorts::new(map, open))
}

/// Creates the LOCAL port's TAP device, brings it up and announces it to the switch core.
pub fn open_local(agent: &Agent, ifname: &str) -> io::Result<(u32, AnyPort)> {
    let tap = TapPort::open(ifname)
        .map_err(|e| io::Error::new(e.kind(), format!("LOCAL port ({ifname}): {e}")))?;
    set_link_up(ifname, true)?;
    let desc = describe(ofp::OFPP_LOCAL, ifname)?;
    let now = switch_core::clock::now_ns();
    agent.with_switch(|s| {
        s.add_port(desc, now);
        s.publish();
    });
    Ok((ofp::OFPP_LOCAL, AnyPort::Tap(tap)))
}

fn wait_readable(fd: RawFd, timeout_ms: i32) {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid, initialised pollfd that outlives the call.
    unsafe {
        libc::poll(&mut pollfd, 1, timeout_ms);
    }
}

/// Follows link changes of the configured interfaces and raises PORT_STATUS for each port
/// they change: a port's own interface changes that port, a trunk changes its legacy ports.
pub fn spawn_monitor(
    agent: Agent,
    map: Arc<PortMap>,
    legacy: Arc<LegacyLinks>,
    stop: Arc<AtomicBool>,
) -> io::Result<JoinHandle<()>> {
    let mut monitor = LinkMonitor::new()?;
    std::thread::Builder::new()
        .name("hairpin-links".into())
        .spawn(move || {
            // A link that changed between the ports' descriptions and the monitor's start
            // raised no event: read every link once now that the monitor follows them.
            for (interface, mapped) in map.interfaces.iter().enumerate() {
                if let Ok(info) = link_info(&mapped.ifname) {
                    let change = if info.up && info.running {
                        LinkChange::Up
                    } else {
                        LinkChange::Down
                    };
                    follow(&agent, &map, &legacy, interface, change);
                }
            }
            while !stop.load(Ordering::Relaxed) {
                wait_readable(monitor.fd(), 200);
                let mut changes = Vec::new();
                let _ = monitor.poll_events(|ev| {
                    if let Some(interface) = map.interface_named(&ev.ifname) {
                        changes.push((interface, ev.change));
                    }
                });
                for (interface, change) in changes {
                    follow(&agent, &map, &legacy, interface, change);
                }
            }
        })
}

/// Applies one link change of interface `interface` to the ports on it, announcing each
/// port it changes.
fn follow(
    agent: &Agent,
    map: &PortMap,
    legacy: &LegacyLinks,
    interface: usize,
    change: LinkChange,
) {
    let up = match change {
        LinkChange::Up => true,
        LinkChange::Down | LinkChange::Removed => false,
        LinkChange::Added | LinkChange::Modified => return,
    };
    let port_no = match &map.interfaces[interface].role {
        Role::Trunk(_) => return legacy.trunk_changed(agent, interface, up),
        Role::Port(port_no) => *port_no,
    };
    let status = agent.with_switch(|s| {
        let status = match change {
            LinkChange::Removed => s.remove_port(port_no),
            _ => s.set_link(port_no, up),
        };
        s.publish();
        status
    });
    if let Some(status) = status {
        agent.channels().send(Event::PortStatus(status));
    }
}
