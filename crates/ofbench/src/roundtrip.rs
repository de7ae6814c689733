//! Controller round trip from a host: the host sends a UDP request to an address only the
//! controller answers; the switch's flow sends it to the controller (PACKET_IN), which answers
//! at once with a PACKET_OUT of the reply out of the ingress port; the host receives it.
//!
//! Times per request, all on CLOCK_REALTIME: `t0` the host's clock just before its send,
//! `t1` the kernel's arrival stamp of the PACKET_IN on the controller's socket, `t2` the
//! controller's clock just before it writes the PACKET_OUT, `t3` the kernel's arrival stamp of
//! the reply on the host's socket. Round trip `t3 - t0`, PACKET_IN delivery `t1 - t0`,
//! PACKET_OUT delivery `t3 - t2`, controller `t2 - t1` (its wake-up and work), and the
//! switch's share of the round trip, `(t3 - t0) - (t2 - t1)`.

use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ofp::{Action, Match, Message, OxmField, OxmValue, PacketOut};

use crate::channel::Channel;
use crate::clock::{self, Nanos};
use crate::frame;
use crate::netns;
use crate::stats::Spread;
use crate::switch;

/// The address the controller answers for (the host has a static neighbour entry for it).
const SERVICE: [u8; 4] = [10, 0, 0, 254];
const SERVICE_PORT: u16 = 7;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Namespace of the switch (the controller listens on its loopback).
    #[arg(long)]
    switch_ns: String,
    /// Where the controller listens for the switch.
    #[arg(long)]
    listen: SocketAddr,
    /// Namespace of the host; its address is the source of the requests.
    #[arg(long)]
    host_ns: String,
    /// Requests measured (after the warm-up ones).
    #[arg(long, default_value_t = 1000)]
    requests: u64,
    /// Requests sent first and not measured.
    #[arg(long, default_value_t = 20)]
    warmup: u64,
    /// Time between requests (so each meets an idle switch).
    #[arg(long, default_value_t = 2000)]
    interval_us: u64,
    /// Forward between these two ports (`A,B`: in_port=A -> B and back) for background load.
    #[arg(long, value_delimiter = ',')]
    forward: Vec<u32>,
    /// Wait after installing the flows before the first request (for background load to
    /// reach its steady state).
    #[arg(long, default_value_t = 0)]
    settle_ms: u64,
    /// Run the controller on this CPU alone (beside a polling switch thread on the same
    /// CPU, its wake-up for a PACKET_IN is then local, not an interrupt to an idle one).
    #[arg(long)]
    controller_cpu: Option<usize>,
    /// A label printed with the results.
    #[arg(long, default_value = "switch")]
    label: String,
}

/// What the controller saw of one request.
struct ControllerTimes {
    seq: u64,
    t1: Nanos,
    t2: Nanos,
}

fn flows(forward: &[u32]) -> Vec<Message> {
    let service = Match {
        fields: vec![
            OxmField::exact(OxmValue::EthType(0x0800)),
            OxmField::exact(OxmValue::IpProto(17)),
            OxmField::exact(OxmValue::Ipv4Dst(u32::from_be_bytes(SERVICE))),
        ],
    };
    let mut msgs = vec![
        switch::delete_all(),
        switch::add(100, service, vec![switch::to_controller(0xffff)]),
    ];
    if let [a, b] = *forward {
        for (from, to) in [(a, b), (b, a)] {
            let m = Match {
                fields: vec![OxmField::exact(OxmValue::InPort(from))],
            };
            msgs.push(switch::add(
                10,
                m,
                vec![Action::Output {
                    port: to,
                    max_len: 0,
                }],
            ));
        }
    }
    msgs
}

