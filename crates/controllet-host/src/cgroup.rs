//! Resource limits through cgroups: CPU time (quota per period), memory, process count, and
//! the CPUs a controllet may run on (cpuset).
//!
//! Each controller is taken from cgroup v2 where the daemon's v2 cgroup offers it
//! (`cgroup.controllers`), else from its v1 hierarchy (`<root>/cpu`, `<root>/memory`,
//! `<root>/pids`, `<root>/cpuset`), so a hybrid host (v1 mounted with an empty v2 hierarchy,
//! as on Debian 12 hosts booted that way) works as well as a pure v2 one. A controller found
//! in neither is reported missing with the reason, and the caller decides (see `Piece`).
//!
//! Controllets' cgroups sit under the daemon's own, one level for the daemon
//! (`hairpind-<pid>`) and one per controllet, so the host's own limits still hold above them
//! and two daemons on one host never share a directory. The child enters its cgroup before it
//! runs anything (`enter`, from the child between fork and exec), so not even its first fork
//! escapes the limits.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use cpus::CpuList;
use serde::Serialize;

/// CFS period the CPU quota is expressed in, in microseconds.
const CPU_PERIOD_US: u64 = 100_000;

/// A resource controller the host limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Controller {
    Cpu,
    Memory,
    Pids,
    Cpuset,
}

impl Controller {
    pub const ALL: [Controller; 4] = [
        Controller::Cpu,
        Controller::Memory,
        Controller::Pids,
        Controller::Cpuset,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu",
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpuset => "cpuset",
        }
    }
}

/// Where one controller is available: the daemon's own cgroup directory in that hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    V2(PathBuf),
    V1(PathBuf),
}

impl Place {
    /// The daemon's own directory in the hierarchy, and whether it is cgroup v2.
    pub fn dir(&self) -> (&Path, bool) {
        match self {
            Place::V2(dir) => (dir, true),
            Place::V1(dir) => (dir, false),
        }
    }
}

/// What this host offers, controller by controller.
#[derive(Clone, Debug)]
pub struct Probe {
    pub cpu: Result<Place, String>,
    pub memory: Result<Place, String>,
    pub pids: Result<Place, String>,
    pub cpuset: Result<Place, String>,
}

impl Probe {
    /// Looks at the cgroup mounts under `root` for this process.
    pub fn host(root: &Path) -> Probe {
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Probe::of(root, &own)
    }

    /// Looks at `root` for a process whose `/proc/self/cgroup` reads `own`.
    pub fn of(root: &Path, own: &str) -> Probe {
        let v2_root = [root.to_path_buf(), root.join("unified")]
            .into_iter()
            .find(|dir| dir.join("cgroup.controllers").is_file());
        let v2_path = own
            .lines()
            .find_map(|line| line.strip_prefix("0::"))
            .map(relative);
        let v2_dir = v2_root.zip(v2_path).map(|(r, p)| r.join(p));
        let v2_offers = v2_dir
            .as_ref()
            .and_then(|d| fs::read_to_string(d.join("cgroup.controllers")).ok())
            .unwrap_or_default();
        let place = |c: Controller| -> Result<Place, String> {
            if let Some(dir) = &v2_dir {
                if v2_offers.split_whitespace().any(|w| w == c.name()) {
                    return Ok(Place::V2(dir.clone()));
                }
            }
            let hierarchy = root.join(c.name());
            let path = own.lines().find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
                list.split(',')
                    .any(|n| n == c.name())
                    .then(|| relative(path))
            });
            match path {
                Some(path) if hierarchy.join("cgroup.procs").is_file() => {
                    Ok(Place::V1(hierarchy.join(path)))
                }
                _ => Err(format!(
                    "no cgroup {} controller: {} and no v1 hierarchy at {}",
                    c.name(),
                    v2_dir.as_ref().map_or_else(
                        || format!("no cgroup v2 hierarchy under {}", root.display()),
                        |d| format!("not offered in {}", d.join("cgroup.controllers").display())
                    ),
                    hierarchy.display()
                )),
            }
        };
        Probe {
            cpu: place(Controller::Cpu),
            memory: place(Controller::Memory),
            pids: place(Controller::Pids),
            cpuset: place(Controller::Cpuset),
        }
    }

    pub fn place(&self, c: Controller) -> &Result<Place, String> {
        match c {
            Controller::Cpu => &self.cpu,
            Controller::Memory => &self.memory,
            Controller::Pids => &self.pids,
            Controller::Cpuset => &self.cpuset,
        }
    }
}

