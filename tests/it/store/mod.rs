//! The checkpoint store: its commands, at-rest forms, bit flips, crashes,
//! power cuts, read-only opens and saves, background checkpoints.

mod at_rest;
mod background;
mod bitflip;
mod commands;
mod crash;
mod durable;
mod powercut;
mod readonly;
mod replica;
mod save;
mod verdicts;
