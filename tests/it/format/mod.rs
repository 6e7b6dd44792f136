//! The image format: round trips, the wire and piece rules, the golden
//! image, damage, the parallel loader against the serial one, layout, and
//! the property that nothing the writer writes is refused.

mod at_rest;
mod corrupt;
mod differential;
mod golden;
mod layout;
mod never_refused;
mod parallel;
mod representation;
mod roundtrip;
mod rules;
mod streamed;
mod walker;
