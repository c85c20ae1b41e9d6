//! The workers' job: one file read, classified, redacted, detected, chunked, summarized,
//! tokenized and embedded into its rows ([`FileProcessor::process`]).
use rustc_hash::FxHashMap;

use super::hooks;
use super::incremental::Reuse;
use super::route::carried_unread;
use super::timings::{Clock, Stage};
use crate::config::PipelineConfig;
use crate::record::{ChunkRecord, FileOutcome, FileRecord, RefKind, RefRecord, SymbolRecord};
use crate::resolve::{self, chunk_at};
use crate::source::{self, Candidate, Rules, SkipReason, Skipped};
use crate::summarize::{Summarizer, SummaryBackend};
use crate::{Result, extract};
use std::time::Instant;
use trove_base::util::{fnv1a64 as fnv, sha256_hex, stable_id};
use trove_embed::{EmbedStage, HashEmbedder, window_texts};
use trove_lang::chunk::{Chunk, ChunkedFile, Symbol, chunk_file};
use trove_lang::lang::refs::Reference;
use trove_lang::lang::{Language, Registry};

/// A worker's answer for one file.
pub(super) enum FileResult {
    Indexed(Box<FileRecord>),
    Skipped(Skipped),
    /// Unchanged since the base bundle: the writer copies its rows from there.
    Carried,
    /// The embedder failed: the run stops (a bundle with chunks missing is never written).
    Failed(crate::Error),
}

/// The shared read-only state of the workers — the walk's rules, the languages, the pipeline
/// config, the embedder and the summarizer, the base bundle's rows (incremental runs) and the
/// SCIP indexes — with the steps that turn one file into its rows.
pub(super) struct FileProcessor<'a> {
    /// The per-stage account each file's steps add to.
    pub(super) clock: &'a Clock,
    pub(super) rules: &'a Rules,
    pub(super) registry: &'a Registry,
    pub(super) config: &'a PipelineConfig,
    pub(super) embedder: &'a EmbedStage,
    pub(super) summarizer: &'a dyn Summarizer,
    pub(super) reuse: Option<&'a Reuse>,
    pub(super) scip: &'a crate::scip_import::ScipIndex,
}

/// A file as read, before chunking: classified (a UTF-8 byte-order mark made three spaces) and
/// its secrets redacted.
struct ReadText {
    /// The text the stages see.
    text: String,
    /// The kind of each secret redacted.
    redacted: Vec<&'static str>,
    /// The file's size in bytes.
    size: u64,
    /// The sha256 of its bytes.
    sha256: String,
    /// Whether it began with a UTF-8 byte-order mark.
    bom: bool,
}

/// The read file as the stages after the read see it.
struct FileText<'t> {
    /// Its root-relative path.
    rel: &'t str,
    /// Its text.
    text: &'t str,
    /// Its language, when detected.
    lang: Option<&'t Language>,
    /// `code`, `test`, `config`, `doc`...
    source_type: &'t str,
}

impl FileText<'_> {
    /// Whether the file is code (or tests).
    fn is_code(&self) -> bool {
        matches!(self.source_type, "code" | "test")
    }
}

/// A chunk's BM25 terms with their counts.
type Terms = Vec<(String, u32)>;

/// A chunk's vector, and its windows' vectors one after another.
type Vectors = (Vec<f32>, Vec<f32>);