/// Answers every request at once; reports its times for each.
fn serve(
    mut ch: Channel,
    stop: &AtomicBool,
    times: mpsc::Sender<ControllerTimes>,
) -> io::Result<()> {
    let mut out = Vec::with_capacity(256);
    while !stop.load(Ordering::Relaxed) {
        let Some(r) = ch.recv()? else { continue };
        let Message::PacketIn(pin) = r.msg else {
            continue;
        };
        let mut data = pin.data;
        let Some(seq) = frame::seq(&data) else {
            continue;
        };
        if frame::answer(&mut data).is_none() {
            continue;
        }
        let in_port = pin
            .match_
            .get(ofp::OxmFieldId::InPort)
            .and_then(|f| f.value.as_u64())
            .unwrap_or(0) as u32;
        out.clear();
        ch.encode(
            &Message::PacketOut(PacketOut {
                buffer_id: ofp::OFP_NO_BUFFER,
                in_port,
                actions: vec![Action::Output {
                    port: ofp::OFPP_IN_PORT,
                    max_len: 0,
                }],
                data,
            }),
            &mut out,
        );
        let t2 = clock::now();
        ch.send(&out)?;
        let _ = times.send(ControllerTimes { seq, t1: r.at, t2 });
    }
    Ok(())
}

pub fn run(args: Args) -> io::Result<()> {
    let listener = netns::within(&args.switch_ns, || TcpListener::bind(args.listen))?;
    let host = netns::within(&args.host_ns, || UdpSocket::bind("0.0.0.0:0"))?;
    clock::enable_rx_timestamps(host.as_raw_fd())?;
    clock::set_recv_timeout(host.as_raw_fd(), Duration::from_secs(1))?;
    let service = SocketAddr::from((SERVICE, SERVICE_PORT));

    let mut ch = Channel::accept(&listener, Duration::from_secs(30))?;
    ch.handshake()?;
    ch.transact(&flows(&args.forward))?;

    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let controller = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || serve(ch, &stop, tx))
    };
    if let Some(cpu) = args.controller_cpu {
        cpus::pin(&controller, cpu)?;
    }

    std::thread::sleep(Duration::from_millis(args.settle_ms));
    let total = args.warmup + args.requests;
    let interval = Duration::from_micros(args.interval_us);
    let mut sent: Vec<(u64, Nanos, Option<Nanos>)> = Vec::with_capacity(total as usize);
    let mut buf = [0u8; 2048];
    let mut next = Instant::now();
    for seq in 0..total {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next += interval;
        let t0 = clock::now();
        host.send_to(&frame::payload(seq), service)?;
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut t3 = None;
        while Instant::now() < deadline {
            match clock::recv_stamped(host.as_raw_fd(), &mut buf) {
                Ok((n, stamp)) if frame::payload_seq(&buf[..n]) == Some(seq) => {
                    t3 = Some(stamp);
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if seq >= args.warmup {
            sent.push((seq, t0, t3));
        }
        if t3.is_none() {
            // A lost request costs the host a second; the next one starts afresh.
            next = Instant::now();
        }
    }
    stop.store(true, Ordering::Relaxed);
    controller
        .join()
        .map_err(|_| io::Error::other("the controller thread panicked"))??;
    let mut at_controller = std::collections::HashMap::new();
    for t in rx.try_iter() {
        at_controller.insert(t.seq, (t.t1, t.t2));
    }

    let (mut rtt, mut pin, mut pout, mut ctl, mut switch) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut lost = 0;
    for (seq, t0, t3) in sent {
        let (Some(t3), Some(&(t1, t2))) = (t3, at_controller.get(&seq)) else {
            lost += 1;
            continue;
        };
        rtt.push(t3.saturating_sub(t0));
        pin.push(t1.saturating_sub(t0));
        pout.push(t3.saturating_sub(t2));
        ctl.push(t2.saturating_sub(t1));
        switch.push(t3.saturating_sub(t0).saturating_sub(t2.saturating_sub(t1)));
    }
    let (rtt, pin, pout, ctl, switch) = (
        Spread::of(&mut rtt),
        Spread::of(&mut pin),
        Spread::of(&mut pout),
        Spread::of(&mut ctl),
        Spread::of(&mut switch),
    );
    println!(
        "{}: {} requests every {} us, {} lost",
        args.label, args.requests, args.interval_us, lost
    );
    println!("  round trip        {rtt}");
    println!("  PACKET_IN alone   {pin}");
    println!("  PACKET_OUT alone  {pout}");
    println!("  controller        {ctl}");
    println!("  switch's share    {switch}");
    println!(
        "result label={} requests={} lost={} {} {} {} {} {}",
        args.label,
        args.requests,
        lost,
        rtt.fields("rtt"),
        switch.fields("switch"),
        pin.fields("pin"),
        pout.fields("pout"),
        ctl.fields("ctl")
    );
    Ok(())
}
