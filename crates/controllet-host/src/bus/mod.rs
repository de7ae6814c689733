//! The message bus: NATS, embedded (`server`) or external. hairpind is a client like the
//! others: it publishes the switch's events and the controllets' comings and goings, and
//! answers requests about the switch (`bridge`). Each controllet gets its own credentials
//! (`auth`) and, in a network namespace of its own, a relay to the bus (`relay`).

pub mod auth;
pub mod bridge;
pub mod relay;
pub mod server;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_nats::{Client, ConnectOptions};
use controllet::subjects::Switch;

use crate::spec::{BusSpec, ControlletSpec, DAEMON_USER};
use server::Embedded;

/// The bus as hairpind uses it.
pub struct Bus {
    pub client: Client,
    pub switch: Switch,
    /// `HOST:PORT` of the server controllets connect to.
    pub addr: String,
    pub embedded: Option<Arc<Embedded>>,
    pub spec: BusSpec,
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn read_password(path: &Path) -> io::Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl Bus {
    /// Starts the embedded server (no `url`) or joins the external bus, and connects.
    pub async fn start(spec: BusSpec, datapath_id: u64, run_dir: &Path) -> io::Result<Bus> {
        let switch = Switch::new(datapath_id);
        let (addr, embedded, options) = match &spec.url {
            Some(url) => {
                let addr = url
                    .split_once("://")
                    .map_or(url.as_str(), |(_, rest)| rest)
                    .to_string();
                let mut options = ConnectOptions::new();
                if let (Some(user), Some(file)) = (&spec.user, &spec.password_file) {
                    options = options.user_and_password(user.clone(), read_password(file)?);
                }
                (addr, None, options)
            }
            None => {
                let password = auth::random_password()?;
                let mut accounts = vec![auth::daemon(password.clone())];
                for user in &spec.users {
                    accounts.push(auth::operator(user, read_password(&user.password_file)?));
                }
                let server = Embedded::start(
                    spec.clone(),
                    format!("hairpin-{}", switch.0),
                    &run_dir.join("bus"),
                    accounts,
                )
                .await?;
                let options = ConnectOptions::new().user_and_password(DAEMON_USER.into(), password);
                (spec.listen.clone(), Some(server), options)
            }
        };
        let client = options
            .name(format!("hairpind {}", switch.0))
            .connection_timeout(Duration::from_secs(5))
            .connect(addr.as_str())
            .await
            .map_err(|e| io::Error::other(format!("bus {addr}: {e}")))?;
        Ok(Bus {
            client,
            switch,
            addr,
            embedded,
            spec,
        })
    }

    /// The credentials controllet `spec` connects with: fresh ones on the embedded server
    /// (valid once this returns), or those the operator provisioned on an external bus.
    /// `Ok(None)` means the bus cannot confine it.
    pub async fn admit(&self, spec: &ControlletSpec) -> io::Result<Option<(String, String)>> {
        let name = spec.name.as_str();
        let user = auth::controllet_user(name);
        let Some(server) = &self.embedded else {
            return match &spec.bus_password_file {
                Some(file) => Ok(Some((user, read_password(file)?))),
                None => Ok(None),
            };
        };
        let password = auth::random_password()?;
        server.set_account(auth::controllet(self.switch, name, password.clone()))?;
        // The reload is asynchronous: wait until the server takes the new user.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let probe = ConnectOptions::new()
                .user_and_password(user.clone(), password.clone())
                .connection_timeout(Duration::from_millis(500))
                .connect(self.addr.as_str())
                .await;
            match probe {
                Ok(client) => {
                    drop(client);
                    return Ok(Some((user, password)));
                }
                Err(e) if tokio::time::Instant::now() > deadline => {
                    return Err(other(format!("the bus did not take user {user}: {e}")))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// Withdraws controllet `name`'s credentials (embedded server).
    pub fn forget(&self, name: &str) {
        if let Some(server) = &self.embedded {
            let _ = server.remove_account(&auth::controllet_user(name));
        }
    }

    /// Stops the embedded server.
    pub fn stop(&self) {
        if let Some(server) = &self.embedded {
            server.stop();
        }
    }
}
