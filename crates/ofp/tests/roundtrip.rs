//! decode(encode(x)) == x and byte-exact re-encoding for every message, multipart body, OXM
//! field, action, instruction and table-feature property.

mod common;

use common::*;
use ofp::*;

fn mp_request(body: MultipartRequestBody) -> Message {
    Message::MultipartRequest(MultipartRequest { flags: 0, body })
}

fn mp_reply(body: MultipartReplyBody) -> Message {
    Message::MultipartReply(MultipartReply {
        flags: OFPMPF_REPLY_MORE,
        body,
    })
}

fn every_message() -> Vec<Message> {
    let config = SwitchConfig {
        flags: OFPC_FRAG_DROP,
        miss_send_len: 256,
    };
    let async_config = AsyncConfig {
        packet_in_mask: [3, 1],
        port_status_mask: [7, 7],
        flow_removed_mask: [15, 0],
    };
    let group_mod = GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::Select,
        group_id: 9,
        buckets: vec![
            Bucket {
                weight: 2,
                watch_port: OFPP_ANY,
                watch_group: OFPG_ANY,
                actions: all_actions(),
            },
            Bucket {
                weight: 1,
                watch_port: 3,
                watch_group: 4,
                actions: vec![],
            },
        ],
    };
    vec![
        Message::Hello(Hello::default()),
        Message::Hello(Hello::v13()),
        Message::Hello(Hello {
            elements: vec![
                HelloElement::VersionBitmap(vec![0x12, 0]),
                HelloElement::Unknown {
                    elem_type: 9,
                    data: vec![1, 2, 3],
                },
            ],
        }),
        Message::Error(ErrorMsg {
            error: OfpError::BadMatch(BadMatchCode::BadPrereq),
            data: vec![4, 14, 0, 8, 0, 0, 0, 1],
        }),
        Message::Error(ErrorMsg {
            error: insp_error(insp_error::PKTTMP_MOD_BAD_COMMAND),
            data: vec![],
        }),
        Message::EchoRequest(vec![]),
        Message::EchoReply(b"ping".to_vec()),
        Message::Experimenter(ExperimenterMsg {
            experimenter: 0x2320,
            exp_type: 17,
            data: vec![1, 2, 3],
        }),
        Message::FeaturesRequest,
        Message::FeaturesReply(SwitchFeatures {
            datapath_id: 0x0000_0011_2233_4455,
            n_buffers: 256,
            n_tables: 4,
            auxiliary_id: 0,
            capabilities: OFPC_FLOW_STATS | OFPC_TABLE_STATS | OFPC_PORT_STATS,
            reserved: 0,
        }),
        Message::GetConfigRequest,
        Message::GetConfigReply(config),
        Message::SetConfig(config),
        Message::PacketIn(PacketIn {
            buffer_id: OFP_NO_BUFFER,
            total_len: 60,
            reason: OFPR_ACTION,
            table_id: 2,
            cookie: 77,
            match_: Match {
                fields: vec![OxmField::exact(OxmValue::InPort(4))],
            },
            data: vec![0xab; 60],
        }),
        Message::FlowRemoved(FlowRemoved {
            cookie: 1,
            priority: 2,
            reason: OFPRR_HARD_TIMEOUT,
            table_id: 3,
            duration_sec: 4,
            duration_nsec: 5,
            idle_timeout: 6,
            hard_timeout: 7,
            packet_count: 8,
            byte_count: 9,
            match_: valid_match_on(OxmFieldId::Ipv6Src, true),
        }),
        Message::PortStatus(PortStatus {
            reason: OFPPR_MODIFY,
            desc: sample_port(7),
        }),
        Message::PacketOut(PacketOut {
            buffer_id: OFP_NO_BUFFER,
            in_port: OFPP_CONTROLLER,
            actions: all_actions(),
            data: vec![1; 64],
        }),
        Message::FlowMod(sample_flow_mod()),
        Message::FlowMod(FlowMod::add(0, 0, Match::default(), vec![])),
        Message::GroupMod(group_mod.clone()),
        Message::PortMod(PortMod {
            port_no: 3,
            hw_addr: [2, 0, 0, 0, 0, 3],
            config: PortConfig::PORT_DOWN,
            mask: PortConfig::PORT_DOWN,
            advertise: 0,
        }),
        Message::TableMod(TableMod {
            table_id: OFPTT_ALL,
            config: OFPTC_DEPRECATED_MASK,
        }),
        Message::BarrierRequest,
        Message::BarrierReply,
        Message::QueueGetConfigRequest { port: OFPP_ANY },
        Message::QueueGetConfigReply(QueueGetConfigReply {
            port: 1,
            queues: vec![
                PacketQueue {
                    queue_id: 1,
                    port: 1,
                    properties: vec![
                        QueueProp::MinRate(100),
                        QueueProp::MaxRate(900),
                        QueueProp::Experimenter {
                            experimenter: 5,
                            data: vec![0; 8],
                        },
                    ],
                },
                PacketQueue {
                    queue_id: 2,
                    port: 1,
                    properties: vec![],
                },
            ],
        }),
        Message::RoleRequest(RoleMsg {
            role: ControllerRole::Master,
            generation_id: 12,
        }),
        Message::RoleReply(RoleMsg {
            role: ControllerRole::Slave,
            generation_id: u64::MAX,
        }),
        Message::GetAsyncRequest,
        Message::GetAsyncReply(async_config),
        Message::SetAsync(async_config),
        Message::MeterMod(MeterMod {
            command: MeterModCommand::Modify,
            flags: MeterFlags::KBPS | MeterFlags::BURST | MeterFlags::STATS,
            meter_id: 5,
            bands: vec![
                MeterBand::Drop {
                    rate: 1000,
                    burst_size: 100,
                },
                MeterBand::DscpRemark {
                    rate: 500,
                    burst_size: 50,
                    prec_level: 1,
                },
                MeterBand::Experimenter {
                    rate: 1,
                    burst_size: 2,
                    experimenter: 3,
                    data: vec![0; 8],
                },
            ],
        }),
        Message::PktTmpMod(PktTmpMod {
            command: PktTmpCommand::Add,
            pkttmp_id: 1,
            template: vec![0xff; 42],
            copy_ops: vec![],
            checksum_ops: vec![],
        }),
        Message::PktTmpMod(PktTmpMod {
            command: PktTmpCommand::Delete,
            pkttmp_id: 1,
            template: vec![],
            copy_ops: vec![],
            checksum_ops: vec![],
        }),
        Message::PktTmpMod(PktTmpMod {
            command: PktTmpCommand::Add,
            pkttmp_id: 2,
            template: vec![0x45; 43],
            copy_ops: vec![CopyOp {
                src_offset: 6,
                dst_offset: 0,
                len: 6,
            }],
            checksum_ops: vec![ChecksumOp {
                kind: ChecksumKind::Icmpv4,
                start: 34,
                len: 0,
                dst_offset: 36,
                ip_offset: 14,
            }],
        }),
        Message::TimerMod(TimerMod {
            command: TimerCommand::Add,
            timer_id: 3,
            pkttmp_id: 2,
            period_us: 100_000,
            in_port: OFPP_CONTROLLER,
            actions: vec![Action::Output {
                port: OFPP_FLOOD,
                max_len: 0,
            }],
        }),
        Message::TimerMod(TimerMod {
            command: TimerCommand::Delete,
            timer_id: TIMER_ALL,
            pkttmp_id: 0,
            period_us: 0,
            in_port: 0,
            actions: vec![],
        }),
    ]
}

