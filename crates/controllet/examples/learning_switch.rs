//! A local learning switch: learns where each Ethernet address lives from packet-ins, floods
//! what it does not know, and installs a flow per (in port, destination) once it knows.
//! `--no-flows` installs none, so every packet crosses the controllet (the latency benchmark's
//! mode, as in the InFEP paper's Fig. 4). It tells the bus about each address it learns on
//! `hairpin.<dpid>.c.<name>.learned`.

use std::collections::HashMap;

use controllet::openflow::{self, Mac};
use ofp::{Message, OxmValue, OFPP_FLOOD};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), controllet::Error> {
    let install = !std::env::args().any(|a| a == "--no-flows");
    let mut ctl = controllet::Controllet::start().await?;
    let switch = ctl.switch.sender.clone();
    switch.send(&openflow::table_miss_to_controller()).await?;
    println!(
        "learning switch on {:016x}, flows: {install}",
        ctl.env.datapath_id
    );
    let mut macs: HashMap<Mac, u32> = HashMap::new();
    while let Some((_, msg)) = ctl.switch.receiver.recv().await? {
        let Message::PacketIn(pin) = msg else {
            continue;
        };
        let (Some(in_port), Some((dst, src))) =
            (openflow::in_port(&pin), openflow::eth_addresses(&pin.data))
        else {
            continue;
        };
        if src[0] & 1 == 0 && macs.insert(src, in_port) != Some(in_port) {
            if let Some(bus) = &ctl.bus {
                let note = format!("{} {in_port}", hex(&src));
                bus.publish("learned", note).await?;
            }
        }
        let out = macs.get(&dst).copied();
        if let (Some(port), true) = (out, install) {
            let m = openflow::exact(&[OxmValue::InPort(in_port), OxmValue::EthDst(dst)]);
            let mut flow = openflow::flow(10, m, vec![openflow::output(port)]);
            flow.idle_timeout = 60;
            // The flow takes a buffered packet along; otherwise a packet-out sends it.
            flow.buffer_id = pin.buffer_id;
            switch.send(&Message::FlowMod(flow)).await?;
            if pin.buffer_id != ofp::OFP_NO_BUFFER {
                continue;
            }
        }
        let action = openflow::output(out.unwrap_or(OFPP_FLOOD));
        switch
            .send(&openflow::packet_out(&pin, vec![action]))
            .await?;
    }
    Ok(())
}

fn hex(mac: &Mac) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}
