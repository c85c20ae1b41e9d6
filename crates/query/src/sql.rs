//! SQL over a bundle: the views of [`super::Bundle`] plus search macros, and result formatting.
//!
//! `trove_tokens(text)` (Rust, registered on the connection: the index tokenizer itself, so
//! identifiers are whole and split on `_`/case, lower-cased, for any script, each token once),
//! macros `bm25_search(query, k)` (a table: chunk_id, path, start_line,
//! end_line, kind, symbol_path, score — BM25 with the manifest's k1, b, avgdl, n_docs) and
//! `similar_chunks(chunk_id, k)` (cosine over the chunks' first vectors), and
//! `vector_search(query, k)` (the cosine of the query's vector with each chunk's best window, as
//! the vector arm scores). The scalar function `trove_embed(text)` (Rust, registered on the
//! connection) turns text into that vector exactly as `trove query --mode vector` does.
use std::sync::Arc;

use duckdb::arrow::array::{
    Array, ArrayRef, Float32Builder, ListBuilder, StringArray, StringBuilder,
};
use duckdb::arrow::datatypes::{DataType, Field};
use duckdb::arrow::record_batch::RecordBatch;
use duckdb::types::Value;
use duckdb::vscalar::{ArrowFunctionSignature, VArrowScalar};

use super::{Bundle, QueryEmbedder};
use crate::Result;

/// `trove_embed(VARCHAR) -> FLOAT[]`: the bundle's query vector of a text (NULL when none of its
/// terms is in the bundle). Its state is `None` when this build cannot run the bundle's embedder,
/// and then every call fails with the reason.
struct TroveEmbed;

impl VArrowScalar for TroveEmbed {
    type State = Option<Arc<std::result::Result<QueryEmbedder, String>>>;

    fn invoke(
        state: &Self::State,
        input: RecordBatch,
    ) -> std::result::Result<ArrayRef, Box<dyn std::error::Error>> {
        let embedder = match state.as_deref() {
            Some(Ok(e)) => e,
            Some(Err(why)) => return Err(why.clone().into()),
            None => return Err("trove_embed has no bundle".into()),
        };
        let texts = input
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or("trove_embed takes text")?;
        let mut out = ListBuilder::new(Float32Builder::new());
        for i in 0..texts.len() {
            let v = if texts.is_null(i) {
                None
            } else {
                embedder.embed(texts.value(i))?
            };
            match v {
                Some(v) => {
                    out.values().append_slice(&v);
                    out.append(true);
                }
                None => out.append(false),
            }
        }
        Ok(Arc::new(out.finish()))
    }

    fn signatures() -> Vec<ArrowFunctionSignature> {
        vec![ArrowFunctionSignature::exact(
            vec![DataType::Utf8],
            DataType::List(Arc::new(Field::new("item", DataType::Float32, true))),
        )]
    }
}

/// `trove_tokens(VARCHAR) -> VARCHAR[]`: the BM25 tokens of a text as the index tokenized each
/// chunk (the same Rust function, words longer than the bundle's `bm25.max_token_len` dropped),
/// each token once, in order of first appearance. Registered rather than written in SQL: a
/// regular expression cannot say which characters Rust's `is_alphanumeric`, `is_lowercase` and
/// `to_lowercase` take (combining marks, circled letters, `İ`).
struct TroveTokens;

impl VArrowScalar for TroveTokens {
    type State = usize;

    fn invoke(
        max_len: &Self::State,
        input: RecordBatch,
    ) -> std::result::Result<ArrayRef, Box<dyn std::error::Error>> {
        let texts = input
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or("trove_tokens takes text")?;
        let mut out = ListBuilder::new(StringBuilder::new());
        let mut seen = rustc_hash::FxHashSet::default();
        for i in 0..texts.len() {
            if texts.is_null(i) {
                out.append(false);
                continue;
            }
            seen.clear();
            trove_bundle::tokenizer::tokenize(texts.value(i), *max_len, |t| {
                if seen.insert(t.to_string()) {
                    out.values().append_value(t);
                }
            });
            out.append(true);
        }
        Ok(Arc::new(out.finish()))
    }

