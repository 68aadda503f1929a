//! What the benchmarks ask the kernel: CPU time per thread, resident memory, and a file
//! descriptor limit high enough for 10,000 connections.

use std::ops::Sub;
use std::time::Duration;

/// User and system CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel on the caller's behalf.
    pub system: Duration,
}

impl CpuTime {
    /// The calling thread's CPU time so far (`getrusage(RUSAGE_THREAD)`).
    pub fn thread() -> CpuTime {
        rusage(libc::RUSAGE_THREAD)
    }

    /// The whole process's CPU time so far (`getrusage(RUSAGE_SELF)`).
    pub fn process() -> CpuTime {
        rusage(libc::RUSAGE_SELF)
    }

    /// User plus system time.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }
}

impl Sub for CpuTime {
    type Output = CpuTime;

    fn sub(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

#[allow(unsafe_code)]
fn rusage(who: libc::c_int) -> CpuTime {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; `who` is RUSAGE_THREAD or RUSAGE_SELF.
    let status = unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    assert_eq!(status, 0, "getrusage fails only for an invalid `who`");
    // SAFETY: getrusage succeeded and filled `usage` (it was zeroed before, too).
    let usage = unsafe { usage.assume_init() };
    CpuTime {
        user: timeval(usage.ru_utime),
        system: timeval(usage.ru_stime),
    }
}

fn timeval(time: libc::timeval) -> Duration {
    Duration::from_secs(u64::try_from(time.tv_sec).unwrap_or(0))
        + Duration::from_micros(u64::try_from(time.tv_usec).unwrap_or(0))
}

/// Raises the soft limit on open files to the hard limit, for 10,000 connections.
#[allow(unsafe_code)]
pub fn raise_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable `rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: `limit` is a valid `rlimit` whose soft limit does not exceed the hard one.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    limit.rlim_cur
}

/// The process's resident memory now and at its peak, in bytes, from `/proc/self/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resident {
    /// `VmRSS`.
    pub now: u64,
    /// `VmHWM`: the peak since the process started or since [`reset_peak_resident`].
    pub peak: u64,
}

/// Reads `VmRSS` and `VmHWM`.
///
/// # Panics
/// Without `/proc/self/status` (not Linux).
pub fn resident() -> Resident {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map_or(0, |kb| kb * 1024)
    };
    Resident {
        now: field("VmRSS:"),
        peak: field("VmHWM:"),
    }
}

/// Resets `VmHWM` to the current resident size (`echo 5 > /proc/self/clear_refs`).
///
/// # Errors
/// When the kernel does not allow it.
pub fn reset_peak_resident() -> std::io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}
