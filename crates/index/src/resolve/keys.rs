//! The keys definitions are counted by: by name within a language family ([`NameKey`]) and by
//! name within one file or package ([`FileKey`]).
use trove_bundle::resolution::Class;

/// A definition's name within its class and language family: the key of name resolution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NameKey {
    /// Callable or type.
    pub class: Class,
    /// [`language_family`](trove_bundle::resolution::language_family) of the defining file.
    pub family: String,
    /// The definition's name.
    pub name: String,
}

/// A definition's name within one file: the key of resolution through imports. A 64-bit hash of
/// (class, path, name), not the strings, since this map holds every definition of the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileKey(u64);

impl FileKey {
    /// The key of `name` of `class` defined in `path`.
    pub fn new(class: Class, path: &str, name: &str) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        // The class as the character the key always hashed, so keys stay what they were.
        (class.code(), path, name).hash(&mut h);
        FileKey(h.finish())
    }
}
