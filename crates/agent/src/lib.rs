//! The OpenFlow agent: passive listeners and active controller connections (TCP, TLS or unix), the
//! per-connection protocol (see [`session`]), roles, echo and inactivity probes, reconnect with
//! backoff, and the delivery of asynchronous messages to every interested connection.
//!
//! All switch state sits behind one lock ([`session::SwitchState`]); a connection takes it once per
//! batch of messages read, so a burst of flow-mods costs one lock, not one per message.
//! Asynchronous messages never take it: a [`Channels`] handle encodes a message once and writes it
//! to each connection's [`outbox::Outbox`] straight from the thread that raised it (a datapath
//! thread, for packet-ins), so a packet-in costs the agent no wake-up.

mod connection;
pub mod limit;
pub mod outbox;
pub mod roles;
pub mod session;
pub mod target;
pub mod tls;

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ofp::PacketIn;
use switch_core::Switch;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::broadcast;

use connection::Connection;
use outbox::EventKind;
pub use roles::Mastership;
use roles::Roles;
use session::{Event, SwitchState};
use target::{ControllerTarget, ListenTarget};
use tls::TlsContext;

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
    /// The identity and CA of `ssl:` and `pssl:` targets; such a target fails without it.
    pub tls: Option<Arc<TlsContext>>,
    /// Packet-ins each connection receives at most (none: no limit).
    pub packet_in_limit: Option<limit::PacketInLimit>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            inactivity_probe: Duration::from_secs(5),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(8),
            housekeeping_interval: Duration::from_millis(100),
            tls: None,
            packet_in_limit: None,
        }
    }
}

pub(crate) struct Shared {
    state: Mutex<SwitchState>,
    /// Every open connection, for the senders of asynchronous messages.
    connections: Mutex<Vec<Arc<Connection>>>,
    /// Bumped whenever `connections` changes, so senders refresh their copy only then.
    connections_generation: AtomicU64,
    /// Every asynchronous message, for [`Agent::subscribe`] (the controllets' bus) ...
    events: broadcast::Sender<Event>,
    /// ... of the kinds someone subscribed to (one bit per [`EventKind`]): a message of
    /// another kind is not copied for it.
    subscribed: AtomicU8,
    next_conn: AtomicU64,
    /// Connections to configured controllers (`--controller`) that finished the handshake;
    /// fail modes look at these, not at passive clients such as ovs-ofctl.
    controllers: AtomicUsize,
    /// Until when (on [`switch_core::clock`]) a thread that never sleeps serves every
    /// connection's input, see [`Channels::take_input_until`].
    input_taken_until: AtomicU64,
    config: AgentConfig,
}

