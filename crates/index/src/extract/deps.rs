//! Dependencies declared in package manifests: what `deps.parquet` holds.
//!
//! Input: a file's repo-relative path and text. Output: the dependencies it declares, in file order
//! (TOML tables by key),
//! each with its ecosystem, package name, version spec (as written) and scope: `runtime`, `dev`,
//! `build`, `peer`, `optional` or `indirect`. Manifests recognised by file name: package.json,
//! composer.json, Cargo.toml, go.mod, requirements*.txt, pyproject.toml, pom.xml,
//! build.gradle(.kts), Gemfile. A manifest that does not parse gives none (it is still indexed as
//! text); nothing here fails a run.
use regex::Regex;
use std::sync::LazyLock;

/// One declared dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dep {
    /// npm, composer, cargo, go, pypi, maven, rubygems.
    pub ecosystem: String,
    /// Package name (`group:artifact` for Maven/Gradle).
    pub name: String,
    /// Version spec as written, when there is one.
    pub version: Option<String>,
    /// runtime, dev, build, peer, optional, indirect (or a Poetry/PEP 735 group name); `module`
    /// for the manifest's own module path (Go's `module` line), not a dependency.
    pub scope: String,
}

fn dep(ecosystem: &'static str, name: &str, version: Option<String>, scope: &str) -> Dep {
    Dep {
        ecosystem: ecosystem.to_string(),
        name: name.trim().to_string(),
        version: version
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty()),
        scope: scope.to_string(),
    }
}

/// Whether `rel` names a manifest this module reads.
pub fn is_manifest(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    matches!(
        name,
        "package.json"
            | "composer.json"
            | "Cargo.toml"
            | "go.mod"
            | "pyproject.toml"
            | "pom.xml"
            | "build.gradle"
            | "build.gradle.kts"
            | "Gemfile"
            | "tsconfig.json"
            | "jsconfig.json"
    ) || (name.starts_with("requirements") && name.ends_with(".txt"))
}

/// The dependencies `text` declares, when `rel` is a manifest.
pub fn dependencies(rel: &str, text: &str) -> Vec<Dep> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    match name {
        "package.json" => {
            let mut out = json_deps(
                text,
                "npm",
                &[
                    ("dependencies", "runtime"),
                    ("devDependencies", "dev"),
                    ("peerDependencies", "peer"),
                    ("optionalDependencies", "optional"),
                ],
            );
            out.extend(package_name(rel, text));
            out
        }
        "composer.json" => json_deps(
            text,
            "composer",
            &[("require", "runtime"), ("require-dev", "dev")],
        ),
        "Cargo.toml" => cargo(text),
        "go.mod" => go_mod(text),
        "pyproject.toml" => pyproject(text),
        "pom.xml" => pom(text),
        "build.gradle" | "build.gradle.kts" => gradle(text),
        "Gemfile" => gemfile(text),
        "tsconfig.json" | "jsconfig.json" => tsconfig(rel, text),
        n if n.starts_with("requirements") && n.ends_with(".txt") => {
            let scope = if n.contains("dev") || n.contains("test") {
                "dev"
            } else {
                "runtime"
            };
            text.lines().filter_map(|l| pep508(l, scope)).collect()
        }
        _ => Vec::new(),
    }
}

