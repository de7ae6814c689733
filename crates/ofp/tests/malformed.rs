//! Malformed input gets the (type, code) the spec names, and never a panic.

mod common;

use common::*;
use ofp::*;

fn error_of(bytes: &[u8]) -> OfpError {
    match decode(bytes) {
        Ok((_, m)) => panic!("decoded {m:?} from {bytes:02x?}"),
        Err(e) => e.error,
    }
}

/// Rewrites the header length to the buffer's length.
fn fix_len(bytes: &mut [u8]) {
    let len = (bytes.len() as u16).to_be_bytes();
    bytes[2..4].copy_from_slice(&len);
}

/// A FLOW_MOD with raw OXM TLVs and raw instruction bytes spliced in.
fn flow_mod_with(oxm: &[u8], instructions: &[u8]) -> Vec<u8> {
    let mut bytes = encode_to_vec(
        5,
        &Message::FlowMod(FlowMod::add(0, 1, Match::default(), vec![])),
    );
    bytes.truncate(48);
    let match_len = 4 + oxm.len();
    bytes.extend_from_slice(&1u16.to_be_bytes());
    bytes.extend_from_slice(&(match_len as u16).to_be_bytes());
    bytes.extend_from_slice(oxm);
    bytes.resize(48 + match_len.div_ceil(8) * 8, 0);
    bytes.extend_from_slice(instructions);
    fix_len(&mut bytes);
    bytes
}

fn tlv(field: u8, has_mask: bool, payload: &[u8]) -> Vec<u8> {
    tlv_len(field, has_mask, payload.len() as u8, payload)
}

fn tlv_len(field: u8, has_mask: bool, len: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x80, 0x00, (field << 1) | u8::from(has_mask), len];
    v.extend_from_slice(payload);
    v
}

const ETH_TYPE_IPV4: &[u8] = &[0x08, 0x00];

fn bad_match(code: BadMatchCode) -> OfpError {
    OfpError::BadMatch(code)
}

#[test]
fn header_errors() {
    assert_eq!(
        decode(&[4, 0, 0]).unwrap_err().error,
        OfpError::BadRequest(BadRequestCode::BadLen)
    );
    let hello = encode_to_vec(1, &Message::Hello(Hello::v13()));
    let mut longer = hello.clone();
    longer.push(0);
    assert_eq!(
        error_of(&longer),
        OfpError::BadRequest(BadRequestCode::BadLen)
    );
    let mut short_len = hello.clone();
    short_len[2..4].copy_from_slice(&4u16.to_be_bytes());
    assert_eq!(
        error_of(&short_len),
        OfpError::BadRequest(BadRequestCode::BadLen)
    );
    assert_eq!(peek_message_len(&short_len), Some(8));
    assert_eq!(peek_message_len(&hello[..7]), None);

    let mut barrier = encode_to_vec(77, &Message::BarrierRequest);
    barrier[0] = 5;
    let err = decode(&barrier).unwrap_err();
    assert_eq!(err.xid, 77);
    assert_eq!(err.error, OfpError::BadRequest(BadRequestCode::BadVersion));
    // A hello of another version still decodes, for version negotiation.
    let mut hello6 = hello.clone();
    hello6[0] = 6;
    assert!(decode(&hello6).is_ok());

    let mut unknown = encode_to_vec(1, &Message::BarrierRequest);
    unknown[1] = 30;
    assert_eq!(
        error_of(&unknown),
        OfpError::BadRequest(BadRequestCode::BadType)
    );

    let mut barrier_body = encode_to_vec(1, &Message::BarrierRequest);
    barrier_body.extend_from_slice(&[0; 8]);
    fix_len(&mut barrier_body);
    assert_eq!(
        error_of(&barrier_body),
        OfpError::BadRequest(BadRequestCode::BadLen)
    );
}

#[test]
fn unknown_multipart_is_bad_multipart() {
    let mut req = encode_to_vec(
        1,
        &Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::Desc,
        }),
    );
    req[8..10].copy_from_slice(&99u16.to_be_bytes());
    assert_eq!(
        error_of(&req),
        OfpError::BadRequest(BadRequestCode::BadMultipart)
    );
}

