//! The controllet's place on the NATS bus: its own subjects to publish on, every switch's
//! events and every controllet's subjects to subscribe to, and request/reply (see
//! [`crate::subjects`]). The server refuses anything else this controllet publishes.

use std::time::{SystemTime, UNIX_EPOCH};

use async_nats::{Client, ConnectOptions, HeaderMap, Subscriber};
use bytes::Bytes;

use crate::env::BusAccess;
use crate::subjects::{self, EventKind};

pub use async_nats::Message as BusMessage;

/// Why a bus operation failed.
pub type BusError = Box<dyn std::error::Error + Send + Sync>;

/// A connection to the bus as one controllet of one switch.
#[derive(Clone)]
pub struct Bus {
    client: Client,
    name: String,
    switch: subjects::Switch,
}

impl Bus {
    /// Connects as controllet `name` of switch `datapath_id`, with its credentials and its
    /// private reply inbox.
    pub async fn connect(
        access: &BusAccess,
        name: &str,
        datapath_id: u64,
    ) -> Result<Bus, BusError> {
        let switch = subjects::Switch::new(datapath_id);
        let mut options = ConnectOptions::new()
            .name(format!("controllet {name} of {}", switch.0))
            .custom_inbox_prefix(switch.inbox(name));
        if let Some((user, password)) = &access.credentials {
            options = options.user_and_password(user.clone(), password.clone());
        }
        let client = options.connect(access.url.as_str()).await?;
        Ok(Bus {
            client,
            name: name.to_string(),
            switch,
        })
    }

    /// The underlying NATS client, for what this wrapper does not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// This switch's subjects.
    pub fn switch(&self) -> subjects::Switch {
        self.switch
    }

    /// Publishes `payload` on this controllet's subject `hairpin.<dpid>.c.<name>.<topic>`.
    pub async fn publish(&self, topic: &str, payload: impl Into<Bytes>) -> Result<(), BusError> {
        let subject = self.switch.topic(&self.name, topic);
        self.client.publish(subject, payload.into()).await?;
        Ok(())
    }

    /// Subscribes to any subject pattern the controllet may read.
    pub async fn subscribe(&self, pattern: impl Into<String>) -> Result<Subscriber, BusError> {
        Ok(self.client.subscribe(pattern.into()).await?)
    }

    /// Subscribes to one kind of this switch's events.
    pub async fn events(&self, kind: EventKind) -> Result<Subscriber, BusError> {
        self.subscribe(self.switch.event(kind)).await
    }

    /// Asks `service` (a controllet's name, or `switch` for hairpind) on this switch.
    pub async fn ask(
        &self,
        service: &str,
        query: &str,
        payload: impl Into<Bytes>,
    ) -> Result<BusMessage, BusError> {
        let subject = self.switch.ask(service, query);
        Ok(self.client.request(subject, payload.into()).await?)
    }

    /// The requests others send to this controllet (`hairpin.<dpid>.ask.<name>.>`); answer
    /// each on its `reply` subject with [`Bus::reply`].
    pub async fn requests(&self) -> Result<Subscriber, BusError> {
        self.subscribe(self.switch.asked(&self.name)).await
    }

    /// Answers a request.
    pub async fn reply(
        &self,
        request: &BusMessage,
        payload: impl Into<Bytes>,
    ) -> Result<(), BusError> {
        let Some(reply) = &request.reply else {
            return Ok(());
        };
        self.client.publish(reply.clone(), payload.into()).await?;
        Ok(())
    }

    /// Waits until the server has everything published so far.
    pub async fn flush(&self) -> Result<(), BusError> {
        Ok(self.client.flush().await?)
    }
}

/// The OpenFlow message an event carries (`hairpin.<dpid>.event.*`), if it is one.
pub fn event_message(msg: &BusMessage) -> Option<(ofp::Header, ofp::Message)> {
    ofp::decode(&msg.payload).ok()
}

/// When hairpind published the event, in nanoseconds since the epoch.
pub fn published_ns(msg: &BusMessage) -> Option<u64> {
    header_ns(msg.headers.as_ref()?)
}

fn header_ns(headers: &HeaderMap) -> Option<u64> {
    headers.get(subjects::PUBLISHED_NS)?.as_str().parse().ok()
}

/// The wall clock in nanoseconds since the epoch (what [`subjects::PUBLISHED_NS`] holds).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
