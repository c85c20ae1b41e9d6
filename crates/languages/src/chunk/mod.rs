//! Chunk stage: cut one file's text into retrieval units.
//!
//! Input: the file text, its [`Language`] (or none), the `[chunk]` config. Output: [`Chunk`]s in
//! source order. Invariants: `content == text[start_byte..end_byte]`; line/column agree with the
//! byte offsets (lines 1-based, columns 0-based in bytes, end exclusive); chunks never overlap; a
//! definition within the budget is one chunk; a larger container is split by its members (each keeps
//! its `symbol_path`); a larger leaf is split on line boundaries; chunking never fails (a parse past
//! its time bound falls back to line windows).
mod ast;
mod markdown;
mod rules;

/// The deepest syntax tree the chunker walks; a deeper one is a failed parse (line windows).
pub use ast::MAX_TREE_DEPTH;

mod config;

pub use crate::lang::Chunker;
use crate::lang::Language;
pub use config::ChunkConfig;

/// Parses `text` with `lang`'s grammar within `cfg`'s time bound and drops the tree, nothing else
/// (the floor the pipeline's speed is measured against). `None` when `lang` has no grammar;
/// `Some(false)` when the parse ran out of time or failed.
pub fn parse_only(text: &str, lang: &Language, cfg: &ChunkConfig) -> Option<bool> {
    lang.grammar.as_ref()?;
    let timeout = std::time::Duration::from_millis(cfg.parse_timeout_ms.max(1));
    Some(ast::parse(text, lang, timeout).is_some())
}

/// One retrieval unit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Chunk {
    /// function, method, class, struct, enum, interface, trait, impl, module, namespace, macro, type,
    /// block (code between definitions), section (a heading section), paragraphs (plain text), lines
    /// (a window).
    pub kind: String,
    /// The definition's own name.
    pub symbol: Option<String>,
    /// Enclosing names joined by ` > ` (`UserService > processPayment`); the heading path for docs.
    pub symbol_path: Option<String>,
    /// The definition's header (up to its body), whitespace collapsed.
    pub signature: Option<String>,
    /// Doc comment or docstring, markers stripped.
    pub docs: Option<String>,
    /// Start byte (inclusive).
    pub start_byte: usize,
    /// End byte (exclusive).
    pub end_byte: usize,
    /// 1-based line of `start_byte`.
    pub start_line: usize,
    /// 0-based byte column of `start_byte`.
    pub start_col: usize,
    /// 1-based line of the last byte.
    pub end_line: usize,
    /// 0-based byte column just past the last byte, on `end_line`.
    pub end_col: usize,
    /// `text[start_byte..end_byte]`.
    pub content: String,
}

/// A definition found by the syntax chunker: what `symbols.parquet` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// function, method, class, struct, ... (the language file's kinds).
    pub kind: String,
    /// Its own name.
    pub name: String,
    /// Enclosing names and its own, joined by ` > `.
    pub symbol_path: String,
    /// Start of the definition node (attached doc comments and attributes excluded).
    pub start_byte: usize,
    /// End of the definition (exclusive).
    pub end_byte: usize,
    /// 1-based line of `start_byte`.
    pub start_line: usize,
    /// 1-based line of its last byte.
    pub end_line: usize,
    /// 1-based line of its name (where ctags and editors put the definition: a C function's
    /// name can sit a line below its return type).
    pub name_line: usize,
    /// Header up to the body, whitespace collapsed.
    pub signature: Option<String>,
    /// Doc comment or docstring, markers stripped.
    pub docs: Option<String>,
    /// Index of the enclosing definition in the file's list.
    pub parent: Option<usize>,
    /// Whether the language marks it visible outside its module (`pub`, `export`, `public`, a
    /// capital first letter in Go, no leading `_` in Python); `None` where the language does not say.
    pub exported: Option<bool>,
}

/// A file's chunks and how they were made.
#[derive(Debug, Default)]
pub struct ChunkedFile {
    /// Chunks in source order.
    pub chunks: Vec<Chunk>,
    /// Definitions in source order (syntax-chunked files only).
    pub symbols: Vec<Symbol>,
    /// Imports and calls in source order (syntax-chunked files only).
    pub refs: Vec<crate::lang::refs::Reference>,
    /// True when the AST chunker gave up (parse time bound) and line windows were used instead.
    pub parse_fallback: bool,
    /// Time spent in the tree-sitter parse (syntax-chunked files; the per-stage account).
    pub parse_time: std::time::Duration,
    /// Time spent collecting definitions and references from the tree.
    pub extract_time: std::time::Duration,
}