fn every_multipart() -> Vec<Message> {
    use MultipartReplyBody as R;
    use MultipartRequestBody as Q;
    let flow_req = FlowStatsRequest {
        match_: valid_match_on(OxmFieldId::Ipv4Src, true),
        ..FlowStatsRequest::default()
    };
    vec![
        mp_request(Q::Desc),
        mp_request(Q::Flow(flow_req.clone())),
        mp_request(Q::Aggregate(flow_req)),
        mp_request(Q::Table),
        mp_request(Q::PortStats { port_no: OFPP_ANY }),
        mp_request(Q::Queue {
            port_no: 1,
            queue_id: OFPQ_ALL,
        }),
        mp_request(Q::Group { group_id: OFPG_ALL }),
        mp_request(Q::GroupDesc),
        mp_request(Q::GroupFeatures),
        mp_request(Q::Meter { meter_id: OFPM_ALL }),
        mp_request(Q::MeterConfig { meter_id: 1 }),
        mp_request(Q::MeterFeatures),
        mp_request(Q::TableFeatures(vec![])),
        mp_request(Q::TableFeatures(vec![
            sample_table_features(0),
            sample_table_features(1),
        ])),
        mp_request(Q::PortDesc),
        mp_request(Q::Experimenter {
            experimenter: 1,
            exp_type: 2,
            data: vec![3],
        }),
        mp_reply(R::Desc(Desc {
            mfr_desc: "Hairpin".into(),
            hw_desc: "legacy switch + software".into(),
            sw_desc: "0.1".into(),
            serial_num: "42".into(),
            dp_desc: "lab".into(),
        })),
        mp_reply(R::Flow(vec![FlowStats {
            table_id: 0,
            duration_sec: 1,
            duration_nsec: 2,
            priority: 3,
            idle_timeout: 4,
            hard_timeout: 5,
            flags: FlowModFlags::NO_BYT_COUNTS,
            cookie: 6,
            packet_count: 7,
            byte_count: 8,
            match_: valid_match_on(OxmFieldId::ArpTha, true),
            instructions: all_instructions(),
        }])),
        mp_reply(R::Aggregate(AggregateStats {
            packet_count: 1,
            byte_count: 2,
            flow_count: 3,
        })),
        mp_reply(R::Table(vec![TableStats {
            table_id: 0,
            active_count: 1,
            lookup_count: 2,
            matched_count: 3,
        }])),
        mp_reply(R::PortStats(vec![PortStats {
            port_no: 1,
            rx_packets: 2,
            collisions: 3,
            duration_sec: 4,
            ..PortStats::default()
        }])),
        mp_reply(R::Queue(vec![QueueStats {
            port_no: 1,
            queue_id: 2,
            tx_bytes: 3,
            tx_packets: 4,
            tx_errors: 5,
            duration_sec: 6,
            duration_nsec: 7,
        }])),
        mp_reply(R::Group(vec![GroupStats {
            group_id: 1,
            ref_count: 2,
            packet_count: 3,
            byte_count: 4,
            duration_sec: 5,
            duration_nsec: 6,
            bucket_stats: vec![BucketCounter {
                packet_count: 7,
                byte_count: 8,
            }],
        }])),
        mp_reply(R::GroupDesc(vec![GroupDesc {
            group_type: GroupType::FastFailover,
            group_id: 3,
            buckets: vec![Bucket {
                weight: 0,
                watch_port: 1,
                watch_group: OFPG_ANY,
                actions: vec![Action::Output {
                    port: 1,
                    max_len: 0,
                }],
            }],
        }])),
        mp_reply(R::GroupFeatures(GroupFeatures {
            types: 0xf,
            capabilities: OFPGFC_SELECT_WEIGHT | OFPGFC_CHAINING,
            max_groups: [1, 2, 3, 4],
            actions: [5, 6, 7, 8],
        })),
        mp_reply(R::Meter(vec![MeterStats {
            meter_id: 1,
            flow_count: 2,
            packet_in_count: 3,
            byte_in_count: 4,
            duration_sec: 5,
            duration_nsec: 6,
            band_stats: vec![MeterBandStats {
                packet_band_count: 7,
                byte_band_count: 8,
            }],
        }])),
        mp_reply(R::MeterConfig(vec![MeterConfig {
            flags: MeterFlags::PKTPS,
            meter_id: 1,
            bands: vec![MeterBand::Drop {
                rate: 10,
                burst_size: 0,
            }],
        }])),
        mp_reply(R::MeterFeatures(MeterFeatures {
            max_meter: 1024,
            band_types: 0b110,
            capabilities: 0xf,
            max_bands: 4,
            max_color: 2,
        })),
        mp_reply(R::TableFeatures(vec![sample_table_features(0)])),
        mp_reply(R::PortDesc(vec![sample_port(1), sample_port(2)])),
        mp_reply(R::Experimenter {
            experimenter: 1,
            exp_type: 2,
            data: vec![],
        }),
    ]
}

