//! Who a request comes from: the groups of a user name, from a groups
//! file (`--groups-file`: `user: group group ...`, one user a line) or,
//! without one, from the system's user and group databases, the user's
//! primary group first and then the others, as Hadoop's default group
//! mapping lists them (an unknown user has none).
//!
//! Nothing is kept past a change: before each lookup the files it was read
//! from (the groups file, or `/etc/passwd` and `/etc/group`) are looked at
//! (their size, modification time and inode), and everything read from
//! them is read again once they changed; a user's groups from the system's
//! databases are asked again after [`SYSTEM_GROUPS_TTL`] in any case (a
//! directory service behind NSS changes without touching those files), and
//! at most [`MAX_CACHED_USERS`] users are kept. A groups file that no longer
//! reads (too large, not UTF-8, a bad line) gives every user no group
//! until it is fixed, and says so on stderr once.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Largest groups file read.
pub const MAX_GROUPS_FILE: u64 = 16 << 20;
/// Most groups one user is given.
pub const MAX_GROUPS_PER_USER: usize = 1024;

/// Where groups come from.
#[derive(Clone, Debug)]
pub enum GroupSource {
    /// A file of `user: group group ...` lines.
    File(PathBuf),
    /// The system's databases (`getpwnam`, `getgrouplist`, `getgrgid`).
    System,
}

/// A groups file that does not read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct GroupsFileError {
    /// The file.
    pub path: String,
    /// What is wrong, with the line where there is one.
    pub detail: String,
}

/// What identifies a file's contents without reading it.
type Stamp = Option<(u64, SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.len(), m.modified().ok()?, ino))
}

/// Users' groups, looked up per request.
#[derive(Debug)]
pub struct Groups {
    source: GroupSource,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The stamps of the files the cache was read from.
    stamps: Vec<Stamp>,
    /// The whole groups file, for a groups file.
    file: HashMap<String, Vec<String>>,
    /// Users looked up in the system's databases, each with when.
    looked_up: HashMap<String, (Vec<String>, Instant)>,
    /// The groups file did not read (its error was said).
    broken: bool,
}

/// How long a user's groups from the system's databases are kept when
/// `/etc/passwd` and `/etc/group` do not change (sources behind them, such
/// as LDAP through NSS, change without a trace there). Hadoop keeps them
/// 300 s (`hadoop.security.groups.cache.secs`).
pub const SYSTEM_GROUPS_TTL: Duration = Duration::from_secs(5);
/// Most users whose system groups are kept at once.
pub const MAX_CACHED_USERS: usize = 4096;

/// The files a source reads.
fn watched(source: &GroupSource) -> Vec<PathBuf> {
    match source {
        GroupSource::File(p) => vec![p.clone()],
        GroupSource::System => vec![PathBuf::from("/etc/passwd"), PathBuf::from("/etc/group")],
    }
}

impl Groups {
    /// Groups from `source`; a groups file is read now, so that a bad one
    /// is refused at start.
    ///
    /// # Errors
    /// The groups file's.
    pub fn new(source: GroupSource) -> Result<Groups, GroupsFileError> {
        let mut state = State::default();
        if let GroupSource::File(p) = &source {
            state.stamps = vec![stamp(p)];
            state.file = read_file(p)?;
        } else {
            state.stamps = watched(&source).iter().map(|p| stamp(p)).collect();
        }
        Ok(Groups {
            source,
            state: Mutex::new(state),
        })
    }

    /// The groups of `user` when they are known without asking the
    /// system's databases (which may block, on a network directory):
    /// always for a groups file, for a user looked up in the last
    /// [`SYSTEM_GROUPS_TTL`] otherwise. Either way the files they come from
    /// are looked at first, and read again when they changed.
    pub fn known(&self, user: &str) -> Option<Vec<String>> {
        let stamps: Vec<Stamp> = watched(&self.source).iter().map(|p| stamp(p)).collect();
        let mut st = self.state.lock();
        if st.stamps != stamps {
            st.stamps = stamps;
            st.file.clear();
            st.looked_up.clear();
            st.broken = false;
            if let GroupSource::File(p) = &self.source {
                match read_file(p) {
                    Ok(users) => st.file = users,
                    Err(e) => {
                        eprintln!("nsimage serve: {e}: no user has a group until it is fixed");
                        st.broken = true;
                    }
                }
            }
        }
        match &self.source {
            GroupSource::File(_) => Some(st.file.get(user).cloned().unwrap_or_default()),
            GroupSource::System => st
                .looked_up
                .get(user)
                .filter(|(_, at)| at.elapsed() < SYSTEM_GROUPS_TTL)
                .map(|(g, _)| g.clone()),
        }
    }

    /// The groups of `user`: [`known`](Self::known), or else looked up in
    /// the system's databases (outside the lock; may block) and kept.
    pub fn of(&self, user: &str) -> Vec<String> {
        if let Some(g) = self.known(user) {
            return g;
        }
        let g = system_groups(user);
        let mut st = self.state.lock();
        if st.looked_up.len() >= MAX_CACHED_USERS {
            st.looked_up
                .retain(|_, (_, at)| at.elapsed() < SYSTEM_GROUPS_TTL);
            if st.looked_up.len() >= MAX_CACHED_USERS {
                st.looked_up.clear();
            }
        }
        st.looked_up
            .insert(user.to_string(), (g.clone(), Instant::now()));
        g
    }
}

