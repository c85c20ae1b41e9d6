//! Secret redaction: high-confidence secrets in indexed text are replaced before anything is
//! chunked, tokenized, embedded, summarized or written, so no bundle table ever holds them.
//!
//! Input: a file's text. Output: the text with each secret replaced by `[REDACTED:<kind>]`
//! (a private key block keeps its BEGIN/END lines and its line count, so line numbers stay
//! right), and the kinds found. Kinds: `private-key`, `aws-access-key`, `aws-secret-key`,
//! `gcp-api-key`, `github-token`, `slack-token`, `slack-webhook`, `stripe-key`, `openai-key`,
//! `password` (a literal assigned to a password-like name), `high-entropy` (a long random-looking
//! literal assigned to a key/token/secret-like name). Placeholders (`changeme`, `${VAR}`,
//! `<password>`, `xxxx`) are left alone. Turned off by `--no-redact`.
use regex::{Captures, Regex};
use std::borrow::Cow;
use std::sync::OnceLock;

/// (kind, pattern); the secret is the group named `s`, else the whole match.
const TOKEN_PATTERNS: &[(&str, &str)] = &[
    (
        "aws-access-key",
        r"\b(?P<s>(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b",
    ),
    (
        "aws-secret-key",
        r#"(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+=]{40})\b"#,
    ),
    ("gcp-api-key", r"\b(?P<s>AIza[0-9A-Za-z_\-]{35})\b"),
    (
        "github-token",
        r"\b(?P<s>(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}))\b",
    ),
    (
        "slack-token",
        r"\b(?P<s>xox[abposr]-[A-Za-z0-9-]{10,250})\b",
    ),
    (
        "slack-webhook",
        r"(?P<s>https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,})",
    ),
    ("stripe-key", r"\b(?P<s>(?:sk|rk)_live_[0-9A-Za-z]{24,})\b"),
    ("openai-key", r"\b(?P<s>sk-(?:proj-)?[A-Za-z0-9_\-]{32,})\b"),
];

/// A literal assigned to a password-like name: `password = "hunter22"`, `"passwd": "…"`,
/// `DB_PASSWORD='…'`.
const PASSWORD: &str =
    r#"(?i)(?:password|passwd|pwd)["']?\s*(?::=|=>|=|:)\s*(?P<q>["'])(?P<s>[^"'\s]{6,200})["']"#;
/// A long literal assigned to a key/token/secret-like name (checked for entropy).
const KEYLIKE: &str = r#"(?i)(?:secret|token|api_?key|apikey|access_?key|private_?key|client_?secret|auth)[a-z_]*["']?\s*(?::=|=>|=|:)\s*["']?(?P<s>[A-Za-z0-9+/=_\-]{20,500})["']?"#;
const PRIVATE_KEY: &str = r"(?s)(?P<begin>-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----)(?P<body>.*?)(?P<end>-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----)";

/// A literal one of the patterns needs, in any ASCII case: `aws`/`AKIA`…, `AIza`, `ghp_`…,
/// `xox`, `hooks.slack.com`, `_live_`, `sk-`, `pass`/`pwd` (password), the key-like names'
/// `secret`/`token`/`api`/`access`/`private`/`auth`, and `private` for a key block. An ASCII
/// text with none of them holds no secret; the regex crate finds such literals far faster than
/// the set of patterns scans (a tenth of the kernel's read stage). Not used on other texts: the
/// patterns' `(?i)` also folds `ſ` and the Kelvin sign.
const NEEDED: &str = r"(?i-u)akia|asia|abia|acca|aws|aiza|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|xox|hooks\.slack\.com|_live_|sk-|pass|pwd|secret|token|api|access|private|auth";

struct Rules {
    /// A literal every pattern needs ([`NEEDED`]).
    needed: Regex,
    /// Every pattern at once: one scan tells whether a text needs the others at all.
    any: regex::RegexSet,
    tokens: Vec<(&'static str, Regex)>,
    password: Regex,
    keylike: Regex,
    private_key: Regex,
}

fn rules() -> &'static Rules {
    static R: OnceLock<Rules> = OnceLock::new();
    R.get_or_init(|| Rules {
        needed: Regex::new(NEEDED).expect("the literals compile"),
        any: regex::RegexSet::new(TOKEN_PATTERNS.iter().map(|(_, p)| *p).chain([
            PASSWORD,
            KEYLIKE,
            PRIVATE_KEY,
        ]))
        .expect("secret patterns compile"),
        tokens: TOKEN_PATTERNS
            .iter()
            .map(|(k, p)| (*k, Regex::new(p).expect("secret pattern compiles")))
            .collect(),
        password: Regex::new(PASSWORD).expect("password pattern compiles"),
        keylike: Regex::new(KEYLIKE).expect("key pattern compiles"),
        private_key: Regex::new(PRIVATE_KEY).expect("private key pattern compiles"),
    })
}

