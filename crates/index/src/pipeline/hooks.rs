//! Fail points (the `fail` crate), live only with the cargo feature `test-hooks` (which
//! `scripts/test.sh` turns on for the test build; release builds compile them to nothing) and
//! configured through `FAILPOINTS`, which the binary reads at start.
use crate::Result;

/// `index-file`: with `return(PATH)`, a worker panics on the file with that repo-relative
/// path, to prove a panic costs that file only.
#[cfg_attr(not(feature = "test-hooks"), allow(unused_variables))]
pub fn panic_on(rel: &str) {
    fail::fail_point!("index-file", |path: Option<String>| {
        if path.as_deref() == Some(rel) {
            panic!("fail point index-file: panicking on {rel} on purpose");
        }
    });
}

/// `index-file-written`, evaluated by the writer after each file: with `return` (e.g.
/// `2*off->return`: on the third file) the run fails there, to prove a failed run leaves the
/// previous bundle intact.
#[cfg_attr(not(feature = "test-hooks"), allow(unused_variables))]
pub fn file_written(written: u64) -> Result<()> {
    fail::fail_point!("index-file-written", |_| Err(crate::Error::internal(
        format!("fail point index-file-written: failing on purpose after {written} files")
    )));
    Ok(())
}
