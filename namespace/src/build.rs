//! The directory phase and the whole-tree checks of a load. A
//! [`NamespaceBuilder`] takes the node table and each piece's
//! [`InodeParts`] in id order, attaches the child lists that [`DirBatch`]es
//! decoded from INODE_DIR pieces, and checks every structural rule of
//! FORMAT.md that involves more than one record (ids in order, every inode
//! in exactly one directory, block ids unique and within the counters).
use crate::arena::{Arena, Span};
use crate::block_ids::{dense, unique, BatchIds};
use crate::blocks::Appends;
use crate::consts::{Slot, NO_SLOT, ROOT_ID};
use crate::errors::BuildError;
use crate::ids::IdIndex;
use crate::inode_batch::{BlockStats, InodeParts, Interned};
use crate::namespace::{read_name, Namespace};
use crate::node::{List, RUN_CHILDREN};
use crate::nodes::{NodeRange, Nodes};
use crate::shards::SlotShards;
use crate::strings::StringTable;
use crate::values::{Extra, NsInfo};

/// Child lists decoded from one INODE_DIR piece, with their own arena chunk.
///
/// What it holds lives until the batch is attached, beside the whole
/// namespace, so it is kept small: a directory whose children are a run of
/// slots (numbered in name order) stores no list and no bounds, and the
/// directories' vector is sized once from its caller's count.
pub struct DirBatch {
    chunk: u32,
    /// The lists of the directories that are not runs, each its length
    /// first (the form the namespace's child arena keeps).
    children: Vec<Slot>,
    /// The capacity `children` takes when the first list arrives.
    children_hint: usize,
    dirs: Vec<(Slot, Span)>,
    /// The lowest and highest slot of each listed (not run) directory's
    /// children, in the order of `dirs`: a thread setting the parents of
    /// one range of the node table passes over the directories whose
    /// children all lie outside (a run's bounds are its ends).
    list_bounds: Vec<(Slot, Slot)>,
    /// The lowest and highest slot of all the batch's children.
    kids: (Slot, Slot),
    last_parent: Option<u64>,
    /// Children listed, runs included.
    listed: usize,
}

impl DirBatch {
    /// A batch filling child arena chunk `chunk`, with room for `dirs`
    /// directory records and, once the first directory that is not a run
    /// arrives, for `children` slots of lists. Both are hints, never
    /// limits: room the allocator refuses is not taken (the vectors grow
    /// as they must), and a caller that takes them from a file bounds
    /// them first (by the piece's length).
    pub fn new(chunk: u32, dirs: usize, children: usize) -> Self {
        let mut dir_list = Vec::new();
        // A hint: refused, the vector grows as directories come.
        let _ = dir_list.try_reserve_exact(dirs);
        DirBatch {
            chunk,
            children: Vec::new(),
            children_hint: children,
            dirs: dir_list,
            list_bounds: Vec::new(),
            kids: (Slot::MAX, 0),
            last_parent: None,
            listed: 0,
        }
    }

    /// Adds one directory record: the parent's id and its children's ids in
    /// name order. Checks everything that one record can break.
    pub fn push(
        &mut self,
        b: &NamespaceBuilder,
        parent: u64,
        children: impl Iterator<Item = u64>,
    ) -> Result<(), BuildError> {
        if self.last_parent.is_some_and(|p| parent <= p) {
            return Err(BuildError::DirectoryOutOfOrder(parent));
        }
        self.last_parent = Some(parent);
        let ps =
            b.ns.ids
                .slot(parent)
                .ok_or(BuildError::ParentNotAnInode(parent))?;
        if !b.ns.nodes[ps as usize].is_dir() {
            return Err(BuildError::ParentNotADirectory(parent));
        }
        // Children numbered in name order (created so, as bulk copies and
        // generators do) keep no list: the run of their slots is enough.
        // A list is written only from the first child that breaks the run
        // (the run so far copied in first), its length going first, set
        // once the children are in.
        let mut start: Option<usize> = None;
        let mut len: u32 = 0;
        let mut prev: Option<&[u8]> = None;
        let (mut lo, mut hi) = (Slot::MAX, 0);
        for c in children {
            let cs =
                b.ns.ids
                    .slot(c)
                    .ok_or(BuildError::ChildNotAnInode { parent, child: c })?;
            if cs == 0 {
                return Err(BuildError::RootListed(parent));
            }
            let name = b.name_of(cs);
            if prev.is_some_and(|p| p >= name) {
                return Err(BuildError::ChildrenOutOfOrder { parent, child: c });
            }
            prev = Some(name);
            if start.is_none() && len > 0 && lo.checked_add(len) != Some(cs) {
                // The run ends here: write it out as the list's head.
                start = Some(self.open_list(lo, len)?);
            }
            if start.is_some() {
                self.children.push(cs);
            }
            (lo, hi) = (lo.min(cs), hi.max(cs));
            len = len.checked_add(1).ok_or(BuildError::ChildListTooLong)?;
        }
        if len == 0 {
            return Err(BuildError::EmptyChildList(parent));
        }
        self.listed = self.listed.saturating_add(len as usize);
        let span = match start {
            None => Span {
                chunk: RUN_CHILDREN,
                start: lo,
                len,
            },
            Some(start) => {
                self.children[start] = len;
                self.list_bounds.push((lo, hi));
                Span {
                    chunk: self.chunk,
                    start: u32::try_from(start).map_err(|_| BuildError::ChildListTooLong)?,
                    len,
                }
            }
        };
        self.dirs.push((ps, span));
        self.kids = (self.kids.0.min(lo), self.kids.1.max(hi));
        Ok(())
    }

