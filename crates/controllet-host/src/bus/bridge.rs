//! hairpind's side of the bus: the switch's asynchronous messages go out on
//! `hairpin.<dpid>.event.*` as OpenFlow messages (what a controller would read on its
//! channel, before any role or async filter), stamped with their publication time; requests on
//! `hairpin.<dpid>.ask.switch.<query>` are answered with JSON.

use agent::session::Event;
use async_nats::{Client, HeaderMap};
use controllet::subjects::{EventKind, Switch, PUBLISHED_NS, SWITCH_SERVICE};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError};

fn kind(event: &Event) -> EventKind {
    match event {
        Event::PacketIn(_) => EventKind::PacketIn,
        Event::PortStatus(_) => EventKind::PortStatus,
        Event::FlowRemoved(_) => EventKind::FlowRemoved,
    }
}

/// The agent's kind of asynchronous message behind a bus event kind (what to subscribe to).
pub fn message_kind(kind: EventKind) -> agent::outbox::EventKind {
    use agent::outbox::EventKind as Message;
    match kind {
        EventKind::PacketIn => Message::PacketIn,
        EventKind::PortStatus => Message::PortStatus,
        EventKind::FlowRemoved => Message::FlowRemoved,
    }
}

/// Publishes every event of the `kinds` wanted until the agent goes away.
pub async fn publish_events(
    client: Client,
    switch: Switch,
    kinds: Vec<EventKind>,
    mut events: broadcast::Receiver<Event>,
) {
    let subjects: Vec<(EventKind, String)> = kinds.iter().map(|&k| (k, switch.event(k))).collect();
    let mut wire = Vec::with_capacity(2048);
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            // A storm the bus cannot keep up with loses the oldest events, as a congested
            // OpenFlow channel would.
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let kind = kind(&event);
        let Some((_, subject)) = subjects.iter().find(|(k, _)| *k == kind) else {
            continue;
        };
        wire.clear();
        ofp::encode(0, &event.into_message(), &mut wire);
        let mut headers = HeaderMap::new();
        headers.insert(PUBLISHED_NS, controllet::bus::now_ns().to_string().as_str());
        let _ = client
            .publish_with_headers(subject.clone(), headers, wire.clone().into())
            .await;
    }
}

/// Answers the switch's requests with `answer(query)` until the bus goes away.
pub async fn answer_queries(
    client: Client,
    switch: Switch,
    answer: impl Fn(&str) -> Value,
) -> Result<(), async_nats::SubscribeError> {
    let asked = switch.asked(SWITCH_SERVICE);
    let prefix = asked.trim_end_matches('>').to_string();
    let mut requests = client.subscribe(asked).await?;
    while let Some(request) = requests.next().await {
        let Some(reply) = request.reply else { continue };
        let query = request.subject.as_str().strip_prefix(&prefix).unwrap_or("");
        let body = answer(query).to_string();
        let _ = client.publish(reply, body.into()).await;
    }
    Ok(())
}
