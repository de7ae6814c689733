//! Property tests: random messages round-trip; random and mutated bytes never panic, and
//! whatever decodes re-encodes to something that decodes to the same value.

mod common;

use common::*;
use ofp::*;
use proptest::prelude::*;
use proptest::strategy::Union;

fn arb_value(id: OxmFieldId) -> impl Strategy<Value = OxmValue> {
    proptest::collection::vec(any::<u8>(), id.value_len()).prop_map(move |mut raw| {
        clear_above_width(id, &mut raw);
        OxmValue::from_bytes(id, &raw).expect("right length")
    })
}

fn arb_field_id() -> impl Strategy<Value = OxmFieldId> {
    proptest::sample::select(OxmFieldId::ALL)
}

/// A structurally valid field (value within width; if masked, no value bit outside the mask).
fn arb_field() -> impl Strategy<Value = OxmField> {
    arb_field_id().prop_flat_map(|id| {
        let masked = if id.maskable() {
            any::<bool>().boxed()
        } else {
            Just(false).boxed()
        };
        (arb_value(id), arb_value(id), masked).prop_map(move |(value, mask, masked)| {
            if !masked {
                return OxmField::exact(value);
            }
            let v: Vec<u8> = value
                .to_bytes()
                .iter()
                .zip(mask.to_bytes())
                .map(|(v, m)| v & m)
                .collect();
            OxmField::masked(OxmValue::from_bytes(id, &v).expect("len"), mask)
        })
    })
}

/// A match that passes `Match::validate`: one random field with its prerequisites.
fn arb_valid_match() -> impl Strategy<Value = Match> {
    prop_oneof![
        Just(Match::default()),
        arb_field().prop_map(|f| {
            let mut fields = prerequisites_of(f.value.field_id());
            fields.push(f);
            Match { fields }
        }),
    ]
}

/// Any structurally valid match (duplicates and missing prerequisites allowed), as in
/// switch-to-controller messages.
fn arb_any_match() -> impl Strategy<Value = Match> {
    proptest::collection::vec(arb_field(), 0..5).prop_map(|fields| Match { fields })
}

fn arb_padded_data(max_words: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<[u8; 8]>(), 0..max_words).prop_map(|words| words.concat())
}

fn arb_action() -> impl Strategy<Value = Action> {
    let set_field = arb_field_id()
        .prop_flat_map(arb_value)
        .prop_map(Action::SetField);
    Union::new(vec![
        (any::<u32>(), any::<u16>())
            .prop_map(|(port, max_len)| Action::Output { port, max_len })
            .boxed(),
        Just(Action::CopyTtlOut).boxed(),
        Just(Action::CopyTtlIn).boxed(),
        any::<u8>().prop_map(Action::SetMplsTtl).boxed(),
        Just(Action::DecMplsTtl).boxed(),
        any::<u16>().prop_map(Action::PushVlan).boxed(),
        Just(Action::PopVlan).boxed(),
        any::<u16>().prop_map(Action::PushMpls).boxed(),
        any::<u16>().prop_map(Action::PopMpls).boxed(),
        any::<u32>().prop_map(Action::SetQueue).boxed(),
        any::<u32>().prop_map(Action::Group).boxed(),
        any::<u8>().prop_map(Action::SetNwTtl).boxed(),
        Just(Action::DecNwTtl).boxed(),
        set_field.boxed(),
        any::<u16>().prop_map(Action::PushPbb).boxed(),
        Just(Action::PopPbb).boxed(),
        (any::<u32>(), arb_padded_data(3))
            .prop_map(|(experimenter, data)| Action::Experimenter { experimenter, data })
            .boxed(),
    ])
}

fn arb_actions() -> impl Strategy<Value = Vec<Action>> {
    proptest::collection::vec(arb_action(), 0..5)
}