/// Values that are placeholders, not secrets.
fn placeholder(v: &str) -> bool {
    let l = v.to_ascii_lowercase();
    v.starts_with("${")
        || v.starts_with('<')
        || v.starts_with("{{")
        || v.starts_with('%')
        || v.starts_with('$')
        || l.contains("redacted")
        || l.contains("changeme")
        || l.contains("example")
        || l.contains("placeholder")
        || l.contains("your_")
        || l.contains("dummy")
        || v.chars().all(|c| c == v.chars().next().unwrap_or('x'))
        || l.chars().all(|c| c == 'x' || c == '*' || c == '.')
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether `s` looks random: long, high entropy, letters and digits mixed, not an identifier
/// path (`some_long_function_name`, `com.example.Class`).
fn random_looking(s: &str) -> bool {
    let digits = s.bytes().filter(u8::is_ascii_digit).count();
    let upper = s.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = s.bytes().filter(u8::is_ascii_lowercase).count();
    let underscores = s.bytes().filter(|&b| b == b'_').count();
    s.len() >= 20
        && entropy(s) >= 3.7
        && digits >= 2
        && (upper >= 2 || lower >= 2)
        && underscores * 8 < s.len()
}

/// Replaces the group `s` of each match of `re` that `keep` accepts by `[REDACTED:kind]`.
fn replace_group<'t>(
    text: Cow<'t, str>,
    re: &Regex,
    kind: &'static str,
    found: &mut Vec<&'static str>,
    keep: impl Fn(&str) -> bool,
) -> Cow<'t, str> {
    if !re.is_match(&text) {
        return text;
    }
    let before = found.len();
    let out = re.replace_all(&text, |c: &Captures<'_>| {
        let whole = c.get(0).map_or("", |m| m.as_str());
        let Some(s) = c.name("s") else {
            return whole.to_string();
        };
        if !keep(s.as_str()) {
            return whole.to_string();
        }
        found.push(kind);
        let start = s.start() - c.get(0).map_or(0, |m| m.start());
        format!(
            "{}[REDACTED:{kind}]{}",
            &whole[..start],
            &whole[start + s.as_str().len()..]
        )
    });
    if found.len() == before {
        return text;
    }
    Cow::Owned(out.into_owned())
}

