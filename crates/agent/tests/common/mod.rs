//! A switch for the agent's tests: four tables, sixteen buffers, packet-outs discarded.

use dataplane::datapath::DatapathConfig;
use switch_core::{DiscardPacketOuts, Switch};

pub fn switch() -> Switch {
    let config = DatapathConfig {
        n_tables: 4,
        buffer_slots: 16,
        ..DatapathConfig::default()
    };
    Switch::with_datapath(9, config, |w| Box::new(w), Box::new(DiscardPacketOuts)).0
}
