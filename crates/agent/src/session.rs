//! One OpenFlow connection's protocol logic, free of I/O so it can be tested message by
//! message: version negotiation, role and async configuration, and dispatch of every request
//! to the switch core with the reply or the OFPT_ERROR the specification names.

use ofp::{
    AsyncConfig, BadRequestCode, ControllerRole, ErrorMsg, FlowRemoved, Header, HelloFailedCode,
    Message, MultipartReply, OfpError, PacketIn, PortStatus, RoleMsg, OFP_VERSION,
};
use switch_core::Switch;

use crate::outbox::{EventKind, Filter};
use crate::roles::{default_async_config, ConnId, Roles};

/// An asynchronous message for every connection whose role and async config want it.
#[derive(Clone, Debug)]
pub enum Event {
    PacketIn(PacketIn),
    FlowRemoved(FlowRemoved),
    PortStatus(PortStatus),
}

impl Event {
    pub fn kind(&self) -> EventKind {
        match self {
            Event::PacketIn(_) => EventKind::PacketIn,
            Event::FlowRemoved(_) => EventKind::FlowRemoved,
            Event::PortStatus(_) => EventKind::PortStatus,
        }
    }

    /// The message's reason (`OFPR_*`, `OFPRR_*`, `OFPPR_*`), which async configs filter on.
    pub fn reason(&self) -> u8 {
        match self {
            Event::PacketIn(p) => p.reason,
            Event::FlowRemoved(f) => f.reason,
            Event::PortStatus(p) => p.reason,
        }
    }

    pub fn into_message(self) -> Message {
        match self {
            Event::PacketIn(p) => Message::PacketIn(p),
            Event::FlowRemoved(f) => Message::FlowRemoved(f),
            Event::PortStatus(p) => Message::PortStatus(p),
        }
    }
}

/// What handling one message produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Messages for this connection, in order, with their xids.
    pub replies: Vec<(u32, Message)>,
    /// Asynchronous messages for every connection (including this one).
    pub events: Vec<Event>,
    /// The connection must be closed after sending the replies (failed hello).
    pub close: bool,
}

impl Outcome {
    fn reply(xid: u32, msg: Message) -> Self {
        Self {
            replies: vec![(xid, msg)],
            ..Self::default()
        }
    }

    fn error(xid: u32, error: OfpError, request: &[u8]) -> Self {
        Self::reply(xid, Message::Error(ErrorMsg::for_request(error, request)))
    }
}

/// The switch state a session acts on, behind the agent's one lock.
pub struct SwitchState {
    pub switch: Switch,
    pub roles: Roles,
}

/// Per-connection protocol state.
#[derive(Debug)]
pub struct Session {
    pub conn: ConnId,
    negotiated: bool,
    async_config: AsyncConfig,
    /// A table-features request arriving in parts (OFPMPF_REQ_MORE), with its xid: the
    /// first table it sets, if any. The switch refuses to set table features, so one table
    /// is enough to answer the whole request; keeping them all would let a peer park
    /// megabytes per connection.
    pending_table_features: Option<(u32, Vec<ofp::TableFeatures>)>,
}

fn is_modifying(msg: &Message) -> bool {
    matches!(
        msg,
        Message::FlowMod(_)
            | Message::GroupMod(_)
            | Message::PortMod(_)
            | Message::TableMod(_)
            | Message::MeterMod(_)
            | Message::PacketOut(_)
            | Message::PktTmpMod(_)
            | Message::TimerMod(_)
    ) || matches!(msg, Message::MultipartRequest(m)
        if matches!(&m.body, ofp::MultipartRequestBody::TableFeatures(t) if !t.is_empty()))
}

impl Session {
    pub fn new(conn: ConnId) -> Self {
        Self {
            conn,
            negotiated: false,
            async_config: default_async_config(),
            pending_table_features: None,
        }
    }

    pub fn negotiated(&self) -> bool {
        self.negotiated
    }

    /// Which asynchronous messages this connection receives in `role`.
    pub fn filter(&self, role: ControllerRole) -> Filter {
        Filter {
            negotiated: self.negotiated,
            role,
            config: self.async_config,
        }
    }

