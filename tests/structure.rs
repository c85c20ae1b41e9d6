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
    write(
        root,
        "app/run.py",
        r#"from app.main import Cart


def checkout(items):
    cart = Cart()
    for i in items:
        cart.add(i)
    return _helper()


def _helper():
    return 0
"#
        .as_bytes(),
    );
    write(
        root,
        "web/calls.ts",
        r#"import { Store } from "./util";

export function main(): void {
  new Store().get("k");
  _helper();
}
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
            "app/run.py | function | checkout | 4 | 8 | true | NULL",
            "app/run.py | function | _helper | 11 | 12 | false | NULL",
            "shop/order.go | struct | Order | 3 | 3 | true | NULL",
            "shop/order.go | method | Order > Total | 5 | 5 | true | Order",
            "shop/order.go | function | helper | 7 | 7 | false | NULL",
            "src/lib.rs | struct | Circle | 2 | 4 | true | NULL",
            "src/lib.rs | impl | Circle | 6 | 12 | false | NULL",
            "src/lib.rs | method | Circle > area | 8 | 10 | true | Circle",
            "src/lib.rs | method | Circle > secret | 11 | 11 | false | Circle",
            "src/lib.rs | function | make | 14 | 16 | true | NULL",
            "web/calls.ts | function | main | 3 | 6 | true | NULL",
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
            "shop/go.mod | go | example.com/shop | NULL | module",
            "shop/go.mod | go | github.com/google/uuid | v1.6.0 | runtime",
            "web/package.json | npm | react | ^18.2.0 | runtime",
            "web/package.json | npm | vitest | ^1.6.0 | dev",
            // Its own name, for imports of it by name (`web`, `web/...`).
            "web/package.json | npm | web | web/src/index | module",
            "web/package.json | npm | web | web/index | module",
            "web/package.json | npm | web/* | web/src/* | module",
            "web/package.json | npm | web/* | web/* | module",
        ]
    );
    let m = crate::util::manifest(&b);
    assert_eq!(m["counts"]["symbols"], 18);
    assert_eq!(m["counts"]["deps"], 10);
    trove().arg("verify").arg(&b).assert().success();
}

/// Every call of bundle `b`: `path | line | target | where it lands (path:symbol path, or -) |
/// resolution (or -)`, in path and line order.
fn call_rows(b: &std::path::Path) -> Vec<String> {
    rows(&format!(
        "SELECT r.path, r.line, r.target, coalesce(t.path || ':' || t.symbol_path, '-'), \
                coalesce(r.resolution, '-') \
         FROM {r} r LEFT JOIN {s} t ON t.symbol_id = r.target_symbol_id \
         WHERE r.kind = 'call' ORDER BY r.path, r.line, r.target",
        r = pq(b, "refs"),
        s = pq(b, "symbols")
    ))
}

/// Indexes `root` and returns its call rows ([`call_rows`]) of the called names `names`, once
/// the stored resolutions are checked equal to the SQL's over the bundle.
fn calls_named(root: &std::path::Path, names: &[&str]) -> Vec<String> {
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b.bundle");
    index(root, &b, &[]);
    for (stored, sql) in crate::util::refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
    call_rows(&b)
        .into_iter()
        .filter(|r| r.split(" | ").nth(2).is_some_and(|n| names.contains(&n)))
        .collect()
}

