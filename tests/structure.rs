//! The structural tables: symbols (definitions with kind, lines, parent, visibility) and deps
//! (package manifests), checked exactly on a small repository, and the commands that read them.
use crate::util::{duck, git, index, pq, trove, write};

/// A repository with a definition of each common shape and three kinds of manifest.
fn repo() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "src/lib.rs",
        r#"/// A shape.
pub struct Circle {
    r: f64,
}

impl Circle {
    /// Area of the circle.
    pub fn area(&self) -> f64 {
        3.14 * self.r * self.r
    }
    fn secret(&self) {}
}

pub fn make() -> Circle {
    Circle { r: 1.0 }
}
"#
        .as_bytes(),
    );
    write(
        root,
        "app/main.py",
        r#""""App module."""


class Cart:
    def add(self, item):
        return item


def _helper():
    pass
"#
        .as_bytes(),
    );
    write(
        root,
        "web/util.ts",
        r#"export class Store {
  get(key: string) {
    return key;
  }
  private drop() {}
}

function local(): number {
  return 1;
}
"#
        .as_bytes(),
    );
    write(
        root,
        "shop/order.go",
        r#"package shop

type Order struct{}

func (o *Order) Total() int { return 0 }

func helper() {}
"#
        .as_bytes(),
    );
    write(root, "web/package.json", r#"{"name": "web", "dependencies": {"react": "^18.2.0"}, "devDependencies": {"vitest": "^1.6.0"}}
"#.as_bytes());
    write(
        root,
        "shop/go.mod",
        r#"module example.com/shop

go 1.22

require github.com/google/uuid v1.6.0
"#
        .as_bytes(),
    );
    write(
        root,
        "app/requirements.txt",
        r#"requests>=2.31
flask==3.0.0  # web
"#
        .as_bytes(),
    );
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "structure"]);
    t
}

fn rows(sql: &str) -> Vec<String> {
    duck(sql).into_iter().map(|r| r.join(" | ")).collect()
}

#[test]
fn symbols_and_deps_tables_hold_exactly_what_the_code_declares() {
    let t = repo();
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(t.path(), &b, &[]);
    let got = rows(&format!(
        "SELECT s.path, s.kind, s.symbol_path, s.start_line, s.end_line, s.exported, p.symbol_path \
         FROM {s} s LEFT JOIN {s} p ON p.symbol_id = s.parent_id ORDER BY s.path, s.start_line",
        s = pq(&b, "symbols")
    ));
    assert_eq!(
        got,
        [
            "app/main.py | class | Cart | 4 | 6 | true | NULL",
            "app/main.py | method | Cart > add | 5 | 6 | true | Cart",
            "app/main.py | function | _helper | 9 | 10 | false | NULL",
            "shop/order.go | struct | Order | 3 | 3 | true | NULL",
            "shop/order.go | method | Order > Total | 5 | 5 | true | Order",
            "shop/order.go | function | helper | 7 | 7 | false | NULL",
            "src/lib.rs | struct | Circle | 2 | 4 | true | NULL",
            "src/lib.rs | impl | Circle | 6 | 12 | false | NULL",
            "src/lib.rs | method | Circle > area | 8 | 10 | true | Circle",
            "src/lib.rs | method | Circle > secret | 11 | 11 | false | Circle",
            "src/lib.rs | function | make | 14 | 16 | true | NULL",
            "web/util.ts | class | Store | 1 | 6 | true | NULL",
            "web/util.ts | method | Store > get | 2 | 4 | true | Store",
            "web/util.ts | method | Store > drop | 5 | 5 | false | Store",
            "web/util.ts | function | local | 8 | 10 | false | NULL",
        ]
    );
    // Each definition points at the chunk that holds it, and that chunk's text contains its name.
    let orphans = rows(&format!(
        "SELECT s.symbol_path FROM {} s LEFT JOIN {} c USING (chunk_id) \
         WHERE c.chunk_id IS NULL OR NOT contains(c.content, s.name)",
        pq(&b, "symbols"),
        pq(&b, "chunks")
    ));
    assert!(orphans.is_empty(), "{orphans:?}");
    let deps = rows(&format!(
        "SELECT path, ecosystem, name, version, scope FROM {} ORDER BY path, name",
        pq(&b, "deps")
    ));
    assert_eq!(
        deps,
        [
            "app/requirements.txt | pypi | flask | ==3.0.0 | runtime",
            "app/requirements.txt | pypi | requests | >=2.31 | runtime",
            "shop/go.mod | go | github.com/google/uuid | v1.6.0 | runtime",
            "web/package.json | npm | react | ^18.2.0 | runtime",
            "web/package.json | npm | vitest | ^1.6.0 | dev",
        ]
    );
    let m = crate::util::manifest(&b);
    assert_eq!(m["counts"]["symbols"], 15);
    assert_eq!(m["counts"]["deps"], 5);
    trove().arg("verify").arg(&b).assert().success();
}

fn stdout(args: &[&std::ffi::OsStr], code: i32) -> String {
    let o = trove().args(args).assert().code(code);
    String::from_utf8_lossy(&o.get_output().stdout).into_owned()
}

#[test]
fn symbols_and_deps_commands() {
    let t = repo();
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(t.path(), &b, &[]);
    let bo = b.as_os_str();
    let text = stdout(&["symbols".as_ref(), bo, "area".as_ref()], 0);
    assert_eq!(
        text,
        "src/lib.rs:8-10  method Circle > area\n    pub fn area(&self) -> f64\n    Area of the circle.\n"
    );
    // Path forms and kinds.
    for q in ["Circle.area", "Circle::area", "Circle > area"] {
        let j = stdout(
            &[
                "symbols".as_ref(),
                bo,
                q.as_ref(),
                "--format".as_ref(),
                "jsonl".as_ref(),
            ],
            0,
        );
        let v: serde_json::Value = serde_json::from_str(j.lines().next().unwrap()).unwrap();
        assert_eq!(v["symbol_path"], "Circle > area", "{q}");
        assert_eq!(v["parent"], "Circle");
        assert_eq!(v["docs"], "Area of the circle.");
    }
    let j = stdout(
        &[
            "symbols".as_ref(),
            bo,
            "Circle".as_ref(),
            "--kind".as_ref(),
            "struct".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
        ],
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["start_line"], 2);
    assert_eq!(
        stdout(&["symbols".as_ref(), bo, "noSuchThing".as_ref()], 1),
        ""
    );

    let text = stdout(&["deps".as_ref(), bo], 0);
    assert!(
        text.starts_with("app/requirements.txt\n  pypi     runtime  flask ==3.0.0\n"),
        "{text}"
    );
    let j = stdout(
        &[
            "deps".as_ref(),
            bo,
            "--ecosystem".as_ref(),
            "npm".as_ref(),
            "--scope".as_ref(),
            "dev".as_ref(),
            "--format".as_ref(),
            "jsonl".as_ref(),
        ],
        0,
    );
    let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
    assert_eq!(v["name"], "vitest");
    assert_eq!(v["path"], "web/package.json");
    assert_eq!(
        stdout(
            &[
                "deps".as_ref(),
                bo,
                "--ecosystem".as_ref(),
                "maven".as_ref()
            ],
            1
        ),
        ""
    );
    // The tables are views in `trove sql` too.
    let n = stdout(
        &[
            "sql".as_ref(),
            bo,
            "SELECT count(*) FROM symbols JOIN deps ON false".as_ref(),
            "--format".as_ref(),
            "csv".as_ref(),
        ],
        0,
    );
    assert!(n.contains('0'));
}
