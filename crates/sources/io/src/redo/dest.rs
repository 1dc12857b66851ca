//! The destinations: opening, the sector-size check, the header probe and preallocation, and the messages for their I/O errors.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::super::block::{AlignedBuf, LogLayout, FILE_MAGIC};
use super::super::sector::{self, SectorSizes, Verdict};
use super::config::{Destination, RedoConfig, SyncMode};
use crate::error::Error;

/// What a destination looked like at the start.
#[derive(Clone, Debug, Serialize)]
pub struct DestInfo {
    /// Name.
    pub name: String,
    /// Path.
    pub path: String,
    /// Sector sizes and where they came from.
    pub sectors: SectorSizes,
    /// Warnings of the sector-size check.
    pub warnings: Vec<String>,
}

/// An open destination log.
pub(super) struct DestFile {
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) sync: SyncMode,
}

impl DestFile {
    /// Writes `buf` at `offset` and makes it durable as the sync mode says.
    pub(super) fn write_durable(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.file.write_all_at(buf, offset)?;
        if self.sync == SyncMode::Fdatasync {
            self.file.sync_data()?;
        }
        Ok(())
    }
}

/// `"; WHY"` when `e` is ENOSPC, else nothing.
pub(super) fn enospc_hint(e: &std::io::Error, why: &str) -> String {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        format!("; {why}")
    } else {
        String::new()
    }
}

/// Memory alignment of write buffers (enough for O_DIRECT on any sector size we accept).
pub(super) const BUF_ALIGN: usize = 4096;

pub(super) fn io_class(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "io:ENOSPC",
        Some(libc::EIO) => "io:EIO",
        Some(libc::EINVAL) => "io:EINVAL",
        _ => "io",
    }
}

pub(super) fn io_message(path: &Path, what: &str, e: &std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::ENOSPC) => "; the file system is full",
        Some(libc::EINVAL) => "; misaligned O_DIRECT I/O or a file system without direct I/O",
        _ => "",
    };
    format!("{}: {what}: {e}{hint}", path.display())
}

/// Opens every destination (before the run directory exists, so bad paths leave nothing behind).
pub(super) fn open_dest(d: &Destination, cfg: &RedoConfig) -> Result<DestFile, Error> {
    let is_blockdev = check_path(d)?;
    let mut flags = 0;
    match cfg.sync {
        SyncMode::Dsync => flags |= libc::O_DSYNC,
        SyncMode::Fdatasync => {}
        SyncMode::DirectDsync => flags |= libc::O_DSYNC | libc::O_DIRECT,
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(!is_blockdev)
        .custom_flags(flags)
        .open(&d.path)
        .map_err(|e| {
            Error::Config(format!(
                "--dest {}: cannot open for writing{}: {e}",
                d.path.display(),
                if cfg.sync == SyncMode::DirectDsync {
                    " with O_DIRECT (does the file system support direct I/O? try --sync dsync)"
                } else {
                    ""
                }
            ))
        })?;
    Ok(DestFile {
        path: d.path.clone(),
        file,
        sync: cfg.sync,
    })
}

/// Checks a destination path without touching it: its directory exists and it is not a directory.
/// Returns true for a device (block or character), which is written in place, never created.
pub(super) fn check_path(d: &Destination) -> Result<bool, Error> {
    let is_device = std::fs::metadata(&d.path)
        .map(|m| m.file_type().is_block_device() || m.file_type().is_char_device())
        .unwrap_or(false);
    if !is_device {
        if let Some(parent) = d.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(Error::Config(format!(
                    "--dest {}: the directory {} does not exist",
                    d.path.display(),
                    parent.display()
                )));
            }
        }
        if d.path.is_dir() {
            return Err(Error::Config(format!(
                "--dest {}: is a directory; give the log file's path, e.g. {}/redo.log",
                d.path.display(),
                d.path.display()
            )));
        }
        refuse_foreign_file(&d.path)?;
    }
    Ok(is_device)
}

/// The log is overwritten from byte 0: refuse an existing non-empty file that is not a dbscope
/// redo log, so a mistyped `--dest` cannot destroy someone's data. An empty file (or one cut
/// back to nothing after a failed preallocation) and an earlier log are reused.
pub(super) fn refuse_foreign_file(path: &Path) -> Result<(), Error> {
    use std::io::Read;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // does not exist yet
    };
    if !meta.file_type().is_file() || meta.len() == 0 {
        return Ok(());
    }
    let mut head = [0u8; 8];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    if &head[..n] == FILE_MAGIC {
        return Ok(());
    }
    Err(Error::Config(format!(
        "--dest {}: the file exists ({} bytes) and is not a dbscope redo log; io redo overwrites \
         its log from byte 0, so give a new path or remove the file first",
        path.display(),
        meta.len()
    )))
}

/// Writes the log header at offset 0 to prove the destination takes writes before anything is
/// recorded. A full device (ENOSPC) is left to the preallocation, which keeps the run as failed.
pub(super) fn probe_write(f: &DestFile, layout: &LogLayout) -> Result<(), Error> {
    let mut buf = AlignedBuf::zeroed(layout.block_size, BUF_ALIGN);
    buf.as_mut_slice().copy_from_slice(&layout.encode_header());
    match f.write_durable(buf.as_slice(), 0) {
        Err(e) if e.raw_os_error() != Some(libc::ENOSPC) => Err(Error::Config(format!(
            "--dest {}: cannot write to it: {e}",
            f.path.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes the header block and zeros over the whole log, then makes it durable.
pub(super) fn preallocate(f: &DestFile, layout: &LogLayout) -> std::io::Result<()> {
    if std::fs::metadata(&f.path)?.file_type().is_file() {
        f.file.set_len(0)?;
    }
    let chunk = 1 << 20;
    let mut buf = AlignedBuf::zeroed(chunk, BUF_ALIGN);
    let total = layout.file_bytes();
    let header = layout.encode_header();
    let mut at = 0u64;
    while at < total {
        let n = ((total - at) as usize).min(chunk);
        let b = buf.as_mut_slice();
        b.fill(0);
        if at == 0 {
            b[..header.len()].copy_from_slice(&header);
        }
        f.file.write_all_at(&b[..n], at)?;
        at += n as u64;
    }
    f.file.sync_all()
}

/// The sector-size check for every destination: their sizes and warnings, or the refusal. The
/// CLI calls it first to show warnings before the run; [`run_redo`] calls it again.
pub fn check_destinations(cfg: &RedoConfig) -> Result<Vec<DestInfo>, Error> {
    let mut infos = Vec::new();
    for d in &cfg.dests {
        check_path(d)?;
        let sectors = sector::detect(&d.path, &cfg.sysfs_root);
        let mut warnings = Vec::new();
        match sector::check(
            &d.path,
            &sectors,
            cfg.block_size,
            cfg.sync == SyncMode::DirectDsync,
            cfg.sector_size_override,
        ) {
            Verdict::Ok => {}
            Verdict::Warn(m) => warnings.push(m),
            Verdict::Refuse(m) => return Err(Error::Config(m)),
        }
        infos.push(DestInfo {
            name: d.name.clone(),
            path: d.path.display().to_string(),
            sectors,
            warnings,
        });
    }
    Ok(infos)
}