impl FileProcessor<'_> {
    /// Reads, classifies and chunks one file; never fails (problems become a skip reason).
    pub(super) fn process(&self, c: &Candidate) -> FileResult {
        hooks::panic_on(&c.rel);
        let clock = self.clock;
        let read = match clock.time(Stage::Read, || self.read(c)) {
            Ok(r) => r,
            Err(answer) => return answer,
        };
        let started = Instant::now();
        let text = read.text.as_str();
        let head = &text.as_bytes()[..text.len().min(16 * 1024)];
        let lang = self.registry.detect(&c.rel, head);
        let source_type = lang.map_or("doc", |l| l.source_type(&c.rel)).to_string();
        let file = FileText {
            rel: &c.rel,
            text,
            lang,
            source_type: &source_type,
        };
        let chunked = chunk_file(text, lang, &self.config.chunk);
        // Chunking is the chunker's time without the parse and the collection of definitions
        // and references, which are their own stages.
        let chunking = started.elapsed();
        clock.add(Stage::Parse, chunked.parse_time);
        clock.add(
            Stage::Chunk,
            chunking.saturating_sub(chunked.parse_time + chunked.extract_time),
        );
        let extracting = Instant::now();
        let (summary, summaries) = self.summaries(&file, &chunked);
        let mut extract = chunked.extract_time + extracting.elapsed();
        let (term_counts, vectors) = self.terms_and_vectors(file.rel, &chunked.chunks, &summaries);
        let vectors: Vec<Vectors> = match vectors {
            Ok(v) => v,
            Err(e) => return FileResult::Failed(e),
        };
        let extracting = Instant::now();
        let parse_fallback = chunked.parse_fallback;
        let (mut chunks, done) =
            chunk_records(&file, chunked.chunks, vectors, summaries, term_counts);
        let (symbols, refs, scip) = self.definitions(&file, chunked.symbols, chunked.refs, &chunks);
        let deps = if extract::deps::is_manifest(&c.rel) {
            extract::deps::dependencies(&c.rel, text)
        } else {
            Vec::new()
        };
        let mut tail = text.get(done..).unwrap_or_default().to_string();
        if read.bom {
            restore_bom(&mut chunks, &mut tail);
        }
        // `text.lines().count()`: a line per `\n`, and the last one when it has none.
        let lines = (text.bytes().filter(|&b| b == b'\n').count()
            + usize::from(!text.is_empty() && !text.ends_with('\n'))) as u64;
        extract += extracting.elapsed();
        clock.add(Stage::Extract, extract);
        FileResult::Indexed(Box::new(FileRecord {
            path: c.rel.clone(),
            language: lang.map(|l| l.def.id.clone()),
            source_type,
            bytes: read.size,
            lines,
            sha256: read.sha256,
            parse_fallback,
            redactions: read.redacted.len() as u32,
            redacted_kinds: read.redacted,
            summary,
            tail,
            chunks,
            symbols,
            deps,
            refs,
            scip,
        }))
    }

    /// Reads the file `c` and makes it text, secrets redacted; `Err`: the file's answer without
    /// its text — carried (git vouches for it, or its bytes are the base bundle's) or skipped
    /// (too large, unreadable, not text).
    fn read(&self, c: &Candidate) -> Result<ReadText, FileResult> {
        let skip = |reason: SkipReason, bytes: u64| {
            FileResult::Skipped(Skipped {
                path: c.rel.clone(),
                reason,
                bytes,
            })
        };
        let base = self.reuse.and_then(|r| r.files.get(&c.rel));
        if carried_unread(self.reuse, c) {
            return Err(FileResult::Carried);
        }
        let bytes = match source::read_capped(&c.abs, self.rules.max_file_bytes()) {
            Ok(Ok(b)) => b,
            Ok(Err(size)) => return Err(skip(SkipReason::TooLarge, size)),
            Err(_) => return Err(skip(SkipReason::Unreadable, c.bytes.unwrap_or(0))),
        };
        let size = bytes.len() as u64;
        let sha256 = sha256_hex(&bytes);
        if let Some(b) = base
            && b.sha256 == sha256
            && b.bytes == size
        {
            // Same content as in the base bundle: its rows (embeddings included) are what
            // processing it again would give.
            return Err(FileResult::Carried);
        }
        // `classify` makes a UTF-8 byte-order mark three spaces for the chunkers and extractors;
        // the stored text gets it back (`restore_bom`), so the bundle's copy of the file is its
        // bytes.
        let bom = bytes.starts_with(BOM.as_bytes());
        let text = match self.rules.classify(bytes) {
            Ok(t) => t,
            Err(reason) => return Err(skip(reason, size)),
        };
        // Secrets never reach a chunk, a term, a vector or a summary.
        let (text, redacted) = if self.config.source.redact_secrets {
            match extract::secrets::redact(&text) {
                (std::borrow::Cow::Owned(t), found) => (t, found),
                (std::borrow::Cow::Borrowed(_), found) => (text, found),
            }
        } else {
            (text, Vec::new())
        };
        Ok(ReadText {
            text,
            redacted,
            size,
            sha256,
            bom,
        })
    }

    /// The file's summary and each chunk's (in order): the configured summarizer's (`llm`) for
    /// code without its own docs, else the extractive one.
    fn summaries(
        &self,
        file: &FileText<'_>,
        chunked: &ChunkedFile,
    ) -> (Option<String>, Vec<Option<String>>) {
        let FileText {
            rel,
            text,
            lang,
            source_type,
        } = *file;
        let is_code = file.is_code();
        let no_symbols: &[Symbol] = &[];
        let file_symbols = if source_type != "doc" {
            &chunked.symbols[..]
        } else {
            no_symbols
        };
        let language = lang.map_or("", |l| l.def.id.as_str());
        // Code without its own docs may get a summary from the configured summarizer (`llm`).
        let written = |target: &str, kind: &str, symbol: &str, code: &str| {
            self.summarizer.summarize(&crate::summarize::Request {
                target,
                language,
                path: rel,
                kind,
                symbol,
                code,
            })
        };
        let summary = if is_code
            && self.summarizer.backend() != SummaryBackend::Extractive
            && extract::summary::file_docs(text, lang, source_type, file_symbols).is_none()
        {
            written("file", "file", rel, text)
        } else {
            None
        }
        .or_else(|| {
            extract::summary::file_summary(text, lang, source_type, file_symbols, &chunked.chunks)
        });
        let summaries: Vec<Option<String>> = chunked
            .chunks
            .iter()
            .map(|ch| {
                // Refs are in source order: the chunk's are one run of them.
                let refs = &chunked.refs;
                let lo = refs.partition_point(|r| r.start_byte < ch.start_byte);
                let hi = refs.partition_point(|r| r.start_byte < ch.end_byte);
                let calls: Vec<&str> = refs[lo..hi.max(lo)]
                    .iter()
                    .filter(|r| r.kind == RefKind::Call)
                    .map(|r| r.target.as_str())
                    .collect();
                let own = is_code
                    && self.summarizer.backend() != SummaryBackend::Extractive
                    && ch.docs.is_none()
                    && ch.symbol.is_some();
                own.then(|| {
                    written(
                        "chunk",
                        &ch.kind,
                        ch.symbol_path.as_deref().unwrap_or_default(),
                        &ch.content,
                    )
                })
                .flatten()
                .or_else(|| extract::summary::chunk_summary(ch, &calls))
            })
            .collect();
        (summary, summaries)
    }

    /// Each chunk's BM25 terms and vectors (those of the file at `rel`; `summaries`: the chunks').
    /// BM25 terms of a chunk: its content's tokens and the path's. With the inline hash embedder
    /// the same pass counts the token hashes of its text (path, symbol path, content: the tokens
    /// of `embed_text`, in order), so no chunk is tokenized twice.
    fn terms_and_vectors(
        &self,
        rel: &str,
        chunks: &[Chunk],
        summaries: &[Option<String>],
    ) -> (Vec<Terms>, Result<Vec<Vectors>>) {
        let max_len = self.config.bm25.max_token_len;
        let path = PathTerms::new(rel, max_len);
        let hash = self
            .embedder
            .inline_hash()
            .filter(|h| h.max_token_len() == max_len);
        if let Some(h) = hash {
            return self.hashed_vectors(h, rel, chunks, &path);
        }
        let term_counts = self.clock.time(Stage::Tokenize, || {
            chunks.iter().map(|ch| path.count(ch, None)).collect()
        });
        let vectors = self
            .clock
            .time(Stage::Embed, || self.model_vectors(rel, chunks, summaries));
        (term_counts, vectors)
    }

    /// Each chunk's terms and its vector from the inline hash embedder `h`, made from the token
    /// hashes counted with the terms.
    fn hashed_vectors(
        &self,
        h: &HashEmbedder,
        rel: &str,
        chunks: &[Chunk],
        path: &PathTerms,
    ) -> (Vec<Terms>, Result<Vec<Vectors>>) {
        let max_len = path.max_len;
        let tokenizing = Instant::now();
        let mut term_counts: Vec<Terms> = Vec::with_capacity(chunks.len());
        let mut features: Vec<FxHashMap<u64, u32>> = Vec::with_capacity(chunks.len());
        for ch in chunks {
            let mut f: FxHashMap<u64, u32> = FxHashMap::default();
            for &p in &path.hashes {
                *f.entry(p).or_default() += 1;
            }
            if let Some(s) = ch.symbol_path.as_deref() {
                extract::tokenize(s, max_len, |t| {
                    *f.entry(fnv(t.as_bytes())).or_default() += 1
                });
            }
            term_counts.push(path.count(ch, Some(&mut f)));
            features.push(f);
        }
        // The byte lengths of the texts `embed_text` would give (no summary: see
        // `model_vectors`).
        let lens = chunks.iter().map(|ch| {
            rel.len() + ch.symbol_path.as_ref().map_or(0, |s| 1 + s.len()) + 1 + ch.content.len()
        });
        self.clock.add(Stage::Tokenize, tokenizing.elapsed());
        let vectors = self.clock.time(Stage::Embed, || {
            self.embedder
                .embed_inline(lens, || {
                    features.into_iter().map(|f| h.embed_counts(f)).collect()
                })
                .map(|v| v.into_iter().map(|x| (x, Vec::new())).collect())
        });
        (term_counts, vectors.map_err(Into::into))
    }

    /// Each chunk's vectors from the embedder's model (the file at `rel`; `summaries`: the
    /// chunks').
    fn model_vectors(
        &self,
        rel: &str,
        chunks: &[Chunk],
        summaries: &[Option<String>],
    ) -> Result<Vec<Vectors>> {
        // A model reads the start of its input (MiniLM: 256 tokens): the chunk's one-sentence
        // summary goes there, in words such a model knows. The hash embedder's text stays as it was.
        // Such a model gets windows over the rest of a long chunk (`embed.windows`).
        let with_summary = self.embedder.backend().limits().is_some();
        let windows = self.config.embed.windows_used();
        let mut beyond = 0;
        let texts: Vec<Vec<String>> = chunks
            .iter()
            .zip(summaries)
            .map(|(ch, sm)| {
                let sm = sm.as_deref().filter(|_| with_summary);
                let (texts, unread) = window_texts(
                    self.embedder.backend(),
                    windows,
                    rel,
                    ch.symbol_path.as_deref(),
                    sm,
                    &ch.content,
                );
                beyond += u64::from(unread);
                texts
            })
            .collect();
        Ok(self.embedder.embed_chunks(&texts, beyond)?)
    }

    /// The file's definitions and references, with what its SCIP document did to them.
    /// Definitions are code's: a config file's keys and a document's headings are not symbols.
    /// (A build file's functions and macros — CMake's — are definitions all the same.)
    fn definitions(
        &self,
        file: &FileText<'_>,
        symbols: Vec<Symbol>,
        refs: Vec<Reference>,
        chunks: &[ChunkRecord],
    ) -> (Vec<SymbolRecord>, Vec<RefRecord>, Option<FileOutcome>) {
        let rel = file.rel;
        let mut scip = None;
        let (symbols, refs) = if file.is_code() {
            let mut symbols = symbol_records(rel, symbols, chunks);
            let mut refs = resolve::in_file(
                rel,
                refs,
                &symbols,
                chunks,
                file.lang.map(|l| &l.def),
                file.text,
            );
            if let Some((doc, enc)) = self.scip.document(rel) {
                scip = Some(crate::scip_import::apply(
                    doc,
                    enc,
                    file.text,
                    &mut symbols,
                    &mut refs,
                    chunks,
                    |s| symbol_id(rel, s),
                ));
            }
            (symbols, refs)
        } else if file.source_type == "config" {
            let mut defs = symbols;
            defs.retain(|s| matches!(s.kind.as_str(), "function" | "macro" | "method" | "class"));
            for s in &mut defs {
                s.parent = None;
            }
            (symbol_records(rel, defs, chunks), Vec::new())
        } else {
            (Vec::new(), Vec::new())
        };
        (symbols, refs, scip)
    }
}

