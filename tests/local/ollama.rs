//! Models in Ollama's store, through the binary: a temporary store under `OLLAMA_MODELS` (manifests
//! and blobs as Ollama lays them out, each blob a hard link or copy of a family fixture) answers
//! `run --provider local --model ollama:tiny:q4`, is listed by `model list --json` with what each
//! file is and whether it runs here (an unsupported architecture with its reason), and hostile
//! names and digests are refused naming the value and the manifest.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use sha2::{Digest, Sha256};

const FAMILIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families");

/// A store in `dir` holding `ollama:tiny:q4` (qwen3-Q4_K_M), `ollama:mamba:latest` (a gemma3 file
/// whose architecture was renamed `mamba`, which this build does not run), and `ollama:broken:x`,
/// whose manifest's digest is `sha256:../../x`.
fn store(dir: &Path) -> PathBuf {
    let store = dir.join("ollama");
    let blobs = store.join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |name: &str, tag: &str, bytes: Option<&[u8]>, source: Option<&Path>, digest: Option<&str>| {
        let digest = match digest {
            Some(digest) => digest.to_string(),
            None => {
                let bytes = bytes.map_or_else(|| std::fs::read(source.unwrap()).unwrap(), <[u8]>::to_vec);
                let hex = format!("{:x}", Sha256::digest(&bytes));
                let blob = blobs.join(format!("sha256-{hex}"));
                let linked = source.is_some_and(|source| std::fs::hard_link(source, &blob).is_ok());
                if !linked {
                    std::fs::write(&blob, &bytes).unwrap();
                }
                format!("sha256:{hex}")
            }
        };
        let at = store.join("manifests/registry.ollama.ai/library").join(name);
        std::fs::create_dir_all(&at).unwrap();
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": format!("sha256:{}", "0".repeat(64))},
            "layers": [
                {"mediaType": "application/vnd.ollama.image.template", "digest": format!("sha256:{}", "1".repeat(64)), "size": 1},
                {"mediaType": "application/vnd.ollama.image.model", "digest": digest, "size": 1},
            ],
        });
        std::fs::write(at.join(tag), manifest.to_string()).unwrap();
    };
    put("tiny", "q4", None, Some(&Path::new(FAMILIES).join("qwen3-Q4_K_M.gguf")), None);
    let mut renamed = std::fs::read(Path::new(FAMILIES).join("gemma3-Q8_0.gguf")).unwrap();
    let key = b"general.architecture";
    let at = renamed.windows(key.len()).position(|w| w == key).unwrap() + key.len() + 4 + 8;
    assert_eq!(&renamed[at..at + 6], b"gemma3");
    renamed[at..at + 6].copy_from_slice(b"mamba2");
    put("mamba", "latest", Some(&renamed), None, None);
    put("broken", "x", None, None, Some("sha256:../../x"));
    store
}

