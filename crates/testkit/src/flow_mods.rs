//! The flow-mods of the ingest benchmarks (`switch-core` and `offload`'s `flowmod`): a stream
//! of distinct adds into one table, encoded as a controller sends them, so both benchmarks
//! time the same work from the wire up.

use ofp::{
    Action, FlowMod, FlowModCommand, FlowModFlags, Instruction, Match, Message, OxmField, OxmValue,
    OFPG_ANY, OFPP_ANY, OFP_NO_BUFFER,
};

/// The `i`-th flow-mod, encoded with xid `i`: into table 0 at priority 100, add
/// `ip,nw_dst=10.x.y.z/32` (`i` the low 24 bits) with `actions=output:N`, N = `i` % 8 + 1,
/// cookie `i`.
pub fn host_route(i: u32) -> Vec<u8> {
    let fm = FlowMod {
        cookie: u64::from(i),
        cookie_mask: 0,
        table_id: 0,
        command: FlowModCommand::Add,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 100,
        buffer_id: OFP_NO_BUFFER,
        out_port: OFPP_ANY,
        out_group: OFPG_ANY,
        flags: FlowModFlags::default(),
        match_: Match {
            fields: vec![
                OxmField::exact(OxmValue::EthType(0x0800)),
                OxmField::exact(OxmValue::Ipv4Dst(0x0a00_0000 | i)),
            ],
        },
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: i % 8 + 1,
            max_len: 0,
        }])],
    };
    ofp::encode_to_vec(i, &Message::FlowMod(fm))
}
