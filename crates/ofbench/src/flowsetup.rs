//! Flow setup rate, cbench in reverse: a sender host opens new UDP flows to a receiver host as
//! fast as a window of flows in flight allows; the switch sends each flow's first packet to
//! the controller (table-miss), which answers with a FLOW_MOD for the flow and a PACKET_OUT
//! of the packet (by buffer id when the switch buffered it). Measured: new flows per second
//! (first packets received), and each flow's first-packet latency (the sender's clock before
//! its send to the receiver's kernel arrival stamp). Afterwards a second packet of some of
//! the flows must reach the receiver with no PACKET_IN: the flow-mods took effect.

use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ofp::{Action, Match, Message, OxmField, OxmValue, PacketOut};

use crate::channel::Channel;
use crate::clock::{self, Nanos};
use crate::frame::{self, Flow};
use crate::netns;
use crate::stats::Spread;
use crate::switch;

/// The receiver's UDP port, the same for every flow.
const PORT: u16 = 9000;
/// Flows sampled for the check that the flow-mods took effect.
const CHECKED: u64 = 100;
/// Sequence numbers of the check's second packets carry this bit.
const SECOND: u64 = 1 << 63;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long)]
    switch_ns: String,
    #[arg(long)]
    listen: SocketAddr,
    /// Namespace and interface of the sender host (frames are sent raw).
    #[arg(long)]
    sender_ns: String,
    #[arg(long, default_value = "eth0")]
    sender_if: String,
    #[arg(long, value_parser = frame::parse_mac)]
    sender_mac: [u8; 6],
    /// Namespace, MAC and IPv4 address of the receiver host.
    #[arg(long)]
    receiver_ns: String,
    #[arg(long, value_parser = frame::parse_mac)]
    receiver_mac: [u8; 6],
    #[arg(long, default_value = "10.0.0.2")]
    receiver_ip: std::net::Ipv4Addr,
    /// The switch port the receiver is on.
    #[arg(long, default_value_t = 2)]
    out_port: u32,
    /// First packets in flight (sent, not yet received) at most.
    #[arg(long, default_value_t = 64)]
    window: u64,
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// max_len of the table-miss flow's output to the controller (0xffff: never buffered).
    #[arg(long, default_value_t = 128)]
    miss_len: u16,
    #[arg(long, default_value = "switch")]
    label: String,
}

/// Flow `i`: one of 64,000 source ports of one of 200 source addresses in the receiver's /24.
fn flow(i: u64, dst: [u8; 4]) -> Flow {
    Flow {
        src: [dst[0], dst[1], dst[2], 20 + (i / 64_000) as u8],
        dst,
        sport: 1024 + (i % 64_000) as u16,
        dport: PORT,
    }
}

/// Shared between the sender, the receiver and the controller.
struct Run {
    sent_at: Vec<AtomicU64>,
    received_at: Vec<AtomicU64>,
    received: AtomicU64,
    seconds_received: AtomicU64,
    packet_ins: AtomicU64,
    errors: AtomicU64,
    stop: AtomicBool,
}

fn exact_flow(in_port: u32, f: &Flow) -> Match {
    Match {
        fields: vec![
            OxmField::exact(OxmValue::InPort(in_port)),
            OxmField::exact(OxmValue::EthType(0x0800)),
            OxmField::exact(OxmValue::IpProto(17)),
            OxmField::exact(OxmValue::Ipv4Src(u32::from_be_bytes(f.src))),
            OxmField::exact(OxmValue::Ipv4Dst(u32::from_be_bytes(f.dst))),
            OxmField::exact(OxmValue::UdpSrc(f.sport)),
            OxmField::exact(OxmValue::UdpDst(f.dport)),
        ],
    }
}

/// The controller: FLOW_MOD + PACKET_OUT for every PACKET_IN, everything that is ready
/// written in one call.
fn control(mut ch: Channel, run: &Run, out_port: u32) -> io::Result<()> {
    let mut out = Vec::with_capacity(1 << 16);
    let output = vec![Action::Output {
        port: out_port,
        max_len: 0,
    }];
    while !run.stop.load(Relaxed) {
        let Some(r) = ch.recv()? else { continue };
        match r.msg {
            Message::PacketIn(pin) => {
                run.packet_ins.fetch_add(1, Relaxed);
                let in_port = pin
                    .match_
                    .get(ofp::OxmFieldId::InPort)
                    .and_then(|f| f.value.as_u64())
                    .unwrap_or(0) as u32;
                if let Some(f) = Flow::of(&pin.data) {
                    ch.encode(
                        &switch::add(100, exact_flow(in_port, &f), output.clone()),
                        &mut out,
                    );
                }
                let data = if pin.buffer_id == ofp::OFP_NO_BUFFER {
                    pin.data
                } else {
                    Vec::new()
                };
                ch.encode(
                    &Message::PacketOut(PacketOut {
                        buffer_id: pin.buffer_id,
                        in_port,
                        actions: output.clone(),
                        data,
                    }),
                    &mut out,
                );
            }
            Message::Error(_) => {
                run.errors.fetch_add(1, Relaxed);
            }
            _ => {}
        }
        if !ch.has_buffered() && !out.is_empty() {
            ch.send(&out)?;
            out.clear();
        }
    }
    Ok(())
}

