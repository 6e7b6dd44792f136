//! The WebHDFS server (read-only, and writable on a store: SIGKILLs under
//! load), `bench --serve` and `bench --server`; every op of the server's
//! op table on both servers (`ops_table`).

mod bench;
mod durable;
mod kill;
mod ops_table;
mod reserved;
mod server;
mod writable;
