//! Controller roles (spec 1.3.5 section 6.3.5): one master at a time, generation ids that
//! refuse stale master/slave requests, and the per-role default async configuration.

use std::collections::{HashMap, HashSet};

use ofp::{AsyncConfig, ControllerRole, OfpError, RoleRequestFailedCode};

/// Identifies one OpenFlow connection inside the agent.
pub type ConnId = u64;

/// Whether a connection may claim the master role. A switch-local controllet is barred by
/// default: its claim would demote the remote master, which OpenFlow lets any connection do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mastership {
    Allowed,
    Refused,
}

/// The switch-wide role arbitration state.
#[derive(Debug, Default)]
pub struct Roles {
    /// Highest generation id seen in a master/slave request, once one was seen.
    generation: Option<u64>,
    roles: HashMap<ConnId, ControllerRole>,
    /// Connections whose claims of the master role are refused.
    barred: HashSet<ConnId>,
}

impl Roles {
    pub fn connect(&mut self, conn: ConnId, mastership: Mastership) {
        self.roles.insert(conn, ControllerRole::Equal);
        if mastership == Mastership::Refused {
            self.barred.insert(conn);
        }
    }

    pub fn disconnect(&mut self, conn: ConnId) {
        self.roles.remove(&conn);
        self.barred.remove(&conn);
    }

    pub fn role(&self, conn: ConnId) -> ControllerRole {
        self.roles
            .get(&conn)
            .copied()
            .unwrap_or(ControllerRole::Equal)
    }

    /// Whether any connection currently has a controller role that may receive events.
    pub fn has_connections(&self) -> bool {
        !self.roles.is_empty()
    }

    /// Applies a ROLE_REQUEST and returns the role and generation id to reply with. A barred
    /// connection's claim of master is refused with OFPRRFC_UNSUP (the change is not
    /// supported for it), before its generation id is looked at or remembered.
    pub fn request(
        &mut self,
        conn: ConnId,
        role: ControllerRole,
        generation_id: u64,
    ) -> Result<(ControllerRole, u64), OfpError> {
        if role == ControllerRole::Master && self.barred.contains(&conn) {
            return Err(OfpError::RoleRequestFailed(RoleRequestFailedCode::Unsup));
        }
        match role {
            ControllerRole::NoChange => {}
            ControllerRole::Equal => {
                self.roles.insert(conn, ControllerRole::Equal);
            }
            ControllerRole::Master | ControllerRole::Slave => {
                if let Some(cached) = self.generation {
                    // Spec: stale when (int64)(generation_id - cached) < 0.
                    if (generation_id.wrapping_sub(cached) as i64) < 0 {
                        return Err(OfpError::RoleRequestFailed(RoleRequestFailedCode::Stale));
                    }
                }
                self.generation = Some(generation_id);
                if role == ControllerRole::Master {
                    for (other, r) in self.roles.iter_mut() {
                        if *other != conn && *r == ControllerRole::Master {
                            *r = ControllerRole::Slave;
                        }
                    }
                }
                self.roles.insert(conn, role);
            }
        }
        Ok((self.role(conn), self.generation.unwrap_or(0)))
    }
}

/// Async configuration a connection starts with, as Open vSwitch sets it for OpenFlow 1.3
/// (and as the controllers and test suites written against it expect): masters and equals get
/// packet-ins for NO_MATCH and ACTION, but not INVALID_TTL until a controller asks, and every
/// flow-removed reason; port-status goes to every role; slaves get nothing else.
pub fn default_async_config() -> AsyncConfig {
    AsyncConfig {
        packet_in_mask: [1 << ofp::OFPR_NO_MATCH | 1 << ofp::OFPR_ACTION, 0],
        port_status_mask: [0b111, 0b111],
        flow_removed_mask: [0b1111, 0],
    }
}

/// Which half of an async mask applies to a role.
pub fn mask_index(role: ControllerRole) -> usize {
    usize::from(role == ControllerRole::Slave)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_master_and_stale_generations() {
        let mut roles = Roles::default();
        roles.connect(1, Mastership::Allowed);
        roles.connect(2, Mastership::Allowed);
        assert_eq!(
            roles.request(1, ControllerRole::Master, 10),
            Ok((ControllerRole::Master, 10))
        );
        assert_eq!(
            roles.request(2, ControllerRole::Master, 11),
            Ok((ControllerRole::Master, 11))
        );
        assert_eq!(roles.role(1), ControllerRole::Slave);
        assert_eq!(
            roles.request(1, ControllerRole::Master, 10),
            Err(OfpError::RoleRequestFailed(RoleRequestFailedCode::Stale))
        );
        assert_eq!(
            roles.request(1, ControllerRole::NoChange, 0),
            Ok((ControllerRole::Slave, 11))
        );
        assert_eq!(
            roles.request(1, ControllerRole::Equal, 0),
            Ok((ControllerRole::Equal, 11))
        );
        // Wrap-around: a generation just past u64::MAX is newer.
        let mut roles = Roles::default();
        roles.connect(1, Mastership::Allowed);
        assert!(roles.request(1, ControllerRole::Slave, u64::MAX).is_ok());
        assert!(roles.request(1, ControllerRole::Master, 0).is_ok());
    }

    #[test]
    fn a_barred_connection_cannot_demote_the_master() {
        let mut roles = Roles::default();
        roles.connect(1, Mastership::Allowed);
        roles.connect(2, Mastership::Refused);
        assert!(roles.request(1, ControllerRole::Master, 5).is_ok());
        assert_eq!(
            roles.request(2, ControllerRole::Master, 6),
            Err(OfpError::RoleRequestFailed(RoleRequestFailedCode::Unsup))
        );
        assert_eq!(roles.role(1), ControllerRole::Master);
        assert_eq!(roles.role(2), ControllerRole::Equal);
        // Slave and equal stay open to it; its refused claim left the generation alone.
        assert_eq!(
            roles.request(2, ControllerRole::Slave, 5),
            Ok((ControllerRole::Slave, 5))
        );
        assert_eq!(
            roles.request(2, ControllerRole::Equal, 0),
            Ok((ControllerRole::Equal, 5))
        );
        // The bar goes with the connection: a new one on the same id starts afresh.
        roles.disconnect(2);
        roles.connect(2, Mastership::Allowed);
        assert!(roles.request(2, ControllerRole::Master, 7).is_ok());
        assert_eq!(roles.role(1), ControllerRole::Slave);
    }
}
