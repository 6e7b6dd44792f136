//! nsimage.
