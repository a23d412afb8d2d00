//! Installs the C library with `scripts/install-c.sh` into a scratch prefix, from the libraries
//! cargo built for this test run (no second build), and uses it the way C and C++ projects do:
//! `examples/c/agent.c` and `examples/cpp/agent.cpp` built with
//! `pkg-config --cflags --libs pi_agent`, and `examples/cpp/CMakeLists.txt`
//! (`find_package(pi_agent)`, shared and static targets). Every program runs offline on the faux
//! model and must give the example's answer.
//!
//! Needs `pkg-config`, `cmake`, `make` and a C++ compiler (`tests/run-all.sh` installs them).
//! Without them the tests say so and pass, except under CI (`CI` set), where they fail.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Generous: compiling and linking against a debug build on a loaded machine is slow.
const TIMEOUT: Duration = Duration::from_secs(300);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ffi/ has a parent")
        .to_path_buf()
}

/// `target/<profile>/deps`: cargo writes `libpi_agent_ffi.so` and `.a` there for this test run.
fn built_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .expect("the test executable has a directory")
        .to_path_buf()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("install")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `tool` runs; when it does not, a note (or a failure under CI).
fn have(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is not installed (tests/run-all.sh installs it)"
        );
        println!("note: {tool} is not installed; skipping");
    }
    found
}

/// Runs `command` with no `LD_LIBRARY_PATH` (cargo's lists its target directories; programs
/// must find the library through the prefix), killing it after [`TIMEOUT`].
fn run(mut command: Command) -> Output {
    let description = format!("{command:?}");
    let mut child = command
        .env_remove("LD_LIBRARY_PATH")
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
    let output = Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    };
    assert!(
        output.status.success(),
        "{description} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout_of(command: Command) -> String {
    String::from_utf8(run(command).stdout).expect("UTF-8 output")
}

fn install(prefix: &Path, destdir: Option<&Path>) {
    let mut command = Command::new("bash");
    command
        .arg(repo_root().join("scripts/install-c.sh"))
        .arg("--prefix")
        .arg(prefix)
        .arg("--from")
        .arg(built_dir())
        .env_remove("DESTDIR");
    if let Some(destdir) = destdir {
        command.arg("--destdir").arg(destdir);
    }
    run(command);
}

/// The prefix every test of this file builds against, installed once.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let prefix = scratch("prefix");
        install(&prefix, None);
        prefix
    })
}

fn pkg_config(args: &[&str]) -> String {
    let mut command = Command::new("pkg-config");
    command
        .args(args)
        .arg("pi_agent")
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig"));
    stdout_of(command).trim().to_owned()
}

/// The SONAME `ffi/build.rs` gives the library (the script names the link after its own copy of
/// the rule, so the tests below compare the two).
fn soname() -> String {
    env!("PI_AGENT_SONAME").to_owned()
}

/// `readelf -d` lines of one kind (`SONAME`, `NEEDED`), the names in brackets.
fn dynamic_entries(file: &Path, kind: &str) -> Vec<String> {
    let mut command = Command::new("readelf");
    command.arg("-d").arg(file);
    stdout_of(command)
        .lines()
        .filter(|line| line.contains(&format!("({kind})")))
        .filter_map(|line| {
            let start = line.find('[')?;
            let end = line.rfind(']')?;
            Some(line[start + 1..end].to_owned())
        })
        .collect()
}

/// Runs an example offline and checks the answer it prints.
fn assert_example_runs(exe: &Path) {
    let mut command = Command::new(exe);
    command
        .env_remove("PI_MODEL")
        .env_remove("PI_MODEL_JSON")
        .env_remove("PI_API_KEY");
    let stdout = stdout_of(command);
    assert!(
        stdout.contains("[calculator] 6 * 7 = 42"),
        "{}: {stdout}",
        exe.display()
    );
    assert!(
        stdout.contains("assistant: 6 * 7 is 42."),
        "{}: {stdout}",
        exe.display()
    );
}