/// Calls resolve to the one definition of their name (in the file first, then the repository);
/// a name defined twice elsewhere stays unresolved, and so does a call on an object of a method
/// name the standard library's types share (`store.get()`) unless the code declares the object's
/// type (`cart = Cart()`: `cart.add()` is `Cart`'s `add`).
#[test]
fn refs_resolve_calls_without_guessing() {
    let t = repo();
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(t.path(), &b, &[]);
    let got = rows(&format!(
        "SELECT r.path, r.line, r.kind, r.target, coalesce(f.symbol_path, '-'), \
                coalesce(t.path || ':' || t.symbol_path, '-'), coalesce(r.resolution, '-') \
         FROM {r} r LEFT JOIN {s} f ON f.symbol_id = r.from_symbol_id \
         LEFT JOIN {s} t ON t.symbol_id = r.target_symbol_id ORDER BY r.path, r.line, r.target",
        r = pq(&b, "refs"),
        s = pq(&b, "symbols")
    ));
    assert_eq!(
        got,
        [
            "app/run.py | 1 | import | from app.main import Cart | - | - | -",
            "app/run.py | 5 | call | Cart | checkout | app/main.py:Cart | import",
            "app/run.py | 7 | call | add | checkout | app/main.py:Cart > add | repo",
            "app/run.py | 8 | call | _helper | checkout | app/run.py:_helper | file",
            // Types named where they are used (Go's builtin `int` has no definition here).
            "shop/order.go | 5 | references | Order | Order > Total | shop/order.go:Order | file",
            "shop/order.go | 5 | references | int | Order > Total | - | -",
            "src/lib.rs | 6 | references | Circle | Circle | src/lib.rs:Circle | file",
            "src/lib.rs | 14 | references | Circle | make | src/lib.rs:Circle | file",
            "web/calls.ts | 1 | import | import { Store } from \"./util\"; | - | - | -",
            "web/calls.ts | 4 | call | Store | main | web/util.ts:Store | import",
            "web/calls.ts | 4 | call | get | main | - | -",
            "web/calls.ts | 5 | call | _helper | main | - | -",
        ]
    );
    let m = crate::util::manifest(&b);
    assert_eq!(m["counts"]["refs"], 12);
    assert_eq!(m["counts"]["refs_resolved"], 7);
    // The SQL form of the rules (what a bundle of several segments resolves with) agrees row
    // for row, on file, import, repo and unresolved references alike.
    let both = crate::util::refs_resolved_both_ways(&b);
    assert_eq!(both.len(), 12);
    for (stored, sql) in &both {
        assert_eq!(stored, sql);
    }
    assert!(both.iter().any(|(s, _)| s.ends_with(" import")), "{both:?}");
    // (`repo` edges: receivers_decide_where_a_call_can_land.)
    let bo = b.as_os_str();
    assert_eq!(
        stdout(&["refs".as_ref(), bo, "_helper".as_ref()], 0),
        "app/run.py:8  checkout  call _helper  -> app/run.py:11 _helper  [file]\n\
         web/calls.ts:5  main  call _helper  -> unresolved\n"
    );
    assert_eq!(
        stdout(
            &[
                "refs".as_ref(),
                bo,
                "checkout".as_ref(),
                "--callees".as_ref()
            ],
            0
        ),
        "app/run.py:5  checkout  call Cart  -> app/main.py:4 Cart  [import]\n\
         app/run.py:7  checkout  call add  -> app/main.py:5 Cart > add  [repo]\n\
         app/run.py:8  checkout  call _helper  -> app/run.py:11 _helper  [file]\n"
    );
    let j = stdout(
        &[
            "refs".as_ref(),
            bo,
            "Store".as_ref(),
            "--imports".as_ref(),
            "--format".as_ref(),
            "jsonl".as_ref(),
        ],
        0,
    );
    let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
    assert_eq!(v["path"], "web/calls.ts");
    assert_eq!(v["kind"], "import");
    assert_eq!(stdout(&["refs".as_ref(), bo, "nobody".as_ref()], 1), "");
    // An import names its identifiers as words: `Sto` is only a part of `Store`.
    assert_eq!(
        stdout(
            &["refs".as_ref(), bo, "Sto".as_ref(), "--imports".as_ref()],
            1
        ),
        ""
    );
    // A qualified name means that definition; a bare name in another case finds it as `symbols`
    // does.
    assert_eq!(
        stdout(&["refs".as_ref(), bo, "Cart.add".as_ref()], 0),
        "app/run.py:7  checkout  call add  -> app/main.py:5 Cart > add  [repo]\n"
    );
    assert_eq!(stdout(&["refs".as_ref(), bo, "Basket.add".as_ref()], 1), "");
    assert_eq!(
        stdout(&["refs".as_ref(), bo, "_HELPER".as_ref()], 0),
        stdout(&["refs".as_ref(), bo, "_helper".as_ref()], 0)
    );
    assert_eq!(
        stdout(
            &[
                "refs".as_ref(),
                bo,
                "Cart.checkout".as_ref(),
                "--callees".as_ref()
            ],
            1
        ),
        ""
    );
    assert_eq!(
        stdout(
            &["refs".as_ref(), bo, "Circle".as_ref(), "--uses".as_ref()],
            0
        ),
        "src/lib.rs:6  Circle  references Circle  -> src/lib.rs:2 Circle  [file]\n\
         src/lib.rs:14  make  references Circle  -> src/lib.rs:2 Circle  [file]\n"
    );

    // Resolution is over the whole bundle, so an incremental run that adds a second `Cart` with
    // an `add` un-resolves `cart.add()` (a `Cart`'s `add`, now two) in a file it left in the older
    // segment, while the imported `Cart` stays resolved through its import: the segmented bundle
    // answers as a full build, and compacts into one.
    write(
        t.path(),
        "web/cart.py",
        b"class Cart:\n    def add(self, x):\n        pass\n",
    );
    git(t.path(), &["add", "-A"]);
    git(t.path(), &["commit", "-q", "-m", "second Cart and add"]);
    index(t.path(), &b, &["--since", "auto"]);
    let full = scratch.path().join("full");
    index(t.path(), &full, &[]);
    assert_eq!(
        crate::util::manifest(&b)["segments"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for name in ["add", "Cart", "_helper", "checkout"] {
        for how in ["--callers", "--callees"] {
            let ask = |x: &std::path::Path| {
                let o = trove()
                    .arg("refs")
                    .arg(x)
                    .args([name, how])
                    .output()
                    .unwrap();
                (
                    o.status.code(),
                    String::from_utf8_lossy(&o.stdout).into_owned(),
                )
            };
            assert_eq!(ask(&b), ask(&full), "refs {name} {how}");
        }
    }
    assert_eq!(
        crate::util::compacted_tables(&b),
        crate::util::tables(&full)
    );
    assert_eq!(crate::util::manifest(&full)["counts"]["refs_resolved"], 6);
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
    // A name is literal: SQL's LIKE wildcards in it match nothing but themselves.
    for q in ["%", "_", "a%a", "Circle > %"] {
        assert_eq!(stdout(&["symbols".as_ref(), bo, q.as_ref()], 1), "", "{q}");
    }
    // Bad filter input is exit 2 with a reason, not an empty result.
    let refused = |args: &[&str], says: &str| {
        trove()
            .args(args.iter().map(|a| if *a == "B" { bo } else { a.as_ref() }))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    };
    refused(
        &["symbols", "B", "area", "--kind", "methd"],
        "no definition of kind \"methd\"",
    );
    refused(&["symbols", "B", "area", "-k", "0"], "not in 1..");
    refused(
        &["refs", "B", "area", "-k", "18446744073709551615"],
        "not in 1..",
    );
    refused(
        &["deps", "B", "--ecosystem", "nmp"],
        "unknown ecosystem \"nmp\"",
    );
    refused(&["deps", "B", "--scope", "devv"], "unknown scope \"devv\"");
    refused(&["map", "B", "no/such/dir"], "no indexed files under");
    refused(&["map", "B", "src/lib.rs"], "is a file, not a folder");

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
    // Where imports of a package's own name lead is no dependency: listed when asked for.
    assert!(!text.contains("module"), "{text}");
    let modules = stdout(
        &["deps".as_ref(), bo, "--scope".as_ref(), "module".as_ref()],
        0,
    );
    assert!(modules.contains("module"), "{modules}");
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

#[test]
fn summaries_map_and_sql_macros() {
    let t = repo();
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(t.path(), &b, &[]);
    let files = rows(&format!(
        "SELECT path, summary FROM {} ORDER BY path",
        pq(&b, "files")
    ));
    assert_eq!(
        files,
        [
            "app/main.py | App module.",
            "app/requirements.txt | requests>=2.31",
            "app/run.py | Defines function checkout, function _helper.",
            "shop/go.mod | module example.com/shop",
            "shop/order.go | Defines struct Order, method Total, function helper.",
            // `/// A shape.` documents the struct under it, not the file.
            "src/lib.rs | Defines struct Circle, impl Circle, function make.",
            "web/calls.ts | Defines function main.",
            "web/package.json | Configures dependencies, devDependencies.",
            "web/util.ts | Defines class Store, function local.",
        ]
    );
    let chunks = rows(&format!(
        "SELECT symbol_path, summary FROM {} WHERE path IN ('src/lib.rs', 'app/run.py', 'shop/order.go') \
         AND symbol_path IS NOT NULL ORDER BY path, start_line",
        pq(&b, "chunks")
    ));
    assert_eq!(
        chunks,
        [
            "checkout | Function checkout; calls Cart, add, _helper.",
            "_helper | Function _helper.",
            "Order | Struct Order.",
            "Order > Total | Method Total of Order.",
            "helper | Function helper.",
            "Circle | A shape.",
            "Circle | Impl Circle.",
            "make | Function make.",
        ]
    );

    let bo = b.as_os_str();
    let name = t.path().file_name().unwrap().to_string_lossy().into_owned();
    let map = stdout(&["map".as_ref(), bo, "--depth".as_ref(), "1".as_ref()], 0);
    assert_eq!(
        map,
        format!(
            "{name}/  9 files · 18 symbols · python 2, typescript 2, go 1\n\
             ├── web/  3 files · 5 symbols · typescript 2, json 1\n\
             ├── app/  3 files · 5 symbols · python 2, text 1\n\
             ├── src/  1 files · 5 symbols · rust 1\n\
             └── shop/  2 files · 3 symbols · go 1\n"
        )
    );
    // Drilling in shows files with their summaries; without --depth it fits the screen budget.
    let web = stdout(&["map".as_ref(), bo, "web".as_ref()], 0);
    assert!(web.starts_with("web/  3 files"), "{web}");
    assert!(
        web.contains("├── util.ts  Defines class Store, function local.\n"),
        "{web}"
    );
    let small = stdout(&["map".as_ref(), bo, "--lines".as_ref(), "6".as_ref()], 0);
    assert!(small.lines().count() <= 6, "{small}");
    let j = stdout(
        &["map".as_ref(), bo, "--format".as_ref(), "json".as_ref()],
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["files"], 9);
    assert_eq!(v["symbols"], 18);
    let jl = stdout(
        &["map".as_ref(), bo, "--format".as_ref(), "jsonl".as_ref()],
        0,
    );
    let lines: Vec<serde_json::Value> = jl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1 + 4 + 9, "root, 4 directories, 9 files");
    let util = lines.iter().find(|v| v["path"] == "web/util.ts").unwrap();
    assert_eq!(util["type"], "file");
    assert_eq!(util["summary"], "Defines class Store, function local.");
    stdout(&["map".as_ref(), bo, "nowhere".as_ref()], 2);

    let callers = stdout(
        &[
            "sql".as_ref(),
            bo,
            "SELECT path, line, caller FROM callers('_helper')".as_ref(),
            "--format".as_ref(),
            "csv".as_ref(),
        ],
        0,
    );
    assert_eq!(
        callers,
        "path,line,caller\napp/run.py,8,checkout\nweb/calls.ts,5,main\n"
    );
    let defs = stdout(
        &[
            "sql".as_ref(),
            bo,
            "SELECT path, kind FROM definitions('_helper')".as_ref(),
            "--format".as_ref(),
            "csv".as_ref(),
        ],
        0,
    );
    assert_eq!(
        defs,
        "path,kind\napp/main.py,function\napp/run.py,function\n"
    );
    let callees = stdout(
        &[
            "sql".as_ref(),
            bo,
            "SELECT target, target_path FROM callees('main')".as_ref(),
            "--format".as_ref(),
            "csv".as_ref(),
        ],
        0,
    );
    assert_eq!(
        callees,
        "target,target_path\nStore,web/util.ts\nget,\n_helper,\n"
    );
}

/// A C function's name line (below its return type, where ctags puts it), and a name taken out of a
/// declarator the parser could not split (an attribute macro it does not know).
#[test]
fn c_names_and_name_lines() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "lib/add.c",
        b"static int\nadd(int a, int b)\n{\n    return a + b;\n}\n",
    );
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(t.path(), &b, &[]);
    assert_eq!(
        rows(&format!(
            "SELECT name, start_line, name_line, end_line FROM {}",
            pq(&b, "symbols")
        )),
        ["add | 1 | 2 | 5"]
    );
}

