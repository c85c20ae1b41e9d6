//! Chunker invariants per language, then the expected structure, then a snapshot of each fixture.
use trove::chunk::{Chunk, ChunkedFile, chunk_file, nonws_chars};
use trove::config::{ChunkConfig, PipelineConfig};
use trove::lang::Registry;

use crate::util::fixtures;

fn cfg() -> ChunkConfig {
    PipelineConfig::defaults().unwrap().chunk
}

/// The default config with another size budget.
fn budget(max_chars: usize) -> ChunkConfig {
    ChunkConfig { max_chars, ..cfg() }
}

fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(fixtures().join("languages").join(rel)).unwrap()
}

/// `text` chunked as the language `rel` is detected as.
fn chunked(rel: &str, text: &str, c: &ChunkConfig) -> ChunkedFile {
    let reg = Registry::load(&[]).unwrap();
    let lang = reg
        .detect(rel, text.as_bytes())
        .unwrap_or_else(|| panic!("no language for {rel}"));
    chunk_file(text, Some(lang), c)
}

fn chunks_of(rel: &str, c: &ChunkConfig) -> (String, Vec<Chunk>) {
    let text = fixture_text(rel);
    let out = chunked(rel, &text, c);
    assert!(!out.parse_fallback, "{rel} fell back to lines");
    (text, out.chunks)
}

/// Line/column from a byte offset, computed independently of the chunker.
fn pos(text: &str, byte: usize) -> (usize, usize) {
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let col = byte - before.rfind('\n').map_or(0, |i| i + 1);
    (line, col)
}

fn check_invariants(rel: &str, text: &str, chunks: &[Chunk], c: &ChunkConfig) {
    assert!(!chunks.is_empty(), "{rel}: no chunks");
    for ch in chunks {
        assert_eq!(
            ch.content,
            &text[ch.start_byte..ch.end_byte],
            "{rel}: content/bytes disagree"
        );
        assert_eq!(
            (ch.start_line, ch.start_col),
            pos(text, ch.start_byte),
            "{rel}: start position"
        );
        let (el, ec) = pos(text, ch.end_byte - 1);
        assert_eq!(
            (ch.end_line, ch.end_col),
            (el, ec + 1),
            "{rel}: end position"
        );
        assert!(!ch.content.trim().is_empty());
        // A piece may exceed the budget only when it is a single line.
        assert!(
            nonws_chars(&ch.content) <= c.max_chars || !ch.content.contains('\n'),
            "{rel}: oversize chunk"
        );
    }
    for w in chunks.windows(2) {
        assert!(
            w[0].end_byte <= w[1].start_byte,
            "{rel}: chunks overlap: {:?} / {:?}",
            w[0].symbol_path,
            w[1].symbol_path
        );
    }
}

fn has(chunks: &[Chunk], path: &str, kind: &str) -> Chunk {
    chunks
        .iter()
        .find(|c| c.symbol_path.as_deref() == Some(path) && c.kind == kind)
        .unwrap_or_else(|| {
            let got: Vec<String> = chunks
                .iter()
                .map(|c| format!("{} {:?}", c.kind, c.symbol_path))
                .collect();
            panic!("no {kind} chunk {path:?}; got {got:#?}")
        })
        .clone()
}

