//! Checks of a query's filters against the bundles it runs on.
use trove_query::{Bundle, QueryOptions};

/// Bad filter input is an error, not an empty result: a malformed `--path` glob, a `--lang` that
/// is no language trove knows nor one in the bundles (custom languages), a `--kind` no bundle has.
pub fn check_filters<'a>(
    bundles: impl IntoIterator<Item = &'a Bundle> + Clone,
    o: &QueryOptions,
) -> anyhow::Result<()> {
    if let Some(g) = &o.path {
        trove_query::check_glob(g)?;
    }
    if !o.langs.is_empty() {
        let reg = trove_lang::lang::Registry::load(&[])?;
        let in_bundles: std::collections::BTreeSet<&str> = bundles
            .clone()
            .into_iter()
            .flat_map(|b| b.manifest.languages.keys().map(String::as_str))
            // Files of no language are counted under "(none)", which no chunk has as its language.
            .filter(|l| *l != "(none)")
            .collect();
        let known = |l: &str| in_bundles.contains(l) || reg.get(l).is_some();
        if let Some(bad) = o.langs.iter().find(|l| !known(l)) {
            anyhow::bail!(
                "unknown language {bad:?} (trove languages lists the ids; in these \
                 bundles: {})",
                in_bundles.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
    }
    if !o.kinds.is_empty() {
        let mut kinds = std::collections::BTreeSet::new();
        for b in bundles {
            kinds.extend(b.kinds()?);
        }
        if let Some(bad) = o.kinds.iter().find(|k| !kinds.contains(*k)) {
            anyhow::bail!(
                "no chunk of kind {bad:?} in the bundle(s) (kinds there: {})",
                kinds.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(())
}
