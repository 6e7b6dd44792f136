//! The command line as a user meets it: every command's output, hostile
//! arguments and files, the peer baselines, `export`, and the house rules
//! and maps of the architecture checked on the sources.

mod architecture;
mod commands;
mod documented;
mod exit_codes;
mod export;
mod hostile;
mod human;
mod layering;
mod memory;
mod peers;
mod progress;
mod trace;
