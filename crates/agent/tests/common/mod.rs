//! A switch for the agent's tests: four tables, sixteen buffers, packet-outs discarded.

use dataplane::datapath::DatapathConfig;
use switch_core::{PacketOutJob, PacketOutQueue, Switch, SwitchSettings};

struct Discard;

impl PacketOutQueue for Discard {
    fn submit(&mut self, _job: PacketOutJob) {}
}

pub fn switch() -> Switch {
    let (writer, _readers) = dataplane::datapath::new(DatapathConfig {
        n_tables: 4,
        ..DatapathConfig::default()
    });
    let shared = std::sync::Arc::clone(writer.shared());
    Switch::new(
        SwitchSettings {
            datapath_id: 9,
            n_tables: 4,
            n_buffers: 16,
        },
        Box::new(writer),
        shared,
        Box::new(Discard),
    )
}
