//! Hadoop fsimage in and out: reading the shared real images, conversion,
//! snapshots, OIV's XML, and hostile Hadoop images.

mod convert;
mod hostile;
mod oiv_xml;
mod read;
pub(crate) mod snapshots;
