//! The query's terms: its words and compound names, weighted (see [`query_terms`]), the prefixes
//! of its long words, and a query that is itself a name.
use rustc_hash::FxHashSet;
use trove_bundle::tokenizer;

/// Weight of a query term that is a whole compound identifier (`processPayment`, `max_file_bytes`):
/// the user typed an exact name, the strongest evidence there is.
pub(crate) const COMPOUND_WEIGHT: f64 = 2.0;
/// Weight of a query word's prefix (see [`prefix_expansions`]) against the word itself.
pub(crate) const PREFIX_WEIGHT: f64 = 0.5;
/// Query words this many letters long or longer get their prefixes as extra terms.
pub(crate) const PREFIX_MIN_WORD: usize = 5;
/// The shortest prefix taken.
pub(crate) const PREFIX_MIN: usize = 3;

/// Question words dropped from the query (not from the index): they match comments everywhere.
pub(crate) const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "what", "when",
    "where", "which", "who", "why", "with", "there", "it's", "get", "gets", "instead",
];

/// The BM25 terms of a query with their weights: the index tokenizer, deduplicated, question words
/// dropped (unless nothing else is left), whole compound identifiers weighted up.
pub fn query_terms(query: &str, max_len: usize) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut seen = FxHashSet::default();
    for word in query.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let toks = tokenizer::tokens(word, max_len);
        for (i, t) in toks.iter().enumerate() {
            if seen.insert(t.clone()) {
                let w = if i == 0 && toks.len() > 1 {
                    COMPOUND_WEIGHT
                } else {
                    1.0
                };
                out.push((t.clone(), w));
            }
        }
    }
    let content: Vec<(String, f64)> = out
        .iter()
        .filter(|(t, _)| !STOPWORDS.contains(&t.as_str()))
        .cloned()
        .collect();
    if content.is_empty() { out } else { content }
}

/// The prefixes of the query's words that the bundle holds (`exists`), as extra BM25 terms: for
/// each word of [`PREFIX_MIN_WORD`] letters or more (not a question word), every prefix of
/// [`PREFIX_MIN`] letters up to one letter short of the word that is not itself a query term.
/// Each is (prefix, weight, its document frequency `df` gives, the word): its weight is the
/// word's × [`PREFIX_WEIGHT`], and the caller caps its idf at the word's, so a rare truncation
/// never outweighs the word.
///
/// Code shortens the words a question spells out: `request` is `req`, `configuration`
/// `config`, `parameters` `param`, `characters` `char`, `length` `len`; and a question's
/// inflections (`routes`, `matching`, `formatted`) reach the code's stems (`route`, `match`,
/// `format`). Only the query side changes: the index and its statistics stay as they are.
pub(crate) fn prefix_expansions(
    terms: &[(String, f64)],
    df: impl Fn(&str) -> u64,
) -> Vec<(String, f64, u64, &str)> {
    let own: FxHashSet<&str> = terms.iter().map(|(t, _)| t.as_str()).collect();
    let mut out: Vec<(String, f64, u64, &str)> = Vec::new();
    for (word, w) in terms {
        let letters = word.chars().count();
        if letters < PREFIX_MIN_WORD
            || STOPWORDS.contains(&word.as_str())
            || !word.chars().all(char::is_alphabetic)
        {
            continue;
        }
        for (end, _) in word
            .char_indices()
            .skip(PREFIX_MIN)
            .take(letters - PREFIX_MIN)
        {
            let p = &word[..end];
            if STOPWORDS.contains(&p) || own.contains(p) || out.iter().any(|(q, ..)| q == p) {
                continue;
            }
            let d = df(p);
            if d > 0 {
                out.push((p.to_string(), w * PREFIX_WEIGHT, d, word.as_str()));
            }
        }
    }
    out
}

/// The parts of `query` when it is a name or a dotted/scoped path of up to four identifiers
/// (`processPayment`, `UserService.processPayment`, `a::b`, `Outer > inner`); `None` for text.
pub(crate) fn name_parts(query: &str) -> Option<Vec<&str>> {
    let q = query.trim();
    let parts: Vec<&str> = q
        .split(['.', ':', '>', ' '])
        .filter(|p| !p.is_empty())
        .collect();
    let ident = |p: &str| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && p.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    let joined_ok = q
        .chars()
        .all(|c| c.is_alphanumeric() || "_$.:> ".contains(c));
    if parts.is_empty() || parts.len() > 4 || !joined_ok || !parts.iter().all(|p| ident(p)) {
        return None;
    }
    // A multi-word query is text, not a name (`retry backoff`), unless joined by `>`.
    if q.contains(' ') && !q.contains('>') {
        return None;
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_words_dropped_unless_alone() {
        let names = |q: &str| {
            query_terms(q, 64)
                .into_iter()
                .map(|(t, _)| t)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("How does the session get saved?"),
            ["session", "saved"]
        );
        assert_eq!(names("the"), ["the"]);
        assert_eq!(
            query_terms("processPayment", 64)[0],
            ("processpayment".to_string(), COMPOUND_WEIGHT)
        );
    }

    #[test]
    fn long_query_words_reach_the_prefixes_the_bundle_holds() {
        let held = [
            "req", "request", "config", "con", "conf", "par", "param", "rou", "route", "with",
        ];
        let terms = query_terms(
            "how is the request routed with its configuration parameters",
            64,
        );
        let got = prefix_expansions(&terms, |t| u64::from(held.contains(&t)));
        let got: Vec<(&str, f64, &str)> = got
            .iter()
            .map(|(p, w, _, o)| (p.as_str(), *w, *o))
            .collect();
        assert_eq!(
            got,
            [
                // `request` is a query term of its own: its prefix `req` only.
                ("req", PREFIX_WEIGHT, "request"),
                ("rou", PREFIX_WEIGHT, "routed"),
                ("route", PREFIX_WEIGHT, "routed"),
                ("con", PREFIX_WEIGHT, "configuration"),
                ("conf", PREFIX_WEIGHT, "configuration"),
                ("config", PREFIX_WEIGHT, "configuration"),
                ("par", PREFIX_WEIGHT, "parameters"),
                ("param", PREFIX_WEIGHT, "parameters"),
            ]
        );
        // Short words, question words, numbers and names with digits get none; a compound's
        // weight carries over.
        assert!(prefix_expansions(&query_terms("what is a path v2 12345", 64), |_| 1).is_empty());
        let max_retries = query_terms("maxRetries", 64);
        let compound = prefix_expansions(&max_retries, |t| u64::from(t == "maxr"));
        assert_eq!(compound[0].1, COMPOUND_WEIGHT * PREFIX_WEIGHT);
        // Letters, not bytes: `ünïcode` gives `ünï`, `ünïc`, `ünïco`, `ünïcod`.
        let unicode = query_terms("ünïcode", 64);
        let u = prefix_expansions(&unicode, |_| 1);
        assert_eq!(u.len(), 4);
        assert_eq!(u[0].0, "ünï");
    }
}