/// Chunks `text` as its language says (or by line windows when `cfg.chunker` is `lines`).
pub fn chunk_file(text: &str, lang: Option<&Language>, cfg: &ChunkConfig) -> ChunkedFile {
    let idx = LineIndex::new(text);
    let mut b = Builder {
        text,
        idx: &idx,
        cfg,
        out: Vec::new(),
        symbols: Vec::new(),
        refs: Vec::new(),
        parse_time: std::time::Duration::ZERO,
        extract_time: std::time::Duration::ZERO,
    };
    let mut parse_fallback = false;
    let chunker = if cfg.chunker == Chunker::Lines {
        Chunker::Lines
    } else {
        lang.map_or(Chunker::Lines, |l| l.def.chunker)
    };
    match (chunker, lang) {
        (Chunker::Ast, Some(l)) => {
            if !ast::chunk(&mut b, l) {
                parse_fallback = true;
                b.out.clear();
                b.windows(0, text.len());
            }
        }
        (Chunker::Markdown, _) => markdown::chunk(&mut b, markdown::Style::Markdown),
        (Chunker::Rst, _) => markdown::chunk(&mut b, markdown::Style::Rst),
        (Chunker::Asciidoc, _) => markdown::chunk(&mut b, markdown::Style::Asciidoc),
        (Chunker::Rules, Some(l)) => rules::chunk(&mut b, l),
        (Chunker::Paragraphs, _) => b.paragraphs(),
        _ => b.windows(0, text.len()),
    }
    ChunkedFile {
        chunks: b.out,
        symbols: b.symbols,
        refs: b.refs,
        parse_fallback,
        parse_time: b.parse_time,
        extract_time: b.extract_time,
    }
}

/// Non-whitespace characters: the size measure of the budget (cAST).
pub fn nonws_chars(s: &str) -> usize {
    // ASCII bytes by value (`char::is_whitespace`'s ASCII set is space and \t..=\r), 32 at a
    // time where a block is all ASCII (the loop vectorizes), the rest char by char: code is
    // mostly ASCII, and the chunker counts nested ranges again and again.
    const BLOCK: usize = 32;
    let ascii_nonws = |b: u8| u8::from(!matches!(b, b' ' | b'\t'..=b'\r'));
    let bytes = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(block) = bytes.get(i..i + BLOCK)
            && block.is_ascii()
        {
            // Summed as bytes (at most 32): the compare and add stay 32 lanes wide.
            n += usize::from(block.iter().map(|&b| ascii_nonws(b)).sum::<u8>());
            i += BLOCK;
            continue;
        }
        let b = bytes[i];
        if b.is_ascii() {
            n += usize::from(ascii_nonws(b));
            i += 1;
        } else {
            let c = s[i..].chars().next().unwrap_or(' ');
            n += usize::from(!c.is_whitespace());
            i += c.len_utf8();
        }
    }
    n
}

/// Byte offset → (line, column), by binary search over line starts.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// (1-based line, 0-based column) of `byte`.
    pub(crate) fn pos(&self, byte: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= byte) - 1;
        (line + 1, byte - self.starts[line])
    }

    /// Start offsets of the lines that begin inside `[start, end)`, plus `start` itself.
    fn line_starts_in(&self, start: usize, end: usize) -> Vec<usize> {
        let first = self.starts.partition_point(|&s| s <= start);
        let mut v = vec![start];
        v.extend(
            self.starts[first..]
                .iter()
                .copied()
                .take_while(|&s| s < end),
        );
        v
    }
}

/// Metadata shared by the pieces of one logical chunk.
#[derive(Clone, Default)]
pub(crate) struct Meta {
    pub kind: String,
    pub symbol: Option<String>,
    pub symbol_path: Option<String>,
    pub signature: Option<String>,
    pub docs: Option<String>,
}

impl Meta {
    fn of_kind(kind: &str) -> Self {
        Meta {
            kind: kind.to_string(),
            ..Meta::default()
        }
    }
}

/// Accumulates chunks for one file.
pub(crate) struct Builder<'a> {
    pub text: &'a str,
    idx: &'a LineIndex,
    pub cfg: &'a ChunkConfig,
    out: Vec<Chunk>,
    symbols: Vec<Symbol>,
    refs: Vec<crate::lang::refs::Reference>,
    /// Time in the parse and in collecting definitions and references (`ChunkedFile`'s).
    parse_time: std::time::Duration,
    extract_time: std::time::Duration,
}

