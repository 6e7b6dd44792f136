//! Hadoop's ReverseXML direction: `nsimage convert DUMP.xml --to hdfs`
//! reads OIV XML back into a Hadoop image. For every real image, the image
//! read back keeps the original's layout version, its load has the
//! original's digest, and its own XML dump is the input byte for byte; the
//! Hadoop 2.8 to 2.10 form (`perferredBlockSize`) reads back to the same
//! namespace; documents that break the format's rules are refused with
//! the byte offset, exit 1, and leave nothing under the output's name.

use crate::common::{json as json_of, nsimage as run};
use crate::hdfs_common;
use std::path::Path;

/// stdout of a command that must succeed.
fn ok(args: &[&str]) -> Vec<u8> {
    let o = run(args);
    assert!(
        o.status.success(),
        "nsimage {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    json_of(&run(args))
}

/// The XML dump of `img`.
fn dump(img: &Path) -> Vec<u8> {
    ok(&["dump", s(img), "--format", "xml"])
}

/// `xml` read back into `out` with `extra` arguments: the convert's JSON.
fn reverse(xml: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["convert", s(xml), s(out), "--to", "hdfs", "--json"];
    args.extend_from_slice(extra);
    json(&args)
}

#[test]
fn every_shared_image_comes_back_from_its_xml() {
    let dir = tempfile::tempdir().unwrap();
    for (i, img) in hdfs_common::shared_images().iter().enumerate() {
        let xml = dump(img);
        let xml_path = dir.path().join(format!("{i}.xml"));
        std::fs::write(&xml_path, &xml).unwrap();
        let out = dir.path().join(format!("fsimage_{i:019}"));
        let v = reverse(&xml_path, &out, &[]);
        let info = json(&["info", s(img), "--json"]);
        assert_eq!(
            v["layout_version"],
            info["layout_version"],
            "{}: the layout version read back",
            img.display()
        );
        let original = json(&["load", s(img), "--json"]);
        assert_eq!(
            v["digest"],
            original["digest"],
            "{}: the namespace read back",
            img.display()
        );
        let back = dump(&out);
        assert!(
            back == xml,
            "{}: the XML dump of the image read back differs from its input",
            img.display()
        );
        // The NameNode's sidecar, naming the file.
        let side = std::fs::read_to_string(out.with_file_name(format!(
            "{}.md5",
            out.file_name().unwrap().to_str().unwrap()
        )))
        .unwrap();
        assert_eq!(
            side,
            format!(
                "{} *{}\n",
                v["md5"].as_str().unwrap(),
                out.file_name().unwrap().to_str().unwrap()
            )
        );
        ok(&["load", s(&out)]);
    }
}

/// Hadoop 2.8 to 2.10 spelled `perferredBlockSize` and printed no
/// ErasureCodingSection: read back to the same namespace; a layout
/// version given on the command line replaces the document's, and a
/// Hadoop 3 layout gets Hadoop 3's (empty) ERASURE_CODING section.
#[test]
fn hadoop_2_form_and_layout_override() {
    let dir = tempfile::tempdir().unwrap();
    let img = hdfs_common::data().join("hfsa/fsi_small.img");
    let xml = String::from_utf8(dump(&img)).unwrap();
    assert!(xml.contains("<preferredBlockSize>"));
    let h2 = xml.replace("preferredBlockSize>", "perferredBlockSize>");
    let h2_path = dir.path().join("h2.xml");
    std::fs::write(&h2_path, &h2).unwrap();
    let out = dir.path().join("fsimage_0000000000000000111");
    let v = reverse(&h2_path, &out, &[]);
    let original = json(&["load", s(&img), "--json"]);
    assert_eq!(v["digest"], original["digest"]);
    assert_eq!(v["layout_version"], -63);
    // The dump prints Hadoop 3's spelling.
    assert_eq!(String::from_utf8(dump(&out)).unwrap(), xml);

    let out3 = dir.path().join("fsimage_0000000000000000112");
    let v = reverse(&h2_path, &out3, &["--layout-version=-66"]);
    assert_eq!(v["layout_version"], -66);
    assert_eq!(v["digest"], original["digest"]);
    let names: Vec<&str> = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"ERASURE_CODING"), "{names:?}");
    let back = String::from_utf8(dump(&out3)).unwrap();
    assert_eq!(
        back,
        xml.replace(
            "<layoutVersion>-63</layoutVersion>",
            "<layoutVersion>-66</layoutVersion>"
        )
    );
    // A layout the writer does not write is refused before anything is.
    let out4 = dir.path().join("fsimage_0000000000000000113");
    let o = run(&[
        "convert",
        s(&h2_path),
        s(&out4),
        "--to",
        "hdfs",
        "--layout-version=-40",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(!out4.exists());
}

/// Documents that break the format's rules: exit 1, a message with the
/// file and byte offset, nothing left under the output's name or its
/// sidecar's; an image and sidecar already there are left as they were.
#[test]
fn broken_documents_are_refused_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let img = hdfs_common::data().join("hfsa/fsi_small.img");
    let good = String::from_utf8(dump(&img)).unwrap();
    let cut = good.find("<inode><id>16390</id>").unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("truncated", good[..cut].to_string(), "ends inside"),
        (
            "count",
            good.replace("<numInodes>19</numInodes>", "<numInodes>20</numInodes>"),
            "numInodes says 20",
        ),
        (
            "number",
            good.replacen("<mtime>1497733417186</mtime>", "<mtime>soon</mtime>", 1),
            "not a number",
        ),
        (
            "element",
            good.replacen("<nsquota>-1</nsquota>", "<nsquota>-1</nsquota><colour>red</colour>", 1),
            "not an element OIV prints",
        ),
        (
            "entity",
            good.replacen("<name>test1</name>", "<name>a&bogus;</name>", 1),
            "entity",
        ),
        (
            "escape",
            good.replacen("<name>test1</name>", "<name>a\\zz;</name>", 1),
            "escape",
        ),
        (
            "permission",
            good.replacen("mm:supergroup:0755", "mm-supergroup-0755", 1),
            "user:group:mode",
        ),
        (
            "hadoop 2.7",
            "<?xml version=\"1.0\"?>\n<fsimage><NameSection>\n<genstampV1>1000</genstampV1></NameSection>\n</fsimage>\n".into(),
            "Hadoop 2.7",
        ),
        ("not xml", "<fsimage><version></fsimage>".into(), "well-formed"),
        (
            "an image nsimage would not read back",
            good.replacen("<name>test1</name>", "<name>a/b</name>", 1),
            "not one nsimage reads back",
        ),
        (
            "no NameSection",
            {
                let a = good.find("<NameSection>").unwrap();
                let b = good.find("</NameSection>").unwrap() + "</NameSection>".len();
                format!("{}{}", &good[..a], &good[b..])
            },
            "no NameSection",
        ),
        (
            "two counts",
            good.replace("<numInodes>19</numInodes>", "<numInodes>19</numInodes><numInodes>19</numInodes>"),
            "a second numInodes",
        ),
        (
            "a Boolean with text",
            good.replace(
                "<count>0</count>",
                "<count>1</count><dirDiff><snapshotId>0</snapshotId><childrenSize>0</childrenSize><isSnapshotRoot>false</isSnapshotRoot><name></name><createdListSize>0</createdListSize></dirDiff>",
            ),
            "holds text",
        ),
    ];
    for (what, doc, says) in cases {
        let xml = dir.path().join("bad.xml");
        std::fs::write(&xml, doc).unwrap();
        let out = dir.path().join("fsimage_0000000000000000001");
        let o = run(&["convert", s(&xml), s(&out), "--to", "hdfs"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{what}: {err}");
        assert!(err.contains("bad.xml"), "{what}: {err}");
        assert!(err.contains("byte offset"), "{what}: {err}");
        assert!(err.contains(says), "{what}: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "bad.xml")
            .collect();
        assert!(left.is_empty(), "{what}: left {left:?}");
    }
    // Over an image saved before: the failed read back changes neither
    // the image nor its sidecar.
    let out = dir.path().join("fsimage_0000000000000000002");
    let good_xml = dir.path().join("good.xml");
    std::fs::write(&good_xml, &good).unwrap();
    reverse(&good_xml, &out, &[]);
    let side = out.with_file_name("fsimage_0000000000000000002.md5");
    let (before, side_before) = (std::fs::read(&out).unwrap(), std::fs::read(&side).unwrap());
    let bad = dir.path().join("bad.xml");
    std::fs::write(&bad, &good[..cut]).unwrap();
    let o = run(&["convert", s(&bad), s(&out), "--to", "hdfs"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(&out).unwrap(), before);
    assert_eq!(std::fs::read(&side).unwrap(), side_before);
}
