//! The bundle-wide step: a reference left open in its file resolves against every definition
//! of the bundle (`Definitions`), through the file's import of the name, as a member of the
//! type its receiver is, or by the one definition of its name in the language family.
use trove_bundle::resolution::{ANYWHERE, Class, MAX_BASES, is_base_name};

use super::candidates::{go_package, is_package, ts_alias};
use super::definitions::{Base, Definitions};
use super::keys::{FileKey, NameKey};
use crate::record::{Pending, RefKind, RefRecord, Resolution};

impl Definitions {
    /// A name that `files` (a module's candidates) do not define, through their imports of it:
    /// (the definitions found there, whether one of them names it rather than `*`).
    fn through_reexports(
        &self,
        class: Class,
        files: &[String],
        name: &str,
    ) -> (Vec<&(u32, i64)>, bool) {
        let (mut found, mut named) = (Vec::new(), false);
        for f in files {
            for local in [name, "*"] {
                let Some(entries) = self.reexports.get(&(f.clone(), local.to_string())) else {
                    continue;
                };
                named |= local != "*";
                for (there, targets) in entries {
                    let there = if local == "*" { name } else { there.as_str() };
                    found.extend(
                        targets
                            .iter()
                            .filter_map(|g| self.by_file.get(&FileKey::new(class, g, there))),
                    );
                }
            }
        }
        (found, named)
    }

    /// Notes a type's base type from its `inherits` reference `r` (with its context `p`, when
    /// it was left open in its file): the definition it resolves to, else its name
    /// ([`is_base_name`]; not the type's own: `class EnvironBuilder(werkzeug.test.EnvironBuilder)`
    /// names another module's), looked up by name (`import { Object3D } from "three"`, the
    /// package itself).
    pub fn add_base(&mut self, r: &RefRecord, p: Option<&Pending>) {
        let Some(ty) = r.from_symbol_id.filter(|_| r.kind == RefKind::Inherits) else {
            return;
        };
        let mut r = r.clone();
        if let Some(p) = p {
            self.resolve(&mut r, p);
        }
        let base = match r.target_symbol_id {
            Some(id) if id != ty => Base::Id(id),
            Some(_) => return,
            None if is_base_name(&r.target) && self.type_names.get(&ty) != Some(&r.target) => {
                Base::Name(r.target)
            }
            None => return,
        };
        let b = self.bases.entry(ty).or_default();
        if !b.contains(&base) {
            b.push(base);
        }
    }

