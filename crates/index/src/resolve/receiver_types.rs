//! What type a call's receiver is, in one file (`ReceiverTypes`): a parameter's declared type,
//! a variable's assigned one, a field of the holder or of the base type it inherits it from, a
//! module-level variable; read from the file's text with `types`' readers.
use std::cell::{OnceCell, RefCell};

use rustc_hash::{FxHashMap, FxHashSet};
use trove_bundle::resolution::{CALLABLE_KINDS, CODE_KINDS, MAX_BASES, TYPE_KINDS};
use trove_lang::lang::LanguageFile;
use trove_lang::lang::refs::Reference;

use super::file_symbols::FileSymbols;
use super::types::{
    assigned_type, declared_type, field_type, is_ident, jsdoc_param, jsdoc_type, type_name, word_at,
};
use crate::record::{RefKind, SymbolRecord};

/// The types one file's code declares for the names its calls are made on, each read once
/// (per function and name, per type and field, per module-level name).
pub(super) struct ReceiverTypes<'a> {
    /// The file's definitions.
    defs: &'a FileSymbols<'a>,
    /// The file's path.
    path: &'a str,
    /// The file's language.
    lang: Option<&'a LanguageFile>,
    /// The file's text.
    text: &'a str,
    /// Whether the language declares types in JSDoc comments.
    jsdoc: bool,
    /// The file's import statements.
    import_statements: Vec<String>,
    /// The names the file's imports bind (a module, or a name of one); read when first asked.
    imported: OnceCell<FxHashSet<String>>,
    /// The type the code around a call declares for `x`, by (function, `x`), and of a type's
    /// fields, by (type, `field x`): each function's text read once per name.
    known: RefCell<FxHashMap<(i64, String), Option<String>>>,
    /// The file's own statements, outside its definitions ([`ReceiverTypes::module_text`]).
    module_text: OnceCell<String>,
    /// The types of the module's variables, by name.
    module_known: RefCell<FxHashMap<String, Option<String>>>,
}

impl<'a> ReceiverTypes<'a> {
    /// The receiver types of the file at `path` (in `lang`, of text `text`), whose definitions
    /// are `defs` and references `refs`.
    pub(super) fn new(
        defs: &'a FileSymbols<'a>,
        path: &'a str,
        lang: Option<&'a LanguageFile>,
        text: &'a str,
        refs: &[Reference],
    ) -> Self {
        ReceiverTypes {
            defs,
            path,
            lang,
            text,
            jsdoc: lang.is_some_and(|l| l.jsdoc_types),
            import_statements: refs
                .iter()
                .filter(|r| r.kind == RefKind::Import)
                .map(|r| r.target.clone())
                .collect(),
            imported: OnceCell::new(),
            known: RefCell::default(),
            module_text: OnceCell::new(),
            module_known: RefCell::default(),
        }
    }

    /// Whether one of the file's imports binds `x` (a module, or a name of one).
    fn imported(&self, x: &str) -> bool {
        self.imported
            .get_or_init(|| {
                let id = self.lang.map(|l| l.id.as_str());
                let statements: Vec<&str> =
                    self.import_statements.iter().map(String::as_str).collect();
                let aliases = crate::extract::imports::module_aliases(self.path, id, &statements);
                let names = crate::extract::imports::import_map(self.path, id, &statements);
                aliases.into_keys().chain(names.into_keys()).collect()
            })
            .contains(x)
    }

    /// What the file's one callable named `name` returns: its signature's `): T` / `-> T`, else
    /// its JSDoc `@returns {T}`.
    fn returns(&self, name: &str) -> Option<String> {
        let mut it = self
            .defs
            .named(name)
            .filter(|s| CALLABLE_KINDS.contains(&s.symbol.kind.as_str()));
        let (Some(s), None) = (it.next(), it.next()) else {
            return None;
        };
        let sig = s.symbol.signature.as_deref().unwrap_or("");
        let declared = sig.rfind(')').and_then(|at| {
            let after = sig[at + 1..].trim_start();
            let t = after
                .strip_prefix("->")
                .or_else(|| after.strip_prefix(':'))?;
            type_name(t)
        });
        declared
            .or_else(|| {
                self.jsdoc
                    .then(|| {
                        jsdoc_type(
                            self.text,
                            s.symbol.start_byte,
                            &["@returns", "@return"],
                            None,
                        )
                    })
                    .flatten()
            })
            .filter(|t| t.chars().next().is_some_and(char::is_uppercase))
    }

    /// The type function `f` declares for its parameter `x`: in its signature, else (JavaScript)
    /// its JSDoc `@param {T} x`.
    fn param_type(&self, f: &SymbolRecord, x: &str) -> Option<String> {
        f.symbol
            .signature
            .as_deref()
            .and_then(|sig| declared_type(sig, x))
            .or_else(|| {
                self.jsdoc
                    .then(|| jsdoc_param(self.text, f.symbol.start_byte, x))
                    .flatten()
            })
    }

