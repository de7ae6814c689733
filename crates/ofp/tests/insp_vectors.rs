//! InSP vectors shared with the Python controller side (`tests/vectors/insp.json`, read by
//! `python/tests/test_insp_codec.py`): each valid vector must encode from its message here to
//! exactly the stored bytes and decode back; each malformed one must be refused with the
//! stored experimenter error code. `HAIRPIN_WRITE_INSP_VECTORS=1` rewrites the file from this
//! encoder (the Python side then checks its own encoder against it).

use ofp::*;
use serde_json::{json, Value};
use std::path::PathBuf;

const MAC_C: [u8; 6] = [0x02, 0xcc, 0, 0, 0, 0x0c];
const IP_C: [u8; 4] = [10, 0, 0, 12];

fn vector_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/insp.json")
}

/// Fig. 5's ARP reply from host C, requester fields zero (filled by copy operations).
fn arp_reply_template() -> Vec<u8> {
    let mut t = vec![0u8; 6];
    t.extend_from_slice(&MAC_C);
    t.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2]);
    t.extend_from_slice(&MAC_C);
    t.extend_from_slice(&IP_C);
    t.extend_from_slice(&[0; 10]);
    t
}

/// Fig. 6's ICMP Time Exceeded: Ether / IPv4 (proto 1, TTL 64) / ICMP 11 with 28 bytes quoted.
fn time_exceeded_template() -> Vec<u8> {
    let mut t = vec![0u8; 6];
    t.extend_from_slice(&[0x02, 0x55, 0, 0, 0, 1]);
    t.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 56, 0, 0, 0, 0, 64, 1, 0, 0]);
    t.extend_from_slice(&[192, 0, 2, 1, 0, 0, 0, 0]);
    t.extend_from_slice(&[11, 0, 0, 0, 0, 0, 0, 0]);
    t.extend_from_slice(&[0; 28]);
    t
}

fn copy(src_offset: u16, dst_offset: u16, len: u16) -> CopyOp {
    CopyOp {
        src_offset,
        dst_offset,
        len,
    }
}

fn sum(kind: ChecksumKind, start: u16, len: u16, dst_offset: u16, ip_offset: u16) -> ChecksumOp {
    ChecksumOp {
        kind,
        start,
        len,
        dst_offset,
        ip_offset,
    }
}

fn pkttmp(command: PktTmpCommand, id: u32, template: Vec<u8>) -> PktTmpMod {
    PktTmpMod {
        command,
        pkttmp_id: id,
        template,
        copy_ops: vec![],
        checksum_ops: vec![],
    }
}

fn insp_flow(priority: u16, fields: Vec<OxmValue>, instructions: Vec<Instruction>) -> Message {
    let match_ = Match {
        fields: fields.into_iter().map(OxmField::exact).collect(),
    };
    Message::FlowMod(FlowMod::add(0, priority, match_, instructions))
}

fn output(port: u32) -> Action {
    Action::Output {
        port,
        max_len: OFPCML_NO_BUFFER,
    }
}

/// A gratuitous ARP from host C (sender and target address both C's): a timer's template.
fn gratuitous_arp_template() -> Vec<u8> {
    let mut t = vec![0xff; 6];
    t.extend_from_slice(&MAC_C);
    t.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1]);
    t.extend_from_slice(&MAC_C);
    t.extend_from_slice(&IP_C);
    t.extend_from_slice(&[0; 6]);
    t.extend_from_slice(&IP_C);
    t.extend_from_slice(&[0; 18]);
    t
}

fn timer(command: TimerCommand, timer_id: u32, period_us: u32, actions: Vec<Action>) -> Message {
    Message::TimerMod(TimerMod {
        command,
        timer_id,
        pkttmp_id: if command == TimerCommand::Delete {
            0
        } else {
            77
        },
        period_us,
        in_port: if command == TimerCommand::Delete {
            0
        } else {
            OFPP_CONTROLLER
        },
        actions,
    })
}

