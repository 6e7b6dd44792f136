//! Process memory figures from `/proc/self/status` (Linux; zero elsewhere).

fn status_kb(key: &str) -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
}

/// Resident set size now, in bytes.
pub fn rss_bytes() -> u64 {
    status_kb("VmRSS:") * 1024
}

/// Peak resident set size of this process, in bytes.
pub fn peak_rss_bytes() -> u64 {
    status_kb("VmHWM:") * 1024
}