    /// Starts a list whose first `len` children are the run of slots from
    /// `first`: its length's place, then the run. Returns where the list
    /// starts.
    fn open_list(&mut self, first: Slot, len: u32) -> Result<usize, BuildError> {
        if self.children.capacity() == 0 {
            // A hint: refused, the list grows as children come.
            let _ = self.children.try_reserve(self.children_hint);
        }
        let start = self.children.len();
        self.children.push(0);
        let end = first.checked_add(len).ok_or(BuildError::ChildListTooLong)?;
        self.children.extend(first..end);
        Ok(start)
    }

    /// Gives back what the batch reserved and did not use, once its piece
    /// is decoded: the batches wait, all of them, for the link.
    pub fn shrink_to_fit(&mut self) {
        self.children.shrink_to_fit();
        self.dirs.shrink_to_fit();
        self.list_bounds.shrink_to_fit();
    }

    /// Each directory with the lowest and highest slot of its children.
    fn dirs_with_bounds(&self) -> impl Iterator<Item = (Slot, Span, Slot, Slot)> + '_ {
        let mut lists = self.list_bounds.iter();
        self.dirs.iter().map(move |&(ps, span)| {
            let (lo, hi) = if span.chunk == RUN_CHILDREN {
                // `push` made the run's end from slots, so it fits.
                (span.start, span.start + (span.len - 1))
            } else {
                lists.next().copied().unwrap_or((0, Slot::MAX))
            };
            (ps, span, lo, hi)
        })
    }

    /// Sets the parents of this batch's children whose slots lie in
    /// `part`, a range of a node table of `total` slots (the whole table,
    /// or one range of it, so that threads can set parents each in their
    /// own range: [`NamespaceBuilder::node_ranges_mut`]), and the child
    /// lists of its directories in `part`. A child whose parent is already
    /// set, listed in two directories, is an error; so is a child past the
    /// table, reported by the part that ends it. A directory listed twice
    /// is refused by [`NamespaceBuilder::attach`], which finds its records
    /// out of order (the directories of a batch ascend, checked as they are
    /// pushed, and the batches must follow one another).
    pub fn link_into(&self, part: &mut NodeRange<'_>, total: usize) -> Result<(), BuildError> {
        let base = part.base();
        let end = base.saturating_add(part.len());
        // The batch's directories and children all outside the range.
        let outside = |lo: Slot, hi: Slot| {
            ((hi as usize) < base || lo as usize >= end) && !(hi as usize >= total && end >= total)
        };
        let dirs = self.dirs.first().zip(self.dirs.last());
        let (lo, hi) = self.kids;
        if dirs.is_none_or(|(a, b)| outside(a.0, b.0)) && outside(lo, hi) {
            return Ok(());
        }
        for (ps, span, lo, hi) in self.dirs_with_bounds() {
            if let Some(dir) = part.get_mut(ps as usize) {
                dir.set_list(if span.chunk == RUN_CHILDREN {
                    List::Run {
                        first: span.start,
                        len: span.len,
                    }
                } else {
                    List::Arena {
                        chunk: span.chunk,
                        off: span.start,
                    }
                });
            }
            // All of this directory's children outside the range (and,
            // for the range that ends the table, inside the table).
            if outside(lo, hi) {
                continue;
            }
            for c in self.kids(span) {
                let Some(node) = part.get_mut(c as usize) else {
                    if c as usize >= total && end >= total {
                        return Err(BuildError::SlotOutOfRange { slot: c, total });
                    }
                    continue;
                };
                if node.parent != NO_SLOT {
                    return Err(BuildError::ListedTwice(c));
                }
                node.parent = ps;
            }
        }
        Ok(())
    }

    /// The children `span` lists: a run of slots, or a part of this
    /// batch's list.
    fn kids(&self, span: Span) -> impl Iterator<Item = Slot> + '_ {
        let (run, listed) = if span.chunk == RUN_CHILDREN {
            (span.start..span.start.saturating_add(span.len), &[][..])
        } else {
            // After the list's length.
            let at = span.start as usize + 1;
            (0..0, &self.children[at..at + span.len as usize])
        };
        run.chain(listed.iter().copied())
    }

    /// (child slot, parent slot) of every child in this batch.
    pub fn links(&self) -> impl Iterator<Item = (Slot, Slot)> + '_ {
        self.dirs
            .iter()
            .flat_map(move |&(ps, span)| self.kids(span).map(move |c| (c, ps)))
    }
}

