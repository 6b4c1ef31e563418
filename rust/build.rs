//! The versions the worker reports: the crates Cargo.lock resolved, read at build time.

use std::fs;

/// Crates whose versions go into every record, under the names the records use.
const REPORTED: &[(&str, &str)] = &[
    ("iceberg", "iceberg-rust"),
    ("iceberg-datafusion", "iceberg-datafusion"),
    ("datafusion", "datafusion"),
    ("parquet", "parquet-rs"),
    ("opendal", "opendal"),
];

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = fs::read_to_string("Cargo.lock").expect("Cargo.lock beside Cargo.toml");
    let mut found = Vec::new();
    let mut name: Option<&str> = None;
    for line in lock.lines() {
        if let Some(value) = line.strip_prefix("name = ") {
            name = Some(value.trim_matches('"'));
        } else if let (Some(value), Some(crate_name)) = (line.strip_prefix("version = "), name) {
            if let Some((_, reported)) = REPORTED.iter().find(|(c, _)| *c == crate_name) {
                found.push(format!("{reported}={}", value.trim_matches('"')));
            }
            name = None;
        }
    }
    println!("cargo:rustc-env=ICEBENCH_CRATE_VERSIONS={}", found.join(","));
}
