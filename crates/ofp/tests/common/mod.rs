//! Sample values shared by the integration tests.
#![allow(dead_code)]

use ofp::*;

/// Asserts decode(encode(msg)) == msg and that re-encoding the decoded value is byte-exact.
pub fn round_trip(msg: &Message) -> Vec<u8> {
    let bytes = encode_to_vec(0x1234_5678, msg);
    let (header, decoded) = match decode(&bytes) {
        Ok(ok) => ok,
        Err(e) => panic!("decode of {msg:?} failed: {e}\nbytes {bytes:02x?}"),
    };
    assert_eq!(&decoded, msg);
    assert_eq!(header.xid, 0x1234_5678);
    assert_eq!(usize::from(header.length), bytes.len());
    assert_eq!(header.msg_type, msg.msg_type());
    assert_eq!(peek_message_len(&bytes), Some(bytes.len()));
    assert_eq!(encode_to_vec(0x1234_5678, &decoded), bytes);
    bytes
}

/// A value of field `id` built from `seed` bytes, cut to the field's width.
pub fn value_of(id: OxmFieldId, seed: u8) -> OxmValue {
    let len = id.value_len();
    let mut raw: Vec<u8> = (0..len)
        .map(|i| seed.wrapping_add((i as u8).wrapping_mul(37)))
        .collect();
    clear_above_width(id, &mut raw);
    OxmValue::from_bytes(id, &raw).expect("right length")
}

/// Clears the bits of `raw` above the field's width.
pub fn clear_above_width(id: OxmFieldId, raw: &mut [u8]) {
    let extra = raw.len() * 8 - id.bits() as usize;
    for bit in 0..extra {
        raw[bit / 8] &= !(0x80 >> (bit % 8));
    }
}

/// A masked field of `id` whose value has no bits outside the mask.
pub fn masked_of(id: OxmFieldId, seed: u8) -> OxmField {
    let value = value_of(id, seed).to_bytes();
    let mut mask: Vec<u8> = (0..value.len())
        .map(|i| if i % 2 == 0 { 0xff } else { 0xf0 })
        .collect();
    clear_above_width(id, &mut mask);
    let value: Vec<u8> = value.iter().zip(&mask).map(|(v, m)| v & m).collect();
    OxmField::masked(
        OxmValue::from_bytes(id, &value).expect("len"),
        OxmValue::from_bytes(id, &mask).expect("len"),
    )
}

/// The fields `id` needs before it (its prerequisite chain), exact-matched.
pub fn prerequisites_of(id: OxmFieldId) -> Vec<OxmField> {
    use OxmValue as V;
    let eth = |t: u16| OxmField::exact(V::EthType(t));
    let ip_proto = |ethertype: u16, p: u8| vec![eth(ethertype), OxmField::exact(V::IpProto(p))];
    match id.prerequisite() {
        Prerequisite::None => vec![],
        Prerequisite::Present(OxmFieldId::InPort) => vec![OxmField::exact(V::InPort(1))],
        Prerequisite::VlanPresent => vec![OxmField::exact(V::VlanVid(OFPVID_PRESENT | 10))],
        Prerequisite::OneOf(OxmFieldId::EthType, values) => vec![eth(values[0] as u16)],
        Prerequisite::OneOf(OxmFieldId::IpProto, values) => {
            let p = values[0] as u8;
            ip_proto(if p == 58 { 0x86dd } else { 0x0800 }, p)
        }
        Prerequisite::OneOf(OxmFieldId::Icmpv6Type, values) => {
            let mut v = ip_proto(0x86dd, 58);
            v.push(OxmField::exact(V::Icmpv6Type(values[0] as u8)));
            v
        }
        other => panic!("no sample prerequisites for {other:?}"),
    }
}

/// A valid match on `id` (exact or masked) with its prerequisites.
pub fn valid_match_on(id: OxmFieldId, masked: bool) -> Match {
    let mut fields = prerequisites_of(id);
    fields.push(if masked {
        masked_of(id, 0x5a)
    } else {
        OxmField::exact(value_of(id, 0x5a))
    });
    Match { fields }
}

/// One of every action.
pub fn all_actions() -> Vec<Action> {
    vec![
        Action::Output {
            port: 3,
            max_len: OFPCML_NO_BUFFER,
        },
        Action::CopyTtlOut,
        Action::CopyTtlIn,
        Action::SetMplsTtl(9),
        Action::DecMplsTtl,
        Action::PushVlan(0x8100),
        Action::PopVlan,
        Action::PushMpls(0x8847),
        Action::PopMpls(0x0800),
        Action::SetQueue(4),
        Action::Group(5),
        Action::SetNwTtl(64),
        Action::DecNwTtl,
        Action::SetField(OxmValue::Ipv4Dst(0x0a00_0001)),
        Action::SetField(OxmValue::Ipv6Src([7; 16])),
        Action::PushPbb(0x88e7),
        Action::PopPbb,
        Action::Experimenter {
            experimenter: 0x2320,
            data: (1..=16).collect(),
        },
    ]
}