/// Every message truncated at every length (with the header length fixed up to match) is
/// either still a valid message or rejected with a length error; never a panic.
#[test]
fn truncation_at_every_length() {
    let samples = [
        Message::FlowMod(sample_flow_mod()),
        Message::PortStatus(PortStatus {
            reason: 0,
            desc: sample_port(1),
        }),
        Message::MultipartReply(MultipartReply {
            flags: 0,
            body: MultipartReplyBody::TableFeatures(vec![sample_table_features(1)]),
        }),
        Message::GroupMod(GroupMod {
            command: GroupModCommand::Add,
            group_type: GroupType::All,
            group_id: 1,
            buckets: vec![Bucket {
                weight: 0,
                watch_port: OFPP_ANY,
                watch_group: OFPG_ANY,
                actions: all_actions(),
            }],
        }),
        Message::RoleRequest(RoleMsg {
            role: ControllerRole::Equal,
            generation_id: 1,
        }),
    ];
    let length_errors = [
        OfpError::BadRequest(BadRequestCode::BadLen),
        OfpError::BadMatch(BadMatchCode::BadLen),
        OfpError::BadAction(BadActionCode::BadLen),
        OfpError::BadInstruction(BadInstructionCode::BadLen),
        OfpError::TableFeaturesFailed(TableFeaturesFailedCode::BadLen),
        OfpError::GroupModFailed(GroupModFailedCode::BadBucket),
    ];
    for msg in &samples {
        let full = encode_to_vec(3, msg);
        for n in 0..full.len() {
            let mut cut = full[..n].to_vec();
            assert!(
                decode(&cut).is_err(),
                "{n}-byte prefix with full length field"
            );
            if n < 8 {
                continue;
            }
            fix_len(&mut cut);
            if let Err(e) = decode(&cut) {
                assert!(
                    length_errors.contains(&e.error),
                    "{:?} cut at {n}: {:?}",
                    msg.msg_type(),
                    e
                );
            }
        }
    }
}

