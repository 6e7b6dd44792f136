//! The tests that drive real clients from the project's Python environment
//! (`tests/python/setup.sh`): DuckDB and Spark reading `nsimage export`,
//! and the `hdfs` WebHDFS client walking `nsimage serve` and writing to
//! `nsimage serve --writable`, and 16 of its clients writing to an HA
//! group through failovers; and every command block of the docs, run as
//! written.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/hdfs_common.rs"]
mod hdfs_common;
#[path = "../support/python_env.rs"]
mod python_env;
#[path = "../support/serve_common.rs"]
mod serve_common;

mod docs_run;
mod export_consumers;
mod ha;
mod permissions;
mod tls;
mod webhdfs_client;
mod webhdfs_writes;