fn relative(path: &str) -> PathBuf {
    PathBuf::from(path.trim().trim_start_matches('/'))
}

/// The limits one controllet gets; `None` leaves a controller out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Limits {
    pub cpus: Option<f64>,
    pub memory: Option<u64>,
    pub pids: Option<u64>,
    /// The CPUs it may run on.
    pub cpuset: Option<CpuList>,
    /// The CPU weight of all of the daemon's controllets together against the daemon's own
    /// threads, in cgroup v2 units (the daemon's threads weigh 100; v1 shares are 10.24 times
    /// as much).
    pub group_weight: u64,
}

/// Counters that show a limit at work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Periods in which the CPU quota stopped it.
    pub cpu_throttled: u64,
    /// Processes the kernel killed for exceeding the memory limit.
    pub oom_kills: u64,
    /// Forks refused at the process limit.
    pub forks_refused: u64,
    pub memory_bytes: u64,
    pub processes: u64,
}

/// One directory of a controllet's cgroup (one per v1 hierarchy, one for all of v2).
#[derive(Debug)]
struct Part {
    dir: PathBuf,
    v2: bool,
    controllers: Vec<Controller>,
}

/// A controllet's cgroup: created with its limits, removed (after killing what is left in
/// it) when dropped.
#[derive(Debug)]
pub struct Cgroup {
    parts: Vec<Part>,
    /// `cgroup.procs` of each part, open for the child to write its pid into.
    procs: Vec<File>,
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, value).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl Cgroup {
    /// Creates `<own>/<group>/<name>` in every hierarchy that has one of the controllers
    /// `limits` asks for, and writes the limits.
    pub fn create(probe: &Probe, group: &str, name: &str, limits: &Limits) -> io::Result<Cgroup> {
        let mut parts: Vec<Part> = Vec::new();
        for c in Controller::ALL {
            let wanted = match c {
                Controller::Cpu => limits.cpus.is_some(),
                Controller::Memory => limits.memory.is_some(),
                Controller::Pids => limits.pids.is_some(),
                Controller::Cpuset => limits.cpuset.is_some(),
            };
            let Ok(place) = probe.place(c) else { continue };
            if !wanted {
                continue;
            }
            let (own, v2) = place.dir();
            let dir = own.join(group).join(name);
            match parts.iter_mut().find(|p| p.dir == dir) {
                Some(part) => part.controllers.push(c),
                None => parts.push(Part {
                    dir,
                    v2,
                    controllers: vec![c],
                }),
            }
        }
        let mut cgroup = Cgroup {
            parts: Vec::new(),
            procs: Vec::new(),
        };
        for part in parts {
            let group_dir = part.dir.parent().unwrap_or(&part.dir).to_path_buf();
            fs::create_dir_all(&group_dir)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", group_dir.display())))?;
            if part.v2 {
                // Controllers must be enabled for the children at every level above the leaf.
                let enable: String = part
                    .controllers
                    .iter()
                    .map(|c| format!("+{} ", c.name()))
                    .collect();
                if let Some(own) = group_dir.parent() {
                    write(&own.join("cgroup.subtree_control"), enable.trim())?;
                }
                write(&group_dir.join("cgroup.subtree_control"), enable.trim())?;
            }
            if part.controllers.contains(&Controller::Cpu) {
                let weight = limits.group_weight.clamp(1, 10_000);
                if part.v2 {
                    write(&group_dir.join("cpu.weight"), &weight.to_string())?;
                } else {
                    let shares = (weight * 1024 / 100).max(2);
                    write(&group_dir.join("cpu.shares"), &shares.to_string())?;
                }
            }
            if part.controllers.contains(&Controller::Cpuset) && !part.v2 {
                // A new v1 cpuset has no CPUs and no memory nodes: the daemon's group takes its
                // parent's, so that the controllet's own below can name some of them.
                inherit_cpuset(&group_dir)?;
            }
            match fs::create_dir(&part.dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{}: {e}", part.dir.display()),
                    ))
                }
            }
            let procs = OpenOptions::new()
                .write(true)
                .create(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(part.dir.join("cgroup.procs"))?;
            cgroup.procs.push(procs);
            cgroup.parts.push(part);
        }
        cgroup.set_limits(limits)?;
        Ok(cgroup)
    }

    fn set_limits(&self, limits: &Limits) -> io::Result<()> {
        for part in &self.parts {
            for c in &part.controllers {
                let d = &part.dir;
                match (c, part.v2) {
                    (Controller::Cpu, v2) => {
                        let cpus = limits.cpus.unwrap_or(1.0);
                        let quota = ((cpus * CPU_PERIOD_US as f64) as u64).max(1000);
                        if v2 {
                            write(&d.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
                        } else {
                            write(&d.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                            write(&d.join("cpu.cfs_quota_us"), &quota.to_string())?;
                        }
                    }
                    (Controller::Memory, v2) => {
                        let bytes = limits.memory.unwrap_or(u64::MAX).to_string();
                        if v2 {
                            write(&d.join("memory.max"), &bytes)?;
                            if d.join("memory.swap.max").exists() {
                                write(&d.join("memory.swap.max"), "0")?;
                            }
                        } else {
                            write(&d.join("memory.limit_in_bytes"), &bytes)?;
                            // Memory plus swap, where the kernel accounts swap: no escape
                            // into swap either.
                            if d.join("memory.memsw.limit_in_bytes").exists() {
                                write(&d.join("memory.memsw.limit_in_bytes"), &bytes)?;
                            }
                        }
                    }
                    (Controller::Pids, _) => {
                        write(
                            &d.join("pids.max"),
                            &limits.pids.unwrap_or(u64::MAX).to_string(),
                        )?;
                    }
                    (Controller::Cpuset, v2) => {
                        if let Some(list) = &limits.cpuset {
                            if !v2 {
                                copy_from_parent(d, "cpuset.mems")?;
                            }
                            write(&d.join("cpuset.cpus"), &list.to_string())?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The controllers this cgroup limits.
    pub fn controllers(&self) -> impl Iterator<Item = Controller> + '_ {
        self.parts
            .iter()
            .flat_map(|p| p.controllers.iter().copied())
    }

    /// Descriptors of the `cgroup.procs` files, for [`enter`] in the child.
    pub fn procs_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// The pids in the cgroup.
    pub fn pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .parts
            .iter()
            .filter_map(|p| fs::read_to_string(p.dir.join("cgroup.procs")).ok())
            .flat_map(|s| {
                s.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<_>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Sends `signal` to every process in the cgroup; returns how many there were.
    pub fn signal_all(&self, signal: i32) -> usize {
        let pids = self.pids();
        for &pid in &pids {
            // SAFETY: kill(2) on a pid read from our own cgroup; a pid that exited meanwhile
            // gets ESRCH, which is harmless.
            unsafe { libc::kill(pid, signal) };
        }
        pids.len()
    }

    /// Kills everything in the cgroup, repeating while a forking process still adds to it.
    pub fn kill_all(&self) {
        for part in self.parts.iter().filter(|p| p.v2) {
            let _ = fs::write(part.dir.join("cgroup.kill"), "1");
        }
        for _ in 0..100 {
            if self.signal_all(libc::SIGKILL) == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// What the limits did so far.
    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for part in &self.parts {
            let read = |file: &str| fs::read_to_string(part.dir.join(file)).unwrap_or_default();
            for c in &part.controllers {
                match c {
                    Controller::Cpu => u.cpu_throttled = keyed(&read("cpu.stat"), "nr_throttled"),
                    Controller::Memory if part.v2 => {
                        u.oom_kills = keyed(&read("memory.events"), "oom_kill");
                        u.memory_bytes = read("memory.current").trim().parse().unwrap_or(0);
                    }
                    Controller::Memory => {
                        u.oom_kills = keyed(&read("memory.oom_control"), "oom_kill");
                        u.memory_bytes = read("memory.usage_in_bytes").trim().parse().unwrap_or(0);
                    }
                    Controller::Pids => {
                        u.forks_refused = keyed(&read("pids.events"), "max");
                        u.processes = read("pids.current").trim().parse().unwrap_or(0);
                    }
                    Controller::Cpuset => {}
                }
            }
        }
        u
    }
}

fn read_trimmed(dir: &Path, file: &str) -> io::Result<String> {
    let path = dir.join(file);
    fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn copy_from_parent(dir: &Path, file: &str) -> io::Result<()> {
    let parent = dir.parent().unwrap_or(dir);
    write(&dir.join(file), &read_trimmed(parent, file)?)
}

/// Gives a v1 cpuset directory its parent's CPUs and memory nodes where it has none yet.
fn inherit_cpuset(dir: &Path) -> io::Result<()> {
    for file in ["cpuset.cpus", "cpuset.mems"] {
        if read_trimmed(dir, file)?.is_empty() {
            copy_from_parent(dir, file)?;
        }
    }
    Ok(())
}

/// The value after `key` in a `key value` per line file.
fn keyed(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0)
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill_all();
        self.procs.clear();
        for part in &self.parts {
            // An exiting process may hold the directory for a moment.
            for _ in 0..50 {
                if fs::remove_dir(&part.dir).is_ok() || !part.dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// Removes the daemon's group directory in every hierarchy (after its controllets' are gone).
pub fn remove_group(probe: &Probe, group: &str) {
    for c in Controller::ALL {
        if let Ok(place) = probe.place(c) {
            let _ = fs::remove_dir(place.dir().0.join(group));
        }
    }
}

/// Removes the group directories of daemons that are gone (`hairpind-<pid>` whose process
/// no longer exists or is not a hairpind), killing whatever still runs in their controllets'
/// cgroups first: a daemon killed outright leaves them behind. `own` is this daemon's group.
/// Returns what was removed, for the log.
pub fn sweep_stale(probe: &Probe, own: &str) -> Vec<PathBuf> {
    let mut places: Vec<(PathBuf, bool)> = Vec::new();
    for c in Controller::ALL {
        if let Ok(place) = probe.place(c) {
            let (dir, v2) = place.dir();
            if !places.iter().any(|(d, _)| d == dir) {
                places.push((dir.to_path_buf(), v2));
            }
        }
    }
    let mut swept = Vec::new();
    for (dir, v2) in places {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for group in entries.flatten().map(|e| e.path()) {
            let name = group.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let Some(pid) = name.strip_prefix("hairpind-").and_then(|p| p.parse().ok()) else {
                continue;
            };
            if name == own || daemon_alive(pid) || !group.is_dir() {
                continue;
            }
            let leaves = fs::read_dir(&group).into_iter().flatten().flatten();
            for leaf in leaves.map(|e| e.path()).filter(|p| p.is_dir()) {
                // Dropping it kills what is left and removes the directory.
                drop(Cgroup {
                    parts: vec![Part {
                        dir: leaf,
                        v2,
                        controllers: Vec::new(),
                    }],
                    procs: Vec::new(),
                });
            }
            if fs::remove_dir(&group).is_ok() {
                swept.push(group);
            }
        }
    }
    swept
}

/// Whether `pid` is a running hairpind.
fn daemon_alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "hairpind")
}

/// Moves the calling process into the cgroups whose `cgroup.procs` are open as `fds`. Called in
/// the child between fork and exec: no allocation, only write(2).
pub fn enter(fds: &[RawFd]) -> io::Result<()> {
    let mut digits = [0u8; 20];
    // SAFETY: getpid(2) has no preconditions.
    let mut pid = unsafe { libc::getpid() } as u32;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    let text = &digits[at..];
    for &fd in fds {
        // SAFETY: `text` is a live buffer of `text.len()` bytes; `fd` is an open descriptor
        // the parent passed down.
        let n = unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn hybrid_host_takes_v1_when_v2_offers_nothing() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        touch(&r.join("unified/cgroup.controllers"), "hugetlb\n");
        touch(&r.join("cpu/cgroup.procs"), "");
        touch(&r.join("memory/cgroup.procs"), "");
        let own = "8:pids:/\n4:memory:/api/x\n1:cpu,cpuacct:/\n0::/\n";
        let probe = Probe::of(r, own);
        assert_eq!(probe.cpu, Ok(Place::V1(r.join("cpu"))));
        assert_eq!(probe.memory, Ok(Place::V1(r.join("memory/api/x"))));
        let missing = probe.pids.unwrap_err();
        assert!(missing.contains("no cgroup pids controller"), "{missing}");
        assert!(missing.contains("unified/cgroup.controllers"), "{missing}");
    }

    #[test]
    fn pure_v2_host_takes_v2() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        touch(&r.join("cgroup.controllers"), "cpuset cpu io memory pids\n");
        touch(
            &r.join("system.slice/hp.service/cgroup.controllers"),
            "cpu memory pids\n",
        );
        let probe = Probe::of(r, "0::/system.slice/hp.service\n");
        let own = r.join("system.slice/hp.service");
        assert_eq!(probe.cpu, Ok(Place::V2(own.clone())));
        assert_eq!(probe.pids, Ok(Place::V2(own)));
    }

    #[test]
    fn nothing_mounted_names_every_controller() {
        let root = tempfile::tempdir().unwrap();
        let probe = Probe::of(root.path(), "0::/\n");
        for c in Controller::ALL {
            let e = probe.place(c).clone().unwrap_err();
            assert!(e.contains(c.name()), "{e}");
        }
    }

    #[test]
    fn limits_are_written_in_each_version_s_files() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // A v1 tree as plain files: the kernel would make the files of a new directory.
        for c in ["cpu", "memory", "pids", "cpuset"] {
            touch(&r.join(c).join("cgroup.procs"), "");
        }
        touch(&r.join("cpuset/cpuset.cpus"), "0-3\n");
        touch(&r.join("cpuset/cpuset.mems"), "0\n");
        touch(&r.join("cpuset/hairpind-1/cpuset.cpus"), "\n");
        touch(&r.join("cpuset/hairpind-1/cpuset.mems"), "\n");
        let probe = Probe::of(r, "4:cpuset:/\n3:cpu:/\n2:memory:/\n1:pids:/\n");
        let limits = Limits {
            cpus: Some(0.25),
            memory: Some(64 << 20),
            pids: Some(32),
            cpuset: Some(CpuList::parse("1,3").unwrap()),
            group_weight: 12,
        };
        let cg = Cgroup::create(&probe, "hairpind-1", "lsw", &limits).unwrap();
        let read = |p: &str| fs::read_to_string(r.join(p)).unwrap();
        assert_eq!(read("cpu/hairpind-1/lsw/cpu.cfs_quota_us"), "25000");
        assert_eq!(read("cpu/hairpind-1/lsw/cpu.cfs_period_us"), "100000");
        assert_eq!(
            read("memory/hairpind-1/lsw/memory.limit_in_bytes"),
            "67108864"
        );
        assert_eq!(read("pids/hairpind-1/lsw/pids.max"), "32");
        assert_eq!(read("cpu/hairpind-1/cpu.shares"), "122");
        // The daemon's cpuset takes its parent's CPUs and nodes; the controllet's its own CPUs.
        assert_eq!(read("cpuset/hairpind-1/cpuset.cpus"), "0-3");
        assert_eq!(read("cpuset/hairpind-1/cpuset.mems"), "0");
        assert_eq!(read("cpuset/hairpind-1/lsw/cpuset.mems"), "0");
        assert_eq!(read("cpuset/hairpind-1/lsw/cpuset.cpus"), "1,3");
        assert_eq!(cg.controllers().count(), 4);
        assert_eq!(cg.procs_fds().len(), 4);
        std::mem::forget(cg); // a plain directory with files cannot be rmdir'ed like a cgroup

        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        touch(&r.join("cgroup.controllers"), "cpu memory pids cpuset\n");
        let probe = Probe::of(r, "0::/\n");
        let cg = Cgroup::create(&probe, "hairpind-1", "lsw", &limits).unwrap();
        assert_eq!(read_at(r, "hairpind-1/lsw/cpu.max"), "25000 100000");
        assert_eq!(read_at(r, "hairpind-1/lsw/memory.max"), "67108864");
        assert_eq!(read_at(r, "hairpind-1/lsw/cpuset.cpus"), "1,3");
        let enabled = "+cpu +memory +pids +cpuset";
        assert_eq!(read_at(r, "hairpind-1/cgroup.subtree_control"), enabled);
        assert_eq!(read_at(r, "cgroup.subtree_control"), enabled);
        assert_eq!(read_at(r, "hairpind-1/cpu.weight"), "12");
        std::mem::forget(cg);
    }

    fn read_at(root: &Path, p: &str) -> String {
        fs::read_to_string(root.join(p)).unwrap()
    }

    #[test]
    fn usage_reads_the_kernel_s_counters() {
        assert_eq!(keyed("nr_periods 10\nnr_throttled 3\n", "nr_throttled"), 3);
        assert_eq!(
            keyed("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"),
            2
        );
        assert_eq!(keyed("max 7\n", "max"), 7);
        assert_eq!(keyed("", "max"), 0);
    }

    #[test]
    fn a_gone_daemon_s_cgroups_are_swept_and_live_ones_kept() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        use std::process::Command;
        const TEST: &str = "cgroup::a_gone_daemon_s_cgroups_are_swept_and_live_ones_kept";
        if !testkit::root(TEST) {
            return;
        }
        let probe = Probe::host(Path::new("/sys/fs/cgroup"));
        let own_dir = probe
            .place(Controller::Pids)
            .as_ref()
            .ok()
            .map(|p| p.dir().0.to_path_buf());
        let Some(own_dir) = testkit::require(TEST, own_dir, "a cgroup pids controller") else {
            return;
        };
        let limits = Limits {
            cpus: None,
            memory: None,
            pids: Some(8),
            cpuset: None,
            group_weight: 12,
        };
        // A daemon that is gone (its pid reaped), with a controllet still running in its cgroup.
        let mut gone = Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        let stale = format!("hairpind-{}", gone.id());
        let cg = Cgroup::create(&probe, &stale, "lsw", &limits).unwrap();
        let fds = cg.procs_fds();
        // SAFETY: the closure only writes the pid into the open `cgroup.procs` files.
        let mut orphan = unsafe {
            Command::new("sleep")
                .arg("60")
                .pre_exec(move || enter(&fds))
        }
        .spawn()
        .unwrap();
        std::mem::forget(cg);
        // A live daemon (a process named hairpind) and this one: both kept.
        let bin = tempfile::tempdir().unwrap();
        let fake = bin.path().join("hairpind");
        fs::copy("/bin/sleep", &fake).unwrap();
        let mut live = Command::new(&fake).arg("60").spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let live_group = format!("hairpind-{}", live.id());
        let own_group = format!("hairpind-{}", std::process::id());
        let kept = [
            Cgroup::create(&probe, &live_group, "lsw", &limits).unwrap(),
            Cgroup::create(&probe, &own_group, "lsw", &limits).unwrap(),
        ];

        let swept = sweep_stale(&probe, &own_group);
        let status = orphan.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
        assert_eq!(swept, [own_dir.join(&stale)]);
        assert!(!own_dir.join(&stale).exists());
        assert!(own_dir.join(&live_group).join("lsw").is_dir());
        assert!(own_dir.join(&own_group).join("lsw").is_dir());

        drop(kept);
        remove_group(&probe, &live_group);
        remove_group(&probe, &own_group);
        let _ = live.kill();
        let _ = live.wait();
        assert!(!own_dir.join(&live_group).exists());
    }
}