fn split_flags(flags: &str) -> Vec<String> {
    flags.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn installs_versioned_library_header_and_package_files() {
    let prefix = prefix();
    let lib = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    let soname = soname();
    let real = format!("libpi_agent.so.{version}");
    assert!(lib.join(&real).is_file());
    assert_eq!(
        std::fs::read_link(lib.join(&soname)).unwrap(),
        Path::new(&real)
    );
    assert_eq!(
        std::fs::read_link(lib.join("libpi_agent.so")).unwrap(),
        Path::new(&soname)
    );
    assert!(lib.join("libpi_agent.a").is_file());
    assert_eq!(
        std::fs::read(prefix.join("include/pi_agent.h")).unwrap(),
        std::fs::read(repo_root().join("include/pi_agent.h")).unwrap()
    );
    assert!(lib.join("cmake/pi_agent/pi_agentConfig.cmake").is_file());
    assert!(
        lib.join("cmake/pi_agent/pi_agentConfigVersion.cmake")
            .is_file()
    );
    assert_eq!(dynamic_entries(&lib.join(&real), "SONAME"), [soname]);
}

#[test]
fn destdir_stages_files_that_refer_to_the_prefix() {
    let stage = scratch("stage");
    let prefix = Path::new("/opt/pi-agent-install-test");
    install(prefix, Some(&stage));
    let staged = stage.join("opt/pi-agent-install-test");
    assert!(staged.join("include/pi_agent.h").is_file());
    assert!(staged.join("lib/libpi_agent.a").is_file());
    let pc = std::fs::read_to_string(staged.join("lib/pkgconfig/pi_agent.pc")).unwrap();
    assert!(
        pc.lines()
            .any(|line| line == "prefix=/opt/pi-agent-install-test"),
        "{pc}"
    );
    assert!(!pc.contains(&*stage.to_string_lossy()), "{pc}");
    let config =
        std::fs::read_to_string(staged.join("lib/cmake/pi_agent/pi_agentConfig.cmake")).unwrap();
    assert!(
        config.contains("\"/opt/pi-agent-install-test/lib/libpi_agent.a\""),
        "{config}"
    );
    assert!(!config.contains(&*stage.to_string_lossy()), "{config}");
    let _ = std::fs::remove_dir_all(&stage);
}

#[test]
fn pkg_config_builds_the_c_example() {
    if !have("pkg-config") {
        return;
    }
    assert_eq!(pkg_config(&["--modversion"]), env!("CARGO_PKG_VERSION"));
    let static_libs = pkg_config(&["--static", "--libs"]);
    for lib in ["-lpi_agent", "-lpthread", "-ldl"] {
        assert!(static_libs.contains(lib), "{static_libs}");
    }
    let flags = split_flags(&pkg_config(&["--cflags", "--libs"]));
    let prefix = prefix();
    let exe = scratch("pkg-config-c").join("agent");
    let mut command = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()));
    command
        .args(["-Wall", "-Wextra", "-Werror", "-std=c11"])
        .arg(repo_root().join("examples/c/agent.c"))
        .args(&flags)
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-o")
        .arg(&exe);
    run(command);
    // Linked by SONAME, so it loads a compatible version only.
    assert!(dynamic_entries(&exe, "NEEDED").contains(&soname()));
    assert_example_runs(&exe);
}