#[test]
fn every_message_type_round_trips() {
    let msgs = every_message();
    let mut types: Vec<u8> = msgs.iter().map(Message::msg_type).collect();
    types.sort();
    types.dedup();
    // OFPT_HELLO (0) .. OFPT_METER_MOD (29); multiparts are covered below.
    let missing: Vec<u8> = (0..=29u8)
        .filter(|t| !types.contains(t) && ![18, 19].contains(t))
        .collect();
    assert!(
        missing.is_empty(),
        "message types without a sample: {missing:?}"
    );
    for m in &msgs {
        round_trip(m);
    }
}

#[test]
fn every_multipart_body_round_trips() {
    let msgs = every_multipart();
    for request in [true, false] {
        let mut types: Vec<u16> = msgs
            .iter()
            .filter_map(|m| match m {
                Message::MultipartRequest(r) if request => Some(r.body.multipart_type()),
                Message::MultipartReply(r) if !request => Some(r.body.multipart_type()),
                _ => None,
            })
            .collect();
        types.sort();
        types.dedup();
        assert_eq!(types.len(), 15, "request={request}: {types:?}");
    }
    for m in &msgs {
        round_trip(m);
    }
}

#[test]
fn every_oxm_field_round_trips_exact_and_masked() {
    assert_eq!(
        OxmFieldId::ALL.len(),
        41,
        "the 40 basic fields and NXM_NX_IP_TTL"
    );
    for &id in OxmFieldId::ALL {
        for masked in [false, true] {
            if masked && !id.maskable() {
                continue;
            }
            let m = valid_match_on(id, masked);
            assert_eq!(m.validate(), Ok(()), "{id:?} masked={masked}");
            let fm = FlowMod::add(0, 1, m, vec![]);
            let bytes = round_trip(&Message::FlowMod(fm));
            let field = m_last(&bytes);
            assert_eq!(field >> 16, u32::from(OFPXMC_OPENFLOW_BASIC));
        }
    }
}

