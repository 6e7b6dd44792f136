//! A throwaway etcd cluster on loopback for the HA tests and `nsimage bench
//! --server --ha`: `n` members (processes of the `etcd` binary, Debian's
//! `etcd-server`; `tests/ha/setup.sh` installs it), each on client and peer
//! ports of its own, data under a directory of the caller's. Members can be
//! killed, paused and started again; dropping the cluster kills them all.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One member.
#[derive(Debug)]
struct EtcdMember {
    name: String,
    client: u16,
    peer: u16,
    child: Option<Child>,
}

/// A running cluster.
#[derive(Debug)]
pub struct EtcdCluster {
    bin: PathBuf,
    dir: PathBuf,
    members: Vec<EtcdMember>,
}

/// A loopback port free now.
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl EtcdCluster {
    /// Starts `n` members of `bin` (the `etcd` binary) with their data
    /// under `dir`, and waits (at most 30 s) until the cluster answers.
    ///
    /// # Errors
    /// A member that does not start, or a cluster that does not answer.
    pub fn start(bin: &Path, dir: &Path, n: usize) -> std::io::Result<EtcdCluster> {
        std::fs::create_dir_all(dir)?;
        let mut members = Vec::with_capacity(n);
        for i in 0..n {
            members.push(EtcdMember {
                name: format!("e{i}"),
                client: free_port()?,
                peer: free_port()?,
                child: None,
            });
        }
        let mut c = EtcdCluster {
            bin: bin.to_path_buf(),
            dir: dir.to_path_buf(),
            members,
        };
        for i in 0..n {
            c.start_member(i, true)?;
        }
        c.wait_ready(Duration::from_secs(30))?;
        Ok(c)
    }

    fn start_member(&mut self, i: usize, new: bool) -> std::io::Result<()> {
        let cluster: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer))
            .collect();
        let m = &self.members[i];
        let log = std::fs::File::create(self.dir.join(format!("{}.log", m.name)))?;
        let child = Command::new(&self.bin)
            .args(["--name", &m.name])
            .arg("--data-dir")
            .arg(self.dir.join(&m.name))
            .args([
                "--listen-client-urls",
                &format!("http://127.0.0.1:{}", m.client),
                "--advertise-client-urls",
                &format!("http://127.0.0.1:{}", m.client),
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{}", m.peer),
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{}", m.peer),
                "--initial-cluster",
                &cluster.join(","),
                "--initial-cluster-state",
                if new { "new" } else { "existing" },
                "--initial-cluster-token",
                "nsimage-test",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        self.members[i].child = Some(child);
        Ok(())
    }

    /// The client URLs, comma separated (as `--ha-etcd` takes them).
    pub fn endpoints(&self) -> String {
        self.urls().join(",")
    }

    /// The client URLs.
    pub fn urls(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("http://127.0.0.1:{}", m.client))
            .collect()
    }

    /// Kills member `i` (SIGKILL) and waits for it.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts member `i` again (after [`kill`](Self::kill)), on its data.
    ///
    /// # Errors
    /// The process does not start.
    pub fn restart(&mut self, i: usize) -> std::io::Result<()> {
        self.kill(i);
        self.start_member(i, false)
    }

    /// Waits until a member answers a linearizable read (the cluster has
    /// a quorum), at most `within`.
    ///
    /// # Errors
    /// It did not within `within`.
    pub fn wait_ready(&self, within: Duration) -> std::io::Result<()> {
        let started = Instant::now();
        loop {
            for url in self.urls() {
                if read_ok(&url) {
                    return Ok(());
                }
            }
            if started.elapsed() > within {
                return Err(std::io::Error::other(format!(
                    "etcd at {} did not answer within {within:?} (logs in {})",
                    self.endpoints(),
                    self.dir.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Whether the member at `url` answers a linearizable read now.
fn read_ok(url: &str) -> bool {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(2))
        .build();
    agent
        .post(&format!("{url}/v3/kv/range"))
        .set("content-type", "application/json")
        .send_string(r#"{"key":"AA=="}"#)
        .ok()
        .and_then(|r| r.into_string().ok())
        .is_some_and(|t| t.contains("\"header\""))
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}