/// JSON with comments and trailing commas (tsconfig.json) as plain JSON: comments become spaces,
/// a comma before `}` or `]` goes; strings are kept as they are.
fn strip_jsonc(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                out.extend_from_slice(&b[start..i]);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
                out.push(b' ');
            }
            b',' => {
                let next = b[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
                if !matches!(next, Some(b'}' | b']')) {
                    out.push(b',');
                }
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A package.json's own name as module rows: `NAME` → its `src/index` and `index`, `NAME/*` →
/// under its `src/` and its folder (a workspace's packages import each other by name).
fn package_name(rel: &str, text: &str) -> Vec<Dep> {
    let Some(name) = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("name")?.as_str().map(str::to_string))
        .filter(|n| !n.is_empty() && !n.contains('*') && !n.contains('|'))
    else {
        return Vec::new();
    };
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let at = |p: &str| {
        if dir.is_empty() {
            p.to_string()
        } else {
            format!("{dir}/{p}")
        }
    };
    let mut out = Vec::new();
    for (alias, target) in [
        (name.clone(), at("src/index")),
        (name.clone(), at("index")),
        (format!("{name}/*"), at("src/*")),
        (format!("{name}/*"), at("*")),
    ] {
        out.push(dep("npm", &alias, Some(target), "module"));
    }
    out
}

/// tsconfig.json/jsconfig.json's module names: each `compilerOptions.paths` alias (its first
/// target) and, with a `baseUrl`, `*` under it — rows of scope `module`, the alias as the name,
/// the bundle path it stands for (from the bundle's root, `*` kept) as the version. TypeScript
/// and JavaScript imports of bare specifiers resolve through them.
fn tsconfig(rel: &str, text: &str) -> Vec<Dep> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&strip_jsonc(text)) else {
        return Vec::new();
    };
    let Some(opts) = v.get("compilerOptions") else {
        return Vec::new();
    };
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let under = |base: &str, p: &str| crate::extract::imports::normalise(&format!("{base}/{p}"));
    let base_url = opts.get("baseUrl").and_then(|b| b.as_str());
    let Some(base) = (match base_url {
        Some(b) => under(dir, b),
        None => Some(dir.to_string()),
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(paths) = opts.get("paths").and_then(|p| p.as_object()) {
        for (alias, targets) in paths {
            let first = targets
                .as_array()
                .and_then(|t| t.first())
                .and_then(|t| t.as_str());
            if let Some(target) = first.and_then(|t| under(&base, t)) {
                out.push(dep("npm", alias, Some(target), "module"));
            }
        }
    }
    if base_url.is_some() {
        let all = if base.is_empty() {
            "*".to_string()
        } else {
            format!("{base}/*")
        };
        out.push(dep("npm", "*", Some(all), "module"));
    }
    out
}

/// `{"section": {"name": "spec"}}` manifests (npm, composer).
fn json_deps(text: &str, eco: &'static str, sections: &[(&str, &str)]) -> Vec<Dep> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, scope) in sections {
        if let Some(obj) = v.get(key).and_then(|d| d.as_object()) {
            for (name, spec) in obj {
                out.push(dep(eco, name, spec.as_str().map(str::to_string), scope));
            }
        }
    }
    out
}

/// A Cargo/Poetry-style table entry's version: a string, or a table's `version` (else how it is
/// sourced: `workspace`, `path`, `git`).
fn toml_spec(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Table(t) => t
            .get("version")
            .and_then(|x| x.as_str())
            .map(str::to_string)
            .or_else(|| {
                ["workspace", "path", "git"]
                    .into_iter()
                    .find(|k| t.contains_key(*k))
                    .map(|k| match t.get(k) {
                        Some(toml::Value::String(s)) => format!("{k}:{s}"),
                        _ => k.to_string(),
                    })
            }),
        _ => None,
    }
}

fn toml_table<'a>(v: &'a toml::Table, key: &str) -> Option<&'a toml::Table> {
    v.get(key).and_then(|x| x.as_table())
}

fn cargo(text: &str) -> Vec<Dep> {
    let Ok(v) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut section = |t: &toml::Table, scope: &str| {
        for (k, spec) in t {
            // `foo = { package = "bar" }` depends on the crate bar.
            let name = spec
                .as_table()
                .and_then(|s| s.get("package"))
                .and_then(|p| p.as_str())
                .unwrap_or(k);
            out.push(dep("cargo", name, toml_spec(spec), scope));
        }
    };
    for (key, scope) in [
        ("dependencies", "runtime"),
        ("dev-dependencies", "dev"),
        ("build-dependencies", "build"),
    ] {
        if let Some(t) = toml_table(&v, key) {
            section(t, scope);
        }
    }
    if let Some(targets) = toml_table(&v, "target") {
        for (_, t) in targets {
            for (key, scope) in [
                ("dependencies", "runtime"),
                ("dev-dependencies", "dev"),
                ("build-dependencies", "build"),
            ] {
                if let Some(d) = t.as_table().and_then(|t| toml_table(t, key)) {
                    section(d, scope);
                }
            }
        }
    }
    if let Some(d) = toml_table(&v, "workspace").and_then(|w| toml_table(w, "dependencies")) {
        section(d, "runtime");
    }
    out
}