#[test]
fn oxm_errors() {
    let eth_ipv4 = tlv(5, false, ETH_TYPE_IPV4);
    let cases: Vec<(Vec<u8>, BadMatchCode, &str)> = vec![
        (
            tlv(40, false, &[0, 0]),
            BadMatchCode::BadField,
            "unknown field 40",
        ),
        (
            vec![0x00, 0x01, 0x00, 0x04, 0, 0, 0, 1],
            BadMatchCode::BadField,
            "NXM class, field 0 (NXM_OF_IN_PORT is not ours)",
        ),
        (
            [eth_ipv4.clone(), vec![0x00, 0x01, 0x3a, 0x02, 0, 1]].concat(),
            BadMatchCode::BadLen,
            "NXM_NX_IP_TTL of 2 bytes",
        ),
        (
            [eth_ipv4.clone(), vec![0x00, 0x01, 0x3b, 0x02, 1, 0xff]].concat(),
            BadMatchCode::BadMask,
            "a mask on NXM_NX_IP_TTL",
        ),
        (
            vec![0x00, 0x01, 0x3a, 0x01, 1],
            BadMatchCode::BadPrereq,
            "NXM_NX_IP_TTL without ETH_TYPE",
        ),
        (
            [
                tlv(5, false, &[0x08, 0x06]),
                vec![0x00, 0x01, 0x3a, 0x01, 1],
            ]
            .concat(),
            BadMatchCode::BadPrereq,
            "NXM_NX_IP_TTL on ARP",
        ),
        (
            tlv_len(0, false, 3, &[0, 0, 1]),
            BadMatchCode::BadLen,
            "IN_PORT of 3 bytes",
        ),
        (
            tlv_len(0, false, 8, &[0, 0, 0, 1]),
            BadMatchCode::BadLen,
            "TLV past the match",
        ),
        (
            tlv(5, true, &[8, 0, 0xff, 0xff]),
            BadMatchCode::BadMask,
            "mask on ETH_TYPE",
        ),
        (
            [eth_ipv4.clone(), eth_ipv4.clone()].concat(),
            BadMatchCode::DupField,
            "ETH_TYPE twice",
        ),
        (
            tlv(11, false, &[10, 0, 0, 1]),
            BadMatchCode::BadPrereq,
            "IPV4_SRC without ETH_TYPE",
        ),
        (
            [tlv(5, false, &[0x86, 0xdd]), tlv(11, false, &[10, 0, 0, 1])].concat(),
            BadMatchCode::BadPrereq,
            "IPV4_SRC with ETH_TYPE IPv6",
        ),
        (
            [tlv(5, true, &[0x08, 0x00, 0xff, 0xff])].concat(),
            BadMatchCode::BadMask,
            "masked ETH_TYPE",
        ),
        (
            [
                eth_ipv4.clone(),
                tlv(11, true, &[10, 0, 0, 1, 255, 255, 255, 0]),
            ]
            .concat(),
            BadMatchCode::BadWildcards,
            "IPV4_SRC value bit outside its mask",
        ),
        (
            tlv(7, false, &[1]),
            BadMatchCode::BadPrereq,
            "VLAN_PCP without VLAN_VID",
        ),
        (
            [tlv(6, false, &[0, 0]), tlv(7, false, &[1])].concat(),
            BadMatchCode::BadPrereq,
            "VLAN_PCP with VLAN_VID=NONE",
        ),
        (
            [tlv(6, false, &[0x10, 1]), tlv(7, false, &[8])].concat(),
            BadMatchCode::BadValue,
            "VLAN_PCP of 8",
        ),
        (
            tlv(6, false, &[0x20, 0]),
            BadMatchCode::BadValue,
            "VLAN_VID beyond 13 bits",
        ),
        (
            tlv(1, false, &[0, 0, 0, 1]),
            BadMatchCode::BadPrereq,
            "IN_PHY_PORT without IN_PORT",
        ),
    ];
    for (oxm, code, what) in cases {
        assert_eq!(
            error_of(&flow_mod_with(&oxm, &[])),
            bad_match(code),
            "{what}"
        );
    }
    let mut bad_type = flow_mod_with(&[], &[]);
    bad_type[48..50].copy_from_slice(&0u16.to_be_bytes());
    assert_eq!(error_of(&bad_type), bad_match(BadMatchCode::BadType));
    let mut short_match = flow_mod_with(&[], &[]);
    short_match[50..52].copy_from_slice(&2u16.to_be_bytes());
    assert_eq!(error_of(&short_match), bad_match(BadMatchCode::BadLen));
    let mut long_match = flow_mod_with(&[], &[]);
    long_match[50..52].copy_from_slice(&200u16.to_be_bytes());
    assert_eq!(error_of(&long_match), bad_match(BadMatchCode::BadLen));
}

#[test]
fn valid_prerequisite_chains_are_accepted() {
    let icmpv6_nd = [
        tlv(5, false, &[0x86, 0xdd]),
        tlv(10, false, &[58]),
        tlv(29, false, &[135]),
        tlv(32, false, &[1, 2, 3, 4, 5, 6]),
    ]
    .concat();
    assert!(decode(&flow_mod_with(&icmpv6_nd, &[])).is_ok());
    let wrong_nd_type = [
        tlv(5, false, &[0x86, 0xdd]),
        tlv(10, false, &[58]),
        tlv(29, false, &[136]),
        tlv(32, false, &[1, 2, 3, 4, 5, 6]),
    ]
    .concat();
    assert_eq!(
        error_of(&flow_mod_with(&wrong_nd_type, &[])),
        bad_match(BadMatchCode::BadPrereq)
    );
    let vlan_present_masked = [tlv(6, true, &[0x10, 0, 0x10, 0]), tlv(7, false, &[3])].concat();
    assert!(decode(&flow_mod_with(&vlan_present_masked, &[])).is_ok());
}