/// Base types: `inherits` / `implements` edges per language, resolved to the one type of that
/// name in the file, else through the file's imports, else in the same language family — a Java
/// class never lands on a Python one.
#[test]
fn inheritance_and_implementation_edges() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "py/models.py",
        b"class Base:\n    pass\n\n\nclass Child(Base, object):\n    pass\n",
    );
    write(
        root,
        "java/Circle.java",
        b"interface Shape {}\nclass Circle extends Base implements Shape, Comparable<Circle> {}\n",
    );
    write(
        root,
        "ts/store.ts",
        b"export interface Named { name: string }\nexport class Store implements Named {\n  name = \"s\";\n}\nclass Cache extends Store {}\n",
    );
    write(
        root,
        "ts/more.ts",
        b"import { Store } from \"./store\";\nexport class Big extends Store {}\n",
    );
    write(
        root,
        "rs/lib.rs",
        b"pub trait Draw {}\npub struct Dot;\nimpl Draw for Dot {}\nimpl std::fmt::Display for Dot {}\n",
    );
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(root, &b, &[]);
    let got = rows(&format!(
        "SELECT r.path, r.line, r.kind, r.target, coalesce(f.symbol_path, '-'), \
                coalesce(t.path || ':' || t.symbol_path, '-'), coalesce(r.resolution, '-') \
         FROM {r} r LEFT JOIN {s} f ON f.symbol_id = r.from_symbol_id \
         LEFT JOIN {s} t ON t.symbol_id = r.target_symbol_id \
         WHERE r.kind IN ('inherits', 'implements') ORDER BY r.path, r.line, r.target",
        r = pq(&b, "refs"),
        s = pq(&b, "symbols")
    ));
    assert_eq!(
        got,
        [
            "java/Circle.java | 2 | inherits | Base | Circle | - | -",
            "java/Circle.java | 2 | implements | Comparable | Circle | - | -",
            "java/Circle.java | 2 | implements | Shape | Circle | java/Circle.java:Shape | file",
            "py/models.py | 5 | inherits | Base | Child | py/models.py:Base | file",
            "py/models.py | 5 | inherits | object | Child | - | -",
            "rs/lib.rs | 3 | implements | Draw | Dot | rs/lib.rs:Draw | file",
            "rs/lib.rs | 4 | implements | Display | Dot | - | -",
            "ts/more.ts | 2 | inherits | Store | Big | ts/store.ts:Store | import",
            "ts/store.ts | 2 | implements | Named | Store | ts/store.ts:Named | file",
            "ts/store.ts | 5 | inherits | Store | Cache | ts/store.ts:Store | file",
        ]
    );
    assert_eq!(
        stdout(
            &[
                "refs".as_ref(),
                b.as_os_str(),
                "Store".as_ref(),
                "--subtypes".as_ref()
            ],
            0
        ),
        "ts/more.ts:2  Big  inherits Store  -> ts/store.ts:2 Store  [import]\n\
         ts/store.ts:5  Cache  inherits Store  -> ts/store.ts:2 Store  [file]\n"
    );
}

/// A query that is a definition's name ranks the chunk defining it first, in every mode — even
/// a method inside a class chunk whose text says the name less often than a doc does.
#[test]
fn name_queries_rank_the_definition_first() {
    let t = crate::util::sample_repo();
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(t.path(), &b, &[]);
    for (q, path, symbol) in [
        ("processPayment", "web/src/users.ts", "UserService"),
        (
            "UserService.processPayment",
            "web/src/users.ts",
            "UserService",
        ),
        ("process_payment", "billing/billing.py", "PaymentService"),
        ("NewServer", "api/server.go", "NewServer"),
    ] {
        for mode in ["hybrid", "bm25", "vector"] {
            let hits =
                crate::util::query_jsonl(&[b.to_str().unwrap(), q, "--mode", mode, "-k", "3"]);
            assert_eq!(hits[0]["path"], path, "{q} ({mode})");
            assert_eq!(hits[0]["symbol_path"], symbol, "{q} ({mode})");
        }
    }
}

/// A name that came through an import is resolved by the import alone: a module outside the
/// repository, or two candidate files that both define it, leave it unresolved.
#[test]
fn imports_decide_or_leave_unresolved() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "lib/util.py", b"def join(a, b):\n    return a + b\n");
    write(root, "pkg/__init__.py", b"class Cart:\n    pass\n");
    write(root, "pkg.py", b"class Cart:\n    pass\n");
    write(
        root,
        "app/run.py",
        b"from os.path import join\nfrom pkg import Cart\n\n\ndef f():\n    return join(Cart(), 1)\n",
    );
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(root, &b, &[]);
    let got = rows(&format!(
        "SELECT target, coalesce(resolution, '-') FROM {} WHERE path = 'app/run.py' AND kind = 'call' ORDER BY target",
        pq(&b, "refs")
    ));
    assert_eq!(got, ["Cart | -", "join | -"]);
}