    /// `self.x = x` in a method of `h` whose parameter `x` declares its type (a constructor
    /// keeping what it is given: `def __init__(self, serializer: TaggedJSONSerializer)`), the
    /// type when every such assignment agrees.
    fn field_from_parameter(&self, h: &SymbolRecord, body: &str, field: &str) -> Option<String> {
        let mut found: Option<String> = None;
        for i in word_at(body, field) {
            let Some(rhs) = body[i + field.len()..]
                .trim_start_matches([' ', '\t'])
                .strip_prefix('=')
                .filter(|r| !r.starts_with('='))
            else {
                continue;
            };
            let rhs = rhs.trim_start_matches([' ', '\t']);
            let end = rhs.find(|c: char| !is_ident(c)).unwrap_or(rhs.len());
            let (y, rest) = rhs.split_at(end);
            // The whole right-hand side (to the line's end, `;`, or the end of the class).
            let rest = rest.trim_start_matches([' ', '\t']);
            if y.is_empty() || !(rest.is_empty() || rest.starts_with(['\n', '\r', ';'])) {
                continue;
            }
            // (The method of `h` the assignment is in.)
            let method = self
                .defs
                .up(self.defs.enclosing(h.symbol.start_byte + i))
                .find(|s| {
                    s.parent_id == Some(h.symbol_id) && CODE_KINDS.contains(&s.symbol.kind.as_str())
                });
            let ty = method.and_then(|m| self.param_type(m, y))?;
            if found.as_ref().is_some_and(|f| *f != ty) {
                return None;
            }
            found = Some(ty);
        }
        found
    }

    /// A field of the type `h`: `T x;` / `x: T` in its body, or `self.x = T(...)` /
    /// `this.x = new T()` / `self.x = x` of a typed parameter in its methods.
    fn own_field(&self, h: &SymbolRecord, x: &str) -> Option<String> {
        let returns = |name: &str| self.returns(name);
        self.known
            .borrow_mut()
            .entry((h.symbol_id, format!("field {x}")))
            .or_insert_with(|| {
                let body = self.text.get(h.symbol.start_byte..h.symbol.end_byte)?;
                field_type(body, x).or_else(|| {
                    self.lang.and_then(|l| {
                        l.self_receivers.iter().find_map(|s| {
                            let field = format!("{s}.{x}");
                            assigned_type(body, &field, &returns)
                                .or_else(|| self.field_from_parameter(h, body, &field))
                        })
                    })
                })
            })
            .clone()
    }

    /// A field `x` of the type holding `from`'s code ([`ReceiverTypes::own_field`]), or of the
    /// base type it inherits the field from, when the file defines that base:
    /// `class TagDict(JSONTag)` reads the `self.serializer` JSONTag's `__init__` sets.
    pub(super) fn field_of(&self, from: Option<i64>, x: &str) -> Option<String> {
        let mut h = self.defs.get(self.defs.holder(from))?;
        let mut seen = vec![h.symbol_id];
        loop {
            if let Some(t) = self.own_field(h, x) {
                return Some(t);
            }
            let b = self.defs.one_base(Some(h.symbol_id))?;
            let mut it = self
                .defs
                .named(&b)
                .filter(|s| TYPE_KINDS.contains(&s.symbol.kind.as_str()));
            let (Some(base), None) = (it.next(), it.next()) else {
                return None;
            };
            if seen.contains(&base.symbol_id) || seen.len() > MAX_BASES {
                return None;
            }
            seen.push(base.symbol_id);
            h = base;
        }
    }

    /// The file's own statements, outside its definitions (each top-level function, class and
    /// the like blanked, its lines kept): where a module-level `app = Flask(...)` is.
    fn module_text(&self) -> &str {
        self.module_text.get_or_init(|| {
            let mut t = self.text.as_bytes().to_vec();
            for s in self.defs.symbols().iter().filter(|s| {
                s.parent_id.is_none()
                    && (CODE_KINDS.contains(&s.symbol.kind.as_str())
                        || TYPE_KINDS.contains(&s.symbol.kind.as_str()))
            }) {
                let end = s.symbol.end_byte.min(t.len());
                for b in &mut t[s.symbol.start_byte.min(end)..end] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
            }
            // Whole characters blanked: still UTF-8 (a definition's span is whole characters).
            String::from_utf8(t).unwrap_or_default()
        })
    }

    /// The type the code around a call (in `from`) declares for `x`: a parameter of an
    /// enclosing function (`app: Flask`, `Engine e`, `c *Command`), else its last
    /// `x = Type(...)` in that function; else, unless a function around the call binds `x`
    /// (`bound`), the module's variable; else a field of the holder by its bare name.
    pub(super) fn type_of(&self, from: Option<i64>, x: &str, bound: bool) -> Option<String> {
        let returns = |name: &str| self.returns(name);
        for s in self
            .defs
            .up(from)
            .take_while(|s| CODE_KINDS.contains(&s.symbol.kind.as_str()))
        {
            let t = self
                .known
                .borrow_mut()
                .entry((s.symbol_id, x.to_string()))
                .or_insert_with(|| {
                    self.param_type(s, x).or_else(|| {
                        self.text
                            .get(s.symbol.start_byte..s.symbol.end_byte)
                            .and_then(|b| assigned_type(b, x, &returns))
                    })
                })
                .clone();
            if t.is_some() {
                return t;
            }
        }
        // Else, where no function around the call binds it, the module's variable
        // (`bp = Blueprint(...)` at the top of the file, `@bp.get(...)` in it).
        if !bound
            && let Some(t) = self
                .module_known
                .borrow_mut()
                .entry(x.to_string())
                .or_insert_with(|| assigned_type(self.module_text(), x, &returns))
                .clone()
        {
            return Some(t);
        }
        // Else a field of the holder by its bare name (`db.query()` in a Java method, or a
        // local named as the field it was read from: `const lists = this.lists`) — unless the
        // file imports the name: `from . import cli` makes `cli.load_dotenv()` the module's,
        // whatever `self.cli` holds.
        if self.imported(x) {
            None
        } else {
            self.field_of(from, x)
        }
    }
}
