//! Generates from `proto/nsimage.proto`, compiled by protox (so a fresh
//! machine needs no system `protoc`):
//!
//! - the prost types (`nsimage.v1.rs`);
//! - `fields.rs`: the number of every field of every message;
//! - `tags.rs`: the one-byte key of every field with its declared wire
//!   type, which the hand-written record encoder and decoder use.
//!
//! and from `proto/hdfs_fsimage.proto` (Hadoop's fsimage schema):
//!
//! - the prost types (`hdfs.fsimage.rs`);
//! - `hdfs_fields.rs`: the number of every field of every message, nested
//!   messages as nested modules (`inode_section::inode::ID`).
//!
//! The constants come from the schema itself, so they cannot drift from it.

use std::fmt::Write as _;

/// `descriptor.proto`'s field types, by number.
const TYPE_NAMES: [&str; 19] = [
    "", "double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string",
    "group", "message", "bytes", "uint32", "enum", "sfixed32", "sfixed64", "sint32", "sint64",
];
const TYPE_GROUP: i32 = 10;
const TYPE_MESSAGE: i32 = 11;
const TYPE_ENUM: i32 = 14;
const LABEL_REQUIRED: i32 = 2;
const LABEL_REPEATED: i32 = 3;

/// The name of field type `ty` ("" for a number it does not know).
fn type_name(ty: i32) -> &'static str {
    usize::try_from(ty)
        .ok()
        .and_then(|i| TYPE_NAMES.get(i))
        .copied()
        .unwrap_or("")
}

/// `NsInfo` -> `ns_info`, `SetXAttrOp` -> `set_xattr_op`: an underscore
/// before each capital that follows a small letter.
fn snake(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The wire type a field is written with (proto3 packs repeated scalars).
fn wire_type(ty: i32, repeated: bool) -> &'static str {
    match type_name(ty) {
        "string" | "bytes" | "message" => "LEN",
        _ if repeated => "LEN",
        "fixed64" | "sfixed64" | "double" => "FIXED64",
        "fixed32" | "sfixed32" | "float" => "FIXED32",
        _ => "VARINT",
    }
}

/// Appends the field-number module of message `m` (and of the messages
/// nested in it, as modules inside it) to `out`, indented by `depth`.
fn field_module(
    out: &mut String,
    m: &prost_types::DescriptorProto,
    path: &str,
    depth: usize,
) -> std::fmt::Result {
    let pad = "    ".repeat(depth);
    let name = m.name();
    let full = if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    };
    writeln!(
        out,
        "{pad}/// Field numbers of `{full}`.\n{pad}pub mod {} {{",
        snake(name)
    )?;
    for f in &m.field {
        let ty = f.r#type.unwrap_or(0);
        let ty_name = if ty == TYPE_MESSAGE || ty == TYPE_ENUM {
            f.type_name().rsplit('.').next().unwrap_or("").to_string()
        } else {
            type_name(ty).to_string()
        };
        let label = match f.label.unwrap_or(0) {
            LABEL_REPEATED => "repeated ",
            LABEL_REQUIRED => "required ",
            _ => "optional ",
        };
        let (field, number) = (f.name(), f.number());
        writeln!(
            out,
            "{pad}    /// `{label}{ty_name} {field} = {number}`.\n{pad}    \
             pub const {}: u32 = {number};",
            field.to_ascii_uppercase()
        )?;
    }
    for n in &m.nested_type {
        field_module(out, n, &full, depth + 1)?;
    }
    writeln!(out, "{pad}}}\n")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/nsimage.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;

    let mut fields = String::new();
    let mut tags = String::new();
    for file in &descriptors.file {
        for m in &file.message_type {
            let name = m.name();
            let module = snake(name);
            writeln!(
                fields,
                "/// Field numbers of `{name}`.\npub mod {module} {{"
            )?;
            writeln!(
                tags,
                "/// One-byte keys of the fields of `{name}`, each with its declared wire type.\n\
                 pub mod {module} {{\n    #[allow(unused_imports)]\n    \
                 use crate::wire::{{key, FIXED32, FIXED64, LEN, VARINT}};"
            )?;
            for f in &m.field {
                let ty = f.r#type.unwrap_or(0);
                if ty == TYPE_GROUP {
                    return Err(format!("{name}.{}: the format has no groups", f.name()).into());
                }
                let repeated = f.label.unwrap_or(0) == LABEL_REPEATED;
                let ty_name = if ty == TYPE_MESSAGE || ty == TYPE_ENUM {
                    f.type_name().rsplit('.').next().unwrap_or("").to_string()
                } else {
                    type_name(ty).to_string()
                };
                let label = if repeated { "repeated " } else { "" };
                let (field, number) = (f.name(), f.number());
                let constant = field.to_ascii_uppercase();
                let wire = wire_type(ty, repeated);
                writeln!(
                    fields,
                    "    /// `{label}{ty_name} {field} = {number}`.\n    \
                     pub const {constant}: u32 = {number};"
                )?;
                writeln!(
                    tags,
                    "    /// `{field}`: field {number}, wire type `{wire}`.\n    \
                     pub const {constant}: u8 = key({number}, {wire});"
                )?;
            }
            fields.push_str("}\n\n");
            tags.push_str("}\n\n");
        }
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("fields.rs"), fields)?;
    std::fs::write(out.join("tags.rs"), tags)?;

    prost_build::Config::new().compile_fds(descriptors)?;

    // Hadoop's fsimage schema: prost types (`hdfs.fsimage.rs`) and field
    // numbers (`hdfs_fields.rs`).
    let hdfs = "proto/hdfs_fsimage.proto";
    println!("cargo:rerun-if-changed={hdfs}");
    let descriptors = protox::compile([hdfs], ["proto"])?;
    let mut fields = String::new();
    for file in &descriptors.file {
        for m in &file.message_type {
            field_module(&mut fields, m, "", 0)?;
        }
    }
    std::fs::write(out.join("hdfs_fields.rs"), fields)?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
