//! A tiny metadata server on the checkpoint store: a few client threads
//! create directories and files concurrently (their fsyncs are shared by
//! group commit), the server checkpoints, "restarts", and finds every
//! acknowledged operation again.
//!
//! Run: `cargo run --release --example metadata_server`

use nsimage_format::pb::journal_op::Op;
use nsimage_format::pb::{AddBlockOp, Block, CreateOp};
use nsimage_namespace::ROOT_ID;
use nsimage_store::{Store, StoreError};
use std::sync::Arc;

fn mkdir(parent: u64, name: &str) -> Op {
    Op::Mkdir(CreateOp {
        parent,
        name: name.as_bytes().to_vec(),
        user: b"hdfs".to_vec(),
        group: b"supergroup".to_vec(),
        mode: 0o755,
        ..Default::default()
    })
}

fn create(parent: u64, name: &str) -> Op {
    Op::Create(CreateOp {
        parent,
        name: name.as_bytes().to_vec(),
        user: b"client".to_vec(),
        group: b"users".to_vec(),
        mode: 0o644,
        replication: 3,
        preferred_block_size: 128 << 20,
        ..Default::default()
    })
}

fn main() -> Result<(), StoreError> {
    let tmp = std::env::temp_dir().join(format!("nsimage-example-{}", std::process::id()));
    Store::init(
        &tmp,
        Arc::new(nsimage_store::fs::RealFs::default()),
        &Default::default(),
    )?;
    let server = Arc::new(Store::open_default(&tmp)?);

    let clients: Vec<_> = (0..4)
        .map(|c| {
            let server = server.clone();
            std::thread::spawn(move || -> Result<u64, StoreError> {
                server.apply(mkdir(ROOT_ID, &format!("client{c}")))?;
                let home =
                    server.with_namespace(|ns| ns.resolve(format!("/client{c}").as_bytes()))?;
                let mut acked = 0;
                for i in 0..250 {
                    let name = format!("file{i:03}");
                    server.apply(create(home, &name))?;
                    let path = format!("/client{c}/{name}");
                    let id = server.with_namespace(|ns| ns.resolve(path.as_bytes()))?;
                    let block = Block {
                        id: 1_000_000 * (c + 1) + i,
                        generation_stamp: 1,
                        length: 4096,
                    };
                    server.apply(Op::AddBlock(AddBlockOp {
                        id,
                        block: Some(block),
                    }))?;
                    acked += 1;
                }
                Ok(acked)
            })
        })
        .collect();
    let mut acked = 0;
    for c in clients {
        acked += c.join().expect("client thread")?;
    }
    let checkpoint = server.checkpoint()?;
    // Work after the checkpoint lives only in the journal until the next one.
    for d in 0..10 {
        server.apply(mkdir(ROOT_ID, &format!("after-checkpoint-{d}")))?;
    }
    let digest = server.with_namespace(|ns| ns.digest());
    println!("{acked} files acknowledged, checkpoint at txid {checkpoint}, digest {digest}");
    drop(server);

    // Restart: newest image + journal.
    let restarted = Store::open_default(&tmp)?;
    let r = restarted.report();
    println!(
        "restarted at txid {} from image {} ({} ops replayed) in {:.3} s",
        r.txid, r.image_txid, r.replayed, r.seconds
    );
    assert_eq!(restarted.with_namespace(|ns| ns.digest()), digest);
    let files = restarted.with_namespace(|ns| ns.stats().files);
    println!("{files} files after restart");
    drop(restarted);
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
