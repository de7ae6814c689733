//! CPU lists and placement: the kernel's list syntax (`taskset -c`, `cpuset.cpus`: `1`, `2-3`,
//! `0,2-3`), the CPUs this process may use, and pinning a thread or the calling process.
//!
//! hairpind pins its datapath threads with it (`datapath_cpus`, as Open vSwitch's
//! `pmd-cpu-mask` pins its polling threads: a busy-polling thread wants a core of its own, and
//! the scheduler moving a datapath thread between cores costs it its caches), and places
//! controllets (`cpu_affinity`), for example on a polling thread's core.

use std::fmt;
use std::io;
use std::os::unix::thread::JoinHandleExt;
use std::thread::JoinHandle;

/// CPUs a `cpu_set_t` can name.
const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

/// A list of CPUs, in the order given, each once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    /// Parses `0,2-3`; refuses empty items, reversed ranges, repeats and CPUs past what the
    /// kernel's CPU sets hold.
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let mut cpus = Vec::new();
        for item in text.split(',') {
            let item = item.trim();
            let number = |s: &str| {
                let s = s.trim();
                s.parse::<usize>()
                    .ok()
                    .filter(|n| *n < MAX_CPUS)
                    .ok_or_else(|| {
                        format!("`{s}` in `{text}` is not a CPU number (0-{})", MAX_CPUS - 1)
                    })
            };
            let (first, last) = match item.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(item)?;
                    (n, n)
                }
            };
            if first > last {
                return Err(format!(
                    "`{item}` in `{text}` is a range that runs backwards"
                ));
            }
            for cpu in first..=last {
                if cpus.contains(&cpu) {
                    return Err(format!("CPU {cpu} appears twice in `{text}`"));
                }
                cpus.push(cpu);
            }
        }
        Ok(CpuList(cpus))
    }

    /// The list of `cpus`, as given.
    pub fn from_cpus(cpus: &[usize]) -> CpuList {
        CpuList(cpus.to_vec())
    }

    /// The CPU of the `index`th of several threads spread over the list, one CPU each.
    pub fn for_thread(&self, index: usize) -> usize {
        self.0
            .get(index % self.0.len().max(1))
            .copied()
            .unwrap_or(0)
    }

    /// The first CPU of the list this process may not run on, if any.
    fn first_outside(&self, allowed: &[usize]) -> Option<usize> {
        self.0.iter().copied().find(|c| !allowed.contains(c))
    }

    /// Checks that this process may run on every CPU of the list (its affinity, as a cpuset
    /// or `taskset` left it); says which one it may not.
    pub fn check_allowed(&self) -> Result<(), String> {
        let allowed =
            allowed().map_err(|e| format!("cannot read the CPUs this process may run on: {e}"))?;
        match self.first_outside(&allowed) {
            Some(cpu) => Err(format!(
                "CPU {cpu} is not one this process may run on (it may run on {})",
                CpuList::from_cpus(&allowed)
            )),
            None => Ok(()),
        }
    }
}

/// The list in the kernel's syntax, runs of consecutive CPUs as ranges (`3,0-2`).
impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0.as_slice();
        let mut separator = "";
        while let Some(&first) = rest.first() {
            let run = rest
                .iter()
                .zip(first..)
                .take_while(|(cpu, expected)| **cpu == *expected)
                .count();
            match run {
                1 => write!(f, "{separator}{first}")?,
                _ => write!(f, "{separator}{first}-{}", first + run - 1)?,
            }
            rest = &rest[run..];
            separator = ",";
        }
        Ok(())
    }
}

/// The CPUs this process may run on (its affinity, as a cpuset or `taskset` left it).
pub fn allowed() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size given.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(members(&set))
}