/// What a call is made on decides where it can land: `self`/`this` (and a Go method's named
/// receiver) on the methods beside the caller; a name bound to a module on that module's
/// definitions; a name whose type the caller declares on that type's member; another object on
/// the one method of the name in the bundle, unless the standard library's types share the name;
/// `super()` and modules outside the bundle nowhere.
#[test]
fn receivers_decide_where_a_call_can_land() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "shop/__init__.py", b"");
    write(
        root,
        "shop/cart.py",
        br#"from shop import pricing
import json


class Cart:
    def add_item(self, item):
        return self.subtotal()

    def subtotal(self):
        return pricing.total_of([])

    def save(self, path):
        json.dump([], path)
        return super().save(path)


class Basket(Cart):
    def subtotal(self):
        return 0


def checkout(cart):
    cart.apply_coupon("X")
    cart.subtotal()
    cart.update({})


def pay(coupon: "Coupon"):
    coupon.update({})
    b = Basket()
    b.subtotal()


class Shop:
    def __init__(self):
        self.basket = Basket()

    def total(self):
        return self.basket.subtotal()
"#,
    );
    write(
        root,
        "shop/pricing.py",
        br#"def total_of(items):
    return sum(items)


class Coupon:
    def apply_coupon(self, code):
        return code

    def update(self, data):
        return data

    def describe_coupon(self):
        return self.inner.describe_coupon()
"#,
    );
    write(
        root,
        "glob/src/lib.rs",
        br#"pub struct Glob;

impl std::str::FromStr for Glob {
    type Err = ();
    fn from_str(s: &str) -> Result<Glob, ()> {
        Ok(Glob)
    }
}

pub fn load(s: &str) -> Glob {
    serde_json::from_str(s).unwrap()
}
"#,
    );
    write(
        root,
        "srv/server.go",
        br#"package srv

type Server struct{}

func (s *Server) Start() { s.listen() }

func (s *Server) listen() {}
"#,
    );
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b.bundle");
    index(root, &b, &[]);
    let got = call_rows(&b);
    assert_eq!(
        got,
        [
            // A path names a module or a type, never an object: not Glob's `from_str`.
            "glob/src/lib.rs | 6 | Ok | - | -",
            "glob/src/lib.rs | 11 | from_str | - | -",
            "glob/src/lib.rs | 11 | unwrap | - | -",
            // self: the method beside the caller, not Basket's.
            "shop/cart.py | 7 | subtotal | shop/cart.py:Cart > subtotal | file",
            // A module the file imports: its function.
            "shop/cart.py | 10 | total_of | shop/pricing.py:total_of | import",
            // A module outside the bundle; super().
            "shop/cart.py | 13 | dump | - | -",
            "shop/cart.py | 14 | save | - | -",
            "shop/cart.py | 14 | super | - | -",
            // An object: the one method of the name; two of them, or a name dict shares: none.
            "shop/cart.py | 23 | apply_coupon | shop/pricing.py:Coupon > apply_coupon | repo",
            "shop/cart.py | 24 | subtotal | - | -",
            "shop/cart.py | 25 | update | - | -",
            // A type the caller declares (an annotation, a constructor assigned): its member,
            // whatever the name.
            "shop/cart.py | 29 | update | shop/pricing.py:Coupon > update | repo",
            "shop/cart.py | 30 | Basket | shop/cart.py:Basket | file",
            "shop/cart.py | 31 | subtotal | shop/cart.py:Basket > subtotal | repo",
            // A field whose type its class assigns (`self.basket = Basket()`).
            "shop/cart.py | 36 | Basket | shop/cart.py:Basket | file",
            "shop/cart.py | 39 | subtotal | shop/cart.py:Basket > subtotal | repo",
            "shop/pricing.py | 2 | sum | - | -",
            // A wrapper handing the call to another object is not calling itself.
            "shop/pricing.py | 13 | describe_coupon | - | -",
            // Go: the method's own receiver is the type.
            "srv/server.go | 5 | listen | srv/server.go:Server > listen | file",
        ]
    );
    for (stored, sql) in crate::util::refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }

    // Resolution is over the whole bundle: an incremental run that adds a second `apply_coupon`
    // un-resolves the call in the file it left in the older segment, as a full build does.
    git(root, &["init", "-q"]);
    crate::util::commit(root, "shop");
    let b = out.path().join("c.bundle");
    index(root, &b, &[]);
    write(
        root,
        "shop/gift.py",
        b"class Gift:\n    def apply_coupon(self, code):\n        return code\n",
    );
    crate::util::commit(root, "gift");
    index(root, &b, &["--since", "auto", "--no-compact"]);
    let full = out.path().join("full.bundle");
    index(root, &full, &[]);
    assert_eq!(
        crate::util::manifest(&b)["segments"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let ask = |x: &std::path::Path| {
        let o = trove()
            .arg("refs")
            .arg(x)
            .arg("apply_coupon")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(
        ask(&b),
        "shop/cart.py:23  checkout  call apply_coupon  -> unresolved\n"
    );
    assert_eq!(ask(&b), ask(&full));
}

/// What a function binds is its own: a bare call of a parameter (Python's, a lambda's,
/// JavaScript's) or of a loop's variable lands nowhere, and a definition inside a function (a class in a test) is no
/// target for another file's call. A dotted call on an imported module (`pkg.helpers.f()`)
/// lands in its submodule, not on a method of the name. The segmented bundle's SQL agrees.
#[test]
fn locals_stay_in_their_function() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "pkg/__init__.py", b"");
    write(
        root,
        "pkg/helpers.py",
        b"def make_response():\n    return 1\n",
    );
    write(
        root,
        "pkg/app.py",
        b"class App:\n    def make_response(self):\n        return 2\n",
    );
    write(root, "lib.py", b"def load(x):\n    return x\n");
    write(
        root,
        "use.py",
        br#"import pkg


def run(load, *, loads: object = None):
    load(1)
    pkg.helpers.make_response()
    return lambda head: head()


def go(client):
    client.head()
    for load in client.loaders:
        load()
"#,
    );
    write(
        root,
        "tests/test_views.py",
        b"def test_head():\n    class Index:\n        def head(self):\n            return 1\n\n    return Index\n",
    );
    write(
        root,
        "web/util.js",
        b"export function pick(xs) {\n  return xs[0];\n}\n",
    );
    write(
        root,
        "web/main.js",
        b"export function choose(pick) {\n  return pick([1]);\n}\n",
    );
    git(root, &["init", "-q"]);
    crate::util::commit(root, "locals");
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b.bundle");
    index(root, &b, &[]);
    let got = call_rows(&b);
    assert_eq!(
        got,
        [
            // Parameters: not lib.py's `load`, not web/util.js's `pick`.
            "use.py | 5 | load | - | -",
            // The submodule's function, not App's method of the name.
            "use.py | 6 | make_response | pkg/helpers.py:make_response | import",
            "use.py | 7 | head | - | -",
            // The one `head` is test_head's own class's.
            "use.py | 11 | head | - | -",
            // A loop's variable.
            "use.py | 13 | load | - | -",
            "web/main.js | 2 | pick | - | -",
        ]
    );
    for (stored, sql) in crate::util::refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
    // A `head` any file can reach: the call lands on it, in a segmented bundle (SQL) as in a
    // full build, the local one still not counted.
    write(
        root,
        "other.py",
        b"class Other:\n    def head(self):\n        return 0\n",
    );
    crate::util::commit(root, "other");
    index(root, &b, &["--since", "auto", "--no-compact"]);
    let full = out.path().join("full.bundle");
    index(root, &full, &[]);
    let ask = |x: &std::path::Path| {
        let o = trove().arg("refs").arg(x).arg("head").output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(
        ask(&b),
        "use.py:7  run  call head  -> unresolved\n\
         use.py:11  go  call head  -> other.py:2 Other > head  [repo]\n"
    );
    assert_eq!(ask(&b), ask(&full));
}

#[test]
fn imports_packages_and_overloads_decide_where_a_name_lands() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    // Go: packages by import path under go.mod's module; a bare name in its own package.
    write(root, "go.mod", b"module example.com/app\n\ngo 1.22\n");
    write(
        root,
        "app.go",
        br#"package app

import (
	"fmt"
	"example.com/app/store"
	c "example.com/app/internal/cache"
)

func Run() {
	store.Open()
	c.Open()
	fmt.Println()
	helper()
	max(1, 2)
}
"#,
    );
    write(root, "helper.go", b"package app\n\nfunc helper() {}\n");
    write(
        root,
        "store/store.go",
        b"package store\n\nfunc Open() {}\n\nfunc helper() {}\n\nfunc Println() {}\n\nfunc max(a, b int) int { return a }\n",
    );
    write(
        root,
        "internal/cache/cache.go",
        b"package cache\n\nfunc Open() {}\n",
    );
    // cgo: the package's C functions are not the Go package's.
    write(
        root,
        "internal/cache/native.c",
        b"int Open(void) { return 0; }\n",
    );
    // Java: an import under the importing file's source root; a class of the own package.
    let java = "src/main/java/org/acme";
    write(
        root,
        &format!("{java}/core/Engine.java"),
        b"package org.acme.core;\n\npublic class Engine {\n    public static Engine create() { return new Engine(); }\n}\n",
    );
    write(
        root,
        &format!("{java}/legacy/Engine.java"),
        b"package org.acme.legacy;\n\npublic class Engine {}\n",
    );
    write(
        root,
        &format!("{java}/web/Router.java"),
        b"package org.acme.web;\n\npublic class Router {}\n",
    );
    write(
        root,
        &format!("{java}/other/Router.java"),
        b"package org.acme.other;\n\npublic class Router {}\n",
    );
    write(
        root,
        &format!("{java}/web/Server.java"),
        br#"package org.acme.web;

import org.acme.core.Engine;

public class Server {
    void run() {
        Engine e = Engine.create();
        new Engine();
        new Router();
    }
}
"#,
    );
    // Rust: `use crate::` paths, a child module's path, a type's path, `super::`.
    write(
        root,
        "rs/src/lib.rs",
        br#"mod a;
mod b;

use crate::a::parse;

pub fn run() {
    parse();
    b::parse();
    crate::b::parse();
    Matcher::new();
    serde_json::from_str("");
}
"#,
    );
    write(
        root,
        "rs/src/a.rs",
        b"pub fn parse() {}\n\npub struct Other;\n\nimpl Other {\n    pub fn new() -> Self { Other }\n}\n",
    );
    write(
        root,
        "rs/src/b.rs",
        b"pub fn parse() {}\n\npub struct Matcher;\n\nimpl Matcher {\n    pub fn new() -> Self { Matcher }\n}\n\npub fn more() {\n    super::run();\n}\n",
    );
    // C#: a namespace the file uses, and its own, decide between same-named classes.
    write(
        root,
        "cs/Core/Engine.cs",
        b"namespace Acme.Core\n{\n    public class Engine\n    {\n        public static Engine Create() { return null; }\n    }\n}\n",
    );
    write(
        root,
        "cs/Legacy/Engine.cs",
        b"namespace Acme.Legacy;\n\npublic class Engine {}\n",
    );
    write(
        root,
        "cs/Legacy/Router.cs",
        b"namespace Acme.Other { public class Router {} }\n",
    );
    write(
        root,
        "cs/Web/Router.cs",
        b"namespace Acme.Web { public class Router {} }\n",
    );
    write(
        root,
        "cs/Web/Server.cs",
        b"using System;\nusing Acme.Core;\n\nnamespace Acme.Web\n{\n    public class Server\n    {\n        void Run() { new Engine(); Engine.Create(); new Router(); }\n    }\n}\n",
    );
    // TypeScript: overload signatures declare one function.
    write(
        root,
        "ts/merge.ts",
        b"export function merge(a: number): number;\nexport function merge(a: string): string;\nexport function merge(a: any): any {\n  return a;\n}\n",
    );
    write(
        root,
        "ts/use.ts",
        b"import { merge } from \"./merge\";\n\nexport function go() {\n  return merge(1);\n}\n",
    );
    // TypeScript: a tsconfig.json alias (with comments and trailing commas), a workspace
    // package by its name, an outside package's name that the bundle also defines.
    write(
        root,
        "ts/tsconfig.json",
        b"{\n  // aliases\n  \"compilerOptions\": {\"baseUrl\": \".\", \"paths\": {\"@lib/*\": [\"lib/*\"],},},\n}\n",
    );
    write(
        root,
        "ts/lib/fmt.ts",
        b"export function fmt(x: number) {\n  return x;\n}\n",
    );
    write(
        root,
        "ts/app/fmt.ts",
        b"export function fmt(x: string) {\n  return x;\n}\n",
    );
    write(
        root,
        "pkgs/util/package.json",
        b"{\"name\": \"@acme/util\"}\n",
    );
    write(
        root,
        "pkgs/util/src/index.ts",
        b"export function clamp(x: number) {\n  return x;\n}\n\nexport function useState() {}\n",
    );
    write(
        root,
        "ts/app/page.ts",
        br#"import { fmt } from "@lib/fmt";
import { clamp } from "@acme/util";
import { useState } from "react";
import { Store } from "./index";

export function show() {
  useState();
  clamp(1);
  new Store();
  return fmt(1);
}
"#,
    );
    // A declaration file's methods are no call's target; JSDoc types a parameter, a function's
    // declared return type a variable, an arrow's annotation its parameter.
    write(
        root,
        "ts/typings/index.d.ts",
        b"export declare class Opt {\n  name(): string;\n}\n",
    );
    write(
        root,
        "ts/lib/opt.js",
        b"class Opt {\n  name() {\n    return 1;\n  }\n}\n",
    );
    write(
        root,
        "ts/lib/other.js",
        b"class Arg {\n  name() {\n    return 2;\n  }\n}\n",
    );
    write(
        root,
        "ts/lib/use.js",
        b"/**\n * @param {Opt} o\n */\n\nfunction show(o) {\n  return o.name();\n}\n",
    );
    write(
        root,
        "ts/app/ret.ts",
        br#"class Help { pad() { return 1; } }
class Other { pad() { return 2; } }
function createHelp(): Help { return new Help(); }
export function run() {
  const h = createHelp();
  h.pad();
  [1].forEach((x: Other) => x.pad());
}
"#,
    );
    // Re-exports: an index that re-exports a module's names, a package `__init__.py` that
    // imports its classes; the name is defined twice in the bundle, so only the chain decides.
    write(root, "ts/app/index.ts", b"export * from \"./store\";\n");
    write(root, "ts/app/store.ts", b"export class Store {}\n");
    write(root, "ts/old/store.ts", b"export class Store {}\n");
    write(
        root,
        "shop/__init__.py",
        b"from .cart import Cart as Cart\nfrom os.path import join\n",
    );
    write(root, "shop/cart.py", b"class Cart:\n    pass\n");
    write(
        root,
        "tests/conftest.py",
        b"class Cart:\n    pass\n\n\ndef join():\n    pass\n",
    );
    write(
        root,
        "tests/test_cart.py",
        b"import shop\nfrom shop import join\n\n\ndef test_cart():\n    shop.Cart()\n    join()\n",
    );
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b.bundle");
    index(root, &b, &[]);
    let got = rows(&format!(
        "SELECT r.path, r.line, r.target, coalesce(t.path || ':' || t.start_line, '-'), \
                coalesce(r.resolution, '-') \
         FROM {r} r LEFT JOIN {s} t ON t.symbol_id = r.target_symbol_id \
         WHERE r.kind = 'call' AND r.path NOT LIKE '%/core/Engine.java' \
           AND r.path NOT LIKE 'rs/src/a.rs' AND r.target <> 'Matcher' \
           AND r.path NOT LIKE 'cs/Core/%' \
         ORDER BY r.path, r.line, r.target",
        r = pq(&b, "refs"),
        s = pq(&b, "symbols")
    ));
    assert_eq!(
        got,
        [
            // The package each import path names; the standard library's is none of ours;
            // `helper` is the own package's, not store's.
            "app.go | 10 | Open | store/store.go:3 | import",
            "app.go | 11 | Open | internal/cache/cache.go:3 | import",
            "app.go | 12 | Println | - | -",
            "app.go | 13 | helper | helper.go:3 | import",
            // Not in its package: the builtin, not another package's `max`.
            "app.go | 14 | max | - | -",
            // The used namespace's Engine (its static method by the type's name), the own
            // namespace's Router.
            "cs/Web/Server.cs | 8 | Create | cs/Core/Engine.cs:5 | repo",
            "cs/Web/Server.cs | 8 | Engine | cs/Core/Engine.cs:3 | import",
            "cs/Web/Server.cs | 8 | Router | cs/Web/Router.cs:1 | import",
            // `crate::a::parse` as `use`d; `b::` the child module; a type's path: its member;
            // another crate's path: nowhere.
            "rs/src/b.rs | 10 | run | rs/src/lib.rs:6 | import",
            "rs/src/lib.rs | 7 | parse | rs/src/a.rs:1 | import",
            "rs/src/lib.rs | 8 | parse | rs/src/b.rs:1 | import",
            "rs/src/lib.rs | 9 | parse | rs/src/b.rs:1 | import",
            "rs/src/lib.rs | 10 | new | rs/src/b.rs:6 | repo",
            "rs/src/lib.rs | 11 | from_str | - | -",
            // The imported Engine, not legacy's; its static method by the type's name; the own
            // package's Router, not other's.
            "src/main/java/org/acme/web/Server.java | 7 | create | src/main/java/org/acme/core/Engine.java:4 | repo",
            "src/main/java/org/acme/web/Server.java | 8 | Engine | src/main/java/org/acme/core/Engine.java:3 | import",
            "src/main/java/org/acme/web/Server.java | 9 | Router | src/main/java/org/acme/web/Router.java:3 | import",
            // Through the re-export chain; an outside module's name is not the bundle's.
            "tests/test_cart.py | 6 | Cart | shop/cart.py:1 | import",
            "tests/test_cart.py | 7 | join | - | -",
            // An alias of the tsconfig.json above; a workspace package; React's own; through
            // `export *`.
            "ts/app/page.ts | 7 | useState | - | -",
            "ts/app/page.ts | 8 | clamp | pkgs/util/src/index.ts:1 | import",
            "ts/app/page.ts | 9 | Store | ts/app/store.ts:1 | import",
            "ts/app/page.ts | 10 | fmt | ts/lib/fmt.ts:1 | import",
            // The declared return type's member; the arrow parameter's type's member.
            "ts/app/ret.ts | 3 | Help | ts/app/ret.ts:1 | file",
            "ts/app/ret.ts | 5 | createHelp | ts/app/ret.ts:3 | file",
            "ts/app/ret.ts | 6 | pad | ts/app/ret.ts:1 | repo",
            "ts/app/ret.ts | 7 | forEach | - | -",
            "ts/app/ret.ts | 7 | pad | ts/app/ret.ts:2 | repo",
            // JSDoc's type, its method in code: not the declaration file's, not Arg's.
            "ts/lib/use.js | 6 | name | ts/lib/opt.js:2 | repo",
            // The first of the overloads (where SCIP's indexers define the symbol).
            "ts/use.ts | 4 | merge | ts/merge.ts:1 | import",
        ]
    );
    for (stored, sql) in crate::util::refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
    // The module rows the resolution went through: go.mod's module, a tsconfig.json's aliases,
    // a package's name.
    assert_eq!(
        rows(&format!(
            "SELECT path, name, coalesce(version, '-') FROM {} WHERE scope = 'module' \
             ORDER BY ALL",
            pq(&b, "deps")
        )),
        [
            "go.mod | example.com/app | -",
            "pkgs/util/package.json | @acme/util | pkgs/util/index",
            "pkgs/util/package.json | @acme/util | pkgs/util/src/index",
            "pkgs/util/package.json | @acme/util/* | pkgs/util/*",
            "pkgs/util/package.json | @acme/util/* | pkgs/util/src/*",
            "ts/tsconfig.json | * | ts/*",
            "ts/tsconfig.json | @lib/* | ts/lib/*",
        ]
    );
}

