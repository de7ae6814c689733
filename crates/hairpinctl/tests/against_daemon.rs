//! `hairpinctl` against a running `hairpind` (built by `cargo build -p hairpind`): flows,
//! groups and meters go in, come back out equal, and switch errors are printed by name.
//! Skipped, with the reason printed, when the daemon binary is not there.

use std::collections::BTreeSet;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use hairpinctl::syntax::flow::{parse_flow, FlowUse};

/// The daemon binary: `$HAIRPIND_BIN`, else `$CARGO_TARGET_DIR/debug/hairpind`, else the one
/// next to this test's `hairpinctl`.
fn daemon_binary() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("HAIRPIND_BIN").map(PathBuf::from),
        std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("debug/hairpind")),
        PathBuf::from(env!("CARGO_BIN_EXE_hairpinctl"))
            .parent()
            .map(|dir| dir.join("hairpind")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

/// A daemon listening on its own unix socket, with its own control socket; killed when dropped.
struct Daemon {
    child: Child,
    socket: PathBuf,
    control: PathBuf,
}

impl Daemon {
    /// Starts the daemon, or `None` (after saying why) when there is none to start.
    fn start(tag: &str) -> Option<Daemon> {
        let Some(binary) = daemon_binary() else {
            testkit::cannot_run(
                tag,
                "no hairpind binary (set HAIRPIND_BIN or run `cargo build -p hairpind`)",
            );
            return None;
        };
        let socket = PathBuf::from(format!("/tmp/hpctl-{}-{tag}.sock", std::process::id()));
        let control = socket.with_extension("ctl");
        let _ = std::fs::remove_file(&socket);
        let child = Command::new(&binary)
            .arg("--listen")
            .arg(format!("punix:{}", socket.display()))
            .arg("--control-socket")
            .arg(&control)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let daemon = Daemon {
            child,
            socket,
            control,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&daemon.socket).is_err() {
            assert!(
                Instant::now() < deadline,
                "hairpind did not listen on {:?}",
                daemon.socket
            );
            thread::sleep(Duration::from_millis(50));
        }
        Some(daemon)
    }

    fn ctl(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_hairpinctl"))
            .arg("--target")
            .arg(format!("unix:{}", self.socket.display()))
            .arg("--control")
            .arg(&self.control)
            .arg("--timeout")
            .arg("20")
            .args(args)
            .output()
            .expect("run hairpinctl")
    }

    /// Runs a command that must succeed; returns its standard output.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.ctl(args);
        assert!(
            out.status.success(),
            "hairpinctl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs a command that must fail with exit code 1; returns its standard error.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.ctl(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "hairpinctl {args:?} should fail"
        );
        String::from_utf8(out.stderr).unwrap()
    }

    /// The flows `dump-flows` prints, read back as `add-flow` reads them.
    fn flows(&self, filter: &[&str]) -> BTreeSet<String> {
        let mut args = vec!["dump-flows"];
        args.extend_from_slice(filter);
        self.ok(&args).lines().map(canonical_flow).collect()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.control);
    }
}

/// A flow text in one canonical spelling (what parse then print gives), for comparisons.
fn canonical_flow(text: &str) -> String {
    let spec = parse_flow(text, FlowUse::Add).unwrap_or_else(|e| panic!("{text}: {e}"));
    hairpinctl::syntax::flow::format_flow(&spec)
}

const FLOWS: &[&str] = &[
    "priority=100,in_port=1,dl_dst=00:00:00:00:00:02 actions=output:2",
    "table=0,priority=200,cookie=0x1234,idle_timeout=60,tcp,nw_src=10.0.0.0/8,tp_dst=80 actions=dec_ttl,output:3",
    "priority=50,dl_vlan=10,dl_vlan_pcp=3 actions=pop_vlan,NORMAL",
    "priority=40,ipv6,ipv6_dst=2001:db8::/32 actions=CONTROLLER:128",
    "priority=30,arp,arp_tpa=10.0.0.1 actions=FLOOD",
    "priority=20,udp,tp_src=53 actions=set_field:10.0.0.9->nw_dst,goto_table:1",
    "table=1,priority=10,metadata=0x5/0xff actions=write_actions(output:4),write_metadata:0x1/0x1",
    "table=1,priority=0 actions=drop",
];

#[test]
fn flows_go_in_and_come_back_equal() {
    let Some(d) = Daemon::start("flows") else {
        return;
    };
    assert!(d
        .ok(&["show"])
        .starts_with("OFPT_FEATURES_REPLY (OF1.3): dpid:"));
    for flow in FLOWS {
        d.ok(&["add-flow", flow]);
    }
    let added: BTreeSet<String> = FLOWS.iter().map(|f| canonical_flow(f)).collect();
    assert_eq!(d.flows(&[]), added);

    let table1: BTreeSet<String> = added
        .iter()
        .filter(|f| f.starts_with("table=1,"))
        .cloned()
        .collect();
    assert_eq!(d.flows(&["table=1"]), table1);
    let aggregate = d.ok(&["dump-aggregate"]);
    assert!(
        aggregate.contains(&format!("flow_count={}", FLOWS.len())),
        "{aggregate}"
    );
    assert!(d.ok(&["dump-tables"]).contains("table 0: active=6,"));

    d.ok(&[
        "mod-flows",
        "--strict",
        "priority=100,in_port=1,dl_dst=00:00:00:00:00:02 actions=output:9",
    ]);
    assert!(d
        .flows(&["in_port=1"])
        .iter()
        .any(|f| f.ends_with("actions=output:9")));

    d.ok(&["del-flows", "--strict", "table=1,priority=0"]);
    assert_eq!(d.flows(&["table=1"]).len(), 1);
    d.ok(&["del-flows", "table=1"]);
    assert!(d.flows(&["table=1"]).is_empty());
    d.ok(&["del-flows"]);
    assert!(d.flows(&[]).is_empty());
}

