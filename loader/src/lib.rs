//! nsimage loader.