/// A JSX element of a component is a use of it, as a call is (`<Button />` lands on the
/// imported `Button`, `<UI.Card>` on `Card` in the module `UI` names); an element of the
/// platform's (`<div>`, `<span>`) is none.
#[test]
fn jsx_components_are_used_where_rendered() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "web/App.tsx",
        b"import { Button } from \"./Button\";\nimport * as UI from \"./ui\";\n\nexport function App() {\n  return (\n    <div className=\"app\">\n      <Button label=\"x\" />\n      <UI.Card>\n        <span>hi</span>\n      </UI.Card>\n    </div>\n  );\n}\n",
    );
    write(
        root,
        "web/Button.tsx",
        b"export function Button(props: { label: string }) {\n  return <button>{props.label}</button>;\n}\n",
    );
    write(
        root,
        "web/ui.jsx",
        b"export function Card(props) {\n  return <section>{props.children}</section>;\n}\n",
    );
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(root, &b, &[]);
    let got = call_rows(&b);
    assert_eq!(
        got,
        [
            "web/App.tsx | 7 | Button | web/Button.tsx:Button | import",
            "web/App.tsx | 8 | Card | web/ui.jsx:Card | import",
        ]
    );
    let callers = |name: &str| {
        let o = trove().arg("refs").arg(&b).arg(name).assert().success();
        String::from_utf8_lossy(&o.get_output().stdout).into_owned()
    };
    assert_eq!(
        callers("Button"),
        "web/App.tsx:7  App  call Button  -> web/Button.tsx:1 Button  [import]\n"
    );
    for (stored, sql) in crate::util::refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
}