/// Parses a groups file: `user: group group ...` (groups separated by
/// spaces or commas), `#` comments and blank lines ignored.
fn read_file(path: &Path) -> Result<HashMap<String, Vec<String>>, GroupsFileError> {
    let err = |detail: String| GroupsFileError {
        path: path.display().to_string(),
        detail,
    };
    let len = std::fs::metadata(path)
        .map_err(|e| err(e.to_string()))?
        .len();
    if len > MAX_GROUPS_FILE {
        return Err(err(format!(
            "{len} bytes: a groups file holds at most {MAX_GROUPS_FILE}"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let mut users: HashMap<String, Vec<String>> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((user, groups)) = line.split_once(':') else {
            return Err(err(format!("line {}: not `user: group group ...`", i + 1)));
        };
        let user = user.trim();
        if user.is_empty() || user.contains(char::is_whitespace) {
            return Err(err(format!("line {}: a user name is one word", i + 1)));
        }
        let list = users.entry(user.to_string()).or_default();
        for g in groups
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|g| !g.is_empty())
        {
            if list.len() >= MAX_GROUPS_PER_USER {
                return Err(err(format!(
                    "line {}: more than {MAX_GROUPS_PER_USER} groups for {user}",
                    i + 1
                )));
            }
            if !list.iter().any(|x| x == g) {
                list.push(g.to_string());
            }
        }
    }
    Ok(users)
}

/// The system's groups of `user`: its primary group, then the others;
/// none for a user the system does not know.
#[cfg(unix)]
fn system_groups(user: &str) -> Vec<String> {
    use nix::unistd::{getgrouplist, Group, User};
    let Ok(Some(u)) = User::from_name(user) else {
        return Vec::new();
    };
    let Ok(name) = std::ffi::CString::new(user) else {
        return Vec::new();
    };
    let mut gids = getgrouplist(&name, u.gid).unwrap_or_default();
    gids.retain(|&g| g != u.gid);
    gids.insert(0, u.gid);
    gids.truncate(MAX_GROUPS_PER_USER);
    gids.into_iter()
        .filter_map(|g| Group::from_gid(g).ok().flatten().map(|g| g.name))
        .collect()
}

#[cfg(not(unix))]
fn system_groups(_user: &str) -> Vec<String> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_groups_file_is_read_and_read_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("groups");
        std::fs::write(&p, "# users\nalice: analysts, etl\nbob:etl\n\ncarol:\n").unwrap();
        let g = Groups::new(GroupSource::File(p.clone())).unwrap();
        assert_eq!(g.of("alice"), ["analysts", "etl"]);
        assert_eq!(g.of("bob"), ["etl"]);
        assert!(g.of("carol").is_empty() && g.of("dave").is_empty());
        // A change of size is seen at the next lookup.
        std::fs::write(&p, "alice: analysts\nbob: etl hadoop\n").unwrap();
        assert_eq!(g.of("alice"), ["analysts"]);
        assert_eq!(g.of("bob"), ["etl", "hadoop"]);
        // A file that no longer reads gives no group (fails closed).
        std::fs::write(&p, "alice analysts\n").unwrap();
        assert!(g.of("alice").is_empty());
        std::fs::write(&p, "alice: etl\n").unwrap();
        assert_eq!(g.of("alice"), ["etl"]);
    }

    #[test]
    fn bad_groups_files_are_refused_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("groups");
        for bad in ["alice analysts\n", ": etl\n", "al ice: etl\n"] {
            std::fs::write(&p, bad).unwrap();
            let e = Groups::new(GroupSource::File(p.clone())).unwrap_err();
            assert!(e.to_string().contains("line 1"), "{e}");
        }
        let e = Groups::new(GroupSource::File(dir.path().join("missing"))).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn system_groups_put_the_primary_group_first() {
        let g = Groups::new(GroupSource::System).unwrap();
        // root is in every system's databases, with gid 0 first.
        let root = g.of("root");
        assert_eq!(root.first().map(String::as_str), Some("root"), "{root:?}");
        assert!(g.of("no-such-user-here").is_empty());
    }

    #[test]
    fn system_lookups_are_kept_briefly_and_boundedly() {
        let g = Groups::new(GroupSource::System).unwrap();
        assert_eq!(g.known("root"), None, "asked before any lookup");
        let root = g.of("root");
        assert_eq!(g.known("root"), Some(root));
        // Names callers make up do not grow the cache past its bound.
        for i in 0..MAX_CACHED_USERS + 10 {
            let _ = g.of(&format!("made-up-{i}"));
            assert!(g.state.lock().looked_up.len() <= MAX_CACHED_USERS);
        }
        // An entry past its time is asked again.
        g.state.lock().looked_up.insert(
            "old".into(),
            (vec!["x".into()], Instant::now() - SYSTEM_GROUPS_TTL),
        );
        assert_eq!(g.known("old"), None);
        assert!(g.of("old").is_empty());
    }
}