/// Redacts `text`; returns the text to index and the kind of each secret replaced.
pub fn redact(text: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    let r = rules();
    let mut found = Vec::new();
    if (text.is_ascii() && !r.needed.is_match(text)) || !r.any.is_match(text) {
        return (Cow::Borrowed(text), found);
    }
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    if out.contains("PRIVATE KEY") && r.private_key.is_match(&out) {
        let replaced = r.private_key.replace_all(&out, |c: &Captures<'_>| {
            let body = c.name("body").map_or("", |m| m.as_str());
            // A block redacted before (a bundle's own text indexed again) stays as it is.
            if body.trim() == "[REDACTED:private-key]" {
                return c[0].to_string();
            }
            found.push("private-key");
            // Keep the line count: line numbers of everything after stay right.
            let newlines = body.matches('\n').count();
            let mut kept = String::from("\n[REDACTED:private-key]");
            kept.push_str(&"\n".repeat(newlines.saturating_sub(1)));
            if newlines == 0 {
                kept = " [REDACTED:private-key] ".into();
            }
            format!("{}{kept}{}", &c["begin"], &c["end"])
        });
        out = Cow::Owned(replaced.into_owned());
    }
    for (kind, re) in &r.tokens {
        out = replace_group(out, re, kind, &mut found, |s| !placeholder(s));
    }
    out = replace_group(out, &r.password, "password", &mut found, |s| {
        !placeholder(s) && !s.starts_with("[REDACTED")
    });
    out = replace_group(out, &r.keylike, "high-entropy", &mut found, |s| {
        !placeholder(s) && random_looking(s)
    });
    (out, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by `cargo fuzz` (target redact): a redacted key block was redacted again.
    #[test]
    fn redaction_is_idempotent_on_key_blocks() {
        for text in [
            "DB_PASSWORD = \"hunter22secret\"\nAKIAQWERTYUIOPASDFGH\n-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\nMIIE\nabc\ndef\n-----END PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY----- abc -----END PRIVATE KEY-----",
        ] {
            let (once, found) = redact(text);
            assert!(found.contains(&"private-key"), "{text:?}");
            assert_eq!(once.lines().count(), text.lines().count());
            let (twice, again) = redact(&once);
            assert!(again.is_empty(), "{once:?}: a second pass found {again:?}");
            assert_eq!(twice, once);
        }
    }

    #[test]
    fn redacts_each_kind_and_keeps_lines() {
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7\nabcdefg\n-----END RSA PRIVATE KEY-----";
        let text = format!(
            "a = 1\n{key}\nAWS = \"AKIAIOSFODNN7EXAMPLQ\"\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQWERTYKEY1\n\
             gh = \"ghp_0123456789abcdefghijABCDEFGHIJ012345\"\nslack = \"xoxb-123456789012-abcdefABCDEF\"\n\
             DB_PASSWORD = \"hunter22secret\"\nclient_secret: \"Zx8Qp2Lm9Rt4Vw7Yb1Nc5Hd3Kf6Jg0\"\nend\n"
        );
        let (out, found) = redact(&text);
        for secret in [
            "MIIEowIBAAKCAQEAx7",
            "AKIAIOSFODNN7EXAMPLQ",
            "wJalrXUtnFEMI",
            "ghp_0123456789",
            "xoxb-1234",
            "hunter22secret",
            "Zx8Qp2Lm9Rt4",
        ] {
            assert!(!out.contains(secret), "{secret} left in:\n{out}");
        }
        assert_eq!(out.lines().count(), text.lines().count());
        assert!(out.contains("-----BEGIN RSA PRIVATE KEY-----"));
        for kind in [
            "private-key",
            "aws-access-key",
            "github-token",
            "slack-token",
            "password",
            "high-entropy",
        ] {
            assert!(found.contains(&kind), "{kind} not in {found:?}");
        }
    }

    #[test]
    fn the_literal_prefilter_passes_every_secret_kind() {
        // One text of each kind, in odd cases: each holds a literal of NEEDED, so none is missed.
        let samples = [
            "AKIAIOSFODNN7EXAMPLE",
            "Aws_Secret_Access_Key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYab",
            "AIzaSyA1234567890abcdefghijklmnopqrstu",
            "GHP_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "XOXB-1234567890-abcdefghij",
            "https://HOOKS.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXX",
            "sk_LIVE_abcdefghijklmnopqrstuvwx",
            "SK-proj-abcdefghijklmnopqrstuvwxyz012345",
            "PassWd: 'hunter22'",
            "PWD=\"s3cr3tvalue\"",
            "Client_Secret = 'Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTA'",
            "AUTH_header: abcdefghijklmnopqrstuvwxyz0123",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
        ];
        let r = rules();
        for s in samples {
            assert!(r.needed.is_match(s), "{s}");
        }
        // Plain code has none: redaction returns the text as it is, unscanned.
        let (out, found) = redact("fn main() { let x = compute(1, 2); println!(\"{x}\"); }");
        assert!(matches!(out, Cow::Borrowed(_)) && found.is_empty());
    }

    #[test]
    fn leaves_code_and_placeholders_alone() {
        let text = "password = os.environ[\"DB_PASSWORD\"]\npassword: \"${DB_PASSWORD}\"\n\
                    api_key = \"<your api key>\"\ntoken_type = \"bearer\"\n\
                    secret_key_name = some_module.get_secret_from_vault_by_name\n\
                    access_token_expires_in_seconds = 3600\nauth = \"xxxxxxxxxxxxxxxxxxxxxxxx\"\n\
                    fn parse_api_key(input: &str) -> Result<ApiKey, ParseError>\n";
        let (out, found) = redact(text);
        assert_eq!(out, text, "{found:?}");
        assert!(matches!(out, Cow::Borrowed(_)));
    }
}