    /// Whether this connection, in `role`, wants `event`.
    pub fn wants(&self, role: ControllerRole, event: &Event) -> bool {
        self.filter(role).wants(event.kind(), event.reason())
    }

    /// A message that could not be decoded: the error its decoder named.
    pub fn on_decode_error(&self, xid: u32, error: OfpError, request: &[u8]) -> Outcome {
        Outcome::error(xid, error, request)
    }

    /// Handles one decoded message. `raw` is its encoding (for error data).
    pub fn on_message(
        &mut self,
        state: &mut SwitchState,
        header: &Header,
        msg: Message,
        raw: &[u8],
        now_ns: u64,
    ) -> Outcome {
        let xid = header.xid;
        if let Message::Hello(hello) = &msg {
            return self.on_hello(xid, header.version, hello.version_bitmap(), raw);
        }
        if !self.negotiated {
            // Spec 6.3.1: nothing but HELLO before negotiation; the peer is broken.
            return Outcome {
                close: true,
                ..Outcome::error(xid, OfpError::BadRequest(BadRequestCode::BadType), raw)
            };
        }
        if header.version != OFP_VERSION {
            return Outcome::error(xid, OfpError::BadRequest(BadRequestCode::BadVersion), raw);
        }
        let role = state.roles.role(self.conn);
        if role == ControllerRole::Slave && is_modifying(&msg) {
            return Outcome::error(xid, OfpError::BadRequest(BadRequestCode::IsSlave), raw);
        }
        match self.dispatch(state, xid, msg, now_ns) {
            Ok(outcome) => outcome,
            Err(error) => Outcome::error(xid, error, raw),
        }
    }

    fn on_hello(&mut self, xid: u32, version: u8, bitmap: Option<&[u32]>, raw: &[u8]) -> Outcome {
        let supports_13 = match bitmap {
            Some(words) => words.first().is_some_and(|w| w & (1 << OFP_VERSION) != 0),
            None => version >= OFP_VERSION,
        };
        if supports_13 {
            self.negotiated = true;
            return Outcome::default();
        }
        Outcome {
            close: true,
            ..Outcome::error(
                xid,
                OfpError::HelloFailed(HelloFailedCode::Incompatible),
                raw,
            )
        }
    }