impl Builder<'_> {
    /// `[start, end)` without leading and trailing whitespace.
    fn trim(&self, start: usize, end: usize) -> (usize, usize) {
        let s = &self.text[start..end];
        let lead = s.len() - s.trim_start().len();
        let trail = s.len() - s.trim_end().len();
        if lead == s.len() {
            (start, start)
        } else {
            (start + lead, end - trail)
        }
    }

    /// Emits `[start, end)` as one chunk (trimmed), unless it is empty.
    fn push(&mut self, start: usize, end: usize, meta: &Meta) {
        let (start, end) = self.trim(start, end);
        if start >= end {
            return;
        }
        let (sl, sc) = self.idx.pos(start);
        // Columns are in bytes, so the exclusive end column is one past the last byte's column.
        let (el, ec) = self.idx.pos(end - 1);
        self.out.push(Chunk {
            kind: meta.kind.clone(),
            symbol: meta.symbol.clone(),
            symbol_path: meta.symbol_path.clone(),
            signature: meta.signature.clone(),
            docs: meta.docs.clone(),
            start_byte: start,
            end_byte: end,
            start_line: sl,
            start_col: sc,
            end_line: el,
            end_col: ec + 1,
            content: self.text[start..end].to_string(),
        });
    }

    /// Emits `[start, end)` as one chunk if it fits the budget, else as line-boundary pieces that
    /// each fit (a single over-long line is a piece of its own). `prefer_blank` cuts at blank lines
    /// where one is in the second half of a piece (paragraphs of prose).
    fn push_split(&mut self, start: usize, end: usize, meta: &Meta, prefer_blank: bool) {
        let (start, end) = self.trim(start, end);
        if start >= end {
            return;
        }
        let max = self.cfg.max_chars;
        if nonws_chars(&self.text[start..end]) <= max {
            self.push(start, end, meta);
            return;
        }
        let mut lines = self.idx.line_starts_in(start, end);
        lines.push(end);
        let mut piece_start = start;
        let mut size = 0;
        let mut last_blank: Option<usize> = None;
        let mut first = true;
        for w in lines.windows(2) {
            let (ls, le) = (w[0], w[1]);
            let line = &self.text[ls..le];
            let n = nonws_chars(line);
            if size > 0 && size + n > max {
                let cut = match last_blank {
                    Some(b) if prefer_blank && b > piece_start => b,
                    _ => ls,
                };
                self.push_piece(piece_start, cut, meta, &mut first);
                size = nonws_chars(&self.text[cut..ls]);
                piece_start = cut;
                last_blank = None;
            }
            if n == 0 && size > max / 2 {
                last_blank = Some(ls);
            }
            size += n;
        }
        self.push_piece(piece_start, end, meta, &mut first);
    }

    /// A piece of a split chunk: docs go with the first piece only.
    fn push_piece(&mut self, start: usize, end: usize, meta: &Meta, first: &mut bool) {
        let before = self.out.len();
        if *first {
            self.push(start, end, meta);
        } else {
            self.push(
                start,
                end,
                &Meta {
                    docs: None,
                    ..meta.clone()
                },
            );
        }
        if self.out.len() > before {
            *first = false;
        }
    }

    /// Code between definitions: dropped when trivial, else `block` chunks.
    fn gap(&mut self, start: usize, end: usize, symbol_path: Option<&str>) {
        if start >= end || nonws_chars(&self.text[start..end]) < self.cfg.min_block_chars {
            return;
        }
        let meta = Meta {
            symbol_path: symbol_path.map(str::to_string),
            ..Meta::of_kind("block")
        };
        self.push_split(start, end, &meta, true);
    }

    /// Fixed windows of `window_lines` lines (each also within the size budget).
    /// Plain text: paragraphs (runs of non-blank lines) packed into chunks up to the budget; a
    /// paragraph over budget is split on line boundaries.
    fn paragraphs(&mut self) {
        let text = self.text;
        let meta = Meta::of_kind("paragraphs");
        let mut paras: Vec<(usize, usize)> = Vec::new();
        let mut offset = 0;
        let mut open: Option<usize> = None;
        for raw in text.split_inclusive('\n') {
            let start = offset;
            offset += raw.len();
            match (raw.trim().is_empty(), open) {
                (false, None) => open = Some(start),
                (true, Some(s)) => {
                    paras.push((s, start));
                    open = None;
                }
                _ => {}
            }
        }
        if let Some(s) = open {
            paras.push((s, text.len()));
        }
        let mut group: Option<(usize, usize)> = None;
        for (s, e) in paras {
            if let Some((gs, ge)) = group {
                if nonws_chars(&text[gs..e]) <= self.cfg.max_chars {
                    group = Some((gs, e));
                    continue;
                }
                self.push_split(gs, ge, &meta, true);
            }
            group = Some((s, e));
        }
        if let Some((gs, ge)) = group {
            self.push_split(gs, ge, &meta, true);
        }
    }

    fn windows(&mut self, start: usize, end: usize) {
        let mut lines = self.idx.line_starts_in(start, end);
        lines.push(end);
        let meta = Meta::of_kind("lines");
        let n = self.cfg.window_lines;
        let mut i = 0;
        while i + 1 < lines.len() {
            let j = (i + n).min(lines.len() - 1);
            self.push_split(lines[i], lines[j], &meta, false);
            i = j;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ChunkConfig {
        crate::chunk::ChunkConfig::defaults()
    }

    #[test]
    fn nonws_chars_is_chars_not_whitespace() {
        let all: String = (0..0x3100u32).filter_map(char::from_u32).collect();
        for s in [
            "",
            "a b\tc\n\x0b\x0c\r\x1c",
            "fn f() {\u{a0}\u{2028}x\u{3000}é}",
            &all,
            &"let x = 1;\t// é\u{3000}\n    ".repeat(40),
            &format!("{}é{}", " x".repeat(31), "\n\t y".repeat(17)),
        ] {
            let want = |s: &str| s.chars().filter(|c| !c.is_whitespace()).count();
            assert_eq!(nonws_chars(s), want(s), "{s:?}");
            // Every suffix of the short ones: blocks start at every alignment.
            for (k, _) in s.char_indices().filter(|_| s.len() < 2000) {
                assert_eq!(nonws_chars(&s[k..]), want(&s[k..]), "{:?}", &s[k..]);
            }
        }
    }

    #[test]
    fn line_index_positions() {
        let idx = LineIndex::new("ab\ncd\n\nx");
        assert_eq!(idx.pos(0), (1, 0));
        assert_eq!(idx.pos(4), (2, 1));
        assert_eq!(idx.pos(7), (4, 0));
    }

    #[test]
    fn paragraphs_pack_up_to_the_budget() {
        let text = "one two\nthree\n\nfour five\n\n\nsix\n";
        let chunk = |max_chars| {
            let idx = LineIndex::new(text);
            let c = ChunkConfig { max_chars, ..cfg() };
            let mut b = Builder {
                text,
                idx: &idx,
                cfg: &c,
                out: Vec::new(),
                symbols: Vec::new(),
                refs: Vec::new(),
                parse_time: std::time::Duration::ZERO,
                extract_time: std::time::Duration::ZERO,
            };
            b.paragraphs();
            b.out
                .iter()
                .map(|c| (c.start_line, c.end_line))
                .collect::<Vec<_>>()
        };
        assert_eq!(chunk(1000), [(1, 7)]);
        assert_eq!(chunk(20), [(1, 4), (7, 7)]);
        assert_eq!(chunk(12), [(1, 2), (4, 7)]);
    }

    #[test]
    fn windows_cover_all_text_lines() {
        let text: String = (0..150).map(|i| format!("line {i}\n")).collect();
        let c = ChunkConfig {
            window_lines: 60,
            ..cfg()
        };
        let chunks = chunk_file(&text, None, &c).chunks;
        assert_eq!(chunks.len(), 3);
        assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 60));
        assert_eq!((chunks[2].start_line, chunks[2].end_line), (121, 150));
        for ch in &chunks {
            assert_eq!(ch.content, &text[ch.start_byte..ch.end_byte]);
        }
    }

    #[test]
    fn oversize_text_splits_within_budget() {
        let text: String = (0..400)
            .map(|i| format!("word{i} more words here\n"))
            .collect();
        let c = ChunkConfig {
            window_lines: 1000,
            max_chars: 200,
            ..cfg()
        };
        let chunks = chunk_file(&text, None, &c).chunks;
        assert!(chunks.len() > 10);
        assert!(chunks.iter().all(|ch| nonws_chars(&ch.content) <= 200));
        assert!(chunks.windows(2).all(|w| w[0].end_byte <= w[1].start_byte));
    }
}
