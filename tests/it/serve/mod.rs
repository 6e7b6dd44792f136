//! The WebHDFS server (read-only, and writable on a store: SIGKILLs under
//! load), `bench --serve` and `bench --server`.

mod bench;
mod durable;
mod kill;
mod reserved;
mod server;
mod writable;