/// One of every instruction, including InSP.
pub fn all_instructions() -> Vec<Instruction> {
    vec![
        Instruction::GotoTable(3),
        Instruction::WriteMetadata {
            metadata: 0x1122_3344_5566_7788,
            mask: 0xffff_0000_ffff_0000,
        },
        Instruction::WriteActions(all_actions()),
        Instruction::ApplyActions(vec![Action::PopVlan]),
        Instruction::ClearActions,
        Instruction::Meter(7),
        Instruction::Insp(InspInstruction {
            pkttmp_id: 42,
            actions: vec![Action::Output {
                port: OFPP_IN_PORT,
                max_len: 0,
            }],
        }),
        Instruction::Experimenter {
            experimenter: 0x00ab_cdef,
            data: vec![9; 8],
        },
    ]
}

pub fn sample_port(n: u32) -> Port {
    Port {
        port_no: n,
        hw_addr: [2, 0, 0, 0, 0, n as u8],
        name: format!("eth{n}"),
        config: PortConfig::NO_PACKET_IN,
        state: PortState::LIVE,
        curr: OFPPF_1GB_FD | OFPPF_COPPER,
        advertised: OFPPF_1GB_FD,
        supported: OFPPF_1GB_FD | OFPPF_10GB_FD,
        peer: 0,
        curr_speed: 1_000_000,
        max_speed: 10_000_000,
    }
}

pub fn sample_flow_mod() -> FlowMod {
    FlowMod {
        cookie: 0xdead_beef,
        cookie_mask: u64::MAX,
        table_id: 1,
        command: FlowModCommand::ModifyStrict,
        idle_timeout: 10,
        hard_timeout: 20,
        priority: 1000,
        buffer_id: OFP_NO_BUFFER,
        out_port: OFPP_ANY,
        out_group: OFPG_ANY,
        flags: FlowModFlags::SEND_FLOW_REM | FlowModFlags::CHECK_OVERLAP,
        match_: valid_match_on(OxmFieldId::TcpDst, false),
        instructions: all_instructions(),
    }
}

/// One of every table feature property.
pub fn all_table_feature_props() -> Vec<TableFeatureProp> {
    use TableFeatureProp as P;
    let inst_ids = vec![
        TypeId::standard(instruction_type::GOTO_TABLE),
        TypeId::standard(instruction_type::APPLY_ACTIONS),
        TypeId {
            id_type: instruction_type::EXPERIMENTER,
            data: INSP_EXPERIMENTER.to_be_bytes().to_vec(),
        },
    ];
    let action_ids = vec![
        TypeId::standard(action_type::OUTPUT),
        TypeId::standard(action_type::SET_FIELD),
    ];
    let oxm_ids = vec![
        OxmId::known(OxmFieldId::InPort, false),
        OxmId::known(OxmFieldId::EthDst, true),
        OxmId {
            header: 0xffff_0204,
            experimenter: Some(0x4f4e_4600),
        },
    ];
    vec![
        P::Instructions(inst_ids.clone()),
        P::InstructionsMiss(inst_ids),
        P::NextTables(vec![1, 2, 3]),
        P::NextTablesMiss(vec![]),
        P::WriteActions(action_ids.clone()),
        P::WriteActionsMiss(action_ids.clone()),
        P::ApplyActions(action_ids.clone()),
        P::ApplyActionsMiss(action_ids),
        P::Match(oxm_ids.clone()),
        P::Wildcards(oxm_ids.clone()),
        P::WriteSetfield(oxm_ids.clone()),
        P::WriteSetfieldMiss(oxm_ids.clone()),
        P::ApplySetfield(oxm_ids.clone()),
        P::ApplySetfieldMiss(oxm_ids),
        P::Experimenter {
            experimenter: 1,
            exp_type: 2,
            data: vec![3, 4, 5],
        },
        P::ExperimenterMiss {
            experimenter: 6,
            exp_type: 7,
            data: vec![],
        },
    ]
}

pub fn sample_table_features(table_id: u8) -> TableFeatures {
    TableFeatures {
        table_id,
        name: format!("table{table_id}"),
        metadata_match: u64::MAX,
        metadata_write: u64::MAX,
        config: 0,
        max_entries: 100_000,
        properties: all_table_feature_props(),
    }
}
