//! Section names of Hadoop images: what each one is, the parent of a
//! sub-section, and the [`SectionKind`] located errors name it by.

use crate::SectionKind;

/// A section of a Hadoop image, by the name the summary gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HdfsSection {
    /// `NS_INFO`: one `NameSystemSection` (counters).
    NsInfo,
    /// `STRING_TABLE`: user, group and xattr names by serial id.
    StringTable,
    /// `EXTENDED_ACL`: reserved by Hadoop (written empty, if at all).
    ExtendedAcl,
    /// `ERASURE_CODING`: the erasure coding policies.
    ErasureCoding,
    /// `INODE`: a header, then every inode.
    Inode,
    /// `INODE_SUB`: a piece of INODE (HDFS-14617); the first holds the header.
    InodeSub,
    /// `INODE_REFERENCE`: references (renames under snapshots).
    InodeReference,
    /// `INODE_REFERENCE_SUB`: a piece of INODE_REFERENCE.
    InodeReferenceSub,
    /// `SNAPSHOT`: snapshottable directories and snapshots.
    Snapshot,
    /// `INODE_DIR`: children of each directory.
    InodeDir,
    /// `INODE_DIR_SUB`: a piece of INODE_DIR.
    InodeDirSub,
    /// `FILES_UNDERCONSTRUCTION`: files open for writing.
    FilesUnderConstruction,
    /// `SNAPSHOT_DIFF`: what changed since each snapshot.
    SnapshotDiff,
    /// `SNAPSHOT_DIFF_SUB`: a piece of SNAPSHOT_DIFF.
    SnapshotDiffSub,
    /// `SECRET_MANAGER`: delegation token keys (listed, skipped).
    SecretManager,
    /// `CACHE_MANAGER`: cache pools and directives (listed, skipped).
    CacheManager,
    /// A name this build does not know (listed, skipped).
    Unknown,
}

impl HdfsSection {
    /// Every known section, in the order Hadoop's `SectionName` lists them.
    pub const ALL: [HdfsSection; 16] = [
        Self::NsInfo,
        Self::StringTable,
        Self::ExtendedAcl,
        Self::ErasureCoding,
        Self::Inode,
        Self::InodeSub,
        Self::InodeReference,
        Self::InodeReferenceSub,
        Self::Snapshot,
        Self::InodeDir,
        Self::InodeDirSub,
        Self::FilesUnderConstruction,
        Self::SnapshotDiff,
        Self::SnapshotDiffSub,
        Self::SecretManager,
        Self::CacheManager,
    ];

    /// The section a summary entry's name denotes ([`Unknown`](Self::Unknown)
    /// for any other name).
    pub fn from_name(name: &str) -> HdfsSection {
        Self::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .unwrap_or(Self::Unknown)
    }

    /// The name Hadoop writes in the summary (`"?"` for unknown ones: keep
    /// the summary's own string for those).
    pub fn name(self) -> &'static str {
        match self {
            Self::NsInfo => "NS_INFO",
            Self::StringTable => "STRING_TABLE",
            Self::ExtendedAcl => "EXTENDED_ACL",
            Self::ErasureCoding => "ERASURE_CODING",
            Self::Inode => "INODE",
            Self::InodeSub => "INODE_SUB",
            Self::InodeReference => "INODE_REFERENCE",
            Self::InodeReferenceSub => "INODE_REFERENCE_SUB",
            Self::Snapshot => "SNAPSHOT",
            Self::InodeDir => "INODE_DIR",
            Self::InodeDirSub => "INODE_DIR_SUB",
            Self::FilesUnderConstruction => "FILES_UNDERCONSTRUCTION",
            Self::SnapshotDiff => "SNAPSHOT_DIFF",
            Self::SnapshotDiffSub => "SNAPSHOT_DIFF_SUB",
            Self::SecretManager => "SECRET_MANAGER",
            Self::CacheManager => "CACHE_MANAGER",
            Self::Unknown => "?",
        }
    }

    /// The section a sub-section is a piece of; `None` for a section.
    pub fn parent(self) -> Option<HdfsSection> {
        match self {
            Self::InodeSub => Some(Self::Inode),
            Self::InodeDirSub => Some(Self::InodeDir),
            Self::InodeReferenceSub => Some(Self::InodeReference),
            Self::SnapshotDiffSub => Some(Self::SnapshotDiff),
            _ => None,
        }
    }

    /// Whether nsimage decodes this section (the others are listed by
    /// `info` and skipped by a load).
    pub fn is_decoded(self) -> bool {
        matches!(
            self,
            Self::NsInfo
                | Self::StringTable
                | Self::ErasureCoding
                | Self::Inode
                | Self::InodeSub
                | Self::InodeReference
                | Self::InodeReferenceSub
                | Self::Snapshot
                | Self::InodeDir
                | Self::InodeDirSub
                | Self::FilesUnderConstruction
                | Self::SnapshotDiff
                | Self::SnapshotDiffSub
        )
    }

    /// The kind located errors name: a sub-section is named by its parent
    /// (the location's sub-section number says which piece).
    pub fn kind(self) -> SectionKind {
        match self.parent().unwrap_or(self) {
            Self::NsInfo => SectionKind::NS_INFO,
            Self::StringTable => SectionKind::STRING_TABLE,
            Self::Inode => SectionKind::INODE,
            Self::InodeDir => SectionKind::INODE_DIR,
            Self::InodeReference => SectionKind::INODE_REFERENCE,
            Self::Snapshot => SectionKind::SNAPSHOT,
            Self::SnapshotDiff => SectionKind::SNAPSHOT_DIFF,
            Self::FilesUnderConstruction => SectionKind::HDFS_FILES_UNDERCONSTRUCTION,
            Self::ExtendedAcl => SectionKind::HDFS_EXTENDED_ACL,
            Self::ErasureCoding => SectionKind::HDFS_ERASURE_CODING,
            Self::SecretManager => SectionKind::HDFS_SECRET_MANAGER,
            Self::CacheManager => SectionKind::HDFS_CACHE_MANAGER,
            _ => SectionKind::HDFS_UNKNOWN,
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::unusual_byte_groupings
)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in HdfsSection::ALL {
            assert_eq!(HdfsSection::from_name(s.name()), s);
            assert!(s.kind().name().is_some(), "{s:?}");
        }
        assert_eq!(HdfsSection::from_name("NEW_THING"), HdfsSection::Unknown);
        assert_eq!(HdfsSection::InodeSub.kind(), SectionKind::INODE);
    }
}
