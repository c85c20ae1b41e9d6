//! Which kind of failure an error is, whichever layer raised it: the one place the CLI's exit
//! codes and the server's HTTP statuses find the [`ErrorKind`] of an error held as `dyn Error`
//! (an `anyhow` chain). Each library crate's error knows its own kind; this only finds it.
use trove_base::error::ErrorKind;

/// The kind of `e` when it is a trove error of any crate, for callers that hold errors as
/// `dyn Error` (an `anyhow` chain: `e.chain().find_map(kind_of)`).
///
/// ```
/// use trove_base::error::ErrorKind;
/// let e = anyhow::Error::from(trove_bundle::Error::bundle_missing("b", "does not exist"));
/// let e = e.context("opening the bundle");
/// assert_eq!(e.chain().find_map(trove_service::kind_of), Some(ErrorKind::NotFound));
/// ```
pub fn kind_of(e: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    if let Some(e) = e.downcast_ref::<trove_query::Error>() {
        return Some(e.kind());
    }
    if let Some(e) = e.downcast_ref::<trove_index::Error>() {
        return Some(e.kind());
    }
    if let Some(e) = e.downcast_ref::<trove_embed::Error>() {
        return Some(e.kind());
    }
    if let Some(e) = e.downcast_ref::<trove_lang::Error>() {
        return Some(e.kind());
    }
    if let Some(e) = e.downcast_ref::<trove_bundle::Error>() {
        return Some(e.kind());
    }
    e.downcast_ref::<trove_base::Error>()
        .map(trove_base::Error::kind)
}