impl Shared {
    /// Whether a subscriber wants messages of `kind`.
    fn wants(&self, kind: EventKind) -> bool {
        self.subscribed.load(Ordering::Relaxed) & kind.bit() != 0
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SwitchState> {
        // A panic while holding the lock would be a bug; the state itself stays consistent
        // because every change validates before it mutates.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn connections(&self) -> MutexGuard<'_, Vec<Arc<Connection>>> {
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn register(&self, connection: Arc<Connection>) {
        self.connections().push(connection);
        self.connections_generation.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn unregister(&self, conn: roles::ConnId) {
        self.connections().retain(|c| c.outbox.conn != conn);
        self.connections_generation.fetch_add(1, Ordering::Release);
    }

    /// Until when a thread that never sleeps serves every connection's input, if it does at
    /// `now_ns` ([`Channels::take_input_until`]).
    pub(crate) fn input_taken(&self, now_ns: u64) -> Option<u64> {
        let until = self.input_taken_until.load(Ordering::Relaxed);
        (until > now_ns).then_some(until)
    }

    /// Tells every outbox its connection's role after a role change (a new master demotes
    /// the old one). Called under the state lock.
    pub(crate) fn refresh_roles(&self, roles: &Roles) {
        for c in self.connections().iter() {
            c.outbox.set_role(roles.role(c.outbox.conn));
        }
    }
}

/// A thread's handle on the OpenFlow channels: it raises asynchronous messages on them
/// (encoded once, delivered from the calling thread to every connection that wants them) and,
/// for a thread awake anyway, serves their input. Each thread keeps its own (it caches the
/// list of connections; a clone starts with an empty cache).
pub struct Channels {
    shared: Arc<Shared>,
    /// The connections as of `generation`.
    connections: Vec<Arc<Connection>>,
    generation: Option<u64>,
    /// Messages queued since the last flush, back to back ...
    wire: Vec<u8>,
    /// ... each with its kind, reason and end in `wire`.
    queued: Vec<(EventKind, u8, usize)>,
    /// Scratch for the queued messages one connection wants, when it does not want them all.
    picked: Vec<u8>,
}

impl Clone for Channels {
    fn clone(&self) -> Self {
        Self::new(Arc::clone(&self.shared))
    }
}

impl Channels {
    fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            connections: Vec::new(),
            generation: None,
            wire: Vec::new(),
            queued: Vec::new(),
            picked: Vec::new(),
        }
    }

    /// Delivers `event` now.
    pub fn send(&mut self, event: Event) {
        self.queue(event);
        self.flush();
    }

    /// Queues `event` for the next [`Self::flush`].
    pub fn queue(&mut self, event: Event) {
        if self.shared.wants(event.kind()) {
            // No subscriber left is no error: the message has nobody else to go to.
            let _ = self.shared.events.send(event.clone());
        }
        let (kind, reason) = (event.kind(), event.reason());
        ofp::encode(
            connection::SWITCH_XID,
            &event.into_message(),
            &mut self.wire,
        );
        self.queued.push((kind, reason, self.wire.len()));
    }

    /// Queues a packet-in whose frame is `data` (`pin.data` is not read): the frame is copied
    /// once, into the encoded message.
    pub fn queue_packet_in(&mut self, pin: &PacketIn, data: &[u8]) {
        if self.shared.wants(EventKind::PacketIn) {
            let copy = PacketIn {
                data: data.to_vec(),
                match_: pin.match_.clone(),
                ..*pin
            };
            let _ = self.shared.events.send(Event::PacketIn(copy));
        }
        pin.encode_with_data(connection::SWITCH_XID, data, &mut self.wire);
        self.queued
            .push((EventKind::PacketIn, pin.reason, self.wire.len()));
    }

    /// Delivers everything queued: what one connection wants goes to it in one write.
    pub fn flush(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        self.refresh();
        for c in &self.connections {
            c.outbox.events(&self.wire, &self.queued, &mut self.picked);
        }
        self.wire.clear();
        self.queued.clear();
    }

    /// Brings the cached list of connections up to date (only when it changed).
    fn refresh(&mut self) {
        let generation = self.shared.connections_generation.load(Ordering::Acquire);
        if self.generation != Some(generation) {
            self.connections.clone_from(&self.shared.connections());
            self.generation = Some(generation);
        }
    }

    /// Serves the input of every connection that has some and that no other thread serves
    /// right now. For a thread that is awake anyway and expects a controller's answer (a
    /// datapath thread after a packet-in): it handles the answer (a packet-out, say) itself,
    /// without waking the agent. Returns whether any message was handled.
    pub fn serve_ready_input(&mut self) -> bool {
        self.refresh();
        let mut handled = false;
        for c in &self.connections {
            handled |= c.try_serve_input(&self.shared);
        }
        handled
    }

    /// Takes every connection's input until `until_ns` (on [`switch_core::clock`]): the
    /// calling thread, which never sleeps, serves it ([`Self::serve_ready_input`]) in
    /// every round until then, and the connections' tasks stop watching their sockets
    /// meanwhile. A controller's answer then wakes no agent thread, which on a core shared
    /// with the caller would preempt it and take the answer only to queue it back to it.
    pub fn take_input_until(&self, until_ns: u64) {
        self.shared
            .input_taken_until
            .fetch_max(until_ns, Ordering::Relaxed);
    }
}

/// One connection's counters (`hairpinctl call controllers/list`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionStats {
    pub id: roles::ConnId,
    /// A configured controller (`--controller`), else a client of a listener.
    pub controller: bool,
    pub role: ofp::ControllerRole,
    /// The hello exchange is done.
    pub negotiated: bool,
    /// Packet-ins sent to it ...
    pub packet_ins: u64,
    /// ... and those the packet-in limit dropped.
    pub packet_ins_limited: u64,
    /// Asynchronous messages dropped because the peer did not read them fast enough.
    pub async_dropped: u64,
}