/// The valid vectors: name, xid, message.
fn valid() -> Vec<(&'static str, u32, Message)> {
    use ChecksumKind::*;
    let arp = arp_reply_template();
    let fig5_copies = vec![copy(6, 0, 6), copy(22, 32, 6), copy(28, 38, 4)];
    let fig6 = PktTmpMod {
        copy_ops: vec![copy(6, 0, 6), copy(26, 30, 4), copy(14, 42, 28)],
        checksum_ops: vec![sum(Ipv4Header, 14, 20, 24, 0), sum(Icmpv4, 34, 0, 36, 0)],
        ..pkttmp(PktTmpCommand::Add, 321, time_exceeded_template())
    };
    let tunnel = PktTmpMod {
        checksum_ops: vec![sum(Udpv4, 54, 0, 60, 34), sum(Tcpv6, 1, 2, 3, 4)],
        ..pkttmp(PktTmpCommand::Add, 0xffff_fffe, vec![0x45; 61])
    };
    vec![
        (
            "pkttmp_add_base",
            1,
            Message::PktTmpMod(pkttmp(PktTmpCommand::Add, 123, arp.clone())),
        ),
        (
            "pkttmp_delete",
            2,
            Message::PktTmpMod(pkttmp(PktTmpCommand::Delete, 123, vec![])),
        ),
        (
            "pkttmp_add_ext_arp_fig5",
            3,
            Message::PktTmpMod(PktTmpMod {
                copy_ops: fig5_copies,
                ..pkttmp(PktTmpCommand::Add, 123, arp)
            }),
        ),
        ("pkttmp_add_ext_icmp_fig6", 4, Message::PktTmpMod(fig6)),
        (
            "pkttmp_add_ext_checksums_only",
            5,
            Message::PktTmpMod(tunnel),
        ),
        (
            "flow_mod_insp_fig5",
            6,
            insp_flow(
                100,
                vec![
                    OxmValue::EthType(0x0806),
                    OxmValue::ArpOp(1),
                    OxmValue::ArpTpa(u32::from_be_bytes(IP_C)),
                ],
                vec![Instruction::Insp(InspInstruction {
                    pkttmp_id: 123,
                    actions: vec![output(OFPP_TABLE)],
                })],
            ),
        ),
        (
            "flow_mod_insp_and_write_actions",
            7,
            insp_flow(
                200,
                vec![OxmValue::InPort(12), OxmValue::EthType(0x0800)],
                vec![
                    Instruction::Insp(InspInstruction {
                        pkttmp_id: 321,
                        actions: vec![output(12)],
                    }),
                    Instruction::WriteActions(vec![]),
                ],
            ),
        ),
        (
            "error_pkttmp_mod_failed",
            8,
            Message::Error(ErrorMsg {
                error: insp_error(insp_error::PKTTMP_MOD_FAILED),
                data: encode_to_vec(
                    8,
                    &Message::PktTmpMod(pkttmp(PktTmpCommand::Delete, 9, vec![])),
                ),
            }),
        ),
        (
            "error_bad_exp_instruction",
            9,
            Message::Error(ErrorMsg {
                error: insp_error(insp_error::BAD_EXP_INSTRUCTION),
                data: vec![],
            }),
        ),
        (
            "pkttmp_add_gratuitous_arp",
            10,
            Message::PktTmpMod(pkttmp(PktTmpCommand::Add, 77, gratuitous_arp_template())),
        ),
        (
            "timer_add_flood_every_50ms",
            11,
            timer(TimerCommand::Add, 1, 50_000, vec![output(OFPP_FLOOD)]),
        ),
        (
            "timer_add_into_pipeline",
            12,
            timer(TimerCommand::Add, 1, 1_000_000, vec![output(OFPP_TABLE)]),
        ),
        (
            "timer_delete_all",
            13,
            timer(TimerCommand::Delete, TIMER_ALL, 0, vec![]),
        ),
        (
            "error_timer_rate_exceeded",
            14,
            Message::Error(ErrorMsg {
                error: insp_error(insp_error::TIMER_RATE_EXCEEDED),
                data: encode_to_vec(
                    14,
                    &timer(TimerCommand::Add, 2, 999, vec![output(OFPP_FLOOD)]),
                ),
            }),
        ),
    ]
}

