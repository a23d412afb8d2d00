//! Gives the shared library its SONAME, `libpi_agent.so.<soversion>`: the major version, or
//! `0.<minor>` while the major version is 0 (where a minor release may break the ABI, as
//! cargo-c does). `scripts/install-c.sh` installs the library under that name (and the tests
//! link it the same way), so programs linked against it load a compatible version only.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets the version");
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").expect("cargo sets the version");
    let soversion = if major == "0" {
        format!("0.{minor}")
    } else {
        major
    };
    let soname = format!("libpi_agent.so.{soversion}");
    // The tests build an install-like library directory with this name.
    println!("cargo:rustc-env=PI_AGENT_SONAME={soname}");
    // ELF targets only: other platforms keep the linker's default install name.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    }
}
