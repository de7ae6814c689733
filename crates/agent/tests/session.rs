//! Protocol behaviour of one connection, message by message: negotiation, errors, roles,
//! async filtering and barriers.

mod common;

use agent::roles::{Mastership, Roles};
use agent::session::{Event, Session, SwitchState};
use ofp::{
    BadRequestCode, ControllerRole, FlowRemoved, Header, Hello, HelloElement, HelloFailedCode,
    Match, Message, OfpError, RoleMsg, RoleRequestFailedCode,
};

fn state() -> SwitchState {
    SwitchState {
        switch: common::switch(),
        roles: Roles::default(),
    }
}

fn header(version: u8, xid: u32) -> Header {
    Header {
        version,
        msg_type: 0,
        length: 8,
        xid,
    }
}

fn hello(words: Vec<u32>) -> Message {
    Message::Hello(Hello {
        elements: vec![HelloElement::VersionBitmap(words)],
    })
}

fn error_of(msg: &Message) -> OfpError {
    match msg {
        Message::Error(e) => e.error,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn negotiated(state: &mut SwitchState, conn: u64) -> Session {
    let mut s = Session::new(conn);
    state.roles.connect(conn, Mastership::Allowed);
    let out = s.on_message(state, &header(4, 1), hello(vec![1 << 4 | 1 << 1]), &[], 0);
    assert!(out.replies.is_empty() && !out.close);
    s
}

#[test]
fn hello_without_13_fails_and_closes() {
    let mut st = state();
    let mut s = Session::new(1);
    let out = s.on_message(&mut st, &header(4, 3), hello(vec![1 << 1 | 1 << 3]), &[], 0);
    assert!(out.close);
    assert_eq!(
        error_of(&out.replies[0].1),
        OfpError::HelloFailed(HelloFailedCode::Incompatible)
    );
    assert_eq!(out.replies[0].0, 3);
    // Without a bitmap, the header version decides: an OpenFlow 1.0 peer cannot talk 1.3.
    let out = Session::new(2).on_message(
        &mut st,
        &header(1, 4),
        Message::Hello(Hello::default()),
        &[],
        0,
    );
    assert!(out.close);
    // A newer peer without a bitmap negotiates down to 1.3.
    let out = Session::new(3).on_message(
        &mut st,
        &header(6, 5),
        Message::Hello(Hello::default()),
        &[],
        0,
    );
    assert!(!out.close && out.replies.is_empty());
}

#[test]
fn requests_before_hello_and_with_wrong_version_are_refused() {
    let mut st = state();
    let mut s = Session::new(1);
    let out = s.on_message(&mut st, &header(4, 8), Message::FeaturesRequest, &[], 0);
    assert!(out.close);
    let mut s = negotiated(&mut st, 2);
    let out = s.on_message(
        &mut st,
        &header(5, 9),
        Message::FeaturesRequest,
        &[1, 2, 3],
        0,
    );
    assert_eq!(
        error_of(&out.replies[0].1),
        OfpError::BadRequest(BadRequestCode::BadVersion)
    );
    let out = s.on_message(&mut st, &header(4, 10), Message::FeaturesRequest, &[], 0);
    match &out.replies[0] {
        (10, Message::FeaturesReply(f)) => assert_eq!(f.datapath_id, 9),
        other => panic!("{other:?}"),
    }
}

#[test]
fn slaves_cannot_modify_and_stale_generations_fail() {
    let mut st = state();
    let mut a = negotiated(&mut st, 1);
    let mut b = negotiated(&mut st, 2);
    let role = |r, g| {
        Message::RoleRequest(RoleMsg {
            role: r,
            generation_id: g,
        })
    };
    let out = a.on_message(
        &mut st,
        &header(4, 1),
        role(ControllerRole::Master, 5),
        &[],
        0,
    );
    assert!(matches!(
        out.replies[0].1,
        Message::RoleReply(RoleMsg {
            role: ControllerRole::Master,
            generation_id: 5
        })
    ));
    let out = b.on_message(
        &mut st,
        &header(4, 2),
        role(ControllerRole::Master, 4),
        &[],
        0,
    );
    assert_eq!(
        error_of(&out.replies[0].1),
        OfpError::RoleRequestFailed(RoleRequestFailedCode::Stale)
    );
    b.on_message(
        &mut st,
        &header(4, 3),
        role(ControllerRole::Master, 6),
        &[],
        0,
    );
    assert_eq!(st.roles.role(1), ControllerRole::Slave);
    let out = a.on_message(
        &mut st,
        &header(4, 4),
        Message::TableMod(ofp::TableMod {
            table_id: 0,
            config: 0,
        }),
        &[],
        0,
    );
    assert_eq!(
        error_of(&out.replies[0].1),
        OfpError::BadRequest(BadRequestCode::IsSlave)
    );
}

#[test]
fn the_default_async_config_is_open_vswitchs() {
    let mut st = state();
    let mut s = negotiated(&mut st, 1);
    let out = s.on_message(&mut st, &header(4, 2), Message::GetAsyncRequest, &[], 0);
    let expected = ofp::AsyncConfig {
        // NO_MATCH and ACTION for masters and equals (no INVALID_TTL), none for slaves.
        packet_in_mask: [0x3, 0],
        port_status_mask: [0x7, 0x7],
        // IDLE_TIMEOUT, HARD_TIMEOUT, DELETE and GROUP_DELETE for masters and equals.
        flow_removed_mask: [0xf, 0],
    };
    assert!(
        matches!(&out.replies[0].1, Message::GetAsyncReply(c) if *c == expected),
        "{:?}",
        out.replies
    );
}

#[test]
fn async_config_filters_events_per_role() {
    let mut st = state();
    let mut s = negotiated(&mut st, 1);
    let removed = Event::FlowRemoved(FlowRemoved {
        cookie: 0,
        priority: 0,
        reason: ofp::OFPRR_DELETE,
        table_id: 0,
        duration_sec: 0,
        duration_nsec: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        packet_count: 0,
        byte_count: 0,
        match_: Match::default(),
    });
    assert!(s.wants(ControllerRole::Equal, &removed));
    assert!(
        !s.wants(ControllerRole::Slave, &removed),
        "slaves get no flow-removed by default"
    );
    let config = ofp::AsyncConfig {
        flow_removed_mask: [0, 1 << ofp::OFPRR_DELETE],
        ..Default::default()
    };
    s.on_message(&mut st, &header(4, 2), Message::SetAsync(config), &[], 0);
    assert!(!s.wants(ControllerRole::Equal, &removed));
    assert!(s.wants(ControllerRole::Slave, &removed));
    let out = s.on_message(&mut st, &header(4, 3), Message::GetAsyncRequest, &[], 0);
    assert!(matches!(&out.replies[0].1, Message::GetAsyncReply(c) if *c == config));
}

#[test]
fn multipart_requests_in_parts_are_joined() {
    let mut st = state();
    let mut s = negotiated(&mut st, 1);
    let part = |flags, tables: Vec<ofp::TableFeatures>| {
        Message::MultipartRequest(ofp::MultipartRequest {
            flags,
            body: ofp::MultipartRequestBody::TableFeatures(tables),
        })
    };
    let table = ofp::TableFeatures::default();
    for _ in 0..2000 {
        let out = s.on_message(
            &mut st,
            &header(4, 7),
            part(ofp::OFPMPF_REQ_MORE, vec![table.clone(), table.clone()]),
            &[],
            0,
        );
        assert!(out.replies.is_empty(), "no reply before the last part");
    }
    let out = s.on_message(&mut st, &header(4, 7), part(0, vec![table]), &[], 0);
    assert_eq!(
        error_of(&out.replies[0].1),
        OfpError::TableFeaturesFailed(ofp::TableFeaturesFailedCode::Eperm),
        "the joined request sets table features, which Hairpin refuses"
    );
    let desc_with_more = Message::MultipartRequest(ofp::MultipartRequest {
        flags: ofp::OFPMPF_REQ_MORE,
        body: ofp::MultipartRequestBody::Desc,
    });
    let out = s.on_message(&mut st, &header(4, 8), desc_with_more, &[], 0);
    assert_eq!(
        error_of(&out.replies[0].1),
        OfpError::BadRequest(BadRequestCode::BadMultipart)
    );
    let out = s.on_message(&mut st, &header(4, 9), part(0, Vec::new()), &[], 0);
    assert!(matches!(
        &out.replies[0].1,
        Message::MultipartReply(r) if matches!(&r.body, ofp::MultipartReplyBody::TableFeatures(t) if t.len() == 4)
    ));
}

/// The controllets' bus subscribes to some kinds of message; the others are not copied for
/// it (a packet-in copied for a bus that does not publish packet-ins is an allocation per
/// packet).
#[test]
fn a_subscription_receives_only_the_kinds_it_asked_for() {
    use agent::outbox::EventKind;
    use agent::{Agent, AgentConfig};
    let agent = Agent::new(state().switch, AgentConfig::default());
    let mut events = agent.subscribe(&[EventKind::PortStatus]);
    let mut channels = agent.channels();
    let packet_in = ofp::PacketIn {
        buffer_id: u32::MAX,
        total_len: 60,
        reason: 0,
        table_id: 0,
        cookie: 0,
        match_: Match::default(),
        data: Vec::new(),
    };
    channels.queue_packet_in(&packet_in, &[0; 60]);
    let status = ofp::PortStatus {
        reason: 2,
        desc: ofp::Port::default(),
    };
    channels.queue(Event::PortStatus(status.clone()));
    channels.flush();
    match events.try_recv() {
        Ok(Event::PortStatus(got)) => assert_eq!(got, status),
        other => panic!("expected the port status first, got {other:?}"),
    }
    assert!(events.try_recv().is_err(), "the packet-in was not copied");

    let mut all = agent.subscribe(&[EventKind::PacketIn]);
    channels.queue_packet_in(&packet_in, &[7; 60]);
    channels.flush();
    match all.try_recv() {
        Ok(Event::PacketIn(got)) => assert_eq!(got.data, [7; 60]),
        other => panic!("expected the packet-in, got {other:?}"),
    }
}

#[test]
fn an_unknown_experimenter_message_names_what_is_missing() {
    let mut st = state();
    let mut s = negotiated(&mut st, 1);
    let experimenter = |experimenter| {
        Message::Experimenter(ofp::ExperimenterMsg {
            experimenter,
            exp_type: 3,
            data: Vec::new(),
        })
    };
    let ours = s.on_message(
        &mut st,
        &header(4, 5),
        experimenter(ofp::INSP_EXPERIMENTER),
        &[],
        0,
    );
    assert_eq!(
        error_of(&ours.replies[0].1),
        OfpError::BadRequest(BadRequestCode::BadExpType),
        "the InSP experimenter is supported, that exp_type is not"
    );
    let theirs = s.on_message(&mut st, &header(4, 6), experimenter(0x2320), &[], 0);
    assert_eq!(
        error_of(&theirs.replies[0].1),
        OfpError::BadRequest(BadRequestCode::BadExperimenter)
    );
}
