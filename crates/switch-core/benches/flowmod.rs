//! Flow-mod ingest into a table growing to 100K entries, in process: decode of the wire
//! message, validation, the switch core's tables and the datapath's incremental update, with a
//! publish (what a barrier costs) every 1,000 flow-mods. Prints flow-mods per second.
//!
//! `cargo bench -p switch-core --bench flowmod` (HAIRPIN_BENCH_QUICK=1 for 10K entries).

use std::time::Instant;

use dataplane::datapath::DatapathConfig;
use ofp::Message;
use switch_core::{DiscardPacketOuts, Switch};
use testkit::flow_mods::host_route;
use testkit::process_cpu_seconds;

fn main() {
    let n: u32 = if std::env::var_os("HAIRPIN_BENCH_QUICK").is_some() {
        10_000
    } else {
        100_000
    };
    let wire: Vec<Vec<u8>> = (0..n).map(host_route).collect();
    let (mut switch, readers) = Switch::with_datapath(
        1,
        DatapathConfig::default(),
        |w| Box::new(w),
        Box::new(DiscardPacketOuts),
    );
    // A reader exists, as in the daemon, so publishing pays for the handover.
    let _reader = readers.reader();
    let start = Instant::now();
    let cpu_start = process_cpu_seconds();
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
    let cpu = process_cpu_seconds() - cpu_start;
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