/// A file path's BM25 tokens and their hashes, which every chunk of the file adds to its terms.
struct PathTerms {
    tokens: Vec<String>,
    hashes: Vec<u64>,
    /// The longest token kept (`bm25.max_token_len`).
    max_len: usize,
}

impl PathTerms {
    /// The tokens of the path `rel`.
    fn new(rel: &str, max_len: usize) -> Self {
        let tokens = extract::tokens(rel, max_len);
        let hashes = tokens.iter().map(|t| fnv(t.as_bytes())).collect();
        PathTerms {
            tokens,
            hashes,
            max_len,
        }
    }

    /// A chunk's terms (content, then path), each content token's hash also handed to `seen`.
    fn count(&self, ch: &Chunk, mut seen: Option<&mut FxHashMap<u64, u32>>) -> Terms {
        let mut terms = extract::TermCounts::default();
        extract::tokenize(&ch.content, self.max_len, |t| {
            let th = fnv(t.as_bytes());
            if let Some(f) = seen.as_deref_mut() {
                *f.entry(th).or_default() += 1;
            }
            terms.add(t, th);
        });
        for (t, &th) in self.tokens.iter().zip(&self.hashes) {
            terms.add(t, th);
        }
        terms.into_terms()
    }
}

/// The records of the file's chunks, with their vectors, summaries and terms, and the end of the
/// last one. Chunks are in source order and never overlap: what lies between them is each one's
/// lead, so the bundle holds the file's text once.
fn chunk_records(
    file: &FileText<'_>,
    chunks: Vec<Chunk>,
    vectors: Vec<Vectors>,
    summaries: Vec<Option<String>>,
    term_counts: Vec<Terms>,
) -> (Vec<ChunkRecord>, usize) {
    let mut records = Vec::with_capacity(chunks.len());
    let mut done = 0;
    for (((ch, (embedding, windows)), summary), terms) in chunks
        .into_iter()
        .zip(vectors)
        .zip(summaries)
        .zip(term_counts)
    {
        let token_len = terms.iter().map(|(_, n)| n).sum();
        let chunk_id = stable_id(&[
            file.rel.as_bytes(),
            ch.start_byte.to_string().as_bytes(),
            ch.content.as_bytes(),
        ]);
        let lead = file
            .text
            .get(done..ch.start_byte)
            .unwrap_or_default()
            .to_string();
        done = done.max(ch.end_byte);
        records.push(ChunkRecord {
            chunk: ch,
            lead,
            chunk_id,
            origin: None,
            token_len,
            terms,
            embedding,
            windows,
            summary,
        });
    }
    (records, done)
}