    fn dispatch(
        &mut self,
        state: &mut SwitchState,
        xid: u32,
        msg: Message,
        now_ns: u64,
    ) -> Result<Outcome, OfpError> {
        let switch = &mut state.switch;
        Ok(match msg {
            Message::EchoRequest(data) => Outcome::reply(xid, Message::EchoReply(data)),
            Message::EchoReply(_) | Message::Error(_) => Outcome::default(),
            Message::FeaturesRequest => {
                Outcome::reply(xid, Message::FeaturesReply(switch.features()))
            }
            Message::GetConfigRequest => {
                Outcome::reply(xid, Message::GetConfigReply(switch.config()))
            }
            Message::SetConfig(config) => {
                switch.set_config(&config)?;
                Outcome::default()
            }
            Message::FlowMod(fm) => Outcome {
                events: removed_events(switch.flow_mod(fm, now_ns)?),
                ..Outcome::default()
            },
            Message::GroupMod(gm) => Outcome {
                events: removed_events(switch.group_mod(&gm, now_ns)?),
                ..Outcome::default()
            },
            Message::MeterMod(mm) => Outcome {
                events: removed_events(switch.meter_mod(&mm, now_ns)?),
                ..Outcome::default()
            },
            Message::PortMod(pm) => Outcome {
                events: switch
                    .port_mod(&pm)?
                    .map(Event::PortStatus)
                    .into_iter()
                    .collect(),
                ..Outcome::default()
            },
            Message::TableMod(tm) => {
                switch.table_mod(&tm)?;
                Outcome::default()
            }
            Message::PacketOut(po) => {
                switch.packet_out(po)?;
                Outcome::default()
            }
            Message::PktTmpMod(m) => {
                switch.pkttmp_mod(&m)?;
                Outcome::default()
            }
            Message::TimerMod(m) => {
                switch.timer_mod(&m)?;
                Outcome::default()
            }
            Message::MultipartRequest(req) => {
                let Some(body) = self.assemble_multipart(xid, req)? else {
                    return Ok(Outcome::default());
                };
                let body = switch.multipart(&body, now_ns)?;
                Outcome::reply(
                    xid,
                    Message::MultipartReply(MultipartReply { flags: 0, body }),
                )
            }
            Message::BarrierRequest => {
                switch.publish();
                Outcome::reply(xid, Message::BarrierReply)
            }
            Message::QueueGetConfigRequest { port } => {
                if port != ofp::OFPP_ANY && !switch.has_port(port) {
                    return Err(OfpError::QueueOpFailed(ofp::QueueOpFailedCode::BadPort));
                }
                Outcome::reply(
                    xid,
                    Message::QueueGetConfigReply(ofp::QueueGetConfigReply {
                        port,
                        queues: Vec::new(),
                    }),
                )
            }
            Message::RoleRequest(RoleMsg {
                role,
                generation_id,
            }) => {
                let (role, generation_id) = state.roles.request(self.conn, role, generation_id)?;
                Outcome::reply(
                    xid,
                    Message::RoleReply(RoleMsg {
                        role,
                        generation_id,
                    }),
                )
            }
            Message::GetAsyncRequest => {
                Outcome::reply(xid, Message::GetAsyncReply(self.async_config))
            }
            Message::SetAsync(config) => {
                self.async_config = config;
                Outcome::default()
            }
            // Ours (InSP), with an exp_type we do not have; or someone else's.
            Message::Experimenter(e) if e.experimenter == ofp::INSP_EXPERIMENTER => {
                return Err(OfpError::BadRequest(BadRequestCode::BadExpType))
            }
            Message::Experimenter(_) => {
                return Err(OfpError::BadRequest(BadRequestCode::BadExperimenter))
            }
            Message::Hello(_)
            | Message::FeaturesReply(_)
            | Message::GetConfigReply(_)
            | Message::PacketIn(_)
            | Message::FlowRemoved(_)
            | Message::PortStatus(_)
            | Message::MultipartReply(_)
            | Message::BarrierReply
            | Message::QueueGetConfigReply(_)
            | Message::RoleReply(_)
            | Message::GetAsyncReply(_) => {
                return Err(OfpError::BadRequest(BadRequestCode::BadType))
            }
        })
    }
}

impl Session {
    /// Joins a request sent in parts (spec 7.3.5: OFPMPF_REQ_MORE on all but the last part,
    /// same xid). Only table-features requests have a body worth splitting; the request is
    /// complete when `Some` comes back.
    fn assemble_multipart(
        &mut self,
        xid: u32,
        req: ofp::MultipartRequest,
    ) -> Result<Option<ofp::MultipartRequestBody>, OfpError> {
        use ofp::MultipartRequestBody as Q;
        let more = req.flags & ofp::OFPMPF_REQ_MORE != 0;
        let pending = self.pending_table_features.take();
        match (req.body, pending) {
            (Q::TableFeatures(part), pending) => {
                let mut tables = match pending {
                    Some((pending_xid, tables)) if pending_xid == xid => tables,
                    Some(_) => return Err(OfpError::BadRequest(BadRequestCode::BadMultipart)),
                    None => Vec::new(),
                };
                if tables.is_empty() {
                    tables.extend(part.into_iter().take(1));
                }
                if more {
                    self.pending_table_features = Some((xid, tables));
                    return Ok(None);
                }
                Ok(Some(Q::TableFeatures(tables)))
            }
            (_, Some(_)) => Err(OfpError::BadRequest(BadRequestCode::BadMultipart)),
            (_, None) if more => Err(OfpError::BadRequest(BadRequestCode::BadMultipart)),
            (body, None) => Ok(Some(body)),
        }
    }
}

fn removed_events(removed: Vec<FlowRemoved>) -> Vec<Event> {
    removed.into_iter().map(Event::FlowRemoved).collect()
}
