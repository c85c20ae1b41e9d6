//! Closed sets of names stored as strings (in the bundle, the config, language files): the
//! [`named_set!`](crate::named_set) macro that declares one, and the sets more than one crate
//! stores or reads: reference kinds, resolutions and skip reasons.

/// Declares a closed set of names stored as strings (in the bundle, the config, language files):
/// the enum, its stored name, the parse back (an unknown name is said by the caller), and serde
/// as that name, refusing others with the list of choices.
#[macro_export]
macro_rules! named_set {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name the bundle stores.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value a stored name stands for.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        /// Ordered by the stored name, as the rows that hold it are sorted.
        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).ok_or_else(|| {
                    serde::de::Error::custom(format!("{s:?}: choose {}", $crate::sets::choices(Self::ALL.iter().map(|v| v.as_str()))))
                })
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                Self::parse(s).ok_or_else(|| {
                    format!("{s:?}: choose {}", $crate::sets::choices(Self::ALL.iter().map(|v| v.as_str())))
                })
            }
        }
    };
}

/// `"a", "b" or "c"`: the names a closed set accepts, for error messages.
pub fn choices<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => v.join(""),
    }
}

named_set! {
    /// The kind of a reference (`refs.kind`).
    RefKind {
        /// An import statement (its text is the target).
        Import = "import",
        /// A call (the callee's last name segment is the target).
        Call = "call",
        /// A base class.
        Inherits = "inherits",
        /// An implemented interface or trait.
        Implements = "implements",
        /// A type used by name.
        References = "references",
    }
}

named_set! {
    /// How a reference's target definition was found (`refs.resolution`).
    Resolution {
        /// The one definition of that name in the same file.
        File = "file",
        /// The one definition of the imported name in the module file an import names.
        Import = "import",
        /// The one definition of that name in the language family across the bundle.
        Repo = "repo",
        /// A SCIP index's occurrence of the symbol: exact, whatever the names (the target is
        /// the bundle's definition of that SCIP symbol; none when it lies outside the bundle).
        Scip = "scip",
    }
}

named_set! {
    /// Why a file or directory is not indexed (`skipped.reason`).
    SkipReason {
        /// Hidden by .gitignore, .ignore or .troveignore.
        Ignored = "ignored",
        /// A directory the skip rules always leave out (`node_modules`, `.git`, ...).
        ExcludedDir = "excluded-dir",
        /// Matched an `--exclude` glob.
        Excluded = "excluded",
        /// Matched no `--include` glob.
        NotIncluded = "not-included",
        /// A lock file.
        Lockfile = "lockfile",
        /// A minified name, or a line longer than `max_line_bytes`.
        Minified = "minified",
        /// A file that holds secrets by its name (keys, `.env`, ...).
        SecretFile = "secret-file",
        /// Larger than `max_file_bytes`.
        TooLarge = "too-large",
        /// Binary content.
        Binary = "binary",
        /// Not valid UTF-8.
        InvalidUtf8 = "invalid-utf8",
        /// UTF-16 (by its byte-order mark).
        Utf16 = "utf16",
        /// Marked as generated in its first bytes.
        Generated = "generated",
        /// A symbolic link to a file inside the root (indexed where it points).
        Symlink = "symlink",
        /// A symbolic link that leads out of the root.
        SymlinkOutsideRoot = "symlink-outside-root",
        /// A symbolic link that leads nowhere: its target is missing, or links loop.
        SymlinkBroken = "symlink-broken",
        /// Neither a regular file nor a directory.
        NotAFile = "not-a-file",
        /// Could not be read.
        Unreadable = "unreadable",
        /// A file name that is not UTF-8.
        NonUtf8Name = "non-utf8-name",
        /// A nested git repository.
        Submodule = "submodule",
        /// Another trove bundle inside the tree (its `manifest.json` and `views.sql`): an index
        /// built from source, not source.
        Bundle = "bundle",
        /// The worker processing it failed (a bug, counted and said in the summary).
        InternalError = "internal-error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_sets_round_trip_their_stored_names() {
        for k in RefKind::ALL {
            assert_eq!(RefKind::parse(k.as_str()), Some(*k));
        }
        for r in SkipReason::ALL {
            assert_eq!(SkipReason::parse(r.as_str()), Some(*r));
        }
        let mut by_name: Vec<SkipReason> = SkipReason::ALL.to_vec();
        by_name.sort();
        assert!(by_name.windows(2).all(|w| w[0].as_str() < w[1].as_str()));
        for r in Resolution::ALL {
            assert_eq!(Resolution::parse(r.as_str()), Some(*r));
        }
        assert_eq!(RefKind::parse("calls"), None);
        assert_eq!(Resolution::parse(""), None);
    }
}
