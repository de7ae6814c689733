//! Flow-mod, group-mod and meter-mod semantics of OpenFlow 1.3.5 sections 6.4-6.6, checked
//! against the switch core with a real datapath behind it.

use std::sync::{Arc, Mutex};

use dataplane::datapath::DatapathConfig;
use ofp::{
    Action, BadActionCode, BadInstructionCode, Bucket, FlowMod, FlowModCommand, FlowModFailedCode,
    FlowModFlags, FlowStatsRequest, GroupMod, GroupModCommand, GroupType, Instruction, Match,
    MeterBand, MeterFlags, MeterMod, MeterModCommand, MeterModFailedCode, MultipartReplyBody,
    MultipartRequestBody, OfpError, OxmField, OxmValue, OFPG_ANY, OFPP_ANY, OFP_NO_BUFFER,
};
use switch_core::{PacketOutJob, PacketOutQueue, Switch};

#[derive(Clone, Default)]
struct Collected(Arc<Mutex<Vec<PacketOutJob>>>);

impl PacketOutQueue for Collected {
    fn submit(&mut self, job: PacketOutJob) {
        self.0.lock().unwrap().push(job);
    }
}

fn switch() -> Switch {
    switch_with_datapath(Collected::default()).0
}

/// A switch whose packet-outs go to `jobs`, and its datapath's readers.
fn switch_with_datapath(jobs: Collected) -> (Switch, dataplane::datapath::DatapathReaderFactory) {
    let config = DatapathConfig {
        n_tables: 8,
        ..DatapathConfig::default()
    };
    Switch::with_datapath(1, config, |w| Box::new(w), Box::new(jobs))
}

fn in_port(p: u32) -> Match {
    Match {
        fields: vec![OxmField::exact(OxmValue::InPort(p))],
    }
}

fn output(port: u32) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(vec![Action::Output {
        port,
        max_len: 0,
    }])]
}

fn flow(command: FlowModCommand, table_id: u8, priority: u16, match_: Match) -> FlowMod {
    FlowMod {
        cookie: 0,
        cookie_mask: 0,
        table_id,
        command,
        idle_timeout: 0,
        hard_timeout: 0,
        priority,
        buffer_id: OFP_NO_BUFFER,
        out_port: OFPP_ANY,
        out_group: OFPG_ANY,
        flags: FlowModFlags::default(),
        match_,
        instructions: output(2),
    }
}

/// A group of one bucket that outputs to port 1.
fn group_to_port_1(command: GroupModCommand, group_type: GroupType, group_id: u32) -> GroupMod {
    GroupMod {
        command,
        group_type,
        group_id,
        buckets: vec![Bucket {
            weight: 0,
            watch_port: OFPP_ANY,
            watch_group: OFPG_ANY,
            actions: vec![Action::Output {
                port: 1,
                max_len: 0,
            }],
        }],
    }
}

fn flows(sw: &Switch) -> Vec<ofp::FlowStats> {
    let req = FlowStatsRequest {
        table_id: ofp::OFPTT_ALL,
        out_port: OFPP_ANY,
        out_group: OFPG_ANY,
        cookie: 0,
        cookie_mask: 0,
        match_: Match::default(),
    };
    match sw.multipart(&MultipartRequestBody::Flow(req), 0).unwrap() {
        MultipartReplyBody::Flow(f) => f,
        other => panic!("{other:?}"),
    }
}

#[test]
fn identical_add_replaces_and_modify_keeps_cookie() {
    let mut sw = switch();
    let mut fm = flow(FlowModCommand::Add, 0, 10, in_port(1));
    fm.cookie = 7;
    sw.flow_mod(fm.clone(), 0).unwrap();
    fm.instructions = output(3);
    sw.flow_mod(fm.clone(), 0).unwrap();
    let f = flows(&sw);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].instructions, output(3));

    let mut modify = flow(FlowModCommand::Modify, 0, 0, Match::default());
    modify.cookie = 99;
    modify.instructions = output(4);
    sw.flow_mod(modify.clone(), 0).unwrap();
    let f = flows(&sw);
    assert_eq!((f[0].cookie, f[0].instructions.clone()), (7, output(4)));
}

