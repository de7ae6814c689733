//! `hairpind`: the Hairpin switch daemon. Reads its settings, opens its ports, builds the
//! datapath, the switch core and the OpenFlow agent, and runs them until SIGINT or SIGTERM.

mod config;
mod control;
mod datapath;
mod hardware;
mod legacy;
mod links;
mod log;
mod metrics;
mod portmap;
mod status;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent::target::ListenTarget;
use agent::{Agent, AgentConfig};
use clap::Parser;
use config::{FailMode, Settings};
use dataplane::datapath::DatapathConfig;
use ports::{PcapWriter, TimestampPrecision};
use switch_core::Switch;

/// Large flow tables on 2 MiB pages (see `dataplane::hugepages`).
#[global_allocator]
static ALLOC: dataplane::hugepages::HugePageAlloc = dataplane::hugepages::HugePageAlloc;

fn main() -> ExitCode {
    let cli = config::Cli::parse();
    if cli.man_page {
        return print_man_page();
    }
    let settings = match Settings::from_cli(cli) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("hairpind: {e}");
            return ExitCode::from(2);
        }
    };
    let offload = match hardware::load(&settings) {
        Ok(offload) => offload,
        Err(e) => {
            eprintln!("hairpind: {e}");
            return ExitCode::from(2);
        }
    };
    // Unreadable or mismatched TLS files are settings errors, found before anything starts.
    let tls = match settings.tls.as_ref().map(agent::tls::TlsContext::load) {
        None => None,
        Some(Ok(tls)) => Some(Arc::new(tls)),
        Some(Err(e)) => {
            eprintln!("hairpind: {e}");
            return ExitCode::from(2);
        }
    };
    match run(settings, offload, tls) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hairpind: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The manual page, from the same definitions as the command line.
fn print_man_page() -> ExitCode {
    use clap::CommandFactory;
    let page = clap_mangen::Man::new(config::Cli::command()).section("8");
    match page.render(&mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hairpind: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    settings: Settings,
    offload: Option<hardware::Hardware>,
    tls: Option<Arc<agent::tls::TlsContext>>,
) -> std::io::Result<()> {
    log::set_level(settings.log_level);
    let doorbell = datapath::doorbell::Doorbell::new()?;
    let (packet_out_sender, packet_outs) = datapath::packet_out::queue(doorbell.clone());
    let timers = datapath::timers::Timers::new(doorbell.clone());
    let (mut switch, readers) = Switch::with_datapath(
        settings.datapath_id,
        DatapathConfig::default(),
        |writer| match &offload {
            Some(hw) => hw.sink(Box::new(writer)),
            None => Box::new(writer),
        },
        Box::new(packet_out_sender),
    );
    let dp_shared = Arc::clone(readers.shared());
    switch.set_timer_queue(Box::new(timers.clone()));
    let agent = Agent::new(
        switch,
        AgentConfig {
            tls,
            packet_in_limit: settings.packet_in_limit,
            ..AgentConfig::default()
        },
    );
    let map = Arc::new(portmap::PortMap::new(&settings).map_err(std::io::Error::other)?);
    let legacy = Arc::new(legacy::LegacyLinks::new(Arc::clone(&map))?);
    links::add_ports(&agent, &map, &legacy)?;
    if let Some(hw) = &offload {
        hw.start(&map, Arc::clone(&dp_shared))
            .map_err(std::io::Error::other)?;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let threads = settings.datapath_threads;
    let thread_stats = datapath::stats::new(threads);
    // A TAP device cannot join a fanout group: the first thread serves LOCAL alone.
    let mut local = match &settings.local_port {
        Some(name) => Some(links::open_local(&agent, name)?),
        None => None,
    };
    let mut handles = Vec::with_capacity(threads + 1);
    for index in 0..threads {
        let mut ports = links::open_ports(&map, threads, settings.rx_ring)?;
        if let Some((port_no, tap)) = local.take() {
            ports.push(port_no, tap);
        }
        for (port_no, file) in &settings.captures {
            let writer = PcapWriter::create(file, TimestampPrecision::Micro).map_err(|e| {
                std::io::Error::new(e.kind(), format!("pcap {}: {e}", file.display()))
            })?;
            ports.capture(*port_no, writer);
        }
        let ctx = datapath::ThreadContext {
            agent: agent.clone(),
            reader: readers.reader(),
            ports,
            packet_outs: packet_outs.clone(),
            timers: timers.clone(),
            doorbell: doorbell.clone(),
            standalone: settings.fail_mode == FailMode::Standalone,
            busy_poll: settings.busy_poll,
            hardware: offload.as_ref().and_then(hardware::Hardware::stage),
            stats: Arc::clone(&thread_stats),
            index,
            stop: Arc::clone(&stop),
        };
        let thread = std::thread::Builder::new()
            .name(format!("hairpin-dp{index}"))
            .spawn(move || datapath::run(ctx))?;
        if let Some(cpus) = &settings.datapath_cpus {
            let cpu = cpus.for_thread(index);
            cpus::pin(&thread, cpu).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("pinning datapath thread {index} to CPU {cpu}: {e}"),
                )
            })?;
        }
        handles.push(thread);
    }
    handles.push(links::spawn_monitor(
        agent.clone(),
        Arc::clone(&map),
        Arc::clone(&legacy),
        Arc::clone(&stop),
    )?);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let unix_sockets: Vec<_> = settings
        .listen
        .iter()
        .filter_map(|l| match l {
            ListenTarget::Unix(path) => Some(path.clone()),
            ListenTarget::Tcp(_) | ListenTarget::Ssl(_) => None,
        })
        .collect();
    let mut registry = control::Registry::new();
    control::templates::register(&mut registry, agent.clone());
    control::controllers::register(&mut registry, &agent);
    control::ports::register(&mut registry, &agent, &legacy);
    control::timers::register(&mut registry, timers);
    let sources = status::Sources {
        agent: agent.clone(),
        map: Arc::clone(&map),
        threads: thread_stats,
        controllers_configured: settings.controllers.len(),
    };
    control::daemon::register(&mut registry, sources.clone());
    control::trace::register(&mut registry, agent.clone(), readers.clone());
    if let Some(hw) = &offload {
        hw.register(&mut registry);
        handles.push(hw.spawn_ticker(Arc::clone(&stop))?);
    }
    log!(
        log::Level::Info,
        "version {}, datapath {:016x}, {} ports, {} datapath threads",
        env!("CARGO_PKG_VERSION"),
        settings.datapath_id,
        map.ports.len(),
        threads
    );
    let result = runtime.block_on(serve(agent, settings, registry, sources));
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        let _ = handle.join();
    }
    for path in unix_sockets {
        let _ = std::fs::remove_file(path);
    }
    result
}

