//! What the sandbox's system-call filter adds to every system call a controllet makes.
//!
//! A forked child times `getppid` (a call the filter allows, so it walks the whole EPERM
//! list, the longest way through) in 11 slices of 200,000 calls, loads the filters
//! (`controllet_host::seccomp::install`, as bubblewrap loads them) and times the same again;
//! it prints the median ns per call of each with the spread of the slices, and the difference.
//! Before timing, the child checks that the filter is in force (`unshare` answers EPERM).
//!
//! `cargo bench -p controllet-host --bench seccomp`

use std::time::Instant;

use controllet_host::seccomp;

const SLICES: usize = 11;
const CALLS: u32 = 200_000;

/// Median and (max - min) / median of `SLICES` slices, in ns per call.
fn time_calls() -> (f64, f64) {
    let mut slices = [0f64; SLICES];
    for s in &mut slices {
        let start = Instant::now();
        for _ in 0..CALLS {
            // SAFETY: getppid has no preconditions; the raw call avoids any C library cache.
            std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
        }
        *s = start.elapsed().as_nanos() as f64 / f64::from(CALLS);
    }
    slices.sort_by(f64::total_cmp);
    let median = slices[SLICES / 2];
    (median, (slices[SLICES - 1] - slices[0]) / median)
}

fn main() {
    let programs = seccomp::programs(&[]).expect("the filters compile");
    let rules: usize = programs.iter().map(Vec::len).sum();
    let mut pipe = [0; 2];
    // SAFETY: `pipe` has room for two descriptors.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    // SAFETY: the child times system calls, loads the filters and writes to the pipe.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        let bare = time_calls();
        seccomp::install(&programs).expect("the filters load");
        // SAFETY: a call the filter must refuse.
        let refused = unsafe { libc::unshare(libc::CLONE_NEWUSER) } < 0
            // SAFETY: reads this thread's errno.
            && unsafe { *libc::__errno_location() } == libc::EPERM;
        let filtered = time_calls();
        let out = [
            bare.0,
            bare.1,
            filtered.0,
            filtered.1,
            f64::from(u8::from(refused)),
        ];
        // SAFETY: writes the five figures into the pipe and exits.
        unsafe {
            libc::write(pipe[1], out.as_ptr().cast(), std::mem::size_of_val(&out));
            libc::_exit(0);
        }
    }
    let mut out = [0f64; 5];
    // SAFETY: the parent's end of the pipe and the child's pid.
    unsafe {
        libc::close(pipe[1]);
        libc::read(
            pipe[0],
            out.as_mut_ptr().cast(),
            std::mem::size_of_val(&out),
        );
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    assert_eq!(out[4], 1.0, "the filter refused unshare with EPERM");
    println!(
        "seccomp filter ({rules} BPF instructions in {} programs): getppid, median of {SLICES} slices of {CALLS} calls",
        programs.len()
    );
    println!(
        "  without the filter  {:7.1} ns/call  spread {:4.1}%",
        out[0],
        out[1] * 100.0
    );
    println!(
        "  with the filter     {:7.1} ns/call  spread {:4.1}%",
        out[2],
        out[3] * 100.0
    );
    println!("  the filter adds     {:7.1} ns/call", out[2] - out[0]);
}
