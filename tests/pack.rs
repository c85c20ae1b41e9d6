//! Packed bundles: a bit-exact round trip, queries straight from the packed file, and refusal of
//! truncated, altered or hostile packs.
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::util::{bundle_files, index, query_jsonl, sample_repo, trove};

/// Every file of a bundle directory (segment folders included) with its bytes, sorted by path.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    bundle_files(dir).into_iter().collect()
}

/// Writes a zstd-compressed tar of one regular file named `name` (raw header bytes, so names the
/// tar crate would refuse, such as `../x`, can be written) holding `data`.
fn one_entry_pack(out: &Path, name: &[u8], data: &[u8]) {
    let f = std::fs::File::create(out).unwrap();
    let z = zstd::Encoder::new(f, 3).unwrap();
    let mut tar = tar::Builder::new(z);
    let mut h = tar::Header::new_ustar();
    h.as_mut_bytes()[..name.len()].copy_from_slice(name);
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    tar.append(&h, data).unwrap();
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

/// Writes a zstd-compressed tar of `entries` (name, bytes) in that order.
fn pack_of(out: &Path, entries: &[(String, Vec<u8>)]) {
    let f = std::fs::File::create(out).unwrap();
    let z = zstd::Encoder::new(f, 3).unwrap();
    let mut tar = tar::Builder::new(z);
    for (name, data) in entries {
        let mut h = tar::Header::new_ustar();
        h.set_path(name).unwrap();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        tar.append(&h, data.as_slice()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

fn refused(args: &[&std::ffi::OsStr]) -> String {
    let o = trove().args(args).assert().code(2);
    String::from_utf8_lossy(&o.get_output().stderr).into_owned()
}

/// The sample repository indexed into `SCRATCH/app.bundle` and packed into `SCRATCH/app.trove`.
fn packed_sample() -> (tempfile::TempDir, tempfile::TempDir, PathBuf, PathBuf) {
    let t = sample_repo();
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("app.bundle");
    index(t.path(), &b, &[]);
    let packed = scratch.path().join("app.trove");
    crate::util::pack(&b, &packed);
    (t, scratch, b, packed)
}

#[test]
fn pack_round_trip_is_bit_exact_and_queryable() {
    let (_t, scratch, b, packed) = packed_sample();
    let back = scratch.path().join("back");
    trove()
        .arg("unpack")
        .arg(&packed)
        .arg("-o")
        .arg(&back)
        .assert()
        .success();
    assert_eq!(
        contents(&back),
        contents(&b),
        "unpacked files equal the originals"
    );
    let again = scratch.path().join("again.trove");
    let pack = |to: &Path| trove().arg("pack").arg(&back).arg("-o").arg(to).assert();
    pack(&again).success();
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&packed).unwrap(),
        "same bytes"
    );
    // A packed file is replaced by packing again; any other file is left as it is, and a folder
    // that does not exist is named.
    pack(&again).success();
    let pack_refused =
        |to: &Path| String::from_utf8_lossy(&pack(to).code(2).get_output().stderr).into_owned();
    let notes = scratch.path().join("notes.txt");
    std::fs::write(&notes, "mine").unwrap();
    let err = pack_refused(&notes);
    assert!(err.contains("exists and is not a packed bundle"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
    let err = pack_refused(&scratch.path().join("no/such/dir/x.trove"));
    assert!(
        err.contains("does not exist") && !err.contains(".x.trove"),
        "{err}"
    );

    // Query, SQL, inspect and verify read the packed file itself.
    let from_dir = query_jsonl(&[b.to_str().unwrap(), "invoice total"]);
    let from_pack = query_jsonl(&[packed.to_str().unwrap(), "invoice total"]);
    assert_eq!(from_dir.len(), from_pack.len());
    for (a, p) in from_dir.iter().zip(&from_pack) {
        assert_eq!(a["chunk_id"], p["chunk_id"]);
        assert_eq!(a["score"], p["score"]);
    }
    let o = trove()
        .arg("sql")
        .arg(&packed)
        .arg("SELECT count(*) FROM chunks")
        .args(["--format", "csv"])
        .assert()
        .success();
    let n = crate::util::manifest(&b)["counts"]["chunks"].to_string();
    assert!(String::from_utf8_lossy(&o.get_output().stdout).contains(&n));
    trove().arg("verify").arg(&packed).assert().success();
    trove().arg("inspect").arg(&packed).assert().success();
    // A damaged unpacked copy in the cache is unpacked again from the file.
    let cache = scratch.path().join("cache");
    let q = || {
        crate::util::trove_in(Some(&cache))
            .arg("query")
            .arg(&packed)
            .arg("invoice total")
            .assert()
            .success();
    };
    q();
    let unpacked = std::fs::read_dir(cache.join("packed"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let seg = std::fs::read_dir(unpacked.join("segments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(seg.join("files.parquet")).unwrap();
    q();
    assert!(seg.join("files.parquet").is_file());
}

#[test]
fn truncated_tampered_and_hostile_packs_are_refused() {
    let (_t, scratch, b, packed) = packed_sample();
    let bytes = std::fs::read(&packed).unwrap();
    // The bundle's files and one its manifest does not list, in a segment folder it does.
    let mut files = contents(&b);
    let segment = files
        .iter()
        .find_map(|(n, _)| n.strip_suffix("/chunks.parquet"))
        .unwrap()
        .to_string();
    files.push((format!("{segment}/extra.parquet"), b"PAR1".to_vec()));
    let extra = scratch.path().join("extra.trove");
    pack_of(&extra, &files);

    let truncated = scratch.path().join("truncated.trove");
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    let tampered = scratch.path().join("tampered.trove");
    std::fs::write(&tampered, &flipped).unwrap();

    // A pack whose entry climbs out of its directory.
    let hostile = scratch.path().join("hostile.trove");
    one_entry_pack(&hostile, b"../escaped.parquet", b"owned");
    // A pack of a v4 bundle (tables at the root): refused with a word on what it is.
    let older = scratch.path().join("older.trove");
    one_entry_pack(&older, b"chunks.parquet", b"PAR1");
    let not_pack = scratch.path().join("notes.txt");
    std::fs::write(&not_pack, "hello").unwrap();
    // An entry longer than its manifest says (refused before its bytes are written), and a
    // pack whose manifest is not its first entry.
    let mut long = contents(&b);
    long.iter_mut()
        .find(|(n, _)| n.ends_with("/chunks.parquet"))
        .unwrap()
        .1
        .extend(std::iter::repeat_n(0u8, 4096));
    let longer = scratch.path().join("longer.trove");
    pack_of(&longer, &long);
    let mut reordered = contents(&b);
    reordered.rotate_left(1);
    let late = scratch.path().join("late-manifest.trove");
    pack_of(&late, &reordered);

    for (file, why) in [
        (&truncated, "damaged"),
        (&tampered, "damaged"),
        (&hostile, "not a bundle file name"),
        (&older, "older bundle format"),
        (&extra, "is not a file its manifest.json lists"),
        (&longer, "bytes, its manifest.json says"),
        (&late, "not manifest.json"),
        (&not_pack, "not a packed bundle"),
    ] {
        let out = scratch.path().join("out");
        let err = refused(&[
            "unpack".as_ref(),
            file.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        assert!(err.contains(why), "{}: {err}", file.display());
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!out.exists(), "nothing left behind for {}", file.display());
        let err = refused(&["query".as_ref(), file.as_os_str(), "invoice".as_ref()]);
        assert!(err.contains(why), "query {}: {err}", file.display());
        if file != &not_pack {
            refused(&["verify".as_ref(), file.as_os_str()]);
        }
    }
    assert!(!scratch.path().join("escaped.parquet").exists());
    // Nothing was written outside the cache or scratch.
    assert!(
        !Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("escaped.parquet")
            .exists()
    );
}

/// A bundle of many segments (nightly `--since --no-compact` runs between weekly compactions)
/// packs and reads back: there is no cap on entries but the manifest's own list.
#[test]
fn a_bundle_of_many_segments_packs_and_unpacks() {
    let t = sample_repo();
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("app.bundle");
    index(t.path(), &b, &[]);
    for i in 0..8 {
        crate::util::write(
            t.path(),
            &format!("nightly/day{i}.py"),
            format!("def day_{i}_total(x):\n    return x + {i}\n").as_bytes(),
        );
        crate::util::commit(t.path(), &format!("day {i}"));
        index(t.path(), &b, &["--since", "auto", "--no-compact"]);
    }
    let m = crate::util::manifest(&b);
    assert_eq!(m["segments"].as_array().unwrap().len(), 9);
    assert!(m["files"].as_array().unwrap().len() > 64);
    let packed = scratch.path().join("app.trove");
    crate::util::pack(&b, &packed);
    trove().arg("verify").arg(&packed).assert().success();
    let back = scratch.path().join("back");
    trove()
        .arg("unpack")
        .arg(&packed)
        .arg("-o")
        .arg(&back)
        .assert()
        .success();
    assert_eq!(contents(&back), contents(&b));
    let hits = query_jsonl(&[packed.to_str().unwrap(), "day_7_total"]);
    assert_eq!(hits[0]["path"], "nightly/day7.py");
}
