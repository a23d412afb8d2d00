//! The committed header `include/pi_agent.h` must be exactly what cbindgen generates from
//! `ffi/src` with `ffi/cbindgen.toml` plus the version macros from Cargo's version, and those
//! macros must match Cargo's version.
//! Run with `PI_BLESS=1` to rewrite the header.

use std::path::PathBuf;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    manifest_dir().join("../include/pi_agent.h")
}

fn generate() -> String {
    let dir = manifest_dir();
    let mut config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // One source for the version: Cargo.toml. A version bump is then a re-bless.
    config.after_includes = Some(format!(
        "\n#define PI_AGENT_VERSION_MAJOR {}\n#define PI_AGENT_VERSION_MINOR {}\n\
         #define PI_AGENT_VERSION_PATCH {}\n",
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
    ));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn header_is_up_to_date() {
    let generated = generate();
    let path = header_path();
    if std::env::var_os("PI_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date: regenerate it with `PI_BLESS=1 cargo test -p pi-agent-ffi --test \
         header`",
        path.display()
    );
}

fn version_macro(header: &str, name: &str) -> String {
    let prefix = format!("#define {name} ");
    header
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{name} is missing from the header"))
        .trim()
        .to_owned()
}

#[test]
fn version_macros_match_cargo() {
    let header = std::fs::read_to_string(header_path()).expect("include/pi_agent.h exists");
    assert_eq!(
        version_macro(&header, "PI_AGENT_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MAJOR")
    );
    assert_eq!(
        version_macro(&header, "PI_AGENT_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_MINOR")
    );
    assert_eq!(
        version_macro(&header, "PI_AGENT_VERSION_PATCH"),
        env!("CARGO_PKG_VERSION_PATCH")
    );
}
