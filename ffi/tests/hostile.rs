//! Issue 17 through the C ABI: `tests/c/ffi_hostile_test.c` (array-shaped settings, nonsense
//! faux options and tool schemas, secret headers in snapshots, deep tool arguments), natively
//! and under valgrind when it is installed.

#[path = "support/c_build.rs"]
mod c_build;

use std::process::Command;

use c_build::{assert_success, compile, run};

#[test]
fn c_hostile_input_is_refused_naming_the_field() {
    let exe = compile("tests/c/ffi_hostile_test.c", "ffi_hostile_test");
    let output = run(Command::new(&exe));
    assert_success(&output, "ffi_hostile_test");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_hostile_test: ok"));
}

#[test]
fn c_hostile_input_under_valgrind() {
    let available = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !available {
        eprintln!("valgrind is not installed: skipped");
        return;
    }
    let exe = compile("tests/c/ffi_hostile_test.c", "ffi_hostile_test_valgrind");
    let output = run({
        let mut command = Command::new("valgrind");
        command.args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "-q",
        ]);
        command.arg(&exe);
        command
    });
    assert_success(&output, "ffi_hostile_test under valgrind");
}