fn inst(kind: u16, len: u16, body: &[u8]) -> Vec<u8> {
    let mut v = kind.to_be_bytes().to_vec();
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn apply(actions: &[u8]) -> Vec<u8> {
    inst(
        4,
        8 + actions.len() as u16,
        &[[0u8; 4].as_slice(), actions].concat(),
    )
}

#[test]
fn instruction_errors() {
    let bad_inst = |c| OfpError::BadInstruction(c);
    let cases: Vec<(Vec<u8>, OfpError, &str)> = vec![
        (
            inst(7, 8, &[0; 4]),
            bad_inst(BadInstructionCode::UnknownInst),
            "type 7",
        ),
        (
            inst(1, 12, &[0; 8]),
            bad_inst(BadInstructionCode::BadLen),
            "len not a multiple of 8",
        ),
        (
            inst(1, 4, &[]),
            bad_inst(BadInstructionCode::BadLen),
            "len 4",
        ),
        (
            inst(1, 16, &[0; 12]),
            bad_inst(BadInstructionCode::BadLen),
            "GOTO_TABLE of 16",
        ),
        (
            inst(2, 16, &[0; 12]),
            bad_inst(BadInstructionCode::BadLen),
            "WRITE_METADATA of 16",
        ),
        (
            inst(4, 32, &[0; 4]),
            bad_inst(BadInstructionCode::BadLen),
            "past the message",
        ),
        (
            inst(
                0xffff,
                24,
                &[[0xbe, 0xba, 0xbe, 0xba, 0, 0, 0, 5].as_slice(), &[0; 12]].concat(),
            ),
            insp_error(insp_error::BAD_EXP_INSTRUCTION),
            "BEBA instr_type 5",
        ),
    ];
    for (bytes, err, what) in cases {
        assert_eq!(error_of(&flow_mod_with(&[], &bytes)), err, "{what}");
    }
}

#[test]
fn action_errors() {
    let bad = |c| OfpError::BadAction(c);
    let output = |len: u16| {
        let mut v = vec![0, 0];
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&[0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 0, 0, 0]);
        v
    };
    let set_field = |oxm: &[u8], len: u16| {
        let mut v = vec![0, 25];
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(oxm);
        v.resize(usize::from(len).max(4 + oxm.len()).div_ceil(8) * 8, 0);
        v
    };
    let cases: Vec<(Vec<u8>, OfpError, &str)> = vec![
        (
            vec![0, 99, 0, 8, 0, 0, 0, 0],
            bad(BadActionCode::BadType),
            "type 99",
        ),
        (
            output(8)[..8].to_vec(),
            bad(BadActionCode::BadLen),
            "OUTPUT of 8",
        ),
        (output(12), bad(BadActionCode::BadLen), "len 12"),
        (
            output(24),
            bad(BadActionCode::BadLen),
            "OUTPUT longer than the list",
        ),
        (
            vec![0, 11, 0, 0, 0, 0, 0, 0],
            bad(BadActionCode::BadLen),
            "len 0",
        ),
        (
            set_field(&tlv(40, false, &[0, 0]), 16),
            bad(BadActionCode::BadSetType),
            "set unknown field",
        ),
        (
            set_field(&tlv(3, true, &[0; 12]), 24),
            bad(BadActionCode::BadSetArgument),
            "set-field with a mask",
        ),
        (
            set_field(&tlv_len(0, false, 2, &[0, 1]), 8),
            bad(BadActionCode::BadSetLen),
            "set-field OXM length",
        ),
        (
            set_field(&tlv(12, false, &[1, 2, 3, 4]), 24),
            bad(BadActionCode::BadSetLen),
            "set-field action longer than its padding",
        ),
        (
            set_field(&tlv(7, false, &[9]), 8),
            bad(BadActionCode::BadSetArgument),
            "set VLAN_PCP 9",
        ),
    ];
    for (actions, err, what) in cases {
        assert_eq!(
            error_of(&flow_mod_with(&[], &apply(&actions))),
            err,
            "{what}"
        );
    }
}