/// Builds a [`Namespace`] from batches, then checks the whole tree.
///
/// The caller owns the node table while pieces are decoded (so that it can
/// shard it between threads), hands it over with [`NamespaceBuilder::new`],
/// adds each INODE piece's remaining parts in id order, then attaches the
/// directory tree.
pub struct NamespaceBuilder {
    ns: Namespace,
    added: u32,
    block_stats: BlockStats,
    /// Directories that list children, as [`attach`](Self::attach) met
    /// them.
    listing: Vec<Slot>,
    /// Children listed over all attached batches.
    listed: usize,
    /// The last directory of the batches attached so far: the next
    /// batch's first must come after it, across calls to
    /// [`attach`](Self::attach) too.
    last_dir: Option<Slot>,
    /// The block ids of each INODE batch added.
    block_ids: Vec<BatchIds>,
    /// The extras of each INODE batch added (its first slot, then its
    /// own), placed in the namespace's maps once, when it is finished:
    /// with the maps sized first, not grown batch by batch.
    extras: Vec<(Slot, Vec<(u32, Extra)>)>,
}

impl NamespaceBuilder {
    /// Starts from the NS_INFO record, the tables the INODE batches shared
    /// and the node table (filled by the caller from
    /// [`InodeBatch::nodes`](crate::InodeBatch::nodes), in piece order,
    /// in place or as one vector converted with [`Nodes::from`]).
    pub fn new(info: NsInfo, tables: Interned, nodes: Nodes) -> Self {
        NamespaceBuilder {
            ns: Namespace {
                info,
                strings: tables.strings,
                classes: tables.classes.into_inner(),
                ids: IdIndex::default(),
                nodes,
                names: Arena::default(),
                children: Arena::default(),
                owned_children: SlotShards::default(),
                extras: SlotShards::default(),
                appends: Appends::default(),
            },
            added: 0,
            block_stats: BlockStats::default(),
            listing: Vec::new(),
            listed: 0,
            last_dir: None,
            block_ids: Vec::new(),
            extras: Vec::new(),
        }
    }

    /// The string table the namespace is built with.
    pub fn strings(&self) -> &StringTable {
        &self.ns.strings
    }

    /// Size of the node table (every inode of the image).
    pub fn inode_count(&self) -> usize {
        self.ns.nodes.len()
    }

    fn name_of(&self, slot: Slot) -> &[u8] {
        read_name(&self.ns.names, self.ns.nodes[slot as usize].name)
    }

    /// The name of the inode with id `id`, once its INODE piece's parts
    /// were added; `None` for an id not (yet) in the namespace. Lets a
    /// loader order a directory's children before [`DirBatch::push`].
    pub fn name_of_id(&self, id: u64) -> Option<&[u8]> {
        let slot = self.ns.ids.slot(id)?;
        ((slot as usize) < self.added as usize).then(|| self.name_of(slot))
    }

    /// Adds the parts of the next INODE piece (pieces in id order).
    pub fn add_inode_parts(&mut self, parts: InodeParts) -> Result<(), BuildError> {
        let base = self.added;
        if parts.len == 0 {
            return Ok(());
        }
        if self.ns.ids.extend(&parts.ids).is_none() {
            return Err(BuildError::PieceIdsOutOfOrder(
                self.ns.ids.last_id().unwrap_or(0),
            ));
        }
        self.added += parts.len;
        if self.added as usize > self.ns.nodes.len() {
            return Err(BuildError::TooManyInodes);
        }
        self.block_stats.merge(&parts.block_stats);
        self.block_ids.push(parts.block_ids);
        self.ns.names.set_chunk(parts.chunk, parts.names);
        if !parts.extras.is_empty() {
            self.extras.push((base, parts.extras));
        }
        Ok(())
    }

