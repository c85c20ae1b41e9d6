//! The chunker on any bytes in any language: the first byte picks the language, the rest is the
//! file (lossily UTF-8). Chunks must stay inside the text, in order, with valid line numbers.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use trove::config::PipelineConfig;
use trove::lang::Registry;

fn setup() -> &'static (Registry, PipelineConfig) {
    static S: OnceLock<(Registry, PipelineConfig)> = OnceLock::new();
    S.get_or_init(|| {
        let mut cfg = PipelineConfig::defaults().expect("defaults");
        cfg.chunk.parse_timeout_ms = 200;
        (Registry::load(&[]).expect("registry"), cfg)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (reg, cfg) = setup();
    let langs = reg.languages();
    let lang = langs.get(pick as usize % (langs.len() + 1));
    let text = String::from_utf8_lossy(rest);
    let out = trove::chunk::chunk_file(&text, lang, &cfg.chunk);
    let lines = text.lines().count().max(1);
    for c in &out.chunks {
        assert!(c.start_byte <= c.end_byte && c.end_byte <= text.len());
        assert!(c.start_line >= 1 && c.start_line <= c.end_line && c.end_line <= lines + 1);
    }
});