#[test]
fn delete_filters_by_strictness_cookie_and_out_port() {
    let mut sw = switch();
    for (p, cookie) in [(1, 0x10), (2, 0x20), (3, 0x30)] {
        let mut fm = flow(FlowModCommand::Add, 0, 10, in_port(p));
        fm.cookie = cookie;
        fm.instructions = output(p + 10);
        sw.flow_mod(fm.clone(), 0).unwrap();
    }
    let mut strict_wrong_priority = flow(FlowModCommand::DeleteStrict, 0, 11, in_port(1));
    strict_wrong_priority.instructions.clear();
    sw.flow_mod(strict_wrong_priority.clone(), 0).unwrap();
    assert_eq!(flows(&sw).len(), 3);

    let mut by_cookie = flow(FlowModCommand::Delete, ofp::OFPTT_ALL, 0, Match::default());
    by_cookie.cookie = 0x20;
    by_cookie.cookie_mask = 0xff;
    sw.flow_mod(by_cookie.clone(), 0).unwrap();
    assert_eq!(flows(&sw).len(), 2);

    let mut by_port = flow(FlowModCommand::Delete, ofp::OFPTT_ALL, 0, Match::default());
    by_port.out_port = 13;
    sw.flow_mod(by_port.clone(), 0).unwrap();
    let left = flows(&sw);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].cookie, 0x10);
}

#[test]
fn refused_flow_mods_name_the_spec_error_and_change_nothing() {
    let mut sw = switch();
    sw.flow_mod(flow(FlowModCommand::Add, 0, 10, in_port(1)), 0)
        .unwrap();
    let cases: Vec<(FlowMod, OfpError)> = vec![
        (
            flow(FlowModCommand::Add, 8, 1, Match::default()),
            OfpError::FlowModFailed(FlowModFailedCode::BadTableId),
        ),
        (
            FlowMod {
                instructions: vec![Instruction::GotoTable(1)],
                ..flow(FlowModCommand::Add, 2, 1, Match::default())
            },
            OfpError::BadInstruction(BadInstructionCode::BadTableId),
        ),
        (
            FlowMod {
                instructions: vec![Instruction::ApplyActions(vec![Action::Group(5)])],
                ..flow(FlowModCommand::Add, 0, 1, Match::default())
            },
            OfpError::BadAction(BadActionCode::BadOutGroup),
        ),
        (
            FlowMod {
                instructions: vec![Instruction::Meter(9)],
                ..flow(FlowModCommand::Add, 0, 1, Match::default())
            },
            OfpError::MeterModFailed(MeterModFailedCode::UnknownMeter),
        ),
        (
            FlowMod {
                instructions: vec![Instruction::ApplyActions(vec![Action::SetField(
                    OxmValue::TcpDst(80),
                )])],
                ..flow(FlowModCommand::Add, 0, 1, Match::default())
            },
            OfpError::BadAction(BadActionCode::MatchInconsistent),
        ),
        (
            FlowMod {
                flags: FlowModFlags::CHECK_OVERLAP,
                ..flow(FlowModCommand::Add, 0, 10, Match::default())
            },
            OfpError::FlowModFailed(FlowModFailedCode::Overlap),
        ),
    ];
    for (fm, expected) in cases {
        assert_eq!(sw.flow_mod(fm.clone(), 0), Err(expected));
    }
    assert_eq!(flows(&sw).len(), 1);
}

#[test]
fn group_and_meter_deletion_remove_their_flows_with_flow_removed() {
    let mut sw = switch();
    let group = group_to_port_1(GroupModCommand::Add, GroupType::All, 1);
    sw.group_mod(&group, 0).unwrap();
    let meter = MeterMod {
        command: MeterModCommand::Add,
        flags: MeterFlags::KBPS,
        meter_id: 3,
        bands: vec![MeterBand::Drop {
            rate: 1000,
            burst_size: 0,
        }],
    };
    sw.meter_mod(&meter, 0).unwrap();
    let mut via_group = flow(FlowModCommand::Add, 0, 5, in_port(1));
    via_group.flags = FlowModFlags::SEND_FLOW_REM;
    via_group.instructions = vec![Instruction::ApplyActions(vec![Action::Group(1)])];
    sw.flow_mod(via_group.clone(), 0).unwrap();
    let mut metered = flow(FlowModCommand::Add, 0, 5, in_port(2));
    metered.instructions = vec![Instruction::Meter(3)];
    sw.flow_mod(metered.clone(), 0).unwrap();
    sw.flow_mod(flow(FlowModCommand::Add, 0, 5, in_port(3)), 0)
        .unwrap();

    let removed = sw
        .group_mod(
            &GroupMod {
                command: GroupModCommand::Delete,
                ..group
            },
            1_000_000_000,
        )
        .unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].reason, ofp::OFPRR_GROUP_DELETE);
    assert_eq!(removed[0].duration_sec, 1);
    let removed = sw
        .meter_mod(
            &MeterMod {
                command: MeterModCommand::Delete,
                ..meter
            },
            0,
        )
        .unwrap();
    assert!(removed.is_empty(), "no SEND_FLOW_REM, no message");
    assert_eq!(flows(&sw).len(), 1);
}