#[test]
fn message_field_errors() {
    let mut fm = flow_mod_with(&[], &[]);
    fm[8 + 17] = 9;
    assert_eq!(
        error_of(&fm),
        OfpError::FlowModFailed(FlowModFailedCode::BadCommand)
    );
    let mut fm = flow_mod_with(&[], &[]);
    fm[8 + 36] = 0x80;
    assert_eq!(
        error_of(&fm),
        OfpError::FlowModFailed(FlowModFailedCode::BadFlags)
    );

    let group = encode_to_vec(
        1,
        &Message::GroupMod(GroupMod {
            command: GroupModCommand::Add,
            group_type: GroupType::All,
            group_id: 1,
            buckets: vec![],
        }),
    );
    let mut g = group.clone();
    g[9] = 7;
    assert_eq!(
        error_of(&g),
        OfpError::GroupModFailed(GroupModFailedCode::BadCommand)
    );
    let mut g = group.clone();
    g[10] = 4;
    assert_eq!(
        error_of(&g),
        OfpError::GroupModFailed(GroupModFailedCode::BadType)
    );
    let mut g = group.clone();
    g.extend_from_slice(&[0, 8, 0, 0, 0, 0, 0, 0]);
    fix_len(&mut g);
    assert_eq!(
        error_of(&g),
        OfpError::GroupModFailed(GroupModFailedCode::BadBucket)
    );

    let meter = encode_to_vec(
        1,
        &Message::MeterMod(MeterMod {
            command: MeterModCommand::Add,
            flags: MeterFlags::KBPS,
            meter_id: 1,
            bands: vec![MeterBand::Drop {
                rate: 1,
                burst_size: 0,
            }],
        }),
    );
    let mut m = meter.clone();
    m[9] = 3;
    assert_eq!(
        error_of(&m),
        OfpError::MeterModFailed(MeterModFailedCode::BadCommand)
    );
    let mut m = meter.clone();
    m[11] = 0x10;
    assert_eq!(
        error_of(&m),
        OfpError::MeterModFailed(MeterModFailedCode::BadFlags)
    );
    let mut m = meter.clone();
    m[17] = 3;
    assert_eq!(
        error_of(&m),
        OfpError::MeterModFailed(MeterModFailedCode::BadBand)
    );

    let mut role = encode_to_vec(
        1,
        &Message::RoleRequest(RoleMsg {
            role: ControllerRole::Master,
            generation_id: 0,
        }),
    );
    role[11] = 4;
    assert_eq!(
        error_of(&role),
        OfpError::RoleRequestFailed(RoleRequestFailedCode::BadRole)
    );

    let mut cfg = encode_to_vec(1, &Message::SetConfig(SwitchConfig::default()));
    cfg[9] = 4;
    assert_eq!(
        error_of(&cfg),
        OfpError::SwitchConfigFailed(SwitchConfigFailedCode::BadFlags)
    );

    let mut pm = encode_to_vec(1, &Message::PortMod(PortMod::default()));
    pm[27] = 0x02;
    assert_eq!(
        error_of(&pm),
        OfpError::PortModFailed(PortModFailedCode::BadConfig)
    );
    let mut pm = encode_to_vec(1, &Message::PortMod(PortMod::default()));
    pm[33] = 0x01;
    assert_eq!(
        error_of(&pm),
        OfpError::PortModFailed(PortModFailedCode::BadAdvertise)
    );
    let mut tm = encode_to_vec(1, &Message::TableMod(TableMod::default()));
    tm[15] = 4;
    assert_eq!(
        error_of(&tm),
        OfpError::TableModFailed(TableModFailedCode::BadConfig)
    );

    let mut tf = encode_to_vec(
        1,
        &Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::TableFeatures(vec![sample_table_features(0)]),
        }),
    );
    // First property type (at 16 + 64) becomes an undefined one.
    tf[80..82].copy_from_slice(&9u16.to_be_bytes());
    assert_eq!(
        error_of(&tf),
        OfpError::TableFeaturesFailed(TableFeaturesFailedCode::BadType)
    );
}