#[test]
fn pkg_config_builds_the_cpp_example_as_strict_cpp17() {
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    if !have("pkg-config") || !have(&compiler) {
        return;
    }
    let flags = split_flags(&pkg_config(&["--cflags", "--libs"]));
    let prefix = prefix();
    let exe = scratch("pkg-config-cpp").join("agent_cpp");
    let mut command = Command::new(&compiler);
    command
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg(repo_root().join("examples/cpp/agent.cpp"))
        .args(&flags)
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-o")
        .arg(&exe);
    run(command);
    assert_example_runs(&exe);
    let stdout = stdout_of(Command::new(&exe));
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        stdout.contains(&format!("pi_agent {version} (header {version})")),
        "{stdout}"
    );
    // The RAII wrapper frees every handle and every callback's std::function.
    let valgrind_runs = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if valgrind_runs {
        let mut command = Command::new("valgrind");
        command
            .args([
                "--quiet",
                "--error-exitcode=99",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
            ])
            .arg(&exe);
        run(command);
    } else {
        println!("note: valgrind is not installed; skipping the valgrind run of agent_cpp");
    }
}

#[test]
fn cmake_find_package_builds_the_examples_shared_and_static() {
    if !have("cmake") || !have("make") {
        return;
    }
    let prefix = prefix();
    let build = scratch("cmake");
    let strict = "-Wall -Wextra -Werror";
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(repo_root().join("examples/cpp"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg(format!("-DCMAKE_C_FLAGS={strict}"))
        .arg(format!("-DCMAKE_CXX_FLAGS={strict} -pedantic"))
        // Only the scratch prefix, never a pi_agent installed on the machine.
        .arg("-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF")
        .arg("-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF");
    run(configure);
    let mut compile = Command::new("cmake");
    compile.arg("--build").arg(&build);
    run(compile);
    for name in ["agent_c", "agent_cpp", "agent_c_static"] {
        assert_example_runs(&build.join(name));
    }
    assert!(dynamic_entries(&build.join("agent_c"), "NEEDED").contains(&soname()));
    let static_needs = dynamic_entries(&build.join("agent_c_static"), "NEEDED");
    assert!(
        !static_needs.iter().any(|name| name.contains("pi_agent")),
        "{static_needs:?}"
    );
}

#[test]
fn cmake_version_file_accepts_compatible_versions_only() {
    if !have("cmake") || !have("make") {
        return;
    }
    let (major, minor, patch) = (
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
    );
    let next_minor: u32 = minor.parse::<u32>().unwrap() + 1;
    let next_major: u32 = major.parse::<u32>().unwrap() + 1;
    // An older minor version: compatible unless the major version is 0 (where a minor
    // release may break the ABI).
    let older_minor = match minor.parse::<u32>().unwrap().checked_sub(1) {
        None => String::new(),
        Some(older) => {
            let verdict = if major == "0" {
                format!(
                    "if(pi_agent_FOUND)\n  message(FATAL_ERROR \"{major}.{older} accepted\")\nendif()\n"
                )
            } else {
                format!(
                    "if(NOT pi_agent_FOUND)\n  message(FATAL_ERROR \"{major}.{older} refused\")\nendif()\n"
                )
            };
            format!("find_package(pi_agent {major}.{older} QUIET)\n{verdict}")
        }
    };
    let project = scratch("cmake-version");
    // No languages: configuring checks the package only, without probing compilers.
    std::fs::write(
        project.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.16)\n\
             project(version_check NONE)\n\
             find_package(pi_agent {major}.{minor} REQUIRED)\n\
             message(STATUS \"found pi_agent ${{pi_agent_VERSION}}\")\n\
             find_package(pi_agent {major}.{minor}.{patch} EXACT REQUIRED)\n\
             find_package(pi_agent {major}.{next_minor} QUIET)\n\
             if(pi_agent_FOUND)\n  message(FATAL_ERROR \"{major}.{next_minor} accepted\")\nendif()\n\
             find_package(pi_agent {next_major} QUIET)\n\
             if(pi_agent_FOUND)\n  message(FATAL_ERROR \"{next_major} accepted\")\nendif()\n\
             {older_minor}"
        ),
    )
    .unwrap();
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(&project)
        .arg("-B")
        .arg(project.join("build"))
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix().display()));
    let stdout = stdout_of(configure);
    assert!(
        stdout.contains(&format!("found pi_agent {}", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
}