    fn signatures() -> Vec<ArrowFunctionSignature> {
        vec![ArrowFunctionSignature::exact(
            vec![DataType::Utf8],
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        )]
    }
}

/// Table macros over the structural tables: where a name is defined, who calls it, what it calls.
const STRUCTURE_MACROS: &str = "
CREATE MACRO definitions(n) AS TABLE
  SELECT path, start_line, end_line, kind, symbol_path, signature, exported, symbol_id
  FROM symbols WHERE name = n ORDER BY path, start_line;
CREATE MACRO callers(n) AS TABLE
  SELECT r.path, r.line, f.symbol_path AS caller, r.target_symbol_id, r.resolution
  FROM refs r LEFT JOIN symbols f ON f.symbol_id = r.from_symbol_id
  WHERE r.kind = 'call' AND r.target = n ORDER BY r.path, r.line;
CREATE MACRO callees(n) AS TABLE
  SELECT r.path, r.line, r.target, t.path AS target_path, t.start_line AS target_line, r.resolution
  FROM refs r JOIN symbols f ON f.symbol_id = r.from_symbol_id
  LEFT JOIN symbols t ON t.symbol_id = r.target_symbol_id
  WHERE r.kind = 'call' AND f.name = n ORDER BY r.path, r.line;
";

impl Bundle {
    /// [`Bundle::cache_refs`] when `sql` may read the `refs` view (names it, or the macros over
    /// it): only then is its resolution worth writing to the cache.
    pub fn cache_refs_for(&self, sql: &str) {
        if self.manifest.segments.len() < 2 {
            return;
        }
        let sql = sql.to_ascii_lowercase();
        if ["refs", "callers", "callees"]
            .iter()
            .any(|w| sql.contains(w))
        {
            self.cache_refs();
        }
    }

    /// Creates the search macros on this bundle's connection.
    pub fn create_macros(&self) -> Result<()> {
        let embedder = self.query_embedder().map_err(|e| {
            format!("trove_embed cannot run: {e} (bm25_search and similar_chunks still work)")
        });
        self.conn()?
            .register_scalar_function_with_state::<TroveEmbed>(
                "trove_embed",
                &Some(Arc::new(embedder)),
            )?;
        let b = &self.manifest.bm25;
        self.conn()?
            .register_scalar_function_with_state::<TroveTokens>("trove_tokens", &b.max_token_len)?;
        let dim = self.manifest.embedder.dim;
        let sql = format!(
            "CREATE MACRO bm25_search(q, k := 10) AS TABLE
               WITH qt AS (SELECT unnest(trove_tokens(q)) AS term),
                    t AS (SELECT term, ln(1 + ({n} - df + 0.5) / (df + 0.5)) AS idf FROM terms SEMI JOIN qt USING (term)),
                    s AS (SELECT p.segment, p.chunk_ord, sum(t.idf * p.tf * ({k1} + 1) / (p.tf + {k1} * (1 - {b} + {b} * c.token_len / {avgdl}))) AS score
                          FROM postings p JOIN t USING (term) JOIN chunks c USING (segment, chunk_ord) GROUP BY p.segment, p.chunk_ord)
               SELECT c.chunk_id, c.path, c.start_line, c.end_line, c.kind, c.symbol_path, s.score
               FROM s JOIN chunks c USING (segment, chunk_ord) ORDER BY s.score DESC, c.chunk_id LIMIT k;
             CREATE MACRO similar_chunks(id, k := 10) AS TABLE
               WITH e AS (SELECT chunk_id, embedding::FLOAT[{dim}] AS v FROM embeddings),
                    q AS (SELECT v FROM e WHERE chunk_id = id)
               SELECT c.chunk_id, c.path, c.start_line, c.end_line, c.kind, c.symbol_path,
                      array_cosine_similarity(e.v, q.v) AS similarity
               FROM e, q JOIN chunks c ON c.chunk_id = e.chunk_id WHERE e.chunk_id <> id
               ORDER BY similarity DESC, c.chunk_id LIMIT k;
             CREATE MACRO vector_search(q, k := 10) AS TABLE
               WITH qv AS (SELECT trove_embed(q)::FLOAT[{dim}] AS v),
                    e AS (SELECT chunk_id, embedding::FLOAT[{dim}] AS v, windows::FLOAT[{dim}][] AS w FROM embeddings),
                    s AS (SELECT e.chunk_id,
                                 greatest(array_cosine_similarity(e.v, qv.v),
                                          list_max(list_transform(e.w, lambda x: array_cosine_similarity(x, qv.v)))) AS similarity
                          FROM e, qv WHERE qv.v IS NOT NULL)
               SELECT c.chunk_id, c.path, c.start_line, c.end_line, c.kind, c.symbol_path, s.similarity
               FROM s JOIN chunks c USING (chunk_id) WHERE s.similarity > 0
               ORDER BY s.similarity DESC, c.chunk_id LIMIT k;",
            n = b.n_docs,
            k1 = b.k1,
            b = b.b,
            avgdl = b.avgdl.max(1e-9),
        );
        self.conn()?.execute_batch(&sql)?;
        self.conn()?.execute_batch(STRUCTURE_MACROS)?;
        Ok(())
    }