fn go_mod(text: &str) -> Vec<Dep> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let l = line.trim();
        // The module's own path: what imports of its packages start with.
        if let Some(module) = l.strip_prefix("module ").map(str::trim)
            && !module.is_empty()
        {
            let module = module
                .split("//")
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"');
            out.push(dep("go", module, None, "module"));
            continue;
        }
        let body = if in_block {
            if l.starts_with(')') {
                in_block = false;
                continue;
            }
            l
        } else if let Some(rest) = l.strip_prefix("require") {
            let rest = rest.trim();
            if rest.starts_with('(') {
                in_block = true;
                continue;
            }
            rest
        } else {
            continue;
        };
        let (spec, comment) = body.split_once("//").unwrap_or((body, ""));
        let mut parts = spec.split_whitespace();
        if let (Some(name), Some(version)) = (parts.next(), parts.next()) {
            let scope = if comment.contains("indirect") {
                "indirect"
            } else {
                "runtime"
            };
            out.push(dep("go", name, Some(version.to_string()), scope));
        }
    }
    out
}

static PEP508: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;#]*)").expect("valid regex")
});

/// One PEP 508 requirement (`requests[socks]>=2.0; python_version<"3.8"`), skipping comments,
/// options (`-r`, `-e`, `--hash`) and URLs.
fn pep508(line: &str, scope: &str) -> Option<Dep> {
    let l = line.split('#').next().unwrap_or("").trim();
    if l.is_empty() || l.starts_with('-') || l.contains("://") {
        return None;
    }
    let c = PEP508.captures(l)?;
    let spec = c.get(3).map(|m| m.as_str().trim().to_string());
    Some(dep("pypi", c.get(1)?.as_str(), spec, scope))
}

fn pyproject(text: &str) -> Vec<Dep> {
    let Ok(v) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let strings = |x: &toml::Value| -> Vec<String> {
        x.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(p) = toml_table(&v, "project") {
        if let Some(d) = p.get("dependencies") {
            out.extend(strings(d).iter().filter_map(|s| pep508(s, "runtime")));
        }
        if let Some(groups) = toml_table(p, "optional-dependencies") {
            for (_, d) in groups {
                out.extend(strings(d).iter().filter_map(|s| pep508(s, "optional")));
            }
        }
    }
    if let Some(groups) = toml_table(&v, "dependency-groups") {
        for (g, d) in groups {
            let scope = if g == "dev" || g == "test" { "dev" } else { g };
            out.extend(strings(d).iter().filter_map(|s| pep508(s, scope)));
        }
    }
    if let Some(poetry) = toml_table(&v, "tool").and_then(|t| toml_table(t, "poetry")) {
        let mut section = |t: &toml::Table, scope: &str| {
            for (name, spec) in t {
                if name != "python" {
                    out.push(dep("pypi", name, toml_spec(spec), scope));
                }
            }
        };
        if let Some(d) = toml_table(poetry, "dependencies") {
            section(d, "runtime");
        }
        if let Some(d) = toml_table(poetry, "dev-dependencies") {
            section(d, "dev");
        }
        if let Some(groups) = toml_table(poetry, "group") {
            for (g, gt) in groups {
                if let Some(d) = gt.as_table().and_then(|t| toml_table(t, "dependencies")) {
                    section(d, if g == "dev" || g == "test" { "dev" } else { g });
                }
            }
        }
    }
    out
}

static XML_BLOCKS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)<dependencyManagement>.*?</dependencyManagement>|<plugins>.*?</plugins>|<!--.*?-->",
    )
    .expect("valid regex")
});
static XML_DEP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<dependency>(.*?)</dependency>").expect("valid regex"));