fn members(set: &libc::cpu_set_t) -> Vec<usize> {
    // SAFETY: CPU_ISSET reads the set for a CPU below its size.
    (0..MAX_CPUS)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

/// Runs `thread` on `cpu` alone.
pub fn pin<T>(thread: &JoinHandle<T>, cpu: usize) -> io::Result<()> {
    let CpuSet(set) = CpuSet::of(&CpuList(vec![cpu]));
    // SAFETY: the handle's pthread is alive (the thread is joined later, never detached), and
    // `set` is a valid cpu_set_t of the size given.
    let rc = unsafe {
        libc::pthread_setaffinity_np(thread.as_pthread_t(), std::mem::size_of_val(&set), &set)
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// A list as the kernel takes it, built ahead so that a child between fork and exec can
/// apply it without allocating.
#[derive(Clone, Copy)]
pub struct CpuSet(libc::cpu_set_t);

impl CpuSet {
    pub fn of(list: &CpuList) -> CpuSet {
        // SAFETY: an all-zero cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in list.0.iter().filter(|&&c| c < MAX_CPUS) {
            // SAFETY: `cpu` is below CPU_SETSIZE.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        CpuSet(set)
    }

    /// Restricts the calling thread, and what it starts later, to the set: in a child between
    /// fork and exec, the whole process. Only sched_setaffinity(2), so safe there.
    pub fn apply_to_this_process(&self) -> io::Result<()> {
        // SAFETY: `self.0` is a valid cpu_set_t of the size given; pid 0 is the caller.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&self.0), &self.0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CpuSet").field(&members(&self.0)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_parse_in_order() {
        assert_eq!(CpuList::parse("1"), Ok(CpuList(vec![1])));
        assert_eq!(CpuList::parse("3,0-1"), Ok(CpuList(vec![3, 0, 1])));
        assert_eq!(CpuList::parse(" 2 - 3 "), Ok(CpuList(vec![2, 3])));
        let list = CpuList::parse("3,0-1").unwrap();
        assert_eq!(
            (0..4).map(|i| list.for_thread(i)).collect::<Vec<_>>(),
            [3, 0, 1, 3]
        );
        assert_eq!(list.to_string(), "3,0-1");
        assert_eq!(
            CpuList::parse("0-2,4,6-7").unwrap().to_string(),
            "0-2,4,6-7"
        );
        assert_eq!(CpuList::from_cpus(&[2, 1, 0]).to_string(), "2,1,0");
        assert_eq!(list.first_outside(&[0, 1]), Some(3));
        assert_eq!(list.first_outside(&[0, 1, 3]), None);
        let outside = allowed().unwrap().last().unwrap() + 1;
        let e = CpuList::from_cpus(&[outside]).check_allowed().unwrap_err();
        assert!(e.starts_with(&format!("CPU {outside} is not one")), "{e}");
        CpuList::from_cpus(&allowed().unwrap())
            .check_allowed()
            .unwrap();
    }

    #[test]
    fn bad_lists_say_why() {
        for (text, why) in [
            ("", "not a CPU number"),
            ("a", "not a CPU number"),
            ("1,,2", "not a CPU number"),
            ("3-1", "backwards"),
            ("1,1", "twice"),
            ("0-2,2", "twice"),
            ("99999", "not a CPU number"),
            ("-1", "not a CPU number"),
        ] {
            let e = CpuList::parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn a_pinned_thread_runs_on_its_cpu_only() {
        let cpus = allowed().unwrap();
        let cpu = *cpus.last().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            rx.recv().unwrap();
            allowed().unwrap()
        });
        pin(&thread, cpu).unwrap();
        tx.send(()).unwrap();
        assert_eq!(thread.join().unwrap(), [cpu]);
    }

    #[test]
    fn a_child_applies_its_set_before_it_runs_anything() {
        use std::os::unix::process::CommandExt;
        let cpu = *allowed().unwrap().last().unwrap();
        let set = CpuSet::of(&CpuList::from_cpus(&[cpu]));
        let mut command = std::process::Command::new("grep");
        command.args(["^Cpus_allowed_list", "/proc/self/status"]);
        // SAFETY: the closure only calls sched_setaffinity(2), which is async-signal-safe.
        unsafe { command.pre_exec(move || set.apply_to_this_process()) };
        let out = command.output().unwrap();
        let line = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            line.split_whitespace().last(),
            Some(cpu.to_string().as_str())
        );
    }
}