fn arb_instruction() -> impl Strategy<Value = Instruction> {
    Union::new(vec![
        any::<u8>().prop_map(Instruction::GotoTable).boxed(),
        (any::<u64>(), any::<u64>())
            .prop_map(|(metadata, mask)| Instruction::WriteMetadata { metadata, mask })
            .boxed(),
        arb_actions().prop_map(Instruction::WriteActions).boxed(),
        arb_actions().prop_map(Instruction::ApplyActions).boxed(),
        Just(Instruction::ClearActions).boxed(),
        any::<u32>().prop_map(Instruction::Meter).boxed(),
        (any::<u32>(), arb_actions())
            .prop_map(|(pkttmp_id, actions)| {
                Instruction::Insp(InspInstruction { pkttmp_id, actions })
            })
            .boxed(),
        (
            any::<u32>().prop_filter("not BEBA", |e| *e != INSP_EXPERIMENTER),
            arb_padded_data(3),
        )
            .prop_map(|(experimenter, data)| Instruction::Experimenter { experimenter, data })
            .boxed(),
    ])
}

fn arb_flow_mod() -> impl Strategy<Value = FlowMod> {
    (
        any::<(u64, u64, u8, u16, u16, u16, u32, u32, u32)>(),
        0u8..5,
        0u16..32,
        arb_valid_match(),
        proptest::collection::vec(arb_instruction(), 0..4),
    )
        .prop_map(
            |(
                (cookie, cookie_mask, table_id, idle, hard, prio, buf, port, group),
                cmd,
                flags,
                m,
                i,
            )| FlowMod {
                cookie,
                cookie_mask,
                table_id,
                command: [
                    FlowModCommand::Add,
                    FlowModCommand::Modify,
                    FlowModCommand::ModifyStrict,
                    FlowModCommand::Delete,
                    FlowModCommand::DeleteStrict,
                ][usize::from(cmd)],
                idle_timeout: idle,
                hard_timeout: hard,
                priority: prio,
                buffer_id: buf,
                out_port: port,
                out_group: group,
                flags: FlowModFlags(flags),
                match_: m,
                instructions: i,
            },
        )
}

fn arb_bucket() -> impl Strategy<Value = Bucket> {
    (any::<(u16, u32, u32)>(), arb_actions()).prop_map(
        |((weight, watch_port, watch_group), actions)| Bucket {
            weight,
            watch_port,
            watch_group,
            actions,
        },
    )
}

fn arb_band() -> impl Strategy<Value = MeterBand> {
    prop_oneof![
        any::<(u32, u32)>().prop_map(|(rate, burst_size)| MeterBand::Drop { rate, burst_size }),
        any::<(u32, u32, u8)>().prop_map(|(rate, burst_size, prec_level)| MeterBand::DscpRemark {
            rate,
            burst_size,
            prec_level
        }),
        (any::<(u32, u32, u32)>(), arb_padded_data(2)).prop_map(
            |((rate, burst_size, experimenter), data)| {
                MeterBand::Experimenter {
                    rate,
                    burst_size,
                    experimenter,
                    data,
                }
            }
        ),
    ]
}

fn arb_name(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Z0-9 _-]{{0,{max}}}")).expect("regex")
}

fn arb_port() -> impl Strategy<Value = Port> {
    (
        any::<(u32, [u8; 6], u32, u32, u32, u32, u32)>(),
        any::<(u32, u32, u32)>(),
        arb_name(15),
    )
        .prop_map(
            |(
                (port_no, hw_addr, config, state, curr, advertised, supported),
                (peer, cs, ms),
                name,
            )| Port {
                port_no,
                hw_addr,
                name,
                config: PortConfig(config),
                state: PortState(state),
                curr,
                advertised,
                supported,
                peer,
                curr_speed: cs,
                max_speed: ms,
            },
        )
}

