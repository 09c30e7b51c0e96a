//! Build script of shoal-bench: compiles the Berkeley DB shim (`src/workload/peers/bdb/
//! shim.c`) and links `libdb-5.3` when Berkeley DB's header is installed, and sets the cfg
//! `shoal_bdb` so the `bdb` peer is built; without the header the crate builds without the
//! peer, which then reports itself as not installed.
//!
//! The header is `$SHOAL_BDB_INCLUDE/db.h` (default `/usr/include/db.h`, from Debian's
//! `libdb5.3-dev`; `peers/bdb/install.sh` installs it). Setting `SHOAL_BDB_INCLUDE` to a
//! directory without `db.h` builds without the peer (how the fallback is tested).
//!
//! Rebuilds: with the header present the script reruns only when the header, the shim or
//! `SHOAL_BDB_INCLUDE` change; without it, when the include directory changes (installing
//! the header adds a file to it), so the next `cargo build` after an install builds the peer.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shoal_bdb)");
    println!("cargo::rerun-if-env-changed=SHOAL_BDB_INCLUDE");
    println!("cargo::rerun-if-changed=build.rs");
    let shim = "src/workload/peers/bdb/shim.c";
    println!("cargo::rerun-if-changed={shim}");
    let include = std::env::var_os("SHOAL_BDB_INCLUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/include"));
    let header = include.join("db.h");
    if !header.is_file() {
        // Watch the directory: installing the header changes its modification time.
        println!("cargo::rerun-if-changed={}", include.display());
        println!(
            "cargo::warning=Berkeley DB header {} not found: building without the bdb peer \
             (run peers/bdb/install.sh to add it)",
            header.display()
        );
        return;
    }
    println!("cargo::rerun-if-changed={}", header.display());
    cc::Build::new()
        .file(shim)
        .include(&include)
        .warnings(true)
        .extra_warnings(true)
        .compile("shoal_bdb_shim");
    println!("cargo::rustc-link-lib=dylib=db-5.3");
    println!("cargo::rustc-cfg=shoal_bdb");
}
