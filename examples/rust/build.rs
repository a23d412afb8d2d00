//! Extracts the Rust code blocks of the top-level README.md into `$OUT_DIR/readme.rs`, so
//! `tests/readme.rs` compiles them: a block with `fn main` becomes a module of its own with a
//! test that names `main` (the test compiles the program; it does not run it), any other
//! block (a fragment that continues the quick start) the body of an `async fn` that receives
//! the quick start's `model`. A README without Rust blocks fails the build, so the test cannot
//! silently check nothing.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let readme_path = Path::new(&manifest_dir).join("../../README.md");
    println!("cargo:rerun-if-changed={}", readme_path.display());
    println!("cargo:rerun-if-changed=build.rs");
    let readme = std::fs::read_to_string(&readme_path).expect("README.md is readable");

    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match current.as_mut() {
            None => {
                // ```rust, or ```rust,no_run and the like; ```rust,ignore blocks are skipped.
                let opens = line
                    .trim_end()
                    .strip_prefix("```rust")
                    .is_some_and(|attributes| {
                        (attributes.is_empty() || attributes.starts_with(','))
                            && !attributes.contains("ignore")
                    });
                if opens {
                    current = Some(String::new());
                }
            }
            Some(_) if line.trim_end() == "```" => blocks.push(current.take().unwrap()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    assert!(
        current.is_none(),
        "README.md: a ```rust block is not closed"
    );
    assert!(
        blocks.iter().any(|block| block.contains("fn main")),
        "README.md has no Rust quick start (a ```rust block with `fn main`)"
    );

    let mut out = String::new();
    for (index, block) in blocks.iter().enumerate() {
        if block.contains("fn main") {
            // The test names `main` (not run: it would call the real model).
            writeln!(
                out,
                "mod readme_block_{index} {{\n{block}\n#[test]\nfn compiles() {{\n    let _ = main;\n}}\n}}"
            )
            .unwrap();
        } else {
            writeln!(
                out,
                "#[allow(unused)]\npub async fn readme_block_{index}(model: pi_agent::ai::Model) {{\n{block}}}"
            )
            .unwrap();
        }
    }
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets it");
    std::fs::write(Path::new(&out_dir).join("readme.rs"), out).expect("OUT_DIR is writable");
}
