//! The offline viewer: ls/stat/du/find, dump, diff and one-path lookups.

mod commands;
mod diff;
mod dump;
mod json_shape;
mod lookup;
mod lookup_mutants;
mod one_verdict;
mod stream;
