//! The Rust SDK of Hairpin controllets: small control programs that `hairpind` runs on the
//! switch itself, sandboxed, each with an OpenFlow 1.3 channel of its own and a place on a
//! NATS bus shared with the other controllets and with remote controllers (InFEP).
//!
//! For latency-critical controllets: the OpenFlow channel is a plain socket with one write per
//! message, decoded with [`ofp`]. Not for: anything hairpind does for the controllet (sandbox,
//! limits, credentials): see `controllet-host`.
//!
//! "Hello switch": log each port change, and tell the bus.
//!
//! ```no_run
//! # async fn hello() -> Result<(), controllet::Error> {
//! let mut ctl = controllet::Controllet::start().await?;
//! while let Some((_, msg)) = ctl.switch.receiver.recv().await? {
//!     if let ofp::Message::PortStatus(status) = msg {
//!         println!("port {} changed", status.desc.port_no);
//!         if let Some(bus) = &ctl.bus {
//!             bus.publish("port", status.desc.port_no.to_string()).await?;
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```

pub mod bus;
pub mod env;
pub mod openflow;
mod socket;
pub mod subjects;
pub mod switch;

pub use bus::{Bus, BusMessage};
pub use env::Environment;
pub use switch::Switch;

/// Why a controllet could not start or lost its switch or bus.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A started controllet: what hairpind told it, its switch, and its bus (when it has one).
pub struct Controllet {
    pub env: Environment,
    pub switch: Switch,
    pub bus: Option<Bus>,
}

impl Controllet {
    /// Reads the environment hairpind set, connects to the switch and to the bus.
    pub async fn start() -> Result<Controllet, Error> {
        let env = Environment::from_process()?;
        let switch = Switch::connect(&env.openflow)
            .await
            .map_err(|e| format!("OpenFlow channel {}: {e}", env.openflow))?;
        let bus = match &env.bus {
            Some(access) => Some(
                Bus::connect(access, &env.name, env.datapath_id)
                    .await
                    .map_err(|e| format!("bus {}: {e}", access.url))?,
            ),
            None => None,
        };
        Ok(Controllet { env, switch, bus })
    }
}