#[test]
fn insp_errors() {
    let add = |template: Vec<u8>| PktTmpMod {
        command: PktTmpCommand::Add,
        pkttmp_id: 1,
        template,
        copy_ops: vec![],
        checksum_ops: vec![],
    };
    let base = encode_to_vec(1, &Message::PktTmpMod(add(vec![1, 2, 3])));
    let mut bad_cmd = base.clone();
    bad_cmd[16] = 2;
    assert_eq!(
        error_of(&bad_cmd),
        insp_error(insp_error::PKTTMP_MOD_BAD_COMMAND)
    );
    let mut short = base[..20].to_vec();
    fix_len(&mut short);
    assert_eq!(error_of(&short), insp_error(insp_error::BAD_EXP_LEN));
    let mut del_with_template = base.clone();
    del_with_template[16] = 1;
    assert_eq!(
        error_of(&del_with_template),
        insp_error(insp_error::BAD_EXP_LEN)
    );

    let mut with_ops = add(vec![0; 8]);
    with_ops.copy_ops.push(CopyOp {
        src_offset: 0,
        dst_offset: 0,
        len: 1,
    });
    let ext = encode_to_vec(1, &Message::PktTmpMod(with_ops));
    assert_eq!(ext.len(), 32 + 16);
    let mut bad_op = ext.clone();
    bad_op[33] = 9;
    assert_eq!(error_of(&bad_op), insp_error(insp_error::PKTTMP_MOD_FAILED));
    let mut bad_op_len = ext.clone();
    bad_op_len[35] = 12;
    assert_eq!(error_of(&bad_op_len), insp_error(insp_error::BAD_EXP_LEN));
    let mut bad_source = ext.clone();
    bad_source[36] = 1;
    assert_eq!(
        error_of(&bad_source),
        insp_error(insp_error::PKTTMP_MOD_FAILED)
    );
}

#[test]
fn timer_mod_errors() {
    let timer = TimerMod {
        command: TimerCommand::Add,
        timer_id: 1,
        pkttmp_id: 2,
        period_us: 50_000,
        in_port: OFPP_CONTROLLER,
        actions: vec![Action::Output {
            port: 1,
            max_len: 0,
        }],
    };
    let add = encode_to_vec(1, &Message::TimerMod(timer.clone()));
    assert_eq!(add.len(), 40 + 16, "fixed part, then one output action");
    let mut bad_cmd = add.clone();
    bad_cmd[16] = 2;
    assert_eq!(
        error_of(&bad_cmd),
        insp_error(insp_error::TIMER_MOD_BAD_COMMAND)
    );
    let mut short = add[..39].to_vec();
    fix_len(&mut short);
    assert_eq!(error_of(&short), insp_error(insp_error::BAD_EXP_LEN));
    let mut delete_with_actions = add.clone();
    delete_with_actions[16] = 1;
    assert_eq!(
        error_of(&delete_with_actions),
        insp_error(insp_error::BAD_EXP_LEN)
    );
    let mut action_cut = add[..52].to_vec();
    fix_len(&mut action_cut);
    assert_eq!(
        error_of(&action_cut),
        OfpError::BadAction(BadActionCode::BadLen)
    );
}

#[test]
fn base_pkttmp_mod_is_beba_layout() {
    let msg = Message::PktTmpMod(PktTmpMod {
        command: PktTmpCommand::Add,
        pkttmp_id: 0x0102_0304,
        template: vec![0xaa, 0xbb],
        copy_ops: vec![],
        checksum_ops: vec![],
    });
    let bytes = encode_to_vec(9, &msg);
    assert_eq!(
        bytes,
        [
            4, 4, 0, 28, 0, 0, 0, 9, 0xbe, 0xba, 0xbe, 0xba, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4, 0, 0, 0,
            0, 0xaa, 0xbb
        ]
    );
    let insp = Instruction::Insp(InspInstruction {
        pkttmp_id: 7,
        actions: vec![],
    });
    let mut b = Vec::new();
    insp.emit(&mut b);
    assert_eq!(
        b,
        [
            0xff, 0xff, 0, 24, 0xbe, 0xba, 0xbe, 0xba, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0,
            0
        ]
    );
}