/// The UTF-8 byte-order mark.
const BOM: &str = "\u{feff}";

/// Puts a file's byte-order mark back into the stored text that holds its first three bytes
/// (the first chunk's lead, else its content, else the file's tail), where `classify` left three
/// spaces. The mark is three bytes too, so every offset stays right; the chunk's id, terms and
/// vectors were made from the spaces, as a `--since` run makes them again.
fn restore_bom(chunks: &mut [ChunkRecord], tail: &mut String) {
    let first = match chunks.first_mut() {
        Some(c) if c.lead.is_empty() => &mut c.chunk.content,
        Some(c) => &mut c.lead,
        None => tail,
    };
    // A chunk that began inside the three spaces would split the mark between two strings: no
    // chunker starts one in whitespace, and the spaces then stay.
    if first.starts_with("   ") {
        first.replace_range(..3, BOM);
    }
}

/// The stable id of the definition `s` of the file at `rel`: (path, kind, symbol path, start).
fn symbol_id(rel: &str, s: &Symbol) -> i64 {
    stable_id(&[
        rel.as_bytes(),
        s.kind.as_bytes(),
        s.symbol_path.as_bytes(),
        s.start_byte.to_string().as_bytes(),
    ])
}

/// A file's definitions with their ids: stable symbol ids, the parent's id, and the chunk that
/// holds each definition's start.
fn symbol_records(rel: &str, symbols: Vec<Symbol>, chunks: &[ChunkRecord]) -> Vec<SymbolRecord> {
    let ids: Vec<i64> = symbols.iter().map(|s| symbol_id(rel, s)).collect();
    // A definition outside its type's body (a Go method, `void Matrix::multiply()`) has the type
    // as its parent when the file defines it.
    let by_path: FxHashMap<&str, i64> = symbols
        .iter()
        .zip(&ids)
        .map(|(s, &id)| (s.symbol_path.as_str(), id))
        .collect();
    let parents: Vec<Option<i64>> = symbols
        .iter()
        .map(|s| match s.parent {
            Some(p) => Some(ids[p]),
            None => s
                .symbol_path
                .rsplit_once(" > ")
                .and_then(|(prefix, _)| by_path.get(prefix).copied()),
        })
        .collect();
    drop(by_path);
    symbols
        .into_iter()
        .zip(&ids)
        .zip(parents)
        .map(|((s, &id), parent_id)| {
            let chunk_id = chunk_at(chunks, s.start_byte);
            SymbolRecord {
                parent_id,
                symbol_id: id,
                chunk_id,
                symbol: s,
                scip_symbol: None,
            }
        })
        .collect()
}
