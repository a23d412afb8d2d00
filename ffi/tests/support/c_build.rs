//! Building and running the C programs of `tests/c` (and the examples and benchmarks): shared
//! by `c_programs.rs` and `bedrock.rs` through `#[path]`. The programs are compiled with
//! `cc -Wall -Wextra -Werror -std=c11` against `include/pi_agent.h` and linked with `-lpi_agent`
//! against the cdylib cargo built for this test run (`target/<profile>/deps/libpi_agent_ffi.so`,
//! found from the test executable's path, so `CARGO_TARGET_DIR` and `--release` work) with an
//! rpath.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Generous: a debug build under valgrind is slow.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(300);

/// The repository root (`ffi/..`).
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ffi/ has a parent")
        .to_path_buf()
}

/// A directory laid out like an installed library: `libpi_agent.so` (what `-lpi_agent` finds)
/// and the library's SONAME (what the programs then load), both links to the cdylib cargo built
/// for this run. Cargo writes it as `target/<profile>/deps/libpi_agent_ffi.so`, next to this
/// test executable (the lib's `rlib` crate type makes the tests depend on it; only a top-level
/// `cargo build` copies it up to `target/<profile>`).
pub(crate) fn library_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let library = exe
            .parent()
            .expect("the test executable has a directory")
            .join(format!(
                "{}pi_agent_ffi{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ));
        assert!(
            library.exists(),
            "{} is missing (cargo builds it with the tests)",
            library.display()
        );
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-lib");
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["libpi_agent.so", env!("PI_AGENT_SONAME")] {
            // Replaced atomically, so a stale link from an earlier run is never half-seen; the
            // staging name is per process, as the test binaries that share this run in parallel.
            let staging = dir.join(format!("{name}.{}.tmp", std::process::id()));
            let _ = std::fs::remove_file(&staging);
            std::os::unix::fs::symlink(&library, &staging).unwrap();
            std::fs::rename(&staging, dir.join(name)).unwrap();
        }
        dir
    })
    .clone()
}

/// Compiles one C source into an executable in cargo's per-test scratch directory.
pub(crate) fn compile(source: &str, name: &str) -> PathBuf {
    let root = repo_root();
    let lib_dir = library_dir();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let output = Command::new(&compiler)
        .args(["-Wall", "-Wextra", "-Werror", "-std=c11", "-pthread", "-g"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join(source))
        .arg("-o")
        .arg(&out)
        .arg("-L")
        .arg(&lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lpi_agent")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {compiler}: {error}"));
    assert!(
        output.status.success(),
        "compiling {source} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// Runs `command`, killing it after [`TIMEOUT`].
pub(crate) fn run(mut command: Command) -> Output {
    let description = format!("{command:?}");
    // cargo's `LD_LIBRARY_PATH` lists `target/<profile>` (which may hold an older, copied-up
    // library) and would win over the rpath: point it at the library built for this run.
    let mut child = command
        .env("LD_LIBRARY_PATH", library_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {description}: {error}"));
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = stdout.read_to_end(&mut buffer);
        buffer
    });
    let err_reader = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = stderr.read_to_end(&mut buffer);
        buffer
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{description} timed out after {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

pub(crate) fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