#[test]
fn nxm_nx_ip_ttl_is_open_vswitchs_encoding() {
    // ovs-ofctl -O OpenFlow13 add-flow br "ip,nw_ttl=1,actions=drop" sends, after the
    // eth_type TLV, NXM_NX_IP_TTL: class 0x0001, field 29, no mask, one byte.
    let m = Match {
        fields: vec![
            OxmField::exact(OxmValue::EthType(0x0800)),
            OxmField::exact(OxmValue::NxIpTtl(1)),
        ],
    };
    assert_eq!(m.validate(), Ok(()));
    let bytes = round_trip(&Message::FlowMod(FlowMod::add(0, 1, m, vec![])));
    assert_eq!(&bytes[58..63], &[0x00, 0x01, 0x3a, 0x01, 0x01]);
}

/// Header of the first OXM TLV in a flow mod encoding (just a structural sanity check).
fn m_last(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[52], bytes[53], bytes[54], bytes[55]])
}

#[test]
fn every_oxm_field_as_set_field_round_trips() {
    for &id in OxmFieldId::ALL {
        let msg = Message::PacketOut(PacketOut {
            buffer_id: OFP_NO_BUFFER,
            in_port: OFPP_CONTROLLER,
            actions: vec![Action::SetField(value_of(id, 0xa5))],
            data: vec![],
        });
        round_trip(&msg);
    }
}

#[test]
fn every_action_and_instruction_round_trips_in_lists() {
    let actions = all_actions();
    let mut buf = Vec::new();
    emit_actions(&actions, &mut buf);
    assert_eq!(parse_actions(&buf), Ok(actions));
    let instructions = all_instructions();
    let mut buf = Vec::new();
    emit_instructions(&instructions, &mut buf);
    assert_eq!(parse_instructions(&buf), Ok(instructions));
}

#[test]
fn every_table_feature_property_round_trips() {
    let props = all_table_feature_props();
    let mut kinds: Vec<u16> = props.iter().map(TableFeatureProp::prop_type).collect();
    kinds.dedup();
    assert_eq!(kinds.len(), 16);
    for p in props {
        let tf = TableFeatures {
            properties: vec![p],
            ..TableFeatures::default()
        };
        round_trip(&mp_reply(MultipartReplyBody::TableFeatures(vec![tf])));
    }
}

#[test]
fn every_error_code_round_trips() {
    let codes: Vec<OfpError> = HelloFailedCode::ALL
        .iter()
        .map(|c| OfpError::HelloFailed(*c))
        .chain(BadRequestCode::ALL.iter().map(|c| OfpError::BadRequest(*c)))
        .chain(BadActionCode::ALL.iter().map(|c| OfpError::BadAction(*c)))
        .chain(
            BadInstructionCode::ALL
                .iter()
                .map(|c| OfpError::BadInstruction(*c)),
        )
        .chain(BadMatchCode::ALL.iter().map(|c| OfpError::BadMatch(*c)))
        .chain(
            FlowModFailedCode::ALL
                .iter()
                .map(|c| OfpError::FlowModFailed(*c)),
        )
        .chain(
            GroupModFailedCode::ALL
                .iter()
                .map(|c| OfpError::GroupModFailed(*c)),
        )
        .chain(
            PortModFailedCode::ALL
                .iter()
                .map(|c| OfpError::PortModFailed(*c)),
        )
        .chain(
            TableModFailedCode::ALL
                .iter()
                .map(|c| OfpError::TableModFailed(*c)),
        )
        .chain(
            QueueOpFailedCode::ALL
                .iter()
                .map(|c| OfpError::QueueOpFailed(*c)),
        )
        .chain(
            SwitchConfigFailedCode::ALL
                .iter()
                .map(|c| OfpError::SwitchConfigFailed(*c)),
        )
        .chain(
            RoleRequestFailedCode::ALL
                .iter()
                .map(|c| OfpError::RoleRequestFailed(*c)),
        )
        .chain(
            MeterModFailedCode::ALL
                .iter()
                .map(|c| OfpError::MeterModFailed(*c)),
        )
        .chain(
            TableFeaturesFailedCode::ALL
                .iter()
                .map(|c| OfpError::TableFeaturesFailed(*c)),
        )
        .collect();
    // Counts per spec 1.3.5 section 7.4.4.
    assert_eq!(
        codes.len(),
        2 + 14 + 16 + 9 + 12 + 8 + 15 + 5 + 3 + 3 + 3 + 3 + 12 + 6
    );
    for e in codes {
        let (t, c) = e.type_code();
        assert_eq!(OfpError::from_type_code(t, c), e);
        round_trip(&Message::Error(ErrorMsg::for_request(
            e,
            &[4, 0, 0, 8, 0, 0, 0, 0],
        )));
    }
    assert_eq!(
        OfpError::from_type_code(1, 99),
        OfpError::Unknown {
            err_type: 1,
            code: 99
        }
    );
    round_trip(&Message::Error(ErrorMsg {
        error: OfpError::Unknown {
            err_type: 77,
            code: 3,
        },
        data: vec![],
    }));
}