    /// Runs one statement; returns its column names and its result as Arrow batches (every
    /// DuckDB type, `trove sql` formats them with [`Cells`]).
    pub fn run_sql_arrow(&self, sql: &str) -> Result<(Vec<String>, Vec<RecordBatch>)> {
        self.cache_refs_for(sql);
        let mut stmt = self.conn()?.prepare(sql)?;
        let stream = stmt.stream_arrow([])?;
        let schema = stream.get_schema();
        let batches = stream.collect::<duckdb::Result<Vec<_>>>()?;
        let names = schema.fields().iter().map(|f| f.name().clone()).collect();
        Ok((names, batches))
    }

    /// Runs one statement; returns column names and rows.
    pub fn run_sql(&self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Value>>)> {
        self.cache_refs_for(sql);
        let mut stmt = self.conn()?.prepare(sql)?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        let mut names = Vec::new();
        while let Some(row) = rows.next()? {
            let stmt = row.as_ref();
            if names.is_empty() {
                names = stmt.column_names();
            }
            let mut v = Vec::with_capacity(stmt.column_count());
            for i in 0..stmt.column_count() {
                v.push(row.get::<_, Value>(i)?);
            }
            out.push(v);
        }
        drop(rows);
        if names.is_empty() {
            names = stmt.column_names();
        }
        Ok((names, out))
    }
}