/// Every fixture file, as `<language id>/<file>`: one directory per language.
fn fixture_files() -> Vec<String> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(fixtures().join("languages")).unwrap() {
        let d = d.unwrap();
        for f in std::fs::read_dir(d.path()).unwrap() {
            let f = f.unwrap();
            out.push(format!(
                "{}/{}",
                d.file_name().to_string_lossy(),
                f.file_name().to_string_lossy()
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn every_language_has_a_fixture_detected_as_itself() {
    let reg = Registry::load(&[]).unwrap();
    let files = fixture_files();
    for l in reg.languages() {
        let id = &l.def.id;
        let mine: Vec<&String> = files
            .iter()
            .filter(|f| f.starts_with(&format!("{id}/")))
            .collect();
        assert!(
            !mine.is_empty(),
            "no fixture under fixtures/languages/{id}/"
        );
        for rel in mine {
            let text = std::fs::read(fixtures().join("languages").join(rel)).unwrap();
            let got = reg.detect(rel, &text).map(|l| l.def.id.as_str());
            assert_eq!(got, Some(id.as_str()), "{rel}");
        }
    }
}

#[test]
fn invariants_hold_for_every_fixture_and_budget() {
    for max_chars in [64, 120, 300, 1800] {
        let c = ChunkConfig { max_chars, ..cfg() };
        for rel in &fixture_files() {
            let (text, chunks) = chunks_of(rel, &c);
            check_invariants(rel, &text, &chunks, &c);
        }
    }
}

#[test]
fn rust_items_impls_and_nested_modules() {
    let (_, ch) = chunks_of("rust/shapes.rs", &cfg());
    let circle = has(&ch, "Circle", "struct");
    assert!(
        circle.content.starts_with("/// A circle"),
        "doc comment stays with the item"
    );
    assert!(
        circle.content.contains("#[derive(Debug"),
        "attributes stay with the item"
    );
    assert_eq!(
        circle.docs.as_deref(),
        Some("A circle given by its radius.")
    );
    has(&ch, "Shape", "trait");
    has(&ch, "main", "function");
    assert_eq!(
        ch.iter()
            .filter(|c| c.kind == "impl" && c.symbol.as_deref() == Some("Circle"))
            .count(),
        3
    );
    // A small budget splits containers by their members, each keeping its path.
    let (_, small) = chunks_of("rust/shapes.rs", &budget(120));
    let total = has(&small, "registry > Registry > total_area", "method");
    assert_eq!(
        total.docs.as_deref(),
        Some("Total area of every registered shape.")
    );
    assert_eq!(
        total.signature.as_deref(),
        Some("pub fn total_area(&self) -> f64")
    );
    has(&small, "registry > Registry", "struct");
}

#[test]
fn python_classes_methods_decorators_docstrings() {
    let (_, ch) = chunks_of("python/billing.py", &budget(300));
    let pay = has(&ch, "PaymentService > process_payment", "method");
    assert_eq!(
        pay.docs.as_deref(),
        Some("Validate, then charge the invoice's total.\n\nReturns the gateway's receipt id.")
    );
    let validate = has(&ch, "PaymentService > validate", "method");
    assert!(
        validate.content.starts_with("@staticmethod"),
        "decorator kept: {}",
        validate.content
    );
    let inv = has(&ch, "Invoice", "class");
    assert!(inv.content.starts_with("@dataclass"));
    assert_eq!(
        has(&ch, "format_amount", "function").docs.as_deref(),
        Some("Two decimals, thousands separated.")
    );
    // Top-level code between definitions is a block.
    assert!(
        ch.iter()
            .any(|c| c.kind == "block" && c.content.contains("TAX_RATE"))
    );
    let (_, tiny) = chunks_of("python/billing.py", &budget(64));
    has(&tiny, "PaymentService > process_payment > Receipt", "class");
}

#[test]
fn javascript_typescript_tsx() {
    let (_, js) = chunks_of("javascript/cart.js", &budget(100));
    assert_eq!(
        has(&js, "Cart > add", "method").docs.as_deref(),
        Some("Adds an item with a quantity.")
    );
    assert_eq!(
        has(&js, "withTax", "function").docs.as_deref(),
        Some("Applies tax to an amount.")
    );
    assert!(
        has(&js, "withTax", "function")
            .content
            .contains("export function withTax")
    );
    has(&js, "describe", "function");
    has(&js, "ids", "function");
    let (_, ts) = chunks_of("typescript/users.ts", &budget(200));
    has(&ts, "User", "interface");
    has(&ts, "Role", "enum");
    has(&ts, "UserId", "type");
    has(&ts, "UserService > processPayment", "method");
    assert_eq!(
        has(&ts, "UserService > findUser", "method").docs.as_deref(),
        Some("Finds a user by id, or undefined.")
    );
    has(&ts, "normalizeEmail", "function");
    has(&ts, "Internal", "module");
    let (_, tsx) = chunks_of("tsx/Button.tsx", &budget(80));
    has(&tsx, "Button", "function");
    has(&tsx, "IconButton", "function");
    has(&tsx, "Toolbar > render", "method");
}

#[test]
fn go_java_receivers_and_nesting() {
    let (_, go) = chunks_of("go/server.go", &cfg());
    assert_eq!(
        has(&go, "Server > Start", "method").docs.as_deref(),
        Some("Start listens and serves until an error.")
    );
    has(&go, "Server > Addr", "method");
    has(&go, "Server", "struct");
    has(&go, "Handler", "interface");
    has(&go, "NewServer", "function");
    let (_, java) = chunks_of("java/OrderService.java", &budget(120));
    assert_eq!(
        has(&java, "OrderService > placeOrder", "method")
            .docs
            .as_deref(),
        Some("Places an order and returns its id.")
    );
    has(&java, "OrderService > OrderService", "method");
    has(&java, "OrderService > Order", "class");
    has(&java, "OrderService > Listener", "interface");
}

#[test]
fn c_and_cpp() {
    let (_, c) = chunks_of("c/buffer.c", &cfg());
    let app = has(&c, "buffer_append", "function");
    assert!(
        app.docs
            .as_deref()
            .unwrap_or("")
            .starts_with("Appends n bytes")
    );
    assert_eq!(
        app.signature.as_deref(),
        Some("int buffer_append(struct buffer *b, const char *src, size_t n)")
    );
    has(&c, "buffer_free", "function");
    has(&c, "make_counter", "function");
    has(&c, "buffer", "struct");
    has(&c, "error_t", "type");
    has(&c, "mode", "enum");
    let (_, cpp) = chunks_of("cpp/matrix.cpp", &budget(200));
    has(&cpp, "linalg > Matrix > at", "method");
    assert_eq!(
        has(&cpp, "linalg > Matrix > multiply", "method")
            .docs
            .as_deref(),
        Some("Multiplies two matrices.")
    );
    has(&cpp, "linalg > clamp", "function");
    has(&cpp, "linalg > Point", "struct");
}

/// The definitions `chunk_file` finds in `text` (as the language of `rel`), as `kind path` rows.
fn symbol_rows(rel: &str, text: &str) -> Vec<String> {
    chunked(rel, text, &cfg())
        .symbols
        .iter()
        .map(|s| format!("{} {}", s.kind, s.symbol_path))
        .collect()
}

fn fixture_symbols(rel: &str) -> Vec<String> {
    symbol_rows(rel, &fixture_text(rel))
}

/// Where a grammar gives a definition no `name` field, the language file's name paths find the
/// name: not the first identifier of the body (Julia), the block type (HCL) or the self
/// identifier (F#).
#[test]
fn names_where_the_grammar_has_no_name_field() {
    assert_eq!(
        fixture_symbols("julia/Stats.jl"),
        [
            "module Stats",
            "function Stats > mean",
            "function Stats > variance",
            "struct Stats > Summary",
            "struct Stats > Estimator",
            "function Stats > twice",
        ]
    );
    let julia = "function probe(xs)\n    means = sum(xs) / length(xs)\n    return means\nend\n\n\
        function total(xs)::Int\n    n = length(xs)\n    return n\nend\n\n\
        function Base.show(io::IO, p::Point)\n    s = string(p.x)\n    print(io, s)\nend\n\n\
        function clamp01(x::T) where {T<:Real}\n    y = max(zero(T), x)\n    \
        return min(one(T), y)\nend\n\n\
        struct Point{T} <: AbstractPoint\n    x::T\n    y::T\nend\n\n\
        struct Pair\n    a\n    b\nend\n";
    assert_eq!(
        symbol_rows("probe.jl", julia),
        [
            "function probe",
            "function total",
            "method Base > show",
            "function clamp01",
            "struct Point",
            "struct Pair",
        ]
    );
    assert_eq!(
        fixture_symbols("hcl/main.tf"),
        [
            "object terraform",
            "object region",
            "object aws_s3_bucket.logs",
            "object network",
            "object bucket_arn",
        ]
    );
    let hcl = "locals {\n  app = \"shop\"\n}\n\n\
        data \"aws_ami\" \"ubuntu\" {\n  most_recent = true\n\n  \
        filter {\n    name = \"name\"\n  }\n}\n";
    assert_eq!(
        symbol_rows("data.tf", hcl),
        [
            "object locals",
            "object aws_ami.ubuntu",
            "object aws_ami.ubuntu > filter",
        ]
    );
    let fsharp = fixture_symbols("fsharp/Pricing.fs");
    for want in [
        "method Shop.Pricing > Cart > Add",
        "method Shop.Pricing > Cart > Total",
    ] {
        assert!(
            fsharp.iter().any(|r| r == want),
            "no {want:?} in {fsharp:#?}"
        );
    }
    assert!(!fsharp.iter().any(|r| r.ends_with(" this")), "{fsharp:#?}");
}

#[test]
fn markdown_heading_sections() {
    let (_, md) = chunks_of("markdown/guide.md", &cfg());
    let paths: Vec<&str> = md.iter().filter_map(|c| c.symbol_path.as_deref()).collect();
    assert_eq!(
        paths,
        [
            "Payments Guide",
            "Payments Guide > Installation",
            "Payments Guide > Installation > From source",
            "Payments Guide > Usage",
            "Payments Guide > Configuration",
        ]
    );
    assert!(
        has(&md, "Payments Guide > Installation", "section")
            .content
            .contains("# Not a heading: inside a fence")
    );
}

#[test]
fn lines_chunker_is_a_fixed_window_baseline() {
    let c = ChunkConfig {
        chunker: trove::chunk::Chunker::Lines,
        window_lines: 10,
        ..cfg()
    };
    let (text, ch) = chunks_of("rust/shapes.rs", &c);
    check_invariants("rust/shapes.rs", &text, &ch, &c);
    assert!(
        ch.iter()
            .all(|c| c.kind == "lines" && c.end_line - c.start_line < 10)
    );
}

#[test]
fn snapshots() {
    for rel in &fixture_files() {
        let (_, ch) = chunks_of(rel, &cfg());
        let rows: Vec<String> = ch
            .iter()
            .map(|c| {
                format!(
                    "{}:{}-{}:{} {} {} | sig: {} | docs: {}",
                    c.start_line,
                    c.start_col,
                    c.end_line,
                    c.end_col,
                    c.kind,
                    c.symbol_path.as_deref().unwrap_or("-"),
                    c.signature.as_deref().unwrap_or("-"),
                    c.docs.as_deref().unwrap_or("-").replace('\n', "⏎"),
                )
            })
            .collect();
        let name = rel.replace(['/', '.'], "_");
        insta::assert_snapshot!(name, rows.join("\n"));
    }
}

/// Every definition of every language fixture, one snapshot per fixture: its kind, symbol path and
/// lines, and the line its name is on. Pins each language's definition names (what `symbols` and
/// `refs` resolve against) so a grammar upgrade or a rule change that renames one shows up here.
#[test]
fn symbol_snapshots() {
    for rel in &fixture_files() {
        let rows: Vec<String> = chunked(rel, &fixture_text(rel), &cfg())
            .symbols
            .iter()
            .map(|s| {
                format!(
                    "{}-{} {} {} (name on {})",
                    s.start_line, s.end_line, s.kind, s.symbol_path, s.name_line
                )
            })
            .collect();
        let name = format!("symbols_{}", rel.replace(['/', '.'], "_"));
        insta::assert_snapshot!(name, rows.join("\n"));
    }
}

/// The language table of docs/languages.md, rendered from the registry.
fn language_table() -> String {
    let reg = Registry::load(&[]).unwrap();
    let mut rows = vec![
        "| Language | id | Type | Chunking | Files |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    let mut langs: Vec<_> = reg.languages().iter().collect();
    langs.sort_by_key(|l| l.def.name.to_lowercase());
    for l in langs {
        let d = &l.def;
        let chunking = match (d.chunker.as_str(), &d.grammar) {
            ("ast", Some(g)) => format!("syntax (`{g}` grammar)"),
            ("markdown" | "rst" | "asciidoc", _) => "heading sections".to_string(),
            ("rules", _) => "line rules (blocks)".to_string(),
            ("paragraphs", _) => "paragraphs".to_string(),
            _ => "line windows".to_string(),
        };
        let mut files: Vec<String> = d.extensions.iter().map(|e| format!("`.{e}`")).collect();
        files.extend(d.filenames.iter().map(|f| format!("`{f}`")));
        rows.push(format!(
            "| {} | `{}` | {} | {} | {} |",
            d.name,
            d.id,
            d.source_type,
            chunking,
            files.join(" ")
        ));
    }
    rows.join("\n")
}

#[test]
fn readme_language_table() {
    let path = crate::util::repo().join("docs/languages.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme.find("<!-- languages:start").expect("start marker");
    let start = start + readme[start..].find("-->\n").unwrap() + 4;
    let end = readme.find("<!-- languages:end -->").expect("end marker");
    let want = format!("{}\n", language_table());
    if readme[start..end] != want {
        if std::env::var_os("TROVE_UPDATE_README").is_some() {
            std::fs::write(
                &path,
                format!("{}{want}{}", &readme[..start], &readme[end..]),
            )
            .unwrap();
        } else {
            panic!(
                "docs/languages.md's language table is stale: run `TROVE_UPDATE_README=1 cargo test --release readme_language_table`"
            );
        }
    }
}

#[test]
fn chunks_command_shows_and_explains() {
    let f = |rel: &str| fixtures().join("languages").join(rel);
    let out = crate::util::trove()
        .arg("chunks")
        .arg(f("oberon/Shapes.Mod"))
        .args(["--format", "json"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["language"], "oberon");
    let named: Vec<(&str, &str)> = v["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| Some((c["kind"].as_str()?, c["symbol_path"].as_str()?)))
        .collect();
    assert_eq!(
        named,
        [
            ("function", "CircleArea"),
            ("function", "Move"),
            ("function", "Report")
        ]
    );
    // Imports and calls per chunk, by the language file's node kinds.
    let out = crate::util::trove()
        .arg("chunks")
        .arg(f("python/billing.py"))
        .args(["--format", "json"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let chunks = v["chunks"].as_array().unwrap();
    assert!(
        chunks[0]["imports"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("from dataclasses import dataclass")),
        "{v}"
    );
    let service = chunks
        .iter()
        .find(|c| c["symbol_path"] == "PaymentService")
        .unwrap();
    assert!(
        service["calls"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("charge")),
        "{service}"
    );
    let out = crate::util::trove()
        .arg("chunks")
        .arg(f("lua/config.lua"))
        .arg("--explain")
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("language  lua (extension .lua)"), "{text}");
    assert!(text.contains("method     M > load"), "{text}");
    assert!(
        text.contains("function_declaration [5-19] => function"),
        "{text}"
    );
    crate::util::trove()
        .arg("chunks")
        .arg(f("lua/config.lua"))
        .args(["--lang", "klingon"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("trove languages"));
    crate::util::trove()
        .arg("chunks")
        .arg(fixtures().join("nope.rs"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot read"));
    // A file `trove index` leaves out is still cut, and says so; one it keeps says nothing.
    let t = tempfile::tempdir().unwrap();
    let min = t.path().join("app.min.txt");
    std::fs::write(&min, "x=1;".repeat(20_000)).unwrap();
    let out = crate::util::trove()
        .arg("chunks")
        .arg(&min)
        .args(["--format", "json"])
        .assert()
        .success()
        .stderr(predicates::str::contains("trove index skips"));
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["index_skips"], "minified", "{v}");
    assert!(!v["chunks"].as_array().unwrap().is_empty());
    crate::util::trove()
        .arg("chunks")
        .arg(f("lua/config.lua"))
        .assert()
        .success()
        .stderr(predicates::str::is_empty());
}

#[test]
fn every_language_with_reference_rules_finds_them_in_its_fixture() {
    let reg = Registry::load(&[]).unwrap();
    let mut missing = Vec::new();
    for rel in fixture_files() {
        let text = fixture_text(&rel);
        let lang = reg.detect(&rel, text.as_bytes()).unwrap();
        let refs = trove::lang::refs::references(lang, &text);
        for (kind, declared) in [
            ("import", &lang.def.import_nodes),
            ("call", &lang.def.call_nodes),
        ] {
            if !declared.is_empty()
                && !refs
                    .iter()
                    .any(|r| r.kind.as_str() == kind && !r.target.is_empty())
            {
                missing.push(format!("{rel}: no {kind} found by {declared:?}"));
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}
