//! The connection and commands against a scripted switch on a socket pair: handshake,
//! multipart replies split over REPLY_MORE messages, echo requests in the middle, and
//! OFPT_ERROR replies mapped back to the request (and file line) that caused them.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use hairpinctl::cli::Command;
use hairpinctl::commands::execute;
use hairpinctl::conn::Connection;
use hairpinctl::error::CtlError;
use hairpinctl::target::Stream;
use ofp::{
    encode_multipart_reply_split, encode_to_vec, BadMatchCode, ErrorMsg, FlowModFailedCode,
    FlowStats, Header, Hello, HelloElement, Instruction, Message, MultipartReplyBody,
    MultipartRequestBody, OfpError, OFPMPF_REPLY_MORE,
};

/// What the scripted switch saw: every decoded message from the client.
type Seen = mpsc::Receiver<Message>;

fn read_message(stream: &mut UnixStream) -> Option<(Header, Message)> {
    let mut header = [0u8; 8];
    stream.read_exact(&mut header).ok()?;
    let len = ofp::peek_message_len(&header)?;
    let mut frame = header.to_vec();
    frame.resize(len, 0);
    stream.read_exact(&mut frame[8..]).ok()?;
    ofp::decode(&frame).ok()
}

/// Runs a switch that sends `hello`, then answers each message with what `answer` returns.
fn fake_switch(
    hello: Message,
    mut answer: impl FnMut(Header, &Message) -> Vec<Vec<u8>> + Send + 'static,
) -> (Connection, Seen) {
    let (client, mut switch) = UnixStream::pair().unwrap();
    let (seen_tx, seen) = mpsc::channel();
    thread::spawn(move || {
        switch.write_all(&encode_to_vec(0, &hello)).unwrap();
        while let Some((header, msg)) = read_message(&mut switch) {
            for frame in answer(header, &msg) {
                if switch.write_all(&frame).is_err() {
                    return;
                }
            }
            if seen_tx.send(msg).is_err() {
                return;
            }
        }
    });
    let conn = Connection::handshake(Stream::Unix(client), Duration::from_secs(5)).unwrap();
    (conn, seen)
}

fn hello13() -> Message {
    Message::Hello(Hello::v13())
}

fn error_frame(xid: u32, error: OfpError) -> Vec<u8> {
    encode_to_vec(
        xid,
        &Message::Error(ErrorMsg {
            error,
            data: Vec::new(),
        }),
    )
}

fn flow_stats(n: usize) -> Vec<FlowStats> {
    (0..n)
        .map(|i| {
            let spec = hairpinctl::syntax::flow::parse_flow(
                &format!(
                    "priority={i},ip,nw_src=10.{}.{}.0/24,actions=output:{i}",
                    i / 256,
                    i % 256
                ),
                hairpinctl::syntax::flow::FlowUse::Add,
            )
            .unwrap();
            FlowStats {
                table_id: 0,
                duration_sec: 1,
                duration_nsec: 0,
                priority: spec.priority,
                idle_timeout: 0,
                hard_timeout: 0,
                flags: spec.flags,
                cookie: 0,
                packet_count: 0,
                byte_count: 0,
                match_: spec.match_,
                instructions: spec.instructions,
            }
        })
        .collect()
}

fn run(conn: &mut Connection, command: Command) -> (Result<(), CtlError>, String) {
    let mut out = Vec::new();
    let result = execute(conn, &command, false, &mut out);
    (result, String::from_utf8(out).unwrap())
}

#[test]
fn multipart_replies_are_joined_across_reply_more() {
    let flows = flow_stats(3000);
    let expected = flows.clone();
    let (tx, parts) = mpsc::channel();
    let (mut conn, _seen) = fake_switch(hello13(), move |h, msg| match msg {
        Message::MultipartRequest(req) if matches!(req.body, MultipartRequestBody::Flow(_)) => {
            let mut frames = Vec::new();
            encode_multipart_reply_split(
                h.xid,
                &MultipartReplyBody::Flow(flows.clone()),
                &mut frames,
            );
            tx.send(frames.len()).unwrap();
            // An echo request in the middle of the reply must be answered and skipped.
            frames.insert(1, encode_to_vec(77, &Message::EchoRequest(vec![1, 2, 3])));
            frames
        }
        // As Open vSwitch does: no such experimenter (dump-flows then prints no locations).
        Message::MultipartRequest(req)
            if matches!(req.body, MultipartRequestBody::Experimenter { .. }) =>
        {
            vec![error_frame(
                h.xid,
                OfpError::BadRequest(ofp::BadRequestCode::BadExperimenter),
            )]
        }
        _ => Vec::new(),
    });
    let (result, out) = run(&mut conn, Command::DumpFlows { flow: vec![] });
    result.unwrap();
    assert!(
        parts.recv().unwrap() > 1,
        "the reply should have been split"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), expected.len());
    for (line, flow) in lines.iter().zip(&expected) {
        assert_eq!(*line, hairpinctl::syntax::flow::format_flow_stats(flow));
    }
}

#[test]
fn echo_requests_are_answered() {
    let (mut conn, seen) = fake_switch(hello13(), |h, msg| match msg {
        Message::BarrierRequest => vec![
            encode_to_vec(9, &Message::EchoRequest(b"ping".to_vec())),
            encode_to_vec(h.xid, &Message::BarrierReply),
        ],
        _ => Vec::new(),
    });
    let (result, out) = run(&mut conn, Command::Barrier);
    result.unwrap();
    assert_eq!(out, "OFPT_BARRIER_REPLY (OF1.3)\n");
    let messages: Vec<Message> = seen.iter().take(3).collect();
    assert!(
        messages.contains(&Message::EchoReply(b"ping".to_vec())),
        "{messages:?}"
    );
}