/// A member the receiver's type does not define is its base type's: `super.f()`, `this.f()` of
/// an inherited method and `s.f()` on a declared type land on the nearest base that defines `f`
/// (levels up, through base types named once in the language family), where a lookup by name
/// alone finds several. Two bases defining it, a cycle of base names and a base named as the
/// type itself (another module's) land nowhere; the SQL of a bundle of several segments agrees.
#[test]
fn inherited_members_land_on_the_base_that_defines_them() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "src/subscription.ts",
        b"export class Subscription {\n  add(x: number) {\n    return x;\n  }\n  unsubscribe() {\n    return 1;\n  }\n}\n",
    );
    write(
        root,
        "src/queue.ts",
        b"export class Queue {\n  add(x: number) {\n    return x;\n  }\n  next(x: number) {\n    return x;\n  }\n  unsubscribe() {\n    return 2;\n  }\n}\n",
    );
    write(
        root,
        "src/subscriber.ts",
        br#"import { Subscription } from "./subscription";

export class Subscriber extends Subscription {
  next(v: number) {
    this.add(v);
  }
  unsubscribe() {
    super.unsubscribe();
  }
}

export class SafeSubscriber extends Subscriber {}

export function feed(s: SafeSubscriber) {
  s.next(1);
  s.add(2);
}
"#,
    );
    write(
        root,
        "app/models.py",
        br#"import werkzeug.test


class Base:
    def save(self):
        return 1

    def load(self):
        return 2


class Other:
    def save(self):
        return 3

    def load(self):
        return 4


class Child(Base):
    def save(self):
        self.load()
        return super().save()


class Left:
    def run(self):
        return 5


class Right:
    def run(self):
        return 6


class Both(Left, Right):
    def go(self):
        return self.run()


class Loop(Loop2):
    pass


class Loop2(Loop):
    def z(self):
        return self.zz()


class EnvironBuilder(werkzeug.test.EnvironBuilder):
    def __init__(self):
        super().__init__()
"#,
    );
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b.bundle");
    index(root, &b, &[]);
    let calls: Vec<String> = call_rows(&b)
        .into_iter()
        .filter(|r| !r.contains("| super |"))
        .collect();
    assert_eq!(
        calls,
        [
            // `self.load()`, `super().save()`: Base's, not Other's.
            "app/models.py | 22 | load | app/models.py:Base > load | repo",
            "app/models.py | 23 | save | app/models.py:Base > save | repo",
            // Two bases define `run`.
            "app/models.py | 38 | run | - | -",
            // A cycle of base names ends.
            "app/models.py | 47 | zz | - | -",
            // `werkzeug.test.EnvironBuilder` is not this EnvironBuilder.
            "app/models.py | 52 | __init__ | - | -",
            // `this.add()`: the base's, not Queue's.
            "src/subscriber.ts | 5 | add | src/subscription.ts:Subscription > add | repo",
            "src/subscriber.ts | 8 | unsubscribe | src/subscription.ts:Subscription > unsubscribe | repo",
            // SafeSubscriber defines neither: a level up, two levels up.
            "src/subscriber.ts | 15 | next | src/subscriber.ts:Subscriber > next | repo",
            "src/subscriber.ts | 16 | add | src/subscription.ts:Subscription > add | repo",
        ]
    );
    let bases = rows(&format!(
        "SELECT r.path, r.line, r.target, coalesce(t.path || ':' || t.symbol_path, '-') \
         FROM {r} r LEFT JOIN {s} t ON t.symbol_id = r.target_symbol_id \
         WHERE r.kind = 'inherits' AND r.path LIKE 'app/%' ORDER BY r.line, r.target",
        r = pq(&b, "refs"),
        s = pq(&b, "symbols")
    ));
    assert_eq!(
        bases,
        [
            "app/models.py | 20 | Base | app/models.py:Base",
            "app/models.py | 36 | Left | app/models.py:Left",
            "app/models.py | 36 | Right | app/models.py:Right",
            "app/models.py | 41 | Loop2 | app/models.py:Loop2",
            "app/models.py | 45 | Loop | app/models.py:Loop",
            // Not the class itself.
            "app/models.py | 50 | EnvironBuilder | -",
        ]
    );
    for (stored, sql) in crate::util::refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
}