/// The agent; clone it into every task that serves connections.
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

impl Agent {
    pub fn new(switch: Switch, config: AgentConfig) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(SwitchState {
                    switch,
                    roles: Roles::default(),
                }),
                connections: Mutex::new(Vec::new()),
                connections_generation: AtomicU64::new(0),
                events: broadcast::channel(4096).0,
                subscribed: AtomicU8::new(0),
                next_conn: AtomicU64::new(1),
                controllers: AtomicUsize::new(0),
                input_taken_until: AtomicU64::new(0),
                config,
            }),
        }
    }

    /// A handle on the channels for the calling thread.
    pub fn channels(&self) -> Channels {
        Channels::new(Arc::clone(&self.shared))
    }

    /// Runs `f` on the switch under the agent's lock.
    pub fn with_switch<R>(&self, f: impl FnOnce(&mut Switch) -> R) -> R {
        f(&mut self.shared.lock().switch)
    }

    /// Every open connection as the operator sees it, by connection id.
    pub fn connection_stats(&self) -> Vec<ConnectionStats> {
        let connections = self.shared.connections().clone();
        connections
            .iter()
            .map(|c| ConnectionStats {
                id: c.outbox.conn,
                controller: c.active,
                role: c.outbox.role(),
                negotiated: c.outbox.negotiated(),
                packet_ins: c.outbox.packet_ins(),
                packet_ins_limited: c.outbox.limited(),
                async_dropped: c.outbox.dropped(),
            })
            .collect()
    }

    /// Configured controllers currently connected (handshake done).
    pub fn connected(&self) -> usize {
        self.shared.controllers.load(Ordering::Relaxed)
    }

    /// Accepts connections on `target` forever.
    pub async fn listen(&self, target: ListenTarget) -> io::Result<()> {
        match target {
            ListenTarget::Tcp(addr) => {
                self.serve_tcp(TcpListener::bind(addr).await?, Mastership::Allowed)
                    .await
            }
            ListenTarget::Ssl(addr) => {
                let tls = self.tls()?;
                self.serve_tls(TcpListener::bind(addr).await?, tls).await
            }
            ListenTarget::Unix(path) => {
                // A stale socket file from an earlier run would make bind fail.
                if path.exists() {
                    std::fs::remove_file(&path)?;
                }
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                self.serve_unix(UnixListener::bind(&path)?, Mastership::Allowed)
                    .await
            }
        }
    }

    /// Accepts connections on a bound TCP listener forever (one made in another network
    /// namespace, for instance); `mastership` says whether they may claim the master role.
    pub async fn serve_tcp(&self, listener: TcpListener, mastership: Mastership) -> io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            self.spawn_connection(stream.into_std()?.into(), mastership);
        }
    }

    /// Accepts TLS connections on a bound TCP listener forever. A peer that fails the
    /// handshake (no certificate, one the CA did not sign or that expired, no TLS at all) is
    /// logged and dropped; the other connections do not notice.
    pub async fn serve_tls(&self, listener: TcpListener, tls: Arc<TlsContext>) -> io::Result<()> {
        let local = listener.local_addr()?;
        loop {
            let (stream, peer) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let agent = self.clone();
            let tls = Arc::clone(&tls);
            tokio::spawn(async move {
                match tls.accept(stream).await {
                    Ok(stream) => agent.serve_relayed(stream, false).await,
                    Err(e) => eprintln!("hairpind: pssl:{local}: refused {peer}: {e}"),
                }
            });
        }
    }

    fn tls(&self) -> io::Result<Arc<TlsContext>> {
        self.shared.config.tls.clone().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a TLS target needs a private key, a certificate and a CA certificate",
            )
        })
    }

    /// Serves a connection whose bytes pass through a [`tls::relay`].
    async fn serve_relayed<S>(&self, stream: S, active: bool)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let Ok((ours, relayed)) = UnixStream::pair() else {
            return;
        };
        let Ok(ours) = ours.into_std() else {
            return;
        };
        tokio::join!(
            self.serve(ours.into(), active, Mastership::Allowed),
            tls::relay(stream, relayed)
        );
    }

    /// Accepts connections on a bound unix listener forever (one whose owner and mode the
    /// caller set); `mastership` says whether they may claim the master role.
    pub async fn serve_unix(
        &self,
        listener: UnixListener,
        mastership: Mastership,
    ) -> io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            self.spawn_connection(stream.into_std()?.into(), mastership);
        }
    }

    /// Every asynchronous message of `kinds` the switch raises from now on (packet-in, port
    /// status, flow removed), as each connection sees them before its role and async
    /// filter. Raising a message of a kind nobody subscribed to costs nothing for this (a
    /// packet-in is copied only when someone wants packet-ins).
    pub fn subscribe(&self, kinds: &[EventKind]) -> broadcast::Receiver<Event> {
        let receiver = self.shared.events.subscribe();
        let bits = kinds.iter().fold(0, |bits, &k| bits | k.bit());
        self.shared.subscribed.fetch_or(bits, Ordering::Relaxed);
        receiver
    }

    /// Keeps a connection to `target` up forever, reconnecting with exponential backoff.
    pub async fn connect(&self, target: ControllerTarget) {
        let config = &self.shared.config;
        let mut delay = config.backoff_min;
        loop {
            let connected = match &target {
                ControllerTarget::Tcp(addr) => {
                    let socket = match TcpStream::connect(addr).await {
                        Ok(stream) => stream
                            .set_nodelay(true)
                            .and_then(|()| stream.into_std())
                            .map(OwnedFd::from),
                        Err(e) => Err(e),
                    };
                    self.serve_connected(socket).await
                }
                ControllerTarget::Unix(path) => {
                    let socket = UnixStream::connect(path)
                        .await
                        .and_then(|stream| stream.into_std())
                        .map(OwnedFd::from);
                    self.serve_connected(socket).await
                }
                ControllerTarget::Ssl(addr) => self.connect_tls(*addr).await,
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

    /// Serves a controller connection if it was made; returns whether it was.
    async fn serve_connected(&self, socket: io::Result<OwnedFd>) -> bool {
        match socket {
            Ok(socket) => {
                self.serve(socket, true, Mastership::Allowed).await;
                true
            }
            Err(_) => false,
        }
    }

    /// One TLS connection to a controller, served until it drops; returns whether the
    /// handshake succeeded. A failed one is logged (a controller whose certificate the CA
    /// did not sign is no controller).
    async fn connect_tls(&self, addr: std::net::SocketAddr) -> bool {
        let tls = match self.tls() {
            Ok(tls) => tls,
            Err(e) => {
                eprintln!("hairpind: ssl:{addr}: {e}");
                return false;
            }
        };
        let Ok(stream) = TcpStream::connect(addr).await else {
            return false;
        };
        if stream.set_nodelay(true).is_err() {
            return false;
        }
        match tls.connect(stream).await {
            Ok(stream) => {
                self.serve_relayed(stream, true).await;
                true
            }
            Err(e) => {
                eprintln!("hairpind: ssl:{addr}: refused: {e}");
                false
            }
        }
    }

    fn spawn_connection(&self, socket: OwnedFd, mastership: Mastership) {
        let agent = self.clone();
        tokio::spawn(async move { agent.serve(socket, false, mastership).await });
    }

    /// Serves one connection on a connected, non-blocking stream socket; `active` marks a
    /// configured controller.
    async fn serve(&self, socket: OwnedFd, active: bool, mastership: Mastership) {
        let conn = self.shared.next_conn.fetch_add(1, Ordering::Relaxed);
        connection::run(&self.shared, conn, socket, active, mastership).await;
    }

    /// Expires flows and publishes pending changes on a fixed period, forever.
    pub async fn housekeeping(&self) {
        let mut channels = self.channels();
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
                channels.queue(Event::FlowRemoved(flow));
            }
            channels.flush();
        }
    }
}
