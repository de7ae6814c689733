//! Who may do what on the bus, written as the embedded `nats-server`'s configuration: one user
//! per controllet that may publish only on its own subjects (and on request subjects, and
//! replies to what it was asked), hairpind's own user, and the operator's users (remote
//! controllers, monitors).

use std::io::Read;

use controllet::subjects::{Switch, ROOT};
use serde_json::{json, Value};

use crate::spec::{BusUser, ClusterSpec, DAEMON_USER};

/// A bus user and what it may publish and subscribe to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub user: String,
    pub password: String,
    pub publish: Vec<String>,
    pub subscribe: Vec<String>,
    /// May publish replies to the requests it received.
    pub allow_responses: bool,
}

/// Every request subject of every switch.
fn any_request() -> String {
    format!("{ROOT}.*.ask.>")
}

/// The user of controllet `name` on `switch`.
pub fn controllet_user(name: &str) -> String {
    format!("controllet-{name}")
}

/// Controllet `name` publishes on its own subjects and sends requests; it reads every switch's
/// events and controllets' subjects, the requests addressed to it and its own reply inbox; it
/// can neither answer requests meant for others nor read their replies.
pub fn controllet(switch: Switch, name: &str, password: String) -> Account {
    Account {
        user: controllet_user(name),
        password,
        publish: vec![switch.own(name), any_request()],
        subscribe: vec![
            format!("{ROOT}.*.event.>"),
            format!("{ROOT}.*.controllet.>"),
            format!("{ROOT}.*.c.>"),
            switch.asked(name),
            format!("{}.>", switch.inbox(name)),
        ],
        allow_responses: true,
    }
}

/// hairpind publishes events and answers its requests.
pub fn daemon(password: String) -> Account {
    Account {
        user: DAEMON_USER.into(),
        password,
        publish: vec![">".into()],
        subscribe: vec![">".into()],
        allow_responses: false,
    }
}

/// An operator's user, from `[[bus.users]]`.
pub fn operator(user: &BusUser, password: String) -> Account {
    let mut publish = user.publish.clone();
    publish.push(any_request());
    Account {
        user: user.name.clone(),
        password,
        publish,
        subscribe: user.subscribe.clone(),
        allow_responses: true,
    }
}

impl Account {
    fn to_json(&self) -> Value {
        let mut permissions = json!({
            "publish": { "allow": self.publish },
            "subscribe": { "allow": self.subscribe },
        });
        if self.allow_responses {
            permissions["allow_responses"] = json!(true);
        }
        json!({ "user": self.user, "password": self.password, "permissions": permissions })
    }
}

/// The embedded server's configuration (nats-server reads JSON).
pub fn server_config(
    server_name: &str,
    listen: &str,
    cluster: Option<&ClusterSpec>,
    accounts: &[Account],
) -> Value {
    let mut config = json!({
        "server_name": server_name,
        "listen": listen,
        "authorization": { "users": accounts.iter().map(Account::to_json).collect::<Vec<_>>() },
        // A slow consumer is cut off rather than let the server buffer without end.
        "max_pending": 16 << 20,
        "max_connections": 1024,
    });
    if let Some(cluster) = cluster {
        config["cluster"] = json!({
            "name": cluster.name,
            "listen": cluster.listen,
            "routes": cluster.routes,
        });
    }
    config
}

/// A fresh password: 24 random bytes, hex.
pub fn random_password() -> std::io::Result<String> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controllet_publishes_only_on_its_own_subjects() {
        let a = controllet(Switch::new(1), "lsw", "pw".into());
        assert_eq!(a.user, "controllet-lsw");
        assert_eq!(
            a.publish,
            ["hairpin.0000000000000001.c.lsw.>", "hairpin.*.ask.>"]
        );
        assert!(a
            .subscribe
            .contains(&"hairpin.0000000000000001.ask.lsw.>".to_string()));
        assert!(a
            .subscribe
            .contains(&"_INBOX_0000000000000001_lsw.>".to_string()));
        assert!(!a
            .subscribe
            .iter()
            .any(|s| s == ">" || s == "_INBOX.>" || s.contains("ask.switch")));
        let config = server_config("hp-1", "127.0.0.1:4222", None, &[a, daemon("d".into())]);
        let users = config["authorization"]["users"].as_array().unwrap();
        assert_eq!(users[0]["permissions"]["allow_responses"], json!(true));
        assert_eq!(users[1]["permissions"]["publish"]["allow"], json!([">"]));
        assert!(config.get("cluster").is_none());
    }

    #[test]
    fn passwords_are_fresh() {
        let a = random_password().unwrap();
        assert_eq!(a.len(), 48);
        assert_ne!(a, random_password().unwrap());
    }
}
