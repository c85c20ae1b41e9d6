//! Arrow schemas of the bundle tables: the one definition the writer writes and `verify` checks.
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

/// Every table of a v1 bundle, in manifest order.
pub const TABLES: &[&str] = &[
    "files",
    "chunks",
    "embeddings",
    "terms",
    "postings",
    "symbols",
    "refs",
    "deps",
    "skipped",
];

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// The type of one vector: `dim` 32-bit floats.
pub fn vector_type(dim: usize) -> DataType {
    DataType::FixedSizeList(
        Arc::new(Field::new("item", DataType::Float32, false)),
        dim as i32,
    )
}

/// The type of `embeddings.windows`: a list of vectors.
pub fn windows_type(dim: usize) -> DataType {
    DataType::List(Arc::new(Field::new("item", vector_type(dim), false)))
}

/// The schema of table `name` (`dim` sizes the embedding column).
///
/// Long on purpose: it is a table, one arm per bundle table and one line per column, that reads
/// best whole beside docs/bundle-format.md.
pub fn expected_schema(name: &str, dim: usize) -> Option<SchemaRef> {
    let i64f = |n: &str| Field::new(n, DataType::Int64, false);
    let i32f = |n: &str| Field::new(n, DataType::Int32, false);
    let fields = match name {
        "files" => vec![
            utf8("path", false),
            utf8("language", true),
            utf8("source_type", false),
            i64f("bytes"),
            i64f("lines"),
            utf8("sha256", false),
            utf8("summary", true),
            i32f("chunks"),
            Field::new("parse_fallback", DataType::Boolean, false),
            i32f("redactions"),
            // Per-file totals, so a run that tombstones the file knows what leaves the live
            // counts and BM25 statistics without reading the other tables.
            i64f("tokens"),
            i32f("symbols"),
            i32f("refs"),
            i32f("deps"),
            // The text after the file's last chunk (all of it when it has none); see `lead`.
            utf8("tail", true),
        ],
        "chunks" => vec![
            i64f("chunk_id"),
            i32f("chunk_ord"),
            utf8("path", false),
            utf8("language", true),
            utf8("source_type", false),
            utf8("kind", false),
            utf8("symbol", true),
            utf8("symbol_path", true),
            utf8("heading_path", true),
            utf8("signature", true),
            utf8("docs", true),
            utf8("summary", true),
            i32f("start_line"),
            i32f("start_col"),
            i32f("end_line"),
            i32f("end_col"),
            i64f("start_byte"),
            i64f("end_byte"),
            i32f("chunk_index"),
            i32f("total_chunks"),
            i32f("token_len"),
            utf8("content", false),
            // The file's text between the previous chunk and this one (null: none): a file's
            // text is its chunks' leads and contents in order, then the file's tail.
            utf8("lead", true),
        ],
        "embeddings" => vec![
            i64f("chunk_id"),
            Field::new("embedding", vector_type(dim), false),
            // The vectors of the chunk's further windows, for a model that reads only a text's
            // start (`embed.windows`); empty when one vector covers the chunk.
            Field::new("windows", windows_type(dim), false),
        ],
        "terms" => vec![utf8("term", false), i64f("df")],
        "postings" => vec![utf8("term", false), i32f("chunk_ord"), i32f("tf")],
        "symbols" => vec![
            i64f("symbol_id"),
            utf8("path", false),
            utf8("language", true),
            utf8("kind", false),
            utf8("name", false),
            utf8("symbol_path", false),
            i32f("start_line"),
            i32f("end_line"),
            i32f("name_line"),
            i64f("start_byte"),
            i64f("end_byte"),
            utf8("signature", true),
            utf8("docs", true),
            Field::new("parent_id", DataType::Int64, true),
            Field::new("exported", DataType::Boolean, true),
            Field::new("chunk_id", DataType::Int64, true),
            // Its SCIP symbol string, when a SCIP index given to the run defines it.
            utf8("scip_symbol", true),
        ],
        "refs" | "refs-raw" => {
            let mut f = vec![
                utf8("path", false),
                i32f("line"),
                utf8("kind", false),
                utf8("target", false),
                Field::new("from_symbol_id", DataType::Int64, true),
                Field::new("chunk_id", DataType::Int64, true),
                Field::new("target_symbol_id", DataType::Int64, true),
                utf8("resolution", true),
                // The SCIP symbol of a reference taken from a SCIP index (`resolution` scip).
                utf8("scip_symbol", true),
            ];
            {
                // What a reference left open in its file needs to resolve across the bundle
                // (`trove_index::resolve::Pending`; null for the others): kept in the bundle so the
                // `refs` view can resolve it again against the live definitions of every segment.
                f.extend([
                    utf8("family", true),
                    utf8("import_name", true),
                    Field::new_list(
                        "import_files",
                        Field::new_list_field(DataType::Utf8, true),
                        true,
                    ),
                    // A call on an object: it lands on a method, by name (`Scope::Method`).
                    Field::new("method_call", DataType::Boolean, true),
                    // The type the caller declares for the receiver (`Scope::Typed`).
                    utf8("receiver_type", true),
                    // An import statement's names that become this file's (`local=name`, `*`),
                    // the module's candidate files in `import_files` (`RefRecord::exports`).
                    Field::new_list("exports", Field::new_list_field(DataType::Utf8, true), true),
                ]);
            }
            f
        }
        "deps" => vec![
            utf8("path", false),
            utf8("ecosystem", false),
            utf8("name", false),
            utf8("version", true),
            utf8("scope", false),
        ],
        "skipped" => vec![utf8("path", false), utf8("reason", false), i64f("bytes")],
        "tombstones" => vec![utf8("path", false)],
        _ => return None,
    };
    Some(Arc::new(Schema::new(fields)))
}

/// One row of `files.parquet`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRow {
    /// Repo-relative path.
    pub path: String,
    /// Language id.
    pub language: Option<String>,
    /// code | doc | test | config.
    pub source_type: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lines.
    pub lines: u64,
    /// sha256 of the content.
    pub sha256: String,
    /// Chunks of the file.
    pub chunks: u32,
    /// Whether the AST chunker fell back to line windows.
    pub parse_fallback: bool,
    /// Secrets redacted in its text.
    pub redactions: u32,
    /// One-sentence summary.
    pub summary: Option<String>,
    /// BM25 tokens over its chunks.
    pub tokens: u64,
    /// Its definitions (`symbols` rows).
    pub symbols: u64,
    /// Its references (`refs` rows).
    pub refs: u64,
    /// Its declared dependencies (`deps` rows).
    pub deps: u64,
    /// The text after its last chunk.
    pub tail: String,
}
