//! A thread that never sleeps takes the connections' input for a while: their tasks stop
//! reading it, the thread serves it, and the tasks serve it again once it is handed back.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use agent::{Agent, AgentConfig, Mastership};
use ofp::{Hello, Message};
use switch_core::clock::now_ns;

const WAIT: Duration = Duration::from_secs(5);

fn send(peer: &mut UnixStream, xid: u32, msg: &Message) {
    let mut wire = Vec::new();
    ofp::encode(xid, msg, &mut wire);
    peer.write_all(&wire).unwrap();
}

/// The next message from the switch, or `None` if none comes within `wait`.
fn recv(peer: &mut UnixStream, wait: Duration) -> Option<(u32, Message)> {
    peer.set_read_timeout(Some(wait)).unwrap();
    let mut raw = vec![0u8; ofp::OFP_HEADER_LEN];
    match peer.read_exact(&mut raw) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return None,
        got => got.unwrap(),
    }
    let len = usize::from(u16::from_be_bytes([raw[2], raw[3]]));
    raw.resize(len, 0);
    peer.read_exact(&mut raw[ofp::OFP_HEADER_LEN..]).unwrap();
    let (header, msg) = ofp::decode(&raw).unwrap();
    Some((header.xid, msg))
}

/// A peer connected to `agent` over a unix socket, past the hello exchange.
fn connect(agent: &Agent) -> UnixStream {
    let path = std::env::temp_dir().join(format!("hairpin-handoff-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let served = agent.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::UnixListener::from_std(listener).unwrap();
            let _ = served.serve_unix(listener, Mastership::Allowed).await;
        });
    });
    let mut peer = UnixStream::connect(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        recv(&mut peer, WAIT),
        Some((_, Message::Hello(_)))
    ));
    send(&mut peer, 1, &Message::Hello(Hello::v13()));
    peer
}

fn echo(peer: &mut UnixStream, xid: u32) {
    send(peer, xid, &Message::EchoRequest(xid.to_be_bytes().to_vec()));
}

fn is_echo_reply(got: Option<(u32, Message)>, xid: u32) -> bool {
    got == Some((xid, Message::EchoReply(xid.to_be_bytes().to_vec())))
}

#[test]
fn the_thread_that_took_the_input_serves_it_until_it_hands_it_back() {
    let agent = Agent::new(common::switch(), AgentConfig::default());
    let mut peer = connect(&agent);
    echo(&mut peer, 2);
    assert!(is_echo_reply(recv(&mut peer, WAIT), 2), "the task serves");

    let mut channels = agent.channels();
    let until = now_ns() + 600_000_000;
    channels.take_input_until(until);
    echo(&mut peer, 3);
    assert_eq!(
        recv(&mut peer, Duration::from_millis(200)),
        None,
        "the task left it"
    );
    assert!(channels.serve_ready_input());
    assert!(
        is_echo_reply(recv(&mut peer, WAIT), 3),
        "the thread served it"
    );

    echo(&mut peer, 4);
    assert!(
        is_echo_reply(recv(&mut peer, WAIT), 4),
        "the task serves again"
    );
    assert!(now_ns() >= until, "not before it was handed back");
}