fn arb_pkttmp_mod() -> impl Strategy<Value = PktTmpMod> {
    let kinds = [
        ChecksumKind::Ipv4Header,
        ChecksumKind::Icmpv4,
        ChecksumKind::Icmpv6,
        ChecksumKind::Tcpv4,
        ChecksumKind::Udpv4,
        ChecksumKind::Tcpv6,
        ChecksumKind::Udpv6,
    ];
    let copy = any::<(u16, u16, u16)>().prop_map(|(src_offset, dst_offset, len)| CopyOp {
        src_offset,
        dst_offset,
        len,
    });
    let checksum = (
        proptest::sample::select(kinds.to_vec()),
        any::<(u16, u16, u16, u16)>(),
    )
        .prop_map(|(kind, (start, len, dst_offset, ip_offset))| ChecksumOp {
            kind,
            start,
            len,
            dst_offset,
            ip_offset,
        });
    prop_oneof![
        any::<u32>().prop_map(|pkttmp_id| PktTmpMod {
            command: PktTmpCommand::Delete,
            pkttmp_id,
            template: vec![],
            copy_ops: vec![],
            checksum_ops: vec![],
        }),
        (
            any::<u32>(),
            proptest::collection::vec(any::<u8>(), 0..100),
            proptest::collection::vec(copy, 0..4),
            proptest::collection::vec(checksum, 0..3),
        )
            .prop_map(|(pkttmp_id, template, copy_ops, checksum_ops)| PktTmpMod {
                command: PktTmpCommand::Add,
                pkttmp_id,
                template,
                copy_ops,
                checksum_ops,
            }),
    ]
}

fn arb_timer_mod() -> impl Strategy<Value = TimerMod> {
    prop_oneof![
        (any::<[u32; 4]>()).prop_map(|[timer_id, pkttmp_id, period_us, in_port]| TimerMod {
            command: TimerCommand::Delete,
            timer_id,
            pkttmp_id,
            period_us,
            in_port,
            actions: vec![],
        }),
        (any::<[u32; 4]>(), arb_actions()).prop_map(
            |([timer_id, pkttmp_id, period_us, in_port], actions)| TimerMod {
                command: TimerCommand::Add,
                timer_id,
                pkttmp_id,
                period_us,
                in_port,
                actions,
            }
        ),
    ]
}