#[test]
fn timeouts_expire_with_their_reason() {
    let mut sw = switch();
    let mut idle = flow(FlowModCommand::Add, 0, 1, in_port(1));
    idle.idle_timeout = 1;
    idle.flags = FlowModFlags::SEND_FLOW_REM;
    sw.flow_mod(idle.clone(), 0).unwrap();
    let mut hard = flow(FlowModCommand::Add, 0, 1, in_port(2));
    hard.hard_timeout = 2;
    hard.flags = FlowModFlags::SEND_FLOW_REM;
    sw.flow_mod(hard.clone(), 0).unwrap();
    assert!(sw.expire(999_999_999).is_empty());
    let first = sw.expire(1_000_000_000);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].reason, ofp::OFPRR_IDLE_TIMEOUT);
    let second = sw.expire(2_000_000_000);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].reason, ofp::OFPRR_HARD_TIMEOUT);
    assert!(flows(&sw).is_empty());
}

/// Drops what the datapath sends, for tests that only need packets to match.
struct Discard;

impl dataplane::batch::PacketSink for Discard {
    fn output(&mut self, _port: u32, _frame: &[u8]) {}

    fn packet_in(&mut self, _ev: &dataplane::batch::PacketInEvent<'_>) {}
}

#[test]
fn traffic_keeps_an_idle_flow_until_it_stops() {
    const S: u64 = 1_000_000_000;
    let (mut sw, readers) = switch_with_datapath(Collected::default());
    let mut fm = flow(FlowModCommand::Add, 0, 10, in_port(3));
    fm.idle_timeout = 1;
    fm.flags = FlowModFlags::SEND_FLOW_REM;
    sw.flow_mod(fm, 0).unwrap();
    sw.publish();
    let mut reader = readers.reader();
    let mut send = |now| {
        let mut batch = dataplane::batch::PacketBatch::new(1, 128);
        batch.push(3, &[0xab; 60]);
        reader.process(now, &mut batch, &mut Discard);
    };
    // Housekeeping every half second; a packet just before each sweep up to 2.4 s.
    for tick in 1..=5 {
        send(tick * S / 2 - 1);
        assert!(sw.expire(tick * S / 2).is_empty(), "expired at tick {tick}");
    }
    // Last seen active at the 2.5 s sweep: idle from 3.5 s on, not before.
    assert!(sw.expire(3 * S).is_empty());
    let removed = sw.expire(7 * S / 2);
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].reason, ofp::OFPRR_IDLE_TIMEOUT);
    assert_eq!((removed[0].packet_count, removed[0].byte_count), (5, 300));
}

#[test]
fn flow_mod_releases_its_buffered_packet_from_the_ingress_port() {
    let jobs = Collected::default();
    let (mut sw, readers) = switch_with_datapath(jobs.clone());
    let frame = vec![0xab; 60];
    let buffer_id = readers.shared().buffers.store(&frame, 3, 0).unwrap();
    let mut fm = flow(FlowModCommand::Add, 0, 10, in_port(3));
    fm.buffer_id = buffer_id;
    sw.flow_mod(fm.clone(), 0).unwrap();
    let released = jobs.0.lock().unwrap();
    assert_eq!(released.len(), 1);
    assert_eq!((released[0].in_port, &released[0].frame), (3, &frame));
    drop(released);
    // The buffer is spent: a second release names the spec's error and adds nothing.
    fm.priority = 11;
    assert_eq!(
        sw.flow_mod(fm.clone(), 0),
        Err(OfpError::BadRequest(ofp::BadRequestCode::BufferEmpty))
    );
    assert_eq!(flows(&sw).len(), 1);
}