fn xml_tag(block: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = block.find(&open)? + open.len();
    let end = block[start..].find(&format!("</{tag}>"))? + start;
    Some(block[start..end].trim().to_string())
}

fn pom(text: &str) -> Vec<Dep> {
    let cleaned = XML_BLOCKS.replace_all(text, "");
    XML_DEP
        .captures_iter(&cleaned)
        .filter_map(|c| {
            let b = c.get(1)?.as_str();
            let name = format!("{}:{}", xml_tag(b, "groupId")?, xml_tag(b, "artifactId")?);
            let scope = match xml_tag(b, "scope").as_deref() {
                Some("test") => "dev",
                Some("provided") => "build",
                _ => "runtime",
            };
            Some(dep("maven", &name, xml_tag(b, "version"), scope))
        })
        .collect()
}

static GRADLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)^\s*(implementation|api|compileOnly|runtimeOnly|testImplementation|testCompileOnly|testRuntimeOnly|annotationProcessor|kapt|ksp|classpath|compile|testCompile)\s*\(?\s*["']([^"':]+):([^"':]+)(?::([^"']+))?["']"#,
    )
    .expect("valid regex")
});

fn gradle(text: &str) -> Vec<Dep> {
    GRADLE
        .captures_iter(text)
        .map(|c| {
            let conf = &c[1];
            let scope = if conf.starts_with("test") {
                "dev"
            } else if matches!(
                conf,
                "compileOnly" | "annotationProcessor" | "kapt" | "ksp" | "classpath"
            ) {
                "build"
            } else {
                "runtime"
            };
            let name = format!("{}:{}", &c[2], &c[3]);
            dep(
                "maven",
                &name,
                c.get(4).map(|m| m.as_str().to_string()),
                scope,
            )
        })
        .collect()
}

static GEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*gem\s+["']([^"']+)["']((?:\s*,\s*["'][^"']*["'])*)"#).expect("valid regex")
});

