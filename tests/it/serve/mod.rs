//! The WebHDFS server (read-only, and writable on a store: SIGKILLs under
//! load), `bench --serve` and `bench --server`.

mod bench;
mod kill;
mod server;
mod writable;
