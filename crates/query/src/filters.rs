//! The filters a query takes (language, source type, kind, path glob) as the set of chunk ids
//! they allow, selected through DuckDB.
use crate::Result;
use rustc_hash::FxHashSet;
use trove_base::glob::{expand_glob, glob_regex};
use trove_base::util::sql_lit as lit;

use crate::handle::Bundle;
use crate::options::QueryOptions;

impl Bundle {
    /// `WHERE` conditions on `chunks` (alias `c`) for the filters.
    pub(crate) fn filter_sql(o: &QueryOptions) -> String {
        let mut conds = vec!["TRUE".to_string()];
        let list = |v: &[String]| v.iter().map(|s| lit(s)).collect::<Vec<_>>().join(", ");
        if !o.langs.is_empty() {
            conds.push(format!("c.language IN ({})", list(&o.langs)));
        }
        if !o.types.is_empty() {
            conds.push(format!("c.source_type IN ({})", list(&o.types)));
        }
        if !o.kinds.is_empty() {
            conds.push(format!("c.kind IN ({})", list(&o.kinds)));
        }
        if let Some(g) = &o.path {
            // Checked before a search (`check_filters`); a glob that still fails matches nothing.
            let any = expand_glob(g)
                .unwrap_or_default()
                .iter()
                .map(|p| format!("regexp_full_match(c.path, {})", lit(&glob_regex(p))))
                .collect::<Vec<_>>();
            conds.push(if any.is_empty() {
                "FALSE".to_string()
            } else {
                format!("({})", any.join(" OR "))
            });
        }
        conds.join(" AND ")
    }

    pub(crate) fn has_filters(o: &QueryOptions) -> bool {
        !(o.langs.is_empty() && o.types.is_empty() && o.kinds.is_empty() && o.path.is_none())
    }

    /// The chunk kinds this bundle's chunks have (function, method, section, ...), sorted.
    pub fn kinds(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn()?
            .prepare("SELECT DISTINCT kind FROM chunks ORDER BY kind")?;
        let kinds = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<std::result::Result<_, _>>()?;
        Ok(kinds)
    }

    /// The ids of the chunks that pass the filters, `None` without filters.
    pub(crate) fn allowed(&self, o: &QueryOptions) -> Result<Option<FxHashSet<i64>>> {
        if !Self::has_filters(o) {
            return Ok(None);
        }
        let sql = format!(
            "SELECT chunk_id FROM chunks c WHERE {}",
            Self::filter_sql(o)
        );
        // As Arrow batches: a filter that keeps most of a 1M-chunk bundle returns 1M ids,
        // which row-by-row conversion takes ≈200 ms to deliver.
        let mut stmt = self.conn()?.prepare(&sql)?;
        let mut ids = FxHashSet::default();
        for batch in stmt.query_arrow([])? {
            let col = batch
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .ok_or_else(|| crate::Error::bundle(&self.dir, "chunk_id is not BIGINT"))?;
            ids.extend(col.values().iter().copied());
        }
        Ok(Some(ids))
    }
}