fn template(command: ofp::PktTmpCommand, id: u32, bytes: Vec<u8>) -> ofp::PktTmpMod {
    ofp::PktTmpMod {
        command,
        pkttmp_id: id,
        template: bytes,
        copy_ops: vec![ofp::CopyOp {
            src_offset: 6,
            dst_offset: 0,
            len: 6,
        }],
        checksum_ops: Vec::new(),
    }
}

#[test]
fn insp_templates_are_checked_before_flows_use_them() {
    let beba = |exp_type| OfpError::Experimenter {
        exp_type,
        experimenter: 0xBEBA_BEBA,
    };
    let mut sw = switch();
    let insp = |id| {
        vec![Instruction::Insp(ofp::InspInstruction {
            pkttmp_id: id,
            actions: vec![Action::Output {
                port: ofp::OFPP_TABLE,
                max_len: 0,
            }],
        })]
    };
    let mut fm = flow(FlowModCommand::Add, 0, 10, in_port(1));
    fm.instructions = insp(7);
    assert_eq!(
        sw.flow_mod(fm.clone(), 0),
        Err(beba(10)),
        "unknown template"
    );

    let add = template(ofp::PktTmpCommand::Add, 7, vec![0; 60]);
    sw.pkttmp_mod(&add).unwrap();
    assert_eq!(
        sw.pkttmp_mod(&add),
        Ok(()),
        "the same content again changes nothing"
    );
    let other = template(ofp::PktTmpCommand::Add, 7, vec![1; 60]);
    assert_eq!(sw.pkttmp_mod(&other), Err(beba(11)), "the id is taken");
    // A copy that writes past the template's end is refused at creation.
    assert_eq!(
        sw.pkttmp_mod(&template(ofp::PktTmpCommand::Add, 8, vec![0; 4])),
        Err(beba(11))
    );
    sw.flow_mod(fm.clone(), 0).unwrap();
    assert_eq!(flows(&sw)[0].instructions, insp(7));
    assert_eq!(sw.template_uses(7), 1);

    let delete = template(ofp::PktTmpCommand::Delete, 7, Vec::new());
    assert_eq!(
        sw.pkttmp_mod(&delete),
        Err(beba(11)),
        "a flow entry uses it"
    );
    assert_eq!(sw.templates().len(), 1);
    fm.command = FlowModCommand::Delete;
    sw.flow_mod(fm, 0).unwrap();
    assert_eq!(sw.template_uses(7), 0);
    sw.pkttmp_mod(&delete).unwrap();
    assert_eq!(sw.pkttmp_mod(&delete), Err(beba(11)), "already gone");
    assert!(sw.templates().is_empty());
}

#[test]
fn template_limits_answer_pkttmp_mod_failed() {
    use switch_core::templates::{MAX_TEMPLATES, MAX_TEMPLATE_LEN, MAX_TEMPLATE_MEMORY};
    let failed = Err(OfpError::Experimenter {
        exp_type: 11,
        experimenter: 0xBEBA_BEBA,
    });
    let mut sw = switch();
    let too_long = template(ofp::PktTmpCommand::Add, 1, vec![0; MAX_TEMPLATE_LEN + 1]);
    assert_eq!(sw.pkttmp_mod(&too_long), failed);
    let memory = |sw: &Switch| -> usize { sw.templates().list().map(|(i, _)| i.memory).sum() };
    // Large templates, and empty ones with thousands of operations, until the memory limit.
    let many_ops = |id| ofp::PktTmpMod {
        copy_ops: vec![
            ofp::CopyOp {
                src_offset: 0,
                dst_offset: 0,
                len: 0,
            };
            4094
        ],
        ..template(ofp::PktTmpCommand::Add, id, Vec::new())
    };
    let big = |id| template(ofp::PktTmpCommand::Add, id, vec![0; MAX_TEMPLATE_LEN]);
    for kind in [big as fn(u32) -> ofp::PktTmpMod, many_ops] {
        let mut id = 0;
        while sw.pkttmp_mod(&kind(id)).is_ok() {
            id += 1;
            assert!((id as usize) < MAX_TEMPLATES, "no memory limit");
        }
        assert_eq!(sw.pkttmp_mod(&kind(id)), failed, "memory limit");
        let held = memory(&sw);
        assert!(
            held <= MAX_TEMPLATE_MEMORY && held > MAX_TEMPLATE_MEMORY * 9 / 10,
            "{held}"
        );
        for id in 0..id {
            sw.pkttmp_mod(&template(ofp::PktTmpCommand::Delete, id, vec![]))
                .unwrap();
        }
        assert_eq!(memory(&sw), 0);
    }
    for id in 0..MAX_TEMPLATES as u32 {
        sw.pkttmp_mod(&template(ofp::PktTmpCommand::Add, id, vec![0; 60]))
            .unwrap();
    }
    let one_more = template(ofp::PktTmpCommand::Add, 1 << 20, vec![0; 60]);
    assert_eq!(sw.pkttmp_mod(&one_more), failed, "count limit");
    assert_eq!(sw.templates().len(), MAX_TEMPLATES);
    assert!(
        memory(&sw) > MAX_TEMPLATES * 120,
        "{} bytes for {MAX_TEMPLATES} entries",
        memory(&sw)
    );
}

