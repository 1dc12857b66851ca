//! The directory a copy-out writes (PostgreSQL's or MariaDB's): marked `UNFINISHED` before the
//! first file, sealed with `transfer.json` after the last.

use crate::config::{
    FileEntry, MapperWork, TransferConfig, TransferManifest, TRANSFER_FILE, UNFINISHED_FILE,
};
use crate::error::Error;
use crate::session::ROW_SUM_PREFIX;
use crate::split;

/// Before the first file: the directory exists, an old `transfer.json` is gone (a directory
/// without one is not a table) and `UNFINISHED` says a transfer is writing here.
pub(crate) fn mark_unfinished(cfg: &TransferConfig, table: &str) -> Result<(), Error> {
    std::fs::create_dir_all(&cfg.dir)
        .map_err(|e| Error::Io(format!("cannot create {}: {e}", cfg.dir.display())))?;
    let _ = std::fs::remove_file(cfg.dir.join(TRANSFER_FILE));
    std::fs::write(
        cfg.dir.join(UNFINISHED_FILE),
        format!(
            "A transfer out of {table} into this directory started and has not finished: its \
             files are part of the table.\n"
        ),
    )
    .map_err(|e| Error::Io(format!("cannot write in {}: {e}", cfg.dir.display())))
}

/// After the last repetition: the first mapper error, or a row count that misses the table's,
/// is the run's detail; otherwise `transfer.json` (files, rows, the mappers' checksum) is written
/// atomically and `UNFINISHED` removed. Returns the detail (`None`: the files are the table).
pub(crate) fn seal(
    cfg: &TransferConfig,
    table: &str,
    plan: &split::Plan,
    works: &[MapperWork],
) -> Result<Option<String>, Error> {
    let copied: u64 = works.iter().map(|w| w.rows).sum();
    let count = plan.count.unwrap_or(copied);
    if let Some(e) = works.iter().find_map(|w| w.error.clone()) {
        return Ok(Some(e));
    }
    if copied != count {
        return Ok(Some(format!(
            "the mappers copied {copied} rows but {table} holds {count} (rows outside the key ranges?)"
        )));
    }
    // The checksum comes from the mappers' rows (`row_sum`): no second pass.
    let sum = works.iter().fold(0u64, |a, w| a.wrapping_add(w.row_sum));
    let m = TransferManifest {
        table: table.to_string(),
        options: cfg.file.clone(),
        key: plan.key.clone(),
        split: Some(plan.kind),
        rows: count,
        checksum: cfg.checksum.then(|| format!("{ROW_SUM_PREFIX}{sum:016x}")),
        files: works
            .iter()
            .zip(&plan.parts)
            .map(|(w, p)| FileEntry {
                name: w.files[0].clone(),
                rows: w.rows,
                bytes: w.bytes,
                crc32: w.crc32,
                key_range: p.key_range,
                block_range: p.block_range,
            })
            .collect(),
    };
    let json = serde_json::to_vec_pretty(&m).expect("serialisable");
    dbscope_core::atomic::write_atomic(&cfg.dir.join(TRANSFER_FILE), &json)?;
    let _ = std::fs::remove_file(cfg.dir.join(UNFINISHED_FILE));
    Ok(None)
}