/// Splits a script into statements at `;` outside quotes and comments (`-- ...` to the end of
/// the line, `/* ... */`). A statement that is only comments is dropped, so `SELECT 1; -- done`
/// is one statement and a script of comments none.
pub fn split_statements(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut code = false;
    let mut chars = script.chars().peekable();
    let mut push = |cur: &mut String, code: &mut bool| {
        if *code {
            out.push(cur.trim().to_string());
        }
        cur.clear();
        *code = false;
    };
    while let Some(ch) = chars.next() {
        match ch {
            '\'' | '"' => {
                code = true;
                cur.push(ch);
                // A doubled quote inside is an escaped one: it closes and reopens.
                for c in chars.by_ref() {
                    cur.push(c);
                    if c == ch {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                cur.push(ch);
                for c in chars.by_ref() {
                    cur.push(c);
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                cur.push(ch);
                cur.push(chars.next().unwrap_or('*'));
                let mut prev = ' ';
                for c in chars.by_ref() {
                    cur.push(c);
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            ';' => push(&mut cur, &mut code),
            c => {
                code |= !c.is_whitespace();
                cur.push(c);
            }
        }
    }
    push(&mut cur, &mut code);
    out
}

/// One result column, ready to print cell by cell: its NULLs and its Arrow formatter are worked
/// out once per column (per batch), not once per cell.
pub struct Cells<'a> {
    col: &'a dyn Array,
    /// The column's logical NULLs (an untyped NULL column has no null buffer: every cell is).
    nulls: Option<duckdb::arrow::buffer::NullBuffer>,
    /// Arrow's formatter, for the types that are not strings (built once, `None` if Arrow
    /// cannot format the type).
    format: Option<duckdb::arrow::util::display::ArrayFormatter<'a>>,
    /// The cells' text where Arrow has no formatter of the type itself: a timestamp with a
    /// time zone named, not an offset (`TIMESTAMPTZ`, which DuckDB hands over as UTC instants
    /// labelled `UTC` or the session's zone), written as the UTC instant (`2024-01-02T03:04:05Z`).
    zoned: Option<Vec<String>>,
    /// A struct's fields, as columns of their own.
    fields: Vec<Cells<'a>>,
}

impl<'a> Cells<'a> {
    /// The cells of `col`.
    pub fn new(col: &'a dyn Array) -> Self {
        use duckdb::arrow::util::display::{ArrayFormatter, FormatOptions};
        let options = FormatOptions::default().with_null("NULL");
        let format = match col.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => None,
            _ => ArrayFormatter::try_new(col, &options).ok(),
        };
        use duckdb::arrow::array::AsArray;
        // Where a zone label (here or inside a list, struct or map) leaves Arrow without a
        // formatter, the same instants labelled `+00:00`, an offset it formats by itself (a cast
        // to the zone's local time would need a time-zone database Arrow is built without): the
        // UTC instant whatever zone labels the column (`2024-01-02T03:04:05Z`).
        let zoned = match utc_labelled(col.data_type()) {
            Some(t) if format.is_none() => retyped(col.to_data(), t)
                .map(duckdb::arrow::array::make_array)
                .and_then(|p| {
                    let f = ArrayFormatter::try_new(p.as_ref(), &options).ok()?;
                    Some((0..p.len()).map(|i| f.value(i).to_string()).collect())
                }),
            _ => None,
        };
        let fields = match col.data_type() {
            DataType::Struct(_) => col
                .as_struct()
                .columns()
                .iter()
                .map(|c| Cells::new(c.as_ref()))
                .collect(),
            _ => Vec::new(),
        };
        Cells {
            col,
            nulls: col.logical_nulls(),
            format,
            zoned,
            fields,
        }
    }

    /// Whether cell `i` is NULL.
    pub fn is_null(&self, i: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(i))
    }

    /// Cell `i` as display text: strings as they are, NULL as `NULL`, the rest as Arrow writes
    /// them (`0.5`, `2024-01-02`, `2024-01-02T03:04:05`, `NaN`, `[1, 2]`, `{k: 1}`).
    pub fn text(&self, i: usize) -> String {
        use duckdb::arrow::array::AsArray;
        if self.is_null(i) {
            return "NULL".into();
        }
        let col = self.col;
        match col.data_type() {
            DataType::Utf8 => col.as_string::<i32>().value(i).to_string(),
            DataType::LargeUtf8 => col.as_string::<i64>().value(i).to_string(),
            DataType::Utf8View => col.as_string_view().value(i).to_string(),
            t => match (&self.format, &self.zoned) {
                (Some(f), _) => f.value(i).to_string(),
                (None, Some(z)) => z[i].clone(),
                (None, None) => format!("({t} value)"),
            },
        }
    }

    /// Cell `i` as JSON: numbers as numbers (NaN and the infinities as the strings `NaN`,
    /// `Infinity`, `-Infinity`), whole decimals (HUGEINT) as numbers where they fit 64 bits,
    /// other decimals as numbers, lists as arrays, structs as objects, maps as objects (keys as
    /// text), anything else (dates, times, intervals...) as its text, as [`Cells::text`] writes it.
    pub fn json(&self, i: usize) -> serde_json::Value {
        use duckdb::arrow::array::AsArray;
        use duckdb::arrow::datatypes as t;
        use serde_json::{Value as J, json};
        if self.is_null(i) {
            return J::Null;
        }
        let col = self.col;
        let float = |f: f64, shown: J| {
            if f.is_finite() {
                shown
            } else if f.is_nan() {
                json!("NaN")
            } else if f > 0.0 {
                json!("Infinity")
            } else {
                json!("-Infinity")
            }
        };
        // A list's (or map's) values: one cell's, as a column of their own.
        let all = |a: &dyn Array| {
            let c = Cells::new(a);
            J::Array((0..a.len()).map(|j| c.json(j)).collect())
        };
        match col.data_type() {
            DataType::Null => J::Null,
            DataType::Boolean => json!(col.as_boolean().value(i)),
            DataType::Int8 => json!(col.as_primitive::<t::Int8Type>().value(i)),
            DataType::Int16 => json!(col.as_primitive::<t::Int16Type>().value(i)),
            DataType::Int32 => json!(col.as_primitive::<t::Int32Type>().value(i)),
            DataType::Int64 => json!(col.as_primitive::<t::Int64Type>().value(i)),
            DataType::UInt8 => json!(col.as_primitive::<t::UInt8Type>().value(i)),
            DataType::UInt16 => json!(col.as_primitive::<t::UInt16Type>().value(i)),
            DataType::UInt32 => json!(col.as_primitive::<t::UInt32Type>().value(i)),
            DataType::UInt64 => json!(col.as_primitive::<t::UInt64Type>().value(i)),
            DataType::Float32 => {
                let f = col.as_primitive::<t::Float32Type>().value(i);
                float(f64::from(f), json!(f))
            }
            DataType::Float64 => {
                let f = col.as_primitive::<t::Float64Type>().value(i);
                float(f, json!(f))
            }
            DataType::Utf8 => json!(col.as_string::<i32>().value(i)),
            DataType::LargeUtf8 => json!(col.as_string::<i64>().value(i)),
            DataType::Utf8View => json!(col.as_string_view().value(i)),
            DataType::Decimal128(_, 0) => {
                let v = col.as_primitive::<t::Decimal128Type>().value(i);
                i64::try_from(v).map_or_else(|_| json!(v.to_string()), |n| json!(n))
            }
            // A DECIMAL with a fraction as a JSON number (as DuckDB's own JSON writes it).
            DataType::Decimal128(..) | DataType::Decimal256(..) => {
                let text = self.text(i);
                text.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(J::String(text), J::Number)
            }
            DataType::List(_) => all(&col.as_list::<i32>().value(i)),
            DataType::LargeList(_) => all(&col.as_list::<i64>().value(i)),
            DataType::FixedSizeList(..) => all(&col.as_fixed_size_list().value(i)),
            DataType::Struct(names) => J::Object(
                names
                    .iter()
                    .zip(&self.fields)
                    .map(|(f, c)| (f.name().clone(), c.json(i)))
                    .collect(),
            ),
            DataType::Map(..) => {
                let m = col.as_map().value(i);
                let (keys, values) = (Cells::new(m.column(0)), Cells::new(m.column(1)));
                J::Object(
                    (0..m.len())
                        .map(|j| (keys.text(j), values.json(j)))
                        .collect(),
                )
            }
            _ => json!(self.text(i)),
        }
    }
}

/// `t` with every time-zone label in it, at any depth, made `+00:00`; `None` when it has none.
fn utc_labelled(t: &DataType) -> Option<DataType> {
    use duckdb::arrow::datatypes::Field;
    use std::sync::Arc;
    let field = |f: &Arc<Field>| {
        utc_labelled(f.data_type()).map(|t| Arc::new(f.as_ref().clone().with_data_type(t)))
    };
    match t {
        DataType::Timestamp(unit, Some(_)) => {
            Some(DataType::Timestamp(*unit, Some("+00:00".into())))
        }
        DataType::List(f) => field(f).map(DataType::List),
        DataType::LargeList(f) => field(f).map(DataType::LargeList),
        DataType::FixedSizeList(f, n) => field(f).map(|f| DataType::FixedSizeList(f, *n)),
        DataType::Map(f, sorted) => field(f).map(|f| DataType::Map(f, *sorted)),
        DataType::Struct(fields) => {
            let new: Vec<Option<Arc<Field>>> = fields.iter().map(field).collect();
            new.iter().any(Option::is_some).then(|| {
                DataType::Struct(
                    new.into_iter()
                        .zip(fields.iter())
                        .map(|(n, f)| n.unwrap_or_else(|| f.clone()))
                        .collect(),
                )
            })
        }
        _ => None,
    }
}

/// `data` as an array of type `t`, which differs from its own only in time-zone labels (its
/// children retyped alike).
fn retyped(
    data: duckdb::arrow::array::ArrayData,
    t: DataType,
) -> Option<duckdb::arrow::array::ArrayData> {
    let kids: Vec<DataType> = match &t {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![f.data_type().clone()],
        DataType::Struct(fields) => fields.iter().map(|f| f.data_type().clone()).collect(),
        _ => Vec::new(),
    };
    if kids.len() != data.child_data().len() {
        return None;
    }
    let children = data
        .child_data()
        .iter()
        .zip(kids)
        .map(|(c, k)| retyped(c.clone(), k))
        .collect::<Option<Vec<_>>>()?;
    data.into_builder()
        .data_type(t)
        .child_data(children)
        .build()
        .ok()
}

/// Column names made unique for JSON objects: a repeated name gets `_1`, `_2`... (a join's two
/// `path` columns would otherwise be one key, the second value kept).
pub fn unique_names(names: &[String]) -> Vec<String> {
    let mut seen: std::collections::HashSet<String> = names.iter().cloned().collect();
    let mut used = std::collections::HashSet::new();
    names
        .iter()
        .map(|n| {
            if used.insert(n.clone()) {
                return n.clone();
            }
            let mut k = 1;
            while seen.contains(&format!("{n}_{k}")) {
                k += 1;
            }
            let renamed = format!("{n}_{k}");
            seen.insert(renamed.clone());
            used.insert(renamed.clone());
            renamed
        })
        .collect()
}

/// A value as JSON.
pub fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::json;
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Boolean(b) => json!(b),
        Value::TinyInt(n) => json!(n),
        Value::SmallInt(n) => json!(n),
        Value::Int(n) => json!(n),
        Value::BigInt(n) => json!(n),
        Value::HugeInt(n) => json!(n.to_string()),
        Value::UTinyInt(n) => json!(n),
        Value::USmallInt(n) => json!(n),
        Value::UInt(n) => json!(n),
        Value::UBigInt(n) => json!(n),
        Value::Float(f) => json!(f),
        Value::Double(f) => json!(f),
        Value::Text(s) => json!(s),
        Value::List(items) | Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(to_json).collect())
        }
        other => json!(format!("{other:?}")),
    }
}

/// A value as display text.
pub fn to_text(v: &Value) -> String {
    match to_json(v) {
        serde_json::Value::Null => "NULL".into(),
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_outside_quotes() {
        assert_eq!(
            split_statements("SELECT ';'; SELECT 2;\n"),
            ["SELECT ';'", "SELECT 2"]
        );
    }

    #[test]
    fn comments_neither_split_nor_make_statements() {
        assert_eq!(split_statements("SELECT 1; -- done"), ["SELECT 1"]);
        assert_eq!(
            split_statements("-- only\n/* a; b */\n"),
            Vec::<String>::new()
        );
        assert_eq!(
            split_statements("SELECT 1 -- one; not a split\n+ 1; /* x; */ SELECT 'it''s; fine'"),
            [
                "SELECT 1 -- one; not a split\n+ 1",
                "/* x; */ SELECT 'it''s; fine'"
            ]
        );
        assert_eq!(
            split_statements("SELECT 3 /* unclosed"),
            ["SELECT 3 /* unclosed"]
        );
    }
}
