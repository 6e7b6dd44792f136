//! Failpoints: named places where crash tests stop a store process.

/// Aborts the process at a named point when `NSIMAGE_FAILPOINT` names it,
/// so crash tests can stop a store exactly inside a checkpoint or a purge.
pub fn failpoint(name: &str) {
    static POINT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let point = POINT.get_or_init(|| std::env::var("NSIMAGE_FAILPOINT").ok());
    if point.as_deref() == Some(name) {
        eprintln!("nsimage: failpoint {name} reached, aborting");
        std::process::abort();
    }
}