/// A match on IPv4 `ip_proto` with one masked transport port field.
fn masked_port(proto: u8, field: OxmValue, mask: OxmValue) -> Match {
    Match {
        fields: vec![
            OxmField::exact(OxmValue::EthType(0x0800)),
            OxmField::exact(OxmValue::IpProto(proto)),
            OxmField::masked(field, mask),
        ],
    }
}

#[test]
fn masked_transport_ports_are_accepted_and_shown_back() {
    let mut sw = switch();
    let matches = [
        masked_port(6, OxmValue::TcpDst(0x0400), OxmValue::TcpDst(0xfc00)),
        masked_port(6, OxmValue::TcpSrc(0x0050), OxmValue::TcpSrc(0xfff0)),
        masked_port(17, OxmValue::UdpSrc(0x1000), OxmValue::UdpSrc(0xf000)),
        masked_port(17, OxmValue::UdpDst(0x0035), OxmValue::UdpDst(0x00ff)),
        masked_port(132, OxmValue::SctpSrc(0x0001), OxmValue::SctpSrc(0x0001)),
        masked_port(132, OxmValue::SctpDst(0x8000), OxmValue::SctpDst(0x8000)),
    ];
    for m in &matches {
        sw.flow_mod(flow(FlowModCommand::Add, 0, 10, m.clone()), 0)
            .unwrap_or_else(|e| panic!("{m:?} refused: {e:?}"));
    }
    let mut shown: Vec<Match> = flows(&sw).into_iter().map(|f| f.match_).collect();
    let mut expected = matches.to_vec();
    let key = |m: &Match| format!("{m:?}");
    shown.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(shown, expected, "flow stats show each mask as installed");

    // A value with bits outside its mask is refused as any masked field's would be.
    let stray = masked_port(6, OxmValue::TcpDst(0x0401), OxmValue::TcpDst(0xfc00));
    assert_eq!(
        sw.flow_mod(flow(FlowModCommand::Add, 0, 10, stray), 0),
        Err(OfpError::BadMatch(ofp::BadMatchCode::BadWildcards))
    );
    // A strict delete names the same masked match.
    sw.flow_mod(
        flow(FlowModCommand::DeleteStrict, 0, 10, matches[0].clone()),
        0,
    )
    .unwrap();
    assert_eq!(flows(&sw).len(), matches.len() - 1);
}

/// Timer changes as the switch core hands them to the datapath threads.
#[derive(Clone, Default)]
struct Timers(Arc<Mutex<Vec<Result<switch_core::timers::TimerJob, u32>>>>);

impl switch_core::timers::TimerQueue for Timers {
    fn set(&mut self, job: switch_core::timers::TimerJob) {
        self.0.lock().unwrap().push(Ok(job));
    }
    fn remove(&mut self, timer_id: u32) {
        self.0.lock().unwrap().push(Err(timer_id));
    }
}