    /// The member `name` of the type named `ty` (in `family`), or of the nearest of its base
    /// types that defines one: the types it inherits from ([`Definitions::add_base`]), level by
    /// level (a base's bases next), at most [`MAX_BASES`] levels up. A type by name is every
    /// type of the family of that name for its members, and its bases are followed only where
    /// it is one. The first level where any type defines `name` decides: its one definition,
    /// else none (two bases defining it is a type checker's to choose).
    fn member(&self, family: &str, ty: &str, name: &str) -> Option<i64> {
        let mut level: Vec<Base> = vec![Base::Name(ty.to_string())];
        let mut seen: rustc_hash::FxHashSet<Base> = rustc_hash::FxHashSet::default();
        for depth in 0..=MAX_BASES {
            let hits: Vec<(u32, i64)> = level
                .iter()
                .filter_map(|t| match t {
                    Base::Name(t) => {
                        self.by_member
                            .get(&(family.to_string(), t.clone(), name.to_string()))
                    }
                    Base::Id(t) => self.by_holder.get(&(*t, name.to_string())),
                })
                .copied()
                .collect();
            if !hits.is_empty() {
                return match hits.as_slice() {
                    [(1, id)] => Some(*id),
                    _ => None,
                };
            }
            if depth == MAX_BASES {
                break;
            }
            seen.extend(level.iter().cloned());
            let mut next: Vec<Base> = Vec::new();
            for t in &level {
                let id = match t {
                    Base::Id(id) => *id,
                    Base::Name(t) => {
                        let key = NameKey {
                            class: Class::Type,
                            family: family.to_string(),
                            name: t.clone(),
                        };
                        let Some(&(1, id)) = self.by_name.get(&key) else {
                            continue;
                        };
                        id
                    }
                };
                for b in self.bases.get(&id).into_iter().flatten() {
                    if !seen.contains(b) && !next.contains(b) {
                        next.push(b.clone());
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        None
    }

    /// Resolves `r` (open, with context `p`) against every definition: a name that came through
    /// an import is the import's business — resolved when the module's candidate files define it
    /// exactly once, never by a bundle-wide name (`from os.path import join` is not the repo's
    /// `join`); any other name by the one definition in the family.
    pub fn resolve(&self, r: &mut RefRecord, p: &Pending) {
        if let Some(s) = &r.scip_symbol {
            r.target_symbol_id = trove_bundle::resolution::scip_key(s)
                .and_then(|k| self.by_scip.get(&k))
                .filter(|(n, _)| *n == 1)
                .map(|x| x.1);
            r.resolution = Some(Resolution::Scip);
            return;
        }
        let Some(class) = Class::of(r.kind) else {
            return;
        };
        if let Some(ty) = &p.member_of {
            if let Some(id) = self.member(&p.family, ty, &r.target) {
                r.target_symbol_id = Some(id);
                r.resolution = Some(Resolution::Repo);
                return;
            }
            if !p.method {
                r.target_symbol_id = None;
                r.resolution = None;
                return;
            }
        }
        let class = if p.method { Class::Method } else { class };
        let (id, how) = match &p.import {
            Some((imported, named)) => (
                self.through_import(class, &p.family, imported, named),
                Resolution::Import,
            ),
            None => (self.by_family_name(r, p, class), Resolution::Repo),
        };
        r.target_symbol_id = id;
        r.resolution = id.map(|_| how);
    }

    /// The files an import's candidates `named` stand for: a Go import path's packages, a
    /// TypeScript alias's files, a C# namespace's files, else the file itself; sorted, each once.
    fn import_files(&self, named: &[String]) -> Vec<String> {
        let mut files: Vec<String> = Vec::with_capacity(named.len());
        for f in named {
            if let Some(import) = f.strip_prefix("go:") {
                files.extend(go_package(import, &self.go_modules));
            } else if let Some(spec) = f.strip_prefix("ts:") {
                files.extend(ts_alias(spec, &self.ts_modules));
            } else if let Some(ns) = f.strip_prefix("ns:") {
                files.extend(self.namespaces.get(ns).into_iter().flatten().cloned());
            } else {
                files.push(f.clone());
            }
        }
        files.sort_unstable();
        files.dedup();
        files
    }

    /// The definition of `imported` (of `class`, in `family`) that an import whose candidates are
    /// `named` lands on: the one in the module's files, else the one where they import it from,
    /// else (when the module is the bundle's but says nothing of the name) the one in the family.
    fn through_import(
        &self,
        class: Class,
        family: &str,
        imported: &str,
        named: &[String],
    ) -> Option<i64> {
        let files = self.import_files(named);
        let found: Vec<&(u32, i64)> = files
            .iter()
            .filter_map(|file| self.by_file.get(&FileKey::new(class, file, imported)))
            .collect();
        let (again, named_there) = match found.as_slice() {
            [] => self.through_reexports(class, &files, imported),
            _ => (Vec::new(), false),
        };
        match found.as_slice() {
            [(1, id)] => Some(*id),
            // The module is in the bundle but does not define the name: it imports
            // it (`from .app import Flask` in a package's `__init__.py`, `export *
            // from "./types"`): the one definition where that import says.
            // (The same definition reached twice, `export *` and `export { x }` from one
            // module, is one.)
            [] if !again.is_empty() => {
                let first = again[0];
                again
                    .iter()
                    .all(|x| x.0 == 1 && x.1 == first.1)
                    .then_some(first.1)
            }
            // From outside the bundle (`from markupsafe import escape`): nowhere.
            [] if named_there => None,
            // Neither: the one definition of the name in the family.
            // (A package does not for a call: Go's `max()` not in its package is the
            // builtin, not another package's.)
            [] if files.iter().any(|f| {
                f == ANYWHERE
                    || (self.def_files.contains(f) && !(class == Class::Callable && is_package(f)))
            }) =>
            {
                self.by_name
                    .get(&NameKey {
                        class,
                        family: family.to_string(),
                        name: imported.to_string(),
                    })
                    .filter(|(n, _)| *n == 1)
                    .map(|(_, id)| *id)
            }
            _ => None,
        }
    }

    /// The one definition of `r`'s name (of `class`) in `p`'s family, but for a call on an
    /// object or a base type that would land on the definition the reference is in.
    fn by_family_name(&self, r: &RefRecord, p: &Pending, class: Class) -> Option<i64> {
        let key = NameKey {
            class,
            family: p.family.clone(),
            name: r.target.clone(),
        };
        self.by_name
            .get(&key)
            .filter(|(n, _)| *n == 1)
            .map(|(_, id)| *id)
            // `baseArgs.optString(i)` inside `optString`: a wrapper handing the call
            // to another object, not a method calling itself on one; a base type named
            // as the type itself is another module's.
            .filter(|&id| {
                let base = matches!(r.kind, RefKind::Inherits | RefKind::Implements);
                !((p.method || base) && r.from_symbol_id == Some(id))
            })
    }
}
