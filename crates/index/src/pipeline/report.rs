//! The report of a run: [`IndexSummary`] (and its [`ScipSummary`]), counted as files are
//! written.
use std::collections::BTreeMap;

use super::compact;
use crate::record::FileRecord;
use trove_bundle::reader::FileRow;
use trove_embed::EmbedStats;

/// What a run did, for the final summary.
#[derive(Debug, Default, serde::Serialize)]
pub struct IndexSummary {
    /// Files the walk considered (indexed + skipped files).
    pub files_seen: u64,
    /// Files indexed (processed or carried over).
    pub files_indexed: u64,
    /// Of those, files whose rows were carried over from the existing bundle unchanged.
    pub files_reused: u64,
    /// Chunks carried over (their embeddings included).
    pub chunks_reused: u64,
    /// Chunks sent to the embedder.
    pub chunks_embedded: u64,
    /// Calls to the embedder.
    pub embed_calls: u64,
    /// The embed stage: calls, texts, cache hits, tokens, busy time, warnings.
    pub embed: EmbedStats,
    /// The summarizer: calls, cache hits, fallbacks.
    pub summaries: crate::summarize::SummaryStats,
    /// How the run used the existing bundle: why a full build, or what changed since its commit.
    pub incremental: Option<String>,
    /// Skipped files and directories by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Chunks written.
    pub chunks: u64,
    /// Chunks per language.
    pub chunks_by_language: BTreeMap<String, u64>,
    /// Files whose parse ran past its time bound (chunked by lines instead).
    pub parse_fallbacks: u64,
    /// Secrets redacted in the indexed files (carried files included).
    pub redactions: u64,
    /// Of those, in files processed by this run, by kind.
    pub redactions_by_kind: BTreeMap<String, u64>,
    /// Bytes of indexed source.
    pub source_bytes: u64,
    /// Bytes of the bundle.
    pub bundle_bytes: u64,
    /// Wall time in seconds.
    pub wall_secs: f64,
    /// Peak resident memory of the process, when known.
    pub peak_rss_bytes: Option<u64>,
    /// Segments of the bundle after the run.
    pub segments: usize,
    /// Paths this run's segment tombstoned in earlier ones.
    pub tombstones: u64,
    /// Bytes this run wrote (its segment, `views.sql`, the manifest; all of a full build).
    pub bytes_written: u64,
    /// Why and how the bundle was compacted after the run, when it was.
    pub compacted: Option<compact::CompactSummary>,
    /// Why a compaction the run started failed (the run's segment stays).
    pub compact_error: Option<String>,
    /// What the SCIP indexes given to the run did, when there were some.
    pub scip: Option<ScipSummary>,
    /// Where the build's time went, stage by stage (a run that wrote nothing has none).
    pub timings: Option<super::timings::Timings>,
}

/// What the SCIP indexes of a run did.
#[derive(Debug, Default, serde::Serialize)]
pub struct ScipSummary {
    /// The indexes read.
    pub inputs: Vec<trove_bundle::ScipInput>,
    /// Files whose rows took their document's facts.
    pub files: u64,
    /// Definitions of the syntax rules marked with their SCIP symbol.
    pub definitions_matched: u64,
    /// Definitions added from the indexes.
    pub definitions_added: u64,
    /// References taken from the indexes.
    pub refs: u64,
    /// Files whose document no longer fits their text (built at another commit, or the file
    /// changed since): their facts were dropped and the syntax rules' kept.
    pub stale: u64,
    /// The first of those, with why.
    pub stale_files: Vec<(String, String)>,
    /// Documents of files this run kept from the base bundle as they were (their facts stay).
    pub kept: u64,
    /// Documents with no indexed code file in the tree (skipped, excluded, or not code).
    pub unused: u64,
}

/// How many stale files the summary names.
const STALE_NAMED: usize = 10;

impl IndexSummary {
    /// Counts one file written to the bundle.
    pub(super) fn count(&mut self, f: &FileRecord) {
        self.files_indexed += 1;
        self.parse_fallbacks += u64::from(f.parse_fallback);
        self.redactions += u64::from(f.redactions);
        for k in &f.redacted_kinds {
            *self.redactions_by_kind.entry(k.to_string()).or_default() += 1;
        }
        *self
            .chunks_by_language
            .entry(f.language.clone().unwrap_or_else(|| "(none)".into()))
            .or_default() += f.chunks.len() as u64;
        self.chunks += f.chunks.len() as u64;
        if let (Some(s), Some(o)) = (self.scip.as_mut(), f.scip.as_ref()) {
            match o {
                crate::scip_import::FileOutcome::Applied {
                    matched,
                    added,
                    refs,
                } => {
                    s.files += 1;
                    s.definitions_matched += u64::from(*matched);
                    s.definitions_added += u64::from(*added);
                    s.refs += u64::from(*refs);
                }
                crate::scip_import::FileOutcome::Stale(why) => {
                    s.stale += 1;
                    if s.stale_files.len() < STALE_NAMED {
                        s.stale_files.push((f.path.clone(), why.clone()));
                    }
                }
            }
        }
    }

    /// Counts one file left as it was in the base bundle.
    pub(super) fn count_kept(&mut self, f: &FileRow) {
        self.files_indexed += 1;
        self.files_reused += 1;
        self.chunks_reused += u64::from(f.chunks);
        self.parse_fallbacks += u64::from(f.parse_fallback);
        self.redactions += u64::from(f.redactions);
        let lang = f.language.as_deref().unwrap_or("(none)");
        match self.chunks_by_language.get_mut(lang) {
            Some(n) => *n += u64::from(f.chunks),
            None => {
                self.chunks_by_language
                    .insert(lang.to_string(), u64::from(f.chunks));
            }
        }
        self.chunks += u64::from(f.chunks);
    }
}