fn arb_message() -> impl Strategy<Value = Message> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..64);
    Union::new(vec![
        bytes().prop_map(Message::EchoRequest).boxed(),
        bytes().prop_map(Message::EchoReply).boxed(),
        (any::<(u16, u16)>(), bytes())
            .prop_map(|((t, c), data)| {
                let error = match OfpError::from_type_code(t % 16, c % 16) {
                    OfpError::Experimenter { exp_type, .. } => OfpError::Experimenter {
                        exp_type,
                        experimenter: u32::from(c),
                    },
                    other => other,
                };
                Message::Error(ErrorMsg { error, data })
            })
            .boxed(),
        arb_flow_mod().prop_map(Message::FlowMod).boxed(),
        (any::<(u32, u16, u8, u8, u64)>(), arb_any_match(), bytes())
            .prop_map(
                |((buffer_id, total_len, reason, table_id, cookie), match_, data)| {
                    Message::PacketIn(PacketIn {
                        buffer_id,
                        total_len,
                        reason,
                        table_id,
                        cookie,
                        match_,
                        data,
                    })
                },
            )
            .boxed(),
        (any::<(u32, u32)>(), arb_actions(), bytes())
            .prop_map(|((buffer_id, in_port), actions, data)| {
                Message::PacketOut(PacketOut {
                    buffer_id,
                    in_port,
                    actions,
                    data,
                })
            })
            .boxed(),
        (
            any::<(u64, u16, u8, u8, u32, u32, u16, u16, u64, u64)>(),
            arb_any_match(),
        )
            .prop_map(|((c, p, r, t, ds, dn, it, ht, pc, bc), match_)| {
                Message::FlowRemoved(FlowRemoved {
                    cookie: c,
                    priority: p,
                    reason: r,
                    table_id: t,
                    duration_sec: ds,
                    duration_nsec: dn,
                    idle_timeout: it,
                    hard_timeout: ht,
                    packet_count: pc,
                    byte_count: bc,
                    match_,
                })
            })
            .boxed(),
        (
            0u16..3,
            0u8..4,
            any::<u32>(),
            proptest::collection::vec(arb_bucket(), 0..3),
        )
            .prop_map(|(c, t, group_id, buckets)| {
                Message::GroupMod(GroupMod {
                    command: [
                        GroupModCommand::Add,
                        GroupModCommand::Modify,
                        GroupModCommand::Delete,
                    ][usize::from(c)],
                    group_type: GroupType::from_u8(t).expect("0..4"),
                    group_id,
                    buckets,
                })
            })
            .boxed(),
        (
            0u16..3,
            0u16..16,
            any::<u32>(),
            proptest::collection::vec(arb_band(), 0..3),
        )
            .prop_map(|(c, flags, meter_id, bands)| {
                Message::MeterMod(MeterMod {
                    command: [
                        MeterModCommand::Add,
                        MeterModCommand::Modify,
                        MeterModCommand::Delete,
                    ][usize::from(c)],
                    flags: MeterFlags(flags),
                    meter_id,
                    bands,
                })
            })
            .boxed(),
        (any::<u8>(), arb_port())
            .prop_map(|(reason, desc)| Message::PortStatus(PortStatus { reason, desc }))
            .boxed(),
        proptest::collection::vec(arb_port(), 0..4)
            .prop_map(|ports| {
                Message::MultipartReply(MultipartReply {
                    flags: 0,
                    body: MultipartReplyBody::PortDesc(ports),
                })
            })
            .boxed(),
        (
            any::<u16>(),
            proptest::collection::vec(
                (
                    any::<u8>(),
                    arb_any_match(),
                    proptest::collection::vec(arb_instruction(), 0..3),
                ),
                0..3,
            ),
        )
            .prop_map(|(flags, entries)| {
                let stats = entries
                    .into_iter()
                    .map(|(table_id, match_, instructions)| FlowStats {
                        table_id,
                        duration_sec: 1,
                        duration_nsec: 2,
                        priority: 3,
                        idle_timeout: 4,
                        hard_timeout: 5,
                        flags: FlowModFlags(flags),
                        cookie: 6,
                        packet_count: 7,
                        byte_count: 8,
                        match_,
                        instructions,
                    })
                    .collect();
                Message::MultipartReply(MultipartReply {
                    flags,
                    body: MultipartReplyBody::Flow(stats),
                })
            })
            .boxed(),
        (0u32..4, any::<u64>())
            .prop_map(|(role, generation_id)| {
                Message::RoleRequest(RoleMsg {
                    role: ControllerRole::from_u32(role).expect("0..4"),
                    generation_id,
                })
            })
            .boxed(),
        any::<[u32; 6]>()
            .prop_map(|m| {
                Message::SetAsync(AsyncConfig {
                    packet_in_mask: [m[0], m[1]],
                    port_status_mask: [m[2], m[3]],
                    flow_removed_mask: [m[4], m[5]],
                })
            })
            .boxed(),
        arb_pkttmp_mod().prop_map(Message::PktTmpMod).boxed(),
        arb_timer_mod().prop_map(Message::TimerMod).boxed(),
        proptest::collection::vec(any::<u32>(), 0..4)
            .prop_map(|words| {
                Message::Hello(Hello {
                    elements: vec![HelloElement::VersionBitmap(words)],
                })
            })
            .boxed(),
    ])
}

/// If `bytes` decode, encoding the result and decoding again must give the same value.
fn assert_stable(bytes: &[u8]) {
    if let Ok((h, m)) = decode(bytes) {
        let again = encode_to_vec(h.xid, &m);
        let (h2, m2) = decode(&again).expect("re-encoding of a decoded message decodes");
        assert_eq!(m2, m);
        assert_eq!(h2.xid, h.xid);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_messages_round_trip(msg in arb_message()) {
        round_trip(&msg);
    }

    #[test]
    fn random_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..300), fix in any::<bool>()) {
        if fix && bytes.len() >= 8 {
            let len = (bytes.len() as u16).to_be_bytes();
            bytes[2..4].copy_from_slice(&len);
            bytes[0] = OFP_VERSION;
        }
        assert_stable(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic(
        msg in arb_message(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = encode_to_vec(1, &msg);
        for (at, v) in flips {
            let i = 8 + at % (bytes.len().saturating_sub(8).max(1));
            if let Some(b) = bytes.get_mut(i) {
                *b = v;
            }
        }
        assert_stable(&bytes);
    }
}