/// The base types a member is looked up in are where the `inherits` references resolve, so a
/// base named like other types of the family (two `Field`s, each with a `clean`) is the one the
/// file means; a base its import leaves unresolved (a package outside the bundle that names one
/// of its types) is looked up by its name.
#[test]
fn bases_are_followed_where_their_references_resolve() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "forms/fields.py",
        b"class Field:\n    def clean(self, v):\n        return v\n\n\nclass ChoiceField(Field):\n    pass\n",
    );
    write(
        root,
        "models/fields.py",
        b"class Field:\n    def clean(self, v):\n        return None\n",
    );
    write(
        root,
        "tests/test_choice.py",
        br#"from forms.fields import ChoiceField


class MyChoice(ChoiceField):
    pass


def test_it():
    f = MyChoice()
    return f.clean(1)
"#,
    );
    write(
        root,
        "src/object3d.ts",
        b"export class Object3D {\n  add(x: number) {\n    return x;\n  }\n}\n",
    );
    write(
        root,
        "src/group.ts",
        b"export class Other {\n  add(x: number) {\n    return x;\n  }\n}\n",
    );
    write(
        root,
        "examples/gyro.ts",
        br#"import { Object3D } from "three";

class Gyroscope extends Object3D {}

export function make(g: Gyroscope) {
  g.add(1);
}
"#,
    );
    assert_eq!(
        calls_named(root, &["clean", "add"]),
        [
            // Gyroscope -> Object3D ("three": not the bundle's; its one Object3D by name).
            "examples/gyro.ts | 6 | add | src/object3d.ts:Object3D > add | repo",
            // MyChoice -> ChoiceField (its import) -> Field (the one in ChoiceField's file).
            "tests/test_choice.py | 10 | clean | forms/fields.py:Field > clean | repo",
        ]
    );
}

/// A call on a type the file defines that the type does not define itself is its one base
/// type's (`Index.as_view()`, `class Index(View)`); with no base it is no one's, with several a
/// type checker's. A bare receiver the file imports is that import (`from . import cli`:
/// `cli.load_dotenv()` is the module's), even where the holder has a field of that name; one it
/// does not import may still be a field read into a local (`const lists = this.lists`).
#[test]
fn calls_on_a_type_of_the_file_and_on_an_imported_module() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "pkg/__init__.py", b"");
    write(
        root,
        "pkg/views.py",
        b"class View:\n    @classmethod\n    def as_view(cls, name):\n        return name\n",
    );
    write(
        root,
        "pkg/other.py",
        b"class Other:\n    def as_view(self, name):\n        return name\n",
    );
    write(
        root,
        "pkg/cli.py",
        b"def load_dotenv():\n    return 1\n\n\nclass AppGroup:\n    def load_dotenv(self):\n        return 2\n",
    );
    write(
        root,
        "pkg/app.py",
        br#"from . import cli


class Flask:
    def __init__(self):
        self.cli = cli.AppGroup()

    def run(self):
        cli.load_dotenv()
        return self.cli.load_dotenv()
"#,
    );
    write(
        root,
        "tests/test_views.py",
        br#"from pkg.views import View


class Index(View):
    pass


class Plain:
    pass


class Two(View, Plain):
    pass


def test_it():
    Index.as_view("a")
    Plain.as_view("b")
    Two.as_view("c")
"#,
    );
    write(
        root,
        "src/chain.ts",
        b"export class ChainMap {\n  get(k: string) {\n    return k;\n  }\n}\n\nexport class Cache {\n  get(k: string) {\n    return k;\n  }\n}\n",
    );
    write(
        root,
        "src/lists.ts",
        br#"import { ChainMap } from "./chain";

export class Lists {
  lists: ChainMap;
  constructor() {
    this.lists = new ChainMap();
  }
  get(k: string) {
    const lists = this.lists;
    return lists.get(k);
  }
}
"#,
    );
    assert_eq!(
        calls_named(root, &["as_view", "load_dotenv", "get"]),
        [
            // The module's function, not the field's method of that name.
            "pkg/app.py | 9 | load_dotenv | pkg/cli.py:load_dotenv | import",
            "pkg/app.py | 10 | load_dotenv | pkg/cli.py:AppGroup > load_dotenv | repo",
            "src/lists.ts | 10 | get | src/chain.ts:ChainMap > get | repo",
            // Index's base's; Plain names no base; Two names two.
            "tests/test_views.py | 17 | as_view | pkg/views.py:View > as_view | repo",
            "tests/test_views.py | 18 | as_view | - | -",
            "tests/test_views.py | 19 | as_view | - | -",
        ]
    );
}