#[test]
fn switch_errors_name_type_and_code() {
    let (mut conn, _seen) = fake_switch(hello13(), |h, msg| match msg {
        Message::FlowMod(_) => vec![error_frame(
            h.xid,
            OfpError::BadMatch(BadMatchCode::BadPrereq),
        )],
        Message::BarrierRequest => vec![encode_to_vec(h.xid, &Message::BarrierReply)],
        _ => Vec::new(),
    });
    let (result, _) = run(
        &mut conn,
        Command::AddFlow {
            flow: vec!["priority=1,actions=drop".into()],
        },
    );
    assert_eq!(
        format!("error: {}", result.unwrap_err()),
        "error: OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ (type=4, code=9)"
    );
}

#[test]
fn add_flows_sends_everything_then_one_barrier_and_maps_errors_to_lines() {
    let dir = std::env::temp_dir().join(format!("hpctl-fake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("flows.txt");
    std::fs::write(
        &file,
        "# comment\npriority=1,actions=drop\n\npriority=2,actions=output:1\npriority=3,actions=drop\n",
    )
    .unwrap();
    let (mut conn, seen) = fake_switch(hello13(), move |h, msg| match msg {
        Message::FlowMod(fm) => {
            if fm.priority == 2 {
                vec![error_frame(
                    h.xid,
                    OfpError::FlowModFailed(FlowModFailedCode::TableFull),
                )]
            } else {
                Vec::new()
            }
        }
        Message::BarrierRequest => vec![encode_to_vec(h.xid, &Message::BarrierReply)],
        _ => Vec::new(),
    });
    let (result, _) = run(&mut conn, Command::AddFlows { file: file.clone() });
    let text = result.unwrap_err().to_string();
    assert_eq!(
        text,
        format!(
            "OFPET_FLOW_MOD_FAILED/OFPFMFC_TABLE_FULL (type=5, code=1) [{}:4]",
            file.display()
        )
    );
    let kinds: Vec<String> = seen
        .iter()
        .take(5)
        .map(|m| match m {
            Message::FlowMod(fm) => format!("flow{}", fm.priority),
            other => format!("type{}", other.msg_type()),
        })
        .collect();
    // HELLO, the three flows in file order, then a single barrier.
    assert_eq!(kinds, ["type0", "flow1", "flow2", "flow3", "type20"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn add_flows_stops_at_the_first_syntax_error_before_sending() {
    let dir = std::env::temp_dir().join(format!("hpctl-syntax-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.txt");
    std::fs::write(&file, "priority=1,actions=drop\npriority=2,actions=frob\n").unwrap();
    let (mut conn, seen) = fake_switch(hello13(), |_, _| Vec::new());
    let (result, _) = run(&mut conn, Command::AddFlows { file: file.clone() });
    let text = result.unwrap_err().to_string();
    assert_eq!(
        text,
        format!(
            "syntax error at `frob`: unknown action [{}:2]",
            file.display()
        )
    );
    drop(conn);
    let sent: Vec<Message> = seen.iter().collect();
    assert_eq!(sent, vec![hello13()], "nothing but HELLO may be sent");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_switch_without_openflow_13_is_refused() {
    let (client, mut switch) = UnixStream::pair().unwrap();
    thread::spawn(move || {
        let only_10 = Message::Hello(Hello {
            elements: vec![HelloElement::VersionBitmap(vec![1 << 1])],
        });
        switch.write_all(&encode_to_vec(0, &only_10)).unwrap();
        let _ = read_message(&mut switch);
    });
    let err = Connection::handshake(Stream::Unix(client), Duration::from_secs(5))
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("does not speak OpenFlow 1.3"),
        "{err}"
    );
}

#[test]
fn a_silent_switch_times_out() {
    let (client, switch) = UnixStream::pair().unwrap();
    let err = Connection::handshake(Stream::Unix(client), Duration::from_millis(200))
        .err()
        .unwrap();
    assert!(matches!(err, CtlError::Timeout(_)), "{err}");
    drop(switch);
}

#[test]
fn continuation_of_a_different_type_is_a_protocol_error() {
    let (mut conn, _seen) = fake_switch(hello13(), |h, msg| match msg {
        Message::MultipartRequest(_) => vec![
            encode_to_vec(
                h.xid,
                &Message::MultipartReply(ofp::MultipartReply {
                    flags: OFPMPF_REPLY_MORE,
                    body: MultipartReplyBody::Flow(vec![]),
                }),
            ),
            encode_to_vec(
                h.xid,
                &Message::MultipartReply(ofp::MultipartReply {
                    flags: 0,
                    body: MultipartReplyBody::Table(vec![]),
                }),
            ),
        ],
        _ => Vec::new(),
    });
    let (result, _) = run(&mut conn, Command::DumpFlows { flow: vec![] });
    assert!(matches!(result, Err(CtlError::Protocol(_))), "{result:?}");
}

#[test]
fn write_actions_reach_the_wire() {
    let (tx, rx) = mpsc::channel();
    let (mut conn, _seen) = fake_switch(hello13(), move |h, msg| match msg {
        Message::FlowMod(fm) => {
            tx.send(fm.instructions.clone()).unwrap();
            Vec::new()
        }
        Message::BarrierRequest => vec![encode_to_vec(h.xid, &Message::BarrierReply)],
        _ => Vec::new(),
    });
    let (result, _) = run(
        &mut conn,
        Command::AddFlow {
            flow: vec!["actions=write_actions(group:3),goto_table:2".into()],
        },
    );
    result.unwrap();
    assert_eq!(
        rx.recv().unwrap(),
        vec![
            Instruction::WriteActions(vec![ofp::Action::Group(3)]),
            Instruction::GotoTable(2)
        ]
    );
}