    /// The node table cut into at most `parts` ranges of whole chunks, for
    /// a caller that links the batches itself, each thread in its own
    /// range, through [`DirBatch::link_into`] (which sets the children's
    /// parents, refusing a second one, and the directories' lists in the
    /// range) before [`attach`](Self::attach). Every range must pass over
    /// every batch. Always at least one range.
    pub fn node_ranges_mut(&mut self, parts: usize) -> Vec<NodeRange<'_>> {
        self.ns.nodes.ranges_mut(parts)
    }

    /// Sets the parent of each child `batch` lists and the child lists of
    /// its directories, straight in the node table (a loader that links
    /// from several threads gives each its range through
    /// [`node_ranges_mut`](Self::node_ranges_mut) and
    /// [`DirBatch::link_into`] instead). A child whose parent is already
    /// set, listed in two directories, is an error.
    pub fn link(&mut self, batch: &DirBatch) -> Result<(), BuildError> {
        self.link_all(std::slice::from_ref(batch))
            .map_err(|(_, e)| e)
    }

    /// [`link`](Self::link) for each of `batches` in turn, the table
    /// borrowed once for all of them (a serial loader's pieces); on error,
    /// the index of the batch that failed with it.
    pub fn link_all(&mut self, batches: &[DirBatch]) -> Result<(), (usize, BuildError)> {
        let total = self.ns.nodes.len();
        for mut part in self.ns.nodes.ranges_mut(1) {
            for (i, batch) in batches.iter().enumerate() {
                batch.link_into(&mut part, total).map_err(|e| (i, e))?;
            }
        }
        Ok(())
    }

    /// Takes the child lists of `batches` into the namespace, once
    /// [`link`](Self::link), [`link_all`](Self::link_all) or
    /// [`DirBatch::link_into`] (through
    /// [`node_ranges_mut`](Self::node_ranges_mut)) has linked them: set
    /// their children's parents, none twice, and their directories' lists
    /// (attach sets neither). Checks that each batch's directories follow
    /// those of the batch before, in this call or an earlier one (so that
    /// no directory is listed twice: within a batch they ascend).
    pub fn attach(&mut self, batches: Vec<DirBatch>) -> Result<(), BuildError> {
        let ns = &mut self.ns;
        let total = ns.nodes.len();
        if self.added as usize != total {
            return Err(BuildError::InodeCount {
                decoded: self.added,
                expected: total,
            });
        }
        for batch in batches {
            // Each batch is in parent order; across batches (sub-sections)
            // the order must continue. Slots are in id order.
            if let (Some(l), Some(&(first, _))) = (self.last_dir, batch.dirs.first()) {
                if first == l {
                    return Err(BuildError::DirectoryListedTwice(ns.ids.id(first)));
                }
                if first < l {
                    return Err(BuildError::DirectoryAfter {
                        dir: ns.ids.id(first),
                        previous: ns.ids.id(l),
                    });
                }
            }
            if let Some(&(l, _)) = batch.dirs.last() {
                self.last_dir = Some(l);
            }
            self.listing.extend(batch.dirs.iter().map(|d| d.0));
            self.listed = self.listed.saturating_add(batch.listed);
            let mut children = batch.children;
            // A caller that did not shrink the batch once decoded.
            children.shrink_to_fit();
            ns.children.set_chunk(batch.chunk, children);
        }
        Ok(())
    }

    /// Checks the whole tree (a root, every inode reachable from it exactly
    /// once, ids within the counters) and returns the namespace.
    pub fn finish(self) -> Result<Namespace, BuildError> {
        let mut frontier = if self.ns.nodes.is_empty() {
            vec![]
        } else {
            vec![0]
        };
        let mut next = Vec::new();
        let mut reachable = 1usize;
        while !frontier.is_empty() && reachable <= self.ns.nodes.len() {
            reachable += self.expand(&frontier, &mut next);
            std::mem::swap(&mut frontier, &mut next);
            next.clear();
        }
        self.finish_counted(reachable)
    }

    /// One breadth-first step of the reachability check: adds the
    /// directories among the children of `dirs` to `next` and returns how
    /// many children there were. Each inode is listed in at most one
    /// directory and the root in none, so the walk from the root is a tree
    /// walk and ends; callers may run steps over parts of a frontier in
    /// parallel.
    pub fn expand(&self, dirs: &[Slot], next: &mut Vec<Slot>) -> usize {
        let ns = &self.ns;
        let mut n = 0;
        for &d in dirs {
            let kids = ns.child_slots(d);
            n += kids.len();
            next.extend(kids.iter().filter(|&k| ns.nodes[k as usize].is_dir()));
        }
        n
    }

    /// [`finish`](Self::finish) for a builder whose batches were all
    /// linked (through [`link`](Self::link), [`link_all`](Self::link_all)
    /// or [`DirBatch::link_into`] on every range of
    /// [`node_ranges_mut`](Self::node_ranges_mut)) before they were
    /// attached. The tree is checked from the parent links
    /// instead of by a walk down every child list: each directory that
    /// lists children is followed up to the root (or to a directory already
    /// known to reach it), so that only directories are read, not every
    /// inode. The errors are [`finish`](Self::finish)'s.
    ///
    /// Correct only if no child's parent was set twice: the check counts
    /// the children listed, and a child listed twice would let an inode
    /// listed nowhere go unnoticed. [`link`](Self::link) refuses a second
    /// parent, and so does [`DirBatch::link_into`].
    pub fn finish_linked(self) -> Result<Namespace, BuildError> {
        self.finish_linked_in(|check, place| {
            check();
            place();
        })
    }

    /// [`finish_linked`](Self::finish_linked), whose two parts, the
    /// tree's check and the placing of the inodes' extras in their maps,
    /// touch nothing in common: `join` runs them, on two threads if it can
    /// (a loader's pool: `rayon::join`), in any order.
    pub fn finish_linked_in(
        mut self,
        join: impl FnOnce(&mut (dyn FnMut() + Send), &mut (dyn FnMut() + Send)),
    ) -> Result<Namespace, BuildError> {
        let mut pending = std::mem::take(&mut self.extras);
        let mut extras = std::mem::take(&mut self.ns.extras);
        let mut hangs = false;
        {
            let me = &self;
            join(&mut || hangs = me.hangs_from_root(), &mut || {
                extras.extend_batches(std::mem::take(&mut pending));
            });
        }
        self.ns.extras = extras;
        // Placed by `finish_counted` if `join` did not run the second part.
        self.extras = pending;
        let reachable = if hangs { self.ns.nodes.len() } else { 0 };
        self.finish_counted(reachable)
    }

    /// Whether every inode hangs from the root. Each child was listed once
    /// (a second listing is refused when parents are set) and never the
    /// root (refused by [`DirBatch::push`]), so `listed` inodes have a
    /// parent: all but the root when `listed` is one less than the inodes.
    /// A parent is always a directory that lists children; those all reach
    /// the root unless some are on a cycle or hang from an inode in no
    /// directory, which the walk up from each of them finds.
    fn hangs_from_root(&self) -> bool {
        let nodes = &self.ns.nodes;
        if nodes.is_empty() || self.listed != nodes.len() - 1 {
            return false;
        }
        // Two bits a slot, not a byte: this runs beside a whole namespace.
        let mut rooted = Bits::new(nodes.len());
        let mut on_path = Bits::new(nodes.len());
        rooted.set(0);
        let mut path: Vec<Slot> = Vec::new();
        for &d in &self.listing {
            let mut x = d;
            while !rooted.get(x as usize) {
                // On the path being walked (a cycle), or no parent.
                if x as usize >= nodes.len() || on_path.get(x as usize) {
                    return false;
                }
                on_path.set(x as usize);
                path.push(x);
                x = nodes[x as usize].parent;
            }
            for &p in &path {
                rooted.set(p as usize);
            }
            path.clear();
        }
        true
    }

    /// [`finish`](Self::finish) with the reachable count computed by the
    /// caller through [`expand`](Self::expand), starting from `[0]` with a
    /// count of 1 (the root).
    pub fn finish_counted(self, reachable: usize) -> Result<Namespace, BuildError> {
        if (self.added as usize) != self.ns.nodes.len() {
            return Err(BuildError::InodeCount {
                decoded: self.added,
                expected: self.ns.nodes.len(),
            });
        }
        let mut ns = self.ns;
        // Those not placed yet (`finish_linked_in` places them first).
        ns.extras.extend_batches(self.extras);
        match ns.nodes.first() {
            Some(root) if ns.ids.id(0) == ROOT_ID && root.is_dir() => {}
            _ => return Err(BuildError::NoRoot),
        }
        if ns.ids.last_id().is_some_and(|l| l > ns.info.last_inode_id) {
            return Err(BuildError::InodeIdTooLarge {
                id: ns.ids.last_id().unwrap_or(0),
                last: ns.info.last_inode_id,
            });
        }
        check_blocks(&ns, &self.block_stats, &self.block_ids)?;
        let seen = reachable;
        if seen != ns.nodes.len() {
            let orphan = ns.nodes.iter().skip(1).position(|n| n.parent == NO_SLOT);
            return Err(match orphan {
                Some(i) => {
                    // i + 1 < nodes.len() == self.added, a u32 (checked above).
                    #[allow(clippy::cast_possible_truncation)]
                    let slot = i as u32 + 1;
                    BuildError::Orphan(ns.ids.id(slot))
                }
                None => BuildError::Cycle,
            });
        }
        Ok(ns)
    }
}