/// The receiver: stamps each flow's first packet.
fn receive(sock: &UdpSocket, run: &Run, sender: &std::thread::Thread) -> io::Result<()> {
    let mut buf = [0u8; 2048];
    while !run.stop.load(Relaxed) {
        let (n, stamp) = match clock::recv_stamped(sock.as_raw_fd(), &mut buf) {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        let Some(seq) = frame::payload_seq(&buf[..n]) else {
            continue;
        };
        if seq & SECOND != 0 {
            run.seconds_received.fetch_add(1, Relaxed);
            continue;
        }
        if let Some(slot) = run.received_at.get(seq as usize) {
            if slot.swap(stamp.max(1), Relaxed) == 0 {
                run.received.fetch_add(1, Relaxed);
                sender.unpark();
            }
        }
    }
    Ok(())
}

/// A raw packet socket that sends on `ifname` (and receives nothing).
fn raw_sender(ifname: &str) -> io::Result<OwnedFd> {
    let name = std::ffi::CString::new(ifname).map_err(io::Error::other)?;
    // SAFETY: if_nametoindex reads a NUL-terminated string that outlives the call.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socket takes no pointers; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; zero is a valid start.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_ifindex = ifindex as i32;
    // SAFETY: binds to a live sockaddr_ll of the size given.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

fn send_frame(fd: &OwnedFd, frame: &[u8]) -> io::Result<()> {
    // SAFETY: sends from a live slice of the length given.
    let n = unsafe { libc::send(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn run(args: Args) -> io::Result<()> {
    let listener = netns::within(&args.switch_ns, || TcpListener::bind(args.listen))?;
    let sender = netns::within(&args.sender_ns, || raw_sender(&args.sender_if))?;
    let receiver = netns::within(&args.receiver_ns, || UdpSocket::bind(("0.0.0.0", PORT)))?;
    clock::enable_rx_timestamps(receiver.as_raw_fd())?;
    clock::set_recv_timeout(receiver.as_raw_fd(), Duration::from_millis(100))?;

    let mut ch = Channel::accept(&listener, Duration::from_secs(30))?;
    ch.handshake()?;
    ch.transact(&[
        switch::delete_all(),
        switch::add(
            0,
            Match::default(),
            vec![switch::to_controller(args.miss_len)],
        ),
    ])?;

    // Room for flows at 2M/s, more than any switch here sets up.
    let capacity = (args.seconds as usize + 2) * 2_000_000;
    let run = Arc::new(Run {
        sent_at: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
        received_at: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
        received: AtomicU64::new(0),
        seconds_received: AtomicU64::new(0),
        packet_ins: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let controller = {
        let run = Arc::clone(&run);
        let out_port = args.out_port;
        std::thread::spawn(move || control(ch, &run, out_port))
    };
    let receiving = {
        let run = Arc::clone(&run);
        let me = std::thread::current();
        std::thread::spawn(move || receive(&receiver, &run, &me))
    };

    let dst = args.receiver_ip.octets();
    let frame_of =
        |i: u64, seq: u64| frame::build(args.receiver_mac, args.sender_mac, flow(i, dst), seq);
    let started = Instant::now();
    let until = started + Duration::from_secs(args.seconds);
    let mut sent = 0u64;
    // Flows given up on (no first packet within a second) leave the window.
    let mut given_up = 0u64;
    let mut last_progress = (Instant::now(), 0u64);
    while Instant::now() < until && (sent as usize) < capacity {
        let received = run.received.load(Relaxed);
        if sent - received - given_up >= args.window {
            if received != last_progress.1 {
                last_progress = (Instant::now(), received);
            } else if last_progress.0.elapsed() > Duration::from_secs(1) {
                given_up = sent - received;
            }
            std::thread::park_timeout(Duration::from_millis(10));
            continue;
        }
        let f = frame_of(sent, sent);
        run.sent_at[sent as usize].store(clock::now(), Relaxed);
        send_frame(&sender, &f)?;
        sent += 1;
    }
    let elapsed = started.elapsed();
    std::thread::sleep(Duration::from_secs(1));
    let completed = run.received.load(Relaxed);

    // The flow-mods took effect: second packets of sampled flows arrive without a PACKET_IN.
    let packet_ins_before = run.packet_ins.load(Relaxed);
    let step = (sent / CHECKED).max(1);
    let mut checked = 0;
    for i in (0..sent).step_by(step as usize).take(CHECKED as usize) {
        if run.received_at[i as usize].load(Relaxed) != 0 {
            send_frame(&sender, &frame_of(i, i | SECOND))?;
            checked += 1;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let second_arrived = run.seconds_received.load(Relaxed);
    let extra_packet_ins = run.packet_ins.load(Relaxed) - packet_ins_before;

    run.stop.store(true, Relaxed);
    controller
        .join()
        .map_err(|_| io::Error::other("the controller thread panicked"))??;
    receiving
        .join()
        .map_err(|_| io::Error::other("the receiver thread panicked"))??;

    let mut latency: Vec<Nanos> = (0..sent as usize)
        .filter_map(|i| {
            let rx = run.received_at[i].load(Relaxed);
            (rx != 0).then(|| rx.saturating_sub(run.sent_at[i].load(Relaxed)))
        })
        .collect();
    let latency = Spread::of(&mut latency);
    let rate = completed as f64 / elapsed.as_secs_f64();
    println!(
        "{}: {} new flows in {:.2} s ({rate:.0}/s), window {}, {} never arrived, {} switch errors",
        args.label,
        completed,
        elapsed.as_secs_f64(),
        args.window,
        sent - completed,
        run.errors.load(Relaxed)
    );
    println!("  first packet  {latency}");
    println!(
        "  check: {second_arrived}/{checked} second packets arrived, {extra_packet_ins} PACKET_INs for them"
    );
    println!(
        "result label={} window={} flows={} rate={rate:.0} lost={} errors={} checked={checked} \
         second_arrived={second_arrived} extra_packet_ins={extra_packet_ins} {}",
        args.label,
        args.window,
        completed,
        sent - completed,
        run.errors.load(Relaxed),
        latency.fields("first")
    );
    Ok(())
}