#[test]
fn timer_triggers_are_checked_then_handed_to_the_datapath() {
    use ofp::{insp_error, TimerCommand, TimerMod};
    let beba = |code| Err(ofp::insp_error(code));
    let timer = |command, timer_id, pkttmp_id, period_us| TimerMod {
        command,
        timer_id,
        pkttmp_id,
        period_us,
        in_port: ofp::OFPP_CONTROLLER,
        actions: vec![Action::Output {
            port: ofp::OFPP_FLOOD,
            max_len: 0,
        }],
    };
    let mut sw = switch();
    let garp = timer(TimerCommand::Add, 1, 5, 100_000);
    assert_eq!(
        sw.timer_mod(&garp),
        Err(OfpError::BadRequest(ofp::BadRequestCode::BadExpType)),
        "a switch without a timer queue says it does not support them"
    );
    let queue = Timers::default();
    sw.set_timer_queue(Box::new(queue.clone()));
    assert_eq!(
        sw.timer_mod(&garp),
        beba(insp_error::TIMER_MOD_FAILED),
        "no template 5"
    );
    sw.pkttmp_mod(&template(ofp::PktTmpCommand::Add, 4, vec![0; 60]))
        .unwrap();
    assert_eq!(
        sw.timer_mod(&timer(TimerCommand::Add, 1, 4, 100_000)),
        beba(insp_error::TIMER_MOD_FAILED),
        "template 4 copies from a trigger, and a timer has none"
    );
    let standalone = ofp::PktTmpMod {
        copy_ops: vec![],
        ..template(ofp::PktTmpCommand::Add, 5, vec![0; 60])
    };
    sw.pkttmp_mod(&standalone).unwrap();
    let mut bad_port = garp.clone();
    bad_port.in_port = 0;
    assert_eq!(
        sw.timer_mod(&bad_port),
        Err(OfpError::BadRequest(ofp::BadRequestCode::BadPort))
    );
    let mut bad_group = garp.clone();
    bad_group.actions = vec![Action::Group(9)];
    assert_eq!(
        sw.timer_mod(&bad_group),
        Err(OfpError::BadAction(BadActionCode::BadOutGroup))
    );
    assert_eq!(
        sw.timer_mod(&timer(TimerCommand::Add, 2, 5, 999)),
        beba(insp_error::TIMER_RATE_EXCEEDED),
        "above 1,000 packets per second"
    );
    assert!(queue.0.lock().unwrap().is_empty(), "nothing refused is run");

    sw.timer_mod(&garp).unwrap();
    sw.timer_mod(&garp).unwrap();
    let jobs = std::mem::take(&mut *queue.0.lock().unwrap());
    let [Ok(job)] = &jobs[..] else {
        panic!("one timer set, the repeated ADD changing nothing: {jobs:?}");
    };
    assert_eq!((job.timer_id, job.pkttmp_id), (1, 5));
    assert_eq!(job.period_ns, 100_000_000);
    assert_eq!(
        job.actions,
        [dataplane::ir::Action::Output {
            port: ofp::OFPP_FLOOD,
            max_len: 0
        }]
    );
    assert!(
        !sw.has_unpublished(),
        "template 5 is visible before the first packet"
    );

    let delete = template(ofp::PktTmpCommand::Delete, 5, Vec::new());
    assert_eq!(
        sw.pkttmp_mod(&delete),
        beba(insp_error::PKTTMP_MOD_FAILED),
        "a timer sends template 5"
    );
    sw.timer_mod(&timer(TimerCommand::Add, 1, 5, 1_000_000))
        .unwrap();
    sw.timer_mod(&timer(TimerCommand::Add, 2, 5, 1_000_000))
        .unwrap();
    sw.timer_mod(&timer(TimerCommand::Delete, ofp::TIMER_ALL, 0, 0))
        .unwrap();
    let changes: Vec<_> = std::mem::take(&mut *queue.0.lock().unwrap())
        .into_iter()
        .map(|c| c.map(|job| (job.timer_id, job.period_ns)))
        .collect();
    assert_eq!(
        changes,
        [
            Ok((1, 1_000_000_000)),
            Ok((2, 1_000_000_000)),
            Err(1),
            Err(2)
        ]
    );
    sw.pkttmp_mod(&delete).unwrap();
}