/// An experimenter message of 0xBEBABEBA with this exp_type and body (after exp_type).
fn raw(exp_type: u32, body: &[u8]) -> Vec<u8> {
    let len = (16 + body.len()) as u16;
    let mut m = vec![4, 4];
    m.extend_from_slice(&len.to_be_bytes());
    m.extend_from_slice(&0x77u32.to_be_bytes());
    m.extend_from_slice(&INSP_EXPERIMENTER.to_be_bytes());
    m.extend_from_slice(&exp_type.to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// exp_type 2 body: command, id 5, a 2-byte template, padding, then `ops`.
fn ext_body(command: u8, ops: &[u8]) -> Vec<u8> {
    let mut b = vec![command, 0, 0, 0, 0, 5, 0, 2, 0xaa, 0xbb, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(ops);
    b
}

fn op(op_type: u16, op_len: u16, first: u8) -> Vec<u8> {
    let mut o = op_type.to_be_bytes().to_vec();
    o.extend_from_slice(&op_len.to_be_bytes());
    o.push(first);
    o.extend_from_slice(&[0; 11]);
    o
}

/// The malformed vectors: name, bytes, the experimenter error code they must get.
fn malformed() -> Vec<(&'static str, Vec<u8>, u16)> {
    use insp_error::*;
    let copy_op = op(1, 16, 0);
    let sum_op = op(2, 16, 1);
    let mut flood = Vec::new();
    emit_actions(&[output(OFPP_FLOOD)], &mut flood);
    vec![
        (
            "bad_command",
            raw(1, &[2, 0, 0, 0, 0, 1, 0, 0, 0, 0]),
            PKTTMP_MOD_BAD_COMMAND,
        ),
        ("base_cut_short", raw(1, &[0, 0, 0, 0]), BAD_EXP_LEN),
        (
            "delete_with_template",
            raw(1, &[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 9]),
            BAD_EXP_LEN,
        ),
        (
            "ext_template_cut_short",
            raw(2, &[0, 0, 0, 0, 0, 5, 0, 9, 1, 2]),
            BAD_EXP_LEN,
        ),
        (
            "ext_without_ops",
            raw(2, &ext_body(0, &[])),
            PKTTMP_MOD_FAILED,
        ),
        (
            "ext_delete",
            raw(2, &ext_body(1, &copy_op)),
            PKTTMP_MOD_FAILED,
        ),
        (
            "ext_op_len_8",
            raw(2, &ext_body(0, &op(1, 8, 0))),
            BAD_EXP_LEN,
        ),
        (
            "ext_op_cut_short",
            raw(2, &ext_body(0, &copy_op[..10])),
            BAD_EXP_LEN,
        ),
        (
            "ext_unknown_op",
            raw(2, &ext_body(0, &op(3, 16, 0))),
            PKTTMP_MOD_FAILED,
        ),
        (
            "ext_copy_source_1",
            raw(2, &ext_body(0, &op(1, 16, 1))),
            PKTTMP_MOD_FAILED,
        ),
        (
            "ext_checksum_kind_7",
            raw(2, &ext_body(0, &op(2, 16, 7))),
            PKTTMP_MOD_FAILED,
        ),
        (
            "ext_copy_after_checksum",
            raw(2, &ext_body(0, &[sum_op, copy_op].concat())),
            PKTTMP_MOD_FAILED,
        ),
        (
            "timer_bad_command",
            raw(TIMER_MOD_EXP_TYPE, &timer_body(2, &[])),
            TIMER_MOD_BAD_COMMAND,
        ),
        (
            "timer_cut_short",
            raw(TIMER_MOD_EXP_TYPE, &timer_body(0, &[])[..23]),
            BAD_EXP_LEN,
        ),
        (
            "timer_delete_with_actions",
            raw(TIMER_MOD_EXP_TYPE, &timer_body(1, &flood)),
            BAD_EXP_LEN,
        ),
    ]
}

/// TIMER_MOD body: command, timer 1, template 77, 50 ms, in_port CONTROLLER, then `actions`.
fn timer_body(command: u8, actions: &[u8]) -> Vec<u8> {
    let mut b = vec![command, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 77];
    b.extend_from_slice(&50_000u32.to_be_bytes());
    b.extend_from_slice(&OFPP_CONTROLLER.to_be_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(actions);
    b
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn generate() -> Value {
    let valid: Vec<Value> = valid()
        .iter()
        .map(|(name, xid, msg)| json!({"name": name, "hex": hex(&encode_to_vec(*xid, msg))}))
        .collect();
    let malformed: Vec<Value> = malformed()
        .iter()
        .map(|(name, bytes, code)| json!({"name": name, "hex": hex(bytes), "error": code}))
        .collect();
    json!({
        "about": "InSP codec vectors, written by crates/ofp/tests/insp_vectors.rs (HAIRPIN_WRITE_INSP_VECTORS=1), checked by it and by python/tests/test_insp_codec.py",
        "valid": valid,
        "malformed": malformed,
    })
}

#[test]
fn insp_vectors_match_the_shared_file() {
    let expected = generate();
    let path = vector_path();
    if std::env::var_os("HAIRPIN_WRITE_INSP_VECTORS").is_some() {
        let text = serde_json::to_string_pretty(&expected).expect("json") + "\n";
        std::fs::write(&path, text).expect("write vectors");
    }
    let text = std::fs::read_to_string(&path).expect("read vectors");
    let stored: Value = serde_json::from_str(&text).expect("parse vectors");
    assert_eq!(stored, expected, "{path:?} differs from this encoder");
}

#[test]
fn valid_vectors_decode_to_their_messages() {
    for (name, xid, msg) in valid() {
        let bytes = encode_to_vec(xid, &msg);
        let (header, decoded) = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((header.xid, &decoded), (xid, &msg), "{name}");
    }
}

#[test]
fn malformed_vectors_get_their_errors() {
    for (name, bytes, code) in malformed() {
        let err = decode(&bytes).map(|(_, m)| m).expect_err(name);
        assert_eq!(err.error, insp_error(code), "{name}");
    }
}