/// `tunebench ARGS` with Ollama's store at `store` and an empty cache directory in `dir`.
fn tunebench(dir: &Path, store: &Path, args: &[&str]) -> Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .args(args)
        .current_dir(dir)
        .env("OLLAMA_MODELS", store)
        .env("TUNEBENCH_CACHE_DIR", dir.join("cache"))
        .env("TUNEBENCH_DATA_DIR", dir.join("data"))
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_model_in_ollamas_store_runs_by_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    std::fs::write(
        dir.path().join("hello.toml"),
        "id = \"hello\"\nresponse_type = \"text\"\ntemplate = \"Say hello.\"\n",
    )
    .unwrap();
    let args = ["run", "hello.toml", "--provider", "local", "--model", "ollama:tiny:q4", "--max-tokens", "6", "--json"];
    let output = tunebench(dir.path(), &store, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let record: Value = serde_json::from_slice(&output.stdout).unwrap();
    let turn = &record["turns"][0];
    assert!(turn["chunks"].as_u64().unwrap() >= 1, "the answer streamed: {turn}");
    assert!(!turn["output"].as_str().unwrap().is_empty(), "{turn}");
    // A name the store does not hold says so and lists what it holds.
    let args = ["run", "hello.toml", "--provider", "local", "--model", "ollama:qwen3:8b"];
    let output = tunebench(dir.path(), &store, &args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let error = stderr(&output);
    assert!(error.contains("ollama:qwen3:8b is not in Ollama's store") && error.contains("ollama:tiny:q4"), "{error}");
}

#[test]
fn model_list_shows_each_model_with_whether_it_runs_here() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    // A prompt file naming a fixture directly is listed too.
    let gguf = Path::new(FAMILIES).join("llama3-Q8_0.gguf");
    let prompt = format!(
        "id = \"p\"\nresponse_type = \"text\"\ntemplate = \"x\"\n[provider]\nname = \"local\"\nmodel = {:?}\n",
        gguf.display().to_string()
    );
    std::fs::write(dir.path().join("p.toml"), prompt).unwrap();
    let output = tunebench(dir.path(), &store, &["model", "list", "--json", "p.toml"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = listed.iter().map(|m| m["name"].as_str().unwrap()).collect();
    let gguf_name = gguf.display().to_string();
    assert_eq!(names, ["ollama:broken:x", "ollama:mamba:latest", "ollama:tiny:q4", gguf_name.as_str()]);
    let [broken, mamba, tiny, named] = listed.as_slice() else { unreachable!() };
    assert_eq!(tiny["family"], "qwen3");
    assert_eq!(tiny["quantisation"], "Q4_K_M");
    assert_eq!(tiny["runs_here"], true, "{tiny}");
    assert_eq!(tiny["why_not"], Value::Null);
    assert_eq!(tiny["found_in"], "ollama");
    let blob = tiny["path"].as_str().unwrap();
    assert!(blob.starts_with(&store.join("blobs/sha256-").display().to_string()), "read in place: {blob}");
    assert_eq!(tiny["bytes"].as_u64(), Some(std::fs::metadata(blob).unwrap().len()));
    assert_eq!(mamba["family"], "mamba2");
    assert_eq!(mamba["runs_here"], false);
    let why = mamba["why_not"].as_str().unwrap();
    assert!(why.contains("\"mamba2\"") && why.contains("llama, qwen2, qwen3, gemma3"), "{why}");
    assert_eq!(broken["runs_here"], false);
    assert!(broken["why_not"].as_str().unwrap().contains("\"sha256:../../x\""), "{broken}");
    assert_eq!(named["family"], "llama");
    assert_eq!(named["found_in"], format!("prompt {}", "p.toml"));
    assert_eq!(named["runs_here"], true, "{named}");
    // The human table: a row each, the reason where it does not run.
    let output = tunebench(dir.path(), &store, &["model", "list"]);
    let table = String::from_utf8_lossy(&output.stdout);
    let row = table.lines().find(|l| l.starts_with("ollama:tiny:q4")).unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("qwen3") && row.contains("Q4_K_M") && row.ends_with("yes"), "{row}");
    let row = table.lines().find(|l| l.starts_with("ollama:mamba:latest")).unwrap();
    assert!(row.contains("no: general.architecture is \"mamba2\""), "{row}");
}

#[test]
fn model_info_says_runs_here_or_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let output = tunebench(dir.path(), &store, &["model", "info", "--model", "ollama:tiny:q4"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).lines().any(|l| l == "runs here"));
    let output = tunebench(dir.path(), &store, &["model", "info", "--model", "ollama:mamba", "--json"]);
    let info: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(info["runs_here"], false);
    assert!(info["why_not"].as_str().unwrap().contains("\"mamba2\""), "{info}");
}

#[test]
fn hostile_names_and_digests_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let manifest = store.join("manifests/registry.ollama.ai/library/broken/x");
    for args in [["model", "info", "--model", "ollama:broken:x"], ["model", "info", "--model", "ollama:../../etc:x"]] {
        let output = tunebench(dir.path(), &store, &args);
        assert!(!output.status.success());
        let error = stderr(&output);
        if args[3].contains("broken") {
            assert!(error.contains("\"sha256:../../x\"") && error.contains(&manifest.display().to_string()), "{error}");
        } else {
            assert!(error.contains("ollama:../../etc:x") && error.contains("\"..\""), "{error}");
        }
    }
    std::fs::write(dir.path().join("hello.toml"), "id = \"hello\"\nresponse_type = \"text\"\ntemplate = \"hi\"\n")
        .unwrap();
    let output =
        tunebench(dir.path(), &store, &["run", "hello.toml", "--provider", "local", "--model", "ollama:x/../y"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("ollama:x/../y"), "{}", stderr(&output));
}