async fn serve(
    agent: Agent,
    settings: Settings,
    mut registry: control::Registry,
    sources: status::Sources,
) -> std::io::Result<()> {
    let controllets = controllet_host::Host::start(
        settings.controllets.clone(),
        agent.clone(),
        settings.datapath_id,
    )
    .await
    .map_err(|e| std::io::Error::other(format!("controllets: {e}")))?;
    control::controllets::register(&mut registry, &controllets);
    let registry = Arc::new(registry);
    let result = serve_until_signal(agent, settings, registry, sources).await;
    controllets.shutdown().await;
    result
}

async fn serve_until_signal(
    agent: Agent,
    settings: Settings,
    registry: Arc<control::Registry>,
    sources: status::Sources,
) -> std::io::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(addr) = settings.metrics {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| std::io::Error::new(e.kind(), format!("metrics {addr}: {e}")))?;
        log!(log::Level::Info, "metrics on http://{addr}/metrics");
        tasks.spawn(metrics::serve(listener, sources));
    }
    if let Some(socket) = open_control_socket(settings.control_socket.as_deref())? {
        tasks.spawn(async move {
            let (listener, _removed_on_exit) = socket;
            control::serve(listener, registry).await
        });
    }
    for target in settings.listen {
        let agent = agent.clone();
        let shown = target.to_string();
        tasks.spawn(async move {
            agent
                .listen(target)
                .await
                .map_err(|e| std::io::Error::new(e.kind(), format!("{shown}: {e}")))
        });
    }
    for target in settings.controllers {
        let agent = agent.clone();
        tasks.spawn(async move {
            agent.connect(target).await;
            Ok(())
        });
    }
    let housekeeping = agent.clone();
    tasks.spawn(async move {
        housekeeping.housekeeping().await;
        Ok(())
    });
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = sigterm.recv() => Ok(()),
        Some(done) = tasks.join_next() => match done {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        },
    }
}

/// Binds the control socket: the one given, or the default unless another daemon serves it
/// (a second daemon on one host then runs without one, and says so).
fn open_control_socket(
    given: Option<&std::path::Path>,
) -> std::io::Result<Option<(tokio::net::UnixListener, control::ControlSocket)>> {
    let path = given.unwrap_or(std::path::Path::new(config::DEFAULT_CONTROL_SOCKET));
    match control::bind(path) {
        Ok(listener) => Ok(Some((listener, control::ControlSocket(path.to_path_buf())))),
        Err(e) if given.is_none() && e.kind() == std::io::ErrorKind::AddrInUse => {
            log!(
                log::Level::Warn,
                "{}: {e}; no control socket",
                path.display()
            );
            Ok(None)
        }
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("control socket {}: {e}", path.display()),
        )),
    }
}