/// A fixed set of slots, a bit each; a slot past the end reads as unset.
struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize) -> Self {
        Bits(vec![0; len.div_ceil(64)])
    }

    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
}

/// The block rules across the image (FORMAT.md, INODE): ids at most
/// `last_block_id`, generation stamps at most `generation_stamp`, and ids
/// unique. Uniqueness is a merge of the batches' bitmaps (`batches`, built
/// as each batch was decoded) when every batch and the whole range are
/// dense (the usual case: ids are allocated in sequence); else one pass
/// with a bitmap over the id range when that range is dense, and a sort of
/// the ids otherwise. Either way memory is bounded by the number of blocks
/// decoded, never by a value read from the image.
fn check_blocks(ns: &Namespace, st: &BlockStats, batches: &[BatchIds]) -> Result<(), BuildError> {
    if st.count == 0 {
        return Ok(());
    }
    if st.max_id > ns.info.last_block_id {
        return Err(BuildError::BlockIdTooLarge {
            id: st.max_id,
            last: ns.info.last_block_id,
        });
    }
    if st.max_generation_stamp > ns.info.generation_stamp {
        return Err(BuildError::GenerationStampTooLarge {
            stamp: st.max_generation_stamp,
            max: ns.info.generation_stamp,
        });
    }
    let dup = |id: u64| Err(BuildError::DuplicateBlock(id));
    match unique(batches, st.min_id, st.max_id, st.count) {
        Some(Ok(())) => return Ok(()),
        Some(Err(id)) => return dup(id),
        None => {}
    }
    let span = st.max_id.saturating_sub(st.min_id);
    if dense(span, st.count) {
        let words = usize::try_from(span / 64 + 1).map_err(|_| BuildError::TooManyBlocks)?;
        let mut bits = vec![0u64; words];
        for n in ns.nodes.iter() {
            for b in ns.blocks_of(n) {
                let off = b.id.saturating_sub(st.min_id);
                let (w, bit) = ((off / 64) as usize, 1u64 << (off % 64));
                let word = &mut bits[w];
                if *word & bit != 0 {
                    return dup(b.id);
                }
                *word |= bit;
            }
        }
    } else {
        let mut ids: Vec<u64> = ns
            .nodes
            .iter()
            .flat_map(|n| ns.blocks_of(n).map(|b| b.id))
            .collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return dup(w[0]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::consts::ROOT_ID;
    use crate::inode_batch::{InodeBatch, Interned, LoadedBody, LoadedNode};
    use crate::strings::StringTable;
    use crate::values::{NsInfo, Perm};
    use crate::{DirBatch, NamespaceBuilder};

    /// A builder over inodes 1..=n (numbered from the root, whose id is
    /// [`ROOT_ID`]; those in `dir_ids` directories, the rest files), with
    /// `dirs` (parent, children) linked and attached.
    fn built(
        n: u64,
        dir_ids: &[u64],
        dirs: &[(u64, Vec<u64>)],
    ) -> Result<NamespaceBuilder, String> {
        let mut b = inodes(n, dir_ids)?;
        let mut d = DirBatch::new(0, 0, 0);
        for (parent, children) in dirs {
            d.push(&b, id(*parent), children.iter().map(|&c| id(c)))
                .map_err(|e| e.to_string())?;
        }
        b.link(&d).map_err(|e| e.to_string())?;
        b.attach(vec![d]).map_err(|e| e.to_string())?;
        Ok(b)
    }

    /// The id of the `i`th inode (the root is the first).
    fn id(i: u64) -> u64 {
        ROOT_ID + i - 1
    }

    /// A builder over inodes 1..=n, as [`built`] makes them, with no
    /// directory record yet.
    fn inodes(n: u64, dir_ids: &[u64]) -> Result<NamespaceBuilder, String> {
        let names: Vec<Vec<u8>> = (1..=n).map(|i| format!("n{i:04}").into_bytes()).collect();
        let mut batch = InodeBatch::new(0, 8, 1024);
        let tables = Interned::new(StringTable::default());
        for (i, own) in (1..=n).zip(&names) {
            let body = if i == 1 || dir_ids.contains(&i) {
                LoadedBody::Directory {
                    ns_quota: -1,
                    ds_quota: -1,
                }
            } else {
                LoadedBody::File {
                    atime: 0,
                    replication: 1,
                    preferred_block_size: 1 << 20,
                    storage_policy: 0,
                    blocks: &[],
                }
            };
            let name: &[u8] = if i == 1 { b"" } else { own };
            let node = LoadedNode {
                id: id(i),
                name,
                perm: Perm::new(0, 0, 0o755).0,
                mtime: 0,
                body,
                extra: None,
            };
            batch.push(node, &tables)?;
        }
        let info = NsInfo {
            last_inode_id: id(n),
            ..NsInfo::default()
        };
        let (nodes, parts) = batch.into_nodes_and_parts();
        let mut b = NamespaceBuilder::new(info, tables, nodes.into());
        b.add_inode_parts(parts).map_err(|e| e.to_string())?;
        Ok(b)
    }

    /// How the batches of [`linked`] are linked.
    #[derive(Clone, Copy, Debug)]
    enum Linking {
        /// `link_all`, the table borrowed once, then the walk down the
        /// child lists (`finish`).
        Serial,
        /// `node_ranges_mut(n)`, the ranges taken last first (as workers
        /// may), each passing over every batch, then `finish_linked`.
        Ranges(usize),
    }

    /// Inodes 1..=n with `batches` of directory records (one arena chunk
    /// each), linked as `how` says, attached (in one call, or one call a
    /// batch when `one_by_one`) and finished.
    fn linked(
        n: u64,
        dir_ids: &[u64],
        batches: &[Vec<(u64, Vec<u64>)>],
        how: Linking,
        one_by_one: bool,
    ) -> Result<crate::Namespace, String> {
        let mut b = inodes(n, dir_ids)?;
        let mut ds = Vec::new();
        for (k, dirs) in batches.iter().enumerate() {
            let mut d = DirBatch::new(u32::try_from(k).unwrap(), 0, 0);
            for (parent, children) in dirs {
                d.push(&b, id(*parent), children.iter().map(|&c| id(c)))
                    .map_err(|e| e.to_string())?;
            }
            ds.push(d);
        }
        let total = b.inode_count();
        match how {
            Linking::Serial => b.link_all(&ds).map_err(|(_, e)| e.to_string())?,
            Linking::Ranges(parts) => {
                let mut ranges = b.node_ranges_mut(parts);
                let chunks = total.div_ceil(crate::NODE_CHUNK);
                assert_eq!(ranges.len(), chunks.div_ceil(chunks.div_ceil(parts)));
                for part in ranges.iter_mut().rev() {
                    for d in &ds {
                        d.link_into(part, total).map_err(|e| e.to_string())?;
                    }
                }
            }
        }
        if one_by_one {
            for d in ds {
                b.attach(vec![d]).map_err(|e| e.to_string())?;
            }
        } else {
            b.attach(ds).map_err(|e| e.to_string())?;
        }
        match how {
            Linking::Serial => b.finish(),
            Linking::Ranges(_) => b.finish_linked(),
        }
        .map_err(|e| e.to_string())
    }

    /// A namespace of 1,100 inodes (five node chunks, three ranges of
    /// them) whose directories' children straddle the ranges, its records
    /// in three batches: linked range by range it is the namespace linked
    /// whole, every directory listing its children; a child listed twice
    /// in batches whose ranges differ, and a directory split across two
    /// batches, are refused whichever way they are linked and attached.
    #[test]
    fn links_set_range_by_range_are_the_links_set_whole() {
        let n = 1100u64;
        let dir_ids = [2, 3, 700, 1050];
        let files =
            |lo: u64, hi: u64| -> Vec<u64> { (lo..=hi).filter(|i| !dir_ids.contains(i)).collect() };
        // The root lists its directories and a run of files in the first
        // and last ranges; 2 lists files in all three ranges; 3 lists only
        // files of the middle range; 700 and 1050 the rest.
        let mut root: Vec<u64> = vec![2, 3, 700, 1050];
        root.extend(4..=100);
        root.extend(1090..=1100);
        root.sort_unstable();
        let two: Vec<u64> = files(101, 400)
            .into_iter()
            .chain(files(600, 650))
            .chain(files(1060, 1089))
            .collect();
        let batches = vec![
            vec![(1, root), (2, two)],
            vec![(3, files(401, 599))],
            vec![(700, files(651, 1049)), (1050, files(1051, 1059))],
        ];
        let whole = linked(n, &dir_ids, &batches, Linking::Serial, false).unwrap();
        for parts in [1, 2, 3, 5] {
            for one_by_one in [false, true] {
                let ranged =
                    linked(n, &dir_ids, &batches, Linking::Ranges(parts), one_by_one).unwrap();
                assert_eq!(ranged.digest(), whole.digest(), "{parts} ranges");
                for (dir, kids) in batches.iter().flatten() {
                    let slot = u32::try_from(dir - 1).unwrap();
                    let listed: Vec<u64> = ranged
                        .child_slots(slot)
                        .iter()
                        .map(|c| ranged.ids.id(c))
                        .collect();
                    let want: Vec<u64> = kids.iter().map(|&k| id(k)).collect();
                    assert_eq!(listed, want, "directory {dir}, {parts} ranges");
                    for &k in kids {
                        let node = &ranged.nodes[usize::try_from(k - 1).unwrap()];
                        assert_eq!(node.parent, slot, "inode {k}, {parts} ranges");
                    }
                }
            }
        }
        // A child of the first range listed again by a directory whose
        // other children are in the last range.
        let mut twice = batches.clone();
        twice[2][1].1.insert(0, 50);
        // Directory 700's records split across two batches.
        let mut split = batches.clone();
        let kids = &batches[2][0].1;
        split[1].push((700, kids[..200].to_vec()));
        split[2][0].1 = kids[200..].to_vec();
        for how in [Linking::Serial, Linking::Ranges(3), Linking::Ranges(2)] {
            for one_by_one in [false, true] {
                let e = linked(n, &dir_ids, &twice, how, one_by_one).unwrap_err();
                assert!(e.contains("listed in two directories"), "{how:?}: {e}");
                let e = linked(n, &dir_ids, &split, how, one_by_one).unwrap_err();
                assert!(
                    e.contains(&format!("directory {} is listed twice", id(700))),
                    "{how:?}, one by one {one_by_one}: {e}"
                );
            }
        }
    }

    /// A directory whose children are a run of slots keeps no list; one
    /// whose run breaks after some children (or at once) keeps them all,
    /// the run's head included, in order.
    #[test]
    fn runs_keep_no_list_and_a_broken_run_keeps_every_child() {
        let n = 40u64;
        let dir_ids = [2, 3, 4, 5];
        let b = inodes(n, &dir_ids).unwrap();
        let cases: [(u64, Vec<u64>); 5] = [
            (1, vec![2, 3, 4, 5]),
            (2, (10..=19).collect()),
            (3, vec![20, 21, 22, 30, 31]),
            (4, vec![23, 25, 26]),
            (5, vec![32]),
        ];
        let mut d = DirBatch::new(0, cases.len(), 64);
        for (parent, kids) in &cases {
            d.push(&b, id(*parent), kids.iter().map(|&c| id(c)))
                .unwrap();
        }
        // Only 3's and 4's children are listed: each list its length first.
        assert_eq!(d.children.len(), (1 + 5) + (1 + 3));
        let links: Vec<(u32, u32)> = d.links().collect();
        let want: Vec<(u32, u32)> = cases
            .iter()
            .flat_map(|(p, kids)| {
                kids.iter()
                    .map(move |&k| (u32::try_from(k - 1).unwrap(), u32::try_from(p - 1).unwrap()))
            })
            .collect();
        assert_eq!(links, want);
        let bounds: Vec<(u32, u32)> = d.dirs_with_bounds().map(|x| (x.2, x.3)).collect();
        assert_eq!(bounds, vec![(1, 4), (9, 18), (19, 30), (22, 25), (31, 31)]);
    }

    /// `finish_linked` gives what the walk down the child lists gives:
    /// the namespace, or the same error.
    #[test]
    fn the_parent_walk_and_the_child_walk_agree() {
        // Inodes, the directories among them, the records, the error.
        type Case<'a> = (u64, &'a [u64], &'a [(u64, Vec<u64>)], Option<&'a str>);
        let cases: &[Case<'_>] = &[
            (4, &[2, 3], &[(1, vec![2, 3]), (2, vec![4])], None),
            (1, &[], &[], None),
            // A file listed nowhere (every directory hangs from the root).
            (
                3,
                &[2],
                &[(1, vec![2])],
                Some(&format!("inode {} is in no directory", ROOT_ID + 2)),
            ),
            // A directory listing itself, and the root listing the rest.
            (3, &[2], &[(1, vec![3]), (2, vec![2])], Some("cycle")),
            // A cycle of two beside the rooted tree.
            (
                4,
                &[3, 4],
                &[(1, vec![2]), (3, vec![4]), (4, vec![3])],
                Some("cycle"),
            ),
            // A chain below a directory in no directory.
            (
                4,
                &[2, 3],
                &[(1, vec![4]), (2, vec![3])],
                Some(&format!("inode {} is in no directory", ROOT_ID + 1)),
            ),
        ];
        for (n, dir_ids, dirs, want) in cases {
            let linked =
                built(*n, dir_ids, dirs).and_then(|b| b.finish_linked().map_err(|e| e.to_string()));
            let walked =
                built(*n, dir_ids, dirs).and_then(|b| b.finish().map_err(|e| e.to_string()));
            let show = |r: &Result<crate::Namespace, String>| match r {
                Ok(ns) => format!("ok {:?}", ns.digest()),
                Err(e) => e.clone(),
            };
            assert_eq!(show(&linked), show(&walked), "{dirs:?}");
            match want {
                None => assert!(linked.is_ok(), "{dirs:?}: {}", show(&linked)),
                Some(w) => assert!(show(&linked).contains(w), "{dirs:?}: {}", show(&linked)),
            }
        }
    }
}