#[test]
fn spec_type_codes() {
    assert_eq!(
        OfpError::BadRequest(BadRequestCode::BadLen).type_code(),
        (1, 6)
    );
    assert_eq!(
        OfpError::BadMatch(BadMatchCode::BadPrereq).type_code(),
        (4, 9)
    );
    assert_eq!(
        OfpError::BadMatch(BadMatchCode::DupField).type_code(),
        (4, 10)
    );
    assert_eq!(
        OfpError::BadInstruction(BadInstructionCode::BadLen).type_code(),
        (3, 7)
    );
    assert_eq!(
        OfpError::TableFeaturesFailed(TableFeaturesFailedCode::Eperm).type_code(),
        (13, 5)
    );
    assert_eq!(
        insp_error(insp_error::PKTTMP_MOD_FAILED).type_code(),
        (0xffff, 11)
    );
}

#[test]
fn multipart_reply_split_fits_and_flags_more() {
    let ports: Vec<PortStats> = (0..2000)
        .map(|n| PortStats {
            port_no: n,
            ..PortStats::default()
        })
        .collect();
    let mut msgs = Vec::new();
    encode_multipart_reply_split(9, &MultipartReplyBody::PortStats(ports.clone()), &mut msgs);
    assert!(msgs.len() >= 4, "2000 x 112 bytes need at least 4 messages");
    let mut seen = Vec::new();
    for (i, bytes) in msgs.iter().enumerate() {
        assert!(bytes.len() <= 65535);
        let (h, m) = decode(bytes).expect("split part decodes");
        assert_eq!(h.xid, 9);
        let Message::MultipartReply(MultipartReply {
            flags,
            body: MultipartReplyBody::PortStats(part),
        }) = m
        else {
            panic!("wrong body");
        };
        let last = i + 1 == msgs.len();
        assert_eq!(flags, if last { 0 } else { OFPMPF_REPLY_MORE });
        seen.extend(part);
    }
    assert_eq!(seen, ports);

    let mut single = Vec::new();
    encode_multipart_reply_split(1, &MultipartReplyBody::Flow(vec![]), &mut single);
    assert_eq!(single.len(), 1);
    assert_eq!(single[0].len(), 16);
}

#[test]
fn a_packet_in_encoded_with_borrowed_data_is_the_same_message() {
    let frame: Vec<u8> = (0..=255u8).cycle().take(1500).collect();
    let pin = PacketIn {
        buffer_id: 0x0102_0304,
        total_len: 1500,
        reason: OFPR_NO_MATCH,
        table_id: 7,
        cookie: 0xfeed_face_cafe_beef,
        match_: Match {
            fields: vec![
                OxmField::exact(OxmValue::InPort(3)),
                OxmField::exact(OxmValue::Metadata(9)),
            ],
        },
        data: frame.clone(),
    };
    let expected = encode_to_vec(5, &Message::PacketIn(pin.clone()));
    let mut out = vec![0xee; 3];
    PacketIn {
        data: Vec::new(),
        ..pin
    }
    .encode_with_data(5, &frame, &mut out);
    assert_eq!(&out[..3], &[0xee; 3], "appends after what the buffer holds");
    assert_eq!(&out[3..], &expected[..]);
}
