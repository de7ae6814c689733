//! The OpenFlow agent: passive listeners and active controller connections (TCP or unix), the
//! per-connection protocol (see [`session`]), roles, echo and inactivity probes, reconnect with
//! backoff, and the fan-out of asynchronous messages to every interested connection.
//!
//! All switch state sits behind one lock ([`session::SwitchState`]); a connection takes it once per
//! batch of messages read, so a burst of flow-mods costs one lock, not one per message.

mod connection;
pub mod roles;
pub mod session;
pub mod target;

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use switch_core::Switch;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::broadcast;

use roles::Roles;
use session::{Event, SwitchState};
use target::{ControllerTarget, ListenTarget};

/// Tunables of the agent.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Send an echo request after this long without hearing from a peer; drop the peer after
    /// twice as long.
    pub inactivity_probe: Duration,
    /// Reconnect delays for active connections grow from `backoff_min` to `backoff_max`.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// How often timeouts are checked and pending changes published without a barrier.
    pub housekeeping_interval: Duration,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            inactivity_probe: Duration::from_secs(5),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(8),
            housekeeping_interval: Duration::from_millis(100),
        }
    }
}

pub(crate) struct Shared {
    state: Mutex<SwitchState>,
    events: broadcast::Sender<Event>,
    next_conn: AtomicU64,
    /// Connections to configured controllers (`--controller`) that finished the handshake;
    /// fail modes look at these, not at passive clients such as ovs-ofctl.
    controllers: AtomicUsize,
    config: AgentConfig,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, SwitchState> {
        // A panic while holding the lock would be a bug; the state itself stays consistent
        // because every change validates before it mutates.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A cheap handle for other threads (datapath, port manager) to raise asynchronous messages.
#[derive(Clone)]
pub struct EventSender(broadcast::Sender<Event>);

impl EventSender {
    pub fn send(&self, event: Event) {
        // No receiver means no controller is connected: the event has nobody to go to.
        let _ = self.0.send(event);
    }
}

/// The agent; clone it into every task that serves connections.
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

impl Agent {
    pub fn new(switch: Switch, config: AgentConfig) -> Self {
        let (events, _) = broadcast::channel(4096);
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(SwitchState {
                    switch,
                    roles: Roles::default(),
                }),
                events,
                next_conn: AtomicU64::new(1),
                controllers: AtomicUsize::new(0),
                config,
            }),
        }
    }

    pub fn events(&self) -> EventSender {
        EventSender(self.shared.events.clone())
    }

    /// Runs `f` on the switch under the agent's lock.
    pub fn with_switch<R>(&self, f: impl FnOnce(&mut Switch) -> R) -> R {
        f(&mut self.shared.lock().switch)
    }

    /// Configured controllers currently connected (handshake done).
    pub fn connected(&self) -> usize {
        self.shared.controllers.load(Ordering::Relaxed)
    }

    /// Accepts connections on `target` forever.
    pub async fn listen(&self, target: ListenTarget) -> io::Result<()> {
        match target {
            ListenTarget::Tcp(addr) => self.serve_tcp(TcpListener::bind(addr).await?).await,
            ListenTarget::Unix(path) => {
                // A stale socket file from an earlier run would make bind fail.
                if path.exists() {
                    std::fs::remove_file(&path)?;
                }
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                self.serve_unix(UnixListener::bind(&path)?).await
            }
        }
    }

    /// Accepts connections on a bound TCP listener forever (one made in another network
    /// namespace, for instance).
    pub async fn serve_tcp(&self, listener: TcpListener) -> io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            self.spawn_connection(stream);
        }
    }

    /// Accepts connections on a bound unix listener forever (one whose owner and mode the
    /// caller set).
    pub async fn serve_unix(&self, listener: UnixListener) -> io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            self.spawn_connection(stream);
        }
    }

    /// Every asynchronous message the switch raises from now on (packet-in, port status,
    /// flow removed), as each connection sees them before its role and async filter.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.events.subscribe()
    }

    /// Keeps a connection to `target` up forever, reconnecting with exponential backoff.
    pub async fn connect(&self, target: ControllerTarget) {
        let config = &self.shared.config;
        let mut delay = config.backoff_min;
        loop {
            let connected = match &target {
                ControllerTarget::Tcp(addr) => match TcpStream::connect(addr).await {
                    Ok(stream) => {
                        let _ = stream.set_nodelay(true);
                        self.serve(stream, true).await;
                        true
                    }
                    Err(_) => false,
                },
                ControllerTarget::Unix(path) => match UnixStream::connect(path).await {
                    Ok(stream) => {
                        self.serve(stream, true).await;
                        true
                    }
                    Err(_) => false,
                },
            };
            // A connection that came up and later dropped starts the backoff afresh.
            delay = if connected {
                config.backoff_min
            } else {
                (delay * 2).min(config.backoff_max)
            };
            tokio::time::sleep(delay).await;
        }
    }

    fn spawn_connection<S>(&self, stream: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let agent = self.clone();
        tokio::spawn(async move { agent.serve(stream, false).await });
    }

    /// Serves one connection; `active` marks a configured controller.
    async fn serve<S>(&self, stream: S, active: bool)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let conn = self.shared.next_conn.fetch_add(1, Ordering::Relaxed);
        connection::run(&self.shared, conn, stream, active).await;
    }

    /// Expires flows and publishes pending changes on a fixed period, forever.
    pub async fn housekeeping(&self) {
        let mut ticker = tokio::time::interval(self.shared.config.housekeeping_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let now = switch_core::clock::now_ns();
            let removed = {
                let mut state = self.shared.lock();
                let removed = state.switch.expire(now);
                state.switch.publish();
                removed
            };
            for flow in removed {
                let _ = self.shared.events.send(Event::FlowRemoved(flow));
            }
        }
    }
}