#[test]
fn dump_flows_output_feeds_back_into_add_flows() {
    let Some(d) = Daemon::start("feedback") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("hpctl-feedback-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("flows.txt");
    let many: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                "priority={},ip,nw_dst=10.0.{}.{} actions=output:{}",
                i % 7,
                i / 256,
                i % 256,
                i % 5 + 1
            )
        })
        .collect();
    std::fs::write(&file, format!("# generated\n{}\n", many.join("\n"))).unwrap();
    d.ok(&["add-flows", file.to_str().unwrap()]);
    let first = d.ok(&["dump-flows"]);
    assert_eq!(first.lines().count(), 1000);

    std::fs::write(&file, &first).unwrap();
    d.ok(&["del-flows"]);
    d.ok(&["add-flows", file.to_str().unwrap()]);
    let expected: BTreeSet<String> = many.iter().map(|f| canonical_flow(f)).collect();
    assert_eq!(d.flows(&[]), expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn groups_and_meters_go_in_and_come_back_equal() {
    let Some(d) = Daemon::start("groups") else {
        return;
    };
    let group =
        "group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=weight:5,actions=output:2";
    d.ok(&["add-group", group]);
    d.ok(&[
        "add-group",
        "group_id=2,type=all,bucket=actions=output:3,bucket=actions=output:4",
    ]);
    let dumped = d.ok(&["dump-groups"]);
    let lines: BTreeSet<&str> = dumped.lines().collect();
    assert_eq!(
        lines,
        BTreeSet::from([
            group,
            "group_id=2,type=all,bucket=actions=output:3,bucket=actions=output:4"
        ])
    );
    assert_eq!(d.ok(&["dump-groups", "group_id=1"]).trim_end(), group);
    let err = d.fails(&["add-group", group]);
    assert_eq!(
        err.trim_end(),
        "error: OFPET_GROUP_MOD_FAILED/OFPGMFC_GROUP_EXISTS (type=6, code=0)"
    );

    let meter = "meter=1,kbps,burst,band=type=drop,rate=1000,burst_size=100";
    d.ok(&["add-meter", meter]);
    assert_eq!(d.ok(&["dump-meters"]).trim_end(), meter);
    d.ok(&["add-flow", "priority=1,ip actions=meter:1,group:1"]);
    assert!(d.ok(&["meter-stats"]).starts_with("meter=1 flow_count=1"));

    d.ok(&["del-flows"]);
    d.ok(&["del-groups", "group_id=2"]);
    assert_eq!(d.ok(&["dump-groups"]).trim_end(), group);
    d.ok(&["del-groups"]);
    assert_eq!(d.ok(&["dump-groups"]), "");
    d.ok(&["del-meters"]);
    assert_eq!(d.ok(&["dump-meters"]), "");
}

#[test]
fn switch_and_syntax_errors_are_reported() {
    let Some(d) = Daemon::start("errors") else {
        return;
    };
    let err = d.fails(&["add-flow", "table=1,priority=1 actions=goto_table:0"]);
    assert_eq!(
        err.trim_end(),
        "error: OFPET_BAD_INSTRUCTION/OFPBIC_BAD_TABLE_ID (type=3, code=2)"
    );
    let err = d.fails(&["add-flow", "priority=1 actions=group:99"]);
    assert_eq!(
        err.trim_end(),
        "error: OFPET_BAD_ACTION/OFPBAC_BAD_OUT_GROUP (type=2, code=9)"
    );
    let err = d.fails(&["add-flow", "priority=1,tcp,tp_dst=80x actions=drop"]);
    assert!(
        err.starts_with("error: syntax error at `tp_dst=80x`"),
        "{err}"
    );
    assert!(
        d.flows(&[]).is_empty(),
        "failed adds must leave nothing behind"
    );
    assert!(d.ok(&["barrier"]).starts_with("OFPT_BARRIER_REPLY"));
}

#[test]
fn management_commands_go_to_the_control_socket() {
    let Some(d) = Daemon::start("control") else {
        return;
    };
    let version = d.ok(&["call", "version"]);
    assert!(version.contains("\"name\": \"hairpind\""), "{version}");
    let help = d.ok(&["call", "help"]);
    assert!(help.contains("\"version\""), "{help}");
    let err = d.fails(&["call", "no/such"]);
    assert!(err.contains("unknown method `no/such`"), "{err}");
    let err = d.fails(&["call", "version", "{not json"]);
    assert!(err.contains("params are not JSON"), "{err}");
    // The logical-port commands answer on a daemon without trunks, and refuse what it lacks.
    assert_eq!(d.ok(&["show-trunks"]).trim(), "[]");
    let err = d.fails(&["set-port-link", "5", "down", "--speed-mbps", "100"]);
    assert!(err.contains("no port 5"), "{err}");
    let err = d.fails(&["call", "port/set-link", r#"{"port": 5}"#]);
    assert!(err.contains("missing field `up`"), "{err}");
}