/// A variable the module assigns (`site = AdminSite()`, `const _v = new Vector3()`) types the
/// calls on it at module level and in the functions that do not bind the name themselves; a
/// parameter, a local or an arrow's parameter of that name is another value.
#[test]
fn module_variables_type_the_calls_that_see_them() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "pkg/site.py",
        b"class AdminSite:\n    def register(self, m):\n        return m\n\n\nclass Other:\n    def register(self, m):\n        return m\n",
    );
    write(
        root,
        "app/admin.py",
        br#"from pkg.site import AdminSite

site = AdminSite()
site.register(1)


def setup(site):
    site.register(2)


def later():
    site.register(3)


def local():
    site = make()
    site.register(4)
"#,
    );
    write(
        root,
        "src/vector3.js",
        b"export class Vector3 {\n  copy(v) {\n    return v;\n  }\n}\n\nexport class Box3 {\n  copy(b) {\n    return b;\n  }\n}\n",
    );
    write(
        root,
        "src/scratch.js",
        br#"import { Vector3 } from "./vector3.js";
const _v = new Vector3();
export function move(p) {
  return _v.copy(p);
}
export function each(ps) {
  return ps.map((_v) => _v.copy(1));
}
"#,
    );
    assert_eq!(
        calls_named(root, &["register", "copy"]),
        [
            "app/admin.py | 4 | register | pkg/site.py:AdminSite > register | repo",
            // `setup`'s own parameter.
            "app/admin.py | 8 | register | - | -",
            "app/admin.py | 12 | register | pkg/site.py:AdminSite > register | repo",
            // `local`'s own variable.
            "app/admin.py | 17 | register | - | -",
            "src/scratch.js | 4 | copy | src/vector3.js:Vector3 > copy | repo",
            // The arrow's parameter.
            "src/scratch.js | 7 | copy | - | -",
        ]
    );
}

/// A field a constructor keeps from a parameter whose type it declares (`self.serializer =
/// serializer` with `serializer: Serializer`, a JSDoc `@param {Audio} audio`) has that type, in
/// the class and in the file's classes that inherit it.
#[test]
fn fields_a_constructor_keeps_and_a_base_declares() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "pkg/tag.py",
        br#"class Serializer:
    def tag(self, v):
        return v


class Other:
    def tag(self, v):
        return None


class JSONTag:
    def __init__(self, serializer: Serializer) -> None:
        self.serializer = serializer


class TagDict(JSONTag):
    def to_json(self, value):
        return self.serializer.tag(value)
"#,
    );
    write(
        root,
        "src/audio.js",
        b"export class Audio {\n  play() {\n    return 1;\n  }\n}\n\nexport class Video {\n  play() {\n    return 2;\n  }\n}\n",
    );
    write(
        root,
        "src/helper.js",
        br#"import { Audio } from "./audio.js";
class AudioManager {
  /**
   * @param {Audio} audio
   */
  constructor(audio) {
    this.audio = audio;
  }
  start() {
    return this.audio.play();
  }
}
"#,
    );
    assert_eq!(
        calls_named(root, &["tag", "play"]),
        [
            "pkg/tag.py | 18 | tag | pkg/tag.py:Serializer > tag | repo",
            "src/helper.js | 10 | play | src/audio.js:Audio > play | repo",
        ]
    );
}

/// An optional or asserted step (`this.source?.subscribe()`, `s!.subscribe()`) is the same
/// object as without it.
#[test]
fn optional_and_asserted_receivers_are_the_object() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "src/obs.ts",
        b"export class Observable {\n  subscribe() {\n    return 1;\n  }\n}\n\nexport class Other {\n  subscribe() {\n    return 2;\n  }\n}\n",
    );
    write(
        root,
        "src/subject.ts",
        br#"import { Observable } from "./obs";

export class Subject {
  source: Observable | undefined;
  run(s?: Observable) {
    this.source?.subscribe();
    return s!.subscribe();
  }
}
"#,
    );
    assert_eq!(
        calls_named(root, &["subscribe"]),
        [
            "src/subject.ts | 6 | subscribe | src/obs.ts:Observable > subscribe | repo",
            "src/subject.ts | 7 | subscribe | src/obs.ts:Observable > subscribe | repo",
        ]
    );
}

/// A bare call of a function defined in a function around it lands on the innermost such
/// definition (`file`), however many functions of the file define one of that name; at module
/// level such a name is no one's.
#[test]
fn nested_functions_are_called_where_they_are_defined() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "tests/test_views.py",
        br#"def test_one(app):
    def index():
        return 1

    assert index() == 1


def test_two(app):
    def index():
        def inner():
            return 2

        return inner()

    def other():
        return index()

    assert other() == 2


def test_three():
    return index()
"#,
    );
    write(
        root,
        "src/run.js",
        b"function outer() {\n  function step() {\n    return 1;\n  }\n  return step();\n}\n\nfunction again() {\n  function step() {\n    return 2;\n  }\n  return step();\n}\n",
    );
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b.bundle");
    index(root, &b, &[]);
    let lines = |path: &str| {
        rows(&format!(
            "SELECT r.line, r.target, coalesce(t.start_line::VARCHAR, '-'), \
                    coalesce(r.resolution, '-') \
             FROM {r} r LEFT JOIN {s} t ON t.symbol_id = r.target_symbol_id \
             WHERE r.kind = 'call' AND r.path = '{path}' ORDER BY r.line",
            r = pq(&b, "refs"),
            s = pq(&b, "symbols")
        ))
    };
    assert_eq!(
        lines("tests/test_views.py"),
        [
            "5 | index | 2 | file",
            "13 | inner | 10 | file",
            // From a function beside it, in the function around both.
            "16 | index | 9 | file",
            "18 | other | 15 | file",
            "22 | index | - | -",
        ]
    );
    assert_eq!(
        lines("src/run.js"),
        ["5 | step | 2 | file", "12 | step | 9 | file"]
    );
    for (stored, sql) in crate::util::refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
}
