//! The checkpoint store: its commands, at-rest forms, bit flips, crashes,
//! power cuts, read-only opens and saves.

mod at_rest;
mod bitflip;
mod commands;
mod crash;
mod powercut;
mod readonly;
mod save;
