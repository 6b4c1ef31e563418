//! The versions the worker reports: the crates Cargo.lock resolved, read at build time. An iceberg
//! crate built from source is named as built: `0.10.1+<commit>` (a git source's commit from
//! Cargo.lock, a checkout's from ICEBENCH_ICEBERG_BUILD, which harness/services/rust_worker.py sets).
//! And the profile it was built with (`rust-build`: `release (opt-level 3)`), as cargo ran it.

use std::env;
use std::fs;

/// Crates whose versions go into every record, under the names the records use.
const REPORTED: &[(&str, &str)] = &[
    ("iceberg", "iceberg-rust"),
    ("iceberg-datafusion", "iceberg-datafusion"),
    ("datafusion", "datafusion"),
    ("parquet", "parquet-rs"),
    ("opendal", "opendal"),
];
const BUILD_VARIABLE: &str = "ICEBENCH_ICEBERG_BUILD";

/// `version`, with what it was built from when that was no registry.
fn as_built(version: &str, source: Option<&str>, checkout: Option<&str>) -> String {
    match source {
        Some(git) if git.starts_with("git+") => match git.rsplit_once('#') {
            Some((_, commit)) => format!("{version}+{}", &commit[..commit.len().min(7)]),
            None => format!("{version}+git"),
        },
        Some(_) => version.to_string(),
        None => match checkout {
            Some(tag) => format!("{version}+{tag}"),
            None => format!("{version}+path"),
        },
    }
}

/// The cargo profile (its output folder: `target/<profile>/build/<crate>-<hash>/out`) and the
/// opt-level it compiled with.
fn profile() -> String {
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let name = std::path::Path::new(&out)
        .ancestors()
        .nth(3)
        .and_then(|folder| folder.file_name())
        .map_or_else(|| "unknown".to_string(), |name| name.to_string_lossy().into_owned());
    let level = env::var("OPT_LEVEL").unwrap_or_else(|_| "unknown".to_string());
    format!("{name} (opt-level {level})")
}

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-env-changed={BUILD_VARIABLE}");
    let checkout = env::var(BUILD_VARIABLE).ok();
    let lock = fs::read_to_string("Cargo.lock").expect("Cargo.lock beside Cargo.toml");
    let mut found = Vec::new();
    for package in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            package
                .lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix(" = "))
                .map(|value| value.trim_matches('"'))
        };
        let (Some(name), Some(version)) = (field("name"), field("version")) else {
            continue;
        };
        if let Some((_, reported)) = REPORTED.iter().find(|(c, _)| *c == name) {
            let version = if name.starts_with("iceberg") {
                as_built(version, field("source"), checkout.as_deref())
            } else {
                version.to_string()
            };
            found.push(format!("{reported}={version}"));
        }
    }
    found.push(format!("rust-build={}", profile()));
    println!("cargo:rustc-env=ICEBENCH_CRATE_VERSIONS={}", found.join(","));
}
