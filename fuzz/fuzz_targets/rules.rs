//! The line-rule engine (languages chunked by regex block rules, no grammar: Oberon, BASIC) and
//! the line-window fallback, on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use trove::config::PipelineConfig;
use trove::lang::Registry;

fn setup() -> &'static (Registry, PipelineConfig) {
    static S: OnceLock<(Registry, PipelineConfig)> = OnceLock::new();
    S.get_or_init(|| {
        (
            Registry::load(&[]).expect("registry"),
            PipelineConfig::defaults().expect("defaults"),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (reg, cfg) = setup();
    let rules: Vec<_> = reg
        .languages()
        .iter()
        .filter(|l| l.grammar.is_none())
        .collect();
    let lang = rules.get(pick as usize % (rules.len() + 1)).copied();
    let text = String::from_utf8_lossy(rest);
    let out = trove::chunk::chunk_file(&text, lang, &cfg.chunk);
    for c in &out.chunks {
        assert!(c.start_byte <= c.end_byte && c.end_byte <= text.len());
    }
});