#[test]
fn nxm_nx_ip_ttl_matches_and_is_set_by_set_field() {
    let (mut sw, readers) = switch_with_datapath(Collected::default());
    let mut fm = flow(
        FlowModCommand::Add,
        0,
        10,
        Match {
            fields: vec![
                OxmField::exact(OxmValue::EthType(0x0800)),
                OxmField::exact(OxmValue::NxIpTtl(1)),
            ],
        },
    );
    sw.flow_mod(fm.clone(), 0).unwrap();
    sw.publish();
    assert_eq!(flows(&sw)[0].match_, fm.match_, "read back as it came");
    let mut reader = readers.reader();
    let ttl = |ttl: u8| {
        let mut p = vec![0u8; 60];
        p[12..14].copy_from_slice(&[0x08, 0x00]);
        p[14] = 0x45;
        p[16..18].copy_from_slice(&46u16.to_be_bytes());
        p[22] = ttl;
        p
    };
    let mut batch = dataplane::batch::PacketBatch::new(2, 2048);
    assert!(batch.push(1, &ttl(1)) && batch.push(1, &ttl(2)));
    reader.process(0, &mut batch, &mut Discard);
    assert_eq!(
        flows(&sw)[0].packet_count,
        1,
        "only the TTL-1 packet matches"
    );

    // set_field:9->nw_ttl, as Open vSwitch takes it: the TTL written, the IPv4 header
    // checksum kept right (checked here by summing the header, not by the switch's code).
    fm.priority = 11;
    fm.instructions = vec![Instruction::ApplyActions(vec![
        Action::SetField(OxmValue::NxIpTtl(9)),
        Action::Output {
            port: 2,
            max_len: 0,
        },
    ])];
    for port_no in [1, 2] {
        let desc = ofp::Port {
            port_no,
            name: format!("p{port_no}"),
            state: ofp::PortState::LIVE,
            ..ofp::Port::default()
        };
        sw.add_port(desc, 0);
    }
    sw.flow_mod(fm.clone(), 0).unwrap();
    sw.publish();
    let mut sent = Sent::default();
    let mut batch = dataplane::batch::PacketBatch::new(1, 2048);
    let mut request = ttl(1);
    let sum = ones_complement_sum(&request[14..34]);
    request[24..26].copy_from_slice(&(!sum).to_be_bytes());
    assert_eq!(ones_complement_sum(&request[14..34]), 0xffff);
    assert!(batch.push(1, &request));
    reader.process(0, &mut batch, &mut sent);
    let [(port, frame)] = sent.0.as_slice() else {
        panic!("one frame out: {:?}", sent.0);
    };
    assert_eq!((*port, frame[22]), (2, 9));
    assert_eq!(ones_complement_sum(&frame[14..34]), 0xffff, "IPv4 checksum");

    // Like any set-field, it needs the packet known to be IP.
    fm.priority = 12;
    fm.match_ = Match { fields: Vec::new() };
    assert_eq!(
        sw.flow_mod(fm, 0),
        Err(OfpError::BadAction(BadActionCode::MatchInconsistent))
    );
}

/// Keeps what the datapath sends.
#[derive(Default)]
struct Sent(Vec<(u32, Vec<u8>)>);

impl dataplane::batch::PacketSink for Sent {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.0.push((port, frame.to_vec()));
    }

    fn packet_in(&mut self, _ev: &dataplane::batch::PacketInEvent<'_>) {}
}

/// The 16-bit ones' complement sum of `bytes` (0xffff over a header with a right checksum).
fn ones_complement_sum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[test]
fn a_refused_flow_mod_keeps_its_buffered_packet() {
    let jobs = Collected::default();
    let (mut sw, readers) = switch_with_datapath(jobs.clone());
    sw.flow_mod(flow(FlowModCommand::Add, 0, 10, in_port(3)), 0)
        .unwrap();
    let frame = vec![0xcd; 60];
    let buffer_id = readers.shared().buffers.store(&frame, 3, 0).unwrap();
    let mut overlapping = flow(FlowModCommand::Add, 0, 10, Match::default());
    overlapping.flags = FlowModFlags::CHECK_OVERLAP;
    overlapping.buffer_id = buffer_id;
    assert_eq!(
        sw.flow_mod(overlapping, 0),
        Err(OfpError::FlowModFailed(FlowModFailedCode::Overlap))
    );
    assert!(jobs.0.lock().unwrap().is_empty());
    let mut releasing = flow(FlowModCommand::Add, 0, 20, in_port(3));
    releasing.buffer_id = buffer_id;
    sw.flow_mod(releasing, 0).unwrap();
    let released = jobs.0.lock().unwrap();
    assert_eq!(released.len(), 1, "the buffer survived the refusal");
    assert_eq!(released[0].frame, frame);
}

/// Apply-actions instructions of `count` SET_QUEUE actions (8 bytes each).
fn queues(count: usize) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(vec![Action::SetQueue(1); count])]
}

