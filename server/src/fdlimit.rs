//! The process's open-file limit: raised to its hard maximum at startup,
//! and the number of connections kept below it, so that `accept` does not
//! run out of descriptors before [`crate::http::Config::max_connections`]
//! is reached (where a new connection can take an idle one's place).

/// Descriptors kept free for everything but client connections: the
/// listener, the image and store files, the runtime, stdio.
pub const RESERVED_FDS: usize = 64;

/// Raises the soft limit on open files to the hard limit (where the
/// platform has them) and returns the soft limit now in force; `None`
/// when there is none or it cannot be read.
#[cfg(unix)]
pub fn raise_open_files() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        lim.current = lim.maximum;
        // Refused (a container's cap below the hard value): keep what is.
        let _ = setrlimit(Resource::Nofile, lim);
    }
    getrlimit(Resource::Nofile).current
}

/// Raises the soft limit on open files to the hard limit (where the
/// platform has them) and returns the soft limit now in force; `None`
/// when there is none or it cannot be read.
#[cfg(not(unix))]
pub fn raise_open_files() -> Option<u64> {
    None
}

/// The connections that fit in `open_files` descriptors with
/// [`RESERVED_FDS`] kept free: `wanted`, or fewer (at least 1).
pub fn connections_within(wanted: usize, open_files: Option<u64>) -> usize {
    let Some(limit) = open_files else {
        return wanted.max(1);
    };
    let fit = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_sub(RESERVED_FDS);
    wanted.min(fit).max(1)
}

/// Whether `e` is the process (EMFILE) or the system (ENFILE) being out of
/// file descriptors.
pub fn is_out_of_descriptors(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        use rustix::io::Errno;
        let code = e.raw_os_error();
        code == Some(Errno::MFILE.raw_os_error()) || code == Some(Errno::NFILE.raw_os_error())
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_stay_below_the_descriptor_limit() {
        assert_eq!(connections_within(1024, Some(1024)), 1024 - RESERVED_FDS);
        assert_eq!(connections_within(1024, Some(1_048_576)), 1024);
        assert_eq!(connections_within(1024, None), 1024);
        assert_eq!(connections_within(1024, Some(10)), 1);
        assert_eq!(connections_within(0, Some(4096)), 1);
    }

    #[cfg(unix)]
    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        use rustix::process::{getrlimit, Resource};
        let now = raise_open_files();
        assert_eq!(now, getrlimit(Resource::Nofile).maximum);
    }
}
