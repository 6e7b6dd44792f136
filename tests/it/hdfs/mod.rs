//! Hadoop fsimage in and out: reading the shared real images, conversion,
//! snapshots, OIV's XML and its reading back, and hostile Hadoop images.

mod convert;
mod hostile;
mod oiv_xml;
mod read;
mod reverse_xml;
pub(crate) mod snapshots;
