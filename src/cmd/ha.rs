//! `nsimage ha status|transfer`: an HA group's state and a manual
//! failover, from etcd (as `hdfs haadmin`).

use nsimage_server::ha::{admin, HaConfig};
use std::process::ExitCode;
use std::time::Duration;

/// Where the group is.
#[derive(clap::Args)]
pub struct Group {
    /// The etcd cluster's client URLs, comma separated (as `serve
    /// --ha-etcd`).
    #[arg(
        long,
        value_name = "URL,URL,...",
        value_delimiter = ',',
        required = true
    )]
    ha_etcd: Vec<String>,
    /// The prefix of the group's keys in etcd (as `serve --ha-prefix`).
    #[arg(long, value_name = "PREFIX", default_value = "/nsimage")]
    ha_prefix: String,
}

impl Group {
    fn config(&self) -> HaConfig {
        let mut c = HaConfig::new(self.ha_etcd.clone(), String::new());
        c.prefix.clone_from(&self.ha_prefix);
        c
    }
}

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Who is active, each member's role, txid, lag and newest
    /// checkpoint, and the journal etcd holds.
    #[command(
        after_help = "Examples:\n  nsimage ha status --ha-etcd http://127.0.0.1:2379\n  nsimage ha status --ha-etcd http://10.0.0.5:2379,http://10.0.0.6:2379 --json"
    )]
    Status {
        #[command(flatten)]
        group: Group,
        /// The state as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Hand the active role to standby NAME: the active stops taking
    /// writes, NAME applies everything, then takes over. Exits 1 if NAME
    /// is not active within --wait-secs.
    #[command(
        after_help = "Examples:\n  nsimage ha transfer --ha-etcd http://127.0.0.1:2379 --to nn2\n  nsimage ha transfer --ha-etcd http://127.0.0.1:2379 --to nn2 --wait-secs 120"
    )]
    Transfer {
        #[command(flatten)]
        group: Group,
        /// The standby to make active.
        #[arg(long, value_name = "NAME")]
        to: String,
        /// Seconds to wait for NAME to be active.
        #[arg(long, value_name = "SECS", default_value_t = 30)]
        wait_secs: u64,
    },
}

pub fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    match cmd {
        Cmd::Status { group, json } => {
            let s = admin::group_status(&group.config())?;
            if json {
                out!("{s}");
                return Ok(ExitCode::SUCCESS);
            }
            out!(
                "group {} (namespace {}): active {}; journal in etcd: {} batches after txid {}",
                s["prefix"].as_str().unwrap_or(""),
                s["namespace_id"],
                s["leader"].as_str().unwrap_or("none"),
                s["journal_batches"],
                s["trimmed"]
            );
            out!(
                "{:<12} {:<10} {:>12} {:>12} {:>8}  url",
                "member",
                "role",
                "txid",
                "checkpoint",
                "lag ms"
            );
            for m in s["members"].as_array().into_iter().flatten() {
                let num = |v: &serde_json::Value| v.as_u64().map_or("-".into(), |n| n.to_string());
                out!(
                    "{:<12} {:<10} {:>12} {:>12} {:>8}  {}",
                    m["id"].as_str().unwrap_or("?"),
                    m["role"].as_str().unwrap_or("?"),
                    num(&m["txid"]),
                    num(&m["checkpoint_txid"]),
                    num(&m["lag_ms"]),
                    m["url"].as_str().unwrap_or("-")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Transfer {
            group,
            to,
            wait_secs,
        } => {
            let secs = admin::transfer(&group.config(), &to, Duration::from_secs(wait_secs))?;
            out!("{to} is active ({secs:.3} s)");
            Ok(ExitCode::SUCCESS)
        }
    }
}
