//! Flow-mod ingest into a table growing to 100K entries, in process: decode of the wire
//! message, validation, the switch core's tables and the datapath's incremental update, with a
//! publish (what a barrier costs) every 1,000 flow-mods. Prints flow-mods per second.
//!
//! `cargo bench -p switch-core --bench flowmod` (HAIRPIN_BENCH_QUICK=1 for 10K entries).

use std::time::Instant;

use dataplane::datapath::DatapathConfig;
use ofp::{
    Action, FlowMod, FlowModCommand, FlowModFlags, Instruction, Match, Message, OxmField, OxmValue,
    OFPG_ANY, OFPP_ANY, OFP_NO_BUFFER,
};
use switch_core::{PacketOutJob, PacketOutQueue, Switch, SwitchSettings};

struct Discard;

impl PacketOutQueue for Discard {
    fn submit(&mut self, _job: PacketOutJob) {}
}

fn flow_mod(i: u32) -> Vec<u8> {
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

fn main() {
    let n: u32 = if std::env::var_os("HAIRPIN_BENCH_QUICK").is_some() {
        10_000
    } else {
        100_000
    };
    let wire: Vec<Vec<u8>> = (0..n).map(flow_mod).collect();
    let (writer, readers) = dataplane::datapath::new(DatapathConfig::default());
    // A reader exists, as in the daemon, so publishing pays for the handover.
    let _reader = readers.reader();
    let shared = std::sync::Arc::clone(writer.shared());
    let mut switch = Switch::new(
        SwitchSettings {
            datapath_id: 1,
            n_tables: 254,
            n_buffers: 256,
        },
        Box::new(writer),
        shared,
        Box::new(Discard),
    );
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let mut last = start;
    for (i, bytes) in wire.iter().enumerate() {
        let Ok((_, Message::FlowMod(fm))) = ofp::decode(bytes) else {
            panic!("flow-mod {i} does not decode");
        };
        switch.flow_mod(fm, 0).expect("valid flow-mod");
        if (i + 1) % 1_000 == 0 {
            switch.publish();
        }
        if (i + 1) % 25_000 == 0 {
            let now = Instant::now();
            let rate = 25_000.0 / (now - last).as_secs_f64();
            println!(
                "entries {:>7}: {:>10.0} flow-mods/s (last 25K)",
                i + 1,
                rate
            );
            last = now;
        }
    }
    switch.publish();
    let total = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_start;
    assert_eq!(switch.flow_count(), n as usize);
    println!(
        "flow-mod ingest, in process, {n} adds into one table: {:.0} flow-mods/s wall \
         ({:.2} us each), {:.0} flow-mods/s per CPU second ({:.2} us CPU each)",
        f64::from(n) / total,
        total * 1e6 / f64::from(n),
        f64::from(n) / cpu,
        cpu * 1e6 / f64::from(n)
    );
}

/// User + system CPU time of this process (from /proc/self/stat, in clock ticks of 10 ms),
/// so a loaded machine's waiting does not count as our cost.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields after the command name: state is index 0, utime 11, stime 12.
    (ticks(11) + ticks(12)) / 100.0
}