fn gemfile(text: &str) -> Vec<Dep> {
    let mut out = Vec::new();
    let mut groups: Vec<bool> = Vec::new(); // per open `do` block: is it a dev/test group
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("group ") && l.ends_with(" do") {
            groups.push(l.contains(":development") || l.contains(":test"));
            continue;
        }
        if l.ends_with(" do") || l == "do" {
            groups.push(false);
            continue;
        }
        if l == "end" {
            groups.pop();
            continue;
        }
        if let Some(c) = GEM.captures(l) {
            let specs: Vec<&str> = c[2]
                .split(',')
                .map(|s| s.trim().trim_matches(['"', '\'']))
                .filter(|s| !s.is_empty())
                .collect();
            let version = (!specs.is_empty()).then(|| specs.join(", "));
            let scope = if groups.iter().any(|g| *g) {
                "dev"
            } else {
                "runtime"
            };
            out.push(dep("rubygems", &c[1], version, scope));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rel: &str, text: &str) -> Vec<(String, Option<String>, String)> {
        dependencies(rel, text)
            .into_iter()
            .map(|d| (d.name, d.version, d.scope))
            .collect()
    }

    fn r(n: &str, v: Option<&str>, s: &str) -> (String, Option<String>, String) {
        (n.into(), v.map(str::to_string), s.into())
    }

    #[test]
    fn every_manifest_kind() {
        assert_eq!(
            rows(
                "web/package.json",
                r#"{"dependencies":{"react":"^18.2.0"},"devDependencies":{"vitest":"1.0.0"}}"#
            ),
            [
                r("react", Some("^18.2.0"), "runtime"),
                r("vitest", Some("1.0.0"), "dev")
            ]
        );
        assert_eq!(
            rows(
                "Cargo.toml",
                "[dependencies]\nserde = { version = \"1\", features = [\"derive\"] }\nlocal = { path = \"../l\" }\n[dev-dependencies]\ninsta = \"1\"\n[build-dependencies]\ncc = \"1.2\"\n"
            ),
            [
                r("local", Some("path:../l"), "runtime"),
                r("serde", Some("1"), "runtime"),
                r("insta", Some("1"), "dev"),
                r("cc", Some("1.2"), "build")
            ]
        );
        assert_eq!(
            rows(
                "go.mod",
                "module x\n\ngo 1.22\n\nrequire github.com/a/b v1.2.3\nrequire (\n\tgolang.org/x/sync v0.7.0\n\tgithub.com/c/d v0.1.0 // indirect\n)\n"
            ),
            [
                r("x", None, "module"),
                r("github.com/a/b", Some("v1.2.3"), "runtime"),
                r("golang.org/x/sync", Some("v0.7.0"), "runtime"),
                r("github.com/c/d", Some("v0.1.0"), "indirect")
            ]
        );
        assert_eq!(
            rows(
                "requirements-dev.txt",
                "# tools\n-r requirements.txt\npytest>=8.0  # tests\nrequests[socks]==2.31; python_version>'3.8'\n"
            ),
            [
                r("pytest", Some(">=8.0"), "dev"),
                r("requests", Some("==2.31"), "dev")
            ]
        );
        assert_eq!(
            rows(
                "pyproject.toml",
                "[project]\ndependencies = [\"httpx>=0.27\"]\n[project.optional-dependencies]\ncli = [\"rich\"]\n[tool.poetry.dependencies]\npython = \"^3.11\"\nfastapi = \"^0.110\"\n"
            ),
            [
                r("httpx", Some(">=0.27"), "runtime"),
                r("rich", None, "optional"),
                r("fastapi", Some("^0.110"), "runtime")
            ]
        );
        assert_eq!(
            rows(
                "pom.xml",
                "<project><dependencyManagement><dependencies><dependency><groupId>m</groupId><artifactId>bom</artifactId></dependency></dependencies></dependencyManagement><dependencies><dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.9</version></dependency><dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13</version><scope>test</scope></dependency></dependencies></project>"
            ),
            [
                r("org.slf4j:slf4j-api", Some("2.0.9"), "runtime"),
                r("junit:junit", Some("4.13"), "dev")
            ]
        );
        assert_eq!(
            rows(
                "app/build.gradle.kts",
                "dependencies {\n    implementation(\"com.squareup.okhttp3:okhttp:4.12.0\")\n    testImplementation(\"junit:junit:4.13.2\")\n    kapt(\"com.google.dagger:dagger-compiler:2.51\")\n}\n"
            ),
            [
                r("com.squareup.okhttp3:okhttp", Some("4.12.0"), "runtime"),
                r("junit:junit", Some("4.13.2"), "dev"),
                r("com.google.dagger:dagger-compiler", Some("2.51"), "build")
            ]
        );
        assert_eq!(
            rows(
                "Gemfile",
                "source 'https://rubygems.org'\ngem 'rails', '~> 7.1'\ngroup :development, :test do\n  gem \"rspec-rails\"\nend\ngem 'pg', '>= 1.1', '< 2.0'\n"
            ),
            [
                r("rails", Some("~> 7.1"), "runtime"),
                r("rspec-rails", None, "dev"),
                r("pg", Some(">= 1.1, < 2.0"), "runtime")
            ]
        );
        assert_eq!(
            rows(
                "composer.json",
                r#"{"require":{"php":">=8.1","monolog/monolog":"^3.0"},"require-dev":{"phpunit/phpunit":"^10"}}"#
            ),
            [
                r("php", Some(">=8.1"), "runtime"),
                r("monolog/monolog", Some("^3.0"), "runtime"),
                r("phpunit/phpunit", Some("^10"), "dev")
            ]
        );
        assert!(rows("Cargo.toml", "not toml [").is_empty());
        assert!(rows("src/main.rs", "fn main() {}").is_empty());
    }
}