#[test]
fn entries_too_long_for_a_stats_reply_are_refused() {
    // A flow's entry in a flow-stats reply is 48 bytes, its match (8 here) and its
    // instructions (8 + 8 per action); a multipart reply carries at most 65,519 bytes of it.
    let fits = (ofp::MAX_MULTIPART_ITEM_LEN - 48 - 8 - 8) / 8;
    let mut sw = switch();
    let mut too_long = flow(FlowModCommand::Add, 0, 10, Match::default());
    too_long.instructions = queues(fits + 1);
    assert_eq!(
        sw.flow_mod(too_long, 0),
        Err(OfpError::BadAction(BadActionCode::TooMany))
    );
    let mut longest = flow(FlowModCommand::Add, 0, 10, Match::default());
    longest.instructions = queues(fits);
    sw.flow_mod(longest, 0).unwrap();
    let mut replies = Vec::new();
    let body = MultipartReplyBody::Flow(flows(&sw));
    ofp::encode_multipart_reply_split(7, &body, &mut replies);
    for reply in &replies {
        let declared = usize::from(u16::from_be_bytes([reply[2], reply[3]]));
        assert_eq!(
            declared,
            reply.len(),
            "a reply's length field is its length"
        );
    }
    assert_eq!(replies.len(), 1);

    // A group's entry in a group-desc reply is 8 bytes and its buckets (16 + 8 per action).
    let actions = (ofp::MAX_MULTIPART_ITEM_LEN - 8 - 16) / 8;
    let bucket = |n: usize| Bucket {
        weight: 0,
        watch_port: OFPP_ANY,
        watch_group: OFPG_ANY,
        actions: vec![Action::SetQueue(1); n],
    };
    let group = |n: usize| GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::Indirect,
        group_id: 1,
        buckets: vec![bucket(n)],
    };
    assert_eq!(
        sw.group_mod(&group(actions + 1), 0),
        Err(OfpError::GroupModFailed(
            ofp::GroupModFailedCode::OutOfBuckets
        ))
    );
    sw.group_mod(&group(actions), 0).unwrap();
}

#[test]
fn a_deleted_group_takes_insp_flows_with_it_and_timers_hold_it() {
    use ofp::{TimerCommand, TimerMod};
    let mut sw = switch();
    sw.set_timer_queue(Box::new(Timers::default()));
    let group = |command| group_to_port_1(command, GroupType::Indirect, 7);
    sw.group_mod(&group(GroupModCommand::Add), 0).unwrap();
    // A template without copy operations, so a timer may send it.
    let standalone = ofp::PktTmpMod {
        copy_ops: Vec::new(),
        ..template(ofp::PktTmpCommand::Add, 3, vec![0xff; 60])
    };
    sw.pkttmp_mod(&standalone).unwrap();
    let mut insp_flow = flow(FlowModCommand::Add, 0, 10, in_port(2));
    insp_flow.instructions = vec![Instruction::Insp(ofp::InspInstruction {
        pkttmp_id: 3,
        actions: vec![Action::Group(7)],
    })];
    insp_flow.flags = FlowModFlags::SEND_FLOW_REM;
    sw.flow_mod(insp_flow, 0).unwrap();
    let timer = |command| TimerMod {
        command,
        timer_id: 1,
        pkttmp_id: 3,
        period_us: 100_000,
        in_port: ofp::OFPP_CONTROLLER,
        actions: vec![Action::Group(7)],
    };
    sw.timer_mod(&timer(TimerCommand::Add)).unwrap();
    assert_eq!(
        sw.group_mod(&group(GroupModCommand::Delete), 0),
        Err(OfpError::GroupModFailed(
            ofp::GroupModFailedCode::ChainedGroup
        )),
        "a timer forwards to it"
    );
    assert_eq!(flows(&sw).len(), 1, "a refused delete removes nothing");
    sw.timer_mod(&timer(TimerCommand::Delete)).unwrap();
    let removed = sw.group_mod(&group(GroupModCommand::Delete), 0).unwrap();
    assert_eq!(
        removed.iter().map(|r| r.reason).collect::<Vec<_>>(),
        [ofp::OFPRR_GROUP_DELETE],
        "the InSP flow forwarding to the group goes with it"
    );
    assert!(flows(&sw).is_empty());
}
